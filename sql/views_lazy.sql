-- Lazy groups (src/dataflow/reduce.c): a view of one stage whose inputs
-- are all read from shared arrangements is not built again after its
-- hydration or a restart: a round learns each group it touches from the
-- arrangements, its rows before the round's updates and its output from
-- them.  Its first round touches each kind of group (a row updated, a
-- group's last row deleted, a row moved between two groups, a new group);
-- the views (linear aggregates, min and max, DISTINCT, a grouped
-- self-join, a join, over a collection and over a source) equal their
-- queries over persist_peek at every time; the same right after a
-- restart.  The inputs' rows are not read again after the hydration.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE lz AS (g int, v int);
CREATE TYPE lzk AS (g int, name text);
SELECT peek.create_collection('lzs', 'lz');
SELECT peek.create_collection('lzks', 'lzk');
-- groups 0 to 9 of 100 rows each, group 10 of one row
SELECT peek.write('lzs', array_agg((i % 10, i)::lz) || ARRAY[(10, 7)]::lz[])
  FROM generate_series(1, 1000) i;
SELECT peek.write('lzks', array_agg((i, 'k' || i)::lzk)) FROM generate_series(0, 10) i;
CREATE TABLE lzt (id int PRIMARY KEY, g int, v int);
INSERT INTO lzt SELECT i, i % 10, i FROM generate_series(1, 1000) i;
INSERT INTO lzt VALUES (1001, 10, 7);
SET client_min_messages = warning;
SELECT peek.create_source('lzt_src', 'lzt');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'lzt_src'$$);

SELECT peek.create_view('lz_sum', $$
    SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::lz, 'lzs') GROUP BY g$$);
SELECT peek.create_view('lz_max', $$
    SELECT g, max(v) AS m, min(v) AS l FROM peek.persist_peek(NULL::lz, 'lzs')
     WHERE v % 3 <> 0 GROUP BY g$$);
SELECT peek.create_view('lz_distinct', $$
    SELECT DISTINCT g FROM peek.persist_peek(NULL::lz, 'lzs') WHERE v < 900$$);
SELECT peek.create_view('lz_self', $$
    SELECT x.g, count(*) AS n FROM peek.persist_peek(NULL::lz, 'lzs') x
      JOIN peek.persist_peek(NULL::lz, 'lzs') y ON y.g = x.g AND y.v < 50 GROUP BY x.g$$);
SELECT peek.create_view('lz_join', $$
    SELECT x.g, x.v, k.name FROM peek.persist_peek(NULL::lz, 'lzs') x
      JOIN peek.persist_peek(NULL::lzk, 'lzks') k ON k.g = x.g$$);
SELECT peek.create_view('lz_src', $$SELECT g, count(*) AS n, sum(v) AS s FROM lzt GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT view, operator, kind FROM peek.dataflow_operators WHERE operator > 1 ORDER BY view, operator;
-- what the hydrations read
CREATE TEMP TABLE hydrated AS
SELECT view, rows_in FROM peek.dataflow_operators WHERE operator = 1;

-- each view's mismatches with its query at every time of its inputs: 1 to
-- before its upper for the collections, the times in the source's shard
-- from the view's since for the source (LSNs)
CREATE FUNCTION lz_times(view text) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v record := (SELECT x FROM peek.views x WHERE name = view);
    times bigint[];
BEGIN
    IF view <> 'lz_src' THEN
        RETURN ARRAY(SELECT generate_series(1, v.upper - 1));
    END IF;
    EXECUTE format('SELECT array_agg(DISTINCT time) FROM %s WHERE time >= $1 AND time < $2',
                   (SELECT shard FROM peek.collections WHERE name = 'lzt_src'))
       INTO times USING greatest(v.since, (SELECT since FROM peek.collections
                                             WHERE name = 'lzt_src')), v.upper;
    RETURN times;
END $$;
CREATE VIEW lz_bad AS
SELECT name, cardinality(lz_times(name)) > 0 AS some_times, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           lz_times(name)) AS bad_times
  FROM peek.views ORDER BY name;
CREATE FUNCTION lz_caught_up() RETURNS boolean LANGUAGE sql
RETURN wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND lag = 0$$)
   AND wait_for($$SELECT (SELECT array_agg((g, n, s) ORDER BY g) FROM lz_src) =
                         (SELECT array_agg((g, n, s) ORDER BY g)
                            FROM (SELECT g, count(*) AS n, sum(v) AS s FROM lzt GROUP BY g) q)$$);

-- the first round after the hydration: in group 1 a row updated, group
-- 10's only row deleted, a row moved from group 3 to group 2, a new
-- group 20, and a key of the join's other input new and one gone
SELECT peek.write('lzs', ARRAY[(1, 5001), (2, 3), (20, 20)]::lz[],
                  ARRAY[(1, 1), (10, 7), (3, 3)]::lz[]);
SELECT peek.write('lzks', ARRAY[(20, 'k20')]::lzk[], ARRAY[(4, 'k4')]::lzk[]);
UPDATE lzt SET v = 5001 WHERE id = 1;
DELETE FROM lzt WHERE id = 1001;
UPDATE lzt SET g = 2 WHERE id = 3;
INSERT INTO lzt VALUES (1002, 20, 20);
SELECT lz_caught_up();
SELECT * FROM lz_bad;
SELECT * FROM lz_sum WHERE g IN (1, 2, 3, 10, 20) ORDER BY g;
SELECT * FROM lz_src WHERE g IN (1, 2, 3, 10, 20) ORDER BY g;
-- no input's rows read again: the hydration's and the updates since
SELECT d.view, d.rows_in - h.rows_in AS read_since
  FROM peek.dataflow_operators d JOIN hydrated h USING (view)
 WHERE operator = 1 ORDER BY view;

-- the same right after a restart: group 10 back, group 20's last row
-- moved to group 3, a row of group 2 updated, a join key back and one
-- gone; then group 10 gone again.  (Each view's first round holds the
-- arrangements at its upper before the next writes: a view's arrangement
-- the other views' rounds compacted past its upper would be read whole.)
CREATE TEMP TABLE before_restart AS
SELECT view, rows_in FROM peek.dataflow_operators WHERE operator = 1;
SELECT restart_maintenance();
SELECT peek.write('lzs', ARRAY[(10, 8), (2, 6000), (3, 20)]::lz[],
                  ARRAY[(20, 20), (2, 2)]::lz[]);
SELECT peek.write('lzks', ARRAY[(4, 'k4 again')]::lzk[], ARRAY[(20, 'k20')]::lzk[]);
INSERT INTO lzt VALUES (1003, 10, 8);
UPDATE lzt SET v = 6000 WHERE id = 2;
UPDATE lzt SET g = 3 WHERE id = 1002;
SELECT lz_caught_up();
SELECT peek.write('lzs', ARRAY[]::lz[], ARRAY[(10, 8)]::lz[]);
SELECT peek.write('lzks', ARRAY[(21, 'k21')]::lzk[]);
DELETE FROM lzt WHERE id = 1003;
SELECT lz_caught_up();
SELECT * FROM lz_bad;
SELECT * FROM lz_sum WHERE g IN (1, 2, 3, 10, 20) ORDER BY g;
SELECT * FROM lz_src WHERE g IN (1, 2, 3, 10, 20) ORDER BY g;
SELECT d.view, d.rows_in - b.rows_in AS read_since
  FROM peek.dataflow_operators d JOIN before_restart b USING (view)
 WHERE operator = 1 ORDER BY view;

SELECT peek.drop_view('lz_src');
SELECT peek.drop_source('lzt_src');
DROP TABLE lzt;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE lz;
DROP TYPE lzk;
DROP FUNCTION lz_caught_up();
