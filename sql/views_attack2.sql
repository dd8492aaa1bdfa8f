-- Maintained views attacked through transactions: a create_view left open
-- in another session (through dblink) holds its inputs against drops only,
-- not against their writers or a source's capture.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

CREATE TYPE bitem AS (id int, g int, v int);
SELECT peek.create_collection('bitems', 'bitem');
SELECT peek.write('bitems', ARRAY[(1, 1, 10), (2, 2, 20)]::bitem[]);
CREATE TABLE borders (id int PRIMARY KEY, cust int, amt int);
ALTER TABLE borders REPLICA IDENTITY FULL;
SELECT peek.create_source('borders_src', 'borders');
INSERT INTO borders VALUES (1, 1, 5);
SELECT peek.create_view('bsums', $$SELECT cust, sum(amt) AS s FROM borders GROUP BY cust$$);
SELECT wait_for($$SELECT s = 5 FROM bsums WHERE cust = 1$$);

-- another session makes a view over both inputs' kinds and stays open
SELECT dblink_connect('bopen',
    format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
           split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('bopen', 'BEGIN');
SELECT * FROM dblink('bopen', $q$SELECT peek.create_view('bopen_items',
    $$SELECT id FROM peek.persist_peek(NULL::bitem, 'bitems') WHERE v > 5$$)::text$q$) AS t(r text);
SELECT * FROM dblink('bopen', $q$SELECT peek.create_view('bopen_orders',
    $$SELECT id FROM borders WHERE amt > 1$$)::text$q$) AS t(r text);

-- writers of the collection go on, and the source's capture too
SET lock_timeout = '5s';
SELECT try($$SELECT peek.write('bitems', ARRAY[(3, 1, 30)]::bitem[])$$);
RESET lock_timeout;
INSERT INTO borders VALUES (2, 1, 7);
SELECT wait_for($$SELECT s = 12 FROM bsums WHERE cust = 1$$, 10);
-- a drop of an input waits for the open view (here: fails at once)
SET lock_timeout = '200ms';
SELECT try($$SELECT peek.drop_collection('bitems')$$);
RESET lock_timeout;
SELECT dblink_exec('bopen', 'COMMIT');
SELECT dblink_disconnect('bopen');
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'bopen%' AND state = 'ready'$$);
SELECT wait_for($$SELECT count(*) = 3 FROM bopen_items$$);
SELECT id FROM bopen_items ORDER BY id;
SELECT wait_for($$SELECT count(*) = 2 FROM bopen_orders$$);
SELECT id FROM bopen_orders ORDER BY id;

SELECT peek.drop_view('bopen_items'), peek.drop_view('bopen_orders'), peek.drop_view('bsums');
SELECT peek.drop_source('borders_src');
SELECT peek.drop_collection('bitems');
DROP TABLE borders;
DROP TYPE bitem;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
