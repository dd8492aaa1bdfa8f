-- A view hydrated at once (dataflow/hydrate.c) writes its rows in the
-- order of its shard's rows index (peek.row_hash, then the image) and, on
-- a first hydration, straight into the base (each distinct row once with
-- its count, through the writer's multi-insert).  Attacked here: distinct
-- rows whose row hashes collide (same length and not), equal rows counted
-- into one, NULL fields, rows past the TOAST threshold, 0-row and 1-row
-- views, a hydration at the since and at the next time, then updates and
-- folds of those rows.  Each view at every time against its query, its
-- base's rows each distinct once, and each base row found through the
-- rows index by its hash.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE hoitem AS (g int, s text);
CREATE TYPE honame AS (g int, label text);
SELECT peek.create_collection('hoitems', 'hoitem');
SELECT peek.create_collection('honames', 'honame');
CREATE FUNCTION hostep(ii hoitem[], id hoitem[], ni honame[] DEFAULT '{}', nd honame[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('hoitems', ii, id) + 0 * peek.write('honames', ni, nd)$$;

-- pairs of distinct rows (1, 'c' || i) with equal row hashes, found, not
-- hard-coded: some of equal lengths, some not
CREATE TABLE hocollide AS
SELECT h, min(i) AS i1, max(i) AS i2 FROM (
    SELECT i, peek.row_hash(ROW(1, 'c' || i)::hoitem) AS h FROM generate_series(1, 300000) i) x
 GROUP BY h HAVING count(*) = 2;
SELECT count(*) >= 3 AS collisions,
       bool_or(length(i1::text) = length(i2::text)) AS same_length,
       bool_or(length(i1::text) <> length(i2::text)) AS other_length
  FROM hocollide;
-- the colliding rows, the first of each pair three times, the second twice
CREATE VIEW hocolliding AS
SELECT ROW(1, 'c' || i1)::hoitem AS r, 3 AS copies FROM hocollide
UNION ALL SELECT ROW(1, 'c' || i2)::hoitem, 2 FROM hocollide;
-- a long incompressible text (TOASTed out of line)
CREATE FUNCTION holong(seed int) RETURNS text LANGUAGE sql IMMUTABLE
RETURN (SELECT string_agg(md5(seed::text || ':' || k), '') FROM generate_series(1, 400) k);

-- time 0: the colliding rows (copies interleaved), NULL fields, long
-- rows (twice each), 2000 plain rows; names: g 1 twice (every row of g 1
-- twice in the join), g 2, g -1 (the NULL g's); time 1: more plain rows
SELECT hostep(ARRAY(SELECT r FROM hocolliding, generate_series(1, copies) c ORDER BY c, r)
             || ARRAY[(NULL, 'nullg'), (NULL, 'nullg'), (1, NULL), (1, NULL), (1, NULL),
                      (NULL, NULL), (2, holong(1)), (2, holong(1)), (1, holong(2))]::hoitem[]
             || ARRAY(SELECT ROW(i % 5, 'p' || i)::hoitem FROM generate_series(1, 2000) i),
             '{}',
             ARRAY[(1, 'one'), (1, 'uno'), (2, 'two'), (-1, 'none')]::honame[]);
SELECT hostep(ARRAY(SELECT ROW(i % 5, 'q' || i)::hoitem FROM generate_series(1, 50) i), '{}');
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 1) FROM peek.objects WHERE name IN ('hoitems', 'honames')$$);

-- joined (duplicates: g 1's rows twice each, the colliding ones 6 and 4
-- times), grouped by the whole row (a count of copies per row), distinct
-- rows, nothing, one row
SELECT peek.create_view('ho_join', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hoitem, 'hoitems') i
      JOIN peek.persist_peek(NULL::honame, 'honames') n ON coalesce(i.g, -1) = n.g$$);
SELECT peek.create_view('ho_count', $$
    SELECT i.g, i.s, count(*) AS n FROM peek.persist_peek(NULL::hoitem, 'hoitems') i GROUP BY i.g, i.s$$);
SELECT peek.create_view('ho_distinct', $$
    SELECT DISTINCT i.g, i.s FROM peek.persist_peek(NULL::hoitem, 'hoitems') i
      JOIN peek.persist_peek(NULL::honame, 'honames') n ON i.g = n.g$$);
SELECT peek.create_view('ho_none', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hoitem, 'hoitems') i
      JOIN peek.persist_peek(NULL::honame, 'honames') n ON i.g = n.g WHERE n.label = 'nothing'$$);
SELECT peek.create_view('ho_one', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hoitem, 'hoitems') i
      JOIN peek.persist_peek(NULL::honame, 'honames') n ON i.g = n.g WHERE i.s = 'p1'$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE name LIKE 'ho\_%' AND state = 'ready' AND upper = 2$$);
SELECT name, since, upper FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;

-- each view's shard: its base rows (time < 0), each distinct row once, the
-- views' rows found through the rows index by their hashes (an index scan
-- only) as by reading the shard whole
CREATE FUNCTION hobase(view text) RETURNS TABLE (base_rows bigint, distinct_rows bigint,
                                                 by_index bigint, by_heap bigint, total bigint)
LANGUAGE plpgsql AS $$
DECLARE shard text := (SELECT shard::text FROM peek.views WHERE name = view);
BEGIN
    EXECUTE format('SELECT count(*), count(DISTINCT data::text) FROM %s WHERE time < 0', shard)
      INTO base_rows, distinct_rows;
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_bitmapscan = off;
    EXECUTE format($q$SELECT count(*), sum(diff) FROM %s s
                       WHERE time < 0 AND peek.row_hash(data) = ANY (
                             SELECT peek.row_hash(v) FROM peek.persist_peek(NULL::%I, %L) v)$q$,
                   shard, view, view)
      INTO by_index, total;
    RESET enable_seqscan;
    RESET enable_bitmapscan;
    EXECUTE format('SELECT count(*) FROM %s WHERE time < 0 AND peek.row_hash(data) IS NOT NULL', shard)
      INTO by_heap;
    RETURN NEXT;
END $$;
SELECT name, base_rows = distinct_rows AS once, by_index = by_heap AS indexed,
       total IS NOT DISTINCT FROM nullif(rows, 0) AS counts
  FROM (SELECT name, rows, (hobase(name)).* FROM peek.views WHERE name LIKE 'ho\_%') v ORDER BY name;

-- every view at every time against its query
CREATE FUNCTION homismatches(view text) RETURNS text LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format('SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', view, view),
        format('SELECT v::text FROM (%s) v',
               replace(replace(query, '''hoitems''::text', '''hoitems''::text, as_of => @T@'),
                       '''honames''::text', '''honames''::text, as_of => @T@')),
        since, upper - 1)
      FROM peek.views WHERE name = view$f$;
SELECT name, homismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
-- the colliding rows in the join: 6 and 4 copies (through g 1's two names)
SELECT count(*) FILTER (WHERE c = 6) = (SELECT count(*) FROM hocollide) AS firsts,
       count(*) FILTER (WHERE c = 4) = (SELECT count(*) FROM hocollide) AS seconds
  FROM (SELECT s, count(*) AS c FROM ho_join WHERE s LIKE 'c%' GROUP BY s) x;

-- the colliding rows through an index of the view (index_peek) as
-- through a persist peek, at the since and now
SELECT peek.create_index('ho_join_s', 'ho_join', ARRAY['s']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ho_join_s'$$);
CREATE FUNCTION hoindexed() RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(t::text, ' ' ORDER BY t), '') FROM (
      SELECT t FROM peek.views v, generate_series(v.since, v.upper - 1) t,
             (SELECT 'c' || i1 AS s FROM hocollide UNION ALL SELECT 'c' || i2 FROM hocollide
              UNION ALL SELECT 'p1') c
       WHERE v.name = 'ho_join'
         AND (SELECT count(*) FROM peek.index_peek(NULL::ho_join, 'ho_join_s', ROW(c.s), as_of => t)) <>
             (SELECT count(*) FROM peek.persist_peek(NULL::ho_join, 'ho_join', as_of => t) j WHERE j.s = c.s)
       GROUP BY t) bad$$;
SELECT hoindexed() AS index_mismatches;

-- updates of those rows: one copy of each first colliding row retracted,
-- every second one whole; a long row's copy; the NULL rows; then a name of
-- g 1 gone; each a time of its own
SELECT hostep('{}', ARRAY(SELECT ROW(1, 'c' || i1)::hoitem FROM hocollide));
SELECT hostep('{}', ARRAY(SELECT ROW(1, 'c' || i2)::hoitem FROM hocollide, generate_series(1, 2)));
SELECT hostep('{}', ARRAY[(2, holong(1)), (NULL, NULL), (1, NULL)]::hoitem[]);
SELECT hostep(ARRAY[(1, holong(3)), (NULL, 'nullg')]::hoitem[], '{}', '{}', ARRAY[(1, 'uno')]::honame[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE name LIKE 'ho\_%' AND upper = 6$$);
SELECT name, homismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
SELECT hoindexed() AS index_mismatches;
-- the walks past work_mem: the updates sorted by row and merged with the
-- base in the rows index's order (shard_walk.c), the colliding rows' too
SET work_mem = '64kB';
SELECT name, homismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
RESET work_mem;

-- folded past those times: the base's rows again each distinct once,
-- indexed, counting the view's rows
SELECT peek.allow_compaction(name, 5) FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
SELECT wait_for($$SELECT bool_and(base_time = 5) FROM peek.objects WHERE name LIKE 'ho\_%'$$);
SELECT name, base_rows = distinct_rows AS once, by_index = by_heap AS indexed,
       total IS NOT DISTINCT FROM nullif(rows, 0) AS counts
  FROM (SELECT name, rows, (hobase(name)).* FROM peek.views WHERE name LIKE 'ho\_%') v ORDER BY name;
SELECT name, homismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
SELECT hoindexed() AS index_mismatches;

-- a view created as a write commits: hydrated at the bases' time and at
-- the write's (the colliding rows changed there), its base written at once
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 5) FROM peek.objects WHERE name IN ('hoitems', 'honames')$$);
BEGIN;
SELECT hostep(ARRAY(SELECT ROW(1, 'c' || i2)::hoitem FROM hocollide) || ARRAY[(1, holong(2))]::hoitem[],
             ARRAY(SELECT ROW(1, 'c' || i1)::hoitem FROM hocollide) || ARRAY[(1, holong(2))]::hoitem[]);
SELECT peek.create_view('ho_late', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hoitem, 'hoitems') i
      JOIN peek.persist_peek(NULL::honame, 'honames') n ON coalesce(i.g, -1) = n.g$$);
COMMIT;
SELECT wait_for($$SELECT state = 'ready' AND upper = 7 FROM peek.views WHERE name = 'ho_late'$$);
SELECT since, upper, homismatches('ho_late') AS mismatches FROM peek.views WHERE name = 'ho_late';
SELECT base_rows = distinct_rows AS once, by_index = by_heap AS indexed FROM hobase('ho_late');

SELECT peek.drop_view(name) FROM peek.views WHERE name LIKE 'ho\_%' ORDER BY name;
SELECT peek.drop_collection('hoitems');
SELECT peek.drop_collection('honames');
DROP FUNCTION hoindexed();
DROP FUNCTION homismatches(text);
DROP FUNCTION hobase(text);
DROP FUNCTION hostep(hoitem[], hoitem[], honame[], honame[]);
DROP FUNCTION holong(int);
DROP VIEW hocolliding;
DROP TABLE hocollide;
DROP TYPE hoitem;
DROP TYPE honame;
