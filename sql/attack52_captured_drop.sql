-- A source matches its table's columns by position, so a captured column
-- dropped after a column of the same type was added (ADD COLUMN w int;
-- DROP COLUMN v) would leave the table's first live columns with the
-- source's types, and the source would go on capturing w's values as v's
-- (so it did at 8faddd9; and with one statement DROP COLUMN v, ADD COLUMN
-- w int before it).  Such a drop is refused (2BP01, naming the source):
-- the sources and the view over one stay exact.
-- the last captured column dropped after an added one
CREATE TABLE dc (id int PRIMARY KEY, g int, v int);
INSERT INTO dc SELECT i, i % 3, i * 10 FROM generate_series(1, 20) i;
-- the middle captured column dropped after an added one
CREATE TABLE dm (id int PRIMARY KEY, g int, v int);
INSERT INTO dm SELECT i, i % 3, i * 10 FROM generate_series(1, 20) i;
-- one statement dropping a captured column and adding one of its type
-- (so before 8faddd9 too: the live columns' types were all it compared)
CREATE TABLE dd (id int PRIMARY KEY, v int);
INSERT INTO dd SELECT i, i * 10 FROM generate_series(1, 5) i;
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
SELECT peek.create_source('dc_src', 'dc');
SELECT peek.create_source('dm_src', 'dm');
SELECT peek.create_source('dd_src', 'dd');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections
                   WHERE name IN ('dc_src', 'dm_src', 'dd_src')$$);
SELECT row_type AS dc_type FROM peek.collections WHERE name = 'dc_src' \gset
SELECT row_type AS dm_type FROM peek.collections WHERE name = 'dm_src' \gset
SELECT peek.create_view('dc_count', $$SELECT g, count(*) AS n FROM dc GROUP BY g$$);
SELECT wait_for($$SELECT state = 'ready' FROM peek.views WHERE name = 'dc_count'$$);

ALTER TABLE dc ADD COLUMN w int;
UPDATE dc SET w = -id;
ALTER TABLE dm ADD COLUMN w int;
UPDATE dm SET w = -id;
INSERT INTO dc VALUES (21, 0, 210, -21);
SELECT try($$ALTER TABLE dc DROP COLUMN v$$);
SELECT try($$ALTER TABLE dm DROP COLUMN g$$);
SELECT try($$ALTER TABLE dd DROP COLUMN v, ADD COLUMN w int$$);
INSERT INTO dc VALUES (22, 1, 220, -22);
UPDATE dc SET g = g + 1 WHERE id <= 5;
INSERT INTO dm VALUES (23, 2, 230, -23);
UPDATE dm SET v = v + 1 WHERE id <= 5;
INSERT INTO dd VALUES (6, 60);
UPDATE dd SET v = -id WHERE id = 1;

-- the sources and the view went on, exact
SELECT name, state FROM peek.collections WHERE name IN ('dc_src', 'dm_src', 'dd_src') ORDER BY name;
SET pg_peek.isolation = 'strict serializable';
SELECT (SELECT count(*) FROM (
          (SELECT id, g, v FROM dc EXCEPT ALL SELECT * FROM peek.persist_peek(NULL:::dc_type, 'dc_src'))
          UNION ALL
          (SELECT * FROM peek.persist_peek(NULL:::dc_type, 'dc_src') EXCEPT ALL SELECT id, g, v FROM dc)) d) AS dc_differences,
       (SELECT count(*) FROM (
          (SELECT id, g, v FROM dm EXCEPT ALL SELECT * FROM peek.persist_peek(NULL:::dm_type, 'dm_src'))
          UNION ALL
          (SELECT * FROM peek.persist_peek(NULL:::dm_type, 'dm_src') EXCEPT ALL SELECT id, g, v FROM dm)) d) AS dm_differences,
       (SELECT count(*) FROM (
          (SELECT id, v FROM dd EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::dd, 'dd_src'))
          UNION ALL
          (SELECT * FROM peek.persist_peek(NULL::dd, 'dd_src') EXCEPT ALL SELECT id, v FROM dd)) d) AS dd_differences;
SELECT count(*) AS view_differences FROM (
    (SELECT * FROM dc_count EXCEPT ALL SELECT g, count(*) FROM dc GROUP BY g)
    UNION ALL
    (SELECT g, count(*) FROM dc GROUP BY g EXCEPT ALL SELECT * FROM dc_count)) d;
RESET pg_peek.isolation;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE dc, dm, dd;
