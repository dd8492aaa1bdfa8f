-- A transaction that writes a collection more than once holds every time
-- from the upper its first write found: a peek at any of them fails at
-- once (55000).  Each later write in the same (sub)transaction found the
-- upper the one before raised and took its place, so a peek at the first
-- write's time waited for the transaction's own commit instead (57014
-- here, from statement_timeout).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
SET statement_timeout = '5s';

CREATE TYPE owa_row AS (id int);
SELECT peek.create_collection('owa', 'owa_row');
SELECT peek.write('owa', ARRAY[ROW(1)]::owa_row[]);
SELECT peek.create_view('owa_v', $$SELECT count(*) AS n FROM peek.persist_peek(NULL::owa_row, 'owa')$$);
SELECT wait_for($$SELECT upper = 1 FROM peek.views WHERE name = 'owa_v'$$);

-- two writes (times 1 and 2): both times fail, the committed one reads
BEGIN;
SELECT peek.write('owa', ARRAY[ROW(2)]::owa_row[]);
SELECT peek.write('owa', ARRAY[ROW(3)]::owa_row[]);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 1)$$);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 2)$$);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_v, 'owa_v', as_of => 1)$$);
SELECT * FROM peek.persist_peek(NULL::owa_row, 'owa');
SELECT * FROM peek.persist_peek(NULL::owa_v, 'owa_v');
ROLLBACK;

-- an append after a write, two advances
BEGIN;
SELECT peek.write('owa', ARRAY[ROW(2)]::owa_row[]);
SELECT peek.append('owa', ARRAY[ROW(3)]::owa_row[], 4);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 1)$$);
ROLLBACK;
BEGIN;
SELECT peek.advance('owa', 3);
SELECT peek.advance('owa', 5);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 1)$$);
ROLLBACK;

-- a released savepoint's write and a later one in the transaction; a
-- function whose EXCEPTION block writes twice
BEGIN;
SAVEPOINT s;
SELECT peek.write('owa', ARRAY[ROW(2)]::owa_row[]);
RELEASE SAVEPOINT s;
SELECT peek.write('owa', ARRAY[ROW(3)]::owa_row[]);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 1)$$);
ROLLBACK;
CREATE FUNCTION owa_write_twice() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        PERFORM peek.write('owa', ARRAY[ROW(2)]::owa_row[]);
        PERFORM peek.write('owa', ARRAY[ROW(3)]::owa_row[]);
        RETURN (SELECT count(*) FROM peek.persist_peek(NULL::owa_row, 'owa', as_of => 1));
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
        RETURN -1;
    END;
END $$;
BEGIN;
SELECT owa_write_twice();
-- the block's writes were rolled back with it: the transaction holds nothing
SELECT * FROM peek.persist_peek(NULL::owa_row, 'owa') ORDER BY id;
ROLLBACK;

-- committed, both times read
SELECT peek.write('owa', ARRAY[ROW(2)]::owa_row[]), peek.write('owa', ARRAY[ROW(3)]::owa_row[]);
SELECT t, count(*) FROM generate_series(0, 2) t,
       LATERAL peek.persist_peek(NULL::owa_row, 'owa', as_of => t) GROUP BY t ORDER BY t;

DROP FUNCTION owa_write_twice();
SELECT peek.drop_view('owa_v');
RESET statement_timeout;
SELECT peek.drop_collection('owa');
DROP TYPE owa_row;
