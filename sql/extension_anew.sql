-- DROP EXTENSION and CREATE EXTENSION at once: the runtime starts over as
-- soon as a command names an object of the new extension (object ids carry
-- the extension's OID), before it works for it, not at its next once-a-
-- second check.  A view made right away hydrates once, and the arrangement
-- its hydration built for its first stage stays published: started over a
-- moment later, the runtime would let go of it (the view's next round then
-- reads its input's shard again).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
CREATE TYPE anewitem AS (g int, v int);
SELECT peek.create_collection('anew_items', 'anewitem');
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
-- the new extension, its first objects made in the same second
CREATE EXTENSION pg_peek;
SELECT peek.create_collection('anew_items', 'anewitem');
SELECT peek.write('anew_items', (SELECT array_agg((i % 10, i)::anewitem) FROM generate_series(1, 1000) i));
SELECT peek.create_view('anew_sum', $$
    SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::anewitem, 'anew_items') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'anew_sum'$$);
-- past the runtime's next check of the extension
SELECT pg_sleep(1.5);
SELECT count(*) AS own_arrangements_published
  FROM peek.registry_status() WHERE id < 0 AND NOT dropped AND published;
SELECT peek.write('anew_items', ARRAY[(3, 5000)]::anewitem[]);
SELECT wait_for($$SELECT lag = 0 FROM peek.views WHERE name = 'anew_sum'$$);
SELECT v.g, v.n, v.s FROM anew_sum v
EXCEPT ALL
SELECT g, count(*), sum(v) FROM peek.persist_peek(NULL::anewitem, 'anew_items') GROUP BY g;
SELECT count(*) AS groups, sum(n) AS rows FROM anew_sum;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE anewitem;
