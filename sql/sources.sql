-- Sources: collections fed from a table's committed changes through logical
-- decoding.  The initial load, INSERT/UPDATE/DELETE/TRUNCATE at their commit
-- LSNs, earlier times, rollbacks, the table's row type (with a dropped
-- column), read-your-writes under strict serializable, schema changes that
-- fail a source, row-level security, privileges and bad input.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- the time of the WAL position now: every commit so far is before it
CREATE FUNCTION wal_now() RETURNS bigint LANGUAGE sql AS
$$ SELECT pg_catalog.pg_current_wal_insert_lsn() - '0/0' $$;

-- the runtimes now: failures below must not restart them
SELECT string_agg(pid::text, ',' ORDER BY role) AS runtime_pids FROM peek.runtimes \gset

CREATE TABLE orders (id int PRIMARY KEY, item text, qty int, gone int);
ALTER TABLE orders DROP COLUMN gone;
INSERT INTO orders SELECT g, 'item ' || g, g * 10 FROM generate_series(1, 5) g;

-- the table gets REPLICA IDENTITY FULL; its rows are loaded once
SELECT peek.create_source('orders_src', 'orders');
SELECT relreplident FROM pg_class WHERE relname = 'orders';
SELECT peek.create_index('orders_by_id', 'orders_src', ARRAY['id']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'orders_src'$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'orders_by_id'$$);
SELECT name, row_type, state, failure, source, rows FROM peek.collections;
SELECT slot_type, plugin, database FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%';

-- strict serializable: as_of NULL sees every transaction committed before
SET pg_peek.isolation = 'strict serializable';
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id') ORDER BY id;
SELECT wal_now() AS t_loaded \gset
INSERT INTO orders VALUES (6, 'six', 60);
SELECT wal_now() AS t_insert \gset
UPDATE orders SET qty = qty + 1 WHERE id IN (2, 3);
SELECT wal_now() AS t_update \gset
DELETE FROM orders WHERE id = 1;
SELECT wal_now() AS t_delete \gset
BEGIN;
INSERT INTO orders VALUES (99, 'rolled back', 0);
ROLLBACK;
BEGIN;
INSERT INTO orders VALUES (7, 'seven', 70);
UPDATE orders SET item = 'SEVEN' WHERE id = 7;
DELETE FROM orders WHERE id = 6;
COMMIT;
SELECT wal_now() AS t_multi \gset

-- now: index and persist peeks equal the table
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id') ORDER BY id;
SELECT count(*) AS differences FROM (
    (SELECT * FROM orders EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::orders, 'orders_src'))
    UNION ALL
    (SELECT * FROM peek.persist_peek(NULL::orders, 'orders_src') EXCEPT ALL SELECT * FROM orders)) d;

-- each earlier time still shows its contents
SELECT * FROM peek.persist_peek(NULL::orders, 'orders_src', as_of => :t_loaded) ORDER BY id;
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', as_of => :t_insert) ORDER BY id;
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(2), as_of => :t_insert);
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(2), as_of => :t_update);
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(1), as_of => :t_update);
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(1), as_of => :t_delete);
SELECT * FROM peek.persist_peek(NULL::orders, 'orders_src', as_of => :t_multi, "limit" => 10) ORDER BY id;
-- the shard holds one update per change after the since (0), which a fold
-- moving the base on keeps as history: 5 loaded, +1, 2 x (-1 +1), -1, +1 -1
SELECT (SELECT count(*) FROM peek.persist_peek(NULL::orders, 'orders_src')) AS net,
       shard_updates('orders_src') AS updates;

-- TRUNCATE retracts every row at its commit time
TRUNCATE orders;
SELECT wal_now() AS t_truncate \gset
INSERT INTO orders VALUES (8, 'eight', 80);
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id') ORDER BY id;
SELECT count(*) FROM peek.persist_peek(NULL::orders, 'orders_src', as_of => :t_truncate);
SELECT count(*) FROM peek.index_peek(NULL::orders, 'orders_by_id', as_of => :t_multi);

-- the upper follows the WAL while the table is idle
CREATE TABLE elsewhere (x int);
INSERT INTO elsewhere VALUES (1);
SELECT wait_for(format('SELECT upper > %s FROM peek.collections WHERE name = %L',
                       wal_now(), 'orders_src'));

-- read-your-writes: a session that commits and peeks always sees its row
CREATE PROCEDURE read_your_writes(n int) LANGUAGE plpgsql AS $$
DECLARE
    misses int := 0;
BEGIN
    FOR i IN 1000 .. 1000 + n - 1 LOOP
        INSERT INTO orders VALUES (i, 'mine', i);
        COMMIT;
        IF NOT EXISTS (SELECT 1 FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(i))) THEN
            misses := misses + 1;
        END IF;
    END LOOP;
    RAISE NOTICE 'read-your-writes: % of % peeks missed their own row', misses, n;
END $$;
CALL read_your_writes(300);

-- the source's own row type works as well as the table's
SELECT row_type FROM peek.collections WHERE name = 'orders_src';
SELECT * FROM peek.index_peek(NULL::peek.source_1, 'orders_by_id', ROW(8));
RESET pg_peek.isolation;

-- bad input changes nothing
SELECT try($$SELECT peek.create_source('orders_src', 'orders')$$);
SELECT try($$SELECT peek.create_source(NULL, 'orders')$$);
SELECT try($$SELECT peek.create_source('', 'orders')$$);
SELECT try($$SELECT peek.create_source('x', NULL)$$);
SELECT try($$SELECT peek.create_source('x', 'no_such_table')$$);
CREATE VIEW orders_view AS SELECT * FROM orders;
SELECT try($$SELECT peek.create_source('x', 'orders_view')$$);
CREATE UNLOGGED TABLE scratch (x int);
SELECT try($$SELECT peek.create_source('x', 'scratch')$$);
CREATE TEMP TABLE temp_scratch (x int);
SELECT try($$SELECT peek.create_source('x', 'temp_scratch')$$);
SELECT try($$SELECT peek.create_source('x', 'pg_class')$$);
SELECT try($$SELECT peek.append('orders_src', ARRAY[]::peek.source_1[], wal_now())$$);
SELECT try($$SELECT peek.write('orders_src', ARRAY[]::peek.source_1[])$$);
SELECT try($$SELECT peek.advance('orders_src', wal_now())$$);
SELECT try($$SELECT peek.drop_collection('orders_src')$$);
CREATE TYPE plain_row AS (id int);
SELECT peek.create_collection('plain', 'plain_row');
SELECT try($$SELECT peek.drop_source('plain')$$);
SELECT try($$SELECT peek.drop_source('no_such_source')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::plain_row, 'orders_by_id')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::plain_row, 'orders_src')$$);
SELECT name FROM peek.collections ORDER BY name;

-- privileges: a source is created by the table's owner and peeked by
-- whoever may SELECT from the table
CREATE ROLE peek_src_reader;
GRANT USAGE ON SCHEMA peek TO peek_src_reader;
SET ROLE peek_src_reader;
SELECT try($$SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(8))$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::orders, 'orders_src')$$);
SELECT try($$SELECT peek.create_source('stolen', 'orders')$$);
RESET ROLE;
GRANT SELECT ON orders TO peek_src_reader;
SET ROLE peek_src_reader;
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(8));
SELECT try($$SELECT peek.drop_source('orders_src')$$);
RESET ROLE;

-- schema changes fail a source with the reason; peeks fail with it; the
-- runtimes carry on and the source's slot is dropped
CREATE TABLE items (id int PRIMARY KEY, name text);
CREATE TABLE parts (id int PRIMARY KEY, name text);
CREATE TABLE bins (id int PRIMARY KEY, name text);
INSERT INTO items VALUES (1, 'one');
SELECT peek.create_source('items_src', 'items');
SELECT peek.create_index('items_by_id', 'items_src', '{id}');
SELECT peek.create_source('parts_src', 'parts');
SELECT peek.create_source('bins_src', 'bins');
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL$$);
SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%';
ALTER TABLE items ALTER COLUMN name TYPE varchar(20);
INSERT INTO items VALUES (2, 'two');
DROP TABLE parts;
ALTER TABLE bins REPLICA IDENTITY DEFAULT;
DELETE FROM bins;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.collections WHERE state = 'failed'$$);
SELECT name, state, failure
  FROM peek.collections WHERE source IS NULL OR state = 'failed' ORDER BY name;
SELECT name, state, failure FROM peek.indexes WHERE name = 'items_by_id';
SELECT try($$SELECT * FROM peek.index_peek(NULL::items, 'items_by_id', ROW(1))$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::items, 'items_src')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::peek.source_4, 'items_src')$$);
SELECT wait_for($$SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'$$);
SELECT bool_and(state = 'running') AS running,
       string_agg(pid::text, ',' ORDER BY role) = :'runtime_pids' AS not_restarted
  FROM peek.runtimes;
-- the healthy source is untouched
INSERT INTO orders VALUES (9, 'nine', 90);
SET pg_peek.isolation = 'strict serializable';
SELECT * FROM peek.index_peek(NULL::orders, 'orders_by_id', ROW(9));
RESET pg_peek.isolation;

-- row-level security: a source reads its table as a superuser, so it would
-- show every row to whoever may read the table.  A table with it is refused,
-- and enabling it fails the source (at the ALTER, even on an idle table)
CREATE TABLE secrets (id int PRIMARY KEY, owner_name text);
INSERT INTO secrets VALUES (1, 'a'), (2, 'b');
ALTER TABLE secrets ENABLE ROW LEVEL SECURITY;
SELECT try($$SELECT peek.create_source('secrets_src', 'secrets')$$);
SELECT count(*) FROM peek.collections WHERE name = 'secrets_src';
ALTER TABLE secrets DISABLE ROW LEVEL SECURITY;
SELECT peek.create_source('secrets_src', 'secrets');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'secrets_src'$$);
ALTER TABLE secrets ENABLE ROW LEVEL SECURITY;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'secrets_src'$$);
SELECT name, state, failure FROM peek.collections WHERE name = 'secrets_src';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::secrets, 'secrets_src')$$);
SELECT bool_and(state = 'running') AS running,
       string_agg(pid::text, ',' ORDER BY role) = :'runtime_pids' AS not_restarted
  FROM peek.runtimes;
SELECT peek.drop_source('secrets_src');

-- drop_source removes the source, its indexes, its shard, its row type and
-- its slot
SELECT peek.drop_source('items_src');
SELECT peek.drop_source('parts_src');
SELECT peek.drop_source('bins_src');
SELECT peek.drop_source('orders_src');
SELECT name FROM peek.collections UNION ALL SELECT name FROM peek.indexes;
SELECT count(*) FROM pg_class WHERE relnamespace = 'peek'::regnamespace AND relkind = 'r' AND relname LIKE 'shard_%';
SELECT count(*) FROM pg_type WHERE typnamespace = 'peek'::regnamespace AND typname LIKE 'source_%';
SELECT wait_for($$SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'$$);
SELECT relreplident FROM pg_class WHERE relname = 'orders';

-- the catalog keeps a captured table's name, through renames, so that a
-- drop names it to a runtime that saw neither the rename nor the drop
-- happen (it met both in one commit, or started after them)
CREATE FUNCTION rename_and_drop(t text, renamed text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t, renamed);
    EXECUTE format('DROP TABLE %I', renamed);
END $$;
CREATE TABLE crates (id int PRIMARY KEY);
SELECT peek.create_source('crates_src', 'crates');
CREATE TABLE cases (id int PRIMARY KEY);
SELECT peek.create_source('cases_src', 'cases');
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections WHERE name IN ('crates_src', 'cases_src')$$);
ALTER TABLE crates RENAME TO boxes;
ALTER INDEX boxes RENAME TO bins_of_crates;
SELECT name, source_name FROM peek.objects WHERE name IN ('crates_src', 'cases_src') ORDER BY name;
SELECT rename_and_drop('bins_of_crates', 'cartons');
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'crates_src'$$);
-- the maintenance runtime stopped, the table renamed and dropped before its
-- successor starts
SELECT pg_terminate_backend(pid) FROM peek.runtimes WHERE role IN ('maintenance', 'solo');
SELECT rename_and_drop('cases', 'chests');
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'cases_src'$$);
SELECT name, state, failure FROM peek.collections WHERE name IN ('crates_src', 'cases_src') ORDER BY name;
SELECT peek.drop_source('crates_src');
SELECT peek.drop_source('cases_src');
DROP FUNCTION rename_and_drop(text, text);

DROP PROCEDURE read_your_writes(int);
DROP FUNCTION wal_now();
DROP VIEW orders_view;
DROP TABLE orders, items, bins, elsewhere, scratch, secrets;
SELECT peek.drop_collection('plain');
DROP TYPE plain_row;
REVOKE USAGE ON SCHEMA peek FROM peek_src_reader;
DROP ROLE peek_src_reader;
