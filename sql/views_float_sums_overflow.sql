-- A float sum whose partial sums pass float8's range though the whole
-- does not (1e308 + 1e308 - 1e308).  PostgreSQL's float sum fails or not
-- by the order it adds the rows in; a view's exact sum must not depend on
-- the order a round sees a group's rows in, so it gives the exact sum
-- rounded once whenever that is in range, and fails only when it is not.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- the exact aggregates in every order of the same rows
SELECT o, peek.exact_sum(x), peek.exact_avg(x)
  FROM (VALUES (1, 1e308::float8, 1), (1, 1e308, 2), (1, -1e308, 3),
               (2, 1e308, 1), (2, -1e308, 2), (2, 1e308, 3),
               (3, -1e308, 1), (3, 1e308, 2), (3, 1e308, 3)) v(o, x, pos)
 GROUP BY o ORDER BY o;
-- beyond the range twice over on either side, back to a small sum, or to
-- float8's least value and half of its last place
SELECT peek.exact_sum(x), peek.exact_sum4(x)
  FROM (VALUES ('1.7976931348623157e308'::float8), ('1.7976931348623157e308'),
               ('-1.7976931348623157e308'), ('-1.7976931348623157e308'), (0.5)) v(x);
SELECT peek.exact_sum(x) = '-1.7976931348623157e308' AS float8_s_least
  FROM (VALUES ('-1.7976931348623157e308'::float8), ('-1.7976931348623157e308'),
               ('1.7976931348623157e308'), (1.5e308), (-1.5e308), (0.5)) v(x);
-- float4's tie (1 + 2^-24 + 2^-80 is nearer 1 + 2^-23) still decided once
-- the huge values are put back
SELECT peek.exact_sum4(x) = 1 + 2::float4 ^ -23 AS rounded_once
  FROM (VALUES (1e308::float8), (1e308), (1), (2::float8 ^ -24), (2::float8 ^ -80),
               (-1e308), (-1e308)) v(x);
-- a sum that is beyond the range still fails, however far
SELECT try($$SELECT peek.exact_sum(x) FROM (VALUES (1e308::float8), (1e308), (-1e307)) v(x)$$);
SELECT try($$SELECT peek.exact_sum(x) FROM (VALUES (1e308::float8), (1e308), (1e308), (1e308), (1e308)) v(x)$$);
SELECT try($$SELECT peek.exact_sum(x) FROM (VALUES (-1e308::float8), (-1e308), (1e307)) v(x)$$);
SELECT try($$SELECT peek.exact_sum4(x) FROM (VALUES (1e308::float8), (1e308), (-1e308), (-1e308), (1e39)) v(x)$$);

CREATE TYPE fo_row AS (g int, x float8);
SELECT peek.create_collection('fo', 'fo_row');
SELECT peek.set_retention('fo', NULL);
-- 0: two copies of a huge row and its negation, a huge sum in range
SELECT peek.write('fo', ARRAY[(1, 1e308), (1, 1e308), (1, -1e308),
                              (2, 1.5e308), (2, 1.5e308), (2, -1.5e308), (2, -1e308)]::fo_row[]);
SELECT peek.create_view('fo_g', $$SELECT g, sum(x) AS sx, avg(x) AS ax, count(*) AS n
    FROM peek.persist_peek(NULL::fo_row, 'fo') GROUP BY g$$);
SELECT peek.create_view('fo_all', $$SELECT sum(x) AS sx FROM peek.persist_peek(NULL::fo_row, 'fo')$$);
-- 1: a huge row swapped for its negation in group 1, another huge row in
-- group 2: the partial sums pass the range in some orders, the sums do not
SELECT peek.write('fo', ARRAY[(1, -1e308), (2, 1e308)]::fo_row[], ARRAY[(1, 1e308)]::fo_row[]);
SELECT wait_for($$SELECT bool_and(upper = 2) FROM peek.views WHERE name LIKE 'fo\_%'$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'fo\_%' ORDER BY name;
SELECT view_mismatches($$SELECT * FROM peek.persist_peek(NULL::fo_g, 'fo_g', as_of => @T@)$$,
    $$SELECT g, sum(x::numeric)::float8, sum(x::numeric)::float8 / count(x), count(*)
        FROM peek.persist_peek(NULL::fo_row, 'fo', as_of => @T@) GROUP BY g$$, 0, 1) AS fo_g,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::fo_all, 'fo_all', as_of => @T@)$$,
    $$SELECT sum(x::numeric)::float8 FROM peek.persist_peek(NULL::fo_row, 'fo', as_of => @T@)$$,
    0, 1) AS fo_all;
SELECT t, v.* FROM generate_series(0, 1) t,
       LATERAL peek.persist_peek(NULL::fo_g, 'fo_g', as_of => t) v ORDER BY t, g;
SELECT t, v.* FROM generate_series(0, 1) t,
       LATERAL peek.persist_peek(NULL::fo_all, 'fo_all', as_of => t) v ORDER BY t;

-- 2: a group's sum truly beyond the range fails the view, as PostgreSQL's
-- does; the sum of all rows, 1.5e308, is not
SELECT peek.write('fo', ARRAY[(3, 1e308), (3, 1e308), (4, -1e308)]::fo_row[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'fo_g'$$);
SELECT wait_for($$SELECT upper = 3 FROM peek.views WHERE name = 'fo_all'$$);
SELECT * FROM fo_all;
SELECT name, state, failure FROM peek.views WHERE name LIKE 'fo\_%' ORDER BY name;

SELECT peek.drop_view('fo_g'), peek.drop_view('fo_all');
SELECT peek.drop_collection('fo');
DROP TYPE fo_row;
