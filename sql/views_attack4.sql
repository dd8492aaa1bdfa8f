-- Maintained views attacked through their row types, transactions and
-- owners, and a source's slot on a stream the source filters out:
--  * DROP TYPE ... CASCADE of a type that is a column of a collection's
--    row type and of a view's output (before: the PostgreSQL view's rule
--    depended on the view's own columns, read through its body's persist
--    peek, and the DROP failed with XX000 "could not open relation");
--  * peek.create_view / drop_view rolled back by ROLLBACK TO, by a
--    plpgsql EXCEPTION block, and run by a trigger;
--  * ALTER VIEW ... OWNER TO rolled back by ROLLBACK TO: the rounds go on
--    as the owner that stayed;
--  * a source's slot is told past WAL with no change of its table (writes
--    to another table, rolled-back writes to its own).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- ---- DROP TYPE ... CASCADE ------------------------------------------------
CREATE TYPE a4mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE a4inner AS (a int, m a4mood);
CREATE TYPE a4row AS (k int, m a4mood, i a4inner);
SELECT peek.create_collection('a4c', 'a4row');
SELECT peek.write('a4c', ARRAY[(1, 'ok', (1, 'sad')), (2, 'happy', (2, 'ok')), (3, 'ok', (3, 'ok'))]::a4row[]);
SELECT peek.create_index('a4c_k', 'a4c', ARRAY['k']);
SELECT peek.create_index('a4c_m', 'a4c', ARRAY['m']);
-- by the column whose type goes (its output column is of that type), and
-- by another column
SELECT peek.create_view('a4by_m', $$SELECT m, count(*) AS n FROM peek.persist_peek(NULL::a4row, 'a4c') GROUP BY m$$);
SELECT peek.create_view('a4by_k', $$SELECT k, count(*) AS n FROM peek.persist_peek(NULL::a4row, 'a4c') GROUP BY k$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'a4by%' AND state = 'ready'$$)
   AND wait_for($$SELECT count(*) = 2 FROM peek.indexes WHERE name LIKE 'a4c%' AND state = 'ready'$$);
SELECT * FROM a4by_m ORDER BY m;
-- the rule depends on what the query reads, not on its own view's columns
SELECT pg_describe_object(refclassid, refobjid, refobjsubid) AS rule_depends_on
  FROM pg_depend
 WHERE classid = 'pg_rewrite'::regclass AND deptype = 'n'
   AND objid = (SELECT oid FROM pg_rewrite WHERE ev_class = 'a4by_m'::regclass)
 ORDER BY 1;
SET client_min_messages = warning;
DROP TYPE a4mood CASCADE;
RESET client_min_messages;
-- the collection lost a column, as a table does: its rows are read
-- without it, its index on another column serves, the index on it fails
SELECT * FROM peek.persist_peek(NULL::a4row, 'a4c') ORDER BY k;
SELECT * FROM peek.index_peek(NULL::a4row, 'a4c_k', ROW(2));
SELECT try($$SELECT * FROM peek.index_peek(NULL::a4row, 'a4c_m', ROW(2))$$)
       ~ '^(42703: key column 2 of type a4row no longer exists|55000: index "a4c_m" is failed)' AS clean_error;
SELECT peek.write('a4c', ARRAY[ROW(4, ROW(4))]::a4row[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.indexes WHERE name = 'a4c_m'$$)
   AND wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'a4by%' AND state = 'failed'$$);
SELECT * FROM peek.persist_peek(NULL::a4row, 'a4c') ORDER BY k;
SELECT * FROM peek.index_peek(NULL::a4row, 'a4c_k', ROW(4));
SELECT name, state, failure FROM peek.collections WHERE name = 'a4c'
UNION ALL SELECT name, state, failure FROM peek.indexes WHERE name LIKE 'a4c%'
UNION ALL SELECT name, state, regexp_replace(failure, 'OID \d+', 'OID n') FROM peek.views WHERE name LIKE 'a4by%'
 ORDER BY name;
SELECT to_regclass('a4by_m') AS pg_view_m, to_regclass('a4by_k') AS pg_view_k;
SELECT try($$SELECT * FROM peek.persist_peek(NULL::a4by_k, 'a4by_k')$$);
SELECT peek.drop_view('a4by_m'), peek.drop_view('a4by_k'), peek.drop_index('a4c_m');
SELECT name FROM peek.objects ORDER BY name;

-- ---- create_view / drop_view in subtransactions and triggers ---------------
CREATE TYPE a4kv AS (k int, v int);
SELECT peek.create_collection('a4t', 'a4kv');
SELECT peek.write('a4t', ARRAY[(1, 1), (1, 2), (2, 5)]::a4kv[]);
BEGIN;
SAVEPOINT s;
SELECT peek.create_view('a4s', $$SELECT k, sum(v) AS s FROM peek.persist_peek(NULL::a4kv, 'a4t') GROUP BY k$$);
ROLLBACK TO s;
SELECT to_regclass('a4s') AS rolled_back, (SELECT count(*) FROM peek.objects WHERE name = 'a4s') AS objects;
SELECT peek.create_view('a4s', $$SELECT k, count(*) AS n FROM peek.persist_peek(NULL::a4kv, 'a4t') GROUP BY k$$);
SAVEPOINT d;
SELECT peek.drop_view('a4s');
ROLLBACK TO d;
COMMIT;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'a4s'$$);
SELECT * FROM a4s ORDER BY k;
DO $$
BEGIN
    PERFORM peek.create_view('a4e', $q$SELECT k FROM peek.persist_peek(NULL::a4kv, 'a4t')$q$);
    PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
    RAISE NOTICE 'caught after create_view';
END $$;
DO $$
BEGIN
    PERFORM peek.drop_view('a4s');
    PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
    RAISE NOTICE 'caught after drop_view';
END $$;
SELECT name FROM peek.objects WHERE name LIKE 'a4%' ORDER BY name;
SELECT to_regclass('a4e') AS a4e, to_regclass('a4s') AS a4s;
CREATE TABLE a4make (name text);
CREATE FUNCTION a4make_view() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM peek.create_view(NEW.name,
            $q$SELECT k, sum(v) AS s FROM peek.persist_peek(NULL::a4kv, 'a4t') GROUP BY k$q$);
    ELSE
        PERFORM peek.drop_view(OLD.name);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER a4make_view AFTER INSERT OR DELETE ON a4make
    FOR EACH ROW EXECUTE FUNCTION a4make_view();
INSERT INTO a4make VALUES ('a4trig');
BEGIN;
INSERT INTO a4make VALUES ('a4trig_gone');
ROLLBACK;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'a4trig'$$);
SELECT * FROM a4trig ORDER BY k;
SELECT peek.write('a4t', ARRAY[(2, 10)]::a4kv[]);
SELECT wait_for($$SELECT count(*) = 2 FROM a4trig WHERE s IN (3, 15)$$);
SELECT name FROM peek.objects WHERE name LIKE 'a4%' ORDER BY name;
DELETE FROM a4make;
SELECT name FROM peek.objects WHERE name LIKE 'a4%' ORDER BY name;
SELECT to_regclass('a4trig') AS a4trig, to_regclass('a4trig_gone') AS a4trig_gone;

-- ---- ALTER VIEW ... OWNER TO rolled back ------------------------------------
CREATE ROLE peek_a4_alice;
CREATE ROLE peek_a4_bob;
GRANT USAGE ON SCHEMA peek TO peek_a4_alice, peek_a4_bob;
CREATE SCHEMA a4_alice AUTHORIZATION peek_a4_alice;
CREATE TABLE a4orders (id int PRIMARY KEY, cust int, amount int);
INSERT INTO a4orders SELECT g, g % 3, g FROM generate_series(1, 9) g;
SET client_min_messages = warning;
SELECT peek.create_source('a4orders_src', 'a4orders');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'a4orders_src'$$);
GRANT SELECT ON a4orders TO peek_a4_alice, peek_a4_bob;
SET ROLE peek_a4_alice;
SET search_path = a4_alice, public;
SELECT peek.create_view('a4tot', $$SELECT cust, sum(amount) AS total FROM a4orders GROUP BY cust$$);
RESET ROLE;
RESET search_path;
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'a4tot'$$);
BEGIN;
SAVEPOINT o;
ALTER VIEW a4_alice.a4tot OWNER TO peek_a4_bob;
SELECT owner FROM peek.views WHERE name = 'a4tot';
ROLLBACK TO o;
SELECT owner FROM peek.views WHERE name = 'a4tot';
COMMIT;
SELECT o.owner, c.relowner::regrole AS pg_owner
  FROM peek.views o, pg_class c WHERE o.name = 'a4tot' AND c.oid = 'a4_alice.a4tot'::regclass;
-- bob's right goes: alice's rounds go on
REVOKE SELECT ON a4orders FROM peek_a4_bob;
INSERT INTO a4orders VALUES (10, 1, 100);
SELECT wait_for($$SELECT total = 112 FROM a4_alice.a4tot WHERE cust = 1$$);
SELECT name, owner, state, failure FROM peek.views WHERE name = 'a4tot';

-- alice's session in a repeatable read transaction from before the view
-- is given to bob: her peeks stop at once, in that transaction and in her
-- later ones (before: the transaction's peeks went on; its snapshot then
-- filled the session's cache with alice as the owner again, and her later
-- transactions read what the view computed with bob's rights)
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE FUNCTION a4connect(name text) RETURNS text LANGUAGE sql AS $$
    SELECT dblink_connect(name,
        format('dbname=%s port=%s host=%s application_name=%s', current_database(),
               current_setting('port'),
               split_part(current_setting('unix_socket_directories'), ',', 1), name))$$;
GRANT SELECT ON a4orders TO peek_a4_bob;
SELECT a4connect('a4alice');
SELECT dblink_exec('a4alice', 'SET ROLE peek_a4_alice');
SELECT dblink_exec('a4alice', 'BEGIN ISOLATION LEVEL REPEATABLE READ');
SELECT * FROM dblink('a4alice', $$SELECT count(*) FROM peek.persist_peek(NULL::a4_alice.a4tot, 'a4tot')$$) AS t(n bigint);
ALTER VIEW a4_alice.a4tot OWNER TO peek_a4_bob;
REVOKE SELECT ON a4orders FROM peek_a4_alice;
INSERT INTO a4orders VALUES (11, 5, 1000);
SELECT wait_for($$SELECT count(*) = 4 FROM a4_alice.a4tot$$);
SELECT * FROM dblink('a4alice', $$SELECT try($q$SELECT count(*) FROM peek.persist_peek(NULL::a4_alice.a4tot, 'a4tot')$q$)$$) AS t(r text);
SELECT * FROM dblink('a4alice', $$SELECT try($q$SELECT count(*) FROM a4_alice.a4tot$q$)$$) AS t(r text);
SELECT dblink_exec('a4alice', 'COMMIT');
SELECT * FROM dblink('a4alice', $$SELECT try($q$SELECT count(*) FROM peek.persist_peek(NULL::a4_alice.a4tot, 'a4tot')$q$)$$) AS t(r text);
SELECT * FROM dblink('a4alice', $$SELECT try($q$SELECT count(*) FROM peek.persist_peek(NULL::a4_alice.a4tot, 'a4tot')$q$)$$) AS t(r text);
SELECT dblink_disconnect('a4alice');
SELECT name, owner, state, failure FROM peek.views WHERE name = 'a4tot';

-- ---- a source's slot on a filtered-out stream ------------------------------
-- WAL with no change for the source (another table's writes, rolled-back
-- writes of its own table): its slot's confirmed position and, after a
-- checkpoint logs the running transactions, its restart position still
-- move on, so the WAL is not kept for it.
CREATE TABLE a4other (x int);
SELECT slot_name AS a4slot, restart_lsn AS a4restart
  FROM pg_replication_slots
 WHERE slot_name LIKE 'pg\_peek\_%\_' || (SELECT id FROM peek.objects WHERE name = 'a4orders_src') \gset
INSERT INTO a4other SELECT generate_series(1, 20000);
BEGIN;
INSERT INTO a4orders SELECT g, 1, 1 FROM generate_series(100, 20000) g;
ROLLBACK;
SELECT pg_current_wal_lsn() AS a4written \gset
SELECT wait_for($$SELECT confirmed_flush_lsn >= '$$ || :'a4written' || $$'::pg_lsn
                    FROM pg_replication_slots WHERE slot_name = '$$ || :'a4slot' || $$'$$);
CHECKPOINT;
INSERT INTO a4other VALUES (0);
SELECT wait_for($$SELECT restart_lsn > '$$ || :'a4restart' || $$'::pg_lsn
                    FROM pg_replication_slots WHERE slot_name = '$$ || :'a4slot' || $$'$$);
SELECT cust, total FROM a4_alice.a4tot ORDER BY cust;

SELECT peek.drop_view('a4tot');
SELECT peek.drop_source('a4orders_src');
SELECT peek.drop_view('a4s');
SELECT peek.drop_collection('a4t'), peek.drop_index('a4c_k'), peek.drop_collection('a4c');
DROP TABLE a4orders, a4other, a4make;
DROP FUNCTION a4make_view(), a4connect(text);
DROP TYPE a4kv, a4row, a4inner;
DROP SCHEMA a4_alice;
REVOKE USAGE ON SCHEMA peek FROM peek_a4_alice, peek_a4_bob;
DROP ROLE peek_a4_alice, peek_a4_bob;
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
