-- Lazy groups of linear aggregates (src/dataflow/arranged.c learn_states):
-- a group whose states the runtime does not know (after a restart) learns
-- them at its first touch as the walk passes its rows, as they were before
-- that touch.  The first touches after a restart retract one of a row's
-- copies (its count at the time still above 0), a row's only copy (its
-- count then 0: not walked), ten of a row's twelve copies (more than the
-- inverse transitions take one by one: the states computed again from all
-- the rows), a row retracted and inserted again at one time, rows that
-- WHERE leaves out, a row of the NULL key, and add a new group; later
-- writes touch the same groups again, and a second restart's first touches
-- empty a group and refill another.  Each view equals its query over
-- persist_peek at every time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE ll AS (k text COLLATE "C", v int, x int);
SELECT peek.create_collection('lls', 'll');
-- groups a to e of 30 rows (x NULL in every third), a row of group a in 3
-- copies, one of group b in 12, and two rows of the NULL key
SELECT peek.write('lls', array_agg((chr(97 + i % 5), i, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::ll)
                         || array_fill(('a', 1000, 1)::ll, ARRAY[3])
                         || array_fill(('b', 2000, 2)::ll, ARRAY[12])
                         || ARRAY[(NULL, 7, 7), (NULL, 8, NULL)]::ll[])
  FROM generate_series(1, 150) i;
SELECT peek.create_view('ll_sum', $$
    SELECT k, count(*) AS n, sum(v) AS s, count(x) AS nx, avg(x) AS ax
      FROM peek.persist_peek(NULL::ll, 'lls') GROUP BY k$$);
SELECT peek.create_view('ll_where', $$
    SELECT k, count(*) AS n, sum(x) AS sx FROM peek.persist_peek(NULL::ll, 'lls')
     WHERE v % 2 = 0 GROUP BY k HAVING count(*) > 2$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT view, kind FROM peek.dataflow_operators WHERE operator = 2 ORDER BY view;

SELECT restart_maintenance();
SELECT peek.write('lls', ARRAY[('d', 3, NULL), ('d', 500, 5), ('e', 11111, 3), ('f', 2, 2)]::ll[],
                  ARRAY[('a', 1000, 1), ('c', 7, 7), ('d', 3, NULL), (NULL, 7, 7), ('e', 9, NULL)]::ll[]
                  || array_fill(('b', 2000, 2)::ll, ARRAY[10]));
SELECT peek.write('lls', ARRAY[('c', 7, 7), ('f', 4, NULL)]::ll[],
                  ARRAY[('a', 1000, 1), ('c', 12, NULL), ('b', 2000, 2), ('b', 2000, 2)]::ll[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM views_bad_times();
SELECT * FROM ll_sum ORDER BY k;
SELECT * FROM ll_where ORDER BY k;

SELECT restart_maintenance();
SELECT peek.write('lls', ARRAY[('e', 20, 20), ('a', 1000, 1)]::ll[],
                  ARRAY[('f', 2, 2), ('f', 4, NULL), (NULL, 8, NULL)]::ll[]);
SELECT peek.write('lls', ARRAY[('f', 6, 6), ('f', 8, 8), ('f', 10, 10)]::ll[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM views_bad_times();
SELECT * FROM ll_sum ORDER BY k;
SELECT * FROM ll_where ORDER BY k;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE ll;
