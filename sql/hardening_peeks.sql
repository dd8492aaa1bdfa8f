-- Hardening of peeks at their edges.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE hp_row AS (k int, v text);
SELECT peek.create_collection('hp', 'hp_row');
SELECT peek.write('hp', ARRAY[(1, 'one'), (2, 'two')]::hp_row[]);
SELECT peek.create_index('hp_k', 'hp', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'hp_k'$$);

-- as_of => the greatest bigint can never be complete (no upper passes it):
-- refused at once, naming the argument, rather than waiting forever
SET statement_timeout = '10s';
SELECT try($$SELECT * FROM peek.persist_peek(NULL::hp_row, 'hp', as_of => 9223372036854775807)$$);
SELECT try($$SELECT peek.persist_peek(NULL::hp_row, 'hp', as_of => 9223372036854775807)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_row, 'hp_k', ROW(1), as_of => 9223372036854775807)$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_row, 'hp_k', NULL, as_of => 9223372036854775807)$$);
-- an ordinary time is not refused
SELECT try($$SELECT * FROM peek.persist_peek(NULL::hp_row, 'hp', as_of => 0)$$);
RESET statement_timeout;

-- a key column of a composite type takes a row as SQL's = does: an
-- anonymous ROW(...) is converted field by field as the parser converts
-- it (a literal by the field type's input function, a field by
-- assignment), in a fresh peek and in the session's next one
CREATE TYPE hp_pair AS (a int, b text);
CREATE TYPE hp_pair2 AS (a int, b text);
CREATE TYPE hp_nest AS (k hp_pair, v text);
CREATE TYPE hp_deep AS (k hp_nest, v text);
SELECT peek.create_collection('hn', 'hp_nest');
SELECT peek.write('hn', ARRAY[(ROW(NULL, 'b'), 'null-b'), (ROW(1, 'c'), 'one-c')]::hp_nest[]);
SELECT peek.create_index('hn_k', 'hn', ARRAY['k']);
SELECT peek.create_collection('hd', 'hp_deep');
SELECT peek.write('hd', ARRAY[(ROW(ROW(1, 'c'), 'x'), 'deep')]::hp_deep[]);
SELECT peek.create_index('hd_k', 'hd', ARRAY['k']);
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.indexes WHERE name IN ('hn_k', 'hd_k')$$);
CREATE TABLE hp_table (k hp_pair, v text);
INSERT INTO hp_table SELECT * FROM peek.persist_peek(NULL::hp_nest, 'hn');
SELECT v FROM hp_table WHERE k = ROW(1, 'c'::text);
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1, 'c'::text)));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1, 'c'::text)));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(NULL, 'b')));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(NULL, 'b')));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1::bigint, 'c')));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1, 'c')::hp_pair2));
SELECT p.v FROM hp_table t,
    LATERAL peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW((t.k).a, (t.k).b))) p ORDER BY 1;
SELECT v FROM peek.index_peek(NULL::hp_deep, 'hd_k', ROW(ROW(ROW(1, 'c'), 'x')));
SELECT v FROM peek.index_peek(NULL::hp_deep, 'hd_k', ROW(ROW(NULL, 'x')));
SELECT v FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(2, 'c')));
-- what neither = nor assignment takes is refused as before (42846), and
-- a literal that does not read as its field's type as the parser refuses it
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1, 'c', 3)))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(1)))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(now(), 'c')))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW(ROW(1), 'c')))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(ROW('x', 'c')))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_nest, 'hn_k', ROW(now()))$$);
DROP TABLE hp_table;

-- a subtransaction begun and aborted inside a walk (a key type whose
-- equality runs plpgsql with an exception block that catches an error)
-- leaves the peek in flight: it is still running, holding its batches,
-- when the equality looks; a peek in a subtransaction that aborts is still
-- withdrawn
CREATE TYPE hp_int;
CREATE FUNCTION hp_int_in(cstring) RETURNS hp_int LANGUAGE internal IMMUTABLE STRICT AS 'int4in';
CREATE FUNCTION hp_int_out(hp_int) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'int4out';
CREATE TYPE hp_int (INPUT = hp_int_in, OUTPUT = hp_int_out, LIKE = int4);
CREATE FUNCTION hp_int_hash(hp_int) RETURNS int LANGUAGE internal IMMUTABLE STRICT AS 'hashint4';
CREATE FUNCTION hp_int_eq(a hp_int, b hp_int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    BEGIN
        PERFORM 1 / (a::text::int - a::text::int);
    EXCEPTION WHEN division_by_zero THEN
        NULL;
    END;
    IF current_setting('hp.watch', true) = 'on' THEN
        PERFORM set_config('hp.running',
            (SELECT count(*) FROM peek.active_peeks WHERE state = 'running')::text, false);
    END IF;
    IF a::text = '13' THEN
        RAISE EXCEPTION 'hp_int 13 is unlucky';
    END IF;
    RETURN a::text = b::text;
END $$;
CREATE OPERATOR = (LEFTARG = hp_int, RIGHTARG = hp_int, FUNCTION = hp_int_eq, HASHES);
CREATE OPERATOR CLASS hp_int_ops DEFAULT FOR TYPE hp_int USING hash AS
    OPERATOR 1 = (hp_int, hp_int), FUNCTION 1 hp_int_hash(hp_int);
CREATE TYPE hp_custom AS (k hp_int, v text);
SELECT peek.create_collection('hc', 'hp_custom');
SELECT peek.write('hc', ARRAY[('7', 'seven'), ('13', 'thirteen')]::hp_custom[]);
SELECT peek.create_index('hc_k', 'hc', ARRAY['k']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'hc_k'$$);
SET hp.watch = on;
SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('7'::hp_int));
SELECT current_setting('hp.running') AS running_peeks_seen_by_equality;
-- in a savepoint, and in an exception block, an error in the walk
-- withdraws the peek; the next peek goes on
BEGIN;
SAVEPOINT s;
SELECT try($$SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('13'::hp_int))$$);
SELECT count(*) AS peeks FROM peek.active_peeks;
SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('13'::hp_int));
ROLLBACK TO s;
SELECT count(*) AS peeks FROM peek.active_peeks;
SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('7'::hp_int));
SELECT current_setting('hp.running') AS running_peeks_seen_by_equality;
-- a peek that waits in a savepoint, canceled, is withdrawn
SAVEPOINT w;
SET LOCAL statement_timeout = '300ms';
SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('7'::hp_int), as_of => 1000);
ROLLBACK TO w;
SELECT count(*) AS peeks FROM peek.active_peeks;
SELECT v FROM peek.index_peek(NULL::hp_custom, 'hc_k', ROW('7'::hp_int));
COMMIT;
RESET hp.watch;

-- a peek at an object its own open transaction created fails at once
-- (55000), leaving nothing behind: once the transaction commits, the
-- object is peeked without a further write
SET statement_timeout = '10s';
BEGIN;
SELECT peek.create_collection('ho', 'hp_row');
SELECT peek.write('ho', ARRAY[(1, 'one')]::hp_row[]);
SELECT peek.create_index('ho_k', 'ho', ARRAY['k']);
SAVEPOINT a;
SELECT peek.create_index('ho_v', 'ho', ARRAY['v']);
RELEASE a;
SELECT peek.create_index('hp_v', 'hp', ARRAY['v']);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_row, 'ho_k', ROW(1))$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_row, 'ho_v', ROW('one'))$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::hp_row, 'ho')$$);
SELECT try($$SELECT peek.persist_peek(NULL::hp_row, 'ho')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::hp_row, 'hp_v', ROW('one'))$$);
-- the committed collection it indexes is peeked as ever
SELECT * FROM peek.persist_peek(NULL::hp_row, 'hp') ORDER BY k;
COMMIT;
SELECT * FROM peek.index_peek(NULL::hp_row, 'ho_k', ROW(1));
SELECT * FROM peek.index_peek(NULL::hp_row, 'ho_v', ROW('one'));
SELECT * FROM peek.persist_peek(NULL::hp_row, 'ho');
SELECT * FROM peek.index_peek(NULL::hp_row, 'hp_v', ROW('one'));
RESET statement_timeout;

-- a streamed peek rescanned with the same arguments under a LIMIT (a
-- correlated subquery) keeps only the rows its readers read: it stays
-- within pg_peek.max_result_bytes as its first pass did, and each pass
-- reads the same answer
SELECT peek.create_collection('hb', 'hp_row');
SELECT peek.write('hb', array_agg((g, repeat('x', 200))::hp_row)) FROM generate_series(1, 3000) g;
-- (folded first: a fold between two of the peeks below reorders the rows)
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'hb'$$);
SET pg_peek.max_result_bytes = '256kB';
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::hp_row, 'hb')$$);
EXPLAIN (COSTS OFF)
SELECT g, (SELECT array_agg(k) FROM (SELECT k FROM peek.persist_peek(NULL::hp_row, 'hb') LIMIT g) x)
FROM generate_series(1, 4) g;
SELECT g, cardinality(a), a[1:g - 1] = lag(a) OVER (ORDER BY g) AS same_rows_again
FROM (SELECT g, (SELECT array_agg(k) FROM (SELECT k FROM peek.persist_peek(NULL::hp_row, 'hb') LIMIT g) x) a
      FROM generate_series(1, 4) g) s
ORDER BY g;
SELECT n, cardinality(a), a = (SELECT array_agg(k) FROM (SELECT k FROM peek.persist_peek(NULL::hp_row, 'hb') LIMIT n) y) AS same_as_fresh
FROM (SELECT n, (SELECT array_agg(k) FROM (SELECT k FROM peek.persist_peek(NULL::hp_row, 'hb') LIMIT n) x) a
      FROM (VALUES (1), (3), (2), (5), (5)) v(n)) s;
RESET pg_peek.max_result_bytes;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP TYPE hp_row, hp_deep, hp_nest, hp_pair, hp_pair2, hp_custom;
DROP TYPE hp_int CASCADE;
RESET client_min_messages;
