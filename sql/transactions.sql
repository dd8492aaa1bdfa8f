-- Every function behaves under ROLLBACK TO SAVEPOINT, a plpgsql EXCEPTION
-- block and a trigger as if never called; drops free their registry
-- entries; a dropped and re-created name is peeked again at once; a query
-- cancel does not stop a runtime.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
-- a peek that would hang fails the test instead
SET statement_timeout = '20s';

CREATE TYPE tx_row AS (id int, v text);
SELECT peek.create_collection('tx', 'tx_row');
SELECT peek.write('tx', ARRAY[(1, 'a'), (2, 'b')]::tx_row[]);
SELECT peek.create_index('tx_by_id', 'tx', '{id}');
SELECT wait_for($$SELECT count(*) = 1 FROM peek.indexes WHERE name = 'tx_by_id' AND state = 'ready' AND upper = 1$$);

-- drop_index rolled back to a savepoint: the index stays and is peekable
BEGIN;
SAVEPOINT s;
SELECT peek.drop_index('tx_by_id');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id', ROW(1));
-- the same with drop_collection in a plpgsql EXCEPTION block
DO $$
BEGIN
    BEGIN
        PERFORM peek.drop_collection('tx');
        RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
END $$;
SELECT name FROM peek.collections WHERE name = 'tx';
SELECT * FROM peek.persist_peek(NULL::tx_row, 'tx') ORDER BY id;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id', ROW(2));
-- a savepoint that committed into its transaction does drop
BEGIN;
SAVEPOINT s;
SELECT peek.create_index('tx_tmp', 'tx', '{v}');
RELEASE SAVEPOINT s;
COMMIT;
SELECT wait_for($$SELECT count(*) = 1 FROM peek.indexes WHERE name = 'tx_tmp' AND state = 'ready'$$);
BEGIN;
SAVEPOINT s;
SELECT peek.drop_index('tx_tmp');
RELEASE SAVEPOINT s;
COMMIT;
SELECT try($$SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_tmp')$$);

-- a rolled-back write or advance: this session's as_of NULL peeks read the
-- committed upper and do not wait for the time that never came
BEGIN;
SAVEPOINT s;
SELECT peek.write('tx', ARRAY[(3, 'c')]::tx_row[]);
SELECT peek.advance('tx', 10);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM peek.persist_peek(NULL::tx_row, 'tx') ORDER BY id;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id') ORDER BY id;
DO $$
BEGIN
    PERFORM peek.write('tx', ARRAY[(4, 'd')]::tx_row[]);
    RAISE EXCEPTION 'undo';
EXCEPTION WHEN raise_exception THEN
    NULL;
END $$;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id') ORDER BY id;
SELECT upper FROM peek.collections WHERE name = 'tx';
-- a write in a subtransaction that commits is read by as_of NULL
BEGIN;
SAVEPOINT s;
SELECT peek.write('tx', ARRAY[(5, 'e')]::tx_row[]);
RELEASE SAVEPOINT s;
COMMIT;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id') ORDER BY id;

-- a rolled-back allow_compaction raises no hold: history stays
BEGIN;
SAVEPOINT s;
SELECT peek.allow_compaction('tx', 2);
SELECT peek.allow_compaction('tx_by_id', 2);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT peek.write('tx', ARRAY[(6, 'f')]::tx_row[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND upper = 3$$);
SELECT object, kind, max("time") FROM peek.holds WHERE object LIKE 'tx%' AND kind <> 'peek' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT object, max(since) FROM peek.frontiers WHERE object LIKE 'tx%' GROUP BY 1 ORDER BY 1;
SELECT * FROM peek.persist_peek(NULL::tx_row, 'tx', as_of => 0) ORDER BY id;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id', as_of => 0) ORDER BY id;

-- in a trigger: the write of a statement that fails is undone with it
CREATE TABLE tx_src (id int, v text);
CREATE FUNCTION tx_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM peek.write('tx', ARRAY[ROW(NEW.id, NEW.v)::tx_row]);
    IF NEW.v = 'bad' THEN
        RAISE EXCEPTION 'bad row';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tx_mirror AFTER INSERT ON tx_src FOR EACH ROW EXECUTE FUNCTION tx_mirror();
INSERT INTO tx_src VALUES (7, 'g');
SELECT try($$INSERT INTO tx_src VALUES (8, 'bad')$$);
BEGIN;
SAVEPOINT s;
INSERT INTO tx_src VALUES (9, 'i');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id') ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::tx_row, 'tx') ORDER BY id;
DROP TABLE tx_src;
DROP FUNCTION tx_mirror();

-- drop and re-create a name, then peek it again from this session: the
-- cached lookup is dropped once and the new object is found
SELECT count(*) FROM peek.index_peek(NULL::tx_row, 'tx_by_id');
SELECT peek.drop_index('tx_by_id');
SELECT peek.create_index('tx_by_id', 'tx', '{v}');
SELECT * FROM peek.index_peek(NULL::tx_row, 'tx_by_id', ROW('b'));
SELECT count(*) FROM peek.persist_peek(NULL::tx_row, 'tx');
SELECT peek.drop_collection('tx');
SELECT peek.create_collection('tx', 'tx_row');
SELECT peek.write('tx', ARRAY[(100, 'new')]::tx_row[]);
SELECT * FROM peek.persist_peek(NULL::tx_row, 'tx');

-- a session that peeked an object sees its own drop at once, in the same
-- transaction, and the object again once the drop is rolled back
SELECT peek.create_index('tx_by_id', 'tx', '{id}');
SELECT count(*) FROM peek.index_peek(NULL::tx_row, 'tx_by_id', as_of => 0);
BEGIN;
SELECT peek.drop_index('tx_by_id');
SELECT try($$SELECT count(*) FROM peek.index_peek(NULL::tx_row, 'tx_by_id', as_of => 0)$$);
ROLLBACK;
SELECT count(*) FROM peek.index_peek(NULL::tx_row, 'tx_by_id', as_of => 0);
BEGIN;
SELECT peek.drop_collection('tx');
SELECT try($$SELECT count(*) FROM peek.persist_peek(NULL::tx_row, 'tx', as_of => 0)$$);
ROLLBACK;
SELECT count(*) FROM peek.persist_peek(NULL::tx_row, 'tx', as_of => 0);

-- dropped objects leave no registry entries behind
SELECT peek.drop_collection('tx');
SELECT wait_for($$SELECT count(*) = 0 FROM peek.registry_status()$$);
SELECT count(*) FROM peek.registry_status();

-- a query cancel does not stop a runtime (each runtime running first: one
-- that has not noticed the new extension yet is waiting for it)
SELECT wait_for($$SELECT bool_and(state = 'running') FROM peek.runtimes$$);
CREATE TEMP TABLE tx_pids AS SELECT role, pid, restarts FROM peek.runtimes;
SELECT count(*) > 0 FROM peek.runtimes r WHERE pg_cancel_backend(r.pid);
SELECT pg_sleep(0.5);
SELECT bool_and(r.pid = p.pid) AS same_pids, bool_and(r.restarts = p.restarts) AS no_restarts,
       bool_and(r.state = 'running') AS running
  FROM peek.runtimes r JOIN tx_pids p USING (role);

DROP TYPE tx_row;
RESET statement_timeout;
