-- A view's hydration builds the arrangements its first stage reads its
-- inputs from (dataflow/hydrate.c; arrange/spine.c, spine_hydration) out
-- of its own read of each input's contents, when the runtime has none of
-- those rows by that key: right when the view is ready, before any write,
-- the runtime's own arrangement (a negative id in the registry) holds the
-- input's rows at the view's since, up to the time after it, and the
-- view's rounds bring it up from there.  Over a captured table too (its
-- arrangement then follows the source's upper as it moves on).  A second
-- view by the same key reads the same arrangement; a view over an
-- input with an index on the key builds none.  Every view at every time
-- equals its query.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE harritem AS (g int, v int);
SELECT peek.create_collection('hitems', 'harritem');
-- time 1: 1000 rows in 10 groups; time 2: 100 of them deleted, group 10 new
SELECT peek.write('hitems', (SELECT array_agg((i % 10, i)::harritem) FROM generate_series(1, 1000) i));
SELECT peek.write('hitems', ARRAY[(10, 1)]::harritem[],
                  (SELECT array_agg((i % 10, i)::harritem) FROM generate_series(1, 100) i));
-- (its base at time 1: the views hydrate there, in one read of it)
SELECT wait_for($$SELECT base_time IS NOT DISTINCT FROM 1 FROM peek.objects WHERE name = 'hitems'$$);
CREATE TABLE htab (id int PRIMARY KEY, g int, v int);
INSERT INTO htab SELECT i, i % 10, i FROM generate_series(1, 1000) i;
SET client_min_messages = warning;
SELECT peek.create_source('htab_src', 'htab');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'htab_src'$$);

-- the runtime's own arrangements, live
CREATE VIEW own_arrangements AS
SELECT id, published, failed, hydrating, rows, since, upper
  FROM peek.registry_status() WHERE id < 0 AND NOT dropped;

-- (a test's before go once the runtime sees the extension made anew)
SELECT wait_for($$SELECT count(*) = 0 FROM own_arrangements$$);
SELECT peek.create_view('h_sum', $$
    SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::harritem, 'hitems') GROUP BY g$$);
SELECT peek.create_view('h_src', $$SELECT g, count(*) AS n, max(v) AS m FROM htab GROUP BY g$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
-- built by the hydrations, before any write: each input's rows at its
-- view's since, up to the time after it (the collection's: the source's
-- may have followed its upper since)
SELECT published, failed, hydrating, rows FROM own_arrangements ORDER BY rows;
SELECT a.since = v.since AS at_since, a.upper = v.since + 1 AS upper_past_since
  FROM own_arrangements a, peek.views v WHERE v.name = 'h_sum' AND a.rows = 901;

-- the first writes: the views' rounds bring the arrangements up and read
-- each touched group's rows from them
SELECT peek.write('hitems', ARRAY[(3, 5000), (11, 7), (11, 8), (12, 9)]::harritem[],
                  ARRAY[(10, 1), (4, 104)]::harritem[]);
UPDATE htab SET v = 5000 WHERE id = 3;
DELETE FROM htab WHERE id = 4;
INSERT INTO htab VALUES (1001, 11, 7), (1002, 12, 9);
-- (the capture has the writes: the source's upper moved past them)
SELECT wait_for($$SELECT count(*) = 1 FROM peek.persist_peek(NULL::htab, 'htab_src') WHERE id = 1002$$);
-- (h_sum past the write's time 2: the collection's upper shown may not be yet)
SELECT wait_for($$SELECT bool_and(v.upper >= c.upper) FROM peek.views v, peek.collections c
                   WHERE (v.name, c.name) IN (('h_sum', 'hitems'), ('h_src', 'htab_src'))
                     AND (SELECT upper > 2 FROM peek.views WHERE name = 'h_sum')$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT * FROM h_sum WHERE g IN (3, 4, 10, 11, 12) ORDER BY g;
SELECT * FROM h_src WHERE g IN (3, 4, 11, 12) ORDER BY g;
-- (h_sum's 901 rows less 2, and 4 more; h_src's 1000 less 1, and 2 more)
SELECT rows FROM own_arrangements ORDER BY rows;
SELECT a.upper = v.upper AS at_view_upper
  FROM own_arrangements a, peek.views v WHERE v.name = 'h_sum' AND a.rows = 903;

-- a second view by the same key reads the same arrangement: none new
SELECT peek.create_view('h_max', $$
    SELECT g, max(v) AS m FROM peek.persist_peek(NULL::harritem, 'hitems') WHERE v > 10 GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'h_max'$$);
SELECT count(*) FROM own_arrangements;
SELECT peek.write('hitems', ARRAY[(5, 7000)]::harritem[]);
SELECT wait_for($$SELECT bool_and(upper > 3) FROM peek.views WHERE name IN ('h_sum', 'h_max')$$);
SELECT * FROM h_max WHERE g = 5;

-- an input with an index on the key: its arrangement is the index's
CREATE TYPE harrother AS (k int, w int);
SELECT peek.create_collection('hothers', 'harrother');
SELECT peek.write('hothers', (SELECT array_agg((i % 7, i)::harrother) FROM generate_series(1, 70) i));
SELECT peek.create_index('hothers_k', 'hothers', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'hothers_k'$$);
SELECT peek.create_view('h_other', $$
    SELECT k, sum(w) AS s FROM peek.persist_peek(NULL::harrother, 'hothers') GROUP BY k$$);
SELECT wait_for($$SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'h_other'$$);
SELECT count(*) FROM own_arrangements;
SELECT peek.write('hothers', ARRAY[(2, 1000)]::harrother[], ARRAY[(2, 2)]::harrother[]);
SELECT wait_for($$SELECT upper > 1 FROM peek.views WHERE name = 'h_other'$$);
SELECT * FROM h_other WHERE k = 2;

-- every view at every time from its since to before its upper
SELECT name, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           since, upper - 1) AS bad_times
  FROM peek.views WHERE name <> 'h_src' ORDER BY name;
-- the source's view at the times in the source's shard from its since
CREATE FUNCTION h_src_times() RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v record := (SELECT x FROM peek.views x WHERE name = 'h_src');
    times bigint[];
BEGIN
    EXECUTE format('SELECT array_agg(DISTINCT time) FROM %s WHERE time >= $1 AND time < $2',
                   (SELECT shard FROM peek.collections WHERE name = 'htab_src'))
       INTO times USING v.since, v.upper;
    RETURN times;
END $$;
SELECT cardinality(h_src_times()) > 0 AS some_times, view_mismatches(
           'SELECT * FROM peek.persist_peek(NULL::h_src, ''h_src'', as_of => @T@)',
           regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'),
           h_src_times()) AS bad_times
  FROM peek.views WHERE name = 'h_src';

SELECT peek.drop_view('h_src');
SELECT peek.drop_source('htab_src');
DROP TABLE htab;
DROP VIEW own_arrangements;
DROP FUNCTION h_src_times();
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE harritem;
DROP TYPE harrother;
