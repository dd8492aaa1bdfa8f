-- Attacks on linear aggregates kept as states (src/dataflow/accums.c) and
-- checked with the oracle: sum, avg and count under FILTER, numeric NaN and
-- +/-Infinity entering and leaving, numeric scales (1.10 and 1.2, 2.5 then
-- 2.500: compared as text too), bigint's largest values, interval, money,
-- smallint, booleans under deletes, HAVING over states, count(DISTINCT)
-- beside count, a whole input emptied and refilled, text keys; a
-- retraction of a row never written, then the row written.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE arow AS (g int, x int, n numeric, b bool, s smallint, i8 bigint, m money, d interval, t text);
SELECT peek.create_collection('arows', 'arow');
SELECT peek.write('arows', ARRAY[(1, 1, 1.10, true, 1, 5, 1, '1 day', 'a'), (1, 2, 1.2, false, 2, 6, 2, '1 hour', 'b'),
                                 (2, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL), (2, 3, 'Infinity', true, 3, 7, 3, '2 days', 'a')]::arow[]);
SELECT peek.create_view('a_filter', $$SELECT g, sum(x) FILTER (WHERE b) AS sx, avg(n) FILTER (WHERE x > 1) AS an,
   count(*) FILTER (WHERE t = 'a') AS ca, sum(i8) FILTER (WHERE NOT b) AS si FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g$$);
SELECT peek.create_view('a_distinct', $$SELECT g, count(DISTINCT x) AS cdx, sum(DISTINCT x) AS sdx, count(x) AS cx FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g$$);
SELECT peek.create_view('a_numeric', $$SELECT g, sum(n) AS sn, avg(n) AS an, count(n) AS cn FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g$$);
SELECT peek.create_view('a_expr', $$SELECT g % 2 AS p, sum(x * 2 + s) AS e, avg(n * 3) AS an3, sum(d * 2) AS sd, avg(d) AS ad, sum(m) AS sm, sum(s) AS ss, avg(s) AS avs, avg(i8) AS a8, bool_and(b) AS ba, bool_or(b) AS bo, every(x > 1) AS ev FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g % 2 HAVING sum(x) IS NOT NULL OR count(*) > 0$$);
SELECT peek.create_view('a_whole', $$SELECT count(*) AS c, sum(x) AS sx, avg(n) AS an, bool_and(b) AS ba, sum(i8) AS s8, avg(d) AS ad FROM peek.persist_peek(NULL::arow, 'arows')$$);
SELECT peek.create_view('a_having', $$SELECT g, count(*) AS c FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g HAVING sum(x) > 2 AND bool_or(b)$$);
SELECT peek.create_view('a_text', $$SELECT t, count(*) AS c, sum(x) AS sx FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY t$$);
SELECT peek.create_view('a_mixed', $$SELECT g, sum(x) AS sx, max(x) AS mx, count(*) AS c FROM peek.persist_peek(NULL::arow, 'arows') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 8 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
-- updates
SELECT peek.write('arows', ARRAY[(2, 4, 2.50, false, 4, 8, 4, '3 days', 'c')]::arow[], ARRAY[(2, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL)]::arow[]);
SELECT peek.write('arows', '{}'::arow[], ARRAY[(2, 3, 'Infinity', true, 3, 7, 3, '2 days', 'a')]::arow[]);
SELECT peek.write('arows', ARRAY[(1, 1, 1.10, true, 1, 5, 1, '1 day', 'a')]::arow[], ARRAY[(1, 1, 1.10, true, 1, 5, 1, '1 day', 'a')]::arow[]);
SELECT peek.write('arows', '{}'::arow[], (SELECT array_agg(r) FROM peek.persist_peek(NULL::arow, 'arows') r));
SELECT peek.write('arows', ARRAY[(3, 5, '-Infinity', false, 5, 9223372036854775807, 5, '-1 day', 'd'), (3, 5, 'Infinity', true, 5, 9223372036854775807, 5, '1 day', 'd'), (1, 7, 0.001, true, 7, -1, 7, '1 sec', 'a')]::arow[]);
SELECT peek.write('arows', ARRAY[(3, 6, 1, true, 6, 1, 6, '1 day', 'd')]::arow[], ARRAY[(3, 5, '-Infinity', false, 5, 9223372036854775807, 5, '-1 day', 'd')]::arow[]);
SELECT peek.write('arows', ARRAY[(1, 2, 1.2, false, 2, 6, 2, '1 hour', 'b'), (1, 2, 1.2, false, 2, 6, 2, '1 hour', 'b'), (2, 9, 2.5, true, 9, 9, 9, '9 min', 'A')]::arow[]);
SELECT peek.write('arows', ARRAY[(2, 9, 2.500, true, 9, 9, 9, '9 min', 'A')]::arow[], ARRAY[(2, 9, 2.5, true, 9, 9, 9, '9 min', 'A')]::arow[]);
SELECT peek.write('arows', '{}'::arow[], ARRAY[(1, 2, 1.2, false, 2, 6, 2, '1 hour', 'b')]::arow[]);
SELECT wait_for($$SELECT count(*) = 8 FROM peek.views WHERE upper = 10$$);
SELECT name, state, failure, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''arows''::text', '''arows''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;
-- the same compared as text (a numeric's scale, an interval's fields)
SELECT name, view_mismatches(
           format('SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v', name, name),
           format('SELECT q::text FROM (%s) q', replace(query, '''arows''::text', '''arows''::text, as_of => @T@')),
           0, upper - 1) AS bad_text_times
  FROM peek.views ORDER BY name;

-- a retraction of a row the group does not hold (a write's delete of a row
-- never written) changes no state, as when the states are computed from
-- the rows after a restart: once the rows are written the view equals its
-- query again (before: the retraction of the group's only row started its
-- states again, and the view kept sum 7 over the row 5)
CREATE TYPE nrow5 AS (g int, x int);
SELECT peek.create_collection('n5', 'nrow5');
SELECT peek.write('n5', ARRAY[(1, 5), (2, 1)]::nrow5[]);
SELECT peek.create_view('n5v', $$SELECT g, sum(x) AS s, count(*) AS c FROM peek.persist_peek(NULL::nrow5, 'n5') GROUP BY g$$);
SELECT peek.create_view('n5all', $$SELECT sum(x) AS s, count(x) AS c FROM peek.persist_peek(NULL::nrow5, 'n5')$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n5%' AND state = 'ready' AND upper = 1$$);
SELECT peek.write('n5', '{}'::nrow5[], ARRAY[(1, 7)]::nrow5[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n5%' AND upper = 2$$);
SELECT restart_maintenance();
SELECT peek.write('n5', '{}'::nrow5[], ARRAY[(1, 8)]::nrow5[]);
SELECT peek.write('n5', ARRAY[(1, 7), (1, 8)]::nrow5[]);
SELECT peek.write('n5', ARRAY[(1, 2)]::nrow5[], ARRAY[(1, 5)]::nrow5[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'n5%' AND upper = 5$$);
SELECT * FROM n5v ORDER BY g;
SELECT * FROM n5all;
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''n5''::text', '''n5''::text, as_of => @T@'), ARRAY[0, 3, 4]) AS bad_times
  FROM peek.views WHERE name LIKE 'n5%' ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE arow;
DROP TYPE nrow5;
