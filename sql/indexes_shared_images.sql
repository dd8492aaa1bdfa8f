-- The versions of a row in an index's batch share one copy of its image
-- (src/ipc/batch.h): a row of about 500 bytes inserted and deleted again
-- at 40 times, beside a row of the same key that stays and one of another
-- key, keeps one image each in the batch of an index created over that
-- history, not one per time.  That index and one that followed the writes
-- (its batches merged) equal the persist peek, by key, at every time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE si AS (k int, t text);
SELECT peek.create_collection('sis', 'si');
SELECT peek.create_index('sis_followed', 'sis', '{k}');
CREATE FUNCTION si_row(k int, tag text) RETURNS si LANGUAGE sql AS $$
    SELECT (k, tag || repeat('.', 500))::si$$;

SELECT peek.write('sis', ARRAY[si_row(1, 'stays'), si_row(2, 'other key')]);
SELECT count(peek.write('sis', CASE WHEN i % 2 = 1 THEN ARRAY[si_row(1, 'toggled')] ELSE '{}' END,
                               CASE WHEN i % 2 = 0 THEN ARRAY[si_row(1, 'toggled')] ELSE '{}' END))
FROM generate_series(1, 40) i;
SELECT peek.create_index('sis_hydrated', 'sis', '{k}');
SELECT wait_for($$SELECT bool_and(state = 'ready' AND upper = 41) FROM peek.indexes$$);

-- 42 updates of three rows: three images (about 1.6 kB), not 42 (22 kB)
SELECT updates, batches, bytes < 4096 AS one_image_a_row
FROM peek.indexes WHERE name = 'sis_hydrated';

-- by key, at every time: index peek = persist peek, the toggled row there
-- at the times after an odd write
SELECT i.name,
       bool_and((SELECT array_agg(r::text ORDER BY r::text)
                   FROM peek.index_peek(NULL::si, i.name, ROW(kk), as_of => t) r)
                IS NOT DISTINCT FROM
                (SELECT array_agg(r::text ORDER BY r::text)
                   FROM peek.persist_peek(NULL::si, 'sis', as_of => t) r WHERE r.k = kk)) AS equal,
       array_agg(t ORDER BY t) FILTER (WHERE kk = 1 AND
                 (SELECT count(*) FROM peek.index_peek(NULL::si, i.name, ROW(kk), as_of => t)) = 2)
         AS toggled_in
FROM peek.indexes i, generate_series(0, 40) t, generate_series(1, 2) kk
GROUP BY i.name ORDER BY i.name;

SELECT peek.drop_index('sis_hydrated');
SELECT peek.drop_index('sis_followed');
SELECT peek.drop_collection('sis');
DROP FUNCTION si_row(int, text);
DROP TYPE si;
