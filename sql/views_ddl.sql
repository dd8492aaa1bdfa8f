-- PostgreSQL's own DDL on the PostgreSQL view beside a maintained view
-- (src/sql/view_guard.c), by roles that are no superusers, each with its
-- own schema:
--  * ALTER VIEW / ALTER TABLE ... OWNER TO and REASSIGN OWNED give the
--    maintained view and its indexes to the new owner, whose rights its
--    rounds take from then on; refused (42501, naming the input) when the
--    new owner may not read an input, or the owner of a view reading it
--    could no longer read it;
--  * RENAME (of the view, a column, an attribute of its row type), SET
--    SCHEMA, other ALTERs and another body are refused (0A000), DROP VIEW
--    (2BP01) points to peek.drop_view; each changes nothing;
--  * its body replaced by itself (as pg_restore does) keeps what its query
--    uses from being dropped.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE dorders (id int PRIMARY KEY, cust int, amount int);
INSERT INTO dorders SELECT g, g % 3, g FROM generate_series(1, 9) g;
SET client_min_messages = warning;
SELECT peek.create_source('dorders_src', 'dorders');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'dorders_src'$$);
CREATE FUNCTION ddouble(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';

CREATE ROLE peek_vd_alice;
CREATE ROLE peek_vd_bob;
CREATE ROLE peek_vd_carol;
GRANT USAGE ON SCHEMA peek TO peek_vd_alice, peek_vd_bob, peek_vd_carol;
CREATE SCHEMA vd_alice AUTHORIZATION peek_vd_alice;
CREATE SCHEMA vd_bob AUTHORIZATION peek_vd_bob;
GRANT USAGE ON SCHEMA vd_alice TO peek_vd_bob, peek_vd_carol;
GRANT SELECT ON dorders TO peek_vd_alice, peek_vd_bob;

SET ROLE peek_vd_alice;
SET search_path = vd_alice, public;
SELECT peek.create_view('dtotals', $$SELECT cust, sum(ddouble(amount)) AS total FROM dorders GROUP BY cust$$);
SELECT peek.create_index('dtotals_cust', 'dtotals', ARRAY['cust']);
RESET ROLE;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'dtotals'$$)
   AND wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'dtotals_cust'$$);
SET ROLE peek_vd_alice;
SELECT * FROM vd_alice.dtotals ORDER BY cust;
SELECT count(*) FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals');
RESET ROLE;

-- carol may not read the source's table: refused, naming the input
ALTER VIEW vd_alice.dtotals OWNER TO peek_vd_carol;
SELECT try($$ALTER TABLE vd_alice.dtotals OWNER TO peek_vd_carol$$);
SELECT try($$REASSIGN OWNED BY peek_vd_alice TO peek_vd_carol$$);
SELECT c.relowner::regrole AS pg_owner, o.owner, o.name
  FROM peek.objects o, pg_class c
 WHERE o.name IN ('dtotals', 'dtotals_cust') AND c.oid = 'vd_alice.dtotals'::regclass ORDER BY o.name;

-- bob may: the view and its index follow; alice, who cached it, no longer
-- reads it; its rounds take bob's rights, not alice's
ALTER VIEW vd_alice.dtotals OWNER TO peek_vd_bob;
SELECT c.relowner::regrole AS pg_owner, o.owner, o.name
  FROM peek.objects o, pg_class c
 WHERE o.name IN ('dtotals', 'dtotals_cust') AND c.oid = 'vd_alice.dtotals'::regclass ORDER BY o.name;
SET ROLE peek_vd_alice;
SELECT try($$SELECT * FROM vd_alice.dtotals$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals')$$);
RESET ROLE;
REVOKE SELECT ON dorders FROM peek_vd_alice;
INSERT INTO dorders VALUES (10, 5, 1);
SET ROLE peek_vd_bob;
SELECT wait_for($$SELECT count(*) = 4 FROM vd_alice.dtotals$$);
SELECT * FROM vd_alice.dtotals ORDER BY cust;
SELECT * FROM peek.index_peek(NULL::vd_alice.dtotals, 'dtotals_cust', ROW(5),
    as_of => (SELECT upper - 1 FROM peek.views WHERE name = 'dtotals'));
SELECT name, owner, state FROM peek.views;
-- bob's own view over it, in his schema
SET search_path = vd_bob, public;
SELECT peek.create_view('dtop', $$
    SELECT cust FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals') WHERE total > 20$$);
RESET ROLE;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'dtop'$$);

-- given back to alice, bob's view over it could no longer read it: refused
GRANT SELECT ON dorders TO peek_vd_alice;
ALTER VIEW vd_alice.dtotals OWNER TO peek_vd_alice;
-- REASSIGN OWNED gives both to alice, who reads both
REASSIGN OWNED BY peek_vd_bob TO peek_vd_alice;
SELECT name, owner, state FROM peek.views ORDER BY name;
INSERT INTO dorders VALUES (11, 6, 50);
SET ROLE peek_vd_alice;
SELECT wait_for($$SELECT count(*) = 4 FROM vd_bob.dtop$$);
SELECT * FROM vd_bob.dtop ORDER BY cust;
RESET ROLE;

-- anything else that would change it: refused, changing nothing
ALTER VIEW vd_alice.dtotals RENAME TO dsums;
DROP VIEW vd_alice.dtotals;
CREATE OR REPLACE VIEW vd_alice.dtotals AS SELECT 1 AS cust, 2::bigint AS total;
SELECT try($$ALTER TABLE vd_alice.dtotals RENAME TO dsums$$);
SELECT try($$ALTER VIEW vd_alice.dtotals RENAME COLUMN total TO sum$$);
SELECT try($$ALTER TABLE vd_alice.dtotals RENAME COLUMN total TO sum$$);
SELECT try($$ALTER TYPE vd_alice.dtotals RENAME ATTRIBUTE total TO sum$$);
SELECT try($$ALTER VIEW vd_alice.dtotals SET SCHEMA vd_bob$$);
SELECT try($$ALTER VIEW vd_alice.dtotals ALTER COLUMN total SET DEFAULT 0$$);
SELECT try($$ALTER VIEW vd_alice.dtotals SET (security_barrier = true)$$);
SELECT try($$CREATE OR REPLACE VIEW vd_alice.dtotals AS
    SELECT * FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals') WHERE cust = 1$$);
SELECT try($$DROP VIEW IF EXISTS vd_bob.nosuch, vd_alice.dtotals RESTRICT$$);
SET search_path = vd_alice, public;
SELECT try($$CREATE OR REPLACE VIEW dtotals AS SELECT cust, total + 1 AS total
    FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals')$$);
SET search_path = public;
SELECT c.relname, c.relnamespace::regnamespace, c.relowner::regrole, pg_get_viewdef(c.oid) AS body
  FROM pg_class c WHERE c.reltype = 'vd_alice.dtotals'::regtype;
SELECT name, owner, state FROM peek.views ORDER BY name;

-- its body replaced by itself, as pg_restore does: what its query uses
-- still cannot be dropped or changed
CREATE OR REPLACE VIEW vd_alice.dtotals AS
    SELECT * FROM peek.persist_peek(NULL::vd_alice.dtotals, 'dtotals');
SELECT try($$DROP FUNCTION ddouble(int)$$);
SELECT try($$DROP TABLE dorders$$);
SELECT try($$ALTER TABLE dorders DROP COLUMN amount$$);
SELECT try($$ALTER TABLE dorders ALTER COLUMN amount TYPE bigint$$);

-- both go with peek.drop_view, by their owner
SET ROLE peek_vd_alice;
SELECT peek.drop_view('dtop');
SELECT peek.drop_view('dtotals');
RESET ROLE;
SELECT count(*) AS views, (SELECT count(*) FROM pg_class WHERE relname IN ('dtop', 'dtotals')) AS pg_views
  FROM peek.views;
DROP OWNED BY peek_vd_alice, peek_vd_bob, peek_vd_carol;
DROP ROLE peek_vd_alice, peek_vd_bob, peek_vd_carol;
SELECT peek.drop_source('dorders_src');
DROP TABLE dorders;
DROP FUNCTION ddouble(int);
