-- A grouping of linear aggregates over a shared arrangement whose touched
-- group knows its states reads only the rows its round updates, with
-- their counts before it, and counts the group's rows itself
-- (src/dataflow/arranged.c's partial groups, accums.c, accums_keys.c):
-- rows deleted from groups of 100 (the group stays, its count right), a
-- row updated, a row moving between groups, a group emptied and refilled
-- in one transaction and in later ones, NULL keys, a restart (the groups
-- built again, then partial again), retractions of rows never inserted
-- into a collection, and numeric keys (2.5 and 2.50 are equal: which one
-- the view shows is its first row's, so those groups read all their
-- rows), and a source without a key whose rows come twice (a source's
-- rows never count below zero: their diffs are their changes, no row's
-- count read).  Each view equals PostgreSQL's query over its input's persist
-- peek at every time recorded.  An inverse transition that cannot (a
-- numeric sum's largest scale leaving) reads the whole group again.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE FUNCTION lp_wal() RETURNS bigint LANGUAGE sql RETURN wal_time();
CREATE TABLE lp_times (src text, t bigint);
-- each view of the source past the WAL written so far, that time recorded
CREATE FUNCTION lp_settle(src text DEFAULT 'lpt_src') RETURNS boolean LANGUAGE sql
RETURN views_past_wal(src, 'lp_times');

-- five groups of 100 rows, and ten rows with a NULL key
CREATE TABLE lpt (id int PRIMARY KEY, g int, v int);
INSERT INTO lpt SELECT i, i % 5, i FROM generate_series(1, 500) i;
INSERT INTO lpt SELECT i, NULL, i FROM generate_series(501, 510) i;
-- numeric keys: 2.5 (id 1, the first row by image) and 2.50 in one group
CREATE TABLE lpn (id int PRIMARY KEY, k numeric, v int);
INSERT INTO lpn VALUES (1, 2.5, 1), (2, 2.50, 2), (3, 2.500, 3), (4, 7, 4);
SET client_min_messages = warning;
SELECT peek.create_source('lpt_src', 'lpt');
SELECT peek.create_source('lpn_src', 'lpn');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.collections
                   WHERE name IN ('lpt_src', 'lpn_src') AND state = 'ready'$$);

SELECT peek.create_view('lpsum', $$
    SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a, count(v) FILTER (WHERE v > 250) AS big
      FROM lpt GROUP BY g$$);
-- the select list and HAVING read the key, in expressions
SELECT peek.create_view('lphaving', $$
    SELECT g * 10 AS g10, sum(v) AS s FROM lpt WHERE v % 2 = 0
     GROUP BY g HAVING count(*) > 1 AND g IS DISTINCT FROM 3$$);
SELECT peek.create_view('lpnum', $$SELECT k, count(*) AS n, sum(v) AS s FROM lpn GROUP BY k$$);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready'$$);
SELECT lp_settle();
SELECT * FROM lpsum ORDER BY g;

-- two rows deleted from group 1: it stays, with 98
DELETE FROM lpt WHERE id IN (1, 6);
SELECT lp_settle();
SELECT * FROM lpsum WHERE g = 1;
-- a row updated; a row moving from group 3 to group 4
UPDATE lpt SET v = v + 1000 WHERE id = 2;
UPDATE lpt SET g = 4 WHERE id = 3;
SELECT lp_settle();
SELECT * FROM lpsum WHERE g IN (2, 3, 4) ORDER BY g;
-- group 0 emptied and refilled in one transaction
BEGIN;
DELETE FROM lpt WHERE g = 0;
INSERT INTO lpt VALUES (1000, 0, 7);
COMMIT;
SELECT lp_settle();
SELECT * FROM lpsum WHERE g = 0;
-- emptied (it disappears), then refilled in a later transaction
DELETE FROM lpt WHERE g = 0;
SELECT lp_settle();
SELECT count(*) FROM lpsum WHERE g = 0;
INSERT INTO lpt VALUES (1001, 0, 8), (1002, 0, 9);
SELECT lp_settle();
SELECT * FROM lpsum WHERE g = 0;
-- the same row deleted and inserted again in one transaction
BEGIN;
DELETE FROM lpt WHERE id = 1001;
INSERT INTO lpt VALUES (1001, 0, 8);
COMMIT;
-- the NULL key's rows: all but one deleted, then that one updated
DELETE FROM lpt WHERE g IS NULL AND id > 501;
SELECT lp_settle();
UPDATE lpt SET v = 5 WHERE id = 501;
SELECT lp_settle();
SELECT * FROM lpsum WHERE g IS NULL OR g = 0 ORDER BY g;
SELECT * FROM lphaving ORDER BY g10;

-- numeric keys: an update of the row with 2.50, a delete of 2.500; the
-- group shows 2.5, its first row's, until that row is gone
UPDATE lpn SET v = 20 WHERE id = 2;
DELETE FROM lpn WHERE id = 3;
SELECT wait_for(format($q$SELECT upper > %s FROM peek.views WHERE name = 'lpnum'$q$, lp_wal()));
SELECT k::text, n, s FROM lpnum ORDER BY k;
DELETE FROM lpn WHERE id = 1;
SELECT wait_for(format($q$SELECT upper > %s FROM peek.views WHERE name = 'lpnum'$q$, lp_wal()));
SELECT k::text, n, s FROM lpnum ORDER BY k;

-- a restart builds the groups again; later rounds read partial groups again
SELECT restart_maintenance();
UPDATE lpt SET v = v + 1 WHERE id IN (4, 9);
SELECT lp_settle();
DELETE FROM lpt WHERE id = 14;
SELECT lp_settle();
UPDATE lpt SET g = 2 WHERE id IN (19, 24);
SELECT lp_settle();
SELECT * FROM lpsum WHERE g IN (2, 4) ORDER BY g;

-- every view at every recorded time equals its query over the input then
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           (SELECT array_agg(t ORDER BY t) FROM lp_times WHERE src = 'lpt_src')) AS bad_times
  FROM peek.views WHERE inputs @> ARRAY['lpt_src'] ORDER BY name;

-- a source without a key: rows twice and three times in a group, one
-- copy deleted (by ctid), rows updated to themselves, copies inserted and
-- one deleted in one transaction, a group's copies all deleted but one,
-- rolled back writes, a TRUNCATE and the rows written again
CREATE TABLE lpd (g int, v int);
INSERT INTO lpd SELECT i % 3, i % 4 FROM generate_series(1, 60) i;
INSERT INTO lpd SELECT g, v FROM lpd WHERE v = 1;
SET client_min_messages = warning;
SELECT peek.create_source('lpd_src', 'lpd');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'lpd_src'$$);
SELECT peek.create_view('lpdsum', $$
    SELECT g, count(*) AS n, sum(v) AS s, avg(v) AS a, bool_and(v > 0) AS pos FROM lpd GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'lpdsum'$$);
SELECT lp_settle('lpd_src');
DELETE FROM lpd WHERE ctid = (SELECT min(ctid) FROM lpd WHERE g = 1 AND v = 1);
SELECT lp_settle('lpd_src');
UPDATE lpd SET v = v WHERE g = 2 AND v IN (0, 1);
SELECT lp_settle('lpd_src');
BEGIN;
INSERT INTO lpd VALUES (0, 1), (0, 1);
DELETE FROM lpd WHERE ctid = (SELECT max(ctid) FROM lpd WHERE g = 0 AND v = 1);
UPDATE lpd SET v = 3 WHERE g = 0 AND v = 0;
COMMIT;
SELECT lp_settle('lpd_src');
DELETE FROM lpd WHERE g = 1 AND ctid <> (SELECT min(ctid) FROM lpd WHERE g = 1 AND v = 2);
SELECT lp_settle('lpd_src');
BEGIN;
DELETE FROM lpd WHERE g = 2;
ROLLBACK;
BEGIN;
INSERT INTO lpd VALUES (1, 2);
SAVEPOINT s;
DELETE FROM lpd WHERE g = 1;
ROLLBACK TO s;
COMMIT;
SELECT lp_settle('lpd_src');
SELECT * FROM lpdsum ORDER BY g;
TRUNCATE lpd;
SELECT lp_settle('lpd_src');
SELECT count(*) FROM lpdsum;
INSERT INTO lpd VALUES (5, 1), (5, 1), (5, 0);
SELECT lp_settle('lpd_src');
UPDATE lpd SET v = 2 WHERE ctid = (SELECT min(ctid) FROM lpd WHERE v = 1);
SELECT lp_settle('lpd_src');
SELECT * FROM lpdsum ORDER BY g;
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           (SELECT array_agg(t ORDER BY t) FROM lp_times WHERE src = 'lpd_src')) AS bad_times
  FROM peek.views WHERE name = 'lpdsum';

-- a collection: retractions of rows never written, in a group of 100
-- and in a group of none, then those rows written
CREATE TYPE lprow AS (g int, v int);
SELECT peek.create_collection('lpc', 'lprow');
SELECT peek.write('lpc', array_agg((i % 2, i)::lprow)) FROM generate_series(1, 200) i;
SELECT peek.create_view('lpcsum', $$
    SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::lprow, 'lpc') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'lpcsum'$$);
SELECT peek.write('lpc', '{}'::lprow[], ARRAY[(1, 999), (7, 1)]::lprow[]);
SELECT peek.write('lpc', ARRAY[(1, 3)]::lprow[], ARRAY[(1, 1)]::lprow[]);
SELECT peek.write('lpc', ARRAY[(1, 999), (7, 1)]::lprow[]);
SELECT peek.write('lpc', ARRAY[(1, 999), (7, 1)]::lprow[], ARRAY[(1, 5)]::lprow[]);
SELECT peek.write('lpc', '{}'::lprow[], ARRAY[(7, 1), (7, 1)]::lprow[]);
SELECT peek.write('lpc', ARRAY[(7, 2)]::lprow[]);
SELECT wait_for($$SELECT upper = 7 FROM peek.views WHERE name = 'lpcsum'$$);
SELECT * FROM lpcsum ORDER BY g;
-- PostgreSQL's query over the input where no row counts below zero (a
-- persist peek refuses those times); at the others, the view as worked out:
-- a row retracted more than inserted holds none
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'), ARRAY[0, 3, 4]) AS bad_times
  FROM peek.views WHERE name = 'lpcsum';
SELECT t, g, n, s FROM unnest(ARRAY[1, 2, 5, 6]) t,
       LATERAL peek.persist_peek(NULL::lpcsum, 'lpcsum', as_of => t) ORDER BY t, g;

-- a numeric sum's largest scale leaving a partial group: the inverse
-- transition cannot, and the group reads all its rows to compute its
-- states again
CREATE TYPE lpnrow AS (g int, n numeric);
SELECT peek.create_collection('lpns', 'lpnrow');
SELECT peek.write('lpns', array_agg((i % 2, i)::lpnrow)) FROM generate_series(1, 200) i;
SELECT peek.create_view('lpnsum', $$
    SELECT g, sum(n) AS s, count(*) AS c FROM peek.persist_peek(NULL::lpnrow, 'lpns') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'lpnsum'$$);
SELECT peek.write('lpns', ARRAY[(1, 0.125), (0, 2)]::lpnrow[]);
SELECT peek.write('lpns', ARRAY[(1, 0.5)]::lpnrow[], ARRAY[(1, 0.125)]::lpnrow[]);
SELECT peek.write('lpns', '{}'::lpnrow[], ARRAY[(1, 0.5), (1, 1)]::lpnrow[]);
SELECT wait_for($$SELECT upper = 4 FROM peek.views WHERE name = 'lpnsum'$$);
SELECT g, s::text, c FROM lpnsum ORDER BY g;
SELECT name, view_mismatches(
           format('SELECT g, s::text, c FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           'SELECT g, sum(n)::text, count(*) FROM peek.persist_peek(NULL::lpnrow, ''lpns'', as_of => @T@) GROUP BY g',
           0, upper - 1) AS bad_times
  FROM peek.views WHERE name = 'lpnsum';

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION lp_settle(text), lp_wal();
DROP TABLE lpt, lpn, lpd, lp_times;
DROP TYPE lprow, lpnrow;
