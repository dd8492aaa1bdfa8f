-- Maintained views attacked by concurrent creators, by a read that waits
-- for a view failing in its first round, and by operators and functions
-- of another role shadowing the view's in search_path.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

CREATE TYPE ritem AS (k int, v int);
SELECT peek.create_collection('ritems', 'ritem');
SELECT peek.write('ritems', ARRAY[(1, 10), (2, 0)]::ritem[]);

-- Two sessions create one name at once: the later waits for the earlier
-- and is told the name is taken (42710), for a view (before: 23505 on
-- pg_type's unique index) as for a collection (before: 23505 on
-- peek.objects' unique index).
CREATE FUNCTION connect_to(name text) RETURNS text LANGUAGE sql AS $$
    SELECT dblink_connect(name,
        format('dbname=%s port=%s host=%s application_name=%s', current_database(),
               current_setting('port'),
               split_part(current_setting('unix_socket_directories'), ',', 1), name))$$;
SELECT connect_to('rfirst'), connect_to('rsecond'), connect_to('rthird');
SELECT dblink_exec('rfirst', 'BEGIN');
SELECT * FROM dblink('rfirst', $q$SELECT peek.create_view('rview',
    $$SELECT k FROM peek.persist_peek(NULL::ritem, 'ritems')$$)::text$q$) AS t(r text);
SELECT * FROM dblink('rfirst', $q$SELECT peek.create_collection('rcoll', 'ritem')::text$q$) AS t(r text);
SELECT dblink_send_query('rsecond', $q$SELECT try($$SELECT peek.create_view('rview',
    $s$SELECT v FROM peek.persist_peek(NULL::ritem, 'ritems')$s$)$$)$q$);
SELECT dblink_send_query('rthird', $q$SELECT try($$SELECT peek.create_collection('rcoll', 'ritem')$$)$q$);
SELECT wait_for($$SELECT count(*) = 2 FROM pg_stat_activity
                   WHERE application_name IN ('rsecond', 'rthird') AND wait_event_type = 'Lock'$$);
SELECT dblink_exec('rfirst', 'COMMIT');
SELECT * FROM dblink_get_result('rsecond') AS t(r text);
SELECT * FROM dblink_get_result('rthird') AS t(r text);
SELECT dblink_disconnect('rfirst'), dblink_disconnect('rsecond'), dblink_disconnect('rthird');
SELECT name, query FROM peek.views WHERE name = 'rview';
SELECT peek.drop_view('rview'), peek.drop_collection('rcoll');

-- A read that waits for a view's first round, which fails, says why
-- (55000 and the reason), not that an index ran out of memory (53200):
-- the reason is committed after the read's statement began.
CREATE FUNCTION slow_ten_by(d int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.3);
    RETURN 10 / d;
END $$;
SELECT peek.create_view('rfails', $$SELECT k, slow_ten_by(v) AS q FROM peek.persist_peek(NULL::ritem, 'ritems')$$);
SELECT try('SELECT * FROM rfails');
SELECT try('SELECT * FROM rfails');
SELECT name, state, failure FROM peek.views WHERE name = 'rfails';
SELECT peek.drop_view('rfails');

-- A function of the view that changes a setting for the session (not
-- LOCAL) changes it for its round only: the runtime's later rounds and
-- its other work run with its own settings (before, the change stayed in
-- the maintenance runtime: default_transaction_read_only made it fail
-- other objects and exit).
CREATE FUNCTION leak_setting(k int) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
DECLARE
    was text := coalesce(nullif(current_setting('va3.leak', true), ''), 'unset');
BEGIN
    PERFORM set_config('va3.leak', 'set by ' || k, false);
    RETURN was;
END $$;
SELECT peek.create_view('rleak', $$SELECT k, leak_setting(k) AS was
    FROM peek.persist_peek(NULL::ritem, 'ritems') WHERE k > 10$$);
SELECT peek.write('ritems', ARRAY[(11, 1)]::ritem[]);
SELECT wait_for($$SELECT count(*) = 1 FROM rleak$$);
SELECT peek.write('ritems', ARRAY[(12, 1)]::ritem[]);
SELECT wait_for($$SELECT count(*) = 2 FROM rleak$$);
SELECT * FROM rleak ORDER BY k;
SELECT peek.drop_view('rleak');

-- Another role's function and operators of the same names, in a schema
-- earlier in the owner's search_path (then the database's), do not replace
-- the view's: its kept query names its own function, and the runtime plans
-- it with search_path pinned; nothing of the other role runs.
CREATE ROLE rowner;
CREATE ROLE rintruder;
GRANT USAGE ON SCHEMA peek TO rowner;
CREATE SCHEMA rowner AUTHORIZATION rowner;
CREATE SCHEMA rintruder AUTHORIZATION rintruder;
GRANT USAGE ON SCHEMA rintruder TO PUBLIC;
CREATE TABLE rtrap (what text);
GRANT INSERT ON rtrap TO PUBLIC;
SET ROLE rowner;
SET search_path = rowner;
CREATE TYPE oitem AS (k int, v int);
SELECT peek.create_collection('oitems', 'oitem');
CREATE FUNCTION bump(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
SELECT peek.write('oitems', ARRAY[(1, 10)]::oitem[]);
SELECT peek.create_view('oview', $$SELECT k, bump(v) AS b, v + 1 AS p, abs(v) AS a
    FROM peek.persist_peek(NULL::oitem, 'oitems') WHERE k = 1 OR v = 20$$);
SELECT query FROM peek.views WHERE name = 'oview';
RESET ROLE;
SET ROLE rintruder;
CREATE FUNCTION rintruder.bump(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS
    $$BEGIN INSERT INTO public.rtrap VALUES ('bump'); RETURN -1; END$$;
CREATE FUNCTION rintruder.abs(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS
    $$BEGIN INSERT INTO public.rtrap VALUES ('abs'); RETURN -1; END$$;
CREATE FUNCTION rintruder.plus(int, int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS
    $$BEGIN INSERT INTO public.rtrap VALUES ('+'); RETURN -1; END$$;
CREATE OPERATOR rintruder.+ (LEFTARG = int, RIGHTARG = int, FUNCTION = rintruder.plus);
CREATE FUNCTION rintruder.eq(int, int) RETURNS bool IMMUTABLE LANGUAGE plpgsql AS
    $$BEGIN INSERT INTO public.rtrap VALUES ('='); RETURN true; END$$;
CREATE OPERATOR rintruder.= (LEFTARG = int, RIGHTARG = int, FUNCTION = rintruder.eq);
RESET ROLE;
ALTER ROLE rowner SET search_path = rintruder, rowner;
SET ROLE rowner;
SET search_path = rintruder, pg_catalog, rowner;
SELECT peek.write('oitems', ARRAY[(2, 20), (3, 30)]::oitem[], ARRAY[(1, 10)]::oitem[]);
RESET ROLE;
RESET search_path;
SELECT wait_for($$SELECT k = 2 FROM rowner.oview$$);
SELECT * FROM rowner.oview;
SELECT * FROM rtrap;
SELECT name, state, failure FROM peek.views WHERE name = 'oview';
SET ROLE rowner;
SELECT peek.drop_view('oview');
SELECT peek.drop_collection('oitems');
RESET ROLE;
ALTER ROLE rowner RESET search_path;
DROP SCHEMA rowner CASCADE;
DROP SCHEMA rintruder CASCADE;
DROP TABLE rtrap;
REVOKE USAGE ON SCHEMA peek FROM rowner;
DROP ROLE rowner, rintruder;

DROP FUNCTION slow_ten_by(int), connect_to(text), leak_setting(int);
SELECT peek.drop_collection('ritems');
DROP TYPE ritem;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
