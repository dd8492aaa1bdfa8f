-- WITH queries and subqueries in FROM pulled up into a view's query
-- (flatten.c), as PostgreSQL's planner pulls up simple ones: a subquery
-- filtered and projected under GROUP BY, joined to a table, nested, with
-- expressions read by the outer WHERE and GROUP BY, of a join itself, on
-- either side of a LEFT JOIN, in a chain of joins on different keys,
-- reading a maintained view by name; a WITH query read once,
-- twice (a self-join), by a later WITH query (NOT MATERIALIZED, its ORDER
-- BY dropped) and in a UNION ALL's branches.  Each view, read
-- through its PostgreSQL view and its persist peek, equals PostgreSQL's
-- evaluation of the same query text over the tables (EXCEPT ALL both
-- ways), after inserts, updates of group and join columns, deletes and a
-- rolled-back transaction.  The kept query is the one written (WITH and
-- subqueries as they are); the PostgreSQL view depends on all they read,
-- also after its body is replaced by itself (as pg_restore does).  What
-- PostgreSQL would not pull up, and WITH RECURSIVE, MATERIALIZED or
-- data-modifying, is refused (0A000) naming it.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE ft (id int PRIMARY KEY, g int, v int, note text);
INSERT INTO ft SELECT i, i % 5, i, CASE WHEN i % 6 = 0 THEN 'skip' END FROM generate_series(1, 24) i;
CREATE TABLE fd (g int PRIMARY KEY, name text);
INSERT INTO fd SELECT i, 'd' || i FROM generate_series(0, 3) i;
INSERT INTO fd VALUES (7, 'd7');
CREATE FUNCTION fdouble(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 * 2;
SET client_min_messages = warning;
SELECT peek.create_source('ft_src', 'ft');
SELECT peek.create_source('fd_src', 'fd');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.collections WHERE name LIKE 'f%_src' AND state = 'ready'$$);

-- each view's query, which PostgreSQL also evaluates over the tables
CREATE TABLE fq (name text PRIMARY KEY, query text);
INSERT INTO fq VALUES
  ('f_grouped', $$SELECT g, count(*) AS n, sum(w) AS total
                    FROM (SELECT g, v * 2 AS w FROM ft WHERE v > 3) s GROUP BY g$$),
  ('f_joined', $$SELECT s.id, s.w, d.name
                   FROM (SELECT id, g, v + 1 AS w FROM ft WHERE v % 2 = 0) s JOIN fd d ON d.g = s.g$$),
  ('f_with_once', $$WITH big AS (SELECT id, g, v FROM ft WHERE v > 10 AND note IS DISTINCT FROM 'skip')
                    SELECT g, d.name, count(*) AS n FROM big JOIN fd d USING (g) GROUP BY g, d.name$$),
  ('f_with_twice', $$WITH p AS (SELECT id, g, v FROM ft WHERE v > 5)
                     SELECT a.id, b.id AS other, a.g FROM p a JOIN p b ON a.g = b.g AND a.id < b.id$$),
  ('f_nested', $$SELECT g, max(x) AS top, count(*) AS n
                   FROM (SELECT g, x FROM (SELECT g, v * 3 AS x FROM ft WHERE v <> 7) a WHERE x > 6) b
                  GROUP BY g$$),
  ('f_exprs', $$SELECT k, count(*) AS n, sum(d) AS total
                  FROM (SELECT id, g % 3 AS k, v - g AS d FROM ft) s WHERE d > 4 GROUP BY k$$),
  ('f_left_nullable', $$SELECT d.g, d.name, s.w
                          FROM fd d LEFT JOIN (SELECT g, v * 10 AS w FROM ft WHERE v > 12) s ON s.g = d.g$$),
  ('f_left_preserved', $$SELECT s.id, s.w, d.name
                           FROM (SELECT id, g, v + 0 AS w FROM ft WHERE v < 18) s LEFT JOIN fd d ON d.g = s.g$$),
  ('f_multi', $$SELECT name, count(*) AS n
                  FROM (SELECT a.id, b.name FROM ft a, fd b WHERE a.g = b.g AND a.v > 2) s GROUP BY name$$),
  ('f_chain', $$SELECT s.id, d.name, e.name AS other
                  FROM (SELECT id, g, v % 4 AS h FROM ft) s JOIN fd d ON d.g = s.g LEFT JOIN fd e ON e.g = s.h$$),
  ('f_left_join', $$SELECT d.g, d.name, s.v
                      FROM fd d LEFT JOIN (SELECT a.g, a.v FROM ft a JOIN fd b ON b.g = a.g WHERE a.v > 8) s
                        ON s.g = d.g$$),
  ('f_with_chain', $$WITH a AS (SELECT id, g, v FROM ft WHERE v > 2),
                          b AS NOT MATERIALIZED (SELECT g, v * 2 AS w FROM a WHERE g <> 1 ORDER BY v)
                     SELECT g, sum(w) AS total FROM b GROUP BY g$$),
  ('f_unused', $$SELECT g, count(*) AS n FROM (SELECT g, fdouble(v) AS unused FROM ft) s GROUP BY g$$),
  ('f_union', $$WITH c AS (SELECT g, v FROM ft)
                SELECT g, v FROM c WHERE v > 20 UNION ALL SELECT g, -v FROM c WHERE v < 3$$);
SELECT name, peek.create_view(name, query) FROM fq ORDER BY name;
-- over a maintained view by name, in a subquery
INSERT INTO fq VALUES
  ('f_by_name', $$SELECT name, total FROM (SELECT d.name, t.total FROM f_grouped t JOIN fd d ON d.g = t.g
                                              WHERE t.n > 1) s$$);
SELECT peek.create_view('f_by_name', query) FROM fq WHERE name = 'f_by_name';

-- the kept queries are the ones written, WITH and subqueries as they are
SELECT name, regexp_replace(query, 'source_[0-9]+', 'source_N', 'g') AS query, inputs
  FROM peek.views WHERE name IN ('f_with_twice', 'f_nested', 'f_by_name') ORDER BY name;

-- every view against PostgreSQL's evaluation of its query over the
-- tables, read through its PostgreSQL view and its persist peek (EXCEPT
-- ALL both ways: view_mismatches, at one time), and not empty (an empty
-- view would equal a query wrong the same way)
CREATE FUNCTION fmismatches() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(name, ' ' ORDER BY name), '') FROM fq
   WHERE view_mismatches(format('SELECT * FROM %I', name), query, ARRAY[0]) <> ''
      OR view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L)', name, name), query, ARRAY[0]) <> ''
      OR view_mismatches(format('SELECT EXISTS (SELECT FROM %I)', name), 'SELECT true', ARRAY[0]) <> ''
$$;
-- each step's time, to check the views' history at the end
CREATE TABLE ftimes (src text, t bigint);
\set caught_up 'SELECT NOT EXISTS (SELECT FROM peek.views WHERE state <> ''ready'' OR lag > 0) AND NOT EXISTS (SELECT FROM peek.collections WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - ''0/0'')'
SELECT wait_for(:'caught_up'), views_past_wal('ft_src', 'ftimes');
SELECT fmismatches() AS mismatches;
-- each an ordinary query's operators: one input's, a join's, a chain's
SELECT view, operator, kind FROM peek.dataflow_operators WHERE view LIKE 'f\_%' ORDER BY view, operator;
-- the nullable side's NULL-extended rows are there (no row of ft has g = 7)
SELECT g, name, w FROM f_left_nullable WHERE w IS NULL ORDER BY g;

-- inserts, updates of group and join columns, deletes
INSERT INTO ft SELECT i, i % 7, i - 10 FROM generate_series(25, 40) i;
INSERT INTO fd VALUES (4, 'd4'), (6, 'd6');
SELECT wait_for(:'caught_up'), views_past_wal('ft_src', 'ftimes');
SELECT fmismatches() AS mismatches;
UPDATE ft SET g = (g + 1) % 7 WHERE id % 3 = 0;
UPDATE fd SET g = 5 WHERE g = 6;
UPDATE fd SET name = 'zero' WHERE g = 0;
UPDATE ft SET v = v + 9 WHERE id % 4 = 1;
SELECT wait_for(:'caught_up'), views_past_wal('ft_src', 'ftimes');
SELECT fmismatches() AS mismatches;
DELETE FROM ft WHERE id % 5 = 2;
DELETE FROM fd WHERE g = 1;
SELECT wait_for(:'caught_up'), views_past_wal('ft_src', 'ftimes');
SELECT fmismatches() AS mismatches;
-- a transaction rolled back changes nothing
BEGIN;
INSERT INTO ft SELECT i, 1, i FROM generate_series(100, 110) i;
UPDATE ft SET g = 2 WHERE g = 3;
DELETE FROM fd WHERE g = 2;
ROLLBACK;
INSERT INTO fd VALUES (1, 'one');
SELECT wait_for(:'caught_up'), views_past_wal('ft_src', 'ftimes');
SELECT fmismatches() AS mismatches;
SELECT count(*) AS rolled_back_rows FROM ft WHERE id >= 100;
-- and at each step's time, each view as of it equals its kept query (WITH
-- queries and subqueries as written) over its inputs as of it
SELECT wait_for(format('SELECT bool_and(upper > %s) FROM peek.views', (SELECT max(t) FROM ftimes)));
SELECT * FROM views_bad_times_at('f\_%', 'ft_src|fd_src|f_grouped', 'ftimes');

-- what the WITH queries and subqueries read cannot be dropped (the
-- function of a column the outer query does not read; a column only a WITH
-- query's WHERE reads; each read by one view only); also
-- after the body is replaced by itself, as pg_restore does
SELECT try($$DROP TABLE fd$$);
SELECT try($$ALTER TABLE ft DROP COLUMN v$$);
SELECT try($$DROP FUNCTION fdouble(int)$$);
SELECT try($$ALTER TABLE ft DROP COLUMN note$$);
CREATE OR REPLACE VIEW f_unused AS SELECT * FROM peek.persist_peek(NULL::f_unused, 'f_unused');
CREATE OR REPLACE VIEW f_with_once AS SELECT * FROM peek.persist_peek(NULL::f_with_once, 'f_with_once');
SELECT try($$DROP FUNCTION fdouble(int)$$);
SELECT try($$ALTER TABLE ft DROP COLUMN note$$);
SELECT try($$SELECT peek.drop_view('f_grouped')$$);

-- what PostgreSQL would not pull up, and WITH that is not read as a subquery
SELECT try($$SELECT peek.create_view('fx', 'SELECT g, n FROM (SELECT g, count(*) AS n FROM ft GROUP BY g) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'WITH t AS (SELECT g, sum(v) AS s FROM ft GROUP BY g) SELECT g FROM t')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT DISTINCT g FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g FROM ft ORDER BY v LIMIT 3) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g, r FROM (SELECT g, rank() OVER (ORDER BY v) AS r FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g FROM ft UNION ALL SELECT g FROM fd) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT x FROM (SELECT generate_series(1, v) AS x FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT d.g, s.v FROM fd d, LATERAL (SELECT v FROM ft WHERE ft.g = d.g) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g, v FROM ft FOR UPDATE) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g, random() AS r FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g, now() AS t FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT s FROM (SELECT g FROM ft) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT x FROM (SELECT 1 AS x) s')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM (SELECT g FROM ft WHERE v IN (SELECT g FROM fd)) s')$$);
-- on the nullable side, a column that is not NULL where the join adds NULLs
SELECT try($$SELECT peek.create_view('fx', 'SELECT d.g, s.one FROM fd d LEFT JOIN (SELECT g, 1 AS one FROM ft) s ON s.g = d.g')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT d.g, s.v0 FROM fd d LEFT JOIN (SELECT g, coalesce(v, 0) AS v0 FROM ft) s ON s.g = d.g')$$);
SELECT try($$SELECT peek.create_view('fx', 'WITH c AS (SELECT g, v IS NULL AS missing FROM ft) SELECT d.g, c.missing FROM fd d LEFT JOIN c ON c.g = d.g')$$);
-- (a column it does not read may be anything)
SELECT try($$SELECT peek.create_view('fx', 'SELECT d.g, s.v FROM fd d LEFT JOIN (SELECT g, v, 1 AS one FROM ft) s ON s.g = d.g')$$);
SELECT peek.drop_view('fx');
SELECT try($$SELECT peek.create_view('fx', 'WITH m AS MATERIALIZED (SELECT g FROM ft) SELECT g FROM m')$$);
SELECT try($$SELECT peek.create_view('fx', 'WITH a AS (SELECT g FROM ft), b AS (SELECT g FROM a) SELECT g FROM a')$$);
SELECT try($$SELECT peek.create_view('fx', 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT g FROM ft, r')$$);
SELECT try($$SELECT peek.create_view('fx', 'WITH i AS (INSERT INTO fd VALUES (9, ''x'') RETURNING g) SELECT g FROM i')$$);
SELECT try($$SELECT peek.create_view('fx', 'SELECT g FROM fd d FULL JOIN (SELECT g AS h FROM ft WHERE v > 1) s ON s.h = d.g')$$);
SELECT count(*) AS made, (SELECT count(*) FROM fd WHERE g = 9) AS inserted FROM peek.views WHERE name = 'fx';

SELECT peek.drop_view('f_by_name');
SELECT peek.drop_view(name) FROM fq WHERE name <> 'f_by_name' ORDER BY name;
SELECT peek.drop_source('ft_src');
SELECT peek.drop_source('fd_src');
DROP FUNCTION fmismatches();
DROP TABLE ft, fd, fq, ftimes;
DROP FUNCTION fdouble(int);
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
