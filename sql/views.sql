-- Maintained views: create_view and drop_view, the PostgreSQL view beside
-- each, peeks and indexes over a view, what is refused (0A000), the drop of
-- an input (2BP01), privileges, and an expression error failing its view
-- alone, and expressions run as the view's owner.  The randomized oracle is
-- TAP 370_view_oracle.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE vitem AS (id int, name text, qty numeric);
SELECT peek.create_collection('vitems', 'vitem');
SELECT peek.write('vitems', ARRAY[(1, 'apple', 2), (2, 'pear', 3), (3, 'fig', 0)]::vitem[]);

-- filter, map and project; a PostgreSQL view of the same name reads it
SELECT peek.create_view('vbig', $$
    SELECT id, qty * 2 AS double, upper(name) AS shout
      FROM peek.persist_peek(NULL::vitem, 'vitems') WHERE qty > 1$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'vbig'$$);
SELECT name, query, inputs, state, since, upper, lag, rows FROM peek.views;
SELECT * FROM vbig ORDER BY id;
\d vbig
-- inserts and retractions at later times; every time stays readable
SELECT peek.write('vitems', ARRAY[(4, 'kiwi', 5)]::vitem[], ARRAY[(1, 'apple', 2)]::vitem[]);
SELECT peek.write('vitems', ARRAY[(5, 'lime', 1)]::vitem[]);
SELECT * FROM peek.persist_peek(NULL::vbig, 'vbig', as_of => 2) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::vbig, 'vbig', as_of => 0) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::vbig, 'vbig', as_of => 1) ORDER BY id;
-- an index on a view, peeked by key
SELECT peek.create_index('vbig_id', 'vbig', ARRAY['id']);
SELECT wait_for($$SELECT state = 'ready' AND upper = 3 FROM peek.indexes WHERE name = 'vbig_id'$$);
SELECT * FROM peek.index_peek(NULL::vbig, 'vbig_id', ROW(4));
SELECT * FROM peek.index_peek(NULL::vbig, 'vbig_id', ROW(1), as_of => 0);
-- a view over a view
SELECT peek.create_view('vbig_ids', $$SELECT id FROM peek.persist_peek(NULL::vbig, 'vbig') WHERE id > 2$$);
SELECT wait_for($$SELECT upper = 3 FROM peek.views WHERE name = 'vbig_ids'$$);
SELECT * FROM vbig_ids ORDER BY id;
-- the shown kinds
SELECT object, kind, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') ORDER BY object;

-- what the operators do not support yet: 0A000, naming it
SELECT try($$SELECT peek.create_view('x', 'SELECT a.id FROM peek.persist_peek(NULL::vitem, ''vitems'') a JOIN peek.persist_peek(NULL::vitem, ''vitems'') b ON a.id < b.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT a.id FROM peek.persist_peek(NULL::vitem, ''vitems'') a, peek.persist_peek(NULL::vitem, ''vitems'') b')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id, row_number() OVER () FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') LIMIT 1')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') OFFSET 1')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') ORDER BY id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE id IN (SELECT 1)')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM (SELECT DISTINCT * FROM peek.persist_peek(NULL::vitem, ''vitems'')) s')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id, random() FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE now() > ''2000-01-01''')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id, qty::text FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE now() > ''2000-01-01''')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id, current_date FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT DISTINCT ON (id) id FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') UNION SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'WITH w AS MATERIALIZED (SELECT * FROM peek.persist_peek(NULL::vitem, ''vitems'')) SELECT id FROM w')$$);
SELECT try($$SELECT peek.create_view('x', 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT generate_series(1, id) FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') FOR UPDATE')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT p FROM peek.persist_peek(NULL::vitem, ''vitems'') p')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT * FROM peek.persist_peek(NULL::vitem, ''vitems'', as_of => 1)')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT * FROM peek.persist_peek(NULL::vitem, ''vit'' || ''ems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT * FROM peek.persist_peek(NULL::vitem, ''vitems'') WITH ORDINALITY')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT * FROM generate_series(1, 3)')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT * FROM pg_class')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT 1 AS one')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT 1; SELECT 2')$$);
SELECT try($$SELECT peek.create_view('x', 'DELETE FROM pg_class')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id INTO vnew FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
-- a temporary function or type (the view outlasts the session)
CREATE FUNCTION pg_temp.vplus(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
CREATE TYPE pg_temp.vtemp AS (a int);
SELECT try($$SELECT peek.create_view('x', 'SELECT pg_temp.vplus(id) AS y FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE CASE WHEN id > 1 THEN pg_temp.vplus(id) END > 2')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT ROW(id)::pg_temp.vtemp AS t FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE (ROW(id)::pg_temp.vtemp).a > 1')$$);
-- a temporary operator (of a function that is not) or collation
CREATE OPERATOR pg_temp.### (LEFTARG = int, RIGHTARG = int, FUNCTION = int4pl);
CREATE OPERATOR pg_temp.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
CREATE COLLATION pg_temp.vcoll FROM "C";
SELECT try($$SELECT peek.create_view('x', 'SELECT id OPERATOR(pg_temp.###) 1 AS y FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE id OPERATOR(pg_temp.===) ANY (ARRAY[1, 2])')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT max(name COLLATE pg_temp.vcoll) AS m FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
DROP FUNCTION pg_temp.vplus(int);
DROP TYPE pg_temp.vtemp;
DROP OPERATOR pg_temp.### (int, int);
DROP OPERATOR pg_temp.=== (int, int);
DROP COLLATION pg_temp.vcoll;
-- other mistakes, each with its own SQLSTATE; nothing was created
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''nosuch'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::vbig, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('vbig', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT nosuch FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
-- an error's position is in the view's query, not in the call that passed it
SELECT peek.create_view('x', 'SELECT id,, 1 FROM peek.persist_peek(NULL::vitem, ''vitems'')');
SELECT peek.create_view('x', E'SELECT id\n  FROM peek.persist_peek(NULL::vitem, ''vitems'')\n  WHERE nosuch > 0');
SELECT try($$SELECT peek.create_view('x', NULL)$$);
SELECT try($$SELECT peek.create_view('', 'SELECT 1')$$);
SELECT count(*) AS views, (SELECT count(*) FROM pg_class WHERE relname = 'x') AS pg_views FROM peek.views;

-- a view's rows come from its query only
SELECT try($$SELECT peek.write('vbig', ARRAY[(9, 1, 'X')]::vbig[])$$);
SELECT try($$SELECT peek.append('vbig', ARRAY[(9, 1, 'X')]::vbig[], 10)$$);
SELECT try($$SELECT peek.advance('vbig', 10)$$);
SELECT try($$SELECT peek.drop_collection('vbig')$$);
SELECT try($$SELECT peek.drop_view('vitems')$$);
SELECT try($$SELECT peek.drop_view('nosuch')$$);

-- an input a view reads cannot be dropped (2BP01, naming the view)
SELECT try($$SELECT peek.drop_collection('vitems')$$);
SELECT try($$SELECT peek.drop_view('vbig')$$);
SELECT try($$DROP VIEW vbig$$);
SELECT peek.drop_view('vbig_ids');
SELECT name FROM peek.views ORDER BY name;

-- privileges: reading the input is needed (its owner, or pg_read_all_data)
CREATE ROLE peek_view_stranger;
CREATE ROLE peek_view_reader IN ROLE pg_read_all_data;
GRANT CREATE ON SCHEMA public TO peek_view_stranger, peek_view_reader;
GRANT USAGE ON SCHEMA peek TO peek_view_stranger;
SET ROLE peek_view_stranger;
SELECT try($$SELECT peek.create_view('vsteal', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'')')$$);
SELECT try($$SELECT peek.drop_view('vbig')$$);
SELECT count(*) FROM peek.views;
SELECT try($$SELECT * FROM vbig$$);
RESET ROLE;
SET ROLE peek_view_reader;
SELECT peek.create_view('vread', 'SELECT id FROM peek.persist_peek(NULL::vitem, ''vitems'') WHERE id > 3');
SELECT name, owner FROM peek.views ORDER BY name;
RESET ROLE;
SELECT viewowner FROM pg_views WHERE viewname = 'vread';
SELECT wait_for($$SELECT upper = 3 FROM peek.views WHERE name = 'vread'$$);
SET ROLE peek_view_reader;
SELECT * FROM vread ORDER BY id;
SELECT peek.drop_view('vread');
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM peek_view_stranger, peek_view_reader;
REVOKE USAGE ON SCHEMA peek FROM peek_view_stranger;
DROP ROLE peek_view_stranger, peek_view_reader;

-- a view whose owner loses the right to read its input takes no more of it:
-- it fails (42501 as its reason), as REFRESH MATERIALIZED VIEW would
CREATE ROLE peek_view_reader IN ROLE pg_read_all_data;
GRANT CREATE ON SCHEMA public TO peek_view_reader;
GRANT USAGE ON SCHEMA peek TO peek_view_reader;
SELECT peek.create_collection('vsecrets', 'vitem');
SELECT peek.write('vsecrets', ARRAY[(1, 'public', 1)]::vitem[]);
SET ROLE peek_view_reader;
SELECT peek.create_view('vleak', 'SELECT id, name FROM peek.persist_peek(NULL::vitem, ''vsecrets'')');
RESET ROLE;
SELECT wait_for($$SELECT upper = 1 FROM peek.views WHERE name = 'vleak'$$);
REVOKE pg_read_all_data FROM peek_view_reader;
SELECT peek.write('vsecrets', ARRAY[(2, 'secret', 2)]::vitem[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'vleak'$$);
SELECT name, state, upper, failure FROM peek.views WHERE name = 'vleak';
SET ROLE peek_view_reader;
SELECT try($$SELECT * FROM vleak$$);
SELECT peek.drop_view('vleak');
RESET ROLE;
SELECT peek.drop_collection('vsecrets');
REVOKE CREATE ON SCHEMA public FROM peek_view_reader;
REVOKE USAGE ON SCHEMA peek FROM peek_view_reader;
DROP ROLE peek_view_reader;

-- a view's expressions run as its owner, never as the runtime's superuser
CREATE ROLE peek_view_alice;
GRANT USAGE ON SCHEMA peek TO peek_view_alice;
GRANT CREATE ON SCHEMA public TO peek_view_alice;
SET ROLE peek_view_alice;
CREATE TYPE arow AS (id int);
SELECT peek.create_collection('alices', 'arow');
SELECT peek.write('alices', ARRAY[ROW(1)]::arow[]);
CREATE FUNCTION whoami(int) RETURNS text IMMUTABLE LANGUAGE sql AS 'SELECT current_user::text';
SELECT peek.create_view('vwho', 'SELECT id, public.whoami(id) AS who FROM peek.persist_peek(NULL::arow, ''alices'')');
RESET ROLE;
SELECT wait_for($$SELECT upper = 1 FROM peek.views WHERE name = 'vwho'$$);
SELECT * FROM vwho;
SET ROLE peek_view_alice;
-- what the query uses outlasts the view, as under a PostgreSQL view
SELECT try($$DROP FUNCTION whoami(int)$$);
CREATE OR REPLACE VIEW vwho AS SELECT * FROM peek.persist_peek(NULL::vwho, 'vwho');
SELECT try($$DROP FUNCTION whoami(int)$$);
SELECT peek.drop_view('vwho');
SELECT peek.drop_collection('alices');
DROP FUNCTION whoami(int);
DROP TYPE arow;
RESET ROLE;
REVOKE USAGE ON SCHEMA peek FROM peek_view_alice;
REVOKE CREATE ON SCHEMA public FROM peek_view_alice;
DROP ROLE peek_view_alice;

-- an error evaluating a view fails that view alone: its peeks say why
-- (55000), the other views and the runtimes go on
SELECT string_agg(pid::text, ',' ORDER BY role) AS runtime_pids FROM peek.runtimes \gset
SELECT peek.create_view('vratio', $$SELECT id, 10 / qty AS ratio FROM peek.persist_peek(NULL::vitem, 'vitems') WHERE id > 3$$);
SELECT wait_for($$SELECT upper = 3 FROM peek.views WHERE name = 'vratio'$$);
SELECT * FROM vratio ORDER BY id;
SELECT peek.write('vitems', ARRAY[(6, 'zero', 0)]::vitem[]);
SELECT peek.write('vitems', ARRAY[(7, 'seven', 7)]::vitem[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'vratio'$$);
SELECT name, state, failure FROM peek.views ORDER BY name;
SELECT try($$SELECT * FROM vratio$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::vratio, 'vratio', as_of => 2)$$);
SELECT wait_for($$SELECT upper = 5 FROM peek.views WHERE name = 'vbig'$$);
SELECT * FROM vbig ORDER BY id;
SELECT string_agg(pid::text, ',' ORDER BY role) = :'runtime_pids' AS not_restarted FROM peek.runtimes;
SELECT peek.drop_view('vratio');

-- dropped: the view, its PostgreSQL view and its index; then the input
SELECT peek.drop_view('vbig');
SELECT count(*) FROM pg_class WHERE relname = 'vbig';
SELECT name FROM peek.indexes;
SELECT peek.drop_collection('vitems');

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE vitem;
