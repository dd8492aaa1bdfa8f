-- A key field of another type is converted to its key column's type as SQL
-- assignment does; a session plans each conversion once and keeps it until
-- a function or cast it uses changes.  Every
-- case runs twice in one session: the cached conversion must behave as a
-- fresh one.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE kc_row AS (k int, v text);
SELECT peek.create_collection('kc', 'kc_row');
SELECT peek.write('kc', ARRAY[(5, 'five'), (-6, 'minus six')]::kc_row[]);
SELECT peek.create_index('kc_k', 'kc', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'kc_k'$$);

-- bigint and numeric keys, twice each (the second from the session's cache)
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(5::bigint));
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(5::bigint));
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(-5.5));
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(-5.5));

-- a cast the caller may not execute: the same 42501 every time (checked
-- at each peek), and the session goes on
CREATE TYPE kc_box AS (n int);
CREATE FUNCTION kc_box_to_int(kc_box) RETURNS int LANGUAGE plpgsql AS 'BEGIN RETURN $1.n; END';
CREATE CAST (kc_box AS int) WITH FUNCTION kc_box_to_int(kc_box) AS ASSIGNMENT;
REVOKE EXECUTE ON FUNCTION kc_box_to_int(kc_box) FROM PUBLIC;
CREATE ROLE kc_reader;
GRANT USAGE ON SCHEMA peek TO kc_reader;
GRANT pg_read_all_data TO kc_reader;
SET ROLE kc_reader;
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box))$$);
RESET ROLE;
-- the owner of the function may, and the reader is still checked
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box));
SET ROLE kc_reader;
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box))$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION kc_box_to_int(kc_box) TO kc_reader;
SET ROLE kc_reader;
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box));
RESET ROLE;

-- a dropped cast and its function are no longer used: 42804, as in a new
-- session (a cast dropped alone is kept while its function lives, as by a
-- prepared statement's plan)
DROP CAST (kc_box AS int);
DROP FUNCTION kc_box_to_int(kc_box);
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box))$$);

-- a cast made in a transaction that rolls back is gone with it
CREATE TYPE kc_box2 AS (n int);
BEGIN;
CREATE FUNCTION kc_box2_to_int(kc_box2) RETURNS int LANGUAGE sql AS 'SELECT $1.n';
CREATE CAST (kc_box2 AS int) WITH FUNCTION kc_box2_to_int(kc_box2) AS ASSIGNMENT;
SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box2));
ROLLBACK;
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_row, 'kc_k', ROW(ROW(5)::kc_box2))$$);

-- a domain key column: its constraints as they are at each peek
CREATE DOMAIN kc_dom AS int;
CREATE TYPE kc_drow AS (k kc_dom, v text);
SELECT peek.create_collection('kcd', 'kc_drow');
SELECT peek.write('kcd', ARRAY[(5, 'five'), (-6, 'minus six')]::kc_drow[]);
SELECT peek.create_index('kcd_k', 'kcd', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'kcd_k'$$);
SELECT * FROM peek.index_peek(NULL::kc_drow, 'kcd_k', ROW(-6));
ALTER DOMAIN kc_dom ADD CONSTRAINT kc_pos CHECK (VALUE > 0) NOT VALID;
SELECT try($$SELECT * FROM peek.index_peek(NULL::kc_drow, 'kcd_k', ROW(-6))$$);
SELECT * FROM peek.index_peek(NULL::kc_drow, 'kcd_k', ROW(5));
ALTER DOMAIN kc_dom DROP CONSTRAINT kc_pos;
SELECT * FROM peek.index_peek(NULL::kc_drow, 'kcd_k', ROW(-6));

-- key columns with a type modifier: a field of the column's own type is
-- assigned to it as SQL assigns (numeric rounded to its scale, a string too
-- long for varchar(n) refused with 22001), as a field of another type is
CREATE TYPE kc_mrow AS (n numeric(6,2), s varchar(5), v text);
SELECT peek.create_collection('kcm', 'kc_mrow');
SELECT peek.write('kcm', ARRAY[(1.00, 'abcde', 'one'), (2.50, 'xy', 'two')]::kc_mrow[]);
SELECT peek.create_index('kcm_n', 'kcm', ARRAY['n']);
SELECT peek.create_index('kcm_s', 'kcm', ARRAY['s']);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.indexes WHERE name IN ('kcm_n', 'kcm_s')$$);
SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_n', ROW(1.004));
SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_n', ROW(1.004::float8));
SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_n', ROW(2.499::numeric));
SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_n', keys => ARRAY[1.004, 2.5]::numeric[]) ORDER BY v;
SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_s', ROW('xy'::varchar));
SELECT try($$SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_s', ROW('abcdef'::varchar))$$);
SELECT try($$SELECT v FROM peek.index_peek(NULL::kc_mrow, 'kcm_s', ROW('abcdef'::text))$$);
SELECT v FROM (SELECT 1.004::numeric AS k) o, peek.index_peek(NULL::kc_mrow, 'kcm_n', ROW(o.k)) p;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE kc_drow;
DROP TYPE kc_mrow;
DROP DOMAIN kc_dom;
DROP TYPE kc_box;
DROP TYPE kc_box2;
DROP TYPE kc_row;
DROP ROLE kc_reader;
