-- A maintained view read by name in another view's query: FROM v, where v
-- is a maintained view's PostgreSQL view, reads the view as
-- peek.persist_peek(NULL::v, 'v') does (alone, joined, grouped, aliased,
-- in a UNION ALL's branch), the kept query naming its peek; each view equals
-- PostgreSQL's evaluation of its query over the views it reads, through
-- writes; the view read cannot be dropped under its readers (2BP01); a
-- role that may not SELECT from the PostgreSQL view gets 42501 and nothing
-- is made; another PostgreSQL view, a materialized view and a sequence are
-- refused (0A000, naming them).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE nlines (id int PRIMARY KEY, cust int, qty int);
INSERT INTO nlines SELECT g, g % 4, g FROM generate_series(1, 20) g;
CREATE TABLE ncust (cust int PRIMARY KEY, name text);
INSERT INTO ncust SELECT g, 'c' || g FROM generate_series(0, 2) g;
SET client_min_messages = warning;
SELECT peek.create_source('nlines_src', 'nlines');
SELECT peek.create_source('ncust_src', 'ncust');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.collections WHERE name LIKE 'n%_src' AND state = 'ready'$$);

SELECT peek.create_view('ntotals', $$SELECT cust, count(*) AS n, sum(qty) AS total FROM nlines GROUP BY cust$$);
-- over the view by name: filtered, joined, grouped under an alias, and in
-- a UNION ALL beside its peek
SELECT peek.create_view('nbig', $$SELECT cust, total FROM ntotals WHERE total > 50$$);
SELECT peek.create_view('nnamed', $$
    SELECT c.name, t.n FROM ntotals t JOIN ncust c ON c.cust = t.cust$$);
SELECT peek.create_view('nsizes', $$SELECT x.n, count(*) AS custs FROM public.ntotals AS x GROUP BY x.n$$);
SELECT peek.create_view('nboth', $$
    SELECT cust FROM ntotals UNION ALL SELECT cust FROM peek.persist_peek(NULL::ntotals, 'ntotals')$$);
-- the kept queries name the view's peek
SELECT name, regexp_replace(query, 'source_[0-9]+', 'source_N', 'g') AS query, inputs
  FROM peek.views WHERE name <> 'ntotals' ORDER BY name;

CREATE FUNCTION nmismatches() RETURNS text LANGUAGE sql AS $$
  SELECT concat_ws(' ',
    CASE WHEN (SELECT array_agg((cust, total) ORDER BY cust) FROM nbig) IS DISTINCT FROM
              (SELECT array_agg((cust, total) ORDER BY cust) FROM ntotals WHERE total > 50)
         THEN 'nbig' END,
    CASE WHEN (SELECT array_agg((name, n) ORDER BY name) FROM nnamed) IS DISTINCT FROM
              (SELECT array_agg((c.name, t.n) ORDER BY c.name) FROM ntotals t JOIN ncust c ON c.cust = t.cust)
         THEN 'nnamed' END,
    CASE WHEN (SELECT array_agg((n, custs) ORDER BY n) FROM nsizes) IS DISTINCT FROM
              (SELECT array_agg((n, custs) ORDER BY n) FROM (SELECT n, count(*) AS custs FROM ntotals GROUP BY n) s)
         THEN 'nsizes' END,
    CASE WHEN (SELECT array_agg(cust ORDER BY cust) FROM nboth) IS DISTINCT FROM
              (SELECT array_agg(cust ORDER BY cust) FROM (SELECT cust FROM ntotals UNION ALL SELECT cust FROM ntotals) s)
         THEN 'nboth' END,
    CASE WHEN (SELECT array_agg((cust, n, total) ORDER BY cust) FROM ntotals) IS DISTINCT FROM
              (SELECT array_agg((cust, n, total) ORDER BY cust)
                 FROM (SELECT cust, count(*) AS n, sum(qty) AS total FROM nlines GROUP BY cust) s)
         THEN 'ntotals' END)
$$;
CREATE FUNCTION ncaught_up() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
     AND NOT EXISTS (SELECT 1 FROM peek.collections
                      WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - '0/0')
$$;
SELECT wait_for('SELECT ncaught_up()');
SELECT nmismatches() AS mismatches, (SELECT count(*) FROM nnamed) AS named_rows,
       (SELECT count(*) FROM nboth) AS both_rows;

-- writes to both tables: a new group, a group emptied, a join partner
-- changed, a customer added
INSERT INTO nlines VALUES (21, 3, 500), (22, 5, 7);
DELETE FROM nlines WHERE cust = 1;
UPDATE ncust SET name = 'zero' WHERE cust = 0;
INSERT INTO ncust VALUES (3, 'c3'), (5, 'c5');
UPDATE nlines SET cust = 2 WHERE id = 4;
SELECT wait_for('SELECT ncaught_up()');
SELECT nmismatches() AS mismatches;
SELECT * FROM nnamed ORDER BY name;

-- the view read cannot be dropped under its readers
SELECT try($$SELECT peek.drop_view('ntotals')$$);
SELECT try($$DROP VIEW ntotals$$);
SELECT count(*) FROM peek.views WHERE name = 'ntotals';

-- a role that may not SELECT from the PostgreSQL view gets 42501 whatever
-- its search_path; nothing is made
CREATE ROLE peek_vn_stranger;
GRANT USAGE ON SCHEMA peek TO peek_vn_stranger;
CREATE SCHEMA vn_stranger AUTHORIZATION peek_vn_stranger;
SET ROLE peek_vn_stranger;
SET search_path = vn_stranger, public;
SELECT try($$SELECT peek.create_view('nnope', 'SELECT cust FROM ntotals')$$);
-- granted SELECT on the PostgreSQL view, it is still not the view's owner
RESET ROLE;
GRANT SELECT ON ntotals TO peek_vn_stranger;
SET ROLE peek_vn_stranger;
SELECT try($$SELECT peek.create_view('nnope', 'SELECT cust FROM ntotals')$$);
RESET ROLE;
RESET search_path;
SELECT count(*) AS views, (SELECT count(*) FROM pg_class WHERE relname = 'nnope') AS pg_views
  FROM peek.views WHERE name = 'nnope';

-- other relations are refused by name
CREATE VIEW nplain AS SELECT cust FROM ntotals;
CREATE MATERIALIZED VIEW nmat AS SELECT 1 AS a;
CREATE SEQUENCE nseq;
SELECT try($$SELECT peek.create_view('nx', 'SELECT cust FROM nplain')$$);
SELECT try($$SELECT peek.create_view('nx', 'SELECT a FROM nmat')$$);
SELECT try($$SELECT peek.create_view('nx', 'SELECT last_value FROM nseq')$$);
SELECT count(*) FROM peek.views WHERE name = 'nx';
DROP VIEW nplain;
DROP MATERIALIZED VIEW nmat;
DROP SEQUENCE nseq;

SELECT peek.drop_view(name) FROM peek.views WHERE name <> 'ntotals' ORDER BY name;
SELECT peek.drop_view('ntotals');
DROP FUNCTION nmismatches();
DROP FUNCTION ncaught_up();
DROP SCHEMA vn_stranger;
REVOKE USAGE ON SCHEMA peek FROM peek_vn_stranger;
DROP ROLE peek_vn_stranger;
SELECT peek.drop_source('nlines_src');
SELECT peek.drop_source('ncust_src');
DROP TABLE nlines, ncust;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
