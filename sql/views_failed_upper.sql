-- A failed view shows its stored upper (peek.uppers), where its rounds
-- stopped, as a failed collection does, not the upper the runtime last
-- published.  A view over an idle source has its upper raised in memory
-- alone (published, not written: the source's upper moves on over WAL it
-- filters out), so the published upper passes the stored one; a round
-- that then fails (a division by zero) leaves the stored one behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE fu_t (id int PRIMARY KEY, x int);
CREATE TABLE fu_other (id serial);
INSERT INTO fu_t VALUES (1, 1), (2, 2);
SET client_min_messages = warning;
SELECT peek.create_source('fu_src', 'fu_t');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'fu_src'$$);
SELECT peek.create_view('fu_ratio', $$SELECT id, 10 / x AS r FROM fu_t$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'fu_ratio'$$);

-- a view's stored upper, and the one the runtime published
CREATE FUNCTION fu_uppers(view text, OUT stored bigint, OUT published bigint)
LANGUAGE sql AS $$
    SELECT (SELECT coalesce(max(u.upper), 0) FROM peek.uppers u
             WHERE u.object = o.id & 4294967295),
           (SELECT r.upper FROM peek.registry_status() r WHERE r.id = o.id AND r.published)
      FROM peek.objects o WHERE o.name = view$$;
-- WAL the source filters out until the view's published upper passes its
-- stored one (the runtime writes it at most once a second while idle)
CREATE FUNCTION fu_idle_ahead(view text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 600 LOOP
        INSERT INTO fu_other DEFAULT VALUES;
        PERFORM pg_sleep(0.02);
        IF (SELECT published > stored FROM fu_uppers(view)) THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END $$;
SELECT fu_idle_ahead('fu_ratio');

-- a round fails: the view shows where its rounds stopped
INSERT INTO fu_t VALUES (3, 0);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'fu_ratio'$$);
SELECT v.state, v.failure, v.upper = u.stored AS stored_upper_shown
  FROM peek.views v, fu_uppers('fu_ratio') u WHERE v.name = 'fu_ratio';
-- and so does a failed collection (the source, its table's type changed)
SELECT peek.drop_view('fu_ratio');
ALTER TABLE fu_t ALTER COLUMN x TYPE bigint;
INSERT INTO fu_t VALUES (4, 4);
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'fu_src'$$);
SELECT c.state, c.upper = u.stored AS stored_upper_shown
  FROM peek.collections c, fu_uppers('fu_src') u WHERE c.name = 'fu_src';

SELECT peek.drop_source('fu_src');
DROP FUNCTION fu_idle_ahead(text);
DROP FUNCTION fu_uppers(text);
DROP TABLE fu_t, fu_other;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
