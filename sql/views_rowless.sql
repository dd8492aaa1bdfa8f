-- Rowless stages (src/dataflow/rowless.c): a grouping of linear aggregates
-- over a source whose rows are not read from a shared arrangement (GROUP BY
-- of nothing, of expressions) keeps no rows, only each group's states, its
-- count of rows and one row for its key columns; its states are computed
-- from one read of the source's contents where they would be from its rows
-- (a build after a restart; an inverse transition that cannot: a numeric
-- sum's when the last value of its greatest scale goes, many copies of a
-- row retracted at once; internal states' memory full).  Whole-table and
-- expression-keyed views of count(*), count(x), sum and avg of int and
-- numeric, bool_and and bool_or, under inserts, updates of the aggregated
-- columns and of the key expression's input, deletes, TRUNCATE, rollbacks
-- and a restart of the maintenance runtime: at every time recorded each
-- view equals its query over the source's persist peek at that time.  The
-- views keep a few kilobytes where their rows would take megabytes
-- (peek.dataflow_operators' state bytes).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE rl_times (src text, t bigint);
CREATE FUNCTION rl_settle() RETURNS boolean LANGUAGE sql
RETURN views_past_wal('rl_src', 'rl_times') AND views_past_wal('rld_src', 'rl_times');

-- orders with a numeric amount of mixed scales, a flag and a timestamp
CREATE TABLE rl (id int PRIMARY KEY, cust text, qty int, amount numeric, ok bool, at timestamp);
INSERT INTO rl SELECT i, CASE i % 3 WHEN 0 THEN 'Ann' WHEN 1 THEN 'ann' ELSE 'Bob' END,
                      i % 17, CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 50) / 4.0 END,
                      i % 11 <> 0, '2026-03-01'::timestamp + i * interval '50 minutes'
  FROM generate_series(1, 1000) i;
-- rows with copies (no key): ten of each
CREATE TABLE rld (g int, v int, n numeric);
INSERT INTO rld SELECT i % 3, i % 4, 1.5 FROM generate_series(1, 120) i;
SET client_min_messages = warning;
SELECT peek.create_source('rl_src', 'rl');
SELECT peek.create_source('rld_src', 'rld');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections WHERE name IN ('rl_src', 'rld_src')$$);

SELECT peek.create_view('rl_whole', $$
    SELECT count(*) AS n, count(amount) AS n_amount, sum(qty) AS qty, sum(amount) AS amount,
           avg(qty) AS avg_qty, avg(amount) AS avg_amount, bool_and(ok) AS all_ok,
           bool_or(qty > 15) AS any_big FROM rl$$);
SELECT peek.create_view('rl_day', $$
    SELECT date_trunc('day', at) AS day, count(*) AS n, count(amount) AS n_amount,
           sum(qty) AS qty, sum(amount) AS amount, avg(amount) AS avg_amount,
           bool_and(ok) AS all_ok, bool_or(ok) AS any_ok
      FROM rl GROUP BY date_trunc('day', at)$$);
SELECT peek.create_view('rl_cust', $$
    SELECT lower(cust) AS cust, count(*) AS n, sum(amount) AS amount, avg(qty) AS avg_qty
      FROM rl WHERE qty > 2 GROUP BY lower(cust) HAVING count(*) > 1$$);
SELECT peek.create_view('rl_copies', $$SELECT count(*) AS n, sum(v) AS v, sum(n) AS s FROM rld$$);
SELECT peek.create_view('rl_copies_by', $$
    SELECT g % 2 AS odd, count(*) AS n, sum(v) AS v, avg(n) AS a FROM rld GROUP BY g % 2$$);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.views WHERE name LIKE 'rl\_%'$$);
SELECT rl_settle();
SELECT * FROM rl_whole;
SELECT * FROM rl_cust ORDER BY cust;

-- inserts; updates of the aggregated columns and of the keys' inputs
INSERT INTO rl SELECT i, 'ANN', i % 13, i / 8.0, true, '2026-03-20'::timestamp + i * interval '1 hour'
  FROM generate_series(1001, 1100) i;
SELECT rl_settle();
UPDATE rl SET qty = qty + 3, amount = amount * 2 WHERE id % 7 = 0;
SELECT rl_settle();
UPDATE rl SET at = at + interval '3 days', cust = upper(cust) WHERE id % 4 = 1;
SELECT rl_settle();
UPDATE rl SET ok = NOT ok WHERE id BETWEEN 100 AND 140;
DELETE FROM rl WHERE id % 9 = 0;
SELECT rl_settle();

-- the last value of the greatest scale goes: numeric's inverse transition
-- answers NULL, the states are read again from the source (whole table,
-- and the day and customer groups it is in)
INSERT INTO rl VALUES (5000, 'bob', 9, 1.0000001, true, '2026-03-02 10:00');
SELECT rl_settle();
SELECT amount, avg_amount FROM rl_whole;
DELETE FROM rl WHERE id = 5000;
SELECT rl_settle();
SELECT amount, avg_amount FROM rl_whole;
-- and again with its update (out and in at one time)
INSERT INTO rl VALUES (5001, 'bob', 9, 2.123456, false, '2026-03-03 10:00');
SELECT rl_settle();
UPDATE rl SET amount = 3 WHERE id = 5001;
SELECT rl_settle();

-- rolled back: nothing changes
BEGIN;
INSERT INTO rl VALUES (6000, 'zed', 1, 99.999, true, '2026-04-01');
UPDATE rl SET amount = amount + 0.001 WHERE id < 300;
DELETE FROM rl WHERE id > 500;
ROLLBACK;
BEGIN;
UPDATE rl SET qty = qty * 2 WHERE id < 100;
SAVEPOINT s;
DELETE FROM rl WHERE id < 200;
ROLLBACK TO s;
COMMIT;
SELECT rl_settle();

-- many copies of a row retracted at once (the states read again) and added
-- at once
DELETE FROM rld WHERE g = 0 AND v = 0;
SELECT rl_settle();
INSERT INTO rld SELECT 1, 3, 2.25 FROM generate_series(1, 40);
SELECT rl_settle();
SELECT * FROM rl_copies;

-- the maintenance runtime restarted: the groups are built from one read
-- of the source, and carry on
SELECT restart_maintenance();
INSERT INTO rl SELECT i, 'Cy', 4, 0.5, true, '2026-03-05'::timestamp + i * interval '1 minute'
  FROM generate_series(7000, 7050) i;
UPDATE rl SET amount = amount + 1.25 WHERE id % 10 = 3;
DELETE FROM rld WHERE g = 2;
SELECT rl_settle();
SELECT * FROM rl_cust ORDER BY cust;

-- TRUNCATE, then rows again
TRUNCATE rl;
TRUNCATE rld;
SELECT rl_settle();
SELECT * FROM rl_whole;
SELECT count(*) FROM rl_day;
SELECT * FROM rl_copies;
INSERT INTO rl VALUES (1, 'Ann', 3, 1.5, true, '2026-03-01 00:10'), (2, 'ann', 4, NULL, false, '2026-03-01 05:00');
INSERT INTO rld VALUES (0, 1, 1.5), (0, 1, 1.5);
SELECT rl_settle();
SELECT * FROM rl_whole;
SELECT * FROM rl_day;

-- many groups emptied: their internal states let go outnumber the groups,
-- and the groups are built again from the source
INSERT INTO rl SELECT i, 'k' || i, 5, i / 3.0, true, '2026-03-01' FROM generate_series(10, 5209) i;
SELECT rl_settle();
DELETE FROM rl WHERE id >= 10;
SELECT rl_settle();
UPDATE rl SET amount = 2.5 WHERE id = 2;
SELECT rl_settle();
SELECT * FROM rl_cust ORDER BY cust;

-- at every time recorded, each view is its query over the sources then
SELECT name, bad_times FROM views_bad_times_at('rl\_%', 'rl_src|rld_src', 'rl_times');
SELECT count(DISTINCT t) > 20 AS many_times FROM rl_times;

-- what the views keep: their groups' states, not the sources' rows
INSERT INTO rl SELECT i, 'x', i % 7, i % 100 / 8.0, true, '2026-03-01'::timestamp + (i % 5) * interval '1 day'
  FROM generate_series(100000, 149999) i;
SELECT rl_settle();
SELECT view, bytes < 256 * 1024 AS small FROM peek.dataflow_operators
 WHERE view IN ('rl_whole', 'rl_day') AND kind = 'reduce' ORDER BY view;
SELECT n, qty FROM rl_whole;
SELECT name, bad_times FROM views_bad_times_at('rl\_whole', 'rl_src|rld_src', 'rl_times');

SELECT peek.drop_view('rl_whole');
SELECT peek.drop_view('rl_day');
SELECT peek.drop_view('rl_cust');
SELECT peek.drop_view('rl_copies');
SELECT peek.drop_view('rl_copies_by');
SET client_min_messages = warning;
SELECT peek.drop_source('rl_src');
SELECT peek.drop_source('rld_src');
RESET client_min_messages;
DROP FUNCTION rl_settle();
DROP TABLE rl, rld, rl_times;
