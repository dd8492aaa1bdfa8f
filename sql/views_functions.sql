-- PostgreSQL's DDL on the functions, operators and types a maintained view
-- uses (src/sql/view_uses_guard.c), by a role that is no superuser, in its
-- own schema. A view keeps its query as text and its rows as computed, so:
--  * CREATE OR REPLACE FUNCTION / ALTER FUNCTION changing what such a
--    function computes (body, volatility, strictness, settings, security),
--    or what a function an operator it uses calls, is refused (2BP01,
--    naming the view): else old rows differ from the query and a later
--    retraction, computed by the new body, leaves multiplicity -1;
--  * renaming or moving such a function, operator or type (or renaming a
--    column of such a row type, or their schema) is refused the same way:
--    else the kept text names another object the next time a runtime
--    plans it;
--  * owner, cost, an identical body and other overloads go through;
--  * each refused statement changes nothing, in a savepoint too.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE ROLE peek_vf_alice;
CREATE ROLE peek_vf_bob;
GRANT USAGE ON SCHEMA peek TO peek_vf_alice;
CREATE SCHEMA vf_alice AUTHORIZATION peek_vf_alice;
CREATE SCHEMA vf_alice2 AUTHORIZATION peek_vf_alice;

SET ROLE peek_vf_alice;
SET search_path = vf_alice, public;
CREATE TYPE vfrow AS (k int, v int);
CREATE DOMAIN vfpos AS int;
CREATE FUNCTION g2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
CREATE FUNCTION h2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
CREATE FUNCTION vfplus(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + $2';
CREATE OPERATOR ## (LEFTARG = int, RIGHTARG = int, FUNCTION = vfplus);
SELECT peek.create_collection('vfrows', 'vfrow');
SELECT peek.write('vfrows', ARRAY[(1, 1), (2, 2), (3, 3)]::vfrow[]);
SELECT peek.create_view('r2_map', 'SELECT k, g2(v) AS g FROM peek.persist_peek(NULL::vfrow, ''vfrows'')');
SELECT peek.create_view('r2_h', $$SELECT k, h2(v) ## v AS h, v::vfpos AS p
    FROM peek.persist_peek(NULL::vfrow, 'vfrows')$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready'$$)
   AND wait_for($$SELECT count(*) = 3 FROM r2_map$$) AND wait_for($$SELECT count(*) = 3 FROM r2_h$$);
SELECT * FROM r2_map ORDER BY k;
SELECT * FROM r2_h ORDER BY k;

-- A: a new body of a function the view calls, refused with what to do
CREATE OR REPLACE FUNCTION g2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 1000';
-- the same in a savepoint; the transaction goes on unchanged
BEGIN;
SAVEPOINT s;
CREATE OR REPLACE FUNCTION g2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 1000';
ROLLBACK TO s;
SELECT g2(1);
SAVEPOINT s;
ALTER FUNCTION h2(int) RENAME TO h2_old;
ROLLBACK TO s;
SELECT h2(1);
COMMIT;
-- each change to what a function computes, or to its name or schema
SELECT try($$ALTER FUNCTION g2(int) VOLATILE$$);
SELECT try($$ALTER FUNCTION g2(int) STRICT$$);
SELECT try($$ALTER FUNCTION g2(int) SECURITY DEFINER$$);
SELECT try($$ALTER FUNCTION g2(int) SET search_path = vf_alice2$$);
SELECT try($$CREATE OR REPLACE FUNCTION g2(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
    AS 'BEGIN RETURN $1 * 10; END'$$);
SELECT try($$ALTER FUNCTION g2(int) SET SCHEMA vf_alice2$$);
-- B: renamed and replaced by another of its name
SELECT try($$ALTER FUNCTION h2(int) RENAME TO h2_old$$);
SELECT try($$ALTER ROUTINE h2(int) RENAME TO h2_old$$);
-- an operator's schema, or its function's body; a type's name, schema or
-- a column's name
SELECT try($$ALTER OPERATOR ## (int, int) SET SCHEMA vf_alice2$$);
SELECT try($$CREATE OR REPLACE FUNCTION vfplus(int, int) RETURNS int IMMUTABLE LANGUAGE sql
    AS 'SELECT $1 - $2'$$);
SELECT try($$ALTER DOMAIN vfpos RENAME TO vfpos_old$$);
SELECT try($$ALTER TYPE vfpos SET SCHEMA vf_alice2$$);
SELECT try($$ALTER TYPE vfrow RENAME TO vfrow_old$$);
SELECT try($$ALTER TYPE vfrow RENAME ATTRIBUTE v TO w$$);
SELECT try($$ALTER TYPE vfrow SET SCHEMA vf_alice2$$);
RESET ROLE;
SELECT try($$ALTER SCHEMA vf_alice RENAME TO vf_alice_old$$);
SET ROLE peek_vf_alice;
SELECT p.oid::regprocedure, prosrc, provolatile, proisstrict, prosecdef, proconfig
  FROM pg_proc p WHERE pronamespace = 'vf_alice'::regnamespace ORDER BY p.oid::regprocedure::text;
SELECT oid::regtype FROM pg_type WHERE typnamespace = 'vf_alice'::regnamespace AND typname LIKE 'vf%' ORDER BY oid::regtype::text;

-- what does not change a row goes through: an identical body, cost,
-- parallel safety, an overload the views do not call, the owner
CREATE OR REPLACE FUNCTION g2(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
ALTER FUNCTION g2(int) COST 5 PARALLEL SAFE;
CREATE FUNCTION g2(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
CREATE OR REPLACE FUNCTION g2(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 1000';
ALTER FUNCTION g2(bigint) RENAME TO g3;
RESET ROLE;
ALTER SCHEMA vf_alice2 RENAME TO vf_alice3;
ALTER FUNCTION vf_alice.g2(int) OWNER TO peek_vf_bob;
ALTER FUNCTION vf_alice.g2(int) OWNER TO peek_vf_alice;
SET ROLE peek_vf_alice;

-- the views still answer their queries, after a delete and an insert too
SELECT peek.write('vfrows', ARRAY[(4, 4)]::vfrow[], ARRAY[(1, 1)]::vfrow[]);
SELECT wait_for($$SELECT (SELECT array_agg((k, g) ORDER BY k) FROM r2_map) =
                         (SELECT array_agg((k, g2(v)) ORDER BY k) FROM peek.persist_peek(NULL::vfrow, 'vfrows'))
                     AND (SELECT array_agg((k, h, p) ORDER BY k) FROM r2_h) =
                         (SELECT array_agg((k, h2(v) ## v, v::vfpos) ORDER BY k) FROM peek.persist_peek(NULL::vfrow, 'vfrows'))$$);
SELECT * FROM r2_map ORDER BY k;
SELECT * FROM r2_h ORDER BY k;
SELECT name, state FROM peek.views ORDER BY name;

-- DROP FUNCTION is PostgreSQL's own 2BP01; with CASCADE it drops the
-- PostgreSQL views and shards, and fails the maintained views (which
-- peek.drop_view then drops), as DROP VIEW CASCADE; rolled back, nothing
SELECT try($$DROP FUNCTION g2(int)$$);
BEGIN;
SET client_min_messages = warning;
DROP FUNCTION g2(int) CASCADE;
RESET client_min_messages;
ROLLBACK;
SELECT name, state FROM peek.views ORDER BY name;
SELECT * FROM r2_map ORDER BY k;
SET client_min_messages = warning;
DROP FUNCTION g2(int) CASCADE;
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'r2_map'$$);
SELECT name, state FROM peek.views ORDER BY name;
SELECT count(*) FROM pg_class WHERE relname = 'r2_map';
-- once the views are dropped, everything goes
SELECT peek.drop_view('r2_map');
SELECT peek.drop_view('r2_h');
CREATE OR REPLACE FUNCTION vfplus(int, int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 - $2';
ALTER FUNCTION h2(int) RENAME TO h2_old;
ALTER TYPE vfrow RENAME ATTRIBUTE v TO w;
SELECT peek.drop_collection('vfrows');
RESET ROLE;
RESET search_path;
DROP OWNED BY peek_vf_alice, peek_vf_bob;
DROP ROLE peek_vf_alice, peek_vf_bob;
