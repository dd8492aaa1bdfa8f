-- Retention: every collection, source and index keeps the
-- history of its last `retention` by the wall clock (pg_peek.retention's
-- unless peek.set_retention gave it one; NULL keeps all history).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE rkv AS (k int, v text);
SELECT peek.create_collection('ret', 'rkv');
SELECT peek.create_index('ret_by_k', 'ret', '{k}');
CREATE TABLE ret_table (id int PRIMARY KEY, x text);
SELECT peek.create_source('ret_src', 'ret_table');
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections
                  UNION ALL SELECT state FROM peek.indexes) s$$);

-- the default: pg_peek.retention, shown in the views
SHOW pg_peek.retention;
SELECT name, retention FROM peek.collections ORDER BY name;
SELECT name, retention FROM peek.indexes ORDER BY name;

-- errors: as allow_compaction's
SELECT try($$SELECT peek.set_retention('nothing', '1 min')$$);
SELECT try($$SELECT peek.set_retention(NULL, '1 min')$$);
SELECT try($$SELECT peek.set_retention('ret', '-1 s')$$);
SELECT try($$SELECT peek.set_retention('ret', '1 day -25 hours')$$);
SELECT try($$SELECT peek.reset_retention('nothing')$$);
CREATE ROLE peek_ret_stranger;
GRANT USAGE ON SCHEMA peek TO peek_ret_stranger;
SET ROLE peek_ret_stranger;
SELECT try($$SELECT peek.set_retention('ret', '1 min')$$);
SELECT try($$SELECT peek.set_retention('ret_by_k', NULL)$$);
SELECT try($$SELECT peek.reset_retention('ret')$$);
RESET ROLE;
DROP OWNED BY peek_ret_stranger;
DROP ROLE peek_ret_stranger;
-- a failed call changed nothing
SELECT name, retention FROM peek.collections WHERE name = 'ret';

-- an object's own retention, NULL (all history), and back to the setting's
SELECT peek.set_retention('ret', '5 min');
SELECT peek.set_retention('ret_by_k', NULL);
SELECT peek.set_retention('ret_src', '0');
SELECT name, retention FROM peek.collections ORDER BY name;
SELECT name, retention FROM peek.indexes ORDER BY name;
SELECT peek.reset_retention('ret');
SELECT name, retention FROM peek.collections WHERE name = 'ret';

-- a retention of 0 keeps only the newest complete time: the since follows
-- the upper, and a peek before it fails with 72000
SELECT peek.set_retention('ret', '0');
SELECT peek.write('ret', ARRAY[(1, 'a')]::rkv[]);
SELECT peek.write('ret', ARRAY[(2, 'b')]::rkv[]);
SELECT peek.write('ret', ARRAY[(1, 'A')]::rkv[], ARRAY[(1, 'a')]::rkv[]);
SELECT wait_for($$SELECT since = 2 FROM peek.collections WHERE name = 'ret'$$);
-- (the since shown comes first; the fold's commit makes it durable)
SELECT wait_for($$SELECT since = 2 FROM peek.objects WHERE name = 'ret'$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::rkv, 'ret', as_of => 0)$$);
SELECT * FROM peek.persist_peek(NULL::rkv, 'ret', as_of => 2) ORDER BY k;
-- the fold left the contents only
SELECT shard_rows('ret');
SELECT since_age IS NOT NULL AND since_age >= '0' AS since_age_shown
  FROM peek.collections WHERE name = 'ret';

-- NULL keeps all history: the since stays where it is (it never goes back)
-- while writes come, and every time after it stays readable
SELECT peek.set_retention('ret', NULL);
SELECT peek.write('ret', ARRAY[(3, 'c')]::rkv[]);
SELECT peek.write('ret', ARRAY[(4, 'd')]::rkv[]);
SELECT pg_sleep(1);
SELECT peek.write('ret', ARRAY[(5, 'e')]::rkv[]);
SELECT wait_for($$SELECT upper = 6 FROM peek.frontiers WHERE object = 'ret' AND runtime IN ('maintenance', 'solo')$$);
SELECT pg_sleep(0.5);
SELECT since, upper, retention FROM peek.collections WHERE name = 'ret';
SELECT * FROM peek.persist_peek(NULL::rkv, 'ret', as_of => 3) ORDER BY k;
-- the index (NULL as well) keeps what it has: all it read, or, hydrated
-- again by a runtime that reconciled meanwhile, the shard's since on
SELECT since <= 2 AS kept FROM peek.indexes WHERE name = 'ret_by_k';
SELECT * FROM peek.index_peek(NULL::rkv, 'ret_by_k', as_of => 3) ORDER BY k;

-- a retention too long to count in microseconds from now keeps all
-- history, as a long one does ('400000 years' wrapped around to a cutoff
-- in the future, and its since followed the upper as with 0); a
-- collection with retention 0 written at the same times shows when the
-- runtime has applied retention
CREATE TYPE rkv2 AS (k int, v text);
SELECT peek.create_collection('ret_long', 'rkv2');
SELECT peek.create_collection('ret_zero', 'rkv2');
SELECT peek.set_retention('ret_long', '400000 years');
SELECT peek.set_retention('ret_zero', '0');
SELECT peek.write(c, ARRAY[(1, 'a')]::rkv2[]) FROM unnest(ARRAY['ret_long', 'ret_zero']) c;
SELECT peek.write(c, ARRAY[(2, 'b')]::rkv2[]) FROM unnest(ARRAY['ret_long', 'ret_zero']) c;
SELECT peek.write(c, ARRAY[(3, 'c')]::rkv2[]) FROM unnest(ARRAY['ret_long', 'ret_zero']) c;
SELECT wait_for($$SELECT since = 2 FROM peek.collections WHERE name = 'ret_zero'$$);
SELECT pg_sleep(1);
SELECT name, since, upper, retention FROM peek.collections WHERE name IN ('ret_long', 'ret_zero') ORDER BY name;
SELECT count(*) FROM peek.persist_peek(NULL::rkv2, 'ret_long', as_of => 0);
SELECT peek.drop_collection('ret_long');
SELECT peek.drop_collection('ret_zero');
DROP TYPE rkv2;

-- a view's retention: shown in peek.views (peek.collections shows no
-- view), the setting's until set_retention gives it one, and followed
CREATE TYPE rkv3 AS (k int, v text);
SELECT peek.create_collection('ret_in', 'rkv3');
SELECT peek.write('ret_in', ARRAY[(1, 'a')]::rkv3[]);
SELECT peek.create_view('ret_view', $$SELECT k, count(*) AS n FROM peek.persist_peek(NULL::rkv3, 'ret_in') GROUP BY k$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'ret_view'$$);
SELECT name, retention FROM peek.views;
SELECT peek.set_retention('ret_view', '0');
SELECT peek.write('ret_in', ARRAY[(2, 'b')]::rkv3[]);
SELECT peek.write('ret_in', ARRAY[(1, 'c')]::rkv3[]);
SELECT wait_for($$SELECT since = 2 FROM peek.views WHERE name = 'ret_view'$$);
SELECT name, since, upper, retention, since_age IS NOT NULL AS since_age_shown FROM peek.views;
SELECT left(try($$SELECT * FROM peek.persist_peek(NULL::ret_view, 'ret_view', as_of => 1)$$), 5) AS sqlstate;
SELECT peek.set_retention('ret_view', NULL);
SELECT name, retention FROM peek.views;
SELECT peek.drop_view('ret_view');
SELECT peek.drop_collection('ret_in');
DROP TYPE rkv3;

-- a source with retention 0: its since follows its upper (commit LSNs)
SELECT upper AS src_upper FROM peek.collections WHERE name = 'ret_src' \gset
INSERT INTO ret_table VALUES (1, 'one');
INSERT INTO ret_table VALUES (2, 'two');
SELECT wait_for($$SELECT count(*) = 2 FROM peek.persist_peek(NULL::ret_table, 'ret_src')$$);
SELECT wait_for(format('SELECT since >= %s FROM peek.collections WHERE name = %L',
                       :src_upper, 'ret_src'));
SELECT left(try(format('SELECT * FROM peek.persist_peek(NULL::ret_table, %L, as_of => %s)',
                       'ret_src', :src_upper - 2)), 5) AS sqlstate;

-- the source's slot goes before the next file creates the extension again
SELECT peek.drop_source('ret_src');
SELECT wait_for($$SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'$$);
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE ret_table;
DROP TYPE rkv;
