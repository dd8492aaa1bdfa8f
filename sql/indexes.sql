-- Indexes (arrangements) and index peeks: creation over empty and non-empty
-- collections, key and no-key peeks, multi-column keys, key coercion, NULL
-- keys, SQL equality of keys, limit, compaction, invalid data, memory
-- exhaustion and every bad input.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE acct AS (region text, id int, balance numeric, note text);
SELECT peek.create_collection('accts', 'acct');

-- an index over an empty collection, then data
SELECT peek.create_index('accts_by_id', 'accts', '{id}');
SELECT peek.write('accts', ARRAY[('eu', 1, 10, 'a'), ('eu', 2, 20, 'b'), ('us', 1, 30, 'c')]::acct[]);
SELECT peek.append('accts', ARRAY[('us', 2, 40, 'd')]::acct[], 1, 2);
SELECT peek.advance('accts', 2);
-- an index over a non-empty collection hydrates from the shard
SELECT peek.create_index('accts_by_region_id', 'accts', '{region,id}');
SELECT peek.create_index('accts_by_balance', 'accts', '{balance}');
SELECT wait_for($$SELECT count(*) = 3 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND kind = 'index' AND upper = 2$$);
SELECT object, kind, since, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') ORDER BY object;

-- no key: the whole contents at a time
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', as_of => 0) ORDER BY 1, 2;
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id') ORDER BY 1, 2;
-- a key: only rows whose key equals it; multiplicities expand
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(1)) ORDER BY 1, 2;
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(2)) ORDER BY 1, 2;
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(2), as_of => 0) ORDER BY 1, 2;
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(99));
-- multi-column keys, in key-column order
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('us', 2));
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('eu', 2));
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('xx', 2));
-- key coercion: int8, text and unknown literals to the key columns' types
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(1::bigint), as_of => 0) ORDER BY 1;
-- (a text value is not assigned to an int key, as in an INSERT)
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW('1'::text))$$);
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('eu', '2'));
-- keys compare by SQL equality of their type: 20 = 20.00 for numeric
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_balance', ROW(20.00));
SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_balance', ROW(20::int));
-- NULL keys never match
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(NULL::int));
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('eu', NULL));
-- rows with NULL key columns are in the index, found by no-key peeks only
SELECT peek.write('accts', ARRAY[('eu', NULL, 0, 'null id')]::acct[]);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id') WHERE id IS NULL;
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(NULL::int));

-- limit stops after that many rows
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', "limit" => 0);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', "limit" => 2);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(2), "limit" => 1);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', "limit" => 100);

-- index and persist peeks agree at every time
SELECT t, (SELECT array_agg(a ORDER BY a::text) FROM peek.index_peek(NULL::acct, 'accts_by_id', as_of => t) a)
       IS NOT DISTINCT FROM
       (SELECT array_agg(a ORDER BY a::text) FROM peek.persist_peek(NULL::acct, 'accts', as_of => t) a) AS same
  FROM generate_series(0, 2) t;

-- text keys follow the column's collation
CREATE COLLATION peek_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TYPE tag AS (name text COLLATE peek_ci, n int);
SELECT peek.create_collection('tags', 'tag');
SELECT peek.create_index('tags_by_name', 'tags', '{name}');
SELECT peek.write('tags', ARRAY[('Apple', 1), ('banana', 2)]::tag[]);
SELECT * FROM peek.index_peek(NULL::tag, 'tags_by_name', ROW('APPLE'));
SELECT * FROM peek.index_peek(NULL::tag, 'tags_by_name', ROW('BaNaNa'));

-- compaction: allow since 2 on the index; below it the peek is refused
SELECT peek.allow_compaction('accts_by_id', 2);
SELECT wait_for($$SELECT since = 2 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'accts_by_id'$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', as_of => 1)$$);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_id', as_of => 2);
-- the other indexes and the collection keep their history
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_region_id', as_of => 0);
SELECT count(*) FROM peek.persist_peek(NULL::acct, 'accts', as_of => 0);
-- a fully compacted index is as small as its current contents
SELECT peek.write('accts', '{}'::acct[], ARRAY[('eu', NULL, 0, 'null id')]::acct[]);
SELECT peek.allow_compaction('accts_by_id', 1000);
-- (the since stays below the upper, 4)
SELECT wait_for($$SELECT since = 3 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'accts_by_id'$$);
-- (its state shown if it does not get there)
SELECT CASE WHEN wait_for($$SELECT updates = 4 AND batches = 1 FROM peek.indexes WHERE name = 'accts_by_id'$$)
            THEN 'compacted'
            ELSE (SELECT format('%s updates in %s batches at since %s', updates, batches, since)
                    FROM peek.indexes WHERE name = 'accts_by_id') END AS state;
SELECT name, collection, key, state, updates, batches, bytes > 0 AS has_bytes, since, upper
  FROM peek.indexes ORDER BY name;

-- a since the index put off (it takes one a second at most) is still
-- applied when the index's row is read again meanwhile
SELECT peek.create_collection('put_off', 'acct');
SELECT peek.create_index('put_off_by_id', 'put_off', '{id}');
SELECT peek.write('put_off', ARRAY[('eu', 1, 1, 'kept')]::acct[]);
SELECT peek.write('put_off', ARRAY[('eu', 2, 1, 'gone')]::acct[]);
SELECT peek.write('put_off', '{}'::acct[], ARRAY[('eu', 2, 1, 'gone')]::acct[]);
SELECT peek.allow_compaction('put_off_by_id', 1);
SELECT wait_for($$SELECT since = 1 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'put_off_by_id'$$);
SELECT peek.allow_compaction('put_off_by_id', 2);
SELECT wait_for($$SELECT since = 2 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'put_off_by_id'$$);
-- (the since is at the last complete time already: only the row is read again)
SELECT peek.allow_compaction('put_off_by_id', 3);
-- at since 2 'gone' cancels out: 'kept' is all that is left
-- (its state shown if it does not get there)
SELECT CASE WHEN wait_for($$SELECT updates = 1 AND batches = 1 FROM peek.indexes WHERE name = 'put_off_by_id'$$)
            THEN 'compacted'
            ELSE (SELECT format('%s updates in %s batches at since %s', updates, batches, since)
                    FROM peek.indexes WHERE name = 'put_off_by_id') END AS state;
SELECT peek.drop_collection('put_off');

-- a negative multiplicity is invalid data
SELECT peek.create_collection('neg', 'acct');
SELECT peek.create_index('neg_by_id', 'neg', '{id}');
SELECT peek.write('neg', ARRAY[('eu', 7, 1, 'x')]::acct[]);
SELECT peek.append('neg', ARRAY[('eu', 7, 1, 'x')]::acct[], 1, -3);
SELECT peek.advance('neg', 2);
SELECT * FROM peek.index_peek(NULL::acct, 'neg_by_id', ROW(7), as_of => 0);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'neg_by_id', ROW(7), as_of => 1)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'neg_by_id', as_of => 1)$$);

-- result too large
SET pg_peek.max_result_bytes = '1kB';
SELECT peek.write('neg', array_agg(('eu', g, g, repeat('z', 100))::acct)) FROM generate_series(100, 150) g;
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'neg_by_id', as_of => 2)$$);
SELECT count(*) FROM peek.index_peek(NULL::acct, 'neg_by_id', ROW(120), as_of => 2);
RESET pg_peek.max_result_bytes;

-- bad input
SELECT try($$SELECT peek.create_index('accts_by_id', 'accts', '{id}')$$);
SELECT try($$SELECT peek.create_index('accts', 'accts', '{id}')$$);
SELECT try($$SELECT peek.create_index('x', 'nosuch', '{id}')$$);
SELECT try($$SELECT peek.create_index('x', 'accts_by_id', '{id}')$$);
SELECT try($$SELECT peek.create_index('x', 'accts', '{nosuch}')$$);
SELECT try($$SELECT peek.create_index('x', 'accts', '{id,id}')$$);
SELECT try($$SELECT peek.create_index('x', 'accts', '{}')$$);
SELECT try($$SELECT peek.create_index('x', 'accts', NULL)$$);
SELECT try($$SELECT peek.create_index('x', 'accts', '{NULL}')$$);
SELECT try($$SELECT peek.create_index(NULL, 'accts', '{id}')$$);
SELECT try($$SELECT peek.create_index('', 'accts', '{id}')$$);
CREATE TYPE blob AS (id int, pt point);
SELECT peek.create_collection('blobs', 'blob');
SELECT try($$SELECT peek.create_index('x', 'blobs', '{pt}')$$);
SELECT try($$SELECT peek.drop_index('nosuch')$$);
SELECT try($$SELECT peek.drop_index('accts')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'nosuch')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::acct, 'accts_by_id')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::tag, 'accts_by_id')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(1, 2))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW(now()))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', ROW('one'))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', as_of => -1)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id', "limit" => -1)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, NULL)$$);
-- none of that changed anything
SELECT name, kind FROM peek.objects ORDER BY name;

-- privileges: only the owner creates, drops or compacts an index
CREATE ROLE peek_idx_stranger;
GRANT USAGE ON SCHEMA peek TO peek_idx_stranger;
SET ROLE peek_idx_stranger;
SELECT try($$SELECT peek.create_index('x', 'accts', '{id}')$$);
SELECT try($$SELECT peek.drop_index('accts_by_id')$$);
SELECT try($$SELECT peek.allow_compaction('accts_by_id', 5)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'accts_by_id')$$);
RESET ROLE;
REVOKE USAGE ON SCHEMA peek FROM peek_idx_stranger;
DROP ROLE peek_idx_stranger;

-- as_of NULL reads at least at this session's own last write, waiting for
-- the index to publish it if need be (read-your-writes within a session)
SELECT peek.write('accts', ARRAY[('zz', 99, 1, 'mine')]::acct[]) > 0 AS wrote;
SELECT region, id, note FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('zz', 99));
SELECT peek.write('accts', '{}'::acct[], ARRAY[('zz', 99, 1, 'mine')]::acct[]) > 0 AS retracted;
SELECT count(*) FROM peek.index_peek(NULL::acct, 'accts_by_region_id', ROW('zz', 99));

-- drop_index; dropping a collection drops its indexes
SELECT peek.drop_index('accts_by_balance');
SELECT peek.drop_collection('accts');
SELECT name, kind FROM peek.objects ORDER BY name;
SELECT wait_for($$SELECT count(*) = 0 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object LIKE 'accts%'$$);

-- memory: an index beyond pg_peek.max_memory fails with 53200; the
-- collection, other indexes and the runtime are untouched; raising the
-- limit and recreating the index recovers it
SELECT peek.create_collection('wide', 'acct');
SELECT peek.write('wide', array_agg(('eu', g, g, repeat('w', 200))::acct)) FROM generate_series(1, 10000) g;
ALTER SYSTEM SET pg_peek.max_memory = '1MB';
SELECT pg_reload_conf();
SELECT wait_for($$SELECT bool_and(dsa_limit = 1048576) FROM peek.runtimes$$);
SELECT peek.create_index('wide_by_id', 'wide', '{id}');
SELECT wait_for($$SELECT count(*) = 1 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'wide_by_id'$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::acct, 'wide_by_id', ROW(5))$$);
SELECT * FROM peek.index_peek(NULL::tag, 'tags_by_name', ROW('apple'));
SELECT count(*) FROM peek.persist_peek(NULL::acct, 'wide');
SELECT state FROM peek.runtimes WHERE role IN ('maintenance', 'solo');
ALTER SYSTEM RESET pg_peek.max_memory;
SELECT pg_reload_conf();
SELECT wait_for($$SELECT bool_and(dsa_limit = 1073741824) FROM peek.runtimes$$);
SELECT peek.drop_index('wide_by_id');
SELECT peek.create_index('wide_by_id', 'wide', '{id}');
SELECT note = repeat('w', 200) AS found FROM peek.index_peek(NULL::acct, 'wide_by_id', ROW(5));

DROP EXTENSION pg_peek CASCADE;
DROP TYPE acct, tag, blob;
DROP COLLATION peek_ci;
