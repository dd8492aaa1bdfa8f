-- A view whose inputs' times do not overlap: one written up to time 2, the
-- other compacted to time 50.  Its since is 50 and its upper stays at 2
-- until the first input reaches 50: no time is readable yet, so it shows
-- `waiting` (not `ready`) and a read of it waits; once the input passes 50
-- it is `ready` and equals its query at every time from its since.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
CREATE TYPE wka AS (k int, a int);
CREATE TYPE wkb AS (k int, b int);
SELECT peek.create_collection('wa', 'wka');
SELECT peek.create_collection('wb', 'wkb');
SELECT peek.write('wa', ARRAY[(1, 10)]::wka[]);
SELECT peek.write('wa', ARRAY[(2, 20)]::wka[]);
SELECT peek.append('wb', ARRAY[(1, 100)]::wkb[], 50);
SELECT peek.advance('wb', 51);
SELECT peek.allow_compaction('wb', 50);
-- (the catalog's since, which a view's first round reads: peek.collections
-- may show the published one first)
SELECT wait_for($$SELECT since = 50 FROM peek.objects WHERE name = 'wb'$$);
SELECT peek.create_view('wj', $$
    SELECT x.k, x.a, y.b FROM peek.persist_peek(NULL::wka, 'wa') x
      JOIN peek.persist_peek(NULL::wkb, 'wb') y ON x.k = y.k$$);
SELECT wait_for($$SELECT state <> 'hydrating' AND state <> 'pending' FROM peek.views WHERE name = 'wj'$$);
SELECT state, upper, since FROM peek.views WHERE name = 'wj';
-- a read waits for a readable time
SET statement_timeout = '300ms';
SELECT * FROM wj;
RESET statement_timeout;
-- the first input passes the since
SELECT peek.append('wa', ARRAY[(1, 11)]::wka[], 55);
SELECT peek.append('wb', ARRAY[(2, 200)]::wkb[], 57);
SELECT peek.advance('wa', 60);
SELECT peek.advance('wb', 60);
SELECT wait_for($$SELECT state = 'ready' AND upper = 60 FROM peek.views WHERE name = 'wj'$$);
SELECT state, upper, since FROM peek.views WHERE name = 'wj';
SELECT t, (SELECT count(*) FROM peek.persist_peek(NULL::wj, 'wj', as_of => t)) AS rows,
       (SELECT count(*) FROM (
          (SELECT * FROM peek.persist_peek(NULL::wj, 'wj', as_of => t)
           EXCEPT ALL
           SELECT x.k, x.a, y.b FROM peek.persist_peek(NULL::wka, 'wa', as_of => t) x
             JOIN peek.persist_peek(NULL::wkb, 'wb', as_of => t) y ON x.k = y.k)
          UNION ALL
          (SELECT x.k, x.a, y.b FROM peek.persist_peek(NULL::wka, 'wa', as_of => t) x
             JOIN peek.persist_peek(NULL::wkb, 'wb', as_of => t) y ON x.k = y.k
           EXCEPT ALL
           SELECT * FROM peek.persist_peek(NULL::wj, 'wj', as_of => t))) d) AS differences
  FROM generate_series(50, 59) t;
SELECT * FROM wj ORDER BY k, a;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TYPE wka;
DROP TYPE wkb;
