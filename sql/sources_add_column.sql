-- ALTER TABLE ... ADD COLUMN on a captured table: the source goes on,
-- capturing the columns the table had when it was made (the new ones are
-- left out of its rows; an UPDATE of them alone changes nothing of it),
-- and so do the views over it, each equal to its query at every time.  A
-- view that reads an added column, a peek as the table's row type (which
-- now has columns the source lacks) are refused; a join of the table
-- still reads it.  Dropping an added column changes nothing; retyping a
-- captured one fails the source.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE ac (id int PRIMARY KEY, g int, v int);
INSERT INTO ac SELECT i, i % 5, i FROM generate_series(1, 100) i;
CREATE TABLE acg (g int PRIMARY KEY, label text);
INSERT INTO acg SELECT i, 'g' || i FROM generate_series(0, 4) i;
SET client_min_messages = warning;
SELECT peek.create_source('ac_src', 'ac');
SELECT peek.create_source('acg_src', 'acg');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections
                   WHERE name IN ('ac_src', 'acg_src')$$);
SELECT peek.create_index('ac_by_id', 'ac_src', ARRAY['id']);
SELECT row_type AS ac_type FROM peek.collections WHERE name = 'ac_src' \gset
CREATE TABLE ac_times (src text, t bigint);
SELECT peek.create_view('ac_sum', $$SELECT g, count(*) AS n, sum(v) AS s FROM ac GROUP BY g$$);
SELECT peek.create_view('ac_join', $$SELECT ac.id, ac.v, acg.label FROM ac JOIN acg USING (g)$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready'$$);
SELECT views_past_wal('ac_src', 'ac_times');

-- a column added without a default, written
ALTER TABLE ac ADD COLUMN note text;
INSERT INTO ac VALUES (101, 1, 101, 'a new row');
UPDATE ac SET v = v + 1000, note = 'both' WHERE id BETWEEN 11 AND 20;
SELECT views_past_wal('ac_src', 'ac_times');
-- an UPDATE of the added column alone appends nothing to the source
SELECT shard_updates('ac_src') AS before_note_only \gset
UPDATE ac SET note = 'the new column alone' WHERE id <= 10;
SELECT views_past_wal('ac_src', 'ac_times');
SELECT shard_updates('ac_src') - :before_note_only AS appended_by_note_only;
UPDATE ac SET v = v + 1 WHERE id <= 10;
SELECT views_past_wal('ac_src', 'ac_times');
SELECT shard_updates('ac_src') - :before_note_only AS appended_with_v;

-- a column added with a volatile default rewrites the table: its rows
-- retracted and written again, the same rows for the source
ALTER TABLE ac ADD COLUMN at timestamptz DEFAULT clock_timestamp();
DELETE FROM ac WHERE id BETWEEN 21 AND 25;
UPDATE ac SET g = 4 WHERE id = 30;
SELECT views_past_wal('ac_src', 'ac_times');
-- dropping an added column changes nothing of the source
ALTER TABLE ac DROP COLUMN note;
INSERT INTO ac VALUES (102, 2, 102);
SELECT views_past_wal('ac_src', 'ac_times');

-- the source, its index and the views went on
SELECT name, state FROM peek.collections WHERE name IN ('ac_src', 'acg_src') ORDER BY name;
SELECT name, state FROM peek.indexes WHERE name = 'ac_by_id';
SELECT name, state FROM peek.views ORDER BY name;
-- the source holds the table's captured columns, no more, no less
SET pg_peek.isolation = 'strict serializable';
SELECT count(*) AS differences FROM (
    (SELECT id, g, v FROM ac EXCEPT ALL SELECT * FROM peek.persist_peek(NULL:::ac_type, 'ac_src'))
    UNION ALL
    (SELECT * FROM peek.persist_peek(NULL:::ac_type, 'ac_src') EXCEPT ALL SELECT id, g, v FROM ac)) d;
SELECT * FROM peek.index_peek(NULL:::ac_type, 'ac_by_id', ROW(101));
RESET pg_peek.isolation;
-- every view at every recorded time equals its query over its inputs then
SELECT * FROM views_bad_times_at('ac%', 'ac_src|acg_src', 'ac_times');

-- what reads an added column is refused; the captured ones are read
SELECT try($$SELECT peek.create_view('ac_bad', 'SELECT id, at FROM ac')$$);
SELECT try($$SELECT peek.create_view('ac_star', 'SELECT * FROM ac')$$);
SELECT try($$SELECT peek.create_view('ac_where', 'SELECT id FROM ac WHERE at IS NOT NULL')$$);
SELECT try($$SELECT peek.create_view('ac_sub', 'SELECT g FROM acg WHERE EXISTS (SELECT 1 FROM ac WHERE ac.g = acg.g AND ac.at IS NULL)')$$);
SELECT try($$SELECT * FROM peek.persist_peek(NULL::ac, 'ac_src')$$);
SELECT try($$SELECT * FROM peek.index_peek(NULL::ac, 'ac_by_id', ROW(1))$$);
SELECT peek.create_view('late_grouped', $$
    SELECT a.g, acg.label, count(*) AS n FROM ac a JOIN acg ON acg.g = a.g GROUP BY a.g, acg.label$$);
SELECT peek.create_view('late_using', $$SELECT id, label FROM ac JOIN acg USING (g) WHERE id > 95$$);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready'$$);
CREATE TABLE late_times (src text, t bigint);
SELECT views_past_wal('ac_src', 'late_times');
INSERT INTO ac VALUES (103, 3, 103);
UPDATE ac SET g = 0 WHERE id = 99;
SELECT views_past_wal('ac_src', 'ac_times'), views_past_wal('ac_src', 'late_times');
SELECT * FROM late_using ORDER BY id;
SELECT * FROM views_bad_times_at('ac%', 'ac_src|acg_src', 'ac_times');
SELECT * FROM views_bad_times_at('late%', 'ac_src|acg_src', 'late_times');

-- after a restart the source reads the table as it is now, and goes on
SELECT restart_maintenance();
INSERT INTO ac VALUES (104, 4, 104);
SELECT views_past_wal('ac_src', 'ac_times'), views_past_wal('ac_src', 'late_times');
SELECT * FROM views_bad_times_at('ac%', 'ac_src|acg_src', 'ac_times');
SELECT * FROM views_bad_times_at('late%', 'ac_src|acg_src', 'late_times');

-- a captured column cannot be dropped, even once a column of its type was
-- added after it (which would take its place): the source names itself
CREATE TABLE ad (k int, v int);
INSERT INTO ad VALUES (1, 10);
SET client_min_messages = warning;
SELECT peek.create_source('ad_src', 'ad');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'ad_src'$$);
ALTER TABLE ad ADD COLUMN v2 int;
UPDATE ad SET v2 = v * 2;
SELECT try($$ALTER TABLE ad DROP COLUMN v$$);
SELECT try($$ALTER TABLE ad DROP COLUMN v CASCADE$$);
ALTER TABLE ad DROP COLUMN v2;
INSERT INTO ad VALUES (2, 20);
SET pg_peek.isolation = 'strict serializable';
SELECT a.* FROM peek.persist_peek(NULL::ad, 'ad_src') a ORDER BY k;
RESET pg_peek.isolation;
SELECT peek.drop_source('ad_src');
ALTER TABLE ad DROP COLUMN v;
DROP TABLE ad;
-- nor from the composite type of a typed table
CREATE TYPE adt AS (k int, v int);
CREATE TABLE adtyped OF adt;
INSERT INTO adtyped VALUES (1, 10);
SET client_min_messages = warning;
SELECT peek.create_source('adtyped_src', 'adtyped');
RESET client_min_messages;
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'adtyped_src'$$);
SELECT try($$ALTER TYPE adt DROP ATTRIBUTE v CASCADE$$);
SELECT try($$ALTER TYPE adt ADD ATTRIBUTE w int CASCADE$$);
SELECT try($$ALTER TYPE adt DROP ATTRIBUTE w CASCADE$$);
SELECT name, state FROM peek.collections WHERE name = 'adtyped_src';
SELECT peek.drop_source('adtyped_src');
DROP TABLE adtyped;
DROP TYPE adt;

-- retyping a captured column (that no view reads: their PostgreSQL views
-- would refuse it) fails the source and its index
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
ALTER TABLE ac ALTER COLUMN v TYPE bigint;
SELECT wait_for($$SELECT state = 'failed' FROM peek.collections WHERE name = 'ac_src'$$);
SELECT regexp_replace(failure, 'source_[0-9]+', 'source_N', 'g') AS failure
  FROM peek.collections WHERE name = 'ac_src';
SELECT state FROM peek.indexes WHERE name = 'ac_by_id';

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE ac, acg, ac_times, late_times;
