-- Linear aggregates kept per group (src/dataflow/accums.c): count(*),
-- count(x), sum and avg of integers, sum of money, sum and avg of
-- interval, FILTER, HAVING and expressions over them, each group's row
-- formed from its states, not from a run over its rows.  Checked against
-- PostgreSQL's evaluation of the query at every time at the edges: NULLs
-- (count(x), a sum of NULLs only is NULL), a group whose count reaches 0
-- (it disappears; the whole input's row stays, with count 0 and NULL
-- sums), the last row deleted, rows moving between groups, the same row
-- twice, a runtime restart (the states computed again from the rows), and
-- an overflow that fails the view alone (55000); then the aggregates
-- whose states are internal (bigint, numeric, booleans).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE lrow AS (g int, x int, m money, d interval, k smallint);
SELECT peek.create_collection('lrows', 'lrow');
SELECT peek.write('lrows', ARRAY[(1, 10, 1, '1 day', 1), (1, NULL, NULL, NULL, 2),
                                 (2, 5, 2, '2 hours', 3), (3, NULL, NULL, NULL, NULL)]::lrow[]);

SELECT peek.create_view('lby', $$
    SELECT g, count(*) AS n, count(x) AS nx, sum(x) AS sx, avg(x) AS ax,
           sum(m) AS sm, sum(d) AS sd, avg(d) AS ad, sum(k) AS sk, avg(k) AS ak,
           count(*) FILTER (WHERE x > 6) AS big, sum(x) * 2 + count(*) AS expr
      FROM peek.persist_peek(NULL::lrow, 'lrows') GROUP BY g$$);
SELECT peek.create_view('lall', $$
    SELECT count(*) AS n, count(x) AS nx, sum(x) AS sx, avg(x) AS ax, sum(m) AS sm,
           sum(d) AS sd FROM peek.persist_peek(NULL::lrow, 'lrows')$$);
SELECT peek.create_view('lhaving', $$
    SELECT g % 2 AS parity, sum(x) AS sx FROM peek.persist_peek(NULL::lrow, 'lrows')
     WHERE g > 0 GROUP BY g % 2 HAVING count(x) > 1 AND sum(x) < 200$$);
SELECT peek.create_view('lallhaving', $$
    SELECT count(*) AS n FROM peek.persist_peek(NULL::lrow, 'lrows') HAVING count(*) > 2$$);
-- beside them a view that runs its query (the min of numerics is not
-- linear: 2.5 and 2.50 are equal): the same answers
SELECT peek.create_view('lrerun', $$
    SELECT g, count(*) AS n, sum(x) AS sx, min(x::numeric) AS mx
      FROM peek.persist_peek(NULL::lrow, 'lrows') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT * FROM lby ORDER BY g;
SELECT * FROM lall;

-- 1: the same row twice; 2: a row moves from group 1 to group 2; 3: the
-- only non-NULL x of group 2 deleted (its sums become NULL, its count(x)
-- 0); 4: group 3's last row deleted (it disappears); 5: the same row
-- deleted once of its two copies; 6: every row deleted (the whole
-- input's row: 0 and NULLs); 7: rows back
SELECT peek.write('lrows', ARRAY[(4, 7, 3, '1 minute', 4), (4, 7, 3, '1 minute', 4)]::lrow[]);
SELECT peek.write('lrows', ARRAY[(2, 10, 1, '1 day', 1)]::lrow[], ARRAY[(1, 10, 1, '1 day', 1)]::lrow[]);
SELECT peek.write('lrows', ARRAY[(2, NULL, 2, NULL, 3)]::lrow[],
                  ARRAY[(2, 5, 2, '2 hours', 3), (2, 10, 1, '1 day', 1)]::lrow[]);
SELECT peek.write('lrows', '{}'::lrow[], ARRAY[(3, NULL, NULL, NULL, NULL)]::lrow[]);
SELECT peek.write('lrows', '{}'::lrow[], ARRAY[(4, 7, 3, '1 minute', 4)]::lrow[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 6$$);
SELECT * FROM lby ORDER BY g;
SELECT peek.write('lrows', '{}'::lrow[],
                  ARRAY[(1, NULL, NULL, NULL, 2), (2, NULL, 2, NULL, 3), (4, 7, 3, '1 minute', 4)]::lrow[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 7$$);
SELECT count(*) FROM lby;
SELECT * FROM lall;
SELECT * FROM lallhaving;
SELECT peek.write('lrows', ARRAY[(1, 50, 5, '3 days', 5), (3, 60, 6, '4 days', 6),
                                 (3, 61, NULL, '5 days', 7), (5, 1, 1, '1 second', 8)]::lrow[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 8$$);
SELECT * FROM lby ORDER BY g;
SELECT * FROM lhaving;

-- the runtime restarts: the groups are built again from the input, their
-- states computed from their rows, and retract exactly what the view holds
SELECT restart_maintenance();
SELECT peek.write('lrows', ARRAY[(1, 2, 1, '1 hour', 9)]::lrow[], ARRAY[(3, 60, 6, '4 days', 6)]::lrow[]);
SELECT peek.write('lrows', array_agg((i % 7, i, i, i * interval '1 second', i % 100)::lrow),
                  '{}'::lrow[]) FROM generate_series(1, 3000) i;
SELECT peek.write('lrows', '{}'::lrow[], array_agg((i % 7, i, i, i * interval '1 second', i % 100)::lrow))
  FROM generate_series(1, 3000, 2) i;
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE upper = 11$$);
SELECT * FROM lby ORDER BY g;

-- every view at every time equals its query over the input at that time
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''lrows''::text', '''lrows''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;
SELECT kind FROM peek.dataflow_operators WHERE view = 'lby' ORDER BY operator;

-- an overflow in an expression over the states, or in a state itself,
-- fails that view alone (55000), as when the query runs over the rows
SELECT peek.create_view('lnarrow', $$
    SELECT g, sum(k)::smallint AS s FROM peek.persist_peek(NULL::lrow, 'lrows') GROUP BY g$$);
SELECT peek.create_collection('ldur', 'lrow');
SELECT peek.write('ldur', ARRAY[(6, 0, 0, '2000000000 days', 0)]::lrow[]);
SELECT peek.create_view('ldays', $$
    SELECT g, sum(d) AS s FROM peek.persist_peek(NULL::lrow, 'ldur') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND upper = 11$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'ldays'$$);
SELECT * FROM ldays;
SELECT peek.write('lrows', ARRAY[(1, 0, 0, NULL, 32000)]::lrow[]);
SELECT peek.write('ldur', ARRAY[(6, 0, 0, '1000000000 days', 0)]::lrow[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'failed'$$);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND upper = 12$$);
SELECT name, state, failure FROM peek.views WHERE state <> 'ready' ORDER BY name;
SELECT try($$SELECT * FROM lnarrow$$);
SELECT * FROM lby WHERE g IN (1, 6) ORDER BY g;

-- internal states (bigint and numeric sums and averages, bool_and,
-- bool_or, every): a sum past bigint's range, a numeric's largest scale
-- leaving (the inverse transition cannot: the group's states computed
-- again from its rows), a group emptied and back, a runtime restart, and
-- enough groups dropped that the states' memory is reset (every group's
-- states computed again from its rows when next touched)
CREATE TYPE nrow AS (g int, n numeric, b bigint);
SELECT peek.create_collection('nrows', 'nrow');
SELECT peek.write('nrows', ARRAY[(1, 1.5, 9000000000000000000), (1, 2.25, 9000000000000000000),
                                 (1, NULL, NULL), (2, 3, -1)]::nrow[]);
SELECT peek.create_view('nsums', $$
    SELECT g, sum(n) AS sn, avg(n) AS an, sum(b) AS sb, avg(b) AS ab, count(n) AS cn,
           bool_and(n > 2) AS alln, bool_or(b < 0) AS anyneg
      FROM peek.persist_peek(NULL::nrow, 'nrows') GROUP BY g$$);
SELECT peek.create_view('nall', $$
    SELECT sum(n) AS sn, sum(b) AS sb, every(b > 0) AS allpos
      FROM peek.persist_peek(NULL::nrow, 'nrows')$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n%' AND state = 'ready' AND upper = 1$$);
SELECT * FROM nsums ORDER BY g;
SELECT peek.write('nrows', ARRAY[(1, 4.0, 1)]::nrow[], ARRAY[(1, 2.25, 9000000000000000000)]::nrow[]);
SELECT peek.write('nrows', '{}'::nrow[], ARRAY[(2, 3, -1)]::nrow[]);
SELECT peek.write('nrows', ARRAY[(2, 0.125, 5), (2, 0.125, 5)]::nrow[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n%' AND upper = 4$$);
SELECT * FROM nsums ORDER BY g;
SELECT * FROM nall;
SELECT restart_maintenance();
SELECT peek.write('nrows', ARRAY[(1, 1.75, 2)]::nrow[], ARRAY[(1, 1.5, 9000000000000000000)]::nrow[]);
SELECT peek.write('nrows', array_agg((i, i / 8.0, i)::nrow), '{}'::nrow[]) FROM generate_series(10, 6009) i;
SELECT peek.write('nrows', '{}'::nrow[], array_agg((i, i / 8.0, i)::nrow)) FROM generate_series(10, 6009) i;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n%' AND upper = 7$$);
SELECT peek.write('nrows', ARRAY[(1, 7, 7), (3, 1.0, -3)]::nrow[], ARRAY[(2, 0.125, 5)]::nrow[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n%' AND upper = 8$$);
SELECT * FROM peek.persist_peek(NULL::nsums, 'nsums', as_of => 7) ORDER BY g;
SELECT * FROM peek.persist_peek(NULL::nall, 'nall', as_of => 7);
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''nrows''::text', '''nrows''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views WHERE name LIKE 'n%' ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE lrow;
DROP TYPE nrow;
