-- Partial groups of linear aggregates (arranged.c, accums.c) attacked,
-- each view against PostgreSQL's query over its input at each time: a
-- collection written many times at once (rows moving between groups, a
-- group emptied and another refilled at one time, multiplicities above 8,
-- bool_and's false rows retracted, count of NULLs, HAVING on a count, no key in the select list, no GROUP
-- BY), a restart; a captured table with C and nondeterministic ICU text
-- keys, a user index on the key made and dropped while rounds run, a
-- restart and a TRUNCATE.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE arow AS (g int, v int, b boolean, x int);
SELECT peek.create_collection('ac', 'arow');
-- groups 0..3 of 50 rows each
SELECT peek.write('ac', array_agg((i % 4, i, i % 7 <> 0, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::arow))
  FROM generate_series(1, 200) i;
SELECT peek.create_view('acsum', $$
    SELECT g, count(*) AS n, sum(v) AS s, count(x) AS nx, bool_and(b) AS ba, bool_or(b) AS bo
      FROM peek.persist_peek(NULL::arow, 'ac') GROUP BY g$$);
SELECT peek.create_view('achav', $$
    SELECT g, sum(v) AS s FROM peek.persist_peek(NULL::arow, 'ac') GROUP BY g HAVING count(*) > 49$$);
SELECT peek.create_view('acall', $$
    SELECT count(*) AS n, sum(v) AS s, bool_and(b) AS ba FROM peek.persist_peek(NULL::arow, 'ac')$$);
SELECT peek.create_view('acnokey', $$
    SELECT count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::arow, 'ac') GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready' AND upper >= 1$$);

-- many times in quick succession: rows moving, groups emptied and refilled,
-- multiplicities above 8, bool_and's false rows retracted
DO $$
BEGIN
    PERFORM peek.write('ac', ARRAY[(1, 1, true, 1)]::arow[], ARRAY[(1, 1, true, 1)]::arow[]);
    PERFORM peek.write('ac', array_fill((2, 1000, false, NULL)::arow, ARRAY[20]));
    PERFORM peek.write('ac', '{}'::arow[], array_fill((2, 1000, false, NULL)::arow, ARRAY[15]));
    -- move group 3's rows to group 5
    PERFORM peek.write('ac', ARRAY(SELECT (5, i, i % 7 <> 0, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::arow FROM generate_series(3, 200, 4) i),
                             ARRAY(SELECT (3, i, i % 7 <> 0, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::arow FROM generate_series(3, 200, 4) i));
    -- group 5 emptied and group 3 refilled at one time
    PERFORM peek.write('ac', ARRAY[(3, 1, true, NULL)]::arow[],
                             ARRAY(SELECT (5, i, i % 7 <> 0, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::arow FROM generate_series(3, 200, 4) i));
    -- bool_and's false rows of group 0 taken out, one by one
    FOR i IN 1..7 LOOP
        PERFORM peek.write('ac', '{}'::arow[], ARRAY[(0, i * 28, false, CASE WHEN i * 28 % 3 = 0 THEN NULL ELSE i * 28 END)]::arow[]);
    END LOOP;
    -- group 1 emptied, refilled at a later time
    PERFORM peek.write('ac', '{}'::arow[], ARRAY(SELECT (1, i, i % 7 <> 0, CASE WHEN i % 3 = 0 THEN NULL ELSE i END)::arow FROM generate_series(5, 200, 4) i));
    PERFORM peek.write('ac', '{}'::arow[], ARRAY[(1, 1, true, 1)]::arow[]);
    PERFORM set_config('ac.last', peek.write('ac', ARRAY[(1, 7, false, NULL), (1, 7, false, NULL)]::arow[])::text, false);
END $$;
SELECT wait_for(format($q$SELECT bool_and(upper > %s) FROM peek.views$q$, current_setting('ac.last')));
SELECT * FROM acsum ORDER BY g;
SELECT * FROM achav ORDER BY g;
SELECT * FROM acall;
SELECT * FROM views_bad_times();

-- a restart, then more
SELECT restart_maintenance();
DO $$
BEGIN
    PERFORM peek.write('ac', ARRAY[(0, 5, false, NULL)]::arow[]);
    PERFORM peek.write('ac', '{}'::arow[], ARRAY[(0, 5, false, NULL)]::arow[]);
    PERFORM peek.write('ac', array_fill((4, 3, true, 3)::arow, ARRAY[12]));
    PERFORM peek.write('ac', '{}'::arow[], array_fill((4, 3, true, 3)::arow, ARRAY[12]));
    PERFORM set_config('ac.last', peek.write('ac', array_fill((4, 3, true, 3)::arow, ARRAY[9]))::text, false);
END $$;
SELECT wait_for(format($q$SELECT bool_and(upper > %s) FROM peek.views$q$, current_setting('ac.last')));
SELECT * FROM acsum ORDER BY g;
SELECT * FROM views_bad_times();

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;

-- a captured table: text keys (C and nondeterministic ICU), a key index
-- made and dropped while rounds run, TRUNCATE
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE tt (id int PRIMARY KEY, k text COLLATE "C", c text COLLATE ci, v int);
INSERT INTO tt SELECT i, 'k' || (i % 5), CASE WHEN i % 2 = 0 THEN 'AB' ELSE 'ab' END || (i % 3), i
  FROM generate_series(1, 300) i;
SET client_min_messages = warning;
SELECT peek.create_source('tt_src', 'tt');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'tt_src'$$);
SELECT peek.create_view('ttk', $$SELECT k, count(*) AS n, sum(v) AS s FROM tt GROUP BY k$$);
SELECT peek.create_view('ttc', $$SELECT lower(c) AS lc, count(*) AS n, sum(v) AS s FROM tt GROUP BY c$$);
SELECT peek.create_view('ttc2', $$SELECT count(*) AS n, sum(v) AS s FROM tt GROUP BY c HAVING count(*) > 3$$);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready' AND upper > 0$$);
CREATE TABLE tt_times (src text, t bigint);
CREATE FUNCTION tt_settle() RETURNS boolean LANGUAGE sql
RETURN views_past_wal('tt_src', 'tt_times');
CREATE FUNCTION tt_bad_times() RETURNS TABLE (name text, bad_times text) LANGUAGE sql AS $$
    SELECT v.name::text, view_mismatches(
               format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v.name, v.name),
               regexp_replace(v.query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
               (SELECT array_agg(t ORDER BY t) FROM tt_times))
      FROM peek.views v ORDER BY v.name $$;
SELECT tt_settle();
DELETE FROM tt WHERE id % 10 = 1;
UPDATE tt SET k = 'k9' WHERE id % 5 = 2;
SELECT peek.create_index('tt_k', 'tt_src', ARRAY['k']);
UPDATE tt SET v = v + 1 WHERE id % 7 = 0;
DELETE FROM tt WHERE k = 'k3';
INSERT INTO tt SELECT i, 'k3', 'ab0', i FROM generate_series(1001, 1010) i;
-- the first row of group ab1 (by image) goes, then comes back spelled otherwise
UPDATE tt SET c = 'Ab1' WHERE c = 'ab1';
SELECT tt_settle();
SELECT peek.drop_index('tt_k');
UPDATE tt SET c = 'aB2', v = v + 3 WHERE id % 4 = 0;
SELECT tt_settle();
SELECT * FROM tt_bad_times();
SELECT restart_maintenance();
UPDATE tt SET k = 'k1' WHERE id < 50;
SELECT tt_settle();
TRUNCATE tt;
SELECT tt_settle();
SELECT count(*) FROM ttk;
INSERT INTO tt VALUES (1, 'k1', 'x', 1), (2, 'k1', 'X', 2);
SELECT tt_settle();
SELECT * FROM ttk ORDER BY k;
SELECT n, s FROM ttc;
SELECT * FROM tt_bad_times();
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION tt_settle(), tt_bad_times();
DROP TABLE tt, tt_times;
DROP TYPE arow;
DROP COLLATION ci;
