-- Persist peeks: contents at a time, multiplicities, limit, compaction,
-- negative multiplicities, cancel of a waiting peek, and bad input.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE stock AS (sku text, qty int);
SELECT peek.create_collection('stock', 'stock');

-- history: t0 {+a, +b x2}, t1 {+c, -a}, t2 {+b x3, +c}, t3 {-b x4}
SELECT peek.append('stock', ARRAY[('a', 1), ('b', 2)]::stock[], 0);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 0);
SELECT peek.advance('stock', 1);
SELECT peek.write('stock', ARRAY[('c', 3)]::stock[], ARRAY[('a', 1)]::stock[]);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 2, 3);
SELECT peek.append('stock', ARRAY[('c', 3)]::stock[], 2);
SELECT peek.advance('stock', 3);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 3, -4);
SELECT peek.advance('stock', 4);

-- the contents at every time; multiplicities expand into copies
SELECT 0 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 0) ORDER BY 2, 3;
SELECT 1 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 1) ORDER BY 2, 3;
SELECT 2 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2) ORDER BY 2, 3;
SELECT 3 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 3) ORDER BY 2, 3;
-- as_of NULL reads the latest complete time, upper - 1 = 3
SELECT * FROM peek.persist_peek(NULL::stock, 'stock') ORDER BY 1, 2;
-- positional arguments and a whole-row result
SELECT p FROM peek.persist_peek(NULL::stock, 'stock', 0, NULL) p ORDER BY 1;

-- limit: stops after that many rows, copies included
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 0);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 1);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 4);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 100);

-- large values are stored toasted; a retraction still cancels its insert
SELECT peek.write('stock', ARRAY[(repeat('x', 100000), 1)]::stock[]);
SELECT length(sku), qty FROM peek.persist_peek(NULL::stock, 'stock', as_of => 4) WHERE qty = 1;
SELECT peek.write('stock', '{}'::stock[], ARRAY[(repeat('x', 100000), 1)]::stock[]);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 5) WHERE qty = 1;

-- a negative multiplicity is invalid data, shown with the row and count
SELECT peek.create_collection('bad', 'stock');
SELECT peek.write('bad', ARRAY[('z', 9)]::stock[]);
SELECT peek.append('bad', ARRAY[('z', 9)]::stock[], 1, -2);
SELECT peek.advance('bad', 2);
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 0);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 1)$$);
-- a limit reads no further than it needs, as an index peek's does: limit 0
-- does not meet the row
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 1, "limit" => 0)$$);

-- compaction: allow since 3; the shard consolidates at 3 and shrinks
SELECT shard_updates('stock') AS updates_before;
SELECT peek.allow_compaction('stock', 3);
SELECT wait_for($$SELECT since = 3 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT wait_for($$SELECT since = 3 FROM peek.objects WHERE name = 'stock'$$);
SELECT shard_rows('stock') AS rows_after;
SELECT since, upper, allowed_since FROM peek.collections WHERE name = 'stock';
-- contents at and after since are unchanged
SELECT 3 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 3) ORDER BY 2, 3;
SELECT 5 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 5) ORDER BY 2, 3;
-- below since: the compacted error names both times
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2)$$);
-- allow_compaction only raises
SELECT peek.allow_compaction('stock', 1);
SELECT since, allowed_since FROM peek.collections WHERE name = 'stock';
-- since stays below the upper; it follows upper - 1 up to the allowance
SELECT peek.allow_compaction('stock', 1000);
SELECT wait_for($$SELECT since = 5 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT peek.write('stock', '{}'::stock[]);
SELECT wait_for($$SELECT since = 6 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT since, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock';
-- as_of NULL reads the last complete time, without waiting
SET statement_timeout = '5s';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock')$$);
RESET statement_timeout;

-- a peek at a future time waits; statement_timeout cancels it (57014),
-- and nothing stays behind: no active peek, no waiter, no hold
SET statement_timeout = '300ms';
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 10);
RESET statement_timeout;
SELECT wait_for($$SELECT count(*) = 0 FROM peek.active_peeks$$);
SELECT wait_for($$SELECT coalesce(sum(waiters), 0) = 0 FROM peek.frontiers$$);
SELECT object, since, upper, sum(waiters) AS waiters FROM peek.frontiers GROUP BY 1, 2, 3 ORDER BY object;
-- and the next peek works
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 0);

-- an empty collection's first complete time is 0: as_of NULL waits for it
SELECT peek.create_collection('empty', 'stock');
SET statement_timeout = '300ms';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'empty')$$);
RESET statement_timeout;
SELECT peek.advance('empty', 1);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'empty');

-- bad input
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'nosuch')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, NULL)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::int4, 'stock')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::item_other, 'stock')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => -1)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', "limit" => -1)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 6, "limit" => -1)$$);

-- result too large
SET pg_peek.max_result_bytes = '1kB';
SELECT peek.create_collection('big', 'stock');
SELECT peek.write('big', array_agg((repeat('y', 100) || g, g)::stock)) FROM generate_series(1, 50) g;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'big')$$);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big', "limit" => 5);
RESET pg_peek.max_result_bytes;
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big');

-- The streamed scan: a call in FROM is read by a custom scan that streams
-- the walk's rows up the plan (no tuplestore); a whole-row reference,
-- ORDINALITY, ROWS FROM, a SET clause on the function and a call in the
-- select list keep the function scan.  Both give the same rows.
SELECT peek.create_collection('multi', 'stock');
SELECT peek.write('multi', array_agg(('m' || g % 7, g % 3)::stock)) FROM generate_series(1, 200) g;
SELECT peek.write('multi', ARRAY[('m1', 1), ('n', 0)]::stock[], ARRAY[('m2', 2)]::stock[]);
SELECT peek.allow_compaction('multi', 1);
SELECT wait_for($$SELECT since = 1 FROM peek.objects WHERE name = 'multi'$$);
-- recent updates after the base: times 2 and 3
SELECT peek.write('multi', ARRAY[('m1', 1), ('m3', 0)]::stock[], ARRAY[('m0', 0)]::stock[]);
SELECT peek.write('multi', ARRAY[('o', 5)]::stock[], ARRAY[('m1', 1), ('m1', 1)]::stock[]);
EXPLAIN (COSTS OFF) SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
EXPLAIN (COSTS OFF) SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) WHERE qty > 0;
EXPLAIN (COSTS OFF) SELECT p FROM peek.persist_peek(NULL::stock, 'multi') p;
EXPLAIN (COSTS OFF) SELECT * FROM peek.persist_peek(NULL::stock, 'multi') WITH ORDINALITY;
EXPLAIN (COSTS OFF) SELECT * FROM ROWS FROM (peek.persist_peek(NULL::stock, 'multi'), generate_series(1, 2));
EXPLAIN (COSTS OFF) SELECT peek.persist_peek(NULL::stock, 'multi');
SELECT 3 AS t, sku, qty, count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) GROUP BY 2, 3 ORDER BY 2, 3;
-- the same multiset each way, at each time, with and without a limit
SELECT t, (SELECT array_agg(p ORDER BY p) FROM peek.persist_peek(NULL::stock, 'multi', as_of => t) p) =
          (SELECT array_agg((sku, qty)::stock ORDER BY (sku, qty)::stock)
             FROM peek.persist_peek(NULL::stock, 'multi', as_of => t)) AS same,
          (SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => t, "limit" => 40)) AS limited
  FROM generate_series(1, 3) t;
-- a LIMIT straight over the scan reads the base as "limit" => 5 does
-- (through the shard's time index); under ORDER BY the heap is read whole
SELECT shard AS multi_shard FROM peek.collections WHERE name = 'multi' \gset
BEGIN;
SELECT seq_scan AS scans0 FROM pg_stat_xact_all_tables WHERE relid = :'multi_shard'::regclass \gset
SELECT count(*) FROM (SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) LIMIT 5) x;
SELECT seq_scan - :scans0 AS heap_scans FROM pg_stat_xact_all_tables WHERE relid = :'multi_shard'::regclass;
SELECT count(*) FROM (SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) ORDER BY sku LIMIT 5) x;
SELECT seq_scan - :scans0 AS heap_scans FROM pg_stat_xact_all_tables WHERE relid = :'multi_shard'::regclass;
COMMIT;
-- a qual, a projection and a correlated subplan in the qual (shown once)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT upper(sku) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) p
 WHERE qty > 0 AND EXISTS (SELECT 1 FROM generate_series(1, p.qty) g WHERE g = 2);
-- lateral: the scan peeks again for each outer row
SELECT c.name, count(*) FROM (VALUES ('multi'), ('big'), ('stock')) c(name),
       LATERAL peek.persist_peek(NULL::stock, c.name) GROUP BY 1 ORDER BY 1;
-- two streams open at once in one backend: a peek's hold (and the backend's
-- peek slot) ends when its walk begins, so cursors and other peeks interleave
BEGIN;
DECLARE c1 CURSOR FOR SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
DECLARE c2 SCROLL CURSOR FOR SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 2);
MOVE FORWARD 10 IN c1;
MOVE FORWARD 20 IN c2;
SELECT count(*) AS active_peeks FROM peek.active_peeks;
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big');
MOVE FORWARD ALL IN c1;
MOVE BACKWARD 5 IN c2;
MOVE FORWARD ALL IN c2;
COMMIT;
-- in a plpgsql loop, peeking again inside it
DO $$
DECLARE r record; n int := 0; m bigint := 0;
BEGIN
  FOR r IN SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) LOOP
    n := n + 1;
    IF n % 50 = 0 THEN
      m := m + (SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big'));
    END IF;
  END LOOP;
  RAISE NOTICE 'rows %, inner peeks %', n, m;
END $$;
-- a cursor rolled back with its savepoint leaves nothing behind
BEGIN;
SAVEPOINT s;
DECLARE c3 CURSOR FOR SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
MOVE FORWARD 3 IN c3;
ROLLBACK TO SAVEPOINT s;
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
COMMIT;
-- a cursor read across savepoints released and rolled back: its stream is
-- not bound to them, and the transaction commits with its writes
CREATE TABLE kept (x int);
BEGIN;
INSERT INTO kept VALUES (1);
DECLARE sc CURSOR FOR SELECT * FROM peek.persist_peek(NULL::stock, 'big');
SAVEPOINT s1;
MOVE FORWARD 2 IN sc;
RELEASE SAVEPOINT s1;
SAVEPOINT s2;
MOVE FORWARD 2 IN sc;
ROLLBACK TO SAVEPOINT s2;
MOVE FORWARD ALL IN sc;
COMMIT;
SELECT * FROM kept;
DROP TABLE kept;
-- 120 streams open at once in one backend, each in its last phase (rows
-- that only the recent updates have)
DO $$
DECLARE c refcursor; r record; n int := 0;
BEGIN
  FOR i IN 1 .. 120 LOOP
    c := 'stream_' || i;
    OPEN c FOR SELECT * FROM peek.persist_peek(NULL::stock, 'big');
    FETCH c INTO r;
    n := n + 1;
  END LOOP;
  RAISE NOTICE 'streams open: %', n;
END $$;
-- rescanned with the same arguments (a correlated subquery), the scan
-- gives the same answer each time; a domain over a row type keeps the
-- function scan (which refuses it)
EXPLAIN (COSTS OFF) SELECT g, (SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) p WHERE p.qty <> g) FROM generate_series(0, 2) g;
SELECT g, (SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) p WHERE p.qty <> g) AS streamed,
          (SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) WITH ORDINALITY p WHERE p.qty <> g) AS function_scan
  FROM generate_series(0, 5) g;
CREATE DOMAIN stock_d AS stock;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock_d, 'multi')$$);
DROP DOMAIN stock_d;
-- an error in the middle of the stream (a negative row met late)
SELECT try($$SELECT count(*) FROM (SELECT * FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3)
                                   UNION ALL SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 1)) u$$);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
-- UPDATE ... FROM takes a row mark (a whole-row copy): the function scan
CREATE TABLE stock_t AS SELECT DISTINCT sku, 0 AS qty FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3);
EXPLAIN (COSTS OFF) UPDATE stock_t t SET qty = p.qty FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) p
 WHERE t.sku = p.sku AND p.qty = 2;
UPDATE stock_t t SET qty = p.qty FROM peek.persist_peek(NULL::stock, 'multi', as_of => 3) p
 WHERE t.sku = p.sku AND p.qty = 2;
SELECT * FROM stock_t ORDER BY 1;
DROP TABLE stock_t;
-- EXECUTE on the function is checked as a function scan checks it
CREATE ROLE peek_stream_reader;
GRANT USAGE ON SCHEMA peek TO peek_stream_reader;
REVOKE EXECUTE ON FUNCTION peek.persist_peek(anyelement, text, bigint, bigint) FROM PUBLIC;
SET ROLE peek_stream_reader;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'multi')$$);
SELECT try($$EXPLAIN SELECT * FROM peek.persist_peek(NULL::stock, 'multi')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION peek.persist_peek(anyelement, text, bigint, bigint) TO PUBLIC;
-- a SET clause on the function keeps the function scan, which applies it
ALTER FUNCTION peek.persist_peek(anyelement, text, bigint, bigint) SET work_mem = '64kB';
EXPLAIN (COSTS OFF) SELECT * FROM peek.persist_peek(NULL::stock, 'multi');
ALTER FUNCTION peek.persist_peek(anyelement, text, bigint, bigint) RESET ALL;
-- a generic plan outlives ALTER TYPE: attributes added since are not read,
-- as by the function scan; one dropped fails the scan (42804), as it fails
-- the function scan (42703)
CREATE TYPE tiny AS (a int, b int);
SELECT peek.create_collection('tiny', 'tiny');
SELECT peek.write('tiny', ARRAY[ROW(1, 2)]::tiny[]);
PREPARE tiny_peek AS SELECT * FROM peek.persist_peek(NULL::tiny, 'tiny') ORDER BY a;
PREPARE tiny_fs AS SELECT a, b FROM peek.persist_peek(NULL::tiny, 'tiny') WITH ORDINALITY ORDER BY a;
EXECUTE tiny_peek;
ALTER TYPE tiny ADD ATTRIBUTE c text;
SELECT peek.write('tiny', ARRAY[ROW(3, 4, 'x')]::tiny[]);
EXECUTE tiny_peek;
EXECUTE tiny_fs;
ALTER TYPE tiny DROP ATTRIBUTE b;
SELECT try($$EXECUTE tiny_peek$$);
SELECT try($$EXECUTE tiny_fs$$);
SELECT * FROM peek.persist_peek(NULL::tiny, 'tiny') ORDER BY 1;
DEALLOCATE tiny_peek;
DEALLOCATE tiny_fs;

DROP EXTENSION pg_peek CASCADE;
DROP TYPE stock;
DROP TYPE tiny;
DROP ROLE peek_stream_reader;
