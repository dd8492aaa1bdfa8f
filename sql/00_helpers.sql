-- Helpers shared by the regression tests (sql/*.sql run in name order);
-- sql/zz_cleanup.sql drops them.

-- try(sql): run a statement, show its SQLSTATE and message if it fails
CREATE FUNCTION try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- wait_for(cond): poll until a boolean query is true (runtimes are async)
CREATE FUNCTION wait_for(cond text, seconds int DEFAULT 30) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE ok boolean;
BEGIN
    FOR i IN 1 .. seconds * 20 LOOP
        EXECUTE cond INTO ok;
        IF ok THEN RETURN true; END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN false;
END $$;

-- shard_rows(coll): the number of live rows in a collection's shard table
CREATE FUNCTION shard_rows(coll text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s',
                   (SELECT shard FROM peek.collections WHERE name = coll)) INTO n;
    RETURN n;
END $$;

-- shard_updates(coll): the updates after a collection's since in its shard,
-- which every fold keeps (those at or before it a fold may take into the
-- base, which moves on by itself)
CREATE FUNCTION shard_updates(coll text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s WHERE time > %s',
                   (SELECT shard FROM peek.collections WHERE name = coll),
                   (SELECT since FROM peek.collections WHERE name = coll)) INTO n;
    RETURN n;
END $$;

-- view_mismatches(got, want, times): the times in the array at which two
-- queries (@T@ in them: the time) give different multisets of rows
-- (EXCEPT ALL both ways); the maintained views' tests compare a view with
-- its query over its inputs at each time.  view_mismatches(got, want, t0,
-- t1): at every time in [t0, t1].  TAP 370_view_oracle and
-- 375_view_crash_standby run this file too.
CREATE FUNCTION view_mismatches(got text, want text, times bigint[])
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    bad text := '';
    g text;
    w text;
    n bigint;
    t bigint;
BEGIN
    FOREACH t IN ARRAY times LOOP
        g := replace(got, '@T@', t::text);
        w := replace(want, '@T@', t::text);
        EXECUTE format('SELECT count(*) FROM (((%s) EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL (%s))) d',
                       g, w, w, g) INTO n;
        IF n > 0 THEN
            bad := bad || t || ' ';
        END IF;
    END LOOP;
    RETURN bad;
END $$;
CREATE FUNCTION view_mismatches(got text, want text, t0 bigint, t1 bigint)
RETURNS text LANGUAGE sql
RETURN view_mismatches(got, want, ARRAY(SELECT generate_series(t0, t1)));

-- wal_time(): the WAL written so far, as a source's time
CREATE FUNCTION wal_time() RETURNS bigint LANGUAGE sql AS
$$SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint$$;
-- views_past_wal(src, times): each view of the source src past the WAL
-- written so far, that time recorded in the table times (src text, t bigint)
CREATE FUNCTION views_past_wal(src text, times regclass) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE t bigint := wal_time();
BEGIN
    EXECUTE format('INSERT INTO %s VALUES ($1, $2)', times) USING src, t;
    RETURN wait_for(format($q$SELECT bool_and(upper > %s) FROM peek.views
                               WHERE inputs @> ARRAY[%L]$q$, t, src));
END $$;

-- views_bad_times_at(names, objects, times): each maintained view whose
-- name is LIKE names, with the times recorded in the table times (src
-- text, t bigint: views_past_wal's) at which it is not its kept query over
-- its inputs, each object of the regular expression objects that the
-- query names read as of that time
CREATE FUNCTION views_bad_times_at(names text, objects text, times regclass)
RETURNS TABLE (name text, bad_times text) LANGUAGE plpgsql AS $$
DECLARE at bigint[];
BEGIN
    EXECUTE format('SELECT array_agg(t ORDER BY t) FROM %s', times) INTO at;
    RETURN QUERY
    SELECT v.name::text, view_mismatches(
               format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v.name, v.name),
               regexp_replace(v.query, format('(''(%s)''::text)', objects), '\1, as_of => @T@', 'g'), at)
      FROM peek.views v WHERE v.name LIKE names ORDER BY v.name;
END $$;

-- restart_maintenance(): kill the maintenance runtime (or the solo one) and
-- wait until its replacement runs
CREATE FUNCTION restart_maintenance() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE killed int := (SELECT pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo'));
BEGIN
    PERFORM pg_terminate_backend(killed);
    RETURN wait_for(format($q$SELECT count(*) = 1 FROM peek.runtimes
                               WHERE role IN ('maintenance', 'solo') AND state = 'running'
                                 AND pid <> %s$q$, killed));
END $$;

-- views_bad_times(): each maintained view with the times at which it is
-- not its query over its inputs (view_mismatches at every time from 1 to
-- before its upper; its query's object names read as of that time)
CREATE FUNCTION views_bad_times() RETURNS TABLE (name text, bad_times text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    SELECT v.name::text, view_mismatches(
               format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v.name, v.name),
               regexp_replace(v.query, '(''\w+''::text)', '\1, as_of => @T@', 'g'), 1, v.upper - 1)
      FROM peek.views v ORDER BY v.name;
END $$;

-- test_ext_with_collection(coll, type, n): peek_test_ext (installed by
-- scripts/test from test/extensions) made again at version 1.0, for the
-- tests of other extensions' scripts, and a collection coll of rows of a
-- new type (k int, v int), written once with (1, 10) .. (n, 10 n)
CREATE FUNCTION test_ext_with_collection(coll text, type text, n int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('client_min_messages', 'warning', true);
    DROP EXTENSION IF EXISTS peek_test_ext CASCADE;
    CREATE EXTENSION peek_test_ext VERSION '1.0';
    EXECUTE format('CREATE TYPE %I AS (k int, v int)', type);
    PERFORM peek.create_collection(coll, type::regtype);
    EXECUTE format('SELECT peek.write(%L, array_agg(ROW(i, 10 * i)::%I ORDER BY i)) FROM generate_series(1, %s) i',
                   coll, type, n);
END $$;

-- A collection of rows (k int, v text) whose updates a test also keeps in a
-- plain table log (t bigint, k int, v text, diff bigint), to compare its
-- peeks with (persist_peek_count, persist_peek_pages, moving_base).
-- log_write(coll, row_type, log, lo, hi): log's updates of times lo .. hi
-- appended to coll at their times (in the order of t, k, v, diff), then
-- coll sealed to hi + 1
CREATE FUNCTION log_write(coll text, row_type regtype, log regclass, lo bigint, hi bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT peek.append(%L, ARRAY[ROW(l.k, l.v)::%s], l.t, l.diff) FROM %s l
                     WHERE l.t BETWEEN $1 AND $2 ORDER BY l.t, l.k, l.v, l.diff',
                   coll, row_type, log) USING lo, hi;
    PERFORM peek.advance(coll, hi + 1);
END $$;
-- log_contents(log, at): the contents log's updates give at time at, each
-- row with its multiplicity n (rows of n 0 left out)
CREATE FUNCTION log_contents(log regclass, at bigint) RETURNS TABLE (k int, v text, n bigint)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT k, v, sum(diff)::bigint FROM %s WHERE t <= $1
                                  GROUP BY k, v HAVING sum(diff) <> 0', log) USING at;
END $$;
