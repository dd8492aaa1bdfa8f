-- Introspection views on a quiet system: their columns and what they show
-- after writes, peeks, compaction and a failed index.  (Parked peeks,
-- cancels and hydration in flight are in test/t/140_introspection.pl.)
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE intro AS (k int, v text);
SELECT peek.create_collection('intro', 'intro');
SELECT peek.create_index('intro_by_k', 'intro', ARRAY['k']);
SELECT peek.write('intro', ARRAY[(1, 'a'), (2, 'b'), (2, 'b')]::intro[]);
SELECT peek.write('intro', ARRAY[(3, 'c')]::intro[], ARRAY[(1, 'a')]::intro[]);
-- (merges run in later rounds: wait for the two writes' batches to merge)
SELECT wait_for($$SELECT upper = 2 AND batches = 1 FROM peek.indexes WHERE name = 'intro_by_k'$$);
SELECT wait_for($$SELECT upper = 2 FROM peek.collections WHERE name = 'intro'$$);

-- collections and indexes: state, current rows, sizes, frontiers
SELECT name, row_type, state, rows, batches, bytes, shard_bytes > 0 AS has_shard, since, upper
  FROM peek.collections;
SELECT name, collection, key, state, failure, rows, updates, batches, bytes > 0 AS has_bytes,
       since, upper
  FROM peek.indexes;

-- frontiers: one row per object and runtime; both runtimes see one frontier
SELECT object, kind, count(*) = (SELECT count(*) FROM peek.runtimes) AS every_runtime,
       min(since) = max(since) AND min(upper) = max(upper) AS same_frontier, max(upper) AS upper
  FROM peek.frontiers GROUP BY object, kind ORDER BY object;

-- holds: the user's allowance and each runtime's standing hold
SELECT peek.allow_compaction('intro_by_k', 1);
SELECT wait_for($$SELECT since = 1 FROM peek.indexes WHERE name = 'intro_by_k'$$);
SELECT object, kind, time, count(*) = CASE kind WHEN 'standing' THEN (SELECT count(*) FROM peek.runtimes) ELSE 1 END AS rows_ok
  FROM peek.holds WHERE object = 'intro_by_k' GROUP BY object, kind, time ORDER BY kind;

-- peeks: durations are counted (by the peeks answered here), handles released
SELECT coalesce(sum(count) FILTER (WHERE kind = 'index'), 0) AS index_before,
       coalesce(sum(count) FILTER (WHERE kind = 'persist'), 0) AS persist_before
  FROM peek.peek_durations \gset
SELECT count(*) FROM peek.index_peek(NULL::intro, 'intro_by_k', ROW(2));
SELECT count(*) FROM peek.persist_peek(NULL::intro, 'intro');
SELECT kind, sum(count) - CASE kind WHEN 'index' THEN :index_before ELSE :persist_before END AS answered
  FROM peek.peek_durations GROUP BY kind ORDER BY kind;
SELECT index, sum(live_handles) AS live, sum(handle_pins) = sum(handle_releases) AS all_released
  FROM peek.arrangement_sharing GROUP BY index;
SELECT count(*) AS active FROM peek.active_peeks;
SELECT count(*) AS hydrating FROM peek.hydration_progress;

-- runtimes: roles, running, the DSA in use and its limit
SELECT count(*) = CASE current_setting('pg_peek.interactive') WHEN 'on' THEN 2 ELSE 1 END AS one_per_role,
       bool_and(state = 'running') AS running,
       bool_and(dsa_bytes > 0) AS dsa_in_use, min(dsa_limit) AS dsa_limit
  FROM peek.runtimes;

-- a failed index shows its reason
SELECT peek.create_collection('fat', 'intro');
SELECT peek.write('fat', array_agg((g, repeat('f', 300))::intro)) FROM generate_series(1, 5000) g;
ALTER SYSTEM SET pg_peek.max_memory = '1MB';
SELECT pg_reload_conf();
SELECT wait_for($$SELECT bool_and(dsa_limit = 1048576) FROM peek.runtimes$$);
SELECT peek.create_index('fat_by_k', 'fat', ARRAY['k']);
SELECT wait_for($$SELECT state = 'failed' FROM peek.indexes WHERE name = 'fat_by_k'$$);
SELECT name, state, failure, rows, batches, bytes FROM peek.indexes WHERE name = 'fat_by_k';
ALTER SYSTEM RESET pg_peek.max_memory;
SELECT pg_reload_conf();
SELECT wait_for($$SELECT bool_and(dsa_limit = 1073741824) FROM peek.runtimes$$);

DROP EXTENSION pg_peek CASCADE;
DROP TYPE intro;
