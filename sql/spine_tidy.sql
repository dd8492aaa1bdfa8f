-- An idle index merges a few updates into its big batch only once they pay
-- for rewriting it (arrange/spine_batches.c, spine_start_tidy_merge): the
-- merge work stays proportional to the updates, not to the index's size.
CREATE TYPE tidy AS (k int, v int);
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- 100k rows hydrated into one batch
SELECT peek.create_collection('tidy', 'tidy');
SELECT peek.write('tidy', (SELECT array_agg((g, g)::tidy) FROM generate_series(1, 100000) g));
SELECT peek.create_index('tidy_by_k', 'tidy', ARRAY['k']);
SELECT wait_for($$SELECT upper = 1 AND batches = 1 FROM peek.indexes WHERE name = 'tidy_by_k'$$);

-- three rows, a write each: their batches merge with each other once the
-- index has settled (a second without a new batch), not into the big one
SELECT peek.write('tidy', ARRAY[(1, -1)]::tidy[]);
SELECT peek.write('tidy', ARRAY[(2, -2)]::tidy[]);
SELECT peek.write('tidy', ARRAY[(3, -3)]::tidy[]);
SELECT wait_for($$SELECT upper = 4 AND batches = 2 FROM peek.indexes WHERE name = 'tidy_by_k'$$);

-- a clock: another index's batches at two levels merge only once it has
-- settled too, later than the big index, which had as long to merge
SELECT peek.create_collection('tidy_clock', 'tidy');
SELECT peek.create_index('tidy_clock_by_k', 'tidy_clock', ARRAY['k']);
SELECT peek.write('tidy_clock', ARRAY[(1, 1)]::tidy[]);
SELECT peek.write('tidy_clock', ARRAY[(2, 2), (3, 3)]::tidy[]);
SELECT wait_for($$SELECT upper = 2 AND batches = 1 FROM peek.indexes WHERE name = 'tidy_clock_by_k'$$);
SELECT batches, updates FROM peek.indexes WHERE name = 'tidy_by_k';

-- updates that pay for the rewrite (an eighth of the big batch) join it
SELECT peek.write('tidy', (SELECT array_agg((g, -g)::tidy) FROM generate_series(4, 20003) g));
SELECT wait_for($$SELECT upper = 5 AND batches = 1 AND updates = 120003 FROM peek.indexes WHERE name = 'tidy_by_k'$$);
SELECT count(*), sum(v) FROM peek.index_peek(NULL::tidy, 'tidy_by_k');

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE tidy;
