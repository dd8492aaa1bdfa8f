-- Lazy groups learned between rounds (src/dataflow/learn.c): a grouping of
-- linear aggregates over a shared arrangement starts lazy after its
-- hydration and after a restart, and learns the groups no round touched
-- while the maintenance runtime has nothing else to do, in steps of about
-- 4,096 of its input's rows; peek.dataflow_operators shows it learning
-- until it knows them all (its state then holds every group's; groups
-- of 60 rows, whose states take less memory than their rows).  A min
-- and max over the same arrangement learns nothing (not linear).  Both
-- equal their queries over persist_peek at every time: with updates
-- racing the learning, after it, and the same after a restart.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE ln AS (g int, v int);
SELECT peek.create_collection('lns', 'ln');
-- 1,000 groups of 60 rows: 60,000 rows, several steps
SELECT peek.write('lns', array_agg((i % 1000, i)::ln)) FROM generate_series(1, 60000) i;
SELECT peek.create_view('ln_sum', $$
    SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a FROM peek.persist_peek(NULL::ln, 'lns')
     WHERE v % 7 <> 0 GROUP BY g HAVING count(*) > 1$$);
SELECT peek.create_view('ln_max', $$
    SELECT g, max(v) AS m FROM peek.persist_peek(NULL::ln, 'lns') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);

CREATE VIEW ln_bad AS
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           1, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;
-- learned: not learning, its groups' state past the lazy min and max's
-- (the same arrangement, groups touched by the writes only) by more than
-- 300 bytes a group
CREATE FUNCTION ln_learned() RETURNS boolean LANGUAGE sql
RETURN wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$)
   AND wait_for($$SELECT NOT bool_or(learning) FROM peek.dataflow_operators$$)
   AND (SELECT s.bytes - m.bytes > 1000 * 300
          FROM peek.dataflow_operators s, peek.dataflow_operators m
         WHERE s.view = 'ln_sum' AND m.view = 'ln_max' AND s.operator = 2 AND m.operator = 2);
-- a time each: a row of the hydration's (group j) moved to another group,
-- a row added, and every tenth a group's rows all deleted (emptied) and a
-- new group
CREATE PROCEDURE ln_writes(n int, base int) LANGUAGE plpgsql AS $$
DECLARE j int;
BEGIN
  FOR i IN 1 .. n LOOP
    j := base / 1000 + i;
    PERFORM peek.write('lns', ARRAY[((i * 7) % 1000, base + i), (j, -i)]::ln[],
                       ARRAY[(j, j)]::ln[]);
    IF i % 10 = 0 THEN
      PERFORM peek.write('lns', ARRAY[(base + i, 1), (base + i, 2)]::ln[],
                         ARRAY(SELECT (g, v)::ln FROM peek.persist_peek(NULL::ln, 'lns')
                                WHERE g = 500 + (i * 13) % 400));
    END IF;
    COMMIT;
  END LOOP;
END $$;

-- the first rounds race the learning
CALL ln_writes(60, 100000);
SELECT ln_learned();
SELECT view, operator, kind, learning FROM peek.dataflow_operators ORDER BY view, operator;
SELECT * FROM ln_bad;
-- then every group is known: updates after it
CALL ln_writes(20, 200000);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM ln_bad;
SELECT count(*), sum(n), sum(s) FROM ln_sum;

-- a restart starts lazy: its first round (the writes) learns again
SELECT restart_maintenance();
CALL ln_writes(60, 300000);
SELECT ln_learned();
SELECT * FROM ln_bad;
SELECT count(*), sum(n), sum(s) FROM ln_sum;

DROP FUNCTION ln_learned();
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP PROCEDURE ln_writes(int, int);
DROP TYPE ln;
