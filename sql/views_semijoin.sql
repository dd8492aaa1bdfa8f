-- EXISTS, NOT EXISTS and IN (SELECT ...) ANDed in a view's WHERE, kept as
-- semi-joins and anti-joins (semijoins.c): over one input correlated by
-- the outer input's column or an expression, grouped by the correlation
-- key or by another one, DISTINCT, beside an inner and a left join on
-- another key (grouped too), two of them on different keys, over a WITH
-- query, in UNION ALL branches, over maintained views by name, reading
-- the outer input itself, correlated by more than its key, on the key of
-- a left join's nullable side.  Each view, read through its PostgreSQL
-- view and its persist peek, equals PostgreSQL's evaluation of the same
-- query text over the tables (EXCEPT ALL both ways: multiplicities
-- included; the outer table holds copies of rows, the inner one copies of
-- keys, which EXISTS must not multiply) after inserts, updates of the
-- correlation key on both sides, deletes, NULL keys on both sides, rows
-- that make a key's EXISTS flip both ways, a rolled-back transaction and
-- a TRUNCATE, and at each step's time.  What is not supported is refused
-- (0A000) naming it; the subquery's input cannot be dropped (2BP01); a
-- subquery reading a table the role may not read is 42501.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE so (id int, cust int, qty int);
INSERT INTO so SELECT i, i % 6, i FROM generate_series(1, 20) i;
INSERT INTO so VALUES (3, 3, 3), (3, 3, 3), (21, NULL, 7);
CREATE TABLE sc (id int, active boolean, region int);
INSERT INTO sc VALUES (1, true, 10), (1, true, 10), (2, true, 20), (3, true, 30),
                      (4, false, 40), (NULL, true, 50);
CREATE TABLE sl (ord int, n int);
INSERT INTO sl SELECT i, i % 3 FROM generate_series(1, 20, 2) i;
INSERT INTO sl VALUES (5, 2), (NULL, 2);
SET client_min_messages = warning;
SELECT peek.create_source('so_src', 'so');
SELECT peek.create_source('sc_src', 'sc');
SELECT peek.create_source('sl_src', 'sl');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.collections WHERE name LIKE 's%_src' AND state = 'ready'$$);

-- each view's query, which PostgreSQL also evaluates over the tables
CREATE TABLE sq (name text PRIMARY KEY, query text);
INSERT INTO sq VALUES
  ('s_exists', $$SELECT o.id, o.cust, o.qty FROM so o
                  WHERE EXISTS (SELECT 1 FROM sc c WHERE c.id = o.cust AND c.active)$$),
  ('s_not_exists', $$SELECT o.id, o.qty FROM so o
                      WHERE NOT EXISTS (SELECT FROM sc c WHERE c.id = o.cust) AND o.qty > 1$$),
  ('s_in', $$SELECT id, qty FROM so WHERE cust IN (SELECT id FROM sc WHERE active)$$),
  ('s_in_expr', $$SELECT id, cust FROM so WHERE cust % 4 = ANY (SELECT c.id % 4 FROM sc c WHERE c.region > 15)$$),
  ('s_grouped', $$SELECT cust, count(*) AS n, sum(qty) AS total FROM so o
                   WHERE EXISTS (SELECT 1 FROM sc c WHERE c.id = o.cust) GROUP BY cust$$),
  ('s_grouped_other', $$SELECT qty % 3 AS k, count(*) AS n, max(id) AS top FROM so o
                         WHERE NOT EXISTS (SELECT 1 FROM sc c WHERE c.id = o.cust AND c.active)
                         GROUP BY qty % 3$$),
  ('s_distinct', $$SELECT DISTINCT cust FROM so o WHERE EXISTS (SELECT 1 FROM sc c WHERE o.cust = c.id)$$),
  ('s_join', $$SELECT o.id, c.region FROM so o JOIN sc c ON c.id = o.cust
                WHERE EXISTS (SELECT FROM sl l WHERE l.ord = o.id)$$),
  ('s_both', $$SELECT o.id, o.qty FROM so o
                WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust AND c.active)
                  AND NOT EXISTS (SELECT FROM sl l WHERE l.ord = o.id AND l.n > 0)$$),
  ('s_left', $$SELECT o.id, c.region FROM so o LEFT JOIN sc c ON c.id = o.cust AND c.active
                WHERE o.id IN (SELECT ord FROM sl WHERE n < 2)$$),
  ('s_in_correlated', $$SELECT id, qty FROM so o WHERE cust IN (SELECT c.id FROM sc c WHERE c.region > o.qty)$$),
  ('s_self', $$SELECT o.id, o.cust FROM so o WHERE NOT EXISTS (SELECT FROM so p WHERE p.cust = o.id)$$),
  ('s_left_key', $$SELECT o.id, c.region FROM so o LEFT JOIN sc c ON c.id = o.cust
                    WHERE EXISTS (SELECT FROM sl l WHERE l.ord = c.id)$$),
  ('s_join_grouped', $$SELECT c.region, count(*) AS n, sum(o.qty) AS total FROM so o JOIN sc c ON c.id = o.cust
                        WHERE NOT EXISTS (SELECT FROM sl l WHERE l.ord = o.id) GROUP BY c.region$$),
  ('s_with', $$WITH big AS (SELECT id, cust, qty FROM so WHERE qty > 2)
               SELECT b.id, b.qty FROM big b WHERE b.cust IN (SELECT id FROM sc WHERE region > 15)$$),
  ('s_union', $$SELECT id FROM so o WHERE EXISTS (SELECT FROM sl l WHERE l.ord = o.id)
                UNION ALL SELECT id FROM sc c WHERE NOT EXISTS (SELECT FROM so o WHERE o.cust = c.id)$$);
SELECT name, peek.create_view(name, query) FROM sq ORDER BY name;
-- over a maintained view by name
INSERT INTO sq VALUES
  ('s_by_name', $$SELECT g.cust, g.n FROM s_grouped g
                   WHERE NOT EXISTS (SELECT FROM s_exists e WHERE e.cust = g.cust AND e.qty > 10)$$);
SELECT peek.create_view('s_by_name', query) FROM sq WHERE name = 's_by_name';

-- the kept query is the one written, its subqueries in place
SELECT name, regexp_replace(query, 'source_[0-9]+', 'source_N', 'g') AS query, inputs
  FROM peek.views WHERE name IN ('s_in', 's_both') ORDER BY name;

-- every view against PostgreSQL's evaluation of its query over the
-- tables (view_mismatches), and not empty
CREATE FUNCTION smismatches() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(name, ' ' ORDER BY name), '') FROM sq
   WHERE view_mismatches(format('SELECT * FROM %I', name), query, ARRAY[0]) <> ''
      OR view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L)', name, name), query, ARRAY[0]) <> ''
$$;
CREATE FUNCTION sempty() RETURNS text LANGUAGE plpgsql AS $$
DECLARE empty text := ''; r record; n bigint;
BEGIN
    FOR r IN SELECT name FROM sq ORDER BY name LOOP
        EXECUTE format('SELECT count(*) FROM %I', r.name) INTO n;
        IF n = 0 THEN empty := empty || r.name || ' '; END IF;
    END LOOP;
    RETURN empty;
END $$;
CREATE TABLE stimes (src text, t bigint);
\set caught_up 'SELECT NOT EXISTS (SELECT FROM peek.views WHERE state <> ''ready'' OR lag > 0) AND NOT EXISTS (SELECT FROM peek.collections WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - ''0/0'')'
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches, sempty() AS empty;
SELECT name, state, failure FROM peek.views WHERE name LIKE 's\_%' AND state <> 'ready';
-- a semi-join is a join's operator (not linear: no delta join)
SELECT view, operator, kind FROM peek.dataflow_operators
 WHERE view IN ('s_exists', 's_grouped_other', 's_both') ORDER BY view, operator;
-- EXISTS does not multiply the outer rows by the inner copies (sc has id 1
-- twice), the outer copies stay (so has (3, 3, 3) three times)
SELECT id, count(*) FROM s_exists WHERE id IN (1, 3) GROUP BY id ORDER BY id;
SELECT id, count(*) FROM s_in WHERE id IN (1, 3, 7) GROUP BY id ORDER BY id;

-- inserts on both sides
INSERT INTO so SELECT i, i % 7, i - 10 FROM generate_series(22, 34) i;
INSERT INTO so VALUES (22, 1, 12), (22, 1, 12);
INSERT INTO sc VALUES (6, true, 60), (5, false, 55), (5, false, 55);
INSERT INTO sl VALUES (22, 1), (23, 0), (22, 1);
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
-- the correlation key updated on both sides; EXISTS flipped off (id 2's
-- only row inactive) and on (5 active)
UPDATE so SET cust = (cust + 1) % 7 WHERE id % 3 = 0;
UPDATE sc SET id = 7 WHERE id = 6;
UPDATE sc SET active = false WHERE id = 2;
UPDATE sc SET active = true WHERE id = 5;
UPDATE sl SET ord = ord + 1 WHERE ord % 5 = 0;
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
-- and back: 2 active again, one of 1's two copies gone (still exists), 5's
-- both copies gone (no longer exists)
UPDATE sc SET active = true WHERE id = 2;
DELETE FROM sc WHERE ctid IN (SELECT ctid FROM sc WHERE id = 1 LIMIT 1);
DELETE FROM sc WHERE id = 5;
DELETE FROM so WHERE id % 5 = 2;
DELETE FROM sl WHERE n = 2;
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
SELECT count(*) AS copies_of_1 FROM sc WHERE id = 1;
-- NULL keys on both sides
UPDATE so SET cust = NULL WHERE id % 4 = 1;
INSERT INTO sc VALUES (NULL, false, 70);
UPDATE sc SET id = NULL WHERE id = 4;
INSERT INTO sl VALUES (NULL, 0);
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
-- a transaction rolled back changes nothing
BEGIN;
INSERT INTO so SELECT i, 2, i FROM generate_series(100, 110) i;
DELETE FROM sc WHERE id = 2;
UPDATE sl SET ord = 1000;
ROLLBACK;
UPDATE sc SET region = region + 1 WHERE id = 3;
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
SELECT count(*) AS rolled_back_rows FROM so WHERE id >= 100;
-- the inner input emptied (EXISTS false and NOT EXISTS true for every row), then filled again
TRUNCATE sc;
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;
SELECT count(*) AS exists_rows, (SELECT count(*) FROM s_not_exists) = (SELECT count(*) FROM so WHERE qty > 1) AS all_not_exist
  FROM s_exists;
INSERT INTO sc SELECT i % 5, i % 2 = 0, i FROM generate_series(1, 12) i;
TRUNCATE sl;
INSERT INTO sl SELECT i, i % 3 FROM generate_series(1, 30, 3) i;
SELECT wait_for(:'caught_up'), views_past_wal('so_src', 'stimes');
SELECT smismatches() AS mismatches;

-- and at each step's time, each view as of it equals its kept query over
-- its inputs as of it
SELECT wait_for(format('SELECT bool_and(upper > %s) FROM peek.views', (SELECT max(t) FROM stimes)));
SELECT * FROM views_bad_times_at('s\_%', 'so_src|sc_src|sl_src|s_grouped|s_exists', 'stimes');

-- what only a subquery reads cannot be dropped (sl is read only in EXISTS)
SELECT try($$DROP TABLE sl$$);
SELECT try($$ALTER TABLE sl DROP COLUMN n$$);
SELECT try($$SELECT peek.drop_source('sl_src')$$);
SELECT try($$SELECT peek.drop_view('s_exists')$$);

-- what is not supported, named
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so WHERE cust NOT IN (SELECT id FROM sc)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so WHERE cust <> ALL (SELECT id FROM sc)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id, (SELECT max(region) FROM sc WHERE sc.id = so.cust) FROM so')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so WHERE qty = (SELECT max(region) FROM sc)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE qty > 3 OR EXISTS (SELECT FROM sc c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id, EXISTS (SELECT FROM sc c WHERE c.id = o.cust) AS e FROM so o')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT cust, count(*) FROM so o GROUP BY cust HAVING EXISTS (SELECT FROM sc c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT o.id FROM so o JOIN sl l ON l.ord = o.id AND EXISTS (SELECT FROM sc c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust GROUP BY c.id)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT count(*) FROM sc c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust LIMIT 1)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT WHERE o.cust > 1)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c, sl l WHERE c.id = o.cust AND l.ord = c.id)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c JOIN sl l ON l.ord = c.id WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM (SELECT id FROM sc) c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'WITH s AS (SELECT id FROM sc) SELECT id FROM so o WHERE EXISTS (SELECT FROM s WHERE s.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust AND EXISTS (SELECT FROM sl WHERE sl.ord = c.id))')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.active)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id > o.cust)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust AND c.region > random())')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sq WHERE sq.name = o.id::text)')$$);
SELECT try($$SELECT peek.create_view('sx', 'SELECT id FROM so o WHERE o.id::text IN (SELECT name FROM sq)')$$);
-- (a subquery's column that EXISTS reads on a left join's nullable side
-- must be NULL where the join adds NULLs, as one the query reads)
SELECT try($$SELECT peek.create_view('sx', 'SELECT o.id FROM so o LEFT JOIN (SELECT id, 1 AS one FROM sc) s ON s.id = o.cust WHERE EXISTS (SELECT FROM sl WHERE sl.ord = s.one)')$$);
SELECT count(*) AS made FROM peek.views WHERE name = 'sx';

-- a subquery reading a table the role may not read: 42501, nothing made
CREATE ROLE peek_sj_reader;
GRANT USAGE ON SCHEMA peek TO peek_sj_reader;
CREATE SCHEMA sj_own AUTHORIZATION peek_sj_reader;
GRANT SELECT ON so TO peek_sj_reader;
SET ROLE peek_sj_reader;
SET search_path = sj_own, public;
SELECT try($$SELECT peek.create_view('snope', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM sc c WHERE c.id = o.cust)')$$);
SELECT try($$SELECT peek.create_view('snope', 'SELECT id FROM so WHERE cust IN (SELECT id FROM peek.persist_peek(NULL::sc, ''sc_src''))')$$);
SELECT try($$SELECT peek.create_view('snope', 'SELECT id FROM so o WHERE EXISTS (SELECT FROM s_exists e WHERE e.id = o.id)')$$);
RESET ROLE;
SET search_path = public;
SELECT count(*) AS views, (SELECT count(*) FROM pg_class WHERE relname = 'snope') AS pg_views
  FROM peek.views WHERE name = 'snope';
DROP SCHEMA sj_own;
REVOKE USAGE ON SCHEMA peek FROM peek_sj_reader;
REVOKE SELECT ON so FROM peek_sj_reader;
DROP ROLE peek_sj_reader;

SELECT peek.drop_view('s_by_name');
SELECT peek.drop_view(name) FROM sq WHERE name <> 's_by_name' ORDER BY name;
SELECT peek.drop_source('so_src');
SELECT peek.drop_source('sc_src');
SELECT peek.drop_source('sl_src');
DROP FUNCTION smismatches();
DROP FUNCTION sempty();
DROP TABLE so, sc, sl, sq, stimes;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
