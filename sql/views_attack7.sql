-- Keys, DISTINCT columns, join keys and min/max arguments equal under
-- their type's equality but of other bytes: intervals ('1 day', '24
-- hours', '86400 s'; '1 mon', '30 days', '720 hours'), jsonb ({"a": 2.5}
-- and {"a": 2.50}), float8 NaN of both signs and 0 / -0, numeric arrays,
-- a domain over numeric, a composite with a numeric field, and an enum
-- given values BEFORE others later.  Each group's representative rows
-- are retracted, others of the same key come and go, across a restart
-- of the maintenance runtime: every view equals its query at every time
-- (EXCEPT ALL: equality), and an index of a view equals its persist peek
-- and finds a group by any equal key.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE va7_e AS ENUM ('b', 'd');
CREATE DOMAIN va7_dn AS numeric;
CREATE TYPE va7_c AS (x numeric, y text);
CREATE TYPE va7_r AS (k int, i interval, j jsonb, f float8, a numeric[], e va7_e, d va7_dn, c va7_c, v int);
-- a NaN with its sign bit set, as x86 makes it
CREATE FUNCTION va7_nan() RETURNS float8 LANGUAGE sql IMMUTABLE
    AS $$SELECT 'Infinity'::float8 - 'Infinity'::float8$$;
SELECT float8send(va7_nan()) <> float8send('NaN') AS other_bytes, va7_nan() = 'NaN' AS equal;
SELECT peek.create_collection('va7', 'va7_r');
SELECT peek.write('va7', ARRAY[
    (1, '1 day', '{"a": 2.5}', 'NaN', '{2.5}', 'b', 2.5, '(2.5,x)', 1),
    (2, '24 hours', '{"a": 2.50}', va7_nan(), '{2.50}', 'b', 2.50, '(2.50,x)', 2),
    (3, '1 mon', '{"a": 1}', 0, '{1}', 'd', 1, '(1,y)', 3),
    (4, '30 days', '{"a": 1.0}', '-0', '{1.0}', 'd', 1.0, '(1.0,y)', 4),
    (5, '720 hours', '{"a": 1.00}', 0, '{1.00}', 'd', 1.00, '(1.00,y)', 5)]::va7_r[]);

SELECT peek.create_view('va7_gi', $$SELECT i, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi
    FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY i$$);
SELECT peek.create_view('va7_gi_lin', $$SELECT i, count(*) AS n, sum(v) AS s
    FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY i$$);
SELECT peek.create_view('va7_dj', $$SELECT DISTINCT j FROM peek.persist_peek(NULL::va7_r, 'va7')$$);
SELECT peek.create_view('va7_gf', $$SELECT f, count(*) AS n, sum(v) AS s
    FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY f$$);
SELECT peek.create_view('va7_ga', $$SELECT a, count(*) AS n FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY a$$);
SELECT peek.create_view('va7_gd', $$SELECT d, e, count(*) AS n, sum(v) AS s
    FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY d, e$$);
SELECT peek.create_view('va7_gc', $$SELECT c, count(*) AS n FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY c$$);
SELECT peek.create_view('va7_mm', $$SELECT e, min(i) AS li, max(i) AS hi, min(f) AS lf, max(f) AS hf,
    min(d) AS ld, max(j::text) AS jt, count(*) AS n FROM peek.persist_peek(NULL::va7_r, 'va7') GROUP BY e$$);
SELECT peek.create_view('va7_whole', $$SELECT min(i) AS li, max(i) AS hi, min(f) AS lf, max(f) AS hf,
    min(d) AS ld, count(DISTINCT j) AS nj, count(DISTINCT i) AS ni FROM peek.persist_peek(NULL::va7_r, 'va7')$$);
SELECT peek.create_view('va7_join', $$SELECT x.k, y.k AS yk, x.i FROM peek.persist_peek(NULL::va7_r, 'va7') x
    JOIN peek.persist_peek(NULL::va7_r, 'va7') y ON x.i = y.i$$);
SELECT peek.create_view('va7_left', $$SELECT x.k, y.k AS yk FROM peek.persist_peek(NULL::va7_r, 'va7') x
    LEFT JOIN peek.persist_peek(NULL::va7_r, 'va7') y ON x.j = y.j AND y.v > 2$$);
SELECT peek.create_view('va7_chain', $$SELECT x.k, y.k AS yk, z.k AS zk FROM peek.persist_peek(NULL::va7_r, 'va7') x
    JOIN peek.persist_peek(NULL::va7_r, 'va7') y ON x.i = y.i JOIN peek.persist_peek(NULL::va7_r, 'va7') z ON z.f = y.f$$);
SELECT peek.create_view('va7_jg', $$SELECT x.d, count(*) AS n, sum(y.v) AS s FROM peek.persist_peek(NULL::va7_r, 'va7') x
    JOIN peek.persist_peek(NULL::va7_r, 'va7') y ON x.i = y.i GROUP BY x.d$$);
SELECT peek.create_view('va7_jd', $$SELECT DISTINCT x.i, y.f FROM peek.persist_peek(NULL::va7_r, 'va7') x
    JOIN peek.persist_peek(NULL::va7_r, 'va7') y ON x.j = y.j$$);
SELECT peek.create_index('va7_gi_i', 'va7_gi', ARRAY['i']);
SELECT peek.create_index('va7_dj_j', 'va7_dj', ARRAY['j']);
SELECT peek.create_index('va7_gf_f', 'va7_gf', ARRAY['f']);
SELECT peek.create_index('va7_gd_d', 'va7_gd', ARRAY['d']);
SELECT wait_for($$SELECT count(*) = 14 FROM peek.views WHERE state = 'ready' AND lag = 0$$);

-- each group's representatives retracted, others of its key in and out
SELECT peek.write('va7', ARRAY[]::va7_r[],
    ARRAY[(1, '1 day', '{"a": 2.5}', 'NaN', '{2.5}', 'b', 2.5, '(2.5,x)', 1),
          (3, '1 mon', '{"a": 1}', 0, '{1}', 'd', 1, '(1,y)', 3)]::va7_r[]);
SELECT peek.write('va7', ARRAY[(6, '86400 s', '{"a": 2.500}', va7_nan(), '{2.500}', 'b', 2.500, '(2.500,x)', 6)]::va7_r[],
    ARRAY[(2, '24 hours', '{"a": 2.50}', va7_nan(), '{2.50}', 'b', 2.50, '(2.50,x)', 2)]::va7_r[]);
SELECT restart_maintenance();
SELECT peek.write('va7', ARRAY[(1, '1 day', '{"a": 2.5}', 'NaN', '{2.5}', 'b', 2.5, '(2.5,x)', 1)]::va7_r[],
    ARRAY[(4, '30 days', '{"a": 1.0}', '-0', '{1.0}', 'd', 1.0, '(1.0,y)', 4)]::va7_r[]);
ALTER TYPE va7_e ADD VALUE 'a' BEFORE 'b';
ALTER TYPE va7_e ADD VALUE 'c' BEFORE 'd';
SELECT peek.write('va7', ARRAY[(7, '1 day', '{"a": 2.5}', 'NaN', '{2.5}', 'c', 2.5, '(2.5,x)', 7),
                               (8, '1 day', '{"a": 2.5}', 'NaN', '{2.5}', 'a', 2.5, '(2.5,x)', 8)]::va7_r[]);
SELECT peek.write('va7', ARRAY[]::va7_r[],
    ARRAY[(6, '86400 s', '{"a": 2.500}', va7_nan(), '{2.500}', 'b', 2.500, '(2.500,x)', 6)]::va7_r[]);
SELECT wait_for($$SELECT count(*) = 14 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM views_bad_times();
SELECT ix, view_mismatches(format('SELECT * FROM peek.index_peek(NULL::%I, %L, as_of => @T@)', v, ix),
                           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v, v), 1, 5) AS bad_times
  FROM (VALUES ('va7_gi', 'va7_gi_i'), ('va7_dj', 'va7_dj_j'), ('va7_gf', 'va7_gf_f'), ('va7_gd', 'va7_gd_d')) x(v, ix);
SELECT n, s, lo, hi FROM peek.index_peek(NULL::va7_gi, 'va7_gi_i', ROW('86400 s'::interval));
SELECT n, s, lo, hi FROM peek.index_peek(NULL::va7_gi, 'va7_gi_i', ROW('1 mon'::interval));
SELECT j = '{"a": 2.5}' AS found FROM peek.index_peek(NULL::va7_dj, 'va7_dj_j', ROW('{"a": 2.5000}'::jsonb));
SELECT n, s FROM peek.index_peek(NULL::va7_gf, 'va7_gf_f', ROW(va7_nan()));
SELECT n, s FROM peek.index_peek(NULL::va7_gf, 'va7_gf_f', ROW('-0'::float8));
SELECT e, n, s FROM peek.index_peek(NULL::va7_gd, 'va7_gd_d', keys => ARRAY[2.5::va7_dn, 1.000::va7_dn]) ORDER BY e;
SELECT e, n FROM va7_mm ORDER BY e;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION va7_nan();
DROP TYPE va7_r;
DROP TYPE va7_c;
DROP DOMAIN va7_dn;
DROP TYPE va7_e;
