-- Sums and averages of floats in maintained views.  PostgreSQL adds a
-- float sum's rows in the order they come, so its rounding depends on that
-- order (1e17 + 1 - 1e17 is 0, 1e17 - 1e17 + 1 is 1), and a view's rounds
-- see a group's rows in another order than a query over its inputs does.
-- A view computes them exactly instead: the finite values' exact sum
-- rounded once, Infinity, -Infinity and NaN counted apart (NaN with a NaN
-- or both infinities, else the infinity), an average that sum over the
-- count.  So at every time the view equals its query over its inputs with
-- the sums taken exactly: here over numeric, exact for these values (of
-- few digits, exact as float4 and float8), rounded once to the float.
-- Retracting a special value, huge values that cancel, a group that
-- empties and fills again, many copies of a row, with and without GROUP
-- BY, in HAVING, after a restart.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- PostgreSQL's own float sums depend on the order of the rows
SELECT sum(x) AS in_this_order, sum(x ORDER BY abs(x) DESC) AS largest_first
  FROM (VALUES (1e17::float8), (1), (-1e17)) v(x);

CREATE TYPE fs_row AS (g int, x float8, y float4);
SELECT peek.create_collection('fs', 'fs_row');
SELECT peek.set_retention('fs', NULL);
SELECT peek.write('fs', ARRAY[(1, 1e17, 1e10), (1, 1, 0.25), (1, -1e17, -1e10)]::fs_row[]);
SELECT peek.create_view('fs_g', $$SELECT g, sum(x) AS sx, avg(x) AS ax, sum(y) AS sy, avg(y) AS ay, count(*) AS n
    FROM peek.persist_peek(NULL::fs_row, 'fs') GROUP BY g$$);
SELECT peek.create_view('fs_all', $$SELECT sum(x) AS sx, avg(y) AS ay FROM peek.persist_peek(NULL::fs_row, 'fs')$$);
SELECT peek.create_view('fs_having', $$SELECT g FROM peek.persist_peek(NULL::fs_row, 'fs')
    GROUP BY g HAVING sum(x) > 0.5$$);
-- what the catalog keeps: the exact aggregates
SELECT name, query FROM peek.views WHERE name = 'fs_all';

-- 1: specials in groups 2 and 3
SELECT peek.write('fs', ARRAY[(2, 'Infinity', 1), (2, 1, 1), (3, 'NaN', 2), (3, 2, 'NaN')]::fs_row[]);
-- 2: the special values retracted: nothing of them is left behind
SELECT peek.write('fs', '{}', ARRAY[(2, 'Infinity', 1), (3, 'NaN', 2)]::fs_row[]);
-- 3: both infinities: NaN; 4: one of them retracted: the other
SELECT peek.write('fs', ARRAY[(2, '-Infinity', '-Infinity'), (2, 'Infinity', 'Infinity')]::fs_row[]);
SELECT peek.write('fs', '{}', ARRAY[(2, '-Infinity', '-Infinity')]::fs_row[]);
-- 5: group 1 emptied; 6: filled again, the huge values in another order
SELECT peek.write('fs', '{}', ARRAY[(1, 1e17, 1e10), (1, 1, 0.25), (1, -1e17, -1e10)]::fs_row[]);
SELECT peek.write('fs', ARRAY[(1, -1e17, -1e10), (1, 0.5, 0.25), (1, 1e17, 1e10)]::fs_row[]);
-- 7: three copies of a huge row and a small one; 8: one copy taken out,
-- its negation put in twice
SELECT peek.write('fs', ARRAY[(4, 1e17, 1e10), (4, 1e17, 1e10), (4, 1e17, 1e10), (4, 1, 0.25)]::fs_row[]);
SELECT peek.write('fs', ARRAY[(4, -1e17, -1e10), (4, -1e17, -1e10)]::fs_row[],
                  ARRAY[(4, 1e17, 1e10)]::fs_row[]);
SELECT wait_for($$SELECT bool_and(upper = 9) FROM peek.views WHERE name LIKE 'fs\_%'$$);

-- at every time, each view is its query with the sums taken exactly
SELECT view_mismatches($$SELECT * FROM peek.persist_peek(NULL::fs_g, 'fs_g', as_of => @T@)$$,
    $$SELECT g, sum(x::numeric)::float8, sum(x::numeric)::float8 / count(x),
             sum(y::numeric)::float4, sum(y::numeric)::float8 / count(y), count(*)
        FROM peek.persist_peek(NULL::fs_row, 'fs', as_of => @T@) GROUP BY g$$, 0, 8) AS fs_g,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::fs_all, 'fs_all', as_of => @T@)$$,
    $$SELECT sum(x::numeric)::float8, sum(y::numeric)::float8 / count(y)
        FROM peek.persist_peek(NULL::fs_row, 'fs', as_of => @T@)$$, 0, 8) AS fs_all,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::fs_having, 'fs_having', as_of => @T@)$$,
    $$SELECT g FROM peek.persist_peek(NULL::fs_row, 'fs', as_of => @T@)
       GROUP BY g HAVING sum(x::numeric)::float8 > 0.5$$, 0, 8) AS fs_having;
-- what they hold at a few times
SELECT t, v.* FROM generate_series(0, 8, 2) t,
       LATERAL peek.persist_peek(NULL::fs_g, 'fs_g', as_of => t) v ORDER BY t, g;
SELECT t, v.* FROM generate_series(0, 8, 2) t,
       LATERAL peek.persist_peek(NULL::fs_all, 'fs_all', as_of => t) v ORDER BY t;

-- the groups built again after a restart give the same
SELECT restart_maintenance();
SELECT peek.write('fs', ARRAY[(5, 1e17, 1e10), (5, 1, 0.25), (5, -1e17, -1e10)]::fs_row[]);
SELECT wait_for($$SELECT bool_and(upper = 10) FROM peek.views WHERE name LIKE 'fs\_%'$$);
SELECT g, sx, ax, sy, ay, n FROM fs_g ORDER BY g;
SELECT * FROM fs_having ORDER BY g;

-- a float4 sum is rounded once: 1 + 2^-24 + 2^-80 is nearer 1 + 2^-23
-- than 1, though the double nearest it, 1 + 2^-24, is half-way between them
-- (numeric's 15 digits of a float8 would lose 2^-24's last ones here)
SELECT peek.exact_sum4(y)::text, peek.exact_sum4(y) = 1 + 2::float8 ^ -23 AS rounded_once
  FROM (VALUES (1::float8), (2::float8 ^ -24), (2::float8 ^ -80)) v(y);
SELECT peek.exact_sum4(y)::text AS negated
  FROM (VALUES (-1::float8), (-(2::float8 ^ -24)), (-(2::float8 ^ -80))) v(y);
SELECT peek.exact_sum4(y)::text AS a_true_tie_to_even
  FROM (VALUES (1::float8), (2::float8 ^ -24)) v(y);
SELECT peek.write('fs', ARRAY[(7, 0, 1), (7, 0, 2::float8 ^ -24), (7, 0, 2::float8 ^ -80)]::fs_row[]);
SELECT wait_for($$SELECT bool_and(upper = 11) FROM peek.views WHERE name LIKE 'fs\_%'$$);
SELECT sy::text, sy = 1 + 2::float4 ^ -23 AS rounded_once FROM fs_g WHERE g = 7;

-- a sum beyond the float's range fails the view, as PostgreSQL's does
SELECT try($$SELECT sum(x) FROM (VALUES (1e308::float8), (1e308)) v(x)$$);
SELECT peek.write('fs', ARRAY[(6, 1e308, 1), (6, 1e308, 1)]::fs_row[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'fs_g'$$);
-- (not the sum of all rows: group 2's Infinity is in it, as in the sum
-- over numeric, whatever the finite values add up to)
SELECT wait_for($$SELECT upper = 12 FROM peek.views WHERE name = 'fs_all'$$);
SELECT sx FROM fs_all;
SELECT sum(x::numeric)::float8 FROM peek.persist_peek(NULL::fs_row, 'fs');
SELECT name, state, failure FROM peek.views WHERE name LIKE 'fs\_%' ORDER BY name;

SELECT peek.drop_view('fs_g'), peek.drop_view('fs_all'), peek.drop_view('fs_having');
SELECT peek.drop_collection('fs');
DROP TYPE fs_row;
