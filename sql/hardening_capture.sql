-- Hardening of capture: every name in the DDL that create_source generates
-- is schema-qualified (the runtimes' search_path is pinned), and a change
-- that stops a table's changes from reaching the WAL fails its source at
-- that change's commit, as a row type change does.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- a table whose column types and collations live outside pg_catalog and
-- public, its source created with them on the caller's search_path: the
-- source's row type copy names each with its schema (the DDL runs with
-- search_path pinned, where a name visible to the caller is not found)
CREATE SCHEMA elsewhere;
CREATE COLLATION elsewhere.c_coll (provider = libc, locale = 'C');
CREATE COLLATION elsewhere."Odd Coll" (provider = libc, locale = 'C');
CREATE TYPE elsewhere.pair AS (a int, b text);
CREATE DOMAIN elsewhere.posint AS int CHECK (VALUE > 0);
CREATE TYPE elsewhere.mood AS ENUM ('sad', 'ok');
SET search_path = elsewhere, public;
CREATE TABLE public.named (k posint, p pair, m mood, t text COLLATE c_coll,
                           u text COLLATE "Odd Coll");
INSERT INTO named VALUES (1, ROW(1, 'x'), 'ok', 'b', 'B'), (2, ROW(2, 'y'), 'sad', 'a', 'A');
SELECT peek.create_source('named_src', 'public.named');
RESET search_path;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'named_src'$$);
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       c.collnamespace::regnamespace AS coll_schema, c.collname
  FROM peek.collections s
  JOIN pg_attribute a ON a.attrelid = (SELECT typrelid FROM pg_type WHERE oid = s.row_type::regtype)
  LEFT JOIN pg_collation c ON c.oid = a.attcollation AND a.attcollation <> 100
 WHERE s.name = 'named_src' AND a.attnum > 0 ORDER BY a.attnum;
INSERT INTO named VALUES (3, ROW(3, 'z'), 'ok', 'c', 'C');
SET pg_peek.isolation = 'strict serializable';
SELECT * FROM peek.persist_peek(NULL::named, 'named_src') ORDER BY t;
RESET pg_peek.isolation;
SELECT peek.drop_source('named_src');

-- SET UNLOGGED: the table's changes stop reaching the WAL.  The source
-- fails at the ALTER's commit (its upper stays at or below it), with the
-- reason in the views; peeks fail with 55000; the runtimes go on
SELECT string_agg(pid::text, ',' ORDER BY role) AS runtime_pids FROM peek.runtimes \gset
CREATE TABLE logged (k int, v text);
INSERT INTO logged VALUES (1, 'one');
SELECT peek.create_source('logged_src', 'logged');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'logged_src'$$);
SELECT pg_current_wal_insert_lsn() - '0/0' AS before_alter \gset
ALTER TABLE logged SET UNLOGGED;
SELECT pg_current_wal_insert_lsn() - '0/0' AS after_alter \gset
INSERT INTO logged VALUES (2, 'two');
-- more WAL, so that a round decodes past the ALTER
CREATE TABLE wal_filler AS SELECT g FROM generate_series(1, 1000) g;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'logged_src'$$);
SELECT name, state, failure FROM peek.collections WHERE name = 'logged_src';
SELECT upper > :before_alter AND upper <= :after_alter AS upper_at_the_alter
  FROM peek.collections WHERE name = 'logged_src';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::logged, 'logged_src')$$);
-- a runtime's state may be between rounds for a moment; its pid is what tells a restart
SELECT wait_for($$SELECT bool_and(state = 'running') FROM peek.runtimes$$);
SELECT bool_and(state = 'running') AS running,
       string_agg(pid::text, ',' ORDER BY role) = :'runtime_pids' AS not_restarted
  FROM peek.runtimes;
SELECT peek.drop_source('logged_src');
-- an unlogged table is refused at create_source, changing nothing
SELECT try($$SELECT peek.create_source('logged_src', 'logged')$$);
SELECT count(*) FROM peek.collections WHERE name = 'logged_src';

-- the same inside a transaction that wrote the table first: what it wrote
-- before the ALTER is not kept either, the failure is at its commit
ALTER TABLE logged SET LOGGED;
SELECT peek.create_source('logged_src', 'logged');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'logged_src'$$);
BEGIN;
INSERT INTO logged VALUES (3, 'three');
ALTER TABLE logged SET UNLOGGED;
COMMIT;
INSERT INTO logged VALUES (4, 'four');
DROP TABLE wal_filler;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'logged_src'$$);
SELECT name, state, failure FROM peek.collections WHERE name = 'logged_src';
SELECT peek.drop_source('logged_src');

-- another table access method with heap's handler still writes heap WAL:
-- its source goes on
CREATE ACCESS METHOD heap_again TYPE TABLE HANDLER heap_tableam_handler;
ALTER TABLE logged SET LOGGED;
SELECT peek.create_source('logged_src', 'logged');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'logged_src'$$);
ALTER TABLE logged SET ACCESS METHOD heap_again;
INSERT INTO logged VALUES (5, 'five');
SET pg_peek.isolation = 'strict serializable';
SELECT * FROM peek.persist_peek(NULL::logged, 'logged_src') ORDER BY k;
RESET pg_peek.isolation;
SELECT name, state, failure FROM peek.collections WHERE name = 'logged_src';
SELECT peek.drop_source('logged_src');

-- an ALTER TABLE that rewrites the table changes its rows without a
-- decodable change of its own: the rewrite is captured (the rows retracted,
-- the rewritten ones added), so rows written while it was unlogged inside
-- one transaction, and a USING expression's new values, are peeked
CREATE TABLE rewritten (k int, v text);
INSERT INTO rewritten VALUES (1, 'a');
SELECT peek.create_source('rewritten_src', 'rewritten');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'rewritten_src'$$);
BEGIN;
ALTER TABLE rewritten SET UNLOGGED;
INSERT INTO rewritten VALUES (2, 'written while unlogged');
ALTER TABLE rewritten SET LOGGED;
COMMIT;
INSERT INTO rewritten VALUES (3, 'c');
SET pg_peek.isolation = 'strict serializable';
SELECT * FROM peek.persist_peek(NULL::rewritten, 'rewritten_src') ORDER BY k;
ALTER TABLE rewritten ALTER COLUMN v TYPE text USING v || '-rewritten';
SELECT * FROM peek.persist_peek(NULL::rewritten, 'rewritten_src') ORDER BY k;
BEGIN;
DELETE FROM rewritten WHERE k = 3;
ALTER TABLE rewritten ALTER COLUMN v TYPE text USING upper(v);
INSERT INTO rewritten VALUES (4, 'after');
COMMIT;
SELECT * FROM peek.persist_peek(NULL::rewritten, 'rewritten_src') ORDER BY k;
-- VACUUM FULL copies pages: nothing changes
VACUUM FULL rewritten;
INSERT INTO rewritten VALUES (5, 'e');
SELECT (SELECT count(*) FROM peek.persist_peek(NULL::rewritten, 'rewritten_src')) AS peeked,
       (SELECT count(*) FROM rewritten) AS in_table;
SELECT count(*) FROM (SELECT * FROM rewritten EXCEPT ALL
                      SELECT * FROM peek.persist_peek(NULL::rewritten, 'rewritten_src')) d;
-- a rewrite to another column type fails the source, as its row type changed
ALTER TABLE rewritten ALTER COLUMN k TYPE bigint;
RESET pg_peek.isolation;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'rewritten_src'$$);
SELECT name, state, failure FROM peek.collections WHERE name = 'rewritten_src';
SELECT peek.drop_source('rewritten_src');
DROP TABLE rewritten;

DROP TABLE named, logged;
DROP ACCESS METHOD heap_again;
DROP SCHEMA elsewhere CASCADE;
