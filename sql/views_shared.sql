-- A grouped or joined view reads its input's rows by key from an
-- arrangement shared with indexes (src/dataflow/arranged.c,
-- src/arrange/spine.c's spine_share): the runtime's own (a negative id
-- in the registry, no catalog row) until an index on the same collection
-- and key columns takes it over; dropping either leaves the other
-- working, dropping both lets it go; a restart builds it again.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE sh AS (g int, v int);
SELECT peek.create_collection('shs', 'sh');
SELECT peek.write('shs', array_agg((i % 10, i)::sh)) FROM generate_series(1, 1000) i;

-- the arrangements the runtime keeps for views alone, and their bytes
CREATE VIEW own_arrangements AS
SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes
  FROM peek.registry_status() WHERE id < 0 AND NOT dropped;

-- (the tests before this one are gone: their arrangements with them)
SELECT wait_for($$SELECT n = 0 FROM own_arrangements$$);

SELECT peek.create_view('shsum', $$
    SELECT g, sum(v) AS s, count(*) AS n FROM peek.persist_peek(NULL::sh, 'shs') GROUP BY g$$);
SELECT peek.create_view('shmax', $$
    SELECT g, max(v) AS m FROM peek.persist_peek(NULL::sh, 'shs') WHERE v % 3 <> 0 GROUP BY g$$);
SELECT peek.create_view('shself', $$
    SELECT x.g, count(*) AS n FROM peek.persist_peek(NULL::sh, 'shs') x
      JOIN peek.persist_peek(NULL::sh, 'shs') y ON y.g = x.g AND y.v < 50 GROUP BY x.g$$);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
-- a write makes each view's round read the arrangement
SELECT peek.write('shs', ARRAY[(1, 5000), (2, 7)]::sh[], ARRAY[(3, 3)]::sh[]);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE upper = 2$$);
-- one arrangement by g for all three views
SELECT n FROM own_arrangements;
SELECT view, operator, kind, bytes >= (SELECT bytes FROM own_arrangements) AS counts_shared
  FROM peek.dataflow_operators WHERE operator > 1 ORDER BY view, operator;
SELECT * FROM shsum ORDER BY g;

-- an index on the same collection and key takes it over: no own
-- arrangement any more, and the index's bytes are the views'
SELECT (SELECT bytes FROM own_arrangements) AS own_bytes \gset
SELECT peek.create_index('shs_g', 'shs', ARRAY['g']);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.indexes WHERE name = 'shs_g' AND upper = 2$$);
SELECT n FROM own_arrangements;
SELECT r.bytes = :own_bytes AS same_bytes FROM peek.registry_status() r
  JOIN peek.objects o ON o.id = r.id WHERE o.name = 'shs_g';
SELECT peek.write('shs', ARRAY[(4, 9000)]::sh[], ARRAY[(1, 5000)]::sh[]);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE upper = 3$$);
SELECT n FROM own_arrangements;
SELECT view, operator, kind, bytes >= (SELECT r.bytes FROM peek.registry_status() r
                                        JOIN peek.objects o ON o.id = r.id
                                       WHERE o.name = 'shs_g') AS index_bytes
  FROM peek.dataflow_operators WHERE operator > 1 ORDER BY view, operator;
SELECT * FROM peek.index_peek(NULL::sh, 'shs_g', ROW(4)) ORDER BY v DESC LIMIT 3;

-- the index dropped: the views keep the arrangement (the runtime's own again)
SELECT peek.drop_index('shs_g');
SELECT peek.write('shs', ARRAY[(5, 1)]::sh[], ARRAY[(4, 9000)]::sh[]);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE upper = 4$$);
SELECT n FROM own_arrangements;

-- an index again, then the views dropped: the index keeps it
SELECT peek.create_index('shs_g', 'shs', ARRAY['g']);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.indexes WHERE name = 'shs_g' AND upper = 4$$);
SELECT n FROM own_arrangements;

-- a restart: the views' arrangement is built again, shared with the index
SELECT pid AS maintenance_pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo') \gset
SELECT pg_terminate_backend(:maintenance_pid);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.runtimes
                   WHERE role IN ('maintenance', 'solo') AND state = 'running' AND pid <> $$ || :maintenance_pid);
SELECT peek.write('shs', array_agg((i % 10, i + 2000)::sh), array_agg((i % 10, i)::sh))
  FROM generate_series(100, 200) i;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE upper = 5$$);
SELECT n FROM own_arrangements;
SELECT view, operator, kind FROM peek.dataflow_operators WHERE operator > 1 ORDER BY view, operator;

-- every view at every time equals its query over the input at that time
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(query, '''shs''::text', '''shs''::text, as_of => @T@'), 1, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;

SELECT peek.drop_view('shsum');
SELECT peek.drop_view('shmax');
SELECT peek.drop_view('shself');
SELECT n FROM own_arrangements;
SELECT peek.write('shs', ARRAY[(6, 6)]::sh[]);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.indexes WHERE name = 'shs_g' AND upper = 6$$);
SELECT g, count(*), sum(v) FROM peek.index_peek(NULL::sh, 'shs_g', ROW(6)) GROUP BY g;
SELECT count(*), sum(v) FROM peek.persist_peek(NULL::sh, 'shs') WHERE g = 6;

-- both dropped: nothing is left
SELECT peek.drop_index('shs_g');
SELECT wait_for($$SELECT count(*) = 0 FROM peek.registry_status() r
                   WHERE NOT r.dropped AND r.batches > 0$$);

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE sh;
