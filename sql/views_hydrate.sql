-- A view's hydration: its groups built from its inputs' contents at the
-- time it hydrates at (its since: the inputs' bases' time, where the
-- moving base has gone past their since), one run of its query over all of
-- them, and each output row kept by the group it came from (by the key
-- columns the query's select list is given, outputs.c).  Were a row kept
-- by another group, the first update of its group would not retract it.
-- Groups with the same output rows, duplicate rows in a group, NULL keys,
-- a left join, a join grouped by another key, DISTINCT, the whole input;
-- then an update to every group, and every view at every time from its
-- since against its query over the inputs at that time, as text.  Then a
-- view whose inputs' uppers trail one input's base: it hydrates before
-- that base, the history after its time taken out of it.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE hitem AS (g int, k int, x numeric, t text);
CREATE TYPE hname AS (k int, label text);
SELECT peek.create_collection('hitems', 'hitem');
SELECT peek.create_collection('hnames', 'hname');
-- one time: both collections written at once
CREATE FUNCTION hstep(ii hitem[], id hitem[], ni hname[] DEFAULT '{}', nd hname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('hitems', ii, id) + 0 * peek.write('hnames', ni, nd)$$;
-- the times in [since, upper) at which a view's rows, as text, differ
-- from its query's over its inputs at that time
CREATE FUNCTION hmismatches(view text) RETURNS text
LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format('SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', view, view),
        format('SELECT q::text FROM (%s) q',
               replace(replace(query, '''hitems''::text', '''hitems''::text, as_of => @T@'),
                       '''hnames''::text', '''hnames''::text, as_of => @T@')),
        since, upper - 1)
      FROM peek.views WHERE name = view$f$;

-- times 0 .. 4: groups 1, 2 and 3 with the same count and sum, group 4
-- with duplicates, rows of no group (g NULL) and of no name (k NULL)
SELECT hstep(ARRAY[(1, 10, 2.5, 'a'), (1, 10, 2.5, 'a'), (2, 20, 1, 'b'), (2, 20, 4, 'b'),
                   (3, NULL, 5, 'c'), (NULL, 10, 7, NULL), (NULL, NULL, 7, NULL)]::hitem[],
             '{}', ARRAY[(10, 'ten'), (20, 'twenty'), (30, 'thirty')]::hname[]);
SELECT hstep(ARRAY[(4, 30, 2.50, 'd'), (4, 30, 2.50, 'd'), (4, 30, 2.500, 'd')]::hitem[], '{}');
SELECT hstep(ARRAY[(5, 40, 1, 'e')]::hitem[], '{}', ARRAY[(40, 'forty'), (40, 'forty')]::hname[]);
SELECT hstep('{}', ARRAY[(5, 40, 1, 'e')]::hitem[]);
SELECT hstep(ARRAY[(6, 20, 3, 'f'), (2, 20, 2, 'b')]::hitem[], ARRAY[(2, 20, 4, 'b')]::hitem[]);
-- the moving base goes to the last complete time, past the since (0);
-- each input's (base_time is NULL before a collection's first fold, which
-- bool_and would skip: a view created then hydrates at 0, rightly)
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 4 AND since = 0) FROM peek.objects
                   WHERE name IN ('hitems', 'hnames')$$);

SELECT peek.create_view('hgroup', $$
    SELECT g, count(*) AS n, sum(x) AS s, min(t) AS lo FROM peek.persist_peek(NULL::hitem, 'hitems')
     GROUP BY g$$);
SELECT peek.create_view('hsame', $$
    SELECT count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::hitem, 'hitems') GROUP BY g$$);
SELECT peek.create_view('hleft', $$
    SELECT i.g, i.x, n.label FROM peek.persist_peek(NULL::hitem, 'hitems') i
      LEFT JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.k = n.k$$);
SELECT peek.create_view('hlabel', $$
    SELECT n.label, count(*) AS n, sum(i.x) AS s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.k = n.k GROUP BY n.label$$);
SELECT peek.create_view('hdistinct', $$
    SELECT DISTINCT g, t, x::text AS x FROM peek.persist_peek(NULL::hitem, 'hitems')$$);
SELECT peek.create_view('hwhole', $$
    SELECT count(*) AS n, sum(x) AS s, max(t) AS hi FROM peek.persist_peek(NULL::hitem, 'hitems')$$);
SELECT peek.create_view('hfilter', $$
    SELECT g, x FROM peek.persist_peek(NULL::hitem, 'hitems') WHERE x > 2$$);
SELECT wait_for($$SELECT count(*) = 7 FROM peek.views WHERE name LIKE 'h%' AND state = 'ready' AND upper = 5$$);
-- hydrated at the bases' time
SELECT name, since, upper, rows FROM peek.views WHERE name LIKE 'h%' ORDER BY name;
SELECT g, n, s::text, lo FROM hgroup ORDER BY g;
SELECT label, x::text, g FROM hleft ORDER BY label, x::text, g;

-- every group touched, one at a time: each retracts what it kept
SELECT hstep(ARRAY[(1, 10, 1, 'a')]::hitem[], '{}');
SELECT hstep('{}', ARRAY[(2, 20, 1, 'b')]::hitem[]);
SELECT hstep(ARRAY[(3, 30, 5, 'c')]::hitem[], ARRAY[(3, NULL, 5, 'c')]::hitem[]);
SELECT hstep('{}', ARRAY[(4, 30, 2.500, 'd')]::hitem[]);
SELECT hstep('{}', ARRAY[(NULL, 10, 7, NULL)]::hitem[]);
SELECT hstep(ARRAY[(NULL, NULL, 8, 'n')]::hitem[], '{}');
SELECT hstep('{}', ARRAY[(6, 20, 3, 'f')]::hitem[]);
SELECT hstep('{}', '{}', '{}', ARRAY[(10, 'ten')]::hname[]);
SELECT hstep('{}', '{}', ARRAY[(10, 'TEN')]::hname[], ARRAY[(30, 'thirty')]::hname[]);
SELECT hstep('{}', ARRAY[(1, 10, 2.5, 'a'), (1, 10, 2.5, 'a'), (1, 10, 1, 'a')]::hitem[]);
SELECT wait_for($$SELECT count(*) = 7 FROM peek.views WHERE name LIKE 'h%' AND upper = 15$$);
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h%' ORDER BY name;
SELECT g, n, s::text, lo FROM hgroup ORDER BY g;
SELECT n, s::text FROM hsame ORDER BY n, s;
SELECT label, n, s::text FROM hlabel ORDER BY label;

-- hitems alone goes on (times 15 .. 19) and its base with it; hnames
-- stays at upper 15: a view over both hydrates at 14, before hitems'
-- base, which the history after 14 is taken out of
SELECT peek.write('hitems', ARRAY[(7, 10, 9, 'g')]::hitem[]) FROM generate_series(1, 5);
SELECT wait_for($$SELECT base_time = 19 FROM peek.objects WHERE name = 'hitems'$$);
SELECT peek.create_view('hlate', $$
    SELECT i.g, count(*) AS n, sum(i.x) AS s, max(n.label) AS label
      FROM peek.persist_peek(NULL::hitem, 'hitems') i
      LEFT JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.k = n.k GROUP BY i.g$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 15 FROM peek.views WHERE name = 'hlate'$$);
SELECT since, upper FROM peek.views WHERE name = 'hlate';
SELECT g, n, s::text, label FROM hlate ORDER BY g;
-- hnames catches up (times 15 .. 19), then both go on together
SELECT peek.write('hnames', '{}'::hname[]) FROM generate_series(1, 4);
SELECT peek.write('hnames', ARRAY[(10, 'ten again')]::hname[]);
SELECT hstep(ARRAY[(7, 10, 1, 'g')]::hitem[], ARRAY[(7, 10, 9, 'g')]::hitem[]);
SELECT wait_for($$SELECT count(*) = 8 FROM peek.views WHERE name LIKE 'h%' AND upper = 21$$);
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h%' ORDER BY name;
SELECT g, n, s::text, label FROM hlate ORDER BY g;

SELECT peek.drop_view(name) FROM peek.views WHERE name LIKE 'h%' ORDER BY name;
SELECT peek.drop_collection('hitems');
SELECT peek.drop_collection('hnames');
