-- A view's plan kept between rounds (views.c dataflow_view_plan) against
-- rights its owner has through a role it is a member of: parse analysis
-- checks USAGE on a schema its text names, and inlining a SQL function
-- checks EXECUTE on it (a function inlined is not checked again when it
-- runs).  REVOKE of that role from the owner (or an owner's superuser
-- taken away) changes no function's, schema's or relation's catalog row,
-- yet the next round must fail the view (42501) as a plan made again
-- would, not run the kept plan.  A text search configuration or
-- dictionary the view names cannot be renamed or moved (2BP01).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE pcitems (id int PRIMARY KEY, k int);
INSERT INTO pcitems VALUES (1, 10), (2, 20);
SET client_min_messages = warning;
SELECT peek.create_source('pcitems_src', 'pcitems');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'pcitems_src'$$);

CREATE ROLE peek_pc_owner;
CREATE ROLE peek_pc_grp;
GRANT USAGE ON SCHEMA peek TO peek_pc_owner;
GRANT SELECT ON pcitems TO peek_pc_owner;
CREATE SCHEMA pc_own AUTHORIZATION peek_pc_owner;
-- a schema the owner may use only through peek_pc_grp
CREATE SCHEMA pc_lib;
GRANT USAGE ON SCHEMA pc_lib TO peek_pc_grp;
CREATE FUNCTION pc_lib.twice(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
-- a function (inlined) the owner may run only through peek_pc_grp
CREATE FUNCTION pc_thrice(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 3';
REVOKE EXECUTE ON FUNCTION pc_thrice(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pc_thrice(int) TO peek_pc_grp;
GRANT peek_pc_grp TO peek_pc_owner;

SET ROLE peek_pc_owner;
SET search_path = pc_own;
SELECT peek.create_view('pctwice', $$SELECT id, pc_lib.twice(k) AS k2 FROM public.pcitems$$);
SELECT peek.create_view('pcthrice', $$SELECT id, public.pc_thrice(k) AS k3 FROM public.pcitems$$);
RESET search_path;
RESET ROLE;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.views WHERE name IN ('pctwice', 'pcthrice')$$);
-- a round after the first keeps its plan
INSERT INTO pcitems VALUES (3, 30);
SELECT wait_for($$SELECT (SELECT count(*) FROM pc_own.pctwice) = 3 AND (SELECT count(*) FROM pc_own.pcthrice) = 3$$);
SELECT * FROM pc_own.pctwice ORDER BY id;
SELECT * FROM pc_own.pcthrice ORDER BY id;

-- the owner loses both rights: the next round fails each view
REVOKE peek_pc_grp FROM peek_pc_owner;
INSERT INTO pcitems VALUES (4, 40);
SELECT wait_for($$SELECT bool_and(state = 'failed') FROM peek.views WHERE name IN ('pctwice', 'pcthrice')$$, 10);
SELECT name, state, failure FROM peek.views WHERE name IN ('pctwice', 'pcthrice') ORDER BY name;

-- a superuser owner made no superuser: the inlined function it may not run
-- fails its view at the next round (ALTER ROLE changes pg_authid alone)
CREATE ROLE peek_pc_super SUPERUSER;
GRANT USAGE ON SCHEMA peek TO peek_pc_super;
GRANT SELECT ON pcitems TO peek_pc_super;
SET ROLE peek_pc_super;
SELECT peek.create_view('pcsuper', $$SELECT id, public.pc_thrice(k) AS k3 FROM public.pcitems$$);
RESET ROLE;
SELECT wait_for($$SELECT state = 'ready' AND upper > 0 FROM peek.views WHERE name = 'pcsuper'$$);
INSERT INTO pcitems VALUES (5, 50);
SELECT wait_for($$SELECT count(*) = 5 FROM public.pcsuper$$);
ALTER ROLE peek_pc_super NOSUPERUSER;
INSERT INTO pcitems VALUES (6, 60);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'pcsuper'$$, 10);
SELECT name, state, failure FROM peek.views WHERE name = 'pcsuper';

-- a text search configuration or dictionary its text names by name
-- (regconfig, regdictionary constants) renamed or moved to another schema
-- is refused (2BP01, naming the view), as a function or type it uses is:
-- the kept text would name another, or none (the next round's plan failed
-- the view with 42704)
CREATE TEXT SEARCH CONFIGURATION pc_cfg (COPY = english);
CREATE TEXT SEARCH DICTIONARY pc_dict (TEMPLATE = simple);
CREATE SCHEMA pc_ts;
SELECT peek.create_view('pcts', $$SELECT id, to_tsvector('pc_cfg'::regconfig, k::text)::text AS v,
    ts_lexize('pc_dict'::regdictionary, 'Ab') AS l FROM public.pcitems$$);
SELECT wait_for($$SELECT state = 'ready' AND upper > 0 FROM peek.views WHERE name = 'pcts'$$);
INSERT INTO pcitems VALUES (7, 70);
SELECT wait_for($$SELECT count(*) = 7 FROM public.pcts$$);
SELECT try($$ALTER TEXT SEARCH CONFIGURATION pc_cfg RENAME TO pc_cfg_renamed$$);
SELECT try($$ALTER TEXT SEARCH CONFIGURATION pc_cfg SET SCHEMA pc_ts$$);
SELECT try($$ALTER TEXT SEARCH DICTIONARY pc_dict RENAME TO pc_dict_renamed$$);
SELECT try($$ALTER TEXT SEARCH DICTIONARY pc_dict SET SCHEMA pc_ts$$);
INSERT INTO pcitems VALUES (8, 80);
SELECT wait_for($$SELECT count(*) = 8 FROM public.pcts$$);
SELECT name, state, failure FROM peek.views WHERE name = 'pcts';
SELECT * FROM public.pcts WHERE id = 8;
-- with the view dropped, they go through
SELECT peek.drop_view('pcts');
ALTER TEXT SEARCH CONFIGURATION pc_cfg RENAME TO pc_cfg_renamed;
ALTER TEXT SEARCH DICTIONARY pc_dict SET SCHEMA pc_ts;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE pcitems;
DROP FUNCTION pc_thrice(int);
DROP TEXT SEARCH CONFIGURATION pc_cfg_renamed;
DROP SCHEMA pc_ts CASCADE;
DROP SCHEMA pc_lib CASCADE;
DROP SCHEMA pc_own CASCADE;
DROP ROLE peek_pc_owner, peek_pc_grp, peek_pc_super;
