-- A maintained view's PostgreSQL view keeps its body, its persist peek,
-- under CREATE OR REPLACE RULE "_RETURN" too (another way than CREATE OR
-- REPLACE VIEW to give a view another body): another body is refused
-- (0A000) and nothing changes, so a view reading it by name reads what
-- SELECT from it reads; its own body again goes through.  Other rules
-- (ON INSERT) do not change what it reads and go through.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE rlines (id int PRIMARY KEY, cust int, qty int);
INSERT INTO rlines SELECT g, g % 4, g FROM generate_series(1, 20) g;
CREATE TABLE rother (cust int, n bigint, total bigint);
INSERT INTO rother VALUES (99, 99, 99);
SET client_min_messages = warning;
SELECT peek.create_source('rlines_src', 'rlines');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'rlines_src'$$);
SELECT peek.create_view('rtotals', $$SELECT cust, count(*) AS n, sum(qty) AS total FROM rlines GROUP BY cust$$);

-- another body through the view's ON SELECT rule: refused, the body kept
SELECT try($$CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO rtotals DO INSTEAD SELECT * FROM rother$$);
SELECT pg_get_viewdef('rtotals') LIKE '%persist_peek(NULL::rtotals, ''rtotals''::text)%' AS body_kept;
-- its own peek filtered is another body too
SELECT try($$CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO rtotals DO INSTEAD SELECT cust, n, total FROM peek.persist_peek(NULL::rtotals, 'rtotals') WHERE cust > 1$$);
SELECT pg_get_viewdef('rtotals') LIKE '%persist_peek(NULL::rtotals, ''rtotals''::text)%' AS body_kept;
-- its own body goes through
SELECT try($$CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO rtotals DO INSTEAD SELECT * FROM peek.persist_peek(NULL::rtotals, 'rtotals')$$);
-- a rule on another event does not change what it reads
SELECT try($$CREATE RULE rtotals_ins AS ON INSERT TO rtotals DO INSTEAD NOTHING$$);
DROP RULE rtotals_ins ON rtotals;

-- a view reading it by name reads what SELECT from it reads
SELECT peek.create_view('rbig', $$SELECT cust, total FROM rtotals WHERE total > 50$$);
INSERT INTO rlines VALUES (21, 3, 500), (22, 5, 7);
DELETE FROM rlines WHERE cust = 1;
SELECT wait_for($$SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
    AND (SELECT upper >= pg_current_wal_insert_lsn() - '0/0' FROM peek.collections WHERE name = 'rlines_src')$$);
SELECT (SELECT array_agg((cust, total) ORDER BY cust) FROM rbig) IS NOT DISTINCT FROM
       (SELECT array_agg((cust, total) ORDER BY cust) FROM rtotals WHERE total > 50) AS rbig_equal,
       (SELECT count(*) FROM rtotals WHERE cust = 99) AS others_rows;

SELECT peek.drop_view('rbig');
SELECT peek.drop_view('rtotals');
SELECT peek.drop_source('rlines_src');
DROP TABLE rlines, rother;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
