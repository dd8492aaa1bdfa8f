-- peek.collections and peek.views count rows at the upper they show: they
-- pass it to peek.collection_rows(name, upper) (reading the published
-- upper again there raced a publication: the upper shown 272, the rows
-- those of a transaction's 3000 writes published meanwhile)
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
CREATE TYPE ru AS (k int, v int);
SELECT peek.create_collection('rus', 'ru');
SELECT peek.write('rus', ARRAY[(1, 1)]::ru[]);
SELECT peek.write('rus', ARRAY[(2, 2), (3, 3)]::ru[]);
SELECT peek.write('rus', ARRAY[(4, 4)]::ru[], ARRAY[(1, 1)]::ru[]);
SELECT peek.create_view('ru_sum', $$SELECT k % 2 AS odd, sum(v) AS s
                                     FROM peek.persist_peek(NULL::ru, 'rus') GROUP BY k % 2$$);
SELECT wait_for($$SELECT upper = 3 FROM peek.collections WHERE name = 'rus'$$);
SELECT wait_for($$SELECT upper = 3 AND state = 'ready' FROM peek.views WHERE name = 'ru_sum'$$);
-- the count below an upper (below the since, compaction may have folded
-- the times, and a view's depend on when it hydrated)
SELECT u, peek.collection_rows('rus', u) AS rows FROM generate_series(3, 4) u;
SELECT u, peek.collection_rows('ru_sum', u) AS rows FROM generate_series(3, 4) u;
-- the views count at the upper they show
SELECT name, upper, rows FROM peek.collections WHERE name = 'rus';
SELECT name, upper, rows FROM peek.views WHERE name = 'ru_sum';
SELECT pg_get_viewdef('peek.collections') ~ 'collection_rows\(o\.name, shown\.upper\)' AS collections_pass_upper,
       pg_get_viewdef('peek.views') ~ 'collection_rows\(o\.name, shown\.upper\)' AS views_pass_upper;
-- not there, or not a collection
SELECT try($$SELECT peek.collection_rows('nope', 1)$$);
SELECT peek.create_index('rus_k', 'rus', '{k}');
SELECT try($$SELECT peek.collection_rows('rus_k', 1)$$);
SELECT peek.collection_rows('rus', NULL) IS NULL AS strict;

-- 'ready' means readable: a source is 'loading', and an index of it and a
-- view over it 'hydrating', until the upper shown is past the load, so
-- that whenever one shows 'ready' its rows (counted at that upper) are
-- the load's, and a peek at as_of NULL reads them all.  The load commits
-- its upper before the maintenance runtime publishes one past it: a state
-- taken from the stored upper showed 'ready' with 0 rows at upper 0 for
-- half a second of a 100,000-row load (6 s of 1,000,000), and the index
-- 'ready' with 0 rows while its source was still loading.  Polled in a
-- tight loop, a transaction per look, from the source's creation on.
CREATE TABLE rl (id int PRIMARY KEY, g int, v int);
INSERT INTO rl SELECT i, i / 100, i % 1000 FROM generate_series(1, 100000) i;
CREATE TABLE rl_looks (what text, state text, rows bigint, upper bigint, peeked bigint);
BEGIN;
SELECT peek.create_source('rl_src', 'rl');
SELECT peek.create_index('rl_g', 'rl_src', '{g}');
SELECT peek.create_view('rl_agg', $$SELECT g, count(*) AS n, sum(v) AS s FROM rl GROUP BY g$$);
COMMIT;
-- (the looks are kept in memory until the peeks are done: a peek waiting
-- for the load in a transaction with an xid would wait forever, as the
-- loader waits for every xid to end before it loads)
DO $$
DECLARE
    looks rl_looks[];
    look rl_looks;
    peeked text[] := '{}';
    ready int;
    t0 timestamptz := clock_timestamp();
BEGIN
    LOOP
        SELECT array_agg(l) INTO looks FROM (
            SELECT 'source', state, rows, upper, NULL::bigint FROM peek.collections WHERE name = 'rl_src'
            UNION ALL SELECT 'index', state, rows, upper, NULL FROM peek.indexes WHERE name = 'rl_g'
            UNION ALL SELECT 'view', state, rows, upper, NULL FROM peek.views WHERE name = 'rl_agg') l;
        ready := 0;
        FOR i IN 1 .. cardinality(looks) LOOP
            look := looks[i];
            CONTINUE WHEN look.state IS DISTINCT FROM 'ready';
            ready := ready + 1;
            -- a peek of each the first time it is seen ready
            CONTINUE WHEN look.what = ANY (peeked);
            peeked := peeked || look.what;
            looks[i].peeked := CASE look.what
                WHEN 'source' THEN (SELECT count(*) FROM peek.persist_peek(NULL::rl, 'rl_src'))
                WHEN 'index' THEN (SELECT count(*) FROM peek.index_peek(NULL::rl, 'rl_g'))
                ELSE (SELECT count(*) FROM peek.persist_peek(NULL::rl_agg, 'rl_agg')) END;
        END LOOP;
        INSERT INTO rl_looks SELECT * FROM unnest(looks);
        COMMIT;
        EXIT WHEN ready = 3 OR clock_timestamp() - t0 > interval '60 s';
    END LOOP;
END $$;
-- every look at a ready one: its upper past the load, all its rows
SELECT what, bool_or(state = 'ready') AS seen_ready,
       count(*) FILTER (WHERE state = 'ready' AND (upper IS NULL OR upper = 0 OR
                        rows <> CASE what WHEN 'view' THEN 1001 ELSE 100000 END)) AS ready_unreadable,
       max(peeked) AS peeked,
       string_agg(DISTINCT format('%s rows %s upper %s', state, rows, upper), '; ')
         FILTER (WHERE state = 'ready' AND (upper IS NULL OR upper = 0 OR
                 rows <> CASE what WHEN 'view' THEN 1001 ELSE 100000 END)) AS bad_looks
  FROM rl_looks GROUP BY what ORDER BY what;
SELECT peek.drop_view('rl_agg');
SELECT peek.drop_source('rl_src');
SELECT wait_for($$SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'$$);
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE ru;
DROP TABLE rl, rl_looks;
