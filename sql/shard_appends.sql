-- Shard appends: a writer's rows wait and go into the shard as one
-- multi-insert each 1000 rows or 64 kB and at its close (shard_write.c).
-- A row that is its canonical image already is stored as it came; any
-- other (here a field compressed in place) is formed afresh, so that equal
-- rows still cancel.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE sa_row AS (k int, v text);
SELECT peek.create_collection('sa', 'sa_row');
-- 2345 rows in one write: two full batches and the rest at the close
SELECT peek.write('sa', array_agg((g, 'v' || g)::sa_row)) FROM generate_series(1, 2345) g;
-- 100 rows of 2 kB: a batch each 32 rows or so, by their bytes
SELECT peek.write('sa', array_agg((g, repeat('w', 2000))::sa_row)) FROM generate_series(3001, 3100) g;
SELECT count(*), sum(k), count(DISTINCT k), sum(length(v))
FROM peek.persist_peek(NULL::sa_row, 'sa');
-- each write's rows are found by their time (the shard's time index)
SELECT count(*), min(k), max(k) FROM peek.persist_peek(NULL::sa_row, 'sa', as_of => 0);
-- every row retracted in one write: nothing is left
SELECT peek.write('sa', '{}', array_agg(r)) FROM peek.persist_peek(NULL::sa_row, 'sa') r;
SELECT count(*) FROM peek.persist_peek(NULL::sa_row, 'sa');

-- a row whose text is compressed in place (a table's row as it is stored)
-- and the same row written plainly are one row: the second retracts the
-- first, and both index routes agree
CREATE TABLE sa_table (k int, v text);
INSERT INTO sa_table VALUES (1, repeat('c', 5000)), (2, 'short');
SELECT pg_column_compression(v) IS NOT NULL AS compressed FROM sa_table ORDER BY k;
SELECT peek.create_collection('sc', 'sa_row');
SELECT peek.create_index('sc_k', 'sc', ARRAY['k']);
SELECT peek.write('sc', array_agg(ROW(t.k, t.v)::sa_row)) FROM sa_table t;
SELECT peek.write('sc', '{}', ARRAY[(1, repeat('c', 5000))]::sa_row[]);
SELECT k, length(v) FROM peek.persist_peek(NULL::sa_row, 'sc') ORDER BY k;
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'sc_k'$$);
SELECT k, length(v) FROM peek.index_peek(NULL::sa_row, 'sc_k', ROW(1));
SELECT k, length(v) FROM peek.index_peek(NULL::sa_row, 'sc_k', ROW(2));
