SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

-- Attacks on ADD COLUMN of a captured table (8faddd9): a table with
-- columns dropped before its source was made, TOASTed captured values,
-- columns added inside a transaction around rolled back savepoints, with a
-- constant default, stored generated and identity columns (rewrites), a
-- retype and drops of added columns, a renamed captured column, a restart
-- right after an ALTER.  The source equals the table's captured columns,
-- its indexes their part, and every view its query at every recorded time;
-- an UPDATE of added columns alone appends nothing, even over TOASTed
-- captured values; what reads an added column is refused.
CREATE TABLE tx (id int PRIMARY KEY, gone1 int, g int, gone2 text, big text, v numeric);
ALTER TABLE tx DROP COLUMN gone1, DROP COLUMN gone2;
ALTER TABLE tx ALTER COLUMN big SET STORAGE EXTERNAL;
INSERT INTO tx SELECT i, i % 4, CASE WHEN i % 3 = 0 THEN repeat(md5(i::text), 200) ELSE 'small' || i END, i
  FROM generate_series(1, 60) i;
CREATE TABLE tg (g int PRIMARY KEY, label text);
INSERT INTO tg SELECT i, 'g' || i FROM generate_series(0, 3) i;
SET client_min_messages = warning;
SELECT peek.create_source('tx_src', 'tx');
SELECT peek.create_source('tg_src', 'tg');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections WHERE name IN ('tx_src', 'tg_src')$$);
SELECT row_type AS tx_type FROM peek.collections WHERE name = 'tx_src' \gset
SELECT peek.create_index('tx_by_g', 'tx_src', ARRAY['g']);
CREATE TABLE tx_times (src text, t bigint);
SELECT peek.create_view('tx_a_sum', $$SELECT g, count(*) AS n, sum(v) AS s, sum(length(big)) AS l FROM tx GROUP BY g$$);
SELECT peek.create_view('tx_a_self', $$SELECT a.id, b.id AS id2 FROM tx a JOIN tx b USING (g) WHERE a.id < 10 AND b.id < 10$$);
SELECT peek.create_view('tx_a_nat', $$SELECT * FROM tx NATURAL JOIN tg$$);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready'$$);
SELECT views_past_wal('tx_src', 'tx_times');

-- ADD COLUMN inside a transaction with writes before and after, savepoints
BEGIN;
INSERT INTO tx VALUES (61, 1, 'before', 61);
SAVEPOINT s1;
ALTER TABLE tx ADD COLUMN label text;
INSERT INTO tx VALUES (62, 2, 'inside', 62, 'x');
ROLLBACK TO s1;
UPDATE tx SET v = v + 1 WHERE id = 1;
ALTER TABLE tx ADD COLUMN note text DEFAULT 'dflt';
INSERT INTO tx VALUES (63, 3, 'after', 63, 'n63');
UPDATE tx SET note = 'only note' WHERE id BETWEEN 2 AND 4;
SAVEPOINT s2;
UPDATE tx SET v = v + 100, note = 'rolled' WHERE id = 5;
ROLLBACK TO s2;
COMMIT;
SELECT views_past_wal('tx_src', 'tx_times');
SELECT shard_updates('tx_src') AS u0 \gset
-- UPDATE only the added column of rows with TOASTed captured values
UPDATE tx SET note = repeat('z', 3000) WHERE id % 3 = 0 AND id <= 30;
SELECT views_past_wal('tx_src', 'tx_times');
SELECT shard_updates('tx_src') - :u0 AS appended_by_note_only;
-- UPDATE only the TOASTed captured column
UPDATE tx SET big = big || 'x' WHERE id IN (3, 6);
SELECT views_past_wal('tx_src', 'tx_times');
SELECT shard_updates('tx_src') - :u0 AS appended_by_big;
-- NATURAL JOIN of a view made before: tg gets a column named as tx's added one
ALTER TABLE tg ADD COLUMN note text;
UPDATE tg SET note = 'dflt' WHERE g = 1;
SELECT views_past_wal('tx_src', 'tx_times');
-- a stored generated column and an identity column (both rewrite), a retype
ALTER TABLE tx ADD COLUMN gen numeric GENERATED ALWAYS AS (v * 2) STORED;
ALTER TABLE tx ADD COLUMN idn int GENERATED ALWAYS AS IDENTITY;
INSERT INTO tx (id, g, big, v) VALUES (64, 0, 'gen', 64);
ALTER TABLE tx ALTER COLUMN note TYPE varchar(5000);
UPDATE tx SET g = (g + 1) % 4 WHERE id BETWEEN 40 AND 45;
ALTER TABLE tx DROP COLUMN idn;
DELETE FROM tx WHERE id BETWEEN 50 AND 52;
SELECT views_past_wal('tx_src', 'tx_times');
-- rename a captured column; views made after it read it by its new name
ALTER TABLE tx RENAME COLUMN v TO amount;
INSERT INTO tx (id, g, big, amount) VALUES (65, 1, 'renamed', 65);
-- a join's alias list reaching an added column reads it
SELECT try($$SELECT peek.create_view('tx_bad_alias', 'SELECT j.e FROM (tx JOIN tg USING (g)) AS j(a, b, c, d, e)')$$);
SELECT try($$SELECT peek.create_view('tx_bad_star', 'SELECT j.* FROM (tx JOIN tg USING (g)) j')$$);
SELECT try($$SELECT peek.create_view('tx_bad_nat', 'SELECT id FROM tx NATURAL JOIN tg')$$);
SELECT try($$SELECT peek.create_view('tx_bad_sub', 'SELECT s.id FROM (SELECT * FROM tx) s')$$);
SELECT try($$SELECT peek.create_view('tx_bad_in', 'SELECT g FROM tg WHERE note IN (SELECT note FROM tx)')$$);
SELECT try($$SELECT peek.create_view('tx_bad_lateral', 'SELECT id FROM tx, LATERAL (SELECT tx.gen) l')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::tx, 'tx_src')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::tx, 'tx_by_g', ROW(1))$$);
SELECT peek.create_view('tx_b_using', $$SELECT j.id, j.g, j.label FROM (tx JOIN tg USING (g)) j WHERE j.id % 5 = 0$$);
SELECT peek.create_view('tx_b_count', $$SELECT count(*) AS n FROM (tx JOIN tg USING (g)) j$$);
SELECT peek.create_view('tx_b_renamed', $$SELECT g, sum(amount) AS s FROM tx WHERE id > 10 GROUP BY g$$);
SELECT peek.create_view('tx_b_left', $$SELECT tg.g, tg.label, x.id FROM tg LEFT JOIN tx x ON x.g = tg.g AND x.id < 5$$);
SELECT peek.create_view('tx_b_exists', $$SELECT g FROM tg WHERE EXISTS (SELECT 1 FROM tx WHERE tx.g = tg.g AND tx.amount > 60)$$);
SELECT peek.create_view('tx_b_union', $$SELECT id FROM tx WHERE id < 5 UNION ALL SELECT g FROM tg$$);
SELECT peek.create_view('tx_b_with', $$WITH w AS (SELECT id, g FROM tx WHERE id % 7 = 0) SELECT w.g, count(*) AS n FROM w GROUP BY w.g$$);
SELECT peek.create_index('tx_by_id', 'tx_src', ARRAY['id']);
SELECT try($$SELECT peek.create_index('tx_by_note', 'tx_src', ARRAY['note'])$$);
SELECT try($$SELECT peek.create_index('tx_by_amount', 'tx_src', ARRAY['amount'])$$);
SELECT wait_for($$SELECT count(*) = 10 FROM peek.views WHERE state = 'ready'$$);
SELECT name, state FROM peek.views ORDER BY name;
CREATE TABLE tx_times2 (src text, t bigint);
SELECT views_past_wal('tx_src', 'tx_times2');
UPDATE tx SET g = 2 WHERE id = 3;
UPDATE tx SET amount = amount + 5 WHERE id BETWEEN 10 AND 20;
SELECT views_past_wal('tx_src', 'tx_times'), views_past_wal('tx_src', 'tx_times2');
-- a restart right after an ALTER
ALTER TABLE tx ADD COLUMN late int DEFAULT 7;
SELECT restart_maintenance();
INSERT INTO tx (id, g, big, amount) VALUES (66, 2, 'after restart', 66);
UPDATE tx SET late = 8 WHERE id = 66;
UPDATE tx SET late = 9, amount = amount + 1 WHERE id = 65;
TRUNCATE tg;
INSERT INTO tg SELECT i, 'h' || i FROM generate_series(0, 3) i;
SELECT views_past_wal('tx_src', 'tx_times'), views_past_wal('tx_src', 'tx_times2');
SELECT * FROM tx_b_using ORDER BY 1;
SELECT * FROM tx_b_count;

SELECT name, state, failure FROM peek.collections WHERE name IN ('tx_src', 'tg_src') ORDER BY name;
SELECT name, state FROM peek.indexes ORDER BY name;
SET pg_peek.isolation = 'strict serializable';
SELECT count(*) AS differences FROM (
    (SELECT id, g, big, amount FROM tx EXCEPT ALL SELECT * FROM peek.persist_peek(NULL:::tx_type, 'tx_src'))
    UNION ALL
    (SELECT * FROM peek.persist_peek(NULL:::tx_type, 'tx_src') EXCEPT ALL SELECT id, g, big, amount FROM tx)) d;
SELECT count(*) AS differences FROM (
    (SELECT id, g, big, amount FROM tx WHERE g = 2 EXCEPT ALL SELECT * FROM peek.index_peek(NULL:::tx_type, 'tx_by_g', ROW(2)))
    UNION ALL
    (SELECT * FROM peek.index_peek(NULL:::tx_type, 'tx_by_g', ROW(2)) EXCEPT ALL SELECT id, g, big, amount FROM tx WHERE g = 2)) d;
SELECT id, g, v FROM peek.index_peek(NULL:::tx_type, 'tx_by_id', ROW(66));
RESET pg_peek.isolation;
SELECT * FROM views_bad_times_at('tx_a%', 'tx_src|tg_src', 'tx_times');
SELECT * FROM views_bad_times_at('tx_b%', 'tx_src|tg_src', 'tx_times2');
-- dropping the added columns: the table's row type is the source's again
ALTER TABLE tx DROP COLUMN note, DROP COLUMN gen, DROP COLUMN late;
SELECT count(*) FROM peek.persist_peek(NULL::tx, 'tx_src');
SELECT try($$SELECT peek.create_view('tx_c_star', 'SELECT * FROM tx WHERE id = 66')$$);
SELECT wait_for($$SELECT count(*) = 11 FROM peek.views WHERE state = 'ready'$$);
SELECT * FROM tx_c_star;
SELECT name, state FROM peek.views ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE tx, tg, tx_times, tx_times2;
