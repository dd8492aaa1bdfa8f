-- A view that hydrates at once (dataflow/hydrate.c) over an input whose
-- contents at the hydration's time hold retractions: rows of a captured
-- table updated and deleted in the transaction that creates the view,
-- before the source's base has them (when the base has them first, the
-- read holds none: either way the same contents).  The retractions'
-- images keep the table tuples' header flags, the rows they retract may
-- not: they are taken out of the rows read by their fields, once each
-- (a table without a key holds a row twice, one copy goes), through
-- WHERE too, and the view hydrates at once (no group kept) to its
-- query's contents at its since and at its upper.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- twenty groups of 100 rows; a table without a key whose rows come twice
CREATE TABLE hr (id int PRIMARY KEY, g int, v int, t text);
INSERT INTO hr SELECT i, i % 20, i, 't' || i % 7 FROM generate_series(1, 2000) i;
CREATE TABLE hrd (g int, v int);
INSERT INTO hrd SELECT i % 5, i FROM generate_series(1, 50) i, generate_series(1, 2);
SET client_min_messages = warning;
SELECT peek.create_source('hr_src', 'hr');
SELECT peek.create_source('hrd_src', 'hrd');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.collections
                   WHERE name IN ('hr_src', 'hrd_src') AND state = 'ready'$$);
SELECT wait_for($$SELECT bool_and(base_time IS NOT NULL) FROM peek.objects
                   WHERE name IN ('hr_src', 'hrd_src')$$);

BEGIN;
UPDATE hr SET v = v + 1 WHERE id % 10 = 1;
DELETE FROM hr WHERE id % 10 = 2;
UPDATE hr SET g = 99 WHERE id = 3;
DELETE FROM hrd WHERE ctid IN (SELECT min(ctid) FROM hrd WHERE v % 2 = 0 GROUP BY v);
SELECT peek.create_view('hr_sum', $$
    SELECT g, count(*) AS n, sum(v) AS s, min(t) AS lo FROM hr GROUP BY g$$);
SELECT peek.create_view('hr_where', $$
    SELECT g, count(*) AS n, max(v) AS hi FROM hr WHERE v % 3 <> 0 GROUP BY g$$);
SELECT peek.create_view('hrd_sum', $$SELECT g, count(*) AS n, sum(v) AS s FROM hrd GROUP BY g$$);
COMMIT;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready'$$);
SELECT wait_for(format($$SELECT bool_and(upper > %s) FROM peek.views$$, wal_time()));

-- each view against its query at its since and its latest time, and
-- whether it kept groups at its hydration (the last operator's state)
SELECT v.name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v.name, v.name),
           regexp_replace(v.query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           ARRAY[v.since, v.upper - 1]) AS mismatches,
       (SELECT bytes > 0 FROM peek.dataflow_operators d
         WHERE d.view = v.name
           AND d.operator = (SELECT max(operator) FROM peek.dataflow_operators e
                              WHERE e.view = v.name)) AS keeps_groups
  FROM peek.views v ORDER BY v.name;
SELECT g, n, s FROM hrd_sum ORDER BY g;
SELECT g, n, s, lo FROM hr_sum WHERE g IN (1, 2, 3, 99) ORDER BY g;

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SET client_min_messages = warning;
SELECT peek.drop_source('hr_src');
SELECT peek.drop_source('hrd_src');
RESET client_min_messages;
DROP TABLE hr, hrd;
