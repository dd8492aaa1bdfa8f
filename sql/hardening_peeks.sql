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

DROP EXTENSION pg_peek CASCADE;
DROP TYPE hp_row;
