-- Under pg_peek.isolation = 'strict serializable' a read of a view over a
-- source at its latest time sees every transaction committed before it,
-- the session's own included, as a read of the source does.  Before, the
-- source's peek floored its time at the current WAL position and the
-- view's did not: a view read right after the session's INSERT committed
-- missed it while the source showed it.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

SET client_min_messages = warning;
CREATE TABLE va8 (id int PRIMARY KEY, g int, v int);
RESET client_min_messages;
INSERT INTO va8 SELECT i, i % 3, i FROM generate_series(1, 10) i;
SELECT peek.create_source('va8_src', 'va8');
SELECT peek.create_view('va8_g', $$SELECT g, count(*) AS n, sum(v) AS s FROM va8 GROUP BY g$$);
SELECT peek.create_view('va8_n', $$SELECT count(*) AS n FROM va8_g$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready'$$);

SET pg_peek.isolation = 'strict serializable';
CREATE TABLE va8_seen (i int, view_n bigint, view_s bigint, views_n bigint, table_n bigint, table_s bigint);
-- each statement its own transaction: an insert committed, then the views read
DO $$
BEGIN
    FOR i IN 11 .. 30 LOOP
        INSERT INTO va8 VALUES (i, i % 4, i);
        COMMIT;
        INSERT INTO va8_seen
            SELECT i, (SELECT sum(n) FROM va8_g), (SELECT sum(s) FROM va8_g), (SELECT n FROM va8_n),
                   (SELECT count(*) FROM va8), (SELECT sum(v) FROM va8);
        COMMIT;
    END LOOP;
END $$;
SELECT count(*) AS reads, count(*) FILTER (WHERE view_n = table_n AND view_s = table_s) AS view_saw_its_commit,
       count(*) FILTER (WHERE views_n = (SELECT count(DISTINCT g) FROM va8 x WHERE x.id <= s.i)) AS view_of_view_saw_it
  FROM va8_seen s;
RESET pg_peek.isolation;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE va8, va8_seen;
