-- Wrong answers: compaction up to the upper, row identity
-- whatever the datum's header, key conversion by SQL assignment, and
-- multiplicities out of bigint's range.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
-- no case below stops a runtime (earlier tests may have restarted one)
CREATE TEMP TABLE wa_runtimes AS SELECT role, pid, restarts FROM peek.runtimes;

-- ---- compaction up to (and past) the upper ----
CREATE TYPE wa_kv AS (k int, v text);
SELECT peek.create_collection('wa_c', 'wa_kv');
SELECT peek.create_index('wa_c_k', 'wa_c', '{k}');
SELECT peek.write('wa_c', ARRAY[(1,'a'),(2,'b'),(2,'b')]::wa_kv[]);
SELECT peek.write('wa_c', ARRAY[(3,'c')]::wa_kv[], ARRAY[(1,'a')]::wa_kv[]);
-- compaction to the upper (2): the since stays below it
SELECT peek.allow_compaction('wa_c', 2), peek.allow_compaction('wa_c_k', 2);
SELECT wait_for($$SELECT bool_and(since = 1) FROM peek.frontiers WHERE object IN ('wa_c', 'wa_c_k')$$);
SELECT peek.write('wa_c', ARRAY[(4,'d')]::wa_kv[]);
SELECT wait_for($$SELECT bool_and(upper = 3) FROM peek.frontiers WHERE object IN ('wa_c', 'wa_c_k')$$);
-- each row as often as it is there, in the index and the shard
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_c_k') ORDER BY k;
SELECT * FROM peek.persist_peek(NULL::wa_kv, 'wa_c') ORDER BY k;
-- compaction allowed past the upper: since follows upper - 1
SELECT peek.allow_compaction('wa_c', 1000000), peek.allow_compaction('wa_c_k', 1000000);
SELECT wait_for($$SELECT bool_and(since = 2 AND upper = 3) FROM peek.frontiers WHERE object IN ('wa_c', 'wa_c_k')$$);
SELECT wait_for($$SELECT since = 2 FROM peek.objects WHERE name = 'wa_c'$$);
SELECT peek.write('wa_c', ARRAY[(5,'e')]::wa_kv[], ARRAY[(2,'b')]::wa_kv[]);
SELECT wait_for($$SELECT bool_and(since = 3 AND upper = 4) FROM peek.frontiers WHERE object IN ('wa_c', 'wa_c_k')$$);
SELECT wait_for($$SELECT since = 3 FROM peek.objects WHERE name = 'wa_c'$$);
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_c_k') ORDER BY k;
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_c_k', ROW(2)) ORDER BY k;
SELECT * FROM peek.persist_peek(NULL::wa_kv, 'wa_c') ORDER BY k;
-- as_of NULL reads the last complete time (3) and does not wait
SET statement_timeout = '5s';
SELECT count(*) FROM peek.index_peek(NULL::wa_kv, 'wa_c_k');
SELECT count(*) FROM peek.persist_peek(NULL::wa_kv, 'wa_c');
RESET statement_timeout;
SELECT since, upper FROM peek.collections WHERE name = 'wa_c';

-- a source compacted as far as allowed: once the table is idle, its since
-- and upper stop moving (its own compaction does not feed it)
CREATE TABLE wa_t (k int, v text);
INSERT INTO wa_t VALUES (1, 'a'), (2, 'b');
SELECT peek.create_source('wa_s', 'wa_t');
SELECT peek.create_index('wa_s_k', 'wa_s', '{k}');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'wa_s'$$);
INSERT INTO wa_t VALUES (2, 'b'), (3, 'c');
DELETE FROM wa_t WHERE k = 1;
SELECT peek.allow_compaction('wa_s', 9223372036854775807),
       peek.allow_compaction('wa_s_k', 9223372036854775807);
SELECT wait_for($$SELECT since > 0 FROM peek.objects WHERE name = 'wa_s'$$);
SELECT wait_for($$SELECT since > 0 FROM peek.objects WHERE name = 'wa_s_k'$$);
SELECT pg_sleep(1.5);
SELECT string_agg(object || ' ' || runtime || ' ' || since, ', ' ORDER BY object, runtime) AS wa_sinces,
       (SELECT xmin FROM peek.objects WHERE name = 'wa_s') AS wa_xmin
  FROM peek.frontiers WHERE object LIKE 'wa_s%' \gset
SELECT pg_sleep(1.5);
-- no compaction happened meanwhile: neither the sinces nor the catalog row changed
SELECT string_agg(object || ' ' || runtime || ' ' || since, ', ' ORDER BY object, runtime) = :'wa_sinces' AS sinces_unchanged,
       (SELECT xmin FROM peek.objects WHERE name = 'wa_s') = :'wa_xmin' AS row_unchanged
  FROM peek.frontiers WHERE object LIKE 'wa_s%';
SELECT bool_and(since < upper) AS since_below_upper FROM peek.frontiers WHERE object LIKE 'wa_s%';
SELECT * FROM peek.index_peek(NULL::wa_t, 'wa_s_k') ORDER BY k;
SELECT * FROM peek.persist_peek(NULL::wa_t, 'wa_s') ORDER BY k;
SELECT count(*) FROM peek.persist_peek(NULL::wa_t, 'wa_s') p WHERE p NOT IN (SELECT t FROM wa_t t);

-- ---- row identity is the row's fields, whatever header the datum has ----
SELECT peek.create_collection('wa_r', 'wa_kv');
SELECT peek.create_index('wa_r_k', 'wa_r', '{k}');
SELECT peek.write('wa_r', ARRAY[(1,'a'),(2,'b'),(3,'c'),(4,'d')]::wa_kv[]);
-- retracted through a plpgsql row variable
CREATE FUNCTION wa_retract_var(key int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r wa_kv;
BEGIN
    r.k := key;
    r.v := chr(ascii('a') + key - 1);
    RETURN peek.write('wa_r', '{}'::wa_kv[], ARRAY[r]);
END $$;
SELECT wa_retract_var(1);
-- ... and a row variable filled by SELECT INTO from a table of that type
CREATE TABLE wa_kv_rows OF wa_kv;
INSERT INTO wa_kv_rows VALUES (2, 'b');
CREATE FUNCTION wa_retract_select(key int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r wa_kv;
BEGIN
    SELECT * INTO r FROM wa_kv_rows WHERE k = key;
    RETURN peek.write('wa_r', '{}'::wa_kv[], ARRAY[r]);
END $$;
SELECT wa_retract_select(2);
DROP TABLE wa_kv_rows;
SELECT wait_for($$SELECT upper = 3 FROM peek.frontiers WHERE object = 'wa_r_k' LIMIT 1$$);
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_r_k') ORDER BY k;
SELECT * FROM peek.persist_peek(NULL::wa_kv, 'wa_r') ORDER BY k;
-- a collection of a table's row type, mirrored by a trigger's NEW and OLD
-- (heap tuples, with their headers)
CREATE TABLE wa_rows (k int, v text);
SELECT peek.create_collection('wa_tr', 'wa_rows');
SELECT peek.create_index('wa_tr_k', 'wa_tr', '{k}');
CREATE FUNCTION wa_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM peek.write('wa_tr', ARRAY[NEW]);
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM peek.write('wa_tr', ARRAY[NEW], ARRAY[OLD]);
    ELSE
        PERFORM peek.write('wa_tr', '{}'::wa_rows[], ARRAY[OLD]);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER wa_mirror AFTER INSERT OR UPDATE OR DELETE ON wa_rows
    FOR EACH ROW EXECUTE FUNCTION wa_mirror();
INSERT INTO wa_rows VALUES (1, 'a'), (2, 'b'), (3, 'c');
UPDATE wa_rows SET v = 'C' WHERE k = 3;
UPDATE wa_rows SET v = 'B' WHERE k = 2;
DELETE FROM wa_rows WHERE k IN (1, 3);
SELECT wait_for($$SELECT upper = 7 FROM peek.frontiers WHERE object = 'wa_tr_k' LIMIT 1$$);
SELECT * FROM peek.index_peek(NULL::wa_rows, 'wa_tr_k') ORDER BY k;
SELECT * FROM peek.persist_peek(NULL::wa_rows, 'wa_tr') ORDER BY k;
-- after ALTER TYPE ... ADD ATTRIBUTE: old rows and new rows are the same rows
ALTER TYPE wa_kv ADD ATTRIBUTE extra int;
SELECT peek.write('wa_r', ARRAY[(5,'e',NULL)]::wa_kv[], ARRAY[(4,'d',NULL)]::wa_kv[]);
SELECT peek.write('wa_r', ARRAY[(6,'f',1)]::wa_kv[], ARRAY[(5,'e',NULL)]::wa_kv[]);
SELECT wait_for($$SELECT upper = 5 FROM peek.frontiers WHERE object = 'wa_r_k' LIMIT 1$$);
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_r_k') ORDER BY k;
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_r_k', ROW(4));
SELECT * FROM peek.persist_peek(NULL::wa_kv, 'wa_r') ORDER BY k;
-- a new index hydrates the old and new rows alike
SELECT peek.create_index('wa_r_v', 'wa_r', '{v}');
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'wa_r_v'$$);
SELECT * FROM peek.index_peek(NULL::wa_kv, 'wa_r_v') ORDER BY k;

-- ---- key fields are converted as SQL assignment converts them ----
CREATE TYPE wa_f8 AS (x float8, tag text);
SELECT peek.create_collection('wa_f8', 'wa_f8');
SELECT peek.create_index('wa_f8_x', 'wa_f8', '{x}');
SELECT peek.write('wa_f8', ARRAY[(0.1, 'double'), (0.1::real, 'real')]::wa_f8[]);
SELECT tag FROM peek.index_peek(NULL::wa_f8, 'wa_f8_x', ROW(0.1::real));
SELECT tag FROM peek.index_peek(NULL::wa_f8, 'wa_f8_x', ROW(0.1));
CREATE DOMAIN wa_pos AS int CHECK (VALUE > 0);
CREATE TYPE wa_ik AS (i int, d wa_pos, s text);
SELECT peek.create_collection('wa_ik', 'wa_ik');
SELECT peek.create_index('wa_ik_i', 'wa_ik', '{i}');
SELECT peek.create_index('wa_ik_d', 'wa_ik', '{d}');
SELECT peek.create_index('wa_ik_s', 'wa_ik', '{s}');
SELECT peek.write('wa_ik', ARRAY[(2, 2, '2'), (3, 3, '3')]::wa_ik[]);
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(2.0));
-- numeric to int rounds as assignment does (2.5 -> 3, 2.4 -> 2)
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(2.5));
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(2.4));
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(3::bigint));
-- a domain key: found by its base type's value; its check applies
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_d', ROW(3));
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_d', ROW(3.0));
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_ik, 'wa_ik_d', ROW(-1))$$);
-- int to text converts (assignment to a string type), text to int does not
SELECT i FROM peek.index_peek(NULL::wa_ik, 'wa_ik_s', ROW(2));
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW('2'::text))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(now()))$$);
-- out of the column type's range: the assignment's error
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_ik, 'wa_ik_i', ROW(3000000000))$$);

-- ---- multiplicities beyond bigint: the same error from both peeks ----
SELECT peek.create_collection('wa_big', 'wa_f8');
SELECT peek.create_index('wa_big_x', 'wa_big', '{x}');
SELECT peek.append('wa_big', ARRAY[(1, 'big')]::wa_f8[], 0, 4611686018427387904);
SELECT peek.append('wa_big', ARRAY[(1, 'big')]::wa_f8[], 0, 4611686018427387904);
SELECT peek.append('wa_big', ARRAY[(1, 'big')]::wa_f8[], 0, 4611686018427387904);
SELECT peek.append('wa_big', ARRAY[(1, 'big')]::wa_f8[], 0, 4611686018427387904);
SELECT peek.append('wa_big', ARRAY[(2, 'small')]::wa_f8[], 0, 1);
SELECT peek.advance('wa_big', 1);
SELECT wait_for($$SELECT upper = 1 FROM peek.frontiers WHERE object = 'wa_big_x' LIMIT 1$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big_x', as_of => 0)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big_x', ROW(1), as_of => 0)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::wa_f8, 'wa_big', as_of => 0)$$);
SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big_x', ROW(2), as_of => 0);
-- at different times, and compacted together: the shard keeps them apart
-- (in bigint parts, flagged by a zero row: 4 rows)
SELECT peek.create_collection('wa_big2', 'wa_f8');
SELECT peek.create_index('wa_big2_x', 'wa_big2', '{x}');
SELECT peek.write('wa_big2', ARRAY[(2, 'small')]::wa_f8[]);
SELECT peek.append('wa_big2', ARRAY[(1, 'big')]::wa_f8[], 1, 9223372036854775807);
SELECT peek.append('wa_big2', ARRAY[(1, 'big')]::wa_f8[], 2, 1);
SELECT peek.advance('wa_big2', 3);
SELECT peek.allow_compaction('wa_big2', 1000), peek.allow_compaction('wa_big2_x', 1000);
SELECT wait_for($$SELECT since = 2 FROM peek.objects WHERE name = 'wa_big2'$$);
SELECT wait_for($$SELECT since = 2 FROM peek.objects WHERE name = 'wa_big2_x'$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big2_x', as_of => 2)$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::wa_f8, 'wa_big2', as_of => 2)$$);
SELECT shard_rows('wa_big2');
-- an intermediate sum beyond bigint whose final count fits: 1 copy at 1
SELECT peek.create_collection('wa_big3', 'wa_f8');
SELECT peek.create_index('wa_big3_x', 'wa_big3', '{x}');
SELECT peek.append('wa_big3', ARRAY[(1, 'big')]::wa_f8[], 0, 9223372036854775807);
SELECT peek.append('wa_big3', ARRAY[(1, 'big')]::wa_f8[], 0, 1);
SELECT peek.append('wa_big3', ARRAY[(1, 'big')]::wa_f8[], 1, -9223372036854775807);
SELECT peek.advance('wa_big3', 2);
SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big3_x', ROW(1), as_of => 1);
SELECT * FROM peek.persist_peek(NULL::wa_f8, 'wa_big3', as_of => 1);
SELECT try($$SELECT * FROM peek.index_peek(NULL::wa_f8, 'wa_big3_x', as_of => 0)$$);
SELECT r.role, r.state FROM peek.runtimes r JOIN wa_runtimes w USING (role)
 WHERE r.restarts <> w.restarts OR r.pid <> w.pid;

-- clean up
SELECT peek.drop_collection('wa_c'), peek.drop_collection('wa_r'), peek.drop_collection('wa_tr'),
       peek.drop_collection('wa_f8'),
       peek.drop_collection('wa_ik'), peek.drop_collection('wa_big'), peek.drop_collection('wa_big2'),
       peek.drop_collection('wa_big3');
SELECT peek.drop_source('wa_s');
DROP TABLE wa_t, wa_rows;
DROP FUNCTION wa_retract_var(int), wa_retract_select(int), wa_mirror();
DROP TYPE wa_kv, wa_f8, wa_ik;
DROP DOMAIN wa_pos;
