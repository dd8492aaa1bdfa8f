-- A full persist peek reads its base a heap page at a time: each page's
-- rows are counted (count(*)) or streamed (a column read) at once, and only
-- a page that holds a row updated since the base looks its rows up among
-- the updates.  Over a base of many pages, with rows of many copies and
-- rows updated since the base on pages far apart, the count and the rows
-- must be the updates' sum at every time from the since on: after the base
-- (the updates added), before it (the history taken out), and below the
-- since 72000.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE ppkv AS (k int, v text);
SELECT peek.create_collection('pp', 'ppkv');
SELECT peek.set_retention('pp', NULL);
-- the same updates, kept in a plain table
CREATE TABLE pp_log (t bigint, k int, v text, diff bigint);

-- time 0: 30,000 rows over some 300 pages; k % 101 = 0 three copies,
-- k % 1009 = 0 forty
INSERT INTO pp_log SELECT 0, g, 'v' || g,
    CASE WHEN g % 1009 = 0 THEN 40 WHEN g % 101 = 0 THEN 3 ELSE 1 END
  FROM generate_series(1, 30000) g;
-- times 1..6, each touching base rows all over the heap: one copy of
-- k % 1000 = 7t taken out (of three where k % 101 = 0 too), two copies more
-- of k % 997 = t, k % 2000 = t changed to another value, five new rows; at
-- time 2 every copy of k % 1009 = 0 taken out, at time 4 ten put back
INSERT INTO pp_log SELECT t, g, 'v' || g, -1
  FROM generate_series(1, 6) t, generate_series(1, 30000) g WHERE g % 1000 = 7 * t;
INSERT INTO pp_log SELECT t, g, 'v' || g, 2
  FROM generate_series(1, 6) t, generate_series(1, 30000) g WHERE g % 997 = t;
INSERT INTO pp_log SELECT t, g, 'v' || g, -1
  FROM generate_series(1, 6) t, generate_series(1, 30000) g WHERE g % 2000 = t;
INSERT INTO pp_log SELECT t, g, 'w' || g || '.' || t, 1
  FROM generate_series(1, 6) t, generate_series(1, 30000) g WHERE g % 2000 = t;
INSERT INTO pp_log SELECT t, 100000 + 10 * t + j, 'new', 1
  FROM generate_series(1, 6) t, generate_series(1, 5) j;
INSERT INTO pp_log SELECT 2, g, 'v' || g, -40 FROM generate_series(1009, 30000, 1009) g;
INSERT INTO pp_log SELECT 4, g, 'v' || g, 10 FROM generate_series(1009, 30000, 1009) g;

-- pp_wrong(lo, hi): the times whose count(*) (the scan counting), count(k)
-- (the rows streamed) or rows with their copies are not the log's
CREATE FUNCTION pp_wrong(lo bigint, hi bigint) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    wrong bigint[] := '{}';
    want bigint;
BEGIN
    FOR at IN lo .. hi LOOP
        SELECT sum(diff) INTO want FROM pp_log WHERE t <= at;
        IF (SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => at)) <> want
           OR (SELECT count(k) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => at)) <> want
           OR EXISTS (
             (SELECT k, v, count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => at) GROUP BY k, v
              EXCEPT SELECT * FROM log_contents('pp_log', at))
             UNION ALL
             (SELECT * FROM log_contents('pp_log', at)
              EXCEPT
              SELECT k, v, count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => at) GROUP BY k, v))
        THEN
            wrong := wrong || at::bigint;
        END IF;
    END LOOP;
    RETURN wrong;
END $$;

SELECT log_write('pp', 'ppkv', 'pp_log', 0, 0);
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'pp'$$);
SELECT pg_relation_size(shard) / 8192 > 200 AS many_pages FROM peek.collections WHERE name = 'pp';
SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp');
SELECT pp_wrong(0, 0);

-- updates after the base: its rows they touch adjusted, page by page
SELECT log_write('pp', 'ppkv', 'pp_log', 1, 6);
SELECT pp_wrong(0, 6);
SELECT t, (SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => t)) AS n
  FROM generate_series(0, 6) t;
-- the base moved to 6: the times before it take the history out
SELECT wait_for($$SELECT base_time = 6 FROM peek.objects WHERE name = 'pp'$$);
SELECT pp_wrong(0, 6);
-- compaction to 3: below it, 72000
SELECT peek.allow_compaction('pp', 3);
SELECT wait_for($$SELECT since = 3 FROM peek.objects WHERE name = 'pp'$$);
SELECT pp_wrong(3, 6);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => 2)$$);
SELECT try($$SELECT count(k) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => 2)$$);

-- a negative multiplicity fails the count as it fails the rows, on a
-- page past the first
SELECT peek.append('pp', ARRAY[(29999, 'v29999')::ppkv], 7, -2);
SELECT peek.advance('pp', 8);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => 7)$$);
SELECT try($$SELECT count(k) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => 7)$$);
SELECT count(*) FROM peek.persist_peek(NULL::ppkv, 'pp', as_of => 6);
