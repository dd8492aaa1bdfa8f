-- Attacks on three changes: shard appends buffered into multi-inserts
-- (shard_write.c), the persist walk counting a base page at a time
-- (shard_walk.c) and index peek key fields read as constants or
-- parameters without an ExprState, with per-backend peek counters
-- (index_scan.c, peek/slots.c).  Each answer is checked against what
-- must hold whatever the implementation: nothing of a rolled-back or
-- failed write, equal rows cancelling, count(*) and the rows failing
-- alike at the same byte bound, a parameter taken as its key column's
-- type, counters that survive their backends; and a session's cached
-- index key following its row type's change (peek_call.c).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
SET statement_timeout = '60s';

CREATE TYPE ma_row AS (k int8, v text, f float8, n numeric);
SELECT peek.create_collection('ma', 'ma_row');
SELECT peek.create_index('ma_k', 'ma', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ma_k'$$);
SELECT peek.write('ma', ARRAY[(0, 'zero', 0, 0)]::ma_row[]);

-- a write of two flushed batches and more, rolled back: nothing stays;
-- in the open transaction a peek reads the published contents without it
BEGIN;
SELECT peek.write('ma', array_agg((g, 'v' || g, g, g)::ma_row)) FROM generate_series(1, 2500) g;
SELECT count(*), sum(k) FROM peek.persist_peek(NULL::ma_row, 'ma');
SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(2500::int8));
ROLLBACK;
SELECT count(*) FROM peek.persist_peek(NULL::ma_row, 'ma');
-- a savepoint rolled back after a write of batches by their bytes: the
-- write before it stays
BEGIN;
SELECT peek.write('ma', array_agg((g, 'v' || g, g, g)::ma_row)) FROM generate_series(1, 10) g;
SAVEPOINT s;
SELECT peek.write('ma', array_agg((g, repeat('x', 3000), g, g)::ma_row)) FROM generate_series(11, 2500) g;
ROLLBACK TO s;
COMMIT;
SELECT count(*), sum(k), max(length(v)) FROM peek.persist_peek(NULL::ma_row, 'ma');
-- a write failing after more than a batch of rows writes none
SELECT try($$SELECT peek.write('ma', array_agg(CASE WHEN g = 1700 THEN NULL ELSE (g, 'v', g, g)::ma_row END))
  FROM generate_series(100, 2500) g$$);
SELECT count(*) FROM peek.persist_peek(NULL::ma_row, 'ma');
-- an exception block catching an error raised after a big write: the
-- write is undone, the one after it commits
CREATE FUNCTION ma_caught() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  caught text;
BEGIN
  BEGIN
    PERFORM peek.write('ma', array_agg((g, 'e', g, g)::ma_row)) FROM generate_series(5000, 7500) g;
    RAISE EXCEPTION 'after the write';
  EXCEPTION WHEN raise_exception THEN
    caught := SQLERRM;
  END;
  PERFORM peek.write('ma', ARRAY[(9999, 'z', 0, 0)]::ma_row[]);
  RETURN caught;
END $$;
SELECT ma_caught();
SELECT count(*), count(*) FILTER (WHERE k BETWEEN 5000 AND 7500) AS undone,
       count(*) FILTER (WHERE k = 9999) AS kept
  FROM peek.persist_peek(NULL::ma_row, 'ma');
SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(6000::int8));
SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(9999::int8));

-- NaN, -0.0, a numeric's trailing zero and a TOASTed text: found by key as
-- written, and retracted by the same values written again
SELECT peek.write('ma', ARRAY[(20001, 'nan', 'NaN', 'NaN'), (20002, 'mz', '-0.0', 1.50),
                              (20003, repeat('t', 100000), 1, 1.0)]::ma_row[]);
SELECT k, f, n, length(v) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(20001::int8)) UNION ALL
SELECT k, f, n, length(v) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(20002::int8)) UNION ALL
SELECT k, f, n, length(v) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(20003::int8));
SELECT peek.write('ma', '{}', ARRAY[(20001, 'nan', 'NaN', 'NaN'), (20002, 'mz', '-0.0', 1.50),
                                   (20003, repeat('t', 100000), 1, 1.0)]::ma_row[]);
SELECT count(*) FROM peek.persist_peek(NULL::ma_row, 'ma') WHERE k > 20000;
SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(20003::int8));

-- key fields from parameters of other types than the key column, NULL
-- parameters, a domain with a CHECK, both plan kinds
PREPARE ma_int4(int4) AS SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW($1));
PREPARE ma_int8(int8) AS SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW($1));
PREPARE ma_text(text) AS SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW($1));
CREATE DOMAIN ma_positive AS int8 CHECK (VALUE > 0);
PREPARE ma_domain(ma_positive) AS SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW($1));
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ma_int4(3);
EXECUTE ma_int4(3);
EXECUTE ma_int8(3);
EXECUTE ma_int4(NULL);
EXECUTE ma_domain(3);
SELECT try('EXECUTE ma_text(''3'')'), try('EXECUTE ma_domain(-3)');
SET plan_cache_mode = force_custom_plan;
EXECUTE ma_int4(3);
EXECUTE ma_int8(3);
EXECUTE ma_int4(NULL);
EXECUTE ma_domain(3);
SELECT try('EXECUTE ma_text(''3'')'), try('EXECUTE ma_domain(-3)');
RESET plan_cache_mode;
-- SQL functions, inlined or not, with their parameter as the key
CREATE FUNCTION ma_count(x int8) RETURNS bigint LANGUAGE sql
  AS $$ SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(x)) $$;
CREATE FUNCTION ma_rows(x int8) RETURNS SETOF ma_row LANGUAGE sql
  AS $$ SELECT * FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(x)) $$;
SELECT g, ma_count(g), ma_count(NULL) FROM generate_series(3, 5) g;
SELECT g, r.k FROM generate_series(3, 5) g, LATERAL ma_rows(g) r ORDER BY g;

-- an attribute added to the row type after this session peeked the
-- index: its later peeks deform the rows of the new version with the new
-- descriptor (the session's cached key was made with the old one: XX000)
CREATE TYPE ma_grow AS (k int8, v text);
SELECT peek.create_collection('mg', 'ma_grow');
SELECT peek.create_index('mg_k', 'mg', ARRAY['k']);
SELECT peek.write('mg', array_agg((g % 10, 'v' || g)::ma_grow)) FROM generate_series(1, 100) g;
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'mg_k'$$);
SELECT count(*) FROM peek.index_peek(NULL::ma_grow, 'mg_k', ROW(5::int8));
ALTER TYPE ma_grow ADD ATTRIBUTE w int;
SELECT peek.write('mg', array_agg((g % 10, 'w' || g, g)::ma_grow)) FROM generate_series(1, 30) g;
SELECT count(*), count(w), sum(w) FROM peek.index_peek(NULL::ma_grow, 'mg_k', ROW(5::int8), as_of => 1);
SELECT count(*), count(w) FROM peek.index_peek(NULL::ma_grow, 'mg_k', ROW(5::int8), as_of => 0) WITH ORDINALITY;

-- the peek counters of backends that exited stay counted, once
SELECT sum(count) AS durations_before FROM peek.peek_durations \gset
SELECT sum(peeks_fast) AS fast_before FROM peek.runtimes \gset
\c
SET statement_timeout = '60s';
SELECT count(*) FROM peek.index_peek(NULL::ma_row, 'ma_k', ROW(3::int8));
SELECT count(*) FROM peek.persist_peek(NULL::ma_row, 'ma');
\c
SELECT sum(count) - :durations_before AS durations_added FROM peek.peek_durations;
SELECT sum(peeks_fast) >= :fast_before AS fast_kept FROM peek.runtimes;

-- a base of many pages: count(*), count(k) and the rows pass or fail
-- pg_peek.max_result_bytes alike, at every bound around their bytes
SET statement_timeout = '60s';
CREATE TYPE ma_kv AS (k int, v text);
SELECT peek.create_collection('mp', 'ma_kv');
-- (the limited peeks below read the base in page order: the retracted row's
-- new base row, once folded, must go to the end, not to a page that
-- autovacuum freed of the load's deleted updates)
DO $$ BEGIN EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)',
                         (SELECT shard FROM peek.objects WHERE name = 'mp')); END $$;
SELECT peek.write('mp', array_agg((g, 'v' || g)::ma_kv)) FROM generate_series(1, 20000) g;
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'mp'$$);
-- a late row retracted twice: a full count fails, a limited one does not reach it
SELECT peek.write('mp', '{}', ARRAY[(19990, 'v19990'), (19990, 'v19990')]::ma_kv[]);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ma_kv, 'mp')$$);
SELECT try($$SELECT count(k) FROM peek.persist_peek(NULL::ma_kv, 'mp')$$);
SELECT count(*) FROM peek.persist_peek(NULL::ma_kv, 'mp', "limit" => 100);
SELECT count(*) FROM (SELECT k FROM peek.persist_peek(NULL::ma_kv, 'mp') LIMIT 100) s;
SELECT peek.write('mp', ARRAY[(19990, 'v19990')]::ma_kv[]);
SELECT count(*), sum(k) FROM peek.persist_peek(NULL::ma_kv, 'mp');
CREATE FUNCTION ma_under(kb int, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  answer text;
BEGIN
  PERFORM set_config('pg_peek.max_result_bytes', kb || 'kB', true);
  EXECUTE q INTO answer;
  RETURN answer;
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
SELECT min(kb) FILTER (WHERE star <> '54000') AS first_passing,
       count(*) FILTER (WHERE star <> k_col OR star <> whole) AS disagreeing
FROM (SELECT kb,
        ma_under(kb, $$SELECT count(*) FROM peek.persist_peek(NULL::ma_kv, 'mp')$$) AS star,
        ma_under(kb, $$SELECT count(k) FROM peek.persist_peek(NULL::ma_kv, 'mp')$$) AS k_col,
        ma_under(kb, $$SELECT count(*) FROM (SELECT * FROM peek.persist_peek(NULL::ma_kv, 'mp') OFFSET 0) s$$) AS whole
      FROM generate_series(640, 700) kb) b;
