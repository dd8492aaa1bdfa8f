-- Attacks on rowless stages (src/dataflow/rowless.c): groupings of linear
-- aggregates over a source that keep no rows, their states read again from
-- the source where an inverse transition cannot.  Whole-table and
-- expression-keyed views of count, sum and avg over int2, int4, int8 and
-- numeric (scales 0 to 7, NaN, infinities, values near bigint's limits, the
-- last value of the greatest scale going), bool_and, bool_or and every over
-- NULLs, FILTER, HAVING (a group in and out; the whole table's), a NULL key, a key of numerics
-- (equal but not the same bytes: rows kept), a grouping without aggregates,
-- count(DISTINCT) (not linear: rows kept), rows with copies (no key) in and
-- out many at once, a row in and out in one transaction, savepoints,
-- updates moving rows between groups, groups emptied and back, a restart
-- of the maintenance runtime, TRUNCATE; a view over a rowless view and a
-- join grouped in a later stage.  At every time recorded, each view (its
-- persist peek, and an index's peek of two of them) equals PostgreSQL's
-- evaluation of its query over the sources' persist peeks at that time; an
-- overflow fails its view alone (55000).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE ra_times (src text, t bigint);
CREATE FUNCTION ra_settle() RETURNS boolean LANGUAGE sql
RETURN views_past_wal('ra_src', 'ra_times') AND views_past_wal('rad_src', 'ra_times')
   AND views_past_wal('raj_src', 'ra_times');

CREATE TABLE ra (id int PRIMARY KEY, g int, a numeric, i2 int2, i4 int4, i8 int8, b bool,
                 k text, ts timestamp);
INSERT INTO ra SELECT i, i % 4, round((i % 37) / 7.0, i % 6), (i % 100)::int2, i * 1000,
                      i::int8 * 100000000000, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 7 <> 0 END,
                      'k' || (i % 5), '2026-03-01'::timestamp + i * interval '97 minutes'
  FROM generate_series(1, 600) i;
-- rows with copies (no key)
CREATE TABLE rad (g int, v int, n numeric, b bool);
INSERT INTO rad SELECT i % 3, i % 4, 1.5, i % 2 = 0 FROM generate_series(1, 240) i;
-- a dimension for a join grouped by another column
CREATE TABLE raj (g int PRIMARY KEY, region text);
INSERT INTO raj VALUES (0, 'north'), (1, 'south'), (2, 'north'), (3, 'east');
SET client_min_messages = warning;
SELECT peek.create_source('ra_src', 'ra');
SELECT peek.create_source('rad_src', 'rad');
SELECT peek.create_source('raj_src', 'raj');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections
                   WHERE name IN ('ra_src', 'rad_src', 'raj_src')$$);

SELECT peek.create_view('ra_whole', $$
    SELECT count(*) AS n, count(a) AS na, sum(a) AS sa, avg(a) AS aa, sum(i2) AS s2, avg(i2) AS a2,
           sum(i4) AS s4, avg(i4) AS a4, sum(i8) AS s8, avg(i8) AS a8, bool_and(b) AS ba,
           bool_or(b) AS bo, every(b) AS ev, count(*) FILTER (WHERE b) AS nb,
           sum(a) FILTER (WHERE g = 1) AS sa1, avg(i8) FILTER (WHERE a > 2) AS a8f FROM ra$$);
SELECT peek.create_view('ra_having', $$
    SELECT count(*) AS n, sum(a) AS sa, avg(i2) AS a2 FROM ra HAVING count(*) > 320 AND sum(i2) > 0$$);
SELECT peek.create_view('ra_by', $$
    SELECT g % 2 AS par, count(*) AS n, sum(a) AS sa, avg(a) AS aa, bool_and(b) AS ba,
           bool_or(b) AS bo, sum(i8) AS s8 FROM ra GROUP BY g % 2 HAVING sum(i2) > 100$$);
SELECT peek.create_view('ra_k', $$
    SELECT upper(k) AS k, count(*) AS n, sum(a) AS sa, count(b) AS nb
      FROM ra WHERE g <> 3 GROUP BY upper(k)$$);
SELECT peek.create_view('ra_nullkey', $$
    SELECT nullif(g, 1) AS g, date_trunc('day', ts) IS NULL AS no_day, count(*) AS n,
           avg(a) AS aa, every(b) AS ev FROM ra GROUP BY nullif(g, 1), date_trunc('day', ts) IS NULL$$);
SELECT peek.create_view('ra_day', $$
    SELECT date_trunc('week', ts) AS w, count(*) AS n, count(a) AS na, sum(a) AS sa, avg(i4) AS a4
      FROM ra GROUP BY date_trunc('week', ts)$$);
SELECT peek.create_view('ra_numkey', $$
    SELECT a * 1 AS a, count(*) AS n, sum(i4) AS s4 FROM ra GROUP BY a * 1$$);
SELECT peek.create_view('ra_keys_only', $$SELECT lower(k) AS k FROM ra GROUP BY lower(k)$$);
SELECT peek.create_view('ra_distinct', $$
    SELECT count(DISTINCT g) AS dg, count(*) AS n, sum(DISTINCT i2) AS sd FROM ra$$);
SELECT peek.create_view('ra_copies', $$
    SELECT count(*) AS n, sum(v) AS v, sum(n) AS s, avg(n) AS a, bool_and(b) AS ba FROM rad$$);
SELECT peek.create_view('ra_copies_by', $$
    SELECT g % 2 AS odd, count(*) AS n, sum(v) AS v, avg(n) AS a, bool_or(b) AS bo
      FROM rad GROUP BY g % 2$$);
SELECT peek.create_view('ra_region', $$
    SELECT upper(j.region) AS region, count(*) AS n, sum(r.a) AS sa
      FROM ra r JOIN raj j ON j.g = r.g GROUP BY upper(j.region)$$);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.views WHERE name LIKE 'ra\_%'$$);
-- a view over a rowless view
SELECT peek.create_view('ra_of_by', $$SELECT count(*) AS groups, sum(n) AS n, sum(sa) AS sa FROM ra_by$$);
SELECT peek.create_index('ra_by_par', 'ra_by', ARRAY['par']);
SELECT peek.create_index('ra_k_k', 'ra_k', ARRAY['k']);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.views$$);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.indexes$$);
SELECT ra_settle();

-- the last value of the greatest scale in and out
INSERT INTO ra VALUES (1000, 1, 1.1234567, 1, 1, 1, true, 'k1', '2026-03-02');
SELECT ra_settle();
DELETE FROM ra WHERE id = 1000;
SELECT ra_settle();
-- NaN and infinities in and out, one by one
INSERT INTO ra VALUES (1001, 1, 'NaN', 1, 1, 1, NULL, 'k9', '2026-03-03'),
                      (1002, 2, 'Infinity', 2, 2, 2, false, 'k9', NULL),
                      (1003, 3, '-Infinity', 3, 3, 3, true, 'K9', NULL);
SELECT ra_settle();
DELETE FROM ra WHERE id = 1001;
SELECT ra_settle();
DELETE FROM ra WHERE id = 1002;
SELECT ra_settle();
DELETE FROM ra WHERE id = 1003;
SELECT ra_settle();
-- near bigint's limits
INSERT INTO ra VALUES (1004, 1, 1e100, 32767, 2147483647, 9223372036854775807, true, 'a', '2026-03-04'),
                      (1005, 1, -1e100, 32767, 2147483647, 9223372036854775807, true, 'a', '2026-03-04');
SELECT ra_settle();
UPDATE ra SET i8 = -9223372036854775808 WHERE id = 1005;
SELECT ra_settle();
DELETE FROM ra WHERE id IN (1004, 1005);
SELECT ra_settle();
-- booleans all NULL in a group, then some true
UPDATE ra SET b = NULL WHERE g = 1;
SELECT ra_settle();
UPDATE ra SET b = true WHERE g = 1 AND id % 2 = 0;
SELECT ra_settle();
-- in and out in one transaction; savepoints; a rolled back transaction
BEGIN;
INSERT INTO ra VALUES (2000, 0, 0.00001, 0, 0, 0, false, 'zz', '2026-04-01');
DELETE FROM ra WHERE id = 2000;
COMMIT;
BEGIN;
INSERT INTO ra VALUES (2001, 0, 0.00001, 0, 0, 0, false, 'zz', '2026-04-01');
SAVEPOINT s;
DELETE FROM ra WHERE id = 2001;
ROLLBACK TO s;
UPDATE ra SET a = 5.55555 WHERE id = 2001;
COMMIT;
BEGIN;
DELETE FROM ra WHERE g = 2;
ROLLBACK;
SELECT ra_settle();
UPDATE ra SET a = 5.5555 WHERE id = 2001;
SELECT ra_settle();
-- rows moved between groups (keys and the join's)
UPDATE ra SET g = (g + 1) % 4, k = k || 'x', ts = ts + interval '9 days' WHERE id % 3 = 0;
SELECT ra_settle();
UPDATE raj SET region = 'west' WHERE g = 3;
SELECT ra_settle();
-- HAVING: groups out, then one back
UPDATE ra SET i2 = 0;
SELECT ra_settle();
UPDATE ra SET i2 = 1 WHERE g = 2;
SELECT ra_settle();
-- groups emptied and back
DELETE FROM ra WHERE g = 1 OR g = 3;
SELECT ra_settle();
INSERT INTO ra SELECT i, 1, 1.5, 1, 1, 1, true, 'k1', '2026-03-05' FROM generate_series(3000, 3010) i;
SELECT ra_settle();
-- many copies out at once and in at once (the states read again)
DELETE FROM rad WHERE g = 0 AND v = 0;
SELECT ra_settle();
INSERT INTO rad SELECT 1, 3, 2.25, NULL FROM generate_series(1, 40);
SELECT ra_settle();
DELETE FROM rad WHERE v = 3;
SELECT ra_settle();
-- a restart: the groups built again from one read of the sources
SELECT restart_maintenance();
UPDATE ra SET a = a + 0.000001 WHERE id = 3000;
SELECT ra_settle();
UPDATE ra SET a = 1.5 WHERE id = 3000;
INSERT INTO rad VALUES (2, 2, 0.125, true);
SELECT ra_settle();
SELECT * FROM ra_whole;
SELECT * FROM ra_by ORDER BY par;
SELECT * FROM ra_copies;
SELECT name, state FROM peek.views WHERE name LIKE 'ra\_%' AND state <> 'ready';

-- an overflow (a sum of int4 cast to int4) fails its view alone
SELECT peek.create_view('rz_narrow', $$SELECT g % 2 AS par, sum(i4)::int4 AS s4 FROM ra GROUP BY g % 2$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'rz_narrow'$$);
INSERT INTO ra VALUES (4000, 0, 1, 1, 2147483647, 1, true, 'o', '2026-03-06');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'rz_narrow'$$);
SELECT name, state, failure FROM peek.views WHERE state <> 'ready' ORDER BY name;
SELECT try($$SELECT * FROM rz_narrow$$);
SELECT peek.drop_view('rz_narrow');
DELETE FROM ra WHERE id = 4000;
SELECT ra_settle();

-- TRUNCATE, then rows again
TRUNCATE ra;
TRUNCATE rad;
SELECT ra_settle();
SELECT * FROM ra_whole;
SELECT * FROM ra_copies;
SELECT * FROM ra_of_by;
INSERT INTO ra VALUES (1, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                      (2, 2, 2.50, 2, 2, 2, true, 'b', '2026-03-01');
INSERT INTO rad VALUES (0, 1, 1.5, false), (0, 1, 1.5, false);
SELECT ra_settle();
SELECT * FROM ra_whole;
SELECT * FROM ra_nullkey ORDER BY g;

-- at every time recorded, each view is its query over the sources then
SELECT name, bad_times FROM views_bad_times_at('ra\_%', 'ra_src|rad_src|raj_src|ra_by', 'ra_times');
SELECT count(DISTINCT t) > 30 AS many_times FROM ra_times;
-- and the indexes of two of them are the views
SELECT ix, view_mismatches(format('SELECT * FROM peek.index_peek(NULL::%I, %L, as_of => @T@)', v, ix),
                           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v, v),
                           ARRAY(SELECT DISTINCT t FROM ra_times
                                  WHERE t >= (SELECT since FROM peek.indexes WHERE name = ix))) AS bad_times
  FROM (VALUES ('ra_by', 'ra_by_par'), ('ra_k', 'ra_k_k')) x(v, ix);

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION ra_settle();
DROP TABLE ra, rad, raj, ra_times;
