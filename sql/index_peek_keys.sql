-- Many keys in one index peek: index_peek(..., keys => ARRAY[...]) gates
-- once and walks the batches once for all the keys, and answers as
-- WHERE k = ANY(keys) answers on a plain table of the same rows: each
-- matching row once however often its key is given, NULL keys matching
-- nothing.  Also: a session's cached lookups stay right across a drop and
-- re-creation of the index or collection under the same name.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE ik_row AS (k int, g text, n numeric);
CREATE TABLE ik_plain (k int, g text, n numeric);
-- every k twice, a NULL key, and one row twice (a multiplicity of 2)
INSERT INTO ik_plain SELECT x % 500, 'g' || (x % 7), (x % 13) / 2.0 FROM generate_series(1, 1000) x;
INSERT INTO ik_plain VALUES (NULL, 'null', NULL);
INSERT INTO ik_plain SELECT * FROM ik_plain WHERE k = 13 AND g = 'g6';
SELECT peek.create_collection('ik', 'ik_row');
SELECT peek.write('ik', array_agg((k, g, n)::ik_row)) FROM ik_plain;
CREATE TABLE ik_plain0 AS SELECT * FROM ik_plain;
-- a later time: some rows go, others come
SELECT peek.write('ik', ARRAY(SELECT (k, g, n)::ik_row FROM ik_plain WHERE k >= 490),
                  ARRAY(SELECT (k, g, n)::ik_row FROM ik_plain WHERE k < 10));
DELETE FROM ik_plain WHERE k < 10;
INSERT INTO ik_plain SELECT * FROM ik_plain0 WHERE k >= 490;
SELECT peek.create_index('ik_k', 'ik', ARRAY['k']);
SELECT peek.create_index('ik_kg', 'ik', ARRAY['k', 'g']);
SELECT peek.create_index('ik_n', 'ik', ARRAY['n']);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.indexes WHERE state = 'ready' AND upper = 2$$);

-- ik_same(keys, as_of, plain): the rows of a keys peek of ik_k against the
-- plain table's WHERE k = ANY(keys), as multisets
CREATE FUNCTION ik_same(keys int[], as_of bigint DEFAULT NULL, plain text DEFAULT 'ik_plain')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; d bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I WHERE k = ANY($1)', plain) INTO n USING keys;
    EXECUTE format($q$SELECT count(*) FROM (
        (SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => $1, as_of => $2)
         EXCEPT ALL SELECT * FROM %1$I WHERE k = ANY($1))
        UNION ALL
        (SELECT * FROM %1$I WHERE k = ANY($1)
         EXCEPT ALL SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => $1, as_of => $2))) d$q$,
        plain) INTO d USING keys, as_of;
    RETURN n || ' rows, ' || d || ' differ';
END $$;

-- the rows of each key once, a key given twice or more included
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[13, 12, 13, 13]) ORDER BY 1, 2, 3;
SELECT ik_same(ARRAY[13, 12, 13, 13]);
SELECT ik_same(ARRAY[11, 12, 13]);
-- NULL elements match nothing, as in = ANY; no key, no row
SELECT ik_same(ARRAY[NULL, 12, NULL]);
SELECT ik_same(ARRAY[NULL]::int[]);
SELECT ik_same('{}');
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[NULL]::int[]);
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => '{}'::int[]);
-- keys => NULL is no keys argument: the whole index, as key => NULL
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => NULL::int[]);
-- keys that are not there, every key, many random ones, a 2-D array
SELECT ik_same(ARRAY[-1, 500, 100000]);
SELECT ik_same(ARRAY(SELECT generate_series(-5, 505)));
SELECT setseed(0.24);
SELECT ik_same(ARRAY(SELECT (random() * 520)::int FROM generate_series(1, 300)));
SELECT ik_same(ARRAY(SELECT (random() * 520)::int FROM generate_series(1, 3000)));
SELECT ik_same(ARRAY[[11, 12], [13, 11]]);
-- at an earlier time, against the table as it was then
SELECT ik_same(ARRAY[1, 2, 3, 495, 12], 0, 'ik_plain0');
SELECT ik_same(ARRAY(SELECT generate_series(-5, 505)), 0, 'ik_plain0');
-- limit counts rows over all the keys
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY(SELECT generate_series(0, 499)), "limit" => 7);
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[13, 13], "limit" => 2);

-- values converted to the key column's type as a key field is (SQL
-- assignment): bigint as bigint = ANY compares, numeric rounded as
-- key => ROW(12.5) rounds it (a value out of the column's range fails,
-- below, as a key's does)
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[12::bigint, 13]);
SELECT count(*) FROM ik_plain WHERE k = ANY(ARRAY[12::bigint, 13]);
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[12.5]) ORDER BY 1, 2, 3;
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(12.5)) ORDER BY 1, 2, 3;
-- keys equal by SQL equality are one key: 1.0, 1.00 and 1 are the same numeric
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_n', keys => ARRAY[1.0, 1.00, 1, NULL, 2.5]);
SELECT count(*) FROM ik_plain WHERE n = ANY(ARRAY[1.0, 1.00, 1, NULL, 2.5]);

-- multi-column keys are rows, as key takes them; a NULL field matches nothing
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_kg',
    keys => ARRAY[ROW(12, 'g5'), ROW(12, 'g5'), ROW(3, 'g3'), ROW(NULL, 'null'), ROW(13, NULL), ROW(14::bigint, 'g0')])
  ORDER BY 1, 2, 3;
SELECT * FROM ik_plain WHERE (k, g) IN ((12, 'g5'), (3, 'g3'), (NULL, 'null'), (13, NULL), (14, 'g0'))
  ORDER BY 1, 2, 3;
-- rows for a one-column key too
SELECT ik_same(ARRAY[3, 12]) = (SELECT count(*) || ' rows, 0 differ'
    FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[ROW(3), ROW(12), ROW(NULL)]));

-- the errors of key: wrong arity, types without an assignment, values out
-- of range; keys with key is a bad argument (22023)
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_kg', keys => ARRAY[1, 2])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_kg', keys => ARRAY[ROW(1)])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[ROW(1, 'g1')])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[now()])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(now()))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY['1'::text])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[5000000000.5])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(5000000000.5))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(1), keys => ARRAY[1])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1], as_of => -1)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1], "limit" => -1)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'no_such_index', keys => ARRAY[1])$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1], as_of => 0)$$);
SELECT peek.allow_compaction('ik_k', 1);
SELECT wait_for($$SELECT since = 1 FROM peek.indexes WHERE name = 'ik_k'$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1], as_of => 0)$$);

-- a peek that waits is canceled; a subtransaction's rollback withdraws only
-- its own peek; no hold is left behind
SET statement_timeout = '200ms';
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1, 2], as_of => 1000);
RESET statement_timeout;
BEGIN;
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[11, 12]);
SAVEPOINT a;
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[11, 12]);
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[5000000000.5]);
ROLLBACK TO a;
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[11, 12]);
SAVEPOINT b;
SET LOCAL statement_timeout = '200ms';
SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[1, 2], as_of => 1000);
ROLLBACK TO b;
SELECT ik_same(ARRAY[11, 12, 495]);
COMMIT;
SELECT count(*) FROM peek.peek_hold_status();

-- cached lookups across DDL in one session: the index dropped and made
-- again under its name with another key, then the collection too with
-- another row type; every peek reads the object that has the name now
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(12));
SELECT peek.drop_index('ik_k');
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(12))$$);
SELECT peek.create_index('ik_k', 'ik', ARRAY['g']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ik_k'$$);
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW('g3'));
SELECT count(*) FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY['g3', 'g4']);
SELECT count(*) FROM ik_plain WHERE g = ANY(ARRAY['g3', 'g4']);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', keys => ARRAY[12])$$);
CREATE TYPE ik_row2 AS (g text, k bigint);
SELECT peek.drop_collection('ik');
SELECT peek.create_collection('ik', 'ik_row2');
SELECT peek.write('ik', ARRAY[('a', 12), ('b', 12), ('c', 13)]::ik_row2[]);
SELECT peek.create_index('ik_k', 'ik', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'ik_k'$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ik_row, 'ik_k', ROW(12))$$);
SELECT * FROM peek.index_peek(NULL::ik_row2, 'ik_k', ROW(12)) ORDER BY 1;
SELECT * FROM peek.index_peek(NULL::ik_row2, 'ik_k', keys => ARRAY[13, 12]) ORDER BY 1;
SELECT * FROM peek.index_peek(NULL::ik_row2, 'ik_k', ROW(12)) ORDER BY 1;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION ik_same(int[], bigint, text);
DROP TABLE ik_plain, ik_plain0;
DROP TYPE ik_row, ik_row2;
