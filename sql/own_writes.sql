-- A peek never waits for its own transaction.  A transaction that wrote a
-- collection (write, append, advance) holds its catalog row until it ends,
-- so no time from the upper it wrote from on is complete before its
-- commit: a peek at such a time fails at once (55000), and as_of NULL
-- reads the latest complete time, without the transaction's own writes,
-- or fails the same way while nothing is complete (its first write ever).
-- Before the fix these peeks waited until statement_timeout (57014).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
-- a peek that would wait for its own transaction shows 57014 instead
SET statement_timeout = '5s';

CREATE TYPE ow_row AS (id int, v text);
SELECT peek.create_collection('ow', 'ow_row');
SELECT peek.create_index('ow_by_id', 'ow', '{id}');

-- the first write ever (upper 0): nothing is complete before the commit
BEGIN;
SELECT peek.write('ow', ARRAY[(1, 'a')]::ow_row[]);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow')$$);
SELECT try($$SELECT count(*) FROM peek.index_peek(NULL::ow_row, 'ow_by_id', ROW(1))$$);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 0)$$);
COMMIT;
-- once it commits, the session reads its write
SELECT * FROM peek.persist_peek(NULL::ow_row, 'ow');
SELECT * FROM peek.index_peek(NULL::ow_row, 'ow_by_id', ROW(1));

-- a later write: as_of NULL reads the committed time 0 without the open
-- write; time 1 (the write's) and later fail at once, earlier ones read
BEGIN;
SELECT peek.write('ow', ARRAY[(2, 'b')]::ow_row[], ARRAY[(1, 'a')]::ow_row[]);
SELECT * FROM peek.persist_peek(NULL::ow_row, 'ow');
SELECT * FROM peek.index_peek(NULL::ow_row, 'ow_by_id', ROW(1));
SELECT * FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 0);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1)$$);
SELECT try($$SELECT count(*) FROM peek.index_peek(NULL::ow_row, 'ow_by_id', ROW(2), as_of => 1)$$);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 7)$$);
ROLLBACK;

-- append (no seal) and advance lock the row too: from the committed upper
-- (1) on, nothing is complete before the commit
BEGIN;
SELECT peek.append('ow', ARRAY[(3, 'c')]::ow_row[], 4);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1)$$);
ROLLBACK;
BEGIN;
SELECT peek.advance('ow', 1);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1)$$);
SELECT peek.advance('ow', 3);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 2)$$);
SELECT * FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 0);
ROLLBACK;

-- a write rolled back to a savepoint holds nothing: the peek at its time
-- waits as any peek of a time not yet complete does (another session may
-- complete it), and is canceled by statement_timeout
BEGIN;
SAVEPOINT s;
SELECT peek.write('ow', ARRAY[(4, 'd')]::ow_row[]);
ROLLBACK TO SAVEPOINT s;
SET LOCAL statement_timeout = '300ms';
SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1);
ROLLBACK;
-- a committed subtransaction's write counts as the transaction's
BEGIN;
SAVEPOINT s;
SELECT peek.write('ow', ARRAY[(4, 'd')]::ow_row[]);
RELEASE SAVEPOINT s;
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1)$$);
COMMIT;
SELECT * FROM peek.persist_peek(NULL::ow_row, 'ow', as_of => 1) ORDER BY id;

-- a view's times are its inputs': a write to the collection it reads (or
-- that a view it reads reads) holds them too, and a peek of the view at
-- them fails at once
SELECT peek.create_view('ow_v', $$SELECT count(*) AS n FROM peek.persist_peek(NULL::ow_row, 'ow')$$);
SELECT peek.create_view('ow_vv', $$SELECT n FROM peek.persist_peek(NULL::ow_v, 'ow_v')$$);
SELECT wait_for($$SELECT bool_and(upper = 2) FROM peek.views WHERE name LIKE 'ow\_v%'$$);
BEGIN;
SELECT peek.write('ow', ARRAY[(5, 'e')]::ow_row[]);
SELECT * FROM peek.persist_peek(NULL::ow_v, 'ow_v');
SELECT * FROM peek.persist_peek(NULL::ow_v, 'ow_v', as_of => 1);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_v, 'ow_v', as_of => 2)$$);
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::ow_vv, 'ow_vv', as_of => 3)$$);
ROLLBACK;
SELECT peek.drop_view('ow_vv');
SELECT peek.drop_view('ow_v');

RESET statement_timeout;
SELECT peek.drop_collection('ow');
DROP TYPE ow_row;
