-- Maintained views over captured tables: a table with a source stands for
-- that source in a view's query (FROM t, or peek.persist_peek(NULL::t,
-- 'source')); a table without one, or with two, or with inheritance
-- children (ONLY reads it), and TABLESAMPLE are refused (0A000), as is a
-- first inheritance child of a table a view reads (2BP01); the
-- table, its columns the view reads and the source cannot be dropped under
-- the view (2BP01); a role that may SELECT from the table makes and reads a
-- view over it in its own schema; row-level security; what the views'
-- operators did (peek.dataflow_operators) and a hydration's progress.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- a table with a dropped column: the source's row type has none, so the
-- view's references to the table's columns are renumbered for it
CREATE TABLE slines (id int PRIMARY KEY, gone int, cust int, qty int);
ALTER TABLE slines DROP COLUMN gone;
INSERT INTO slines SELECT g, g % 3, g FROM generate_series(1, 12) g;
SET client_min_messages = warning;
SELECT peek.create_source('slines_src', 'slines');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'slines_src'$$);

-- FROM the table reads its source, under the table's column names
SELECT peek.create_view('sbig', $$SELECT id, qty * 2 AS double FROM slines WHERE qty > 8$$);
SELECT peek.create_view('stotals', $$
    SELECT l.cust, count(*) AS n, sum(l.qty) AS total FROM public.slines AS l GROUP BY l.cust$$);
-- and so does a persist peek of the source as the table's row type
SELECT peek.create_view('speek', $$SELECT cust, qty FROM peek.persist_peek(NULL::slines, 'slines_src') WHERE id < 3$$);
-- the kept query names the source, so the runtime plans it the same
SELECT name, regexp_replace(query, 'source_[0-9]+', 'source_N', 'g') AS query, inputs
  FROM peek.views ORDER BY name;
INSERT INTO slines VALUES (13, 1, 100), (14, 2, 1);
UPDATE slines SET qty = qty + 10 WHERE id IN (1, 2);
DELETE FROM slines WHERE id = 12;
SELECT wait_for($$SELECT (SELECT array_agg((id, double) ORDER BY id) FROM sbig) =
                         (SELECT array_agg((id, qty * 2) ORDER BY id) FROM slines WHERE qty > 8)
                     AND (SELECT array_agg((cust, n, total) ORDER BY cust) FROM stotals) =
                         (SELECT array_agg((cust, n, total) ORDER BY cust)
                            FROM (SELECT cust, count(*) AS n, sum(qty) AS total FROM slines GROUP BY cust) s)
                     AND (SELECT array_agg((cust, qty) ORDER BY cust) FROM speek) =
                         (SELECT array_agg((cust, qty) ORDER BY cust) FROM slines WHERE id < 3)$$);
SELECT * FROM sbig ORDER BY id;
SELECT * FROM stotals ORDER BY cust;
SELECT * FROM speek ORDER BY cust;
-- what each view's operators did: the input's updates read and those that
-- passed WHERE, what the view made of them, a grouped view's state (at
-- least what the workload takes: a round that did not commit, groups
-- built again, count too)
SELECT d.view, d.operator, d.kind, d.rows_in >= e.rows_in AS rows_in,
       d.rows_out >= e.rows_out AS rows_out, d.bytes > 0 AS keeps_state
  FROM peek.dataflow_operators d
  FULL JOIN (VALUES ('sbig', 1, 19, 8), ('sbig', 2, 8, 8), ('speek', 1, 19, 6),
                    ('speek', 2, 6, 6), ('stotals', 1, 19, 19), ('stotals', 2, 19, 13))
         AS e(view, operator, rows_in, rows_out) USING (view, operator)
 ORDER BY view, operator;

-- a table no source captures, one two sources capture: 0A000 naming it
CREATE TABLE splain (id int);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM splain')$$);
SET client_min_messages = warning;
SELECT peek.create_source('slines_src2', 'slines');
RESET client_min_messages;
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM slines')$$);
-- (naming one of them reads it)
SELECT peek.create_view('sother', $$SELECT id FROM peek.persist_peek(NULL::slines, 'slines_src2') WHERE id = 13$$);
SELECT wait_for($$SELECT count(*) = 1 FROM sother$$);
SELECT peek.drop_view('sother');
SELECT peek.drop_source('slines_src2');
-- a source has its table's own rows: a captured table that views read gets
-- no first inheritance child (2BP01, by CREATE TABLE or ALTER TABLE, also
-- in a savepoint); one with children is read with ONLY and gets more;
-- TABLESAMPLE is refused
SELECT try($$CREATE TABLE slines_child () INHERITS (slines)$$);
CREATE TABLE slines_alone (LIKE slines);
BEGIN;
SAVEPOINT s;
SELECT try($$ALTER TABLE slines_alone INHERIT slines$$);
ROLLBACK TO s;
COMMIT;
SELECT count(*) AS children FROM pg_inherits WHERE inhparent = 'slines'::regclass;
DROP TABLE slines_alone;
CREATE TABLE sfam (id int PRIMARY KEY, qty int);
INSERT INTO sfam VALUES (13, 1), (14, 2);
SELECT peek.create_source('sfam_src', 'sfam');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'sfam_src'$$);
CREATE TABLE sfam_child () INHERITS (sfam);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM sfam')$$);
SELECT peek.create_view('sonly', $$SELECT id FROM ONLY sfam WHERE id = 13$$);
SELECT wait_for($$SELECT count(*) = 1 FROM sonly$$);
CREATE TABLE sfam_child2 () INHERITS (sfam);
INSERT INTO sfam_child2 VALUES (13, 3);
INSERT INTO sfam VALUES (15, 4);
SELECT wal_time() AS sfam_wal \gset
SELECT wait_for(format($$SELECT upper > %s FROM peek.views WHERE name = 'sonly'$$, :sfam_wal));
SELECT (SELECT array_agg(id) FROM sonly) AS view, (SELECT array_agg(id) FROM ONLY sfam WHERE id = 13) AS query;
SELECT peek.drop_view('sonly');
DROP TABLE sfam_child, sfam_child2;
SELECT peek.drop_source('sfam_src');
DROP TABLE sfam;
-- a captured partition that a view reads: PostgreSQL's own refusal of a
-- child of a partition (42809), not the guard's
CREATE TABLE spart (id int) PARTITION BY LIST (id);
CREATE TABLE spart_13 PARTITION OF spart FOR VALUES IN (13);
SET client_min_messages = warning;
SELECT peek.create_source('spart_13_src', 'spart_13');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'spart_13_src'$$);
SELECT peek.create_view('spart_v', $$SELECT id FROM spart_13$$);
SELECT try($$CREATE TABLE spart_child () INHERITS (spart_13)$$);
CREATE TABLE spart_alone (id int);
SELECT try($$ALTER TABLE spart_alone INHERIT spart_13$$);
SELECT peek.drop_view('spart_v');
SELECT peek.drop_source('spart_13_src');
DROP TABLE spart, spart_alone;
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM ONLY slines TABLESAMPLE SYSTEM (50)')$$);
-- a PostgreSQL view in FROM is not a table
CREATE VIEW splain_v AS SELECT * FROM slines;
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM splain_v')$$);
SELECT count(*) FROM peek.views WHERE name = 'x';

-- the table, the columns the views read and the source stay while a view
-- reads them (2BP01, naming the view)
\set VERBOSITY terse
DROP TABLE slines;
ALTER TABLE slines DROP COLUMN qty;
SELECT peek.drop_source('slines_src');
\set VERBOSITY default
DROP VIEW splain_v;

-- a role that may SELECT from the table makes a view over it in its own
-- schema, with its own search_path, and reads it; one that may not gets
-- 42501 and nothing is made
CREATE ROLE peek_vs_owner;
CREATE ROLE peek_vs_stranger;
GRANT USAGE ON SCHEMA peek TO peek_vs_owner, peek_vs_stranger;
CREATE SCHEMA vs_own AUTHORIZATION peek_vs_owner;
CREATE SCHEMA vs_stranger AUTHORIZATION peek_vs_stranger;
GRANT SELECT ON slines TO peek_vs_owner;
SET ROLE peek_vs_stranger;
SET search_path = vs_stranger, public;
SELECT try($$SELECT peek.create_view('snope', 'SELECT id FROM slines')$$);
SELECT try($$SELECT peek.create_view('snope', 'SELECT id FROM peek.persist_peek(NULL::slines, ''slines_src'')')$$);
RESET ROLE;
SELECT count(*) AS views, (SELECT count(*) FROM pg_class WHERE relname = 'snope') AS pg_views
  FROM peek.views WHERE name = 'snope';
SET ROLE peek_vs_owner;
SET search_path = vs_own, public;
SELECT peek.create_view('sowned', $$SELECT id, cust FROM slines WHERE qty > 10$$);
SELECT peek.create_index('sowned_cust', 'sowned', ARRAY['cust']);
RESET ROLE;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'sowned'$$)
   AND wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'sowned_cust'$$);
INSERT INTO slines VALUES (15, 0, 50);
SET ROLE peek_vs_owner;
SELECT wait_for($$SELECT count(*) = 5 FROM sowned$$);
SELECT * FROM sowned ORDER BY id;
-- (at the view's time: a peek at a time waits for the index to reach it)
SELECT * FROM peek.index_peek(NULL::sowned, 'sowned_cust', ROW(0),
    as_of => (SELECT upper - 1 FROM peek.views WHERE name = 'sowned')) ORDER BY id;
SELECT name, owner, state FROM peek.views ORDER BY name;
-- peek.dataflow_operators shows what peek.views shows
SELECT view, operator, kind FROM peek.dataflow_operators ORDER BY view, operator;
RESET ROLE;
SET ROLE peek_vs_stranger;
SELECT count(*) FROM peek.dataflow_operators;
RESET ROLE;
GRANT pg_read_all_stats TO peek_vs_stranger;
SET ROLE peek_vs_stranger;
SELECT count(DISTINCT view) FROM peek.dataflow_operators;
RESET ROLE;
REVOKE pg_read_all_stats FROM peek_vs_stranger;
SELECT relnamespace::regnamespace, relowner::regrole FROM pg_class WHERE relname = 'sowned';
-- the right revoked: the view fails rather than take more of the source
REVOKE SELECT ON slines FROM peek_vs_owner;
INSERT INTO slines VALUES (16, 0, 60);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'sowned'$$);
SELECT failure FROM peek.views WHERE name = 'sowned';
SET ROLE peek_vs_owner;
SELECT peek.drop_view('sowned');
RESET ROLE;
SET search_path = public;
DROP SCHEMA vs_own, vs_stranger;
REVOKE USAGE ON SCHEMA peek FROM peek_vs_owner, peek_vs_stranger;
DROP ROLE peek_vs_owner, peek_vs_stranger;

-- a hydration shows how far it has read its input: a view whose WHERE
-- takes a millisecond a row (an immutable function that sleeps)
CREATE FUNCTION sslow(v int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM pg_sleep(0.001); RETURN v >= 0; END $$;
CREATE TYPE sitem AS (id int);
SELECT peek.create_collection('sitems', 'sitem');
SELECT peek.write('sitems', (SELECT array_agg(ROW(g)::sitem) FROM generate_series(1, 3000) g));
SELECT name, state, hydration_rows_read, hydration_rows_total FROM peek.views
 WHERE hydration_rows_read IS NOT NULL OR hydration_rows_total IS NOT NULL;
SELECT peek.create_view('sslowv', $$SELECT id FROM peek.persist_peek(NULL::sitem, 'sitems') WHERE sslow(id)$$);
SELECT wait_for($$SELECT hydration_rows_read >= 1024 FROM peek.views WHERE name = 'sslowv'$$);
SELECT state, hydration_rows_read < hydration_rows_total AS partway
  FROM peek.views WHERE name = 'sslowv';
-- the progress is shown exactly while the state is 'hydrating' (through
-- the round's commit and the upper's publication), never more read than
-- there are: sampled until it is ready, no sample says otherwise
CREATE FUNCTION sprogress_mismatches(v text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    bad int := 0;
    s record;
BEGIN
    FOR i IN 1 .. 6000 LOOP
        SELECT state, hydration_rows_read AS rd, hydration_rows_total AS total
          INTO s FROM peek.views WHERE name = v;
        IF (s.state = 'hydrating') <> (s.rd IS NOT NULL) OR s.rd > s.total THEN
            bad := bad + 1;
        END IF;
        EXIT WHEN s.state = 'ready';
        PERFORM pg_sleep(0.005);
    END LOOP;
    RETURN bad;
END $$;
SELECT sprogress_mismatches('sslowv');
DROP FUNCTION sprogress_mismatches(text);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'sslowv'$$);
SELECT state, hydration_rows_read, hydration_rows_total, rows FROM peek.views WHERE name = 'sslowv';
SELECT view, operator, kind, rows_in >= 3000 AS rows_in, rows_out >= 3000 AS rows_out
  FROM peek.dataflow_operators WHERE view = 'sslowv' ORDER BY operator;
SELECT peek.drop_view('sslowv');
SELECT count(*) FROM peek.dataflow_operators WHERE view = 'sslowv';
SELECT peek.drop_collection('sitems');
DROP FUNCTION sslow(int);
DROP TYPE sitem;

-- row-level security: a source reads its table as a superuser, so none
-- can be captured with it enabled, and enabling it fails the source and
-- the views over it
ALTER TABLE slines ENABLE ROW LEVEL SECURITY;
INSERT INTO slines VALUES (17, 1, 70);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'failed'$$);
SELECT name, state, regexp_replace(failure, 'source_[0-9]+', 'source_N', 'g') AS failure
  FROM peek.views ORDER BY name;
SELECT peek.drop_view('sbig');
SELECT peek.drop_view('stotals');
SELECT peek.drop_view('speek');
SELECT peek.drop_source('slines_src');
DROP TABLE slines, splain;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
