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
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE ru;
