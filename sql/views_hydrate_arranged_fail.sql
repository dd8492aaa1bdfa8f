-- A view's hydration builds the arrangements its first stage reads (see
-- views_hydrate_arranged) before its query runs: when the query then
-- fails (division by zero at the hydration's run), the view fails and the
-- arrangement it was built for goes with it: none is left, and the
-- runtime's shared memory holds only the arrangements left.  A self-join reading one
-- collection by two keys (the hydration builds one of them, the round
-- the other) equals its query at every time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE hfitem AS (g int, v int);
SELECT peek.create_collection('hfitems', 'hfitem');
SELECT peek.write('hfitems', (SELECT array_agg((i % 10, i)::hfitem) FROM generate_series(1, 1000) i));
-- (an earlier test's arrangements may outlive its DROP EXTENSION a while:
-- only those made here count)
CREATE TABLE earlier_arrangements AS
SELECT id FROM peek.registry_status() WHERE id < 0 AND NOT dropped;
CREATE VIEW own_arrangements AS
SELECT id, rows FROM peek.registry_status()
 WHERE id < 0 AND NOT dropped AND id NOT IN (SELECT id FROM earlier_arrangements);

-- the query fails at the hydration's run, after the read built the arrangement
SELECT peek.create_view('hf_bad', $$
    SELECT g, sum(v / (v - 500)) AS s FROM peek.persist_peek(NULL::hfitem, 'hfitems') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'hf_bad'$$);
SELECT failure FROM peek.views WHERE name = 'hf_bad';
SELECT count(*) FROM own_arrangements;
-- (once merges in progress, counted but not yet published, are done)
SELECT wait_for($$SELECT (SELECT coalesce(sum(bytes), 0) FROM peek.registry_status() WHERE NOT dropped) =
       ALL (SELECT dsa_bytes FROM peek.runtimes)$$) AS dsa_is_arrangements;
SELECT peek.drop_view('hf_bad');

-- one collection read by two keys: both arrangements, the view exact
SELECT peek.create_view('hf_self', $$
    SELECT a.g, count(*) AS n, sum(b.v) AS s
      FROM peek.persist_peek(NULL::hfitem, 'hfitems') a
      JOIN peek.persist_peek(NULL::hfitem, 'hfitems') b ON a.v = b.g GROUP BY a.g$$);
SELECT wait_for($$SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'hf_self'$$);
SELECT peek.write('hfitems', ARRAY[(3, 5), (11, 2)]::hfitem[], ARRAY[(2, 2), (5, 5)]::hfitem[]);
-- (past the write's time 1: the collection's upper shown may not be yet)
SELECT wait_for($$SELECT upper > 1 FROM peek.views WHERE name = 'hf_self'$$);
SELECT rows FROM own_arrangements ORDER BY id;
SELECT * FROM hf_self ORDER BY g;
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           since, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;
-- (once merges in progress, counted but not yet published, are done)
SELECT wait_for($$SELECT (SELECT sum(bytes) FROM peek.registry_status() WHERE NOT dropped) =
       ALL (SELECT dsa_bytes FROM peek.runtimes)$$) AS dsa_is_arrangements;

DROP VIEW own_arrangements;
DROP TABLE earlier_arrangements;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE hfitem;
