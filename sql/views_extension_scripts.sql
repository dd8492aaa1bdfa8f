-- pg_peek's objects are not created in another extension's script: what
-- create_view and create_collection create (the shard, the row type, the
-- PostgreSQL view) would become members of that extension, and DROP
-- EXTENSION, even without CASCADE, dropped them under the catalog row:
-- the view stayed behind failed ("its row type ... was dropped, and its
-- shard with it").  Refused with 0A000 naming the extension; the update
-- does not happen.  peek_test_ext is installed by scripts/test
-- (test/extensions).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

SELECT test_ext_with_collection('esc', 'esrow', 2);

SELECT v, try(format('ALTER EXTENSION peek_test_ext UPDATE TO %L', v))
  FROM unnest(ARRAY['1.6', '1.7']) v;
SELECT extversion FROM pg_extension WHERE extname = 'peek_test_ext';
SELECT name FROM peek.objects ORDER BY name;

-- DROP EXTENSION leaves pg_peek's objects as they were
DROP EXTENSION peek_test_ext;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'esc'$$);
SELECT name FROM peek.objects ORDER BY name;
SELECT count(*) FROM peek.persist_peek(NULL::esrow, 'esc');

SELECT peek.drop_collection('esc');
DROP TYPE esrow;
