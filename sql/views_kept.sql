-- What each group of a grouped or joined view keeps of its output (the
-- rows it last emitted, outputs.c), against which a time's run of the
-- query over the touched groups is diffed: rows of a group that are
-- equal but not binary-equal (numeric 2.5, 2.50 and 2.500) and
-- duplicates, a HAVING that drops a group's row and brings it back, a
-- group emptied and refilled, a left join's NULL-extended row, an
-- aggregate over the whole input, a join grouped by another key (two
-- stages), UNION ALL, a runtime restart between times (the groups built
-- again learn their output when first touched), and an error failing its
-- view alone.  Every view at every time against its query over the
-- inputs at that time, compared as the rows' text (so a retraction of
-- 2.5 where the view held 2.50 shows).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE kitem AS (g int, x numeric, t text);
CREATE TYPE kname AS (g int, label text);
SELECT peek.create_collection('kitems', 'kitem');
SELECT peek.create_collection('knames', 'kname');
-- one time: both collections written at once
CREATE FUNCTION kstep(ii kitem[], id kitem[], ni kname[] DEFAULT '{}', nd kname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('kitems', ii, id) + 0 * peek.write('knames', ni, nd)$$;
-- the times in [first, upper) at which a view's rows, as text, differ
-- from its query's over its inputs at that time
CREATE FUNCTION kmismatches(view text, first int DEFAULT 0) RETURNS text
LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format('SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', view, view),
        format('SELECT q::text FROM (%s) q',
               replace(replace(query, '''kitems''::text', '''kitems''::text, as_of => @T@'),
                       '''knames''::text', '''knames''::text, as_of => @T@')),
        first, (SELECT upper - 1 FROM peek.views WHERE name = view))
      FROM peek.views WHERE name = view$f$;
SELECT kstep(ARRAY[(1, 2.5, 'a'), (1, 2.50, 'a'), (1, 2.50, 'a'), (2, 1, 'b'), (3, 7, 'c')]::kitem[],
             '{}', ARRAY[(1, 'one'), (2, 'two')]::kname[]);

SELECT peek.create_view('kjoin', $$
    SELECT i.g, i.x, n.label FROM peek.persist_peek(NULL::kitem, 'kitems') i
      LEFT JOIN peek.persist_peek(NULL::kname, 'knames') n ON i.g = n.g$$);
SELECT peek.create_view('khaving', $$
    SELECT g, count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::kitem, 'kitems')
     GROUP BY g HAVING count(*) > 1$$);
SELECT peek.create_view('kwhole', $$
    SELECT count(*) AS n, sum(x) AS s, max(t) AS hi, min(g) AS lo
      FROM peek.persist_peek(NULL::kitem, 'kitems')$$);
SELECT peek.create_view('kstaged', $$
    SELECT n.label, count(*) AS n, sum(i.x) AS s FROM peek.persist_peek(NULL::kitem, 'kitems') i
      JOIN peek.persist_peek(NULL::kname, 'knames') n ON i.g = n.g GROUP BY n.label$$);
SELECT peek.create_view('kunion', $$
    SELECT g, x FROM peek.persist_peek(NULL::kitem, 'kitems') WHERE x > 2
    UNION ALL SELECT g, sum(x) FROM peek.persist_peek(NULL::kitem, 'kitems') GROUP BY g
    UNION ALL SELECT DISTINCT g, t::numeric FROM peek.persist_peek(NULL::kitem, 'kitems') WHERE t ~ '^[0-9]'$$);
SELECT peek.create_view('kratio', $$
    SELECT g, sum(x) / min(x) AS r FROM peek.persist_peek(NULL::kitem, 'kitems') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE name LIKE 'k%' AND state = 'ready' AND upper = 1$$);

-- one of the duplicate 2.50s goes: exactly it is retracted, then the 2.5
-- (group 1's HAVING row goes), then a 2.500 comes (it is back)
SELECT kstep('{}', ARRAY[(1, 2.50, 'a')]::kitem[]);
SELECT kstep('{}', ARRAY[(1, 2.5, 'a')]::kitem[]);
SELECT kstep(ARRAY[(1, 2.500, 'a'), (2, 1.0, '5')]::kitem[], '{}');
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE name LIKE 'k%' AND upper = 4$$);
SELECT g, x::text, label FROM kjoin ORDER BY g, x::text;
SELECT g, n, s::text FROM khaving ORDER BY g;

-- the runtime restarts: the groups are built again from the inputs, and
-- each learns its output (2.50 and 2.500 in group 1) when a time touches it
SELECT restart_maintenance();
SELECT kstep('{}', ARRAY[(1, 2.500, 'a'), (2, 1.0, '5')]::kitem[]);
-- group 1 emptied, then refilled; group 3 gains its name and loses it
SELECT kstep('{}', ARRAY[(1, 2.50, 'a')]::kitem[], ARRAY[(3, 'three')]::kname[]);
SELECT kstep(ARRAY[(1, 3.0, 'z'), (1, 3.00, 'z')]::kitem[], '{}', '{}', ARRAY[(3, 'three')]::kname[]);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE name LIKE 'k%' AND upper = 7$$);
SELECT g, x::text, label FROM kjoin ORDER BY g, x::text;
SELECT g, n, s::text FROM khaving ORDER BY g;
SELECT n, s::text, hi, lo FROM kwhole;
SELECT label, n, s::text FROM kstaged ORDER BY label;

-- every row of every input goes (the whole input's one row stays), then
-- a zero: the ratio's division fails that view alone
SELECT kstep('{}', ARRAY[(1, 3.0, 'z'), (1, 3.00, 'z'), (2, 1, 'b'), (3, 7, 'c')]::kitem[],
             '{}', ARRAY[(1, 'one'), (2, 'two')]::kname[]);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE name LIKE 'k%' AND upper = 8$$);
SELECT n, s, hi, lo FROM kwhole;
SELECT count(*) FROM kjoin;
SELECT kstep(ARRAY[(2, 0, 'b'), (2, 2.5, 'b')]::kitem[], '{}', ARRAY[(2, 'two')]::kname[]);
SELECT kstep(ARRAY[(2, 2.50, 'b')]::kitem[], '{}');
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE name LIKE 'k%' AND upper = 10$$);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'kratio'$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'k%' ORDER BY name;
SELECT g, x::text, label FROM kjoin ORDER BY g, x::text;
SELECT name, kmismatches(name) AS bad_times FROM peek.views
 WHERE name LIKE 'k%' AND state = 'ready' ORDER BY name;
-- what each view's groups keep is counted in its state bytes
SELECT view, operator, kind, bytes > 0 AS has_state FROM peek.dataflow_operators
 WHERE view IN ('kjoin', 'khaving', 'kwhole', 'kstaged') ORDER BY view, operator;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION kstep(kitem[], kitem[], kname[], kname[]);
DROP FUNCTION kmismatches(text, int);
DROP TYPE kitem;
DROP TYPE kname;
