-- A streamed persist peek whose plan reads no column of its rows
-- (count(1), EXISTS, a constant select list) only counts them: the walk
-- steps through the base and the updates since, and no row is made
-- (scan.c, persist_peek_advance).  A query that is only count(*) of the
-- rows is the scan alone, which returns the count (no Aggregate).  Both
-- must count what the rows' path counts: a row as many times as its
-- multiplicity, a row updated many times since the base once, a deleted
-- one not at all, at every time from the since on (before the base's time
-- too), within the limit and pg_peek.max_result_bytes, and fail where that
-- path fails.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE pckv AS (k int, v text);
SELECT peek.create_collection('pc', 'pckv');
SELECT peek.set_retention('pc', NULL);
-- the same updates, kept in a plain table
CREATE TABLE pc_log (t bigint, k int, v text, diff bigint);

-- time 0: 2000 rows, k = 7 three times and k = 8 twice
INSERT INTO pc_log SELECT 0, g, 'v' || g, CASE g WHEN 7 THEN 3 WHEN 8 THEN 2 ELSE 1 END
  FROM generate_series(1, 2000) g;
-- times 1..30: k = 10 updated at every time (v10.<t>), k = 20 + t deleted,
-- k = 8 once more at time 5 (3 copies), k = 7 down to one copy at time 9
INSERT INTO pc_log SELECT t, 10, 'v10.' || (t - 1), -1 FROM generate_series(2, 30) t;
INSERT INTO pc_log VALUES (1, 10, 'v10', -1);
INSERT INTO pc_log SELECT t, 10, 'v10.' || t, 1 FROM generate_series(1, 30) t;
INSERT INTO pc_log SELECT t, 20 + t, 'v' || (20 + t), -1 FROM generate_series(1, 30) t;
INSERT INTO pc_log VALUES (5, 8, 'v8', 1), (9, 7, 'v7', -2);

-- pc_wrong(lo, hi): the times whose count(*) (the scan counting) or
-- count(1) (no column read) is not the log's, or not what the rows' path
-- (a column read) counts, or whose limited count is not the least of the
-- limit and the contents
CREATE FUNCTION pc_wrong(lo bigint, hi bigint) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    wrong bigint[] := '{}';
    want bigint;
BEGIN
    FOR at IN lo .. hi LOOP
        SELECT coalesce(sum(n), 0) INTO want FROM log_contents('pc_log', at);
        IF (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => at)) <> want
           OR (SELECT count(1) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => at)) <> want
           OR (SELECT count(k) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => at)) <> want
           OR (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => at, "limit" => 5)) <> LEAST(5, want)
           OR (SELECT count(*) FROM (SELECT 1 FROM peek.persist_peek(NULL::pckv, 'pc', as_of => at) LIMIT 1500) s) <> LEAST(1500, want)
        THEN
            wrong := wrong || at::bigint;
        END IF;
    END LOOP;
    RETURN wrong;
END $$;

SELECT log_write('pc', 'pckv', 'pc_log', 0, 0);
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'pc'$$);
-- count(*) or count(1) alone: the scan counts
EXPLAIN (COSTS OFF) SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(*), count(*) * 2 + 1 AS odd FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(1) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(*), count('x'::text) FROM peek.persist_peek(NULL::pckv, 'pc');
-- a count of what may be null, or of a parameter: the Aggregate counts
EXPLAIN (COSTS OFF) SELECT count(NULL::int) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(*), count(NULL::int) FROM peek.persist_peek(NULL::pckv, 'pc');
PREPARE pc_count_of(int) AS SELECT count($1) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) EXECUTE pc_count_of(1);
SELECT count(NULL::int) AS nulls, count(1) AS ones, count('x'::text) AS xs
  FROM peek.persist_peek(NULL::pckv, 'pc');
EXECUTE pc_count_of(1);
EXECUTE pc_count_of(NULL);
DEALLOCATE pc_count_of;
-- a filter, another aggregate, a grouping: the Aggregate counts
EXPLAIN (COSTS OFF) SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc') WHERE k > 1;
EXPLAIN (COSTS OFF) SELECT count(*), max(k) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(*) FILTER (WHERE k > 1) FROM peek.persist_peek(NULL::pckv, 'pc');
EXPLAIN (COSTS OFF) SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc') GROUP BY k;
SELECT count(*), count(*) * 2 + 1 AS odd, count(1) AS ones FROM peek.persist_peek(NULL::pckv, 'pc');
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc') HAVING count(*) > 5;
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc') OFFSET 1;
SELECT pc_wrong(0, 0);

-- updates after the base: the base rows they touch adjusted while counted
SELECT log_write('pc', 'pckv', 'pc_log', 1, 30);
SELECT pc_wrong(0, 30);
-- the base moved to 30: the times before it take the history out
SELECT wait_for($$SELECT base_time = 30 FROM peek.objects WHERE name = 'pc'$$);
SELECT pc_wrong(0, 30);
-- the copies of one row: each one counted, before the base's time too
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 8) WHERE k IN (7, 8);
SELECT count(*) FILTER (WHERE true) AS all_rows, count(*) FILTER (WHERE k = 8) AS k8
  FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 8);
-- compaction to 12: the history up to it is folded away
SELECT peek.allow_compaction('pc', 12);
SELECT wait_for($$SELECT since = 12 FROM peek.objects WHERE name = 'pc'$$);
SELECT pc_wrong(12, 30);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 11)$$);

SELECT count(*) FROM (SELECT 1 FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12) p
                       WHERE p.k = 8 LIMIT 2) s;
-- a qual without a column, a constant select list, EXISTS
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc') WHERE random() >= 0;
SELECT sum(1) AS ones, count(*) FILTER (WHERE now() IS NOT NULL) AS counted
  FROM peek.persist_peek(NULL::pckv, 'pc');
SELECT EXISTS (SELECT FROM peek.persist_peek(NULL::pckv, 'pc'));

-- LIMIT without ORDER BY stops early; with ORDER BY it reads every row
SELECT count(*) FROM (SELECT FROM peek.persist_peek(NULL::pckv, 'pc') LIMIT 7) s;
SELECT k, v FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12) ORDER BY k, v LIMIT 10;
SELECT count(*) FROM (SELECT 1 FROM peek.persist_peek(NULL::pckv, 'pc') ORDER BY k DESC LIMIT 4) s;

-- rescanned: the same count again (the answer replayed), or a peek again
-- at each time when the arguments change
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM generate_series(1, 3) g, peek.persist_peek(NULL::pckv, 'pc') p;
SELECT count(*) FROM generate_series(1, 3) g, peek.persist_peek(NULL::pckv, 'pc') p;
SELECT count(*) FROM generate_series(1, 3) g,
  (SELECT FROM peek.persist_peek(NULL::pckv, 'pc') LIMIT 100) p;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
-- counted again at each time; with the same arguments, the same count
EXPLAIN (COSTS OFF)
SELECT t, (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => t)) AS n
  FROM generate_series(12, 30, 6) t;
SELECT t, (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => t)) AS n
  FROM generate_series(12, 30, 6) t;
SELECT t, (SELECT count(*) + t FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 20)) AS n
  FROM generate_series(12, 30, 6) t;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT g, c.n FROM generate_series(1, 3) g, (SELECT count(*) AS n FROM peek.persist_peek(NULL::pckv, 'pc')) c
 WHERE c.n > g;
SELECT g, c.n FROM generate_series(1, 3) g, (SELECT count(*) AS n FROM peek.persist_peek(NULL::pckv, 'pc')) c
 WHERE c.n > g;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- the count's one row under GROUP BY (), a window, a scroll cursor read
-- backwards, a generic plan's as_of parameter, a view and a reader without
-- the right to peek: each as the Aggregate over the rows gives it
SELECT (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12) GROUP BY ()) =
       (SELECT count(k) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12)) AS same;
SELECT count(*) = count(k) AS same, count(*) OVER () AS one_row
  FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12);
BEGIN;
DECLARE pc_cursor SCROLL CURSOR FOR SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => 12);
FETCH pc_cursor;
FETCH pc_cursor;
FETCH BACKWARD pc_cursor;
COMMIT;
SET plan_cache_mode = force_generic_plan;
PREPARE pc_at(bigint) AS SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => $1);
EXPLAIN (COSTS OFF) EXECUTE pc_at(12);
SELECT t, n.count FROM generate_series(12, 30, 6) t,
  LATERAL (SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc', as_of => t)) n;
EXECUTE pc_at(12);
EXECUTE pc_at(30);
DEALLOCATE pc_at;
RESET plan_cache_mode;
CREATE VIEW pc_count AS SELECT count(*) AS n FROM peek.persist_peek(NULL::pckv, 'pc');
SELECT n, n + 1 AS next FROM pc_count;
CREATE ROLE pc_reader;
GRANT USAGE ON SCHEMA peek TO pc_reader;
SET ROLE pc_reader;
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc')$$);
RESET ROLE;
DROP VIEW pc_count;
REVOKE USAGE ON SCHEMA peek FROM pc_reader;
DROP ROLE pc_reader;

-- pg_peek.max_result_bytes counts the rows not made as it counts made ones
SET pg_peek.max_result_bytes = '16kB';
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pc')$$);
SELECT try($$SELECT count(k) FROM peek.persist_peek(NULL::pckv, 'pc')$$);
SELECT count(*) FROM (SELECT FROM peek.persist_peek(NULL::pckv, 'pc') LIMIT 100) s;
-- to the byte: the first LIMIT that fails is the same on every path (which
-- one depends on the order the rows are read in)
SELECT no_column = column_read AS no_column_same, counted = column_read AS counted_same,
       column_read BETWEEN 301 AND 699 AS in_range
  FROM (SELECT min(n) FILTER (WHERE try(format('SELECT count(*) FROM (SELECT FROM peek.persist_peek(NULL::pckv, %L) LIMIT %s) s', 'pc', n)) <> 'ok') AS no_column,
               min(n) FILTER (WHERE try(format('SELECT count(*) FROM peek.persist_peek(NULL::pckv, %L, "limit" => %s)', 'pc', n)) <> 'ok') AS counted,
               min(n) FILTER (WHERE try(format('SELECT count(k) FROM (SELECT k FROM peek.persist_peek(NULL::pckv, %L) LIMIT %s) s', 'pc', n)) <> 'ok') AS column_read
          FROM generate_series(300, 700) n) f;
RESET pg_peek.max_result_bytes;

-- a row retracted more often than inserted fails the count as it fails
-- the rows
SELECT peek.create_collection('pcneg', 'pckv');
SELECT peek.write('pcneg', ARRAY[(1, 'a'), (2, 'b')]::pckv[]);
SELECT peek.write('pcneg', '{}', ARRAY[(3, 'c')]::pckv[]);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcneg')$$);
SELECT try($$SELECT count(1) FROM peek.persist_peek(NULL::pckv, 'pcneg')$$);
SELECT try($$SELECT count(k) FROM peek.persist_peek(NULL::pckv, 'pcneg')$$);
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcneg', as_of => 0);

-- a row of a trillion copies: counted at once, not a copy at a time
-- (which would take minutes for each of these), as far as the limit and
-- pg_peek.max_result_bytes let it, which count every copy
SELECT peek.create_collection('pcmany', 'pckv');
SELECT peek.append('pcmany', ARRAY[(1, 'a')]::pckv[], 0, 1000000000000);
SELECT peek.append('pcmany', ARRAY[(2, 'b')]::pckv[], 0, 7);
SELECT peek.advance('pcmany', 1);
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcmany', "limit" => 3);
SET pg_peek.max_result_bytes = '2000000000kB';
SET statement_timeout = '20s';
SELECT count(*), count(1) AS ones
  FROM peek.persist_peek(NULL::pckv, 'pcmany', "limit" => 60000000000);
-- all of them: past the bytes (30 each), as one copy at a time would be
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcmany')$$);
-- the rows going up (a column read) are steps, and cancellable
SET statement_timeout = '300ms';
SELECT count(k) FROM peek.persist_peek(NULL::pckv, 'pcmany');
RESET statement_timeout;
-- to the byte: the first limit that fails is the same for the count as
-- for the rows (30 bytes each: 34 fit in 1kB)
SET pg_peek.max_result_bytes = '1kB';
SELECT counted, column_read
  FROM (SELECT min(n) FILTER (WHERE try(format('SELECT count(*) FROM peek.persist_peek(NULL::pckv, %L, "limit" => %s)', 'pcmany', n)) <> 'ok') AS counted,
               min(n) FILTER (WHERE try(format('SELECT count(k) FROM peek.persist_peek(NULL::pckv, %L, "limit" => %s)', 'pcmany', n)) <> 'ok') AS column_read
          FROM generate_series(30, 40) n) f;
RESET pg_peek.max_result_bytes;
SELECT peek.drop_collection('pcmany');

-- a count of many rows is cancellable as it walks them
SELECT peek.create_collection('pcbig', 'pckv');
SELECT peek.write('pcbig', ARRAY(SELECT (g, 'v')::pckv FROM generate_series(1, 300000) g));
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcbig');
SET statement_timeout = '2ms';
SELECT count(*) FROM peek.persist_peek(NULL::pckv, 'pcbig');
RESET statement_timeout;
SELECT peek.drop_collection('pcbig');

-- a base with a gap: the load's history compacted away and vacuumed, a
-- fold writes its new base rows into the space freed before the old ones;
-- a full walk reads the blocks that hold base rows (the time index's), and
-- all of them
SELECT peek.create_collection('pcgap', 'pckv');
SELECT peek.write('pcgap', ARRAY(SELECT (g, 'v' || g)::pckv FROM generate_series(1, 20000) g));
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'pcgap'$$);
SELECT peek.allow_compaction('pcgap', 0);
CREATE FUNCTION pcgap_shard(query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format(query, (SELECT shard FROM peek.collections WHERE name = 'pcgap')) INTO n;
    RETURN n;
END $$;
SELECT wait_for($$SELECT pcgap_shard('SELECT count(*) FROM %s WHERE time >= 0') = 0$$);
\set ECHO none
SELECT format('VACUUM %s', shard) FROM peek.collections WHERE name = 'pcgap' \gexec
\set ECHO all
SELECT peek.write('pcgap', ARRAY(SELECT (g, 'new' || g)::pckv FROM generate_series(1, 100) g),
                  ARRAY(SELECT (g, 'v' || g)::pckv FROM generate_series(1, 100) g));
SELECT wait_for($$SELECT base_time = 1 FROM peek.objects WHERE name = 'pcgap'$$);
-- blocks without a base row between the first and the last that have one
SELECT pcgap_shard($$SELECT max(b) - min(b) + 1 - count(DISTINCT b) FROM
                     (SELECT (ctid::text::point)[0] AS b FROM %s WHERE time < 0) r$$) > 0 AS gap;
SELECT count(*), count(1) AS ones FROM peek.persist_peek(NULL::pckv, 'pcgap');
SELECT count(k), sum(k), count(*) FILTER (WHERE v LIKE 'new%') AS new
  FROM peek.persist_peek(NULL::pckv, 'pcgap');
SELECT peek.drop_collection('pcgap');
DROP FUNCTION pcgap_shard(text);

SELECT peek.drop_collection('pcneg');
SELECT peek.drop_collection('pc');
DROP FUNCTION pc_wrong(bigint, bigint);
DROP TABLE pc_log;
DROP TYPE pckv;
