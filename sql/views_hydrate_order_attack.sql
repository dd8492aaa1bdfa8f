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

CREATE TYPE hitem AS (g int, s text);
CREATE TYPE hname AS (g int, label text);
SELECT peek.create_collection('hitems', 'hitem');
SELECT peek.create_collection('hnames', 'hname');
CREATE FUNCTION hstep(ii hitem[], id hitem[], ni hname[] DEFAULT '{}', nd hname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('hitems', ii, id) + 0 * peek.write('hnames', ni, nd)$$;

-- pairs of distinct rows (1, 'c' || i) with equal row hashes, found, not
-- hard-coded: some of equal lengths, some not
CREATE TABLE hcollide AS
SELECT h, min(i) AS i1, max(i) AS i2 FROM (
    SELECT i, peek.row_hash(ROW(1, 'c' || i)::hitem) AS h FROM generate_series(1, 300000) i) x
 GROUP BY h HAVING count(*) = 2;
SELECT count(*) >= 3 AS collisions,
       bool_or(length(i1::text) = length(i2::text)) AS same_length,
       bool_or(length(i1::text) <> length(i2::text)) AS other_length
  FROM hcollide;
-- the colliding rows, the first of each pair three times, the second twice
CREATE VIEW hcolliding AS
SELECT ROW(1, 'c' || i1)::hitem AS r, 3 AS copies FROM hcollide
UNION ALL SELECT ROW(1, 'c' || i2)::hitem, 2 FROM hcollide;
-- a long incompressible text (TOASTed out of line)
CREATE FUNCTION hlong(seed int) RETURNS text LANGUAGE sql IMMUTABLE
RETURN (SELECT string_agg(md5(seed::text || ':' || k), '') FROM generate_series(1, 400) k);

-- time 0: the colliding rows (copies interleaved), NULL fields, long
-- rows (twice each), 2000 plain rows; names: g 1 twice (every row of g 1
-- twice in the join), g 2, g -1 (the NULL g's); time 1: more plain rows
SELECT hstep(ARRAY(SELECT r FROM hcolliding, generate_series(1, copies) c ORDER BY c, r)
             || ARRAY[(NULL, 'nullg'), (NULL, 'nullg'), (1, NULL), (1, NULL), (1, NULL),
                      (NULL, NULL), (2, hlong(1)), (2, hlong(1)), (1, hlong(2))]::hitem[]
             || ARRAY(SELECT ROW(i % 5, 'p' || i)::hitem FROM generate_series(1, 2000) i),
             '{}',
             ARRAY[(1, 'one'), (1, 'uno'), (2, 'two'), (-1, 'none')]::hname[]);
SELECT hstep(ARRAY(SELECT ROW(i % 5, 'q' || i)::hitem FROM generate_series(1, 50) i), '{}');
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 1) FROM peek.objects WHERE name IN ('hitems', 'hnames')$$);

-- joined (duplicates: g 1's rows twice each, the colliding ones 6 and 4
-- times), grouped by the whole row (a count of copies per row), distinct
-- rows, nothing, one row
SELECT peek.create_view('h_join', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON coalesce(i.g, -1) = n.g$$);
SELECT peek.create_view('h_count', $$
    SELECT i.g, i.s, count(*) AS n FROM peek.persist_peek(NULL::hitem, 'hitems') i GROUP BY i.g, i.s$$);
SELECT peek.create_view('h_distinct', $$
    SELECT DISTINCT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.g = n.g$$);
SELECT peek.create_view('h_none', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.g = n.g WHERE n.label = 'nothing'$$);
SELECT peek.create_view('h_one', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON i.g = n.g WHERE i.s = 'p1'$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE name LIKE 'h\_%' AND state = 'ready' AND upper = 2$$);
SELECT name, since, upper FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;

-- each view's shard: its base rows (time < 0), each distinct row once, the
-- views' rows found through the rows index by their hashes (an index scan
-- only) as by reading the shard whole
CREATE FUNCTION hbase(view text) RETURNS TABLE (base_rows bigint, distinct_rows bigint,
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
  FROM (SELECT name, rows, (hbase(name)).* FROM peek.views WHERE name LIKE 'h\_%') v ORDER BY name;

-- every view at every time against its query
CREATE FUNCTION hmismatches(view text) RETURNS text LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format('SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', view, view),
        format('SELECT v::text FROM (%s) v',
               replace(replace(query, '''hitems''::text', '''hitems''::text, as_of => @T@'),
                       '''hnames''::text', '''hnames''::text, as_of => @T@')),
        since, upper - 1)
      FROM peek.views WHERE name = view$f$;
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
-- the colliding rows in the join: 6 and 4 copies (through g 1's two names)
SELECT count(*) FILTER (WHERE c = 6) = (SELECT count(*) FROM hcollide) AS firsts,
       count(*) FILTER (WHERE c = 4) = (SELECT count(*) FROM hcollide) AS seconds
  FROM (SELECT s, count(*) AS c FROM h_join WHERE s LIKE 'c%' GROUP BY s) x;

-- the colliding rows through an index of the view (index_peek) as
-- through a persist peek, at the since and now
SELECT peek.create_index('h_join_s', 'h_join', ARRAY['s']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'h_join_s'$$);
CREATE FUNCTION hindexed() RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(t::text, ' ' ORDER BY t), '') FROM (
      SELECT t FROM peek.views v, generate_series(v.since, v.upper - 1) t,
             (SELECT 'c' || i1 AS s FROM hcollide UNION ALL SELECT 'c' || i2 FROM hcollide
              UNION ALL SELECT 'p1') c
       WHERE v.name = 'h_join'
         AND (SELECT count(*) FROM peek.index_peek(NULL::h_join, 'h_join_s', ROW(c.s), as_of => t)) <>
             (SELECT count(*) FROM peek.persist_peek(NULL::h_join, 'h_join', as_of => t) j WHERE j.s = c.s)
       GROUP BY t) bad$$;
SELECT hindexed() AS index_mismatches;

-- updates of those rows: one copy of each first colliding row retracted,
-- every second one whole; a long row's copy; the NULL rows; then a name of
-- g 1 gone; each a time of its own
SELECT hstep('{}', ARRAY(SELECT ROW(1, 'c' || i1)::hitem FROM hcollide));
SELECT hstep('{}', ARRAY(SELECT ROW(1, 'c' || i2)::hitem FROM hcollide, generate_series(1, 2)));
SELECT hstep('{}', ARRAY[(2, hlong(1)), (NULL, NULL), (1, NULL)]::hitem[]);
SELECT hstep(ARRAY[(1, hlong(3)), (NULL, 'nullg')]::hitem[], '{}', '{}', ARRAY[(1, 'uno')]::hname[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE name LIKE 'h\_%' AND upper = 6$$);
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
SELECT hindexed() AS index_mismatches;
-- the walks past work_mem: the updates sorted by row and merged with the
-- base in the rows index's order (shard_walk.c), the colliding rows' too
SET work_mem = '64kB';
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
RESET work_mem;

-- folded past those times: the base's rows again each distinct once,
-- indexed, counting the view's rows
SELECT peek.allow_compaction(name, 5) FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
SELECT wait_for($$SELECT bool_and(base_time = 5) FROM peek.objects WHERE name LIKE 'h\_%'$$);
SELECT name, base_rows = distinct_rows AS once, by_index = by_heap AS indexed,
       total IS NOT DISTINCT FROM nullif(rows, 0) AS counts
  FROM (SELECT name, rows, (hbase(name)).* FROM peek.views WHERE name LIKE 'h\_%') v ORDER BY name;
SELECT name, hmismatches(name) AS mismatches FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
SELECT hindexed() AS index_mismatches;

-- a view created as a write commits: hydrated at the bases' time and at
-- the write's (the colliding rows changed there), its base written at once
SELECT wait_for($$SELECT bool_and(base_time IS NOT DISTINCT FROM 5) FROM peek.objects WHERE name IN ('hitems', 'hnames')$$);
BEGIN;
SELECT hstep(ARRAY(SELECT ROW(1, 'c' || i2)::hitem FROM hcollide) || ARRAY[(1, hlong(2))]::hitem[],
             ARRAY(SELECT ROW(1, 'c' || i1)::hitem FROM hcollide) || ARRAY[(1, hlong(2))]::hitem[]);
SELECT peek.create_view('h_late', $$
    SELECT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'hitems') i
      JOIN peek.persist_peek(NULL::hname, 'hnames') n ON coalesce(i.g, -1) = n.g$$);
COMMIT;
SELECT wait_for($$SELECT state = 'ready' AND upper = 7 FROM peek.views WHERE name = 'h_late'$$);
SELECT since, upper, hmismatches('h_late') AS mismatches FROM peek.views WHERE name = 'h_late';
SELECT base_rows = distinct_rows AS once, by_index = by_heap AS indexed FROM hbase('h_late');

SELECT peek.drop_view(name) FROM peek.views WHERE name LIKE 'h\_%' ORDER BY name;
SELECT peek.drop_collection('hitems');
SELECT peek.drop_collection('hnames');
DROP FUNCTION hindexed();
DROP FUNCTION hmismatches(text);
DROP FUNCTION hbase(text);
DROP FUNCTION hstep(hitem[], hitem[], hname[], hname[]);
DROP FUNCTION hlong(int);
DROP VIEW hcolliding;
DROP TABLE hcollide;
DROP TYPE hitem;
DROP TYPE hname;
