-- Partial groups (src/dataflow/arranged.c's load_updated) of two keys of
-- one key hash: 4119 and 209697 hash alike as int, so their rows share
-- one run of the arrangement's entries, which walk_hash_row_counts
-- bisects by row image for the rows a round updates.  Rows move between
-- the two keys at every time, are written twice, retracted in the time
-- they are written, and inserted where no row of their image is; a third
-- key and NULL keys stay beside them.  The view equals PostgreSQL's query
-- over its input's persist peek at every time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

SELECT hashint4(4119) = hashint4(209697) AS same_hash;
CREATE TYPE lcrow AS (g int, v int);
SELECT peek.create_collection('lc', 'lcrow');
SELECT peek.write('lc', array_agg((CASE i % 4 WHEN 0 THEN 4119 WHEN 1 THEN 209697 WHEN 2 THEN 5 END, i)::lcrow))
  FROM generate_series(1, 400) i;
SELECT peek.create_view('lcsum', $$
    SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::lcrow, 'lc') GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'lcsum'$$);

-- at time t: (4119, t % 7) once and (209697, t % 7) twice in, the row
-- 1000 + t in one of the keys, the time before's first and last out;
-- every tenth time a write whose rows cancel
DO $$
BEGIN
    FOR t IN 1 .. 40 LOOP
        PERFORM peek.write('lc',
            ARRAY[(4119, t % 7), (209697, t % 7), (209697, t % 7),
                  (CASE WHEN t % 3 = 0 THEN 4119 ELSE 209697 END, 1000 + t)]::lcrow[],
            CASE WHEN t > 1 THEN
                ARRAY[(4119, (t - 1) % 7),
                      (CASE WHEN (t - 1) % 3 = 0 THEN 4119 ELSE 209697 END, 1000 + t - 1)]::lcrow[]
            ELSE '{}'::lcrow[] END);
        IF t % 10 = 0 THEN
            PERFORM peek.write('lc', ARRAY[(4119, 1), (209697, 2)]::lcrow[],
                               ARRAY[(4119, 1), (209697, 2)]::lcrow[]);
        END IF;
    END LOOP;
END $$;
-- (the 44 writes' times are 1 .. 44: the collection's upper, like the
-- view's, is the published one, which may still be 1 here)
SELECT wait_for($$SELECT upper = 45 FROM peek.views WHERE name = 'lcsum'$$);
SELECT * FROM lcsum ORDER BY g;
-- a row never written and a row held once retracted twice, in both keys
-- (each round's count of the row before it decides what the group
-- holds: none below zero), then written back
SELECT peek.write('lc', '{}'::lcrow[], ARRAY[(209697, 5000), (4119, 5), (4119, 5), (209697, 6)]::lcrow[]);
SELECT peek.write('lc', ARRAY[(209697, 5000), (4119, 5), (4119, 5)]::lcrow[]);
SELECT peek.write('lc', ARRAY[(209697, 5000), (209697, 6)]::lcrow[]);
SELECT wait_for($$SELECT upper = 48 FROM peek.views WHERE name = 'lcsum'$$);
SELECT * FROM peek.persist_peek(NULL::lcsum, 'lcsum', as_of => 45) ORDER BY g;
SELECT * FROM lcsum ORDER BY g;
-- PostgreSQL's query at every time but 45 (a persist peek refuses a
-- count below zero)
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           (SELECT array_agg(t) FROM generate_series(0, 47) t WHERE t <> 45)) AS bad_times
  FROM peek.views WHERE name = 'lcsum';

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE lcrow;
