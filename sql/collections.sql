-- Collections and their persist shards: the SQL surface and every error.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE item AS (id int, name text, qty numeric);

-- create, with the catalog row and its shard
SELECT peek.create_collection('items', 'item');
SELECT name, row_type, since, upper, allowed_since FROM peek.collections;
SELECT shard::text LIKE 'peek.shard_%' AS has_shard FROM peek.collections;
SELECT wait_for($$SELECT count(*) = 1 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'items'$$);
SELECT object, kind, since, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo');

-- append at times >= upper, with a diff; advance seals
SELECT peek.append('items', ARRAY[(1, 'apple', 1.5), (2, 'pear', 2)]::item[], 0);
SELECT peek.append('items', ARRAY[(2, 'pear', 2)]::item[], 0, 2);
SELECT peek.append('items', ARRAY[(3, 'fig', 0.25)]::item[], 5);
SELECT peek.advance('items', 3);
SELECT peek.advance('items', 3);    -- same upper: nothing to do
-- peek.collections shows the published upper, which the runtime publishes
-- after the seal commits
SELECT wait_for($$SELECT upper = 3 FROM peek.collections WHERE name = 'items'$$);
SELECT upper FROM peek.collections WHERE name = 'items';
SELECT wait_for($$SELECT upper = 3 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'items'$$);

-- write: appends at the upper, seals it, returns the time
SELECT peek.advance('items', 6);
SELECT peek.write('items', ARRAY[(4, 'kiwi', 7)]::item[]);
SELECT peek.write('items', ARRAY[(5, 'lime', 1)]::item[], ARRAY[(1, 'apple', 1.5)]::item[]);
SELECT peek.write('items', '{}'::item[]);
SELECT wait_for($$SELECT upper = 9 FROM peek.collections WHERE name = 'items'$$);
SELECT upper FROM peek.collections WHERE name = 'items';

-- the shard holds every update after the since (0), durable in an
-- ordinary table (those at 0 a fold may have taken into the base)
SELECT shard_updates('items');

-- appends are transactional: an aborted append leaves nothing behind
BEGIN;
SELECT peek.append('items', ARRAY[(9, 'ghost', 1)]::item[], 100);
SELECT peek.advance('items', 200);
ROLLBACK;
SELECT upper FROM peek.collections WHERE name = 'items';
DO $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s WHERE (data).name = %L',
                   (SELECT shard FROM peek.collections WHERE name = 'items'), 'ghost') INTO n;
    RAISE NOTICE 'ghost rows: %', n;
END $$;

-- bad input: each a clear error with its SQLSTATE, nothing changed
SELECT try($$SELECT peek.create_collection('items', 'item')$$);
SELECT try($$SELECT peek.create_collection('nums', 'int4')$$);
SELECT try($$SELECT peek.create_collection(NULL, 'item')$$);
SELECT try($$SELECT peek.create_collection('', 'item')$$);
SELECT try($$SELECT peek.create_collection('x', NULL)$$);
SELECT try($$SELECT peek.drop_collection('nosuch')$$);
SELECT try($$SELECT peek.append('nosuch', ARRAY[(1, 'a', 1)]::item[], 10)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)], 10)$$);
SELECT try($$SELECT peek.append('items', ARRAY[1, 2], 10)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], 2)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], -1)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], NULL)$$);
SELECT try($$SELECT peek.append('items', NULL::item[], 10)$$);
SELECT try($$SELECT peek.append('items', ARRAY[NULL, (1, 'a', 1)]::item[], 10)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], 10, 0)$$);
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], 10, NULL)$$);
SELECT try($$SELECT peek.advance('items', 2)$$);
SELECT try($$SELECT peek.advance('items', -5)$$);
SELECT try($$SELECT peek.advance('items', NULL)$$);
SELECT try($$SELECT peek.advance('nosuch', 5)$$);
SELECT try($$SELECT peek.write('items', ARRAY[(1, 'a', 1)])$$);
SELECT try($$SELECT peek.write('items', NULL::item[])$$);
SELECT try($$SELECT peek.write('nosuch', '{}'::item[])$$);
SELECT try($$SELECT peek.allow_compaction('nosuch', 1)$$);
SELECT try($$SELECT peek.allow_compaction('items', -1)$$);
SELECT try($$SELECT peek.allow_compaction('items', NULL)$$);
-- none of that changed anything
SELECT name, since, upper, allowed_since FROM peek.collections;

-- privileges: only the owner writes
CREATE ROLE peek_stranger;
GRANT USAGE ON SCHEMA peek TO peek_stranger;
SET ROLE peek_stranger;
SELECT try($$SELECT peek.append('items', ARRAY[(1, 'a', 1)]::item[], 10)$$);
SELECT try($$SELECT peek.advance('items', 10)$$);
SELECT try($$SELECT peek.write('items', '{}'::item[])$$);
SELECT try($$SELECT peek.allow_compaction('items', 1)$$);
SELECT try($$SELECT peek.drop_collection('items')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::item, 'items')$$);
RESET ROLE;
SELECT name, since, upper FROM peek.collections;

-- writers to one collection serialize on its catalog row; the row lock
-- makes write() return consecutive times in commit order
SELECT peek.write('items', '{}'::item[]) AS t1, peek.write('items', '{}'::item[]) AS t2;

-- drop removes the catalog row and the shard table
SELECT shard AS items_shard FROM peek.collections WHERE name = 'items' \gset
SELECT peek.drop_collection('items');
SELECT count(*) FROM peek.collections;
SELECT to_regclass(:'items_shard') IS NULL AS shard_gone;
SELECT try($$SELECT peek.drop_collection('items')$$);
SELECT wait_for($$SELECT count(*) = 0 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo')$$);

-- a name can be reused after a drop
SELECT peek.create_collection('items', 'item');
SELECT name, since, upper FROM peek.collections;
SELECT peek.drop_collection('items');

REVOKE USAGE ON SCHEMA peek FROM peek_stranger;
DROP ROLE peek_stranger;
DROP EXTENSION pg_peek CASCADE;
DROP TYPE item;
