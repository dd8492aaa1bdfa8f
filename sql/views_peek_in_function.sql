-- A user's function in a view's query runs in the maintenance runtime; a
-- peek there could wait for a time only that runtime brings (a future
-- as_of), holding every other object's maintenance until the round's
-- timeout.  Peeks are refused in pg_peek's own workers: the view fails at
-- once with 55000 naming why, and the runtime goes on with the rest.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
CREATE TYPE pfitem AS (k int, v int);
SELECT peek.create_collection('pf_items', 'pfitem');
SELECT peek.create_collection('pf_other', 'pfitem');
SELECT peek.write('pf_items', ARRAY[(1, 10), (2, 20)]::pfitem[]);
SELECT peek.write('pf_other', ARRAY[(1, 1)]::pfitem[]);
SELECT peek.create_index('pf_other_k', 'pf_other', ARRAY['k']);
-- "immutable" by its author's word: a peek of another collection, at a
-- time far in the future
CREATE FUNCTION pf_future_count(int) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT count(*) + $1 FROM peek.persist_peek(NULL::public.pfitem, 'pf_other', as_of => 1000000)
$$;
SELECT clock_timestamp() AS t0 \gset
SELECT peek.create_view('pf_view', $$
    SELECT k, pf_future_count(v) AS c FROM peek.persist_peek(NULL::pfitem, 'pf_items')$$);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'pf_view'$$);
SELECT state, failure FROM peek.views WHERE name = 'pf_view';
-- at once, not after pg_peek.view_round_timeout (a minute)
SELECT clock_timestamp() - :'t0' < interval '30 seconds' AS failed_at_once;
SELECT * FROM pf_view;
-- the runtime goes on maintaining the others
SELECT peek.write('pf_other', ARRAY[(2, 2)]::pfitem[]) AS t \gset
SELECT k, v FROM peek.index_peek(NULL::pfitem, 'pf_other_k', ROW(2), as_of => :t);
-- in a backend the same function peeks as any statement would
SET statement_timeout = '200ms';
SELECT pf_future_count(0);
RESET statement_timeout;
SELECT peek.drop_view('pf_view');
DROP FUNCTION pf_future_count(int);
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE pfitem;
