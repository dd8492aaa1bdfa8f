-- Lazy groups (src/dataflow/reduce.c starts_lazy) over keys that equality
-- tells apart differently from their images: a text key under a
-- nondeterministic collation ('a' and 'A' one group), numeric keys of
-- several scales (1.0, 1.00, 1.000 one group), float8 0 and -0, and NULL
-- keys; grouped with min, max, bool_and, HAVING and DISTINCT (lazy: over
-- shared arrangements), and an inner and a left self-join (not shared:
-- built again, for comparison).  After a restart each view's first round
-- touches its groups with rows of other images than the ones it hydrated
-- from (the old images deleted, the new inserted at the same time): every
-- view equals its query over persist_peek at every time, and the latest
-- contents (shown as text) hold each group once, with the image of a row
-- the group has.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE COLLATION lzk_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TYPE lzk_t AS (k text COLLATE lzk_ci, v int, b bool);
CREATE TYPE lzk_n AS (k numeric, v int);
CREATE TYPE lzk_f AS (k float8, v int);
SELECT peek.create_collection('lzk_ts', 'lzk_t');
SELECT peek.create_collection('lzk_ns', 'lzk_n');
SELECT peek.create_collection('lzk_fs', 'lzk_f');
SELECT peek.write('lzk_ts', ARRAY[('a', 1, true), ('a', 2, true), ('b', 3, false), ('B', 4, true),
                                  (NULL, 5, true), (NULL, 6, false), ('c', 7, true)]::lzk_t[]);
SELECT peek.write('lzk_ns', ARRAY[(1.0, 1), (1.0, 2), (2, 3), (NULL, 4)]::lzk_n[]);
SELECT peek.write('lzk_fs', ARRAY[(0, 1), (0, 2), (2, 3)]::lzk_f[]);

SELECT peek.create_view('lzk_t_agg', $$
    SELECT k, count(*) AS n, min(v) AS l, max(v) AS m, bool_and(b) AS a
      FROM peek.persist_peek(NULL::lzk_t, 'lzk_ts') GROUP BY k HAVING count(*) < 4$$);
SELECT peek.create_view('lzk_t_distinct', $$
    SELECT DISTINCT k FROM peek.persist_peek(NULL::lzk_t, 'lzk_ts') WHERE b$$);
SELECT peek.create_view('lzk_t_left', $$
    SELECT x.k, x.v, y.v AS w FROM peek.persist_peek(NULL::lzk_t, 'lzk_ts') x
      LEFT JOIN peek.persist_peek(NULL::lzk_t, 'lzk_ts') y ON y.k = x.k AND y.v > 3$$);
SELECT peek.create_view('lzk_n_agg', $$
    SELECT k, count(*) AS n, sum(v) AS s, max(v) AS m FROM peek.persist_peek(NULL::lzk_n, 'lzk_ns') GROUP BY k$$);
SELECT peek.create_view('lzk_n_join', $$
    SELECT x.k, x.v, y.v AS w FROM peek.persist_peek(NULL::lzk_n, 'lzk_ns') x
      JOIN peek.persist_peek(NULL::lzk_n, 'lzk_ns') y ON y.k = x.k AND y.v = 2$$);
SELECT peek.create_view('lzk_f_agg', $$
    SELECT k, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::lzk_f, 'lzk_fs') GROUP BY k$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT view, kind FROM peek.dataflow_operators WHERE operator = 2 ORDER BY view;

SELECT restart_maintenance();
-- each group's hydrated images gone and others of the same key in
SELECT peek.write('lzk_ts', ARRAY[('A', 8, true), ('A', 2, true), ('b', 9, true), (NULL, 10, true)]::lzk_t[],
                  ARRAY[('a', 1, true), ('a', 2, true), ('B', 4, true), (NULL, 6, false)]::lzk_t[]);
SELECT peek.write('lzk_ns', ARRAY[(1.00, 5), (1.000, 2), (NULL, 6)]::lzk_n[],
                  ARRAY[(1.0, 1), (1.0, 2)]::lzk_n[]);
SELECT peek.write('lzk_fs', ARRAY['(-0,5)'::lzk_f]::lzk_f[], ARRAY[(0, 1), (0, 2)]::lzk_f[]);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM views_bad_times();
SELECT x::text FROM peek.persist_peek(NULL::lzk_n_agg, 'lzk_n_agg') x ORDER BY 1;
SELECT x::text FROM peek.persist_peek(NULL::lzk_f_agg, 'lzk_f_agg') x ORDER BY 1;
SELECT * FROM lzk_t_agg ORDER BY k COLLATE "C";

-- and again after another restart, the images of the first round deleted
SELECT restart_maintenance();
SELECT peek.write('lzk_ts', ARRAY[('a', 11, false)]::lzk_t[], ARRAY[('A', 8, true), ('A', 2, true)]::lzk_t[]);
SELECT peek.write('lzk_ns', ARRAY[(1, 7)]::lzk_n[], ARRAY[(1.00, 5), (1.000, 2)]::lzk_n[]);
SELECT peek.write('lzk_fs', ARRAY[(0, 6)]::lzk_f[], ARRAY['(-0,5)'::lzk_f]::lzk_f[]);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM views_bad_times();
SELECT x::text FROM peek.persist_peek(NULL::lzk_n_agg, 'lzk_n_agg') x ORDER BY 1;
SELECT x::text FROM peek.persist_peek(NULL::lzk_f_agg, 'lzk_f_agg') x ORDER BY 1;
SELECT * FROM lzk_t_agg ORDER BY k COLLATE "C";

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE lzk_t;
DROP TYPE lzk_n;
DROP TYPE lzk_f;
DROP COLLATION lzk_ci;
