-- The index peek scan: a call of index_peek in FROM is read by a custom
-- scan node (IndexPeekScan) that answers the peek through the function's
-- own code, without the function scan's per-execution setup.  A whole-row
-- reference, ORDINALITY, ROWS FROM, a SET clause on the function and a call
-- in the select list keep the function scan.  Rows, errors (SQLSTATEs) and
-- privileges are the same both ways: each case below runs through the node
-- and through the function scan (WITH ORDINALITY) and compares.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE ips_row AS (k int, g text, n numeric);
SELECT peek.create_collection('ips', 'ips_row');
-- every k twice (g differs), and (7, 'g0', 1) twice: a multiplicity of 2
SELECT peek.write('ips', array_agg((x % 50, 'g' || (x / 50), x % 3)::ips_row))
  FROM generate_series(0, 99) x;
SELECT peek.write('ips', ARRAY[(7, 'g0', 1)]::ips_row[]);
-- time 2: k = 3 goes, k = 60 comes
SELECT peek.write('ips', ARRAY[(60, 'g9', 0)]::ips_row[], ARRAY[(3, 'g0', 0), (3, 'g1', 2)]::ips_row[]);
-- a negative multiplicity at time 1 in a collection of its own
SELECT peek.create_collection('ips_bad', 'ips_row');
SELECT peek.write('ips_bad', ARRAY[(1, 'a', 1)]::ips_row[]);
SELECT peek.write('ips_bad', ARRAY[]::ips_row[], ARRAY[(1, 'a', 1), (1, 'a', 1)]::ips_row[]);
SELECT peek.create_index('ips_k', 'ips', ARRAY['k']);
SELECT peek.create_index('ips_kg', 'ips', ARRAY['k', 'g']);
SELECT peek.create_index('ips_bad_k', 'ips_bad', ARRAY['k']);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.indexes WHERE state = 'ready'$$);

-- where the node stands in, and where the function scan stays
EXPLAIN (COSTS OFF) SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));
EXPLAIN (COSTS OFF) SELECT g FROM peek.index_peek(NULL::ips_row, 'ips_k', keys => ARRAY[1, 2]) WHERE n > 0;
EXPLAIN (COSTS OFF) SELECT c.k, p.g FROM (VALUES (1), (2)) c(k), LATERAL peek.index_peek(NULL::ips_row, 'ips_k', ROW(c.k)) p;
EXPLAIN (COSTS OFF) SELECT p FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) p;
EXPLAIN (COSTS OFF) SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) WITH ORDINALITY;
EXPLAIN (COSTS OFF) SELECT * FROM ROWS FROM (peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)), generate_series(1, 2));
EXPLAIN (COSTS OFF) SELECT peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));

-- ips_same(node, fs): the single value two queries return (the node's
-- and the function scan's), and whether they are the same; or each way's
-- SQLSTATE and message
CREATE FUNCTION ips_same(node_sql text, fs_sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE node text; fs text;
BEGIN
    BEGIN
        EXECUTE node_sql INTO node;
    EXCEPTION WHEN OTHERS THEN
        node := SQLSTATE || ': ' || SQLERRM;
    END;
    BEGIN
        EXECUTE fs_sql INTO fs;
    EXCEPTION WHEN OTHERS THEN
        fs := SQLSTATE || ': ' || SQLERRM;
    END;
    IF node IS NOT DISTINCT FROM fs THEN
        RETURN 'same: ' || coalesce(node, 'no rows');
    END IF;
    RETURN 'node: ' || coalesce(node, 'no rows') || ' | function scan: ' || coalesce(fs, 'no rows');
END $$;
-- ips_both(args): the rows of index_peek(NULL::ips_row, args) through the
-- node and through the function scan, as sorted arrays (ips_same)
CREATE FUNCTION ips_both(args text) RETURNS text LANGUAGE sql AS $$
SELECT ips_same(format('SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
                          FROM peek.index_peek(NULL::ips_row, %s)', args),
                format('SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
                          FROM peek.index_peek(NULL::ips_row, %s) WITH ORDINALITY', args))
$$;
-- the plan ips_both's first query gets is the node's
EXPLAIN (COSTS OFF) SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
  FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));

-- rows: keys, times, limits, key conversions, NULL keys, no match
SELECT args, ips_both(args) FROM (VALUES
    ($$'ips_k', ROW(7)$$),
    ($$'ips_k', ROW(3), as_of => 1$$),
    ($$'ips_k', ROW(3), as_of => 2$$),
    ($$'ips_k', ROW(60)$$),
    ($$'ips_k', ROW(7), "limit" => 2$$),
    ($$'ips_k', ROW(7.5)$$),
    ($$'ips_k', ROW('8')$$),
    ($$'ips_k', ROW(NULL::int)$$),
    ($$'ips_k', ROW(1000)$$),
    ($$'ips_k', keys => ARRAY[1, 2, 2, NULL, 60]$$),
    ($$'ips_kg', ROW(7, 'g0')$$),
    ($$'ips_kg', keys => ARRAY[ROW(7, 'g0'), ROW(8, 'g1')]$$),
    ($$'ips_k', "limit" => 3$$)
) a(args);

-- errors: the same SQLSTATE and message both ways
SELECT args, ips_both(args) FROM (VALUES
    ($$'no_such_index', ROW(1)$$),
    ($$'ips', ROW(1)$$),
    ($$'ips_k', ROW(1, 2)$$),
    ($$'ips_k', ROW('x'::text)$$),
    ($$'ips_k', ROW('x')$$),
    ($$'ips_k', ROW(1), keys => ARRAY[1]$$),
    ($$'ips_kg', keys => ARRAY[1, 2]$$),
    ($$'ips_k', ROW(1), as_of => 9223372036854775807$$),
    ($$'ips_k', ROW(1), as_of => -5$$),
    ($$'ips_k', ROW(1), "limit" => -1$$),
    ($$NULL, ROW(1)$$)
) a(args);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_bad_k', ROW(1), as_of => 1)$$) AS node,
       try($$SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_bad_k', ROW(1), as_of => 1) WITH ORDINALITY$$) AS function_scan;
CREATE TYPE ips_other AS (k int, g text, n numeric);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ips_other, 'ips_k', ROW(1))$$) AS node,
       try($$SELECT * FROM peek.index_peek(NULL::ips_other, 'ips_k', ROW(1)) WITH ORDINALITY$$) AS function_scan;
DROP TYPE ips_other;

-- rescans: with the same arguments (a correlated subquery) the same answer
-- again; with other arguments (lateral) a new peek for each
EXPLAIN (COSTS OFF) SELECT x, (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) p WHERE p.n <> x) FROM generate_series(0, 2) x;
SELECT x, (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) p WHERE p.n <> x) AS node,
          (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) WITH ORDINALITY p WHERE p.n <> x) AS function_scan
  FROM generate_series(0, 3) x;
SELECT c.k, array_agg(p.g ORDER BY p.g) FILTER (WHERE p.k IS NOT NULL) AS node,
       (SELECT array_agg(q.g ORDER BY q.g) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(c.k)) WITH ORDINALITY q) AS function_scan
  FROM generate_series(1, 8) c(k)
  LEFT JOIN LATERAL peek.index_peek(NULL::ips_row, 'ips_k', ROW(c.k)) p ON true
 GROUP BY c.k ORDER BY c.k;
-- an argument that reads the outer query's column only inside a subplan
-- (hashed: its query is not correlated with the call's own): each rescan
-- peeks again and has the subplan hash its rows again, as a function scan
-- does; the persist peek scan too, counting or reading rows
EXPLAIN (COSTS OFF) SELECT c.k, (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k',
    ROW(CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 7 ELSE 8 END)) p)
  FROM generate_series(0, 3) c(k);
SELECT c.k,
       (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k',
           ROW(CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 7 ELSE 8 END)) p) AS node,
       (SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k',
           ROW(CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 7 ELSE 8 END))
           WITH ORDINALITY p) AS function_scan,
       (SELECT count(*) FROM peek.persist_peek(NULL::ips_row, 'ips',
           as_of => CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 0 ELSE 1 END) p) AS persist_count,
       (SELECT sum(p.k) FROM peek.persist_peek(NULL::ips_row, 'ips',
           as_of => CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 0 ELSE 1 END) p) AS persist_rows,
       (SELECT sum(p.k) FROM peek.persist_peek(NULL::ips_row, 'ips',
           as_of => CASE WHEN 1 IN (SELECT x FROM generate_series(1, 3) x WHERE x = c.k) THEN 0 ELSE 1 END)
           WITH ORDINALITY p) AS persist_function_scan
  FROM generate_series(0, 3) c(k) ORDER BY c.k;
-- the node's subplans are its own in EXPLAIN ANALYZE
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF)
SELECT c.k, p.g FROM generate_series(7, 8) c(k),
  LATERAL peek.index_peek(NULL::ips_row, 'ips_k', ROW((SELECT c.k + x FROM generate_series(0, 0) x))) p;
-- two scans in one plan, each its own peek (a backend has one at a time)
SELECT a.g, b.g FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(8)) a
  JOIN peek.index_peek(NULL::ips_row, 'ips_kg', ROW(8, 'g1')) b ON a.k = b.k ORDER BY 1, 2;
-- in a cursor, read back and forth after another peek
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT g FROM peek.index_peek(NULL::ips_row, 'ips_k', keys => ARRAY[1, 2]);
FETCH 2 FROM c;
SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));
FETCH ALL FROM c;
FETCH BACKWARD 2 FROM c;
COMMIT;
-- a cursor declared without SCROLL fetches backward over a function scan,
-- so over the node too (no Material above it); FETCH LAST, ABSOLUTE and
-- backward from the end as well
EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT g FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));
BEGIN;
DECLARE c CURSOR FOR SELECT g, n FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));
DECLARE f CURSOR FOR SELECT g, n FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7)) WITH ORDINALITY;
FETCH 2 FROM c;
FETCH 2 FROM f;
FETCH BACKWARD 1 FROM c;
FETCH BACKWARD 1 FROM f;
FETCH LAST FROM c;
FETCH LAST FROM f;
FETCH ABSOLUTE 1 FROM c;
FETCH ABSOLUTE 1 FROM f;
MOVE LAST IN c;
MOVE LAST IN f;
FETCH BACKWARD ALL FROM c;
FETCH BACKWARD ALL FROM f;
COMMIT;

-- a generic plan: each execution peeks with its parameters
SET plan_cache_mode = force_generic_plan;
PREPARE ips_point(int) AS SELECT k, g, n FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW($1)) ORDER BY g, n;
EXPLAIN (COSTS OFF) EXECUTE ips_point(7);
EXECUTE ips_point(7);
EXECUTE ips_point(3);
EXECUTE ips_point(60);
EXECUTE ips_point(NULL);
-- dropped and created again over another key column: the same name, new key
SELECT peek.drop_index('ips_k');
SELECT peek.create_index('ips_k', 'ips', ARRAY['g']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ips_k'$$);
EXECUTE ips_point(7);
SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW('g1'));
SELECT peek.drop_index('ips_k');
SELECT peek.create_index('ips_k', 'ips', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ips_k'$$);
EXECUTE ips_point(7);
-- a generic plan outlives ALTER TYPE: an attribute added since is not read;
-- one dropped fails the node (42804) as it fails the function scan (42703)
CREATE TYPE ips_tiny AS (a int, b int);
SELECT peek.create_collection('ips_tiny', 'ips_tiny');
SELECT peek.write('ips_tiny', ARRAY[ROW(1, 2)]::ips_tiny[]);
SELECT peek.create_index('ips_tiny_a', 'ips_tiny', ARRAY['a']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ips_tiny_a'$$);
PREPARE tiny_node AS SELECT * FROM peek.index_peek(NULL::ips_tiny, 'ips_tiny_a', ROW(1));
PREPARE tiny_fs AS SELECT a, b FROM peek.index_peek(NULL::ips_tiny, 'ips_tiny_a', ROW(1)) WITH ORDINALITY;
EXECUTE tiny_node;
ALTER TYPE ips_tiny ADD ATTRIBUTE c text;
EXECUTE tiny_node;
EXECUTE tiny_fs;
ALTER TYPE ips_tiny DROP ATTRIBUTE b;
SELECT try($$EXECUTE tiny_node$$);
SELECT try($$EXECUTE tiny_fs$$);
DEALLOCATE tiny_node;
DEALLOCATE tiny_fs;
DEALLOCATE ips_point;

-- a key's fields from parameters (a generic plan): the node evaluates them
-- one by one rather than as a record; rows, conversions, NULLs and errors
-- are still the function scan's
-- ips_both_prepared(stmt, args): EXECUTE stmt_node(args) and stmt_fs(args) (ips_same)
CREATE FUNCTION ips_both_prepared(stmt text, args text) RETURNS text LANGUAGE sql AS $$
SELECT ips_same(format('EXECUTE %s_node(%s)', stmt, args), format('EXECUTE %s_fs(%s)', stmt, args))
$$;
PREPARE ipf_kg_node(numeric, text) AS SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
  FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW($1, $2));
PREPARE ipf_kg_fs(numeric, text) AS SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
  FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW($1, $2)) WITH ORDINALITY;
EXPLAIN (COSTS OFF) EXECUTE ipf_kg_node(7, 'g0');
PREPARE ipf_two_node(int, int) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW($1, $2));
PREPARE ipf_two_fs(int, int) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW($1, $2)) WITH ORDINALITY;
PREPARE ipf_text_node(text) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW($1));
PREPARE ipf_text_fs(text) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW($1)) WITH ORDINALITY;
PREPARE ipf_nested_node(int) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(ROW($1)));
PREPARE ipf_nested_fs(int) AS SELECT count(*) FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(ROW($1))) WITH ORDINALITY;
PREPARE ipf_mixed_node(int) AS SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
  FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW($1, 'g' || 0));
PREPARE ipf_mixed_fs(int) AS SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text
  FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW($1, 'g' || 0)) WITH ORDINALITY;
SELECT stmt, args, ips_both_prepared(stmt, args) FROM (VALUES
    ('ipf_kg', $$7, 'g0'$$),
    ('ipf_kg', $$7.5, 'g0'$$),
    ('ipf_kg', $$7.4, 'g0'$$),
    ('ipf_kg', $$NULL, 'g0'$$),
    ('ipf_kg', $$7, NULL$$),
    ('ipf_kg', $$1e20, 'g0'$$),
    ('ipf_kg', $$1e20, NULL$$),
    ('ipf_two', $$1, 2$$),
    ('ipf_text', $$'7'$$),
    ('ipf_nested', $$7$$),
    ('ipf_mixed', $$7$$),
    ('ipf_mixed', $$NULL$$)
) a(stmt, args);
-- a field from a PL/pgSQL variable, whose parameter list compiles its own
-- steps: the keys of a loop, each answered as the function scan answers it
CREATE FUNCTION ipf_plpgsql_same() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  node text;
  fs text;
  answers text := '';
BEGIN
  FOR key IN 1..8 LOOP
    SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text INTO node
      FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW(key, 'g0'));
    SELECT array_agg((k, g, n)::ips_row ORDER BY (k, g, n)::ips_row)::text INTO fs
      FROM peek.index_peek(NULL::ips_row, 'ips_kg', ROW(key, 'g0')) WITH ORDINALITY;
    answers := answers || CASE WHEN node IS NOT DISTINCT FROM fs THEN coalesce(node, 'none') ELSE 'DIFFERENT' END || ' ';
  END LOOP;
  RETURN answers;
END $$;
SELECT ipf_plpgsql_same();
DROP FUNCTION ipf_plpgsql_same();
DEALLOCATE ipf_kg_node;
DEALLOCATE ipf_kg_fs;
DEALLOCATE ipf_two_node;
DEALLOCATE ipf_two_fs;
DEALLOCATE ipf_text_node;
DEALLOCATE ipf_text_fs;
DEALLOCATE ipf_nested_node;
DEALLOCATE ipf_nested_fs;
DEALLOCATE ipf_mixed_node;
DEALLOCATE ipf_mixed_fs;
RESET plan_cache_mode;

-- privileges: EXECUTE on the function, checked as a function scan checks
-- it, and the peek's own (owner or pg_read_all_data)
CREATE ROLE ips_reader;
GRANT USAGE ON SCHEMA peek TO ips_reader;
SET ROLE ips_reader;
SELECT ips_both($$'ips_k', ROW(7)$$);
RESET ROLE;
GRANT pg_read_all_data TO ips_reader;
SET ROLE ips_reader;
SELECT ips_both($$'ips_k', ROW(7)$$);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) FROM PUBLIC;
SET ROLE ips_reader;
SELECT ips_both($$'ips_k', ROW(7)$$);
SELECT try($$EXPLAIN SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7))$$);
-- a generic plan made while EXECUTE was granted is checked again
RESET ROLE;
GRANT EXECUTE ON FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) TO ips_reader;
SET ROLE ips_reader;
SET plan_cache_mode = force_generic_plan;
PREPARE ips_granted AS SELECT g FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(8)) ORDER BY g;
EXECUTE ips_granted;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) FROM ips_reader;
SET ROLE ips_reader;
SELECT try($$EXECUTE ips_granted$$);
RESET ROLE;
DEALLOCATE ips_granted;
RESET plan_cache_mode;
GRANT EXECUTE ON FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) TO PUBLIC;
-- a SET clause on the function keeps the function scan, which applies it
ALTER FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) SET work_mem = '64kB';
EXPLAIN (COSTS OFF) SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));
ALTER FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint, anycompatiblearray) RESET ALL;
EXPLAIN (COSTS OFF) SELECT * FROM peek.index_peek(NULL::ips_row, 'ips_k', ROW(7));

DROP EXTENSION pg_peek CASCADE;
DROP FUNCTION ips_both(text);
DROP TYPE ips_row;
DROP TYPE ips_tiny;
DROP OWNED BY ips_reader;
DROP ROLE ips_reader;
