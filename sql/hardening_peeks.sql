-- Hardening of peeks at their edges (issue 22).
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

DROP EXTENSION pg_peek CASCADE;
DROP TYPE hp_row, hp_deep, hp_nest, hp_pair, hp_pair2;
