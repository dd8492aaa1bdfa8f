-- Maintained views attacked as a hostile user would: a captured table's
-- columns renamed since its source was made (read by position, as capture
-- and a peek read them, not by name), ALTER COLUMN TYPE of a column a view
-- reads (0A000, as under a PostgreSQL view), and expressions the executor
-- takes only once planned (a function's default and named arguments, a
-- COLLATE clause in a group key), each view against its query.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- two columns' names swapped after the source was made (and a column
-- dropped before it): FROM the table reads the table's column a, which the
-- source holds under the name b
CREATE TABLE aswap (id int PRIMARY KEY, gone int, a int, b int);
ALTER TABLE aswap DROP COLUMN gone;
INSERT INTO aswap VALUES (1, 10, 20);
SET client_min_messages = warning;
SELECT peek.create_source('aswap_src', 'aswap');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'aswap_src'$$);
ALTER TABLE aswap RENAME a TO tmp;
ALTER TABLE aswap RENAME b TO a;
ALTER TABLE aswap RENAME tmp TO b;
INSERT INTO aswap VALUES (2, 30, 40), (3, 50, 40);
SELECT peek.create_view('aswap_a', 'SELECT id, a FROM aswap WHERE b > 5');
SELECT peek.create_view('aswap_g', 'SELECT a, count(*) AS n, sum(b) AS b FROM aswap GROUP BY a');
SELECT wait_for($$SELECT (SELECT array_agg((id, a) ORDER BY id) FROM aswap_a) =
                         (SELECT array_agg((id, a) ORDER BY id) FROM aswap WHERE b > 5)
                     AND (SELECT array_agg((a, n, b) ORDER BY a) FROM aswap_g) =
                         (SELECT array_agg((a, n, b) ORDER BY a)
                            FROM (SELECT a, count(*) AS n, sum(b) AS b FROM aswap GROUP BY a) s)$$);
SELECT * FROM aswap_a ORDER BY id;
SELECT * FROM aswap_g ORDER BY a;
-- the kept query reads the source's columns by their names
SELECT name, regexp_replace(query, 'source_[0-9]+', 'source_N', 'g') AS query
  FROM peek.views ORDER BY name;

-- ALTER COLUMN TYPE of a column a view reads is refused as under a
-- PostgreSQL view (not an internal error); DROP COLUMN is 2BP01
SELECT try('ALTER TABLE aswap ALTER COLUMN a TYPE bigint');
SELECT try('ALTER TABLE aswap ALTER COLUMN b TYPE bigint');
SELECT try('ALTER TABLE aswap DROP COLUMN a');
SELECT peek.drop_view('aswap_a');
SELECT peek.drop_view('aswap_g');
SELECT peek.drop_source('aswap_src');
DROP TABLE aswap;

-- a partitioned table, with ONLY or not, is refused as such (no source
-- captures one: its rows are its partitions')
CREATE TABLE apart (id int) PARTITION BY RANGE (id);
CREATE TABLE apart_1 PARTITION OF apart FOR VALUES FROM (0) TO (10);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM apart')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM ONLY apart')$$);
DROP TABLE apart;

-- a function's default and named arguments, and a COLLATE clause in a
-- group key and in WHERE, evaluated as PostgreSQL evaluates the query
CREATE FUNCTION aplus(a int, b int DEFAULT 10) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS 'BEGIN RETURN a + b; END';
CREATE FUNCTION aplus_sql(a int, b int DEFAULT 100) RETURNS int LANGUAGE sql IMMUTABLE
    AS 'SELECT a + b';
CREATE TYPE aitem AS (x int, k text);
SELECT peek.create_collection('aitems', 'aitem');
SELECT peek.create_view('adefault', $$SELECT x, aplus(x) AS y, aplus_sql(x) AS z
    FROM peek.persist_peek(NULL::aitem, 'aitems') WHERE aplus(x) > 12$$);
SELECT peek.create_view('anamed', $$SELECT x, aplus(b => 1, a => x) AS y
    FROM peek.persist_peek(NULL::aitem, 'aitems')$$);
SELECT peek.create_view('acollate', $$SELECT k COLLATE "C" AS k, count(*) AS n
    FROM peek.persist_peek(NULL::aitem, 'aitems') WHERE k COLLATE "C" > 'B' GROUP BY k COLLATE "C"$$);
SELECT peek.write('aitems', ARRAY[(1, 'a'), (5, 'b'), (7, 'B'), (9, 'b')]::aitem[]);
SELECT peek.write('aitems', ARRAY[(3, 'c')]::aitem[], ARRAY[(9, 'b')]::aitem[]);
-- (read at the time: a view's upper in the catalog may be ahead of what
-- the runtime has published yet)
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE upper = 2$$);
SELECT name, state, failure FROM peek.views ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::adefault, 'adefault', as_of => 1) ORDER BY x;
SELECT * FROM peek.persist_peek(NULL::anamed, 'anamed', as_of => 1) ORDER BY x;
SELECT * FROM peek.persist_peek(NULL::acollate, 'acollate', as_of => 1) ORDER BY k;
-- at every time, each view equals its query over the input at that time
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             replace(query, '''aitems''::text', '''aitems''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;
SELECT peek.drop_view('adefault');
SELECT peek.drop_view('anamed');
SELECT peek.drop_view('acollate');
SELECT peek.drop_collection('aitems');
DROP FUNCTION aplus(int, int);
DROP FUNCTION aplus_sql(int, int);
DROP TYPE aitem;

-- a view whose query is slow (an "immutable" function that sleeps) holds
-- the maintenance runtime back while its round runs: past
-- pg_peek.view_round_timeout the round is cancelled, and other
-- collections' writes are read again promptly; running out of time is no
-- fault of the query, so the view is not failed but retried later with a
-- doubled limit (its three rows take 0.6 s: the second round has 1 s),
-- and catches up
ALTER SYSTEM SET pg_peek.view_round_timeout = '500ms';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
CREATE FUNCTION aslow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM pg_sleep(0.2); RETURN x; END$$;
CREATE TYPE aone AS (x int);
SELECT peek.create_collection('aslows', 'aone');
SELECT peek.create_collection('aother', 'aone');
SELECT peek.write('aslows', array_agg(ROW(i)::aone)) FROM generate_series(1, 20) i;
SELECT peek.create_view('aslowv', $$SELECT aslow(x) AS x FROM peek.persist_peek(NULL::aone, 'aslows') WHERE x <= 3$$);
SELECT peek.write('aother', ARRAY[ROW(1)]::aone[]) AS t \gset
SELECT count(*) FROM peek.persist_peek(NULL::aone, 'aother', as_of => :t);
SELECT wait_for($$SELECT upper > 0 OR state = 'failed' FROM peek.views WHERE name = 'aslowv'$$);
SELECT state, failure FROM peek.views WHERE name = 'aslowv';
SELECT * FROM peek.persist_peek(NULL::aslowv, 'aslowv') ORDER BY x;
SELECT peek.drop_view('aslowv');
-- while its rounds keep running out of time the view shows 'retrying', with
-- how many ran out in a row and the next one's limit; once one completes
-- it is ready (five slow rows: 1 s; the rounds get 0.5 s, 1 s, 2 s)
SELECT peek.create_view('aslow5', $$SELECT aslow(x) AS x FROM peek.persist_peek(NULL::aone, 'aslows') WHERE x <= 5$$);
SELECT wait_for($$SELECT state = 'retrying' FROM peek.views WHERE name = 'aslow5'$$);
-- (its hydration's progress shows only with the state 'hydrating')
SELECT v.state, t.timeouts >= 1 AS timed_out, t.limit_ms >= 1000 AS limit_doubled,
       v.hydration_rows_read, v.hydration_rows_total
  FROM peek.views v JOIN peek.objects o ON o.name = v.name
  JOIN peek.view_round_status() t ON t.id = o.id WHERE v.name = 'aslow5';
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'aslow5'$$, 60);
SELECT count(*) AS still_retrying FROM peek.view_round_status() t
  JOIN peek.objects o ON o.id = t.id WHERE o.name = 'aslow5';
SELECT state, failure, upper > 0 AS has_upper FROM peek.views WHERE name = 'aslow5';
SELECT * FROM peek.persist_peek(NULL::aslow5, 'aslow5') ORDER BY x;
SELECT peek.drop_view('aslow5');
-- one whose function catches the round's cancel and goes on: the round is
-- ended (the runtime exits and starts again) and the view fails alone
CREATE FUNCTION astubborn(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    LOOP
        BEGIN
            PERFORM pg_sleep(0.05);
        EXCEPTION WHEN query_canceled THEN
            NULL;
        END;
    END LOOP;
END$$;
SELECT peek.create_view('astubv', $$SELECT astubborn(x) AS x FROM peek.persist_peek(NULL::aone, 'aslows')$$);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'astubv'$$, 60);
SELECT state, failure FROM peek.views WHERE name = 'astubv';
SET statement_timeout = '30s';
SELECT peek.write('aother', ARRAY[ROW(2)]::aone[]) AS t \gset
SELECT count(*) FROM peek.persist_peek(NULL::aone, 'aother', as_of => :t);
RESET statement_timeout;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::astubv, 'astubv')$$);
SELECT peek.drop_view('astubv');
DROP FUNCTION astubborn(int);
SELECT peek.drop_collection('aslows'), peek.drop_collection('aother');
DROP FUNCTION aslow(int);
DROP TYPE aone;
ALTER SYSTEM RESET pg_peek.view_round_timeout;
SELECT pg_reload_conf();

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
