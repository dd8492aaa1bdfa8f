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

-- view_mismatches(view, query, first): the times from first to the view's
-- upper at which the view's persist peek differs from query (EXCEPT ALL
-- both ways), its input's persist peek written with @AS@ where ", as_of =>
-- t" goes
CREATE FUNCTION view_mismatches(view text, query text, first int DEFAULT 0) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	bad text := '';
	n bigint;
	got text;
	want text;
BEGIN
	FOR t IN first .. (SELECT upper - 1 FROM peek.views WHERE name = view) LOOP
		got := format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => %s)', view, view, t);
		want := replace(query, '@AS@', format(', as_of => %s', t));
		EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) d',
		               got, want, want, got) INTO n;
		IF n > 0 THEN
			bad := bad || t || ' ';
		END IF;
	END LOOP;
	RETURN bad;
END $f$;
