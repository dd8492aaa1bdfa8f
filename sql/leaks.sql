-- Another role's objects: a peek or write by a role that may not read or
-- write them fails on privileges before anything about them (their row
-- type, their source table) shows.  A collection whose row type was dropped
-- fails peeks with 55000 and the reason, whatever row type a peek passes.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
DROP ROLE IF EXISTS leak_owner;
DROP ROLE IF EXISTS leak_other;
RESET client_min_messages;
CREATE ROLE leak_owner;
CREATE ROLE leak_other;
GRANT USAGE ON SCHEMA peek TO leak_owner, leak_other;
CREATE SCHEMA leak_s AUTHORIZATION leak_owner;
SET ROLE leak_owner;
CREATE TYPE leak_s.secret_t AS (id int, v text);
SELECT peek.create_collection('leak_c', 'leak_s.secret_t');
SELECT peek.create_index('leak_i', 'leak_c', '{id}');
RESET ROLE;
CREATE TYPE leak_mine AS (id int);

SET ROLE leak_other;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::leak_mine, 'leak_c')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::leak_mine, 'leak_i')$$);
SELECT try($$SELECT peek.write('leak_c', ARRAY[ROW(1)]::leak_mine[])$$);
SELECT try($$SELECT peek.append('leak_c', ARRAY[ROW(1)]::leak_mine[], 5)$$);
SELECT try($$SELECT peek.advance('leak_c', 5)$$);
RESET ROLE;

-- a dropped row type fails the collection and its index; peeks say so
CREATE TABLE leak_tt (id int, v text);
SELECT peek.create_collection('leak_tc', 'leak_tt');
SELECT peek.write('leak_tc', ARRAY[(1, 'x')]::leak_tt[]);
SELECT peek.create_index('leak_tci', 'leak_tc', '{id}');
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'leak_tci'$$);
SET client_min_messages = warning;
DROP TABLE leak_tt CASCADE;
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'leak_tc'$$);
SELECT regexp_replace(try($$SELECT * FROM peek.persist_peek(NULL::leak_mine, 'leak_tc')$$), 'OID \d+', 'OID n');
SELECT regexp_replace(try($$SELECT * FROM peek.index_peek(NULL::leak_mine, 'leak_tci')$$), 'OID \d+', 'OID n');
-- a write to it says why it failed, not that its row type is gone
SELECT regexp_replace(try($$SELECT peek.write('leak_tc', ARRAY[]::leak_mine[])$$), 'OID \d+', 'OID n');

SELECT peek.drop_collection('leak_tc');
SELECT peek.drop_collection('leak_c');
DROP TYPE leak_mine;
DROP SCHEMA leak_s CASCADE;
REVOKE USAGE ON SCHEMA peek FROM leak_owner, leak_other;
DROP ROLE leak_owner;
DROP ROLE leak_other;
