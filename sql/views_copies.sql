-- Rows with huge multiplicities (peek.append's diff) under grouped views.
-- Linear aggregates with a combine function (count(*), count(x), sum and
-- avg of int, bigint and numeric) take a row's n copies at once, by
-- doubling a state through the combine function, and a retraction of many
-- copies computes the group's states again from its rows: each view equals
-- its query over the input at every time, for 10^6 and 10^12 copies
-- (before: one transition per copy, 10^12 ran until the round's timeout
-- failed the view).  min and max of integers keep their value, which n
-- copies of a row change as one does, and a retraction of many copies
-- of any other value changes nothing.  Paths that take copies one by one
-- (the query over a group's rows, here for the min of numerics, an
-- aggregate without a combine function, here bool_and) fail the view at
-- once with 55000 past 10^6 copies of a row.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE cprow AS (g int, x int, b bigint, n numeric);
SELECT peek.create_collection('cps', 'cprow');
-- each append's rows with their diff, to evaluate the queries over
-- multiplicities (a query over 10^12 copies cannot run)
CREATE TABLE cp_truth (t bigint, g int, x int, b bigint, n numeric, m bigint);
CREATE FUNCTION cp_append(at bigint, m bigint, rows cprow[]) RETURNS void LANGUAGE sql AS $$
    SELECT peek.append('cps', rows, at, m);
    INSERT INTO cp_truth SELECT at, r.g, r.x, r.b, r.n, m FROM unnest(rows) r;
$$;
SELECT cp_append(0, 1, ARRAY[(1, 10, 100, 1.5)]::cprow[]);
SELECT cp_append(0, 3, ARRAY[(2, NULL, 7, 2.25)]::cprow[]);
SELECT peek.advance('cps', 1);

SELECT peek.create_view('cp_lin', $$
    SELECT g, count(*) AS c, count(x) AS cx, sum(x) AS sx, sum(b) AS sb, sum(n) AS sn,
           avg(x) AS ax, avg(b) AS ab, avg(n) AS an
      FROM peek.persist_peek(NULL::cprow, 'cps') GROUP BY g$$);
SELECT peek.create_view('cp_all', $$
    SELECT count(*) AS c, count(b) AS cb, sum(x) AS sx, sum(b) AS sb, avg(n) AS an
      FROM peek.persist_peek(NULL::cprow, 'cps')$$);
SELECT peek.create_view('cp_min', $$
    SELECT g, min(x) AS mx FROM peek.persist_peek(NULL::cprow, 'cps') GROUP BY g$$);
SELECT peek.create_view('cp_nmin', $$
    SELECT g, min(n) AS mn FROM peek.persist_peek(NULL::cprow, 'cps') GROUP BY g$$);
SELECT peek.create_view('cp_bool', $$
    SELECT g, bool_and(x > 0) AS pos FROM peek.persist_peek(NULL::cprow, 'cps') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND upper = 1$$);

-- 10^6 copies (a row's count reaches 10^6 exactly: the bound of the paths
-- that take copies one by one)
SELECT cp_append(1, 999999, ARRAY[(1, 10, 100, 1.5)]::cprow[]);
SELECT cp_append(1, 1000000, ARRAY[(2, 5, NULL, NULL)]::cprow[]);
SELECT peek.advance('cps', 2);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 2$$);
SELECT * FROM cp_lin ORDER BY g;
SELECT * FROM cp_min ORDER BY g;
SELECT * FROM cp_nmin ORDER BY g;
SELECT * FROM cp_bool ORDER BY g;
-- every view equals its query over the input's rows (10^6 of them)
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''cps''::text', '''cps''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;

-- 10^12 copies: the linear views and the min of integers take them at
-- once; the min of numerics and bool_and, which would take them one by
-- one, fail at once (the round's timeout is a minute)
SELECT cp_append(2, 1000000000000, ARRAY[(1, 7, 1099511627776, 0.125), (3, -4, -9, -1.75)]::cprow[]);
SELECT peek.advance('cps', 3);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name IN ('cp_lin', 'cp_all', 'cp_min') AND upper = 3$$, 20);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name IN ('cp_nmin', 'cp_bool') AND state = 'failed'$$, 20);
SELECT name, state, failure FROM peek.views ORDER BY name;
SELECT * FROM cp_min ORDER BY g;
SELECT peek.drop_view('cp_nmin');
SELECT peek.drop_view('cp_bool');
SELECT * FROM cp_lin ORDER BY g;
SELECT * FROM cp_all;
-- a view created now hydrates over the 10^12 copies (not in one run of
-- its query: by its rounds, which take them at once)
SELECT peek.create_view('cp_late', $$
    SELECT g, count(*) AS c, sum(b) AS sb, avg(x) AS ax, avg(n) AS an
      FROM peek.persist_peek(NULL::cprow, 'cps') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 3 FROM peek.views WHERE name = 'cp_late'$$, 20);

-- the runtime restarts: the groups are built again from the input, their
-- states computed from their rows (10^12 copies at once)
SELECT pid AS maintenance_pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo') \gset
SELECT pg_terminate_backend(:maintenance_pid);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.runtimes
                   WHERE role IN ('maintenance', 'solo') AND state = 'running' AND pid <> $$ || :maintenance_pid);

-- retractions: 10^6 copies of a row, all but one of 10^12, then all of
-- them (the states computed again from the group's rows; group 1's min,
-- 7, is taken out: 10 again)
SELECT cp_append(3, -999999, ARRAY[(1, 10, 100, 1.5)]::cprow[]);
SELECT cp_append(3, -999999999999, ARRAY[(3, -4, -9, -1.75)]::cprow[]);
SELECT peek.advance('cps', 4);
SELECT cp_append(4, -1000000000000, ARRAY[(1, 7, 1099511627776, 0.125)]::cprow[]);
SELECT cp_append(4, -3, ARRAY[(2, NULL, 7, 2.25)]::cprow[]);
SELECT cp_append(4, 2000000000000, ARRAY[(2, 3, 3, 0.5)]::cprow[]);
SELECT peek.advance('cps', 5);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE upper = 5$$, 20);
SELECT * FROM cp_lin ORDER BY g;
SELECT * FROM cp_min ORDER BY g;
SELECT * FROM cp_late ORDER BY g;

-- every view equals its query at every time, evaluated over the rows'
-- multiplicities
CREATE FUNCTION cp_rows(at bigint) RETURNS TABLE (g int, x int, b bigint, n numeric, m numeric)
LANGUAGE sql AS $$
    SELECT g, x, b, n, sum(m) FROM cp_truth WHERE t <= at GROUP BY g, x, b, n HAVING sum(m) > 0
$$;
SELECT view_mismatches($$SELECT * FROM peek.persist_peek(NULL::cp_lin, 'cp_lin', as_of => @T@)$$,
    $$SELECT g, sum(m)::bigint, coalesce(sum(m) FILTER (WHERE x IS NOT NULL), 0)::bigint,
             sum(x * m)::bigint, sum(b * m), sum(n * m),
             sum(x * m) / sum(m) FILTER (WHERE x IS NOT NULL),
             sum(b * m) / sum(m) FILTER (WHERE b IS NOT NULL),
             sum(n * m) / sum(m) FILTER (WHERE n IS NOT NULL)
        FROM cp_rows(@T@) GROUP BY g$$, 0, 4) AS cp_lin_bad,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::cp_all, 'cp_all', as_of => @T@)$$,
    $$SELECT sum(m)::bigint, coalesce(sum(m) FILTER (WHERE b IS NOT NULL), 0)::bigint,
             sum(x * m)::bigint, sum(b * m), sum(n * m) / sum(m) FILTER (WHERE n IS NOT NULL)
        FROM cp_rows(@T@)$$, 0, 4) AS cp_all_bad,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::cp_late, 'cp_late', as_of => @T@)$$,
    $$SELECT g, sum(m)::bigint, sum(b * m),
             sum(x * m) / sum(m) FILTER (WHERE x IS NOT NULL),
             sum(n * m) / sum(m) FILTER (WHERE n IS NOT NULL)
        FROM cp_rows(@T@) GROUP BY g$$, 2, 4) AS cp_late_bad,
       view_mismatches($$SELECT * FROM peek.persist_peek(NULL::cp_min, 'cp_min', as_of => @T@)$$,
    $$SELECT g, min(x) FROM cp_rows(@T@) GROUP BY g$$, 0, 4) AS cp_min_bad;
-- the oracle's own check: at time 1, over the 10^6 rows themselves
SELECT view_mismatches($$SELECT g, sum(m)::bigint, sum(x * m)::bigint, sum(n * m) / sum(m) FILTER (WHERE n IS NOT NULL)
                           FROM cp_rows(@T@) GROUP BY g$$,
    $$SELECT g, count(*), sum(x), avg(n) FROM peek.persist_peek(NULL::cprow, 'cps', as_of => @T@) GROUP BY g$$,
    0, 1) AS truth_bad;

SELECT peek.drop_view('cp_lin');
SELECT peek.drop_view('cp_all');
SELECT peek.drop_view('cp_late');
SELECT peek.drop_view('cp_min');
SELECT peek.drop_collection('cps');
DROP FUNCTION cp_rows(bigint);
DROP FUNCTION cp_append(bigint, bigint, cprow[]);
DROP TABLE cp_truth;
DROP TYPE cprow;
