-- A grouping of linear aggregates over a source reads no row's count: a
-- source's rows never count below zero (src/dataflow/accums.c row_change).
-- Histories that could break that if capture got a row's image or a
-- retraction wrong: a TRUNCATE between inserts of one transaction, two in
-- one, a delete, a rewriting ALTER TABLE and an insert in one, toasted
-- values (out of line compressed, out of line uncompressed, inline
-- compressed) in rows updated without changing them, columns added with a
-- default before the source (rows without them on disk), a partition
-- truncated through its parent and rows moving out of it and into it.
-- Each source's shard never counts a row below zero at any time, equals
-- its table, and each view equals its query over the source's persist peek
-- at every time recorded.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE ls_times (src text, t bigint);
-- each view of the source past the WAL written so far, that time recorded
CREATE FUNCTION ls_settle(src text) RETURNS boolean LANGUAGE sql
RETURN views_past_wal(src, 'ls_times');
-- the times at which some row of a source's shard counts below zero (its
-- image told by its text)
CREATE FUNCTION ls_below_zero(src text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format($q$SELECT count(*) FROM (
        SELECT sum(d) OVER (PARTITION BY r ORDER BY time) AS c
          FROM (SELECT data::text AS r, time, sum(diff) AS d FROM %s GROUP BY 1, 2) u) c
        WHERE c < 0$q$, (SELECT shard FROM peek.collections WHERE name = src)) INTO n;
    RETURN n;
END $$;
-- the view's mismatches at the times recorded, its source's rows below
-- zero, and the rows in which the source and its table differ now
CREATE FUNCTION ls_check(src text, tbl text) RETURNS TABLE (name text, bad_times text, below_zero bigint, differ bigint)
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format($q$SELECT count(*) FROM ((TABLE %1$I EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::%1$I, %2$L))
                       UNION ALL (SELECT * FROM peek.persist_peek(NULL::%1$I, %2$L) EXCEPT ALL TABLE %1$I)) d$q$,
                   tbl, src) INTO n;
    RETURN QUERY
    SELECT v.name::text, view_mismatches(
               format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v.name, v.name),
               replace(v.query, format('%L::text', src), format('%L::text, as_of => @T@', src)),
               (SELECT array_agg(t ORDER BY t) FROM ls_times WHERE ls_times.src = ls_check.src)),
           ls_below_zero(src), n
      FROM peek.views v WHERE v.inputs @> ARRAY[src] ORDER BY v.name;
END $$;

-- rows twice (no key), every tenth with a toasted value; three columns
-- added with defaults before the source, so older rows lack them on disk
CREATE TABLE lsa (g int, v int);
INSERT INTO lsa SELECT i % 4, i FROM generate_series(1, 100) i;
ALTER TABLE lsa ADD COLUMN big text DEFAULT 's', ADD COLUMN w int DEFAULT 7,
    ADD COLUMN u int DEFAULT 0;
UPDATE lsa SET big = CASE v % 30 WHEN 0 THEN repeat('x', 1000000)  -- out of line, compressed
                                 WHEN 10 THEN repeat('y', 5000)    -- inline, compressed
                                 ELSE (SELECT string_agg(md5((v * 1000 + j)::text), '')
                                         FROM generate_series(1, 300) j) END  -- out of line
 WHERE v % 10 = 0;
INSERT INTO lsa SELECT g, v, big, w, u FROM lsa WHERE v % 7 = 0;
SET client_min_messages = warning;
SELECT peek.create_source('lsa_src', 'lsa');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'lsa_src'$$);
SELECT peek.create_view('lsasum', $$
    SELECT g, count(*) AS n, sum(v) AS s, avg(w) AS a, sum(length(big)) AS l,
           bool_or(big <> 's') AS toasted FROM lsa GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'lsasum'$$);
SELECT ls_settle('lsa_src');
SELECT * FROM lsasum ORDER BY g;
-- updates that leave the toasted values as they were; rows deleted
UPDATE lsa SET v = v + 1000 WHERE big <> 's';
SELECT ls_settle('lsa_src');
UPDATE lsa SET big = big, g = 3 - g WHERE v % 3 = 0;
SELECT ls_settle('lsa_src');
DELETE FROM lsa WHERE v % 2 = 1;
SELECT ls_settle('lsa_src');
SELECT * FROM lsasum ORDER BY g;
-- a delete, a rewrite (a column's type the same, its values new) and an
-- insert in one transaction; a rewrite rolled back in a savepoint
BEGIN;
DELETE FROM lsa WHERE v < 20;
ALTER TABLE lsa ALTER u TYPE int USING u + v;
INSERT INTO lsa VALUES (1, 1, repeat('z', 1000000), 1, 1);
COMMIT;
SELECT ls_settle('lsa_src');
BEGIN;
SAVEPOINT s;
ALTER TABLE lsa ALTER u TYPE int USING u * 2;
ROLLBACK TO s;
DELETE FROM lsa WHERE big = 's' AND v % 4 = 0;
COMMIT;
SELECT ls_settle('lsa_src');
SELECT * FROM lsasum ORDER BY g;
-- a TRUNCATE between inserts of one transaction (the first one's row goes
-- with it); two TRUNCATEs in one
BEGIN;
INSERT INTO lsa VALUES (0, 5, 'gone', 5, 5);
TRUNCATE lsa;
INSERT INTO lsa VALUES (0, 6, 'kept', 6, 6), (0, 6, 'kept', 6, 6), (2, 7, repeat('k', 100000), 7, 7);
COMMIT;
SELECT ls_settle('lsa_src');
SELECT * FROM lsasum ORDER BY g;
BEGIN;
TRUNCATE lsa;
INSERT INTO lsa VALUES (1, 1, 'a', 1, 1), (1, 1, 'a', 1, 1);
TRUNCATE lsa;
INSERT INTO lsa VALUES (1, 2, 'b', 2, 2);
COMMIT;
SELECT ls_settle('lsa_src');
SELECT * FROM lsasum ORDER BY g;
SELECT * FROM ls_check('lsa_src', 'lsa');

-- a partition's source: rows moving out of it and into it, then the
-- partitioned table truncated between inserts of one transaction
CREATE TABLE lsp (g int, v int) PARTITION BY LIST (g);
CREATE TABLE lsp0 PARTITION OF lsp FOR VALUES IN (0, 1);
CREATE TABLE lsp1 PARTITION OF lsp FOR VALUES IN (2, 3);
INSERT INTO lsp SELECT i % 4, i FROM generate_series(1, 40) i;
SET client_min_messages = warning;
SELECT peek.create_source('lsp0_src', 'lsp0');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'lsp0_src'$$);
SELECT peek.create_view('lspsum', $$SELECT g, count(*) AS n, sum(v) AS s FROM lsp0 GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'lspsum'$$);
SELECT ls_settle('lsp0_src');
UPDATE lsp SET g = 2 WHERE v % 3 = 0;
UPDATE lsp SET g = 1 WHERE g = 3;
SELECT ls_settle('lsp0_src');
SELECT * FROM lspsum ORDER BY g;
BEGIN;
INSERT INTO lsp0 VALUES (0, 100);
TRUNCATE lsp;
INSERT INTO lsp VALUES (0, 101), (2, 102);
COMMIT;
SELECT ls_settle('lsp0_src');
SELECT * FROM lspsum ORDER BY g;
SELECT * FROM ls_check('lsp0_src', 'lsp0');
