-- Persist peeks: contents at a time, multiplicities, limit, compaction,
-- negative multiplicities, cancel of a waiting peek, and bad input.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE stock AS (sku text, qty int);
SELECT peek.create_collection('stock', 'stock');

-- history: t0 {+a, +b x2}, t1 {+c, -a}, t2 {+b x3, +c}, t3 {-b x4}
SELECT peek.append('stock', ARRAY[('a', 1), ('b', 2)]::stock[], 0);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 0);
SELECT peek.advance('stock', 1);
SELECT peek.write('stock', ARRAY[('c', 3)]::stock[], ARRAY[('a', 1)]::stock[]);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 2, 3);
SELECT peek.append('stock', ARRAY[('c', 3)]::stock[], 2);
SELECT peek.advance('stock', 3);
SELECT peek.append('stock', ARRAY[('b', 2)]::stock[], 3, -4);
SELECT peek.advance('stock', 4);

-- the contents at every time; multiplicities expand into copies
SELECT 0 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 0) ORDER BY 2, 3;
SELECT 1 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 1) ORDER BY 2, 3;
SELECT 2 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2) ORDER BY 2, 3;
SELECT 3 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 3) ORDER BY 2, 3;
-- as_of NULL reads the latest complete time, upper - 1 = 3
SELECT * FROM peek.persist_peek(NULL::stock, 'stock') ORDER BY 1, 2;
-- positional arguments and a whole-row result
SELECT p FROM peek.persist_peek(NULL::stock, 'stock', 0, NULL) p ORDER BY 1;

-- limit: stops after that many rows, copies included
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 0);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 1);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 4);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2, "limit" => 100);

-- large values are stored toasted; a retraction still cancels its insert
SELECT peek.write('stock', ARRAY[(repeat('x', 100000), 1)]::stock[]);
SELECT length(sku), qty FROM peek.persist_peek(NULL::stock, 'stock', as_of => 4) WHERE qty = 1;
SELECT peek.write('stock', '{}'::stock[], ARRAY[(repeat('x', 100000), 1)]::stock[]);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'stock', as_of => 5) WHERE qty = 1;

-- a negative multiplicity is invalid data, shown with the row and count
SELECT peek.create_collection('bad', 'stock');
SELECT peek.write('bad', ARRAY[('z', 9)]::stock[]);
SELECT peek.append('bad', ARRAY[('z', 9)]::stock[], 1, -2);
SELECT peek.advance('bad', 2);
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 0);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 1)$$);
-- a limit reads no further than it needs, as an index peek's does: limit 0
-- does not meet the row (DESIGN §3.6)
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 1, "limit" => 0)$$);

-- compaction: allow since 3; the shard consolidates at 3 and shrinks
SELECT shard_rows('stock') AS rows_before;
SELECT peek.allow_compaction('stock', 3);
SELECT wait_for($$SELECT since = 3 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT wait_for($$SELECT since = 3 FROM peek.objects WHERE name = 'stock'$$);
SELECT shard_rows('stock') AS rows_after;
SELECT since, upper, allowed_since FROM peek.collections WHERE name = 'stock';
-- contents at and after since are unchanged
SELECT 3 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 3) ORDER BY 2, 3;
SELECT 5 AS t, * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 5) ORDER BY 2, 3;
-- below since: the compacted error names both times
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 2)$$);
-- allow_compaction only raises
SELECT peek.allow_compaction('stock', 1);
SELECT since, allowed_since FROM peek.collections WHERE name = 'stock';
-- since stays below the upper; it follows upper - 1 up to the allowance
SELECT peek.allow_compaction('stock', 1000);
SELECT wait_for($$SELECT since = 5 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT peek.write('stock', '{}'::stock[]);
SELECT wait_for($$SELECT since = 6 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock'$$);
SELECT since, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'stock';
-- as_of NULL reads the last complete time, without waiting
SET statement_timeout = '5s';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock')$$);
RESET statement_timeout;

-- a peek at a future time waits; statement_timeout cancels it (57014),
-- and nothing stays behind: no active peek, no waiter, no hold
SET statement_timeout = '300ms';
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 10);
RESET statement_timeout;
SELECT wait_for($$SELECT count(*) = 0 FROM peek.active_peeks$$);
SELECT wait_for($$SELECT coalesce(sum(waiters), 0) = 0 FROM peek.frontiers$$);
SELECT object, since, upper, sum(waiters) AS waiters FROM peek.frontiers GROUP BY 1, 2, 3 ORDER BY object;
-- and the next peek works
SELECT * FROM peek.persist_peek(NULL::stock, 'bad', as_of => 0);

-- an empty collection's first complete time is 0: as_of NULL waits for it
SELECT peek.create_collection('empty', 'stock');
SET statement_timeout = '300ms';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'empty')$$);
RESET statement_timeout;
SELECT peek.advance('empty', 1);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'empty');

-- bad input
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'nosuch')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, NULL)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::int4, 'stock')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::item_other, 'stock')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => -1)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', "limit" => -1)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'stock', as_of => 6, "limit" => -1)$$);

-- result too large
SET pg_peek.max_result_bytes = '1kB';
SELECT peek.create_collection('big', 'stock');
SELECT peek.write('big', array_agg((repeat('y', 100) || g, g)::stock)) FROM generate_series(1, 50) g;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::stock, 'big')$$);
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big', "limit" => 5);
RESET pg_peek.max_result_bytes;
SELECT count(*) FROM peek.persist_peek(NULL::stock, 'big');

DROP EXTENSION pg_peek CASCADE;
DROP TYPE stock;
