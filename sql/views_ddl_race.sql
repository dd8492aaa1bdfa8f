-- peek.create_view and the DDL the views' guard refuses, in two sessions
-- at once (through dblink).  Before: neither saw the other's uncommitted
-- catalog rows, so a CREATE OR REPLACE FUNCTION, ALTER FUNCTION, RENAME,
-- DROP FUNCTION or column rename committed next to a create_view of a view
-- using it went through, and the view computed its rows with what was
-- refused, or named what was gone.  Now each waits for the other:
--  * create_view first: the change waits for it, then is refused (2BP01);
--  * the change first: create_view waits for it, then plans the query again
--    and refuses what no longer plans (0A000, 42883).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

CREATE FUNCTION rcconnect(name text) RETURNS text LANGUAGE sql AS $$
    SELECT dblink_connect(name,
        format('dbname=%s port=%s host=%s application_name=%s', current_database(),
               current_setting('port'),
               split_part(current_setting('unix_socket_directories'), ',', 1), name))$$;
CREATE TYPE rcrow AS (k int, v int);
CREATE FUNCTION rcf(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
CREATE FUNCTION rcg(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
CREATE FUNCTION rch(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 2';
SELECT peek.create_collection('rcc', 'rcrow');
SELECT peek.write('rcc', ARRAY[(1, 1), (2, 2)]::rcrow[]);
SELECT rcconnect('rcother'), rcconnect('rcview');
-- each session's pid, asked while it is idle
CREATE TABLE rcpids AS
SELECT 'rcother' AS session, p FROM dblink('rcother', 'SELECT pg_backend_pid()') AS t(p int)
UNION ALL
SELECT 'rcview', p FROM dblink('rcview', 'SELECT pg_backend_pid()') AS t(p int);
-- rcwaiting(session): whether the session waits for a lock, within 10 s
CREATE FUNCTION rcwaiting(session text) RETURNS boolean LANGUAGE sql AS $$
    SELECT wait_for(format('SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)',
                           (SELECT p FROM rcpids WHERE rcpids.session = rcwaiting.session)), 10)$$;
-- the other session's statement, sent without waiting for its answer
CREATE FUNCTION rcsend(session text, statement text) RETURNS int LANGUAGE sql AS $$
    SELECT dblink_send_query(session, format('SELECT try(%L)', statement))$$;
CREATE FUNCTION rcanswer(session text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(r, '; ') FROM dblink_get_result(session) AS t(r text)$$;

-- ---- create_view first, uncommitted ---------------------------------------
-- a new body of a function it calls
BEGIN;
SELECT peek.create_view('rcv1', $$SELECT k, rcf(v) AS f FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
SELECT rcsend('rcother', $$CREATE OR REPLACE FUNCTION rcf(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 1000'$$);
SELECT rcwaiting('rcother') AS change_waits;
COMMIT;
SELECT rcanswer('rcother') AS change;
SELECT rcanswer('rcother') AS nothing_more;
SELECT rcf(3) AS body_kept;
-- a rename of a function, a DROP of another and a rename of the row
-- type's column, each waiting for the view's transaction
BEGIN;
SELECT peek.create_view('rcv2', $$SELECT k, rcg(v) + rch(v) AS gh FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
SELECT rcsend('rcother', $$ALTER FUNCTION rcg(int) RENAME TO rcg_old$$);
SELECT rcwaiting('rcother') AS rename_waits;
SELECT rcsend('rcview', $$DROP FUNCTION rch(int)$$);
SELECT rcwaiting('rcview') AS drop_waits;
COMMIT;
SELECT rcanswer('rcother') AS rename, rcanswer('rcother') AS nothing_more;
SELECT rcanswer('rcview') AS drop, rcanswer('rcview') AS nothing_more;
BEGIN;
SELECT peek.create_view('rcv3', $$SELECT k, v FROM peek.persist_peek(NULL::rcrow, 'rcc') WHERE v > 1$$);
SELECT rcsend('rcother', $$ALTER TYPE rcrow RENAME ATTRIBUTE v TO w$$);
SELECT rcwaiting('rcother') AS column_rename_waits;
COMMIT;
SELECT rcanswer('rcother') AS column_rename, rcanswer('rcother') AS nothing_more;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name LIKE 'rcv%' AND state = 'ready'$$);
SELECT * FROM rcv1 ORDER BY k;
SELECT * FROM rcv2 ORDER BY k;
SELECT * FROM rcv3 ORDER BY k;

-- ---- the change first, uncommitted ----------------------------------------
-- rcchange_first(change, view, query, ending): the change made in a
-- transaction of rcother, create_view sent by rcview, then the transaction
-- ended: whether create_view waited for it, and what it answered
CREATE FUNCTION rcchange_first(change text, view text, query text, ending text DEFAULT 'COMMIT',
                               OUT create_waits boolean, OUT answer text) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dblink_exec('rcother', 'BEGIN');
    PERFORM dblink_exec('rcother', change);
    PERFORM rcsend('rcview', format('SELECT peek.create_view(%L, %L)', view, query));
    create_waits := rcwaiting('rcview');
    PERFORM dblink_exec('rcother', ending);
    answer := rcanswer('rcview');
    IF rcanswer('rcview') IS NOT NULL THEN
        RAISE EXCEPTION 'more than one answer';
    END IF;
END $$;
CREATE FUNCTION rck(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 - 1';
CREATE FUNCTION rcm(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 3';
-- made volatile: refused
SELECT * FROM rcchange_first('ALTER FUNCTION rck(int) VOLATILE',
    'rcv4', $$SELECT k, rck(v) AS k1 FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
ALTER FUNCTION rck(int) IMMUTABLE;
-- renamed: no such function
SELECT * FROM rcchange_first('ALTER FUNCTION rck(int) RENAME TO rck_old',
    'rcv5', $$SELECT k, rck(v) AS k1 FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
-- dropped: no such function
SELECT * FROM rcchange_first('DROP FUNCTION rck_old(int)',
    'rcv6', $$SELECT k, rck_old(v) AS k1 FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
-- a volatile body rolled back: made, with the body that stayed
SELECT * FROM rcchange_first($$CREATE OR REPLACE FUNCTION rcm(int) RETURNS int VOLATILE LANGUAGE sql AS 'SELECT $1 * 5'$$,
    'rcv7', $$SELECT k, rcm(v) AS m FROM peek.persist_peek(NULL::rcrow, 'rcc')$$, 'ROLLBACK');
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'rcv7'$$);
SELECT * FROM rcv7 ORDER BY k;
SELECT name FROM peek.views ORDER BY name;

-- ---- a function ten SQL-standard calls deep --------------------------------
-- (create_view locked what its view uses eight calls deep only: neither it
-- nor a new body of rcdeep0 waited for the other, and the new body went
-- through over the view, whose rows it changed)
CREATE FUNCTION rcdeep0(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 2;
SELECT format('CREATE FUNCTION rcdeep%s(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN rcdeep%s($1)', i, i - 1)
  FROM generate_series(1, 10) AS i \gexec
-- the change first, rolled back: create_view waits for it
SELECT * FROM rcchange_first('CREATE OR REPLACE FUNCTION rcdeep0(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 5',
    'rcv8', $$SELECT k, rcdeep10(v) AS d FROM peek.persist_peek(NULL::rcrow, 'rcc')$$, 'ROLLBACK');
SELECT peek.drop_view('rcv8');
-- create_view first: the change waits for it, then is refused
BEGIN;
SELECT peek.create_view('rcv9', $$SELECT k, rcdeep10(v) AS d FROM peek.persist_peek(NULL::rcrow, 'rcc')$$);
SELECT rcsend('rcother', 'CREATE OR REPLACE FUNCTION rcdeep0(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 3');
SELECT rcwaiting('rcother') AS change_waits;
COMMIT;
SELECT rcanswer('rcother') AS change, rcanswer('rcother') AS nothing_more;
SELECT rcdeep10(3) AS body_kept;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'rcv9'$$);
SELECT * FROM rcv9 ORDER BY k;
SELECT peek.drop_view('rcv9');
SELECT format('DROP FUNCTION rcdeep%s(int)', i) FROM generate_series(10, 0, -1) AS i \gexec

SELECT dblink_disconnect('rcother'), dblink_disconnect('rcview');
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('rcc');
DROP TABLE rcpids;
DROP FUNCTION rcconnect(text), rcwaiting(text), rcsend(text, text), rcanswer(text),
    rcchange_first(text, text, text, text),
    rcf(int), rcg(int), rcm(int);
DROP TYPE rcrow;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
