-- Semi-joins and anti-joins (semijoins.c) attacked: an inner input's row
-- of more copies than the query over a group's rows takes (10^6) must not
-- fail the view, since EXISTS does not count them (runs.c passes a
-- semi-join's inner rows once each); and correlations besides the key
-- (non-equalities, expressions, numeric against int, float -0 and NaN,
-- COLLATE "C", multi-column IN, = ANY, a self semi-join, EXISTS and NOT
-- EXISTS on the same input, an anti-join's condition on the outer input
-- alone, a join USING's merged column, a pulled-up subquery's expression
-- column), every view by its persist peek and by an index peek against
-- PostgreSQL's evaluation of its query at each time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- copies on both sides through collections
CREATE TYPE sja_o AS (id int, k int, y int);
CREATE TYPE sja_i AS (k int, x int);
SELECT peek.create_collection('sja_oc', 'sja_o');
SELECT peek.create_collection('sja_ic', 'sja_i');
SELECT peek.append('sja_oc', ARRAY[(1, 1, 1), (2, 2, 2), (5, NULL, 5)]::sja_o[], 0, 3);
SELECT peek.append('sja_ic', ARRAY[(1, 1), (NULL, 0)]::sja_i[], 0, 1);
SELECT peek.advance('sja_oc', 1), peek.advance('sja_ic', 1);
CREATE TABLE sjq (name text PRIMARY KEY, query text);
INSERT INTO sjq VALUES
  ('sja_ex', $$SELECT o.id, o.y FROM peek.persist_peek(NULL::sja_o, 'sja_oc') o
                WHERE EXISTS (SELECT 1 FROM peek.persist_peek(NULL::sja_i, 'sja_ic') i WHERE i.k = o.k)$$),
  ('sja_nex', $$SELECT o.k, count(*) AS n FROM peek.persist_peek(NULL::sja_o, 'sja_oc') o
                 WHERE NOT EXISTS (SELECT 1 FROM peek.persist_peek(NULL::sja_i, 'sja_ic') i WHERE i.k = o.k) GROUP BY o.k$$),
  ('sja_in', $$SELECT o.id FROM peek.persist_peek(NULL::sja_o, 'sja_oc') o
                WHERE o.k IN (SELECT i.k FROM peek.persist_peek(NULL::sja_i, 'sja_ic') i WHERE i.x > 0)$$);
SELECT name, peek.create_view(name, query) FROM sjq ORDER BY name;
SELECT wait_for($$SELECT bool_and(upper >= 1) FROM peek.views WHERE name LIKE 'sja\_%'$$);
-- 2*10^6 copies of inner rows (more than a run takes), made at once
SELECT peek.append('sja_ic', ARRAY[(1, 1), (2, 2)]::sja_i[], 1, 2000000);
SELECT peek.append('sja_oc', ARRAY[(3, 3, 3)]::sja_o[], 1, 2);
SELECT peek.advance('sja_oc', 2), peek.advance('sja_ic', 2);
SELECT wait_for($$SELECT bool_and(upper >= 2 OR state = 'failed') FROM peek.views WHERE name LIKE 'sja\_%'$$);
-- and retracted again while another key gets as many
SELECT peek.append('sja_ic', ARRAY[(1, 1)]::sja_i[], 2, -2000001);
SELECT peek.append('sja_ic', ARRAY[(3, 1)]::sja_i[], 2, 3000000);
SELECT peek.advance('sja_oc', 3), peek.advance('sja_ic', 3);
SELECT wait_for($$SELECT bool_and(upper >= 3 OR state = 'failed') FROM peek.views WHERE name LIKE 'sja\_%'$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'sja\_%' ORDER BY name;
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             replace(replace(query, '''sja_oc''', '''sja_oc'', as_of => @T@'),
                                     '''sja_ic''', '''sja_ic'', as_of => @T@'), ARRAY[0, 1, 2]) AS bad_times
  FROM sjq ORDER BY name;
-- a view made over those copies (hydrated) too
SELECT peek.create_view('sja_late', query) FROM sjq WHERE name = 'sja_ex';
SELECT wait_for($$SELECT upper >= 3 OR state = 'failed' FROM peek.views WHERE name = 'sja_late'$$);
SELECT state, failure, (SELECT count(*) FROM sja_late) AS late_rows, (SELECT count(*) FROM sja_ex) AS rows
  FROM peek.views WHERE name = 'sja_late';
SELECT peek.drop_view('sja_late');
SELECT peek.drop_view(name) FROM sjq ORDER BY name;
SELECT peek.drop_collection('sja_oc'), peek.drop_collection('sja_ic');
DELETE FROM sjq;

-- correlations besides the key, over sources
CREATE TABLE sja (id int, k int, y int, t text, n numeric, f float8, z int);
CREATE TABLE sjb (k int, x int, t text, n numeric, f float8, k2 int);
CREATE TABLE sjc (id int, z int, r int);
INSERT INTO sja SELECT i, i % 5, i % 7, chr(65 + i % 4), (i % 5)::numeric, (i % 3)::float8, i % 3 FROM generate_series(1, 30) i;
INSERT INTO sja VALUES (100, NULL, 1, NULL, NULL, NULL, NULL), (1, 1, 1, 'B', 1, 1, 1), (1, 1, 1, 'B', 1, 1, 1),
                       (3, 3, 3, 'a', 3.0, -0.0, 0);
INSERT INTO sjb VALUES (1, 5, 'b', 1.0, -0.0, 1), (2, 30, 'C', 2.00, 0.0, 2), (2, 1, 'c', 2.0, 'NaN', 2),
                       (NULL, 0, NULL, NULL, NULL, NULL), (3, 3, 'a', 3.000, 1, NULL), (3, 3, 'a', 3.000, 1, NULL);
INSERT INTO sjc SELECT i % 5, i % 4, i FROM generate_series(1, 8) i;
SET client_min_messages = warning;
SELECT peek.create_source('sja_src', 'sja'), peek.create_source('sjb_src', 'sjb'), peek.create_source('sjc_src', 'sjc');
RESET client_min_messages;
SELECT wait_for($$SELECT count(*) = 3 FROM peek.collections WHERE name LIKE 'sj%_src' AND state = 'ready'$$);
INSERT INTO sjq VALUES
  ('sjv_noneq', $$SELECT a.id, a.y FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE b.k = a.k AND b.x > a.y)$$),
  ('sjv_expr', $$SELECT a.id FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE b.k = a.k + 1)$$),
  ('sjv_lower', $$SELECT a.id FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE lower(b.t) = lower(a.t))$$),
  ('sjv_numint', $$SELECT a.id FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE b.n = a.k)$$),
  ('sjv_float', $$SELECT a.id FROM sja a WHERE NOT EXISTS (SELECT 1 FROM sjb b WHERE b.f = a.f)$$),
  ('sjv_coll', $$SELECT a.id FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE b.t = a.t COLLATE "C")$$),
  ('sjv_multi', $$SELECT a.id FROM sja a WHERE (a.k, a.y) IN (SELECT b.k, b.x FROM sjb b)$$),
  ('sjv_any', $$SELECT a.id FROM sja a WHERE a.y < ANY (SELECT b.x FROM sjb b WHERE b.k = a.k)$$),
  ('sjv_self', $$SELECT a.id, a.k FROM sja a WHERE EXISTS (SELECT FROM sja a2 WHERE a2.k = a.k AND a2.id <> a.id)$$),
  ('sjv_en_same', $$SELECT a.id FROM sja a WHERE EXISTS (SELECT 1 FROM sjb b WHERE b.k = a.k AND b.x > 2)
                     AND NOT EXISTS (SELECT 1 FROM sjb b WHERE b.k = a.k AND b.x > 20)$$),
  ('sjv_anti_outer', $$SELECT a.k, count(*) AS n FROM sja a WHERE NOT EXISTS (SELECT FROM sjb b WHERE b.k = a.k AND a.y > 3) GROUP BY a.k$$),
  ('sjv_chain', $$SELECT c.r, count(*) AS n FROM sja a JOIN sjc c ON c.id = a.k
                   WHERE NOT EXISTS (SELECT FROM sjb b WHERE b.k = a.y AND b.x = c.z) GROUP BY c.r$$),
  ('sjv_using', $$SELECT z, a.id FROM sja a JOIN sjc c USING (z) WHERE EXISTS (SELECT FROM sjb b WHERE b.x = z AND b.k = a.k)$$),
  ('sjv_sub', $$SELECT s.id, s.k1 FROM (SELECT id, k + 1 AS k1, y FROM sja WHERE y > 1) s WHERE EXISTS (SELECT FROM sjb b WHERE b.k = s.k1)$$);
SELECT name, peek.create_view(name, query) FROM sjq ORDER BY name;
SELECT count(*) FROM (SELECT peek.create_index(name || '_ix', name,
         ARRAY[(SELECT attname::text FROM pg_attribute WHERE attrelid = name::regclass AND attnum = 1)]) FROM sjq) i;
CREATE FUNCTION sjmismatches() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(name, ' ' ORDER BY name), '') FROM sjq
   WHERE view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L)', name, name), query, ARRAY[0]) <> ''
      OR view_mismatches(format('SELECT * FROM peek.index_peek(NULL::%I, %L)', name, name || '_ix'), query, ARRAY[0]) <> ''
$$;
CREATE TABLE sjtimes (src text, t bigint);
\set caught_up 'SELECT NOT EXISTS (SELECT FROM peek.views WHERE state <> ''ready'' OR lag > 0) AND NOT EXISTS (SELECT FROM peek.collections WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - ''0/0'')'
SELECT wait_for(:'caught_up'), views_past_wal('sja_src', 'sjtimes');
SELECT sjmismatches() AS mismatches;
UPDATE sja SET k = (k + 1) % 5 WHERE id % 4 = 0;
UPDATE sjb SET x = x + 1 WHERE k = 2;
DELETE FROM sjc WHERE r = 3;
INSERT INTO sjb VALUES (4, 100, 'd', 4, 2, 4), (0, 0, 'A', 0, 0, 0);
SELECT wait_for(:'caught_up'), views_past_wal('sja_src', 'sjtimes');
SELECT sjmismatches() AS mismatches;
UPDATE sjb SET f = 'NaN' WHERE k = 3;
UPDATE sja SET f = 'NaN' WHERE id = 4;
UPDATE sjb SET t = upper(t), k = NULL WHERE x = 5;
UPDATE sja SET y = NULL WHERE id = 7;
DELETE FROM sja WHERE id = 1;
SELECT wait_for(:'caught_up'), views_past_wal('sja_src', 'sjtimes');
SELECT sjmismatches() AS mismatches;
BEGIN; UPDATE sjb SET k = k + 10; UPDATE sjb SET k = k - 10; COMMIT;
UPDATE sjc SET z = (z + 1) % 4;
DELETE FROM sjb WHERE x = 1;
SELECT wait_for(:'caught_up'), views_past_wal('sja_src', 'sjtimes');
SELECT sjmismatches() AS mismatches;
SELECT name, state, failure FROM peek.views WHERE state <> 'ready';
SELECT wait_for(format('SELECT bool_and(upper > %s) FROM peek.views', (SELECT max(t) FROM sjtimes)));
SELECT * FROM views_bad_times_at('sjv\_%', 'sja_src|sjb_src|sjc_src', 'sjtimes');

SELECT peek.drop_view(name) FROM sjq ORDER BY name;
SELECT peek.drop_source('sja_src'), peek.drop_source('sjb_src'), peek.drop_source('sjc_src');
DROP FUNCTION sjmismatches();
DROP TABLE sja, sjb, sjc, sjq, sjtimes;
DROP TYPE sja_o, sja_i;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
