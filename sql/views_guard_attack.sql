-- The views' guard (view_uses_guard.c) attacked next to a create_view in
-- another session (through dblink), and by roles that own nothing:
--  * a change create_view's locks missed, as they read the rule's
--    dependencies before the command that recorded them was visible: a
--    new body of an operator's function or of a function a SQL-standard
--    body calls, next to an uncommitted create_view, went through (now it
--    waits and is refused, 2BP01);
--  * ALTER SCHEMA ... RENAME of a schema the view's function lives in took
--    no lock: next to an uncommitted create_view it went through and the
--    view failed at its first round ("schema ... does not exist"); renamed
--    first, create_view did not wait for it;
--  * ALTER TYPE ... RENAME VALUE of an enum the query names a value of,
--    ALTER TYPE ... DROP ATTRIBUTE of an input's attribute the query does
--    not read, ALTER COLLATION ... RENAME and ALTER EXTENSION ... SET
--    SCHEMA of what it names went through, and the view failed at its
--    next round ("invalid input value for enum", "operator does not
--    exist", "... does not exist");
--  * a role changing what it does not own waited for create_view's locks
--    before PostgreSQL told it so (42501); a CREATE OR REPLACE FUNCTION
--    locked every overload of its name, so replacing one waited for
--    another's replacement (and two such sessions could deadlock);
--  * the guard in a SAVEPOINT and under REPEATABLE READ; a database
--    without the extension: PostgreSQL's own locks only.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

CREATE FUNCTION gaconnect(name text, db text DEFAULT current_database()) RETURNS text LANGUAGE sql AS $$
    SELECT dblink_connect(name,
        format('dbname=%s port=%s host=%s application_name=%s', db,
               current_setting('port'),
               split_part(current_setting('unix_socket_directories'), ',', 1), name))$$;
CREATE TYPE garow AS (k int, v int);
CREATE TYPE gaenum AS ENUM ('a', 'b');
CREATE TYPE gaerow AS (k int, e gaenum);
SELECT peek.create_collection('gac', 'garow');
SELECT peek.write('gac', ARRAY[(1, 1), (2, 2)]::garow[]);
SELECT peek.create_collection('gae', 'gaerow');
SELECT peek.write('gae', ARRAY[(1, 'a'), (2, 'b')]::gaerow[]);
SELECT gaconnect('gaother'), gaconnect('gaview');
CREATE TABLE gapids AS
SELECT 'gaother' AS session, p FROM dblink('gaother', 'SELECT pg_backend_pid()') AS t(p int)
UNION ALL
SELECT 'gaview', p FROM dblink('gaview', 'SELECT pg_backend_pid()') AS t(p int);
-- gawaiting(session): whether the session waits for a lock, within 10 s
CREATE FUNCTION gawaiting(session text DEFAULT 'gaother') RETURNS boolean LANGUAGE sql AS $$
    SELECT wait_for(format('SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)',
                           (SELECT p FROM gapids WHERE gapids.session = gawaiting.session)), 10)$$;
CREATE FUNCTION gasend(statement text, session text DEFAULT 'gaother') RETURNS int LANGUAGE sql AS $$
    SELECT dblink_send_query(session, format('SELECT try(%L)', statement))$$;
-- the session's answer (and the end of it)
CREATE FUNCTION gaanswer(session text DEFAULT 'gaother') RETURNS text LANGUAGE plpgsql AS $$
DECLARE answer text;
BEGIN
    SELECT string_agg(r, '; ') INTO answer FROM dblink_get_result(session) AS t(r text);
    PERFORM * FROM dblink_get_result(session) AS t(r text);
    RETURN answer;
END $$;

-- gatry(statements): each statement's answer in the other session
CREATE FUNCTION gatry(statements text[]) RETURNS TABLE (statement text, answer text) LANGUAGE sql AS $$
    SELECT t, r FROM unnest(statements) WITH ORDINALITY AS s(t, n),
        LATERAL dblink('gaother', format('SELECT try(%L)', t)) AS d(r text) ORDER BY n$$;

-- ---- create_view first, uncommitted ---------------------------------------
CREATE FUNCTION gaopf(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 100 + $2';
CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = gaopf);
CREATE FUNCTION gacallee(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 7';
CREATE FUNCTION gaatomic(int) RETURNS int IMMUTABLE LANGUAGE sql
BEGIN ATOMIC; SELECT gacallee($1); END;
CREATE SCHEMA gas;
CREATE FUNCTION gas.f(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 3';
-- an operator's function
BEGIN;
SELECT peek.create_view('gav_op', $$SELECT k, v ### k AS x FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT gasend($$CREATE OR REPLACE FUNCTION gaopf(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 1000 + $2'$$);
SELECT gawaiting() AS change_waits;
COMMIT;
SELECT gaanswer() AS operator_function;
SELECT 2 ### 1 AS body_kept;
-- a function a SQL-standard body calls
BEGIN;
SELECT peek.create_view('gav_atomic', $$SELECT k, gaatomic(v) AS a FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT gasend($$CREATE OR REPLACE FUNCTION gacallee(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 70'$$);
SELECT gawaiting() AS change_waits;
COMMIT;
SELECT gaanswer() AS called_function;
SELECT gaatomic(1) AS body_kept;
-- the schema of a function it calls
BEGIN;
SELECT peek.create_view('gav_schema', $$SELECT k, gas.f(v) AS f FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT gasend('ALTER SCHEMA gas RENAME TO gas_old');
SELECT gawaiting() AS rename_waits;
COMMIT;
SELECT gaanswer() AS schema_rename;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name LIKE 'gav%' AND state = 'ready'$$);
SELECT * FROM gav_op ORDER BY k;
SELECT * FROM gav_atomic ORDER BY k;
SELECT * FROM gav_schema ORDER BY k;

-- ---- the rename first, uncommitted: create_view waits, then fails ----------
SELECT peek.drop_view('gav_schema');
SELECT dblink_exec('gaother', 'BEGIN');
SELECT dblink_exec('gaother', 'ALTER SCHEMA gas RENAME TO gas_new');
SELECT gasend($$SELECT peek.create_view('gav_schema2', 'SELECT k, gas.f(v) AS f FROM peek.persist_peek(NULL::garow, ''gac'')')$$,
              'gaview');
SELECT gawaiting('gaview') AS create_waits;
SELECT dblink_exec('gaother', 'COMMIT');
SELECT gaanswer('gaview') AS create_after_rename;
ALTER SCHEMA gas_new RENAME TO gas;

-- ---- an enum's value ------------------------------------------------------
SELECT peek.create_view('gav_enum', $$SELECT k FROM peek.persist_peek(NULL::gaerow, 'gae') WHERE e = 'a'$$);
SELECT try($$ALTER TYPE gaenum RENAME VALUE 'a' TO 'z'$$) AS value_rename;
SELECT peek.write('gae', ARRAY[(3, 'a')]::gaerow[]);
SELECT wait_for($$SELECT count(*) = 2 FROM gav_enum$$);
SELECT state FROM peek.views WHERE name = 'gav_enum';
SELECT peek.drop_view('gav_enum');
SELECT try($$ALTER TYPE gaenum RENAME VALUE 'a' TO 'z'$$) AS value_rename_without_view;

-- ---- a collation it names ---------------------------------------------------
-- (before: renamed or moved, and the view failed at its next round:
-- "collation ... does not exist")
CREATE COLLATION gacoll (locale = 'C');
CREATE SCHEMA gacs;
SELECT peek.create_view('gav_coll', $$SELECT k, v::text COLLATE gacoll AS t FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT try('ALTER COLLATION gacoll RENAME TO gacoll2') AS collation_rename;
SELECT try('ALTER COLLATION gacoll SET SCHEMA gacs') AS collation_move;

-- ---- a member of an extension ----------------------------------------------
-- (before: ALTER EXTENSION ... SET SCHEMA went through, and the view failed
-- at its next round: "type "public.citext" does not exist")
CREATE EXTENSION citext;
SELECT peek.create_view('gav_ext', $$SELECT k, v::text::citext = '1'::citext AS one FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT try('ALTER EXTENSION citext SET SCHEMA gacs') AS extension_move;
SELECT peek.drop_view('gav_ext');
SELECT try('ALTER EXTENSION citext SET SCHEMA gacs') AS extension_move_without_view;
DROP EXTENSION citext;

-- ---- an attribute of an input's row type the query does not read ----------
-- (the kept text names the input's columns by position: persist_peek(k,
-- v, w); before, dropping v went through and the view failed at its next
-- round: "operator does not exist: text * integer")
CREATE TYPE gatrow AS (k int, v text, w int);
SELECT peek.create_collection('gat', 'gatrow');
SELECT peek.write('gat', ARRAY[(1, 'a', 10), (2, 'b', 20)]::gatrow[]);
SELECT peek.create_view('gav_attr', $$SELECT k, w * 2 AS w2 FROM peek.persist_peek(NULL::gatrow, 'gat')$$);
SELECT try('ALTER TYPE gatrow DROP ATTRIBUTE v') AS drop_attribute;
SELECT try('ALTER TYPE gatrow ADD ATTRIBUTE z text, DROP ATTRIBUTE v') AS add_and_drop;
SELECT try('ALTER TYPE gatrow ADD ATTRIBUTE z text') AS add_attribute;
SELECT peek.write('gat', ARRAY[(3, 'c', 30, 'z')]::gatrow[]);
SELECT wait_for($$SELECT count(*) = 3 FROM gav_attr$$);
SELECT state, failure FROM peek.views WHERE name = 'gav_attr';
SELECT * FROM gav_attr ORDER BY k;
SELECT peek.drop_view('gav_attr');
SELECT try('ALTER TYPE gatrow DROP ATTRIBUTE v') AS drop_attribute_without_view;
SELECT * FROM peek.persist_peek(NULL::gatrow, 'gat') ORDER BY k;

-- ---- roles that own nothing, next to an uncommitted create_view -----------
-- PostgreSQL refuses them (42501) at once; before, they waited for the
-- view's transaction (here: 55P03 after lock_timeout), and a rename was
-- told which view uses what it renames (2BP01).  (PostgreSQL's own
-- CREATE OR REPLACE FUNCTION and ALTER SCHEMA ... RENAME lock what they
-- change before they check its owner: those wait as they would for another
-- replacement of the function, or a CREATE TABLE in the schema.)
CREATE ROLE ga_intruder;
CREATE ROLE ga_owner;
GRANT CREATE ON SCHEMA public TO ga_owner, ga_intruder;
GRANT CREATE ON SCHEMA gacs TO ga_intruder;
CREATE TABLE gatable (k int);
CREATE FUNCTION gaown(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 - 1';
BEGIN;
SELECT peek.create_view('gav_locks', $$SELECT k, gaown(v) AS o, gas.f(v) AS f, v ### k AS x
                                       FROM peek.persist_peek(NULL::garow, 'gac')$$);
SELECT dblink_exec('gaother', 'SET ROLE ga_intruder');
SELECT dblink_exec('gaother', $$SET lock_timeout = '3s'$$);
SELECT dblink_exec('gaother', 'SET client_min_messages = error');
SELECT * FROM gatry(ARRAY[
    'ALTER FUNCTION gaown(int) VOLATILE',
    'ALTER TYPE garow RENAME TO garow2',
    'ALTER TYPE garow SET SCHEMA public',
    'ALTER TABLE gatable RENAME TO gatable2']);
COMMIT;
-- (renames: PostgreSQL locks what it renames before it checks its owner)
SELECT * FROM gatry(ARRAY[
    'ALTER FUNCTION gaown(int) RENAME TO gaown2',
    'ALTER OPERATOR ### (int, int) SET SCHEMA gacs',
    'ALTER COLLATION gacoll RENAME TO gacoll2',
    'ALTER SCHEMA gas RENAME TO gas2']);
SELECT dblink_exec('gaother', 'RESET ROLE');
SELECT dblink_exec('gaother', 'RESET lock_timeout');
SELECT dblink_exec('gaother', 'RESET client_min_messages');

-- ---- one overload replaced does not wait for another's replacement --------
CREATE FUNCTION gaover(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION gaover(text) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 2';
ALTER FUNCTION gaover(text) OWNER TO ga_owner;
SELECT dblink_exec('gaother', 'BEGIN');
SELECT dblink_exec('gaother', $$CREATE OR REPLACE FUNCTION gaover(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 10'$$);
SET ROLE ga_owner;
SET lock_timeout = '3s';
SELECT try($$CREATE OR REPLACE FUNCTION gaover(text) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 20'$$)
    AS other_overload;
RESET lock_timeout;
RESET ROLE;
SELECT dblink_exec('gaother', 'COMMIT');
SELECT gaover(1) AS int_version, gaover('x') AS text_version;

-- ---- in a SAVEPOINT: refused, rolled back, its locks gone -------------------
BEGIN;
SAVEPOINT s;
ALTER FUNCTION gaown(int) STRICT;
ROLLBACK TO s;
SELECT count(*) AS locks_left FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'object' AND mode = 'AccessExclusiveLock';
SELECT try('ALTER FUNCTION gaown(int) STRICT') AS in_exception_block;
COMMIT;

-- ---- REPEATABLE READ: a view committed after the snapshot is seen ---------
CREATE FUNCTION garr(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS views_before FROM peek.views;
SELECT * FROM dblink('gaother', format('SELECT try(%L)',
    $$SELECT peek.create_view('gav_rr', 'SELECT k, garr(v) AS r FROM peek.persist_peek(NULL::garow, ''gac'')')$$))
    AS t(other_creates text);
SELECT count(*) AS views_in_snapshot FROM peek.views;
SELECT try('ALTER FUNCTION garr(int) VOLATILE') AS change_after_snapshot;
COMMIT;

-- ---- a database without the extension: PostgreSQL's own locks only -------
SELECT dblink_disconnect('gaother'), dblink_disconnect('gaview');
CREATE DATABASE ga_plain;
SELECT gaconnect('gaplain', 'ga_plain');
SELECT dblink_exec('gaplain', $$CREATE FUNCTION f(int) RETURNS int LANGUAGE sql AS 'SELECT 1'$$);
SELECT dblink_exec('gaplain', 'CREATE SCHEMA s');
SELECT dblink_exec('gaplain', 'CREATE TYPE t AS (a int)');
SELECT dblink_exec('gaplain', 'BEGIN');
SELECT dblink_exec('gaplain', $$CREATE OR REPLACE FUNCTION f(int) RETURNS int LANGUAGE sql AS 'SELECT 2'$$);
SELECT dblink_exec('gaplain', 'ALTER FUNCTION f(int) STABLE');
SELECT dblink_exec('gaplain', 'ALTER SCHEMA s RENAME TO s2');
SELECT dblink_exec('gaplain', 'ALTER TYPE t RENAME TO t2');
SELECT * FROM dblink('gaplain', $$SELECT classid::regclass, mode FROM pg_locks WHERE pid = pg_backend_pid()
                                  AND locktype = 'object' AND classid <> 'pg_database'::regclass
                                  ORDER BY 1, 2$$)
    AS t(class regclass, mode text);
SELECT dblink_exec('gaplain', 'COMMIT');
SELECT dblink_disconnect('gaplain');
DROP DATABASE ga_plain;

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('gac'), peek.drop_collection('gae'), peek.drop_collection('gat');
DROP TABLE gapids, gatable;
DROP OPERATOR ### (int, int);
DROP FUNCTION gaconnect(text, text), gawaiting(text), gasend(text, text), gaanswer(text), gatry(text[]),
    gaopf(int, int), gaatomic(int), gacallee(int), gaown(int), gaover(int), gaover(text), garr(int);
DROP SCHEMA gas CASCADE;
DROP SCHEMA gacs;
DROP COLLATION gacoll;
DROP TYPE garow, gaerow, gaenum, gatrow;
REVOKE CREATE ON SCHEMA public FROM ga_owner, ga_intruder;
DROP ROLE ga_intruder, ga_owner;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
