-- min and max kept as a group's states (accums_functions.c, accums.c) for
-- types whose equal values are the same bytes (integers, dates,
-- timestamps, oids, text under a deterministic collation): a retraction
-- of any value but the one a group keeps changes nothing, one of the last
-- copy of the kept value computes the group again from its rows.  Each
-- view equals PostgreSQL's evaluation of its query at every time: the
-- max's row deleted, one of two equal maxima deleted, a group whose
-- values are all NULL, a group emptied and refilled, rows moving between
-- groups, FILTER, HAVING and expressions, many rows at once, a runtime
-- restart (the states computed from the rows again), beside the min of
-- numerics and the max of floats (which run the query over the group's
-- rows); then the same over a captured table, through updates of the
-- kept values, rollbacks and TRUNCATE.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE xrow AS (g int, i int, b bigint, s smallint, d date, ts timestamptz,
                     t text, o oid, n numeric, f float8);
SELECT peek.create_collection('xrows', 'xrow');
CREATE FUNCTION xr(g int, i int) RETURNS xrow LANGUAGE sql IMMUTABLE
RETURN (g, i, i * 1000000000000::bigint, (i % 300)::smallint, date '2026-01-01' + i,
        timestamptz '2026-01-01 00:00+00' + i * interval '1 hour', 't' || lpad(i::text, 5, '0'),
        (i + 7)::oid, i / 4.0, i / 8.0)::xrow;
-- groups 1 to 3; group 2's top value twice; group 3 with a NULL row
SELECT peek.write('xrows', ARRAY[xr(1, 5), xr(1, 9), xr(1, 2), xr(2, 4), xr(2, 8), xr(2, 8),
                                 xr(3, 6), (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::xrow]);

SELECT peek.create_view('x_by', $$
    SELECT g, min(i) AS i_lo, max(i) AS i_hi, min(b) AS b_lo, max(b) AS b_hi,
           min(s) AS s_lo, max(s) AS s_hi, min(d) AS d_lo, max(d) AS d_hi,
           min(ts) AS ts_lo, max(ts) AS ts_hi, min(t) AS t_lo, max(t COLLATE "C") AS t_hi,
           max(o) AS o_hi, count(*) AS n
      FROM peek.persist_peek(NULL::xrow, 'xrows') GROUP BY g$$);
SELECT peek.create_view('x_all', $$
    SELECT min(i) AS lo, max(i) AS hi, max(t) AS t_hi, count(i) AS n
      FROM peek.persist_peek(NULL::xrow, 'xrows')$$);
SELECT peek.create_view('x_exprs', $$
    SELECT g, max(i) FILTER (WHERE i % 2 = 0) AS even_hi, min(i + 1) AS lo1,
           max(i) - min(i) AS spread
      FROM peek.persist_peek(NULL::xrow, 'xrows') GROUP BY g HAVING max(i) > 3$$);
SELECT peek.create_view('x_mixed', $$
    SELECT g, max(i) AS hi, min(n) AS n_lo, max(f) AS f_hi, sum(i) AS total
      FROM peek.persist_peek(NULL::xrow, 'xrows') GROUP BY g$$);
SELECT peek.create_view('x_by_text', $$
    SELECT left(t, 3) AS k, max(i) AS hi, min(d) AS d_lo
      FROM peek.persist_peek(NULL::xrow, 'xrows') GROUP BY left(t, 3)$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT * FROM x_by ORDER BY g;
SELECT * FROM x_all;

-- 1: group 1's max deleted (9: 5 again); 2: one of group 2's two 8s
-- deleted (still 8), then the other (4); 3: group 3's 6 deleted (its
-- values all NULL); 4: group 1 emptied; 5: refilled, and a row moves from
-- group 2 to group 1 with a new max
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(1, 9)]);
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(2, 8)]);
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(2, 8)]);
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(3, 6)]);
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(1, 5), xr(1, 2)]);
SELECT peek.write('xrows', ARRAY[xr(1, 3), xr(1, 40)], ARRAY[xr(2, 4)]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 7$$);
SELECT * FROM x_by ORDER BY g;
SELECT * FROM x_all;
SELECT * FROM x_exprs ORDER BY g;

-- many rows at once, then every other one deleted (the extremes of most
-- groups among them), then the largest of all deleted
SELECT peek.write('xrows', array_agg(xr(i % 7, i)), '{}'::xrow[]) FROM generate_series(1, 3000) i;
SELECT peek.write('xrows', '{}'::xrow[], array_agg(xr(i % 7, i))) FROM generate_series(2, 3000, 2) i;
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(2999 % 7, 2999)]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 10$$);
SELECT * FROM x_all;

-- the runtime restarts: the groups' states are computed from their rows,
-- and the kept values retracted exactly
SELECT restart_maintenance();
SELECT peek.write('xrows', ARRAY[xr(3, 5000)], ARRAY[xr(2997 % 7, 2997), xr(1, 40)]);
SELECT peek.write('xrows', '{}'::xrow[], ARRAY[xr(3, 5000)]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 12$$);
SELECT * FROM x_all;

-- every view at every time equals its query over the input at that time
SELECT name, state, bad_times FROM views_bad_times() JOIN peek.views USING (name) ORDER BY name;
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('xrows');

-- over a captured table: each view read through its PostgreSQL view
-- equals PostgreSQL's evaluation of the same query over the table
CREATE TABLE xt (id int PRIMARY KEY, g int, v int, t text, d date);
INSERT INTO xt SELECT i, i % 10, (i * 37) % 101, 'w' || (i * 13) % 97, date '2026-01-01' + i % 50
  FROM generate_series(1, 400) i;
SET client_min_messages = warning;
SELECT peek.create_source('xt_src', 'xt');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'xt_src'$$);
CREATE TABLE xq (name text PRIMARY KEY, query text);
INSERT INTO xq VALUES
  ('xt_by', $$SELECT g, max(v) AS hi, min(v) AS lo, max(t) AS t_hi, min(d) AS d_lo, count(*) AS n
                FROM xt GROUP BY g$$),
  ('xt_whole', $$SELECT max(v) AS hi, min(v) AS lo, min(t) AS t_lo FROM xt$$);
SELECT peek.create_view(name, query) FROM xq ORDER BY name;
CREATE TABLE xtimes (src text, t bigint);
CREATE FUNCTION xt_mismatches() RETURNS TABLE (name text, bad text) LANGUAGE sql AS $$
    SELECT name, view_mismatches(format('SELECT * FROM %I', name), query, ARRAY[0::bigint])
      FROM xq ORDER BY name
$$;
SELECT views_past_wal('xt_src', 'xtimes');
SELECT * FROM xt_mismatches();
-- every group's max lowered, the whole table's min raised
UPDATE xt SET v = v - 200 WHERE (g, v) IN (SELECT g, max(v) FROM xt GROUP BY g);
UPDATE xt SET v = 500 WHERE v = (SELECT min(v) FROM xt);
SELECT views_past_wal('xt_src', 'xtimes');
SELECT * FROM xt_mismatches();
-- the kept values deleted in a transaction rolled back, then for real;
-- rows move between groups
BEGIN;
DELETE FROM xt WHERE v = (SELECT max(v) FROM xt);
ROLLBACK;
DELETE FROM xt WHERE v IN ((SELECT max(v) FROM xt), (SELECT min(v) FROM xt));
UPDATE xt SET g = g + 1 WHERE id % 3 = 0;
DELETE FROM xt WHERE g = 4;
SELECT views_past_wal('xt_src', 'xtimes');
SELECT * FROM xt_mismatches();
SELECT * FROM xt_whole;
-- TRUNCATE, then rows again
TRUNCATE xt;
SELECT views_past_wal('xt_src', 'xtimes');
SELECT * FROM xt_mismatches();
SELECT * FROM xt_whole;
INSERT INTO xt VALUES (1, 1, 10, 'a', '2026-02-01'), (2, 1, 20, 'b', '2026-01-01'), (3, 2, 5, NULL, NULL);
SELECT views_past_wal('xt_src', 'xtimes');
SELECT * FROM xt_mismatches();
SELECT * FROM xt_by ORDER BY g;

SELECT peek.drop_view(name) FROM xq ORDER BY name;
SELECT peek.drop_source('xt_src');
DROP FUNCTION xt_mismatches();
DROP TABLE xq, xtimes, xt;
DROP FUNCTION xr(int, int);
DROP TYPE xrow;
