-- peek.drop_view (and ALTER VIEW ... OWNER TO) while a reader of its
-- PostgreSQL view waits for the view's next round (through dblink).
-- Before: the drop locked the view's catalog row, then waited for the
-- reader's lock on the PostgreSQL view;
-- the round the reader waited for needed that row (it retried, forever),
-- so neither the reader nor the drop ever ended; so too when the drop,
-- queued for the PostgreSQL view's lock, queued the round behind it (the
-- round opens the PostgreSQL view in a runtime started again).  Now the
-- drop takes the PostgreSQL view's lock first, and only tries it while a
-- peek of the view waits (so does the ALTER): the round runs, the reader
-- gets its answer, then the drop goes through.  So too REASSIGN OWNED,
-- DROP OWNED, DROP VIEW and DROP SCHEMA ... CASCADE, LOCK TABLE, CREATE OR
-- REPLACE VIEW, CREATE and DROP RULE and a DROP ... CASCADE of what the
-- view uses.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'running') FROM peek.runtimes$$) AS running;

CREATE FUNCTION drconnect(name text) RETURNS text LANGUAGE sql AS $$
    SELECT dblink_connect(name,
        format('dbname=%s port=%s host=%s application_name=%s', current_database(),
               current_setting('port'),
               split_part(current_setting('unix_socket_directories'), ',', 1), name))$$;
SELECT drconnect('drreader'), drconnect('drdropper');
CREATE TABLE drpids AS
SELECT 'drreader' AS session, p FROM dblink('drreader', 'SELECT pg_backend_pid()') AS t(p int)
UNION ALL
SELECT 'drdropper', p FROM dblink('drdropper', 'SELECT pg_backend_pid()') AS t(p int);
CREATE FUNCTION drpid(session text) RETURNS int LANGUAGE sql AS
    $$SELECT p FROM drpids WHERE drpids.session = drpid.session$$;
-- the session's answer within 20 s, else 'stuck' (and its statement cancelled)
-- (the readers' counts, the droppers' try)
CREATE FUNCTION dranswer(session text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    IF NOT wait_for(format('SELECT dblink_is_busy(%L) = 0', session), 20) THEN
        PERFORM dblink_cancel_query(session);
        PERFORM * FROM dblink_get_result(session, false) AS t(r text);
        PERFORM * FROM dblink_get_result(session, false) AS t(r text);
        RETURN 'stuck';
    END IF;
    SELECT string_agg(t.r, '; ') INTO r FROM dblink_get_result(session) AS t(r text);
    PERFORM * FROM dblink_get_result(session) AS t(r text);
    RETURN r;
END $$;

-- whether the drop waits (for the reader's lock, or for the view's peeks),
-- within 30 s (pg_stat_activity read anew each time)
CREATE FUNCTION drop_waits() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 600 LOOP
        PERFORM pg_stat_clear_snapshot();
        IF EXISTS (SELECT 1 FROM pg_stat_activity
                    WHERE pid = drpid('drdropper') AND state = 'active'
                      AND wait_event_type IN ('Lock', 'Extension')) THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN false;
END $$;

CREATE TYPE drrow AS (k int, v int);
SELECT peek.create_collection('drc', 'drrow');

-- ---- a view hydrating: its reader waits for the first complete time ----
SELECT peek.create_view('drv', $$SELECT k, sum(v) AS s FROM peek.persist_peek(NULL::drrow, 'drc') GROUP BY k$$);
SELECT dblink_send_query('drreader', 'SELECT count(*) FROM drv');
SELECT wait_for(format('SELECT EXISTS (SELECT 1 FROM peek.active_peeks WHERE object = %L AND pid = %s)',
                       'drv', drpid('drreader'))) AS reader_waits;
SELECT dblink_send_query('drdropper', 'SELECT try(''SELECT peek.drop_view(''''drv'''')'')');
SELECT drop_waits();
SELECT peek.write('drc', ARRAY[(1, 10)]::drrow[]);
SELECT dranswer('drreader') AS reader, dranswer('drdropper') AS dropper;
SELECT count(*) AS views_left FROM peek.views WHERE name = 'drv';
SELECT to_regclass('drv') AS pg_view_left;

-- ---- a ready view: a transaction that read it peeks a later time ----
-- drbegin(view, at, ddl): the reader's transaction reads the view (its
-- count shown) and peeks it at a later time, waiting; then the drop (or
-- the ddl given) waits too
CREATE FUNCTION drbegin(view text, at bigint, ddl text DEFAULT NULL) RETURNS TABLE (n bigint, reader_waits boolean, drop_waits boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dblink_exec('drreader', 'BEGIN');
    SELECT t.n INTO n FROM dblink('drreader', format('SELECT count(*) FROM %I', view)) AS t(n bigint);
    PERFORM dblink_send_query('drreader',
        format('SELECT count(*) FROM peek.persist_peek(NULL::%I, %L, as_of => %s)', view, view, at));
    reader_waits := wait_for(format('SELECT EXISTS (SELECT 1 FROM peek.active_peeks WHERE object = %L AND pid = %s)',
                                    view, drpid('drreader')));
    PERFORM dblink_send_query('drdropper',
        format('SELECT try(%L)', coalesce(ddl, format('SELECT peek.drop_view(%L)', view))));
    drop_waits := drop_waits();
    RETURN NEXT;
END $$;
-- drend(view): the reader's answer, then its commit; the drop's; views left
CREATE FUNCTION drend(view text) RETURNS TABLE (reader text, dropper text, views_left bigint)
LANGUAGE plpgsql AS $$
BEGIN
    reader := dranswer('drreader');
    PERFORM dblink_exec('drreader', 'COMMIT');
    dropper := dranswer('drdropper');
    views_left := (SELECT count(*) FROM peek.views WHERE name = view);
    RETURN NEXT;
END $$;
SELECT peek.create_view('drv2', $$SELECT k, v FROM peek.persist_peek(NULL::drrow, 'drc') WHERE v > 0$$);
SELECT wait_for('SELECT upper >= 1 FROM peek.views WHERE name = ''drv2''') AS ready;
SELECT * FROM drbegin('drv2', 2);
SELECT peek.write('drc', ARRAY[(2, 20)]::drrow[]);
SELECT peek.write('drc', ARRAY[(3, 30)]::drrow[]);
SELECT * FROM drend('drv2');

-- ---- the same after the maintenance runtime started again ----
-- (its first round of the view opens the PostgreSQL view, to look up its
-- row type: a drop queued for that lock held the round behind it)
SELECT peek.create_view('drv3', $$SELECT k, v FROM peek.persist_peek(NULL::drrow, 'drc') WHERE v > 10$$);
SELECT wait_for('SELECT upper >= 3 FROM peek.views WHERE name = ''drv3''') AS ready;
SELECT * FROM drbegin('drv3', 4);
SELECT restart_maintenance();
SELECT peek.write('drc', ARRAY[(4, 40)]::drrow[]);
SELECT peek.write('drc', ARRAY[(5, 50)]::drrow[]);
SELECT * FROM drend('drv3');

-- ---- ALTER VIEW ... OWNER TO instead of the drop, after a restart ----
-- (PostgreSQL's ALTER queued for the PostgreSQL view the same way)
CREATE ROLE drowner;
GRANT pg_read_all_data TO drowner;
SELECT peek.create_view('drv4', $$SELECT k, v FROM peek.persist_peek(NULL::drrow, 'drc') WHERE v > 20$$);
SELECT wait_for('SELECT upper >= 5 FROM peek.views WHERE name = ''drv4''') AS ready;
SELECT * FROM drbegin('drv4', 6, 'ALTER VIEW drv4 OWNER TO drowner');
SELECT restart_maintenance();
SELECT peek.write('drc', ARRAY[(6, 60)]::drrow[]);
SELECT peek.write('drc', ARRAY[(7, 70)]::drrow[]);
SELECT * FROM drend('drv4');
SELECT owner FROM peek.views WHERE name = 'drv4';
SELECT peek.drop_view('drv4');

-- ---- PostgreSQL's other commands that take the PostgreSQL view ----
-- (REASSIGN OWNED and DROP OWNED of its owner, DROP VIEW ... CASCADE,
-- DROP SCHEMA ... CASCADE, LOCK TABLE, CREATE OR REPLACE VIEW, CREATE and
-- DROP RULE, DROP ... CASCADE of what its query uses), each after a
-- restart: each queued
-- the round behind it as the drop did, and the reader never had its answer
-- drview(view, owner): a view given to owner
-- drcase(view, at, ddl): the reader waits at time at, the ddl waits, the
-- maintenance runtime starts again; two writes follow, then drend
CREATE FUNCTION drview(view text, owner text DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM peek.create_view(view, format('SELECT k, v FROM peek.persist_peek(NULL::drrow, %L) WHERE v > 0', 'drc'));
    IF owner IS NOT NULL THEN
        EXECUTE format('ALTER VIEW %I OWNER TO %I', view, owner);
    END IF;
END $$;
CREATE FUNCTION drcase(view text, at bigint, ddl text) RETURNS TABLE (ready boolean, n bigint, reader_waits boolean, drop_waits boolean, restarted boolean)
LANGUAGE plpgsql AS $$
BEGIN
    ready := wait_for(format('SELECT upper >= %s FROM peek.views WHERE name = %L', at - 1, view));
    SELECT * INTO n, reader_waits, drop_waits FROM drbegin(view, at, ddl);
    restarted := restart_maintenance();
    RETURN NEXT;
END $$;
SELECT drview('drv5', 'drowner');
SELECT * FROM drcase('drv5', 8, 'REASSIGN OWNED BY drowner TO CURRENT_USER');
SELECT peek.write('drc', ARRAY[(8, 80)]::drrow[]);
SELECT peek.write('drc', ARRAY[(9, 90)]::drrow[]);
SELECT * FROM drend('drv5');
SELECT owner::text = current_user AS given_back FROM peek.views WHERE name = 'drv5';
SELECT peek.drop_view('drv5');
SELECT drview('drv6');
SELECT * FROM drcase('drv6', 10, 'LOCK TABLE drv6');
SELECT peek.write('drc', ARRAY[(10, 100)]::drrow[]);
SELECT peek.write('drc', ARRAY[(11, 110)]::drrow[]);
SELECT * FROM drend('drv6');
SELECT peek.drop_view('drv6');
SELECT drview('drv7');
SELECT * FROM drcase('drv7', 12, 'DROP VIEW drv7 CASCADE');
SELECT peek.write('drc', ARRAY[(12, 120)]::drrow[]);
SELECT peek.write('drc', ARRAY[(13, 130)]::drrow[]);
SELECT * FROM drend('drv7');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'drv7'$$) AS failed, to_regclass('drv7') AS pg_view_left;
SELECT peek.drop_view('drv7');
SELECT drview('drv8', 'drowner');
SELECT * FROM drcase('drv8', 14, 'DROP OWNED BY drowner CASCADE');
SELECT peek.write('drc', ARRAY[(14, 140)]::drrow[]);
SELECT peek.write('drc', ARRAY[(15, 150)]::drrow[]);
SELECT * FROM drend('drv8');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'drv8'$$) AS failed, to_regclass('drv8') AS pg_view_left;
SELECT peek.drop_view('drv8');
CREATE SCHEMA drs;
SET search_path = drs, public;
SELECT dblink_exec('drreader', 'SET search_path = drs, public');
SELECT drview('drv9');
SELECT * FROM drcase('drv9', 16, 'DROP SCHEMA drs CASCADE');
SELECT peek.write('drc', ARRAY[(16, 160)]::drrow[]);
SELECT peek.write('drc', ARRAY[(17, 170)]::drrow[]);
SELECT * FROM drend('drv9');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'drv9'$$) AS failed, to_regclass('drv9') AS pg_view_left;
SELECT peek.drop_view('drv9');
RESET search_path;
-- (CREATE OR REPLACE VIEW with its own body, as pg_restore replays it)
SELECT drview('drv11');
SELECT * FROM drcase('drv11', 18, 'CREATE OR REPLACE VIEW drv11 AS SELECT * FROM peek.persist_peek(NULL::drv11, ''drv11'')');
SELECT peek.write('drc', ARRAY[(20, 200)]::drrow[]);
SELECT peek.write('drc', ARRAY[(21, 210)]::drrow[]);
SELECT * FROM drend('drv11');
SELECT peek.drop_view('drv11');
-- (CREATE RULE and DROP RULE)
SELECT drview('drv12');
SELECT * FROM drcase('drv12', 20, 'CREATE RULE drv12_ins AS ON INSERT TO drv12 DO INSTEAD NOTHING');
SELECT peek.write('drc', ARRAY[(24, 240)]::drrow[]);
SELECT peek.write('drc', ARRAY[(25, 250)]::drrow[]);
SELECT * FROM drend('drv12');
SELECT * FROM drcase('drv12', 22, 'DROP RULE drv12_ins ON drv12');
SELECT peek.write('drc', ARRAY[(26, 260)]::drrow[]);
SELECT peek.write('drc', ARRAY[(27, 270)]::drrow[]);
SELECT * FROM drend('drv12');
SELECT peek.drop_view('drv12');
-- (and a DROP ... CASCADE of a function its query calls)
CREATE FUNCTION drtwice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
SELECT peek.create_view('drv10', $$SELECT k, v FROM peek.persist_peek(NULL::drrow, 'drc') WHERE drtwice(v) > 0$$);
SELECT * FROM drcase('drv10', 24, 'DROP FUNCTION drtwice(int) CASCADE');
SELECT peek.write('drc', ARRAY[(22, 220)]::drrow[]);
SELECT peek.write('drc', ARRAY[(23, 230)]::drrow[]);
SELECT * FROM drend('drv10');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'drv10'$$) AS failed, to_regclass('drv10') AS pg_view_left;
SELECT peek.drop_view('drv10');
-- ---- the drop queued first, the reader's peek waiting after it ----
-- (the drop found no peek waiting and queued for the PostgreSQL view
-- behind the reader's lock; the reader then peeked a later time, and the
-- runtime, started again, queued its round's lock behind the drop: none of
-- the three ever ended.  Now the drop leaves the queue after a while, sees
-- the peek waiting, and only tries the lock until the round has run.)
SELECT drview('drv13');
SELECT wait_for('SELECT upper >= 25 FROM peek.views WHERE name = ''drv13''') AS ready;
SELECT dblink_exec('drreader', 'BEGIN');
SELECT n FROM dblink('drreader', 'SELECT count(*) FROM drv13') AS t(n bigint);
SELECT dblink_send_query('drdropper', 'SELECT try(''SELECT peek.drop_view(''''drv13'''')'')');
SELECT drop_waits();
SELECT restart_maintenance();
SELECT dblink_send_query('drreader', 'SELECT count(*) FROM peek.persist_peek(NULL::drv13, ''drv13'', as_of => 26)');
SELECT wait_for(format('SELECT EXISTS (SELECT 1 FROM peek.active_peeks WHERE object = %L AND pid = %s)',
                       'drv13', drpid('drreader'))) AS reader_waits;
SELECT peek.write('drc', ARRAY[(28, 280)]::drrow[]);
SELECT peek.write('drc', ARRAY[(29, 290)]::drrow[]);
SELECT * FROM drend('drv13');
-- ---- the user's lock_timeout bounds the drop's wait, queued or not ----
SELECT drview('drv14');
SELECT wait_for('SELECT upper >= 27 FROM peek.views WHERE name = ''drv14''') AS ready;
SELECT dblink_exec('drreader', 'BEGIN');
SELECT n FROM dblink('drreader', 'SELECT count(*) FROM drv14') AS t(n bigint);
SET lock_timeout = '200ms';
-- (no peek waits: queued behind the reader)
SELECT try('SELECT peek.drop_view(''drv14'')');
SELECT dblink_send_query('drreader', 'SELECT count(*) FROM peek.persist_peek(NULL::drv14, ''drv14'', as_of => 28)');
SELECT wait_for(format('SELECT EXISTS (SELECT 1 FROM peek.active_peeks WHERE object = %L AND pid = %s)',
                       'drv14', drpid('drreader'))) AS reader_waits;
-- (the reader's peek waits: only tried)
SELECT try('SELECT peek.drop_view(''drv14'')');
RESET lock_timeout;
SELECT peek.write('drc', ARRAY[(30, 300)]::drrow[]);
SELECT peek.write('drc', ARRAY[(31, 310)]::drrow[]);
SELECT dranswer('drreader') AS reader, dblink_exec('drreader', 'COMMIT');
SELECT peek.drop_view('drv14');
-- ---- a DROP VIEW ... CASCADE that reaches a view over the view ----
-- (the drop locked the view it names first, not the one reading it, whose
-- reader then hung with it as above)
SELECT drview('drv15');
SELECT peek.create_view('drv16', $$SELECT k, v FROM peek.persist_peek(NULL::drv15, 'drv15') WHERE v > 0$$);
SELECT * FROM drcase('drv16', 30, 'DROP VIEW drv15 CASCADE');
SELECT peek.write('drc', ARRAY[(32, 320)]::drrow[]);
SELECT peek.write('drc', ARRAY[(33, 330)]::drrow[]);
SELECT * FROM drend('drv16');
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name IN ('drv15', 'drv16') AND state = 'failed'$$) AS failed,
       to_regclass('drv15') AS pg_view_left, to_regclass('drv16') AS reader_pg_view_left;
SELECT peek.drop_view('drv16');
SELECT peek.drop_view('drv15');
-- ---- the same nine views deep (drv24 over drv23 ... over drv15) ----
-- (the drop locked the views reading the view eight deep only: the ninth's
-- reader hung with it as above)
SELECT drview('drv15');
SELECT peek.create_view('drv' || i, format('SELECT k, v FROM peek.persist_peek(NULL::%I, %L) WHERE v > 0',
                                           'drv' || (i - 1), 'drv' || (i - 1)))
  FROM generate_series(16, 24) AS i;
SELECT * FROM drcase('drv24', 31, 'DROP VIEW drv15 CASCADE');
SELECT peek.write('drc', ARRAY[(34, 340)]::drrow[]);
SELECT peek.write('drc', ARRAY[(35, 350)]::drrow[]);
SELECT * FROM drend('drv24');
SELECT wait_for($$SELECT count(*) = 10 FROM peek.views WHERE name ~ '^drv(1[5-9]|2[0-4])$' AND state = 'failed'$$) AS failed,
       (SELECT count(*) FROM pg_class WHERE relname ~ '^drv(1[5-9]|2[0-4])$') AS pg_views_left;
DO $$BEGIN FOR i IN REVERSE 24 .. 15 LOOP PERFORM peek.drop_view('drv' || i); END LOOP; END $$;
-- ---- a function ten calls away (SQL-standard bodies) ----
-- (the views using a function were looked for nine calls deep only: a new
-- body of drcall0 went through, the view's rows computed by two bodies;
-- a DROP ... CASCADE of it did not lock the view first, whose reader then
-- hung with it as above)
CREATE FUNCTION drcall0(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 2;
SELECT format('CREATE FUNCTION drcall%s(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN drcall%s($1)', i, i - 1)
  FROM generate_series(1, 10) AS i \gexec
SELECT peek.create_view('drv25', $$SELECT k, v FROM peek.persist_peek(NULL::drrow, 'drc') WHERE drcall10(v) > 0$$);
SELECT try('CREATE OR REPLACE FUNCTION drcall0(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 3');
SELECT * FROM drcase('drv25', 33, 'DROP FUNCTION drcall0(int) CASCADE');
SELECT peek.write('drc', ARRAY[(36, 360)]::drrow[]);
SELECT peek.write('drc', ARRAY[(37, 370)]::drrow[]);
SELECT * FROM drend('drv25');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'drv25'$$) AS failed,
       to_regclass('drv25') AS pg_view_left, (SELECT count(*) FROM pg_proc WHERE proname ~ '^drcall') AS functions_left;
SELECT peek.drop_view('drv25');
-- ---- a view made over the view while a DROP ... CASCADE waits ----
-- (the drop locked the views reading the view as they were when it began:
-- drv30, made meanwhile, was not locked first; the drop queued for it
-- behind its reader, whose round after a restart waited for drv29, which
-- the drop held.  Now the drop, having drv29, looks again and locks drv30
-- before it.)
SELECT drconnect('drreader2');
INSERT INTO drpids SELECT 'drreader2', p FROM dblink('drreader2', 'SELECT pg_backend_pid()') AS t(p int);
SELECT drview('drv28');
SELECT peek.create_view('drv29', $$SELECT k, v FROM peek.persist_peek(NULL::drv28, 'drv28') WHERE v > 0$$);
SELECT wait_for('SELECT upper >= 35 FROM peek.views WHERE name = ''drv29''') AS ready;
SELECT * FROM drbegin('drv29', 35, 'DROP VIEW drv28 CASCADE');
SELECT peek.create_view('drv30', $$SELECT k, v FROM peek.persist_peek(NULL::drv29, 'drv29') WHERE v > 1$$);
SELECT wait_for('SELECT upper >= 35 FROM peek.views WHERE name = ''drv30''') AS ready;
SELECT dblink_exec('drreader2', 'BEGIN');
SELECT n FROM dblink('drreader2', 'SELECT count(*) FROM drv30') AS t(n bigint);
SELECT dblink_send_query('drreader2', 'SELECT count(*)::text FROM peek.persist_peek(NULL::drv30, ''drv30'', as_of => 37)');
SELECT peek.write('drc', ARRAY[(38, 380)]::drrow[]);
SELECT peek.write('drc', ARRAY[(39, 390)]::drrow[]);
SELECT dranswer('drreader') AS reader, dblink_exec('drreader', 'COMMIT');
SELECT drop_waits();
SELECT restart_maintenance();
SELECT peek.write('drc', ARRAY[(40, 400)]::drrow[]);
SELECT dranswer('drreader2') AS reader2, dblink_exec('drreader2', 'COMMIT');
SELECT dranswer('drdropper') AS dropper;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name IN ('drv28', 'drv29', 'drv30') AND state = 'failed'$$) AS failed,
       (SELECT count(*) FROM pg_class WHERE relname IN ('drv28', 'drv29', 'drv30')) AS pg_views_left;
DO $$BEGIN PERFORM peek.drop_view('drv30'); PERFORM peek.drop_view('drv29'); PERFORM peek.drop_view('drv28'); END $$;
SELECT dblink_disconnect('drreader2');
DROP ROLE drowner;
-- ---- a create_view of a name whose view is being dropped ----
-- (the drop's commit is visible before its invalidations are sent: a
-- creator that did not wait for the drop could find the view's row gone
-- and its PostgreSQL view still in its caches, and fail with 42P07; the
-- name is the drop's until it ends, and the creator waits, then creates)
SELECT drview('drv15');
SELECT dblink_exec('drdropper', 'BEGIN');
SELECT * FROM dblink('drdropper', 'SELECT peek.drop_view(''drv15'')::text') AS t(r text);
SELECT dblink_send_query('drreader', format('SELECT try(%L)',
    format('SELECT peek.create_view(%L, %L)', 'drv15', 'SELECT k, v FROM peek.persist_peek(NULL::drrow, ''drc'') WHERE v > 1')));
SELECT wait_for(format($$SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted AND locktype = 'object')$$,
                       drpid('drreader'))) AS create_waits_for_the_name;
SELECT dblink_exec('drdropper', 'COMMIT');
SELECT dranswer('drreader') AS created;
SELECT query FROM peek.views WHERE name = 'drv15';
SELECT peek.drop_view('drv15');

-- ---- a drop_collection while a create_view over it is uncommitted ----
-- (the drop waited for the view's lock on the collection's row, then
-- looked for the views reading it in the snapshot its statement began
-- with: it dropped the collection, and the new view failed)
SELECT peek.create_collection('drc2', 'drrow');
SELECT peek.write('drc2', ARRAY[(1, 10)]::drrow[]);
SELECT dblink_exec('drreader', 'BEGIN');
SELECT * FROM dblink('drreader', $$SELECT peek.create_view('drv26', 'SELECT k, v FROM peek.persist_peek(NULL::drrow, ''drc2'')')::text$$) AS t(r text);
SELECT dblink_send_query('drdropper', 'SELECT try(''SELECT peek.drop_collection(''''drc2'''')'')');
SELECT drop_waits();
SELECT dblink_exec('drreader', 'COMMIT');
SELECT dranswer('drdropper') AS dropper;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'drv26'$$, 10) AS ready,
       (SELECT count(*) FROM peek.collections WHERE name = 'drc2') AS collection_left;
-- (so too a view and the view over it dropped in one statement: the
-- second drop saw the view the first had dropped)
SELECT peek.create_view('drv27', $$SELECT k, v FROM peek.persist_peek(NULL::drv26, 'drv26')$$);
SELECT peek.drop_view(name) FROM (VALUES ('drv27'), ('drv26')) AS v(name);
SELECT peek.drop_collection('drc2');
SELECT dblink_disconnect('drreader'), dblink_disconnect('drdropper');
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE drrow;
DROP TABLE drpids;
DROP FUNCTION drconnect(text), drpid(text), dranswer(text), drop_waits(), drbegin(text, bigint, text),
    drend(text), drview(text, text), drcase(text, bigint, text);
DROP EXTENSION dblink;
