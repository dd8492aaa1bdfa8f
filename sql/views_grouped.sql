-- Maintained views that group: GROUP BY with each supported aggregate and
-- HAVING, aggregates over the whole input, DISTINCT; each checked against
-- PostgreSQL's evaluation of its query over the input at every time
-- (EXCEPT ALL both ways), min and max exact when their row is retracted,
-- groups that empty and come back, an index peek of one group, what is
-- refused (0A000), and an error in an aggregate failing its view alone.
-- The randomized oracle is TAP 370_view_oracle.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE gline AS (cust int, item text, qty int, price numeric);
SELECT peek.create_collection('glines', 'gline');
SELECT peek.write('glines', ARRAY[(1, 'a', 2, 1.5), (1, 'b', 1, 4), (2, 'a', 5, 2),
                                  (2, 'a', 5, 2), (3, 'c', 0, NULL)]::gline[]);

SELECT peek.create_view('gtotals', $$
    SELECT cust, count(*) AS lines, count(price) AS priced, sum(qty) AS qty,
           sum(qty * price) AS amount, avg(price) AS avg_price,
           min(item) AS first_item, max(price) AS top_price,
           bool_and(qty > 0) AS all_positive, bool_or(price > 3) AS any_dear,
           every(item <> 'z') AS no_z, count(DISTINCT item) AS items
      FROM peek.persist_peek(NULL::gline, 'glines') GROUP BY cust$$);
SELECT peek.create_view('gbig', $$
    SELECT item, sum(qty) AS qty FROM peek.persist_peek(NULL::gline, 'glines')
     WHERE qty > 0 GROUP BY item HAVING count(*) > 1$$);
SELECT peek.create_view('gall', $$
    SELECT count(*) AS n, sum(qty) AS qty, max(price) AS top
      FROM peek.persist_peek(NULL::gline, 'glines')$$);
SELECT peek.create_view('gitems', $$
    SELECT DISTINCT item, qty > 1 AS many FROM peek.persist_peek(NULL::gline, 'glines')$$);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT name, inputs, state, since, upper, rows FROM peek.views ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::gtotals, 'gtotals', as_of => 0) ORDER BY cust;
SELECT * FROM peek.persist_peek(NULL::gbig, 'gbig', as_of => 0) ORDER BY item;
SELECT * FROM peek.persist_peek(NULL::gall, 'gall', as_of => 0);
SELECT * FROM peek.persist_peek(NULL::gitems, 'gitems', as_of => 0) ORDER BY item, many;

-- the top price retracted, a group emptied, then back; a new group
SELECT peek.write('glines', ARRAY[(4, 'd', 1, 9)]::gline[], ARRAY[(1, 'b', 1, 4)]::gline[]);
SELECT peek.write('glines', '{}'::gline[], ARRAY[(3, 'c', 0, NULL)]::gline[]);
SELECT peek.write('glines', '{}'::gline[], ARRAY[(2, 'a', 5, 2)]::gline[]);
SELECT peek.write('glines', ARRAY[(3, 'c', 2, 1)]::gline[], ARRAY[(4, 'd', 1, 9)]::gline[]);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready' AND upper = 5$$);
SELECT * FROM peek.persist_peek(NULL::gtotals, 'gtotals', as_of => 4) ORDER BY cust;
SELECT * FROM peek.persist_peek(NULL::gtotals, 'gtotals', as_of => 1) ORDER BY cust;
SELECT * FROM peek.persist_peek(NULL::gbig, 'gbig', as_of => 4) ORDER BY item;
SELECT * FROM peek.persist_peek(NULL::gall, 'gall', as_of => 4);
SELECT * FROM peek.persist_peek(NULL::gall, 'gall', as_of => 2);

-- every view at every time equals its query over the input at that time
CREATE FUNCTION gmismatches(view text, query text, first int DEFAULT 0) RETURNS text
LANGUAGE sql AS $f$
    SELECT view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', view, view),
                           replace(query, '@AS@', ', as_of => @T@'), first,
                           (SELECT upper - 1 FROM peek.views WHERE name = view))$f$;
SELECT name, gmismatches(name, replace(query, '''glines''::text', '''glines''::text@AS@')) AS bad_times
  FROM peek.views ORDER BY name;

-- an index on a grouped view: one group's aggregates by key
SELECT peek.create_index('gtotals_cust', 'gtotals', ARRAY['cust']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'gtotals_cust'$$);
SELECT cust, lines, qty, amount FROM peek.index_peek(NULL::gtotals, 'gtotals_cust', key => ROW(2));
SELECT cust, lines FROM peek.index_peek(NULL::gtotals, 'gtotals_cust', key => ROW(2), as_of => 0);

-- what grouped views do not support: 0A000, naming it
SELECT try($$SELECT peek.create_view('x', 'SELECT item, string_agg(item, '','') FROM peek.persist_peek(NULL::gline, ''glines'') GROUP BY item')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT item, count(*) FROM peek.persist_peek(NULL::gline, ''glines'') GROUP BY ROLLUP (item)')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT item, count(*) FROM peek.persist_peek(NULL::gline, ''glines'') GROUP BY GROUPING SETS ((item), ())')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT DISTINCT count(*) FROM peek.persist_peek(NULL::gline, ''glines'') GROUP BY item')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY qty) FROM peek.persist_peek(NULL::gline, ''glines'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT item, count(*) FILTER (WHERE random() > 0.5) FROM peek.persist_peek(NULL::gline, ''glines'') GROUP BY item')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT item::varbit, count(*) FROM peek.persist_peek(NULL::gline, ''glines'') WHERE false GROUP BY 1')$$);
CREATE FUNCTION gadd(int, int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + $2';
CREATE AGGREGATE gsum(int) (sfunc = gadd, stype = int);
SELECT try($$SELECT peek.create_view('x', 'SELECT gsum(qty) FROM peek.persist_peek(NULL::gline, ''glines'')')$$);
SELECT count(*) FROM peek.views WHERE name = 'x';

-- an error in a group's aggregate fails that view alone (55000)
SELECT peek.create_view('gratio', $$
    SELECT cust, sum(qty) / min(qty) AS ratio FROM peek.persist_peek(NULL::gline, 'glines')
     WHERE cust <> 3 GROUP BY cust$$);
SELECT wait_for($$SELECT upper = 5 FROM peek.views WHERE name = 'gratio'$$);
SELECT * FROM gratio ORDER BY cust;
SELECT peek.write('glines', ARRAY[(5, 'e', 0, 1)]::gline[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'gratio'$$);
SELECT name, state, failure FROM peek.views WHERE state <> 'ready' ORDER BY name;
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT * FROM gtotals WHERE cust = 5;
SELECT peek.drop_view('gratio');

-- a grouped view over a source, whose times are WAL positions far apart
-- (10 MB of other WAL between two commits): it catches up
CREATE TABLE gorders (id int PRIMARY KEY, cust int);
INSERT INTO gorders SELECT g, g % 3 FROM generate_series(1, 30) g;
SELECT peek.create_source('gorders_src', 'gorders');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'gorders_src'$$);
SELECT row_type AS src_type FROM peek.collections WHERE name = 'gorders_src' \gset
SELECT peek.create_view('gorder_counts',
    format('SELECT cust, count(*) AS n FROM peek.persist_peek(NULL::%s, %L) GROUP BY cust',
           :'src_type', 'gorders_src'));
CREATE TABLE gfiller (pad text);
INSERT INTO gfiller SELECT repeat('x', 1000) FROM generate_series(1, 10000);
DELETE FROM gorders WHERE id <= 10;
INSERT INTO gorders VALUES (100, 7);
SELECT wait_for($$SELECT array_agg((cust, n)::text ORDER BY cust) =
                         (SELECT array_agg((cust, count)::text ORDER BY cust)
                            FROM (SELECT cust, count(*) FROM gorders GROUP BY cust) s)
                    FROM gorder_counts$$, 10);
SELECT * FROM gorder_counts ORDER BY cust;
SELECT peek.drop_view('gorder_counts');
SELECT peek.drop_source('gorders_src');
DROP TABLE gorders, gfiller;
-- keys equal but not binary-equal (numeric 1.00, 1.0, 1): what a group
-- gives depends on its rows only, not on the order they came in, so the
-- groups built again after a runtime restart retract exactly what the
-- view holds; and a step merges a large group's many updates at once
CREATE TYPE gnum AS (k numeric, v int);
SELECT peek.create_collection('gnums', 'gnum');
SELECT peek.write('gnums', ARRAY[(1.00, 1), (3.00, 1)]::gnum[]);
SELECT peek.write('gnums', ARRAY[(1.0, 2), (3, 2)]::gnum[]);
SELECT peek.write('gnums', ARRAY[(1, 4), (3.0, 4)]::gnum[]);
SELECT peek.create_view('gnumk', $$
    SELECT k, sum(v) AS s, max(k) AS top FROM peek.persist_peek(NULL::gnum, 'gnums') GROUP BY k$$);
SELECT peek.create_view('gnumd', $$SELECT DISTINCT k FROM peek.persist_peek(NULL::gnum, 'gnums')$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'gnum_' AND upper = 3$$);
SELECT peek.write('gnums', '{}'::gnum[], ARRAY[(1.00, 1), (3.00, 1)]::gnum[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'gnum_' AND upper = 4$$);
SELECT k::text, s, top::text FROM gnumk ORDER BY k;
SELECT peek.allow_compaction('gnums', 3);
SELECT wait_for($$SELECT since = 3 FROM peek.objects WHERE name = 'gnums'$$);
SELECT restart_maintenance();
SELECT peek.write('gnums', ARRAY[(1.000, 8)]::gnum[], ARRAY[(1.0, 2)]::gnum[]);
SELECT peek.write('gnums', array_agg((2, i)::gnum), '{}'::gnum[]) FROM generate_series(1, 30000) i;
SELECT peek.write('gnums', array_agg((2, i)::gnum), array_agg((2, i + 1)::gnum))
  FROM generate_series(1, 30000, 2) i;
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'gnum_' AND upper = 7$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'gnum_' ORDER BY name;
SELECT count(*), sum(s) FROM gnumk;
SELECT k::text, s, top::text FROM gnumk WHERE k < 2 OR k > 2 ORDER BY k;
SELECT count(*) FROM gnumd;
SELECT name, gmismatches(name, replace(query, '''gnums''::text', '''gnums''::text@AS@'), 3) AS bad_times
  FROM peek.views WHERE name LIKE 'gnum_' ORDER BY name;
SELECT peek.drop_view('gnumk');
SELECT peek.drop_view('gnumd');

-- the input's row type changed under a view: an attribute added is
-- harmless; one the view reads cannot be dropped (its PostgreSQL view
-- depends on it); one renamed would leave the kept text's name for it
-- naming another or none, so the rename is refused (2BP01, as in
-- views_functions) and the view goes on; aliases that rename the input's
-- columns are refused
CREATE TYPE galt AS (g int, v int);
SELECT peek.create_collection('galts', 'galt');
SELECT peek.write('galts', ARRAY[(1, 10), (1, 5)]::galt[]);
SELECT peek.create_view('galtv', $$SELECT g, sum(v) AS s FROM peek.persist_peek(NULL::galt, 'galts') GROUP BY g$$);
SELECT wait_for($$SELECT upper = 1 FROM peek.views WHERE name = 'galtv'$$);
ALTER TYPE galt ADD ATTRIBUTE w int;
SELECT peek.write('galts', ARRAY[(1, 1, 100)]::galt[]);
SELECT wait_for($$SELECT upper = 2 FROM peek.views WHERE name = 'galtv'$$);
SELECT * FROM galtv;
SELECT try($$ALTER TYPE galt DROP ATTRIBUTE v$$);
SELECT try($$ALTER TYPE galt RENAME ATTRIBUTE v TO vv$$);
SELECT peek.write('galts', ARRAY[(1, 1000, 1)]::galt[]);
SELECT wait_for($$SELECT upper = 3 FROM peek.views WHERE name = 'galtv'$$);
SELECT state, upper, failure FROM peek.views WHERE name = 'galtv';
SELECT * FROM galtv;
SELECT peek.drop_view('galtv');
SELECT try($$SELECT peek.create_view('x', 'SELECT a, count(*) FROM peek.persist_peek(NULL::galt, ''galts'') AS p(a, b) GROUP BY a')$$);
SELECT peek.create_view('galtok', $$SELECT g, count(*) AS n FROM peek.persist_peek(NULL::galt, 'galts') AS p(g) GROUP BY g$$);
SELECT peek.drop_view('galtok');

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP AGGREGATE gsum(int);
DROP FUNCTION gadd(int, int);
DROP FUNCTION gmismatches(text, text, int);
DROP TYPE gline;
DROP TYPE gnum;
DROP TYPE galt;
