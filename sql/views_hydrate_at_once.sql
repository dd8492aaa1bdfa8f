-- A grouped or joined view whose rows do not depend on the order of its
-- input rows hydrates in one run of its query over its inputs' contents
-- (dataflow/hydrate.c), keeping no group (its operator's state is 0 bytes)
-- until its next round (none while its inputs stay); its groups are then
-- built from the inputs, each group's output learnt from its rows, which
-- must be what the run appended, or an update would retract rows the view
-- does not hold.  A
-- view with a float sum, a numeric min or key (2.5 and 2.50 are equal, not
-- the same) or DISTINCT over numerics hydrates through its groups (state
-- kept at once).  Each view then at every time from its since against
-- its query over its inputs at that time, as text.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE aitem AS (g int, w int, x numeric, f float8, t text);
CREATE TYPE aname AS (g int, label text);
SELECT peek.create_collection('aitems', 'aitem');
SELECT peek.create_collection('anames', 'aname');
-- one time: both collections written at once
CREATE FUNCTION astep(ii aitem[], id aitem[], ni aname[] DEFAULT '{}', nd aname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('aitems', ii, id) + 0 * peek.write('anames', ni, nd)$$;
-- time 0: 2000 rows in 20 groups, the numerics 2.50 in each, and the
-- names; time 1: each group's 2.5
SELECT astep((SELECT array_agg(ROW(i % 20, i, CASE WHEN i < 1000 THEN 2.50 ELSE i / 7.0 END,
                                   i / 3.0, 't' || i % 13)::aitem ORDER BY i)
                FROM generate_series(1, 2000) i), '{}',
             (SELECT array_agg(ROW(g, 'n' || g)::aname) FROM generate_series(0, 24) g));
SELECT astep((SELECT array_agg(ROW(g, 0, 2.5, 0.1, 'u')::aitem) FROM generate_series(0, 19) g), '{}');
-- (both bases: base_time is NULL before the first fold, which bool_and skips)
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 1) FROM peek.objects WHERE name IN ('aitems', 'anames')$$);

-- at once: ints, numeric sums and averages, text under a deterministic
-- collation, booleans; a join, a join grouped by another key, the whole input
SELECT peek.create_view('a_sum', $$
    SELECT g, count(*) AS n, sum(w) AS s, avg(w) AS a, sum(x) AS sx, min(t) AS lo, max(w) AS hi,
           bool_and(w >= 0) AS nonneg FROM peek.persist_peek(NULL::aitem, 'aitems')
     WHERE w <> 7 GROUP BY g HAVING count(*) > 1$$);
SELECT peek.create_view('a_join', $$
    SELECT i.g, i.w, n.label FROM peek.persist_peek(NULL::aitem, 'aitems') i
      JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.g = n.g$$);
SELECT peek.create_view('a_label', $$
    SELECT n.label, count(*) AS n, sum(i.x) AS sx FROM peek.persist_peek(NULL::aitem, 'aitems') i
      LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.g = n.g GROUP BY n.label$$);
SELECT peek.create_view('a_whole', $$
    SELECT count(*) AS n, max(t) AS hi FROM peek.persist_peek(NULL::aitem, 'aitems')$$);
SELECT peek.create_view('a_distinct', $$
    SELECT DISTINCT g, t FROM peek.persist_peek(NULL::aitem, 'aitems')$$);
-- through the groups: the rows' order counts
SELECT peek.create_view('a_float', $$
    SELECT g, sum(f) AS sf FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY g$$);
SELECT peek.create_view('a_nummin', $$
    SELECT g, min(x) AS lo, max(x) AS hi FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY g$$);
SELECT peek.create_view('a_numkey', $$
    SELECT x, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') WHERE w < 1000 GROUP BY x$$);
SELECT peek.create_view('a_numdistinct', $$
    SELECT DISTINCT g, x FROM peek.persist_peek(NULL::aitem, 'aitems') WHERE x = 2.5$$);
SELECT wait_for($$SELECT count(*) = 9 FROM peek.views WHERE name LIKE 'a\_%' AND state = 'ready' AND upper = 2$$);
SELECT name, since, upper, rows FROM peek.views WHERE name LIKE 'a\_%' ORDER BY name;
-- which kept groups at hydration (the last operator's state)
SELECT view, kind, bytes > 0 AS keeps_groups FROM peek.dataflow_operators d
 WHERE view LIKE 'a\_%' AND operator = (SELECT max(operator) FROM peek.dataflow_operators e WHERE e.view = d.view)
 ORDER BY view;
SELECT g, lo::text, hi::text FROM a_nummin WHERE g < 3 ORDER BY g;
SELECT x::text, n FROM a_numkey WHERE x = 2.5 ORDER BY x::text;

-- every group touched (each row with w = 5 .. 24 retracted, one time
-- each; the 2.5 and 2.50 rows of groups 0 .. 3), then a name, then a new group
SELECT astep('{}', ARRAY(SELECT a FROM peek.persist_peek(NULL::aitem, 'aitems') a WHERE a.w = k))
  FROM generate_series(5, 24) k;
SELECT astep('{}', ARRAY(SELECT a FROM peek.persist_peek(NULL::aitem, 'aitems') a
                          WHERE a.x = 2.5 AND a.g < 4));
SELECT astep('{}', '{}', ARRAY[(3, 'three')]::aname[], ARRAY[(3, 'n3')]::aname[]);
SELECT astep(ARRAY[(30, 1, 2.50, 1.5, 'new')]::aitem[], '{}');
SELECT wait_for($$SELECT count(*) = 9 FROM peek.views WHERE name LIKE 'a\_%' AND upper = 25$$);
-- every view at every time, as text (those through the groups: their
-- columns as values, equal though not the same, a float sum rounded), and
-- the groups kept now
CREATE FUNCTION amismatches(view text, columns text DEFAULT 'v::text') RETURNS text
LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format('SELECT %s FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', columns, view, view),
        format('SELECT %s FROM (%s) v', columns,
               replace(replace(query, '''aitems''::text', '''aitems''::text, as_of => @T@'),
                       '''anames''::text', '''anames''::text, as_of => @T@')),
        since, upper - 1)
      FROM peek.views WHERE name = view$f$;
SELECT name, state, amismatches(name) AS mismatches FROM peek.views
 WHERE name IN ('a_distinct', 'a_join', 'a_label', 'a_sum', 'a_whole') ORDER BY name;
SELECT amismatches('a_float', 'g, round(sf::numeric, 9)') AS a_float,
       amismatches('a_nummin', 'g, lo, hi') AS a_nummin,
       amismatches('a_numkey', 'x, n') AS a_numkey, amismatches('a_numdistinct', 'g, x') AS a_numdistinct;
SELECT view, bytes > 0 AS keeps_groups FROM peek.dataflow_operators d
 WHERE view LIKE 'a\_%' AND operator = (SELECT max(operator) FROM peek.dataflow_operators e WHERE e.view = d.view)
 ORDER BY view;

-- a view created as a write commits (a new group, one gone): it hydrates
-- at the bases' time, and at the write's time too (what changed appended
-- there), or at the write's alone once the bases have it; no group kept
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 24) FROM peek.objects WHERE name IN ('aitems', 'anames')$$);
BEGIN;
SELECT astep(ARRAY[(31, 2, 1, 1, 'late')]::aitem[], ARRAY[(30, 1, 2.50, 1.5, 'new')]::aitem[]);
SELECT peek.create_view('a_late', $$
    SELECT g, count(*) AS n, sum(w) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY g$$);
COMMIT;
SELECT wait_for($$SELECT state = 'ready' AND upper = 26 FROM peek.views WHERE name = 'a_late'$$);
SELECT amismatches('a_late') AS mismatches,
       (SELECT bytes > 0 FROM peek.dataflow_operators WHERE view = 'a_late' AND operator = 2) AS keeps_groups;
SELECT g, n, s FROM a_late WHERE g >= 30 ORDER BY g;

SELECT peek.drop_view(name) FROM peek.views WHERE name LIKE 'a\_%' ORDER BY name;
SELECT peek.drop_collection('aitems');
SELECT peek.drop_collection('anames');
DROP FUNCTION amismatches(text, text);
DROP FUNCTION astep(aitem[], aitem[], aname[], aname[]);
DROP TYPE aitem;
DROP TYPE aname;
