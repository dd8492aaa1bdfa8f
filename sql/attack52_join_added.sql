-- A join of a captured table with added columns (8faddd9): a view that
-- reads the join's columns through its alias (j.col, j(a, b)), of a join
-- over a join, or with same-named columns on both sides, is kept as its
-- query deparsed: the added columns left out of the join must not shift or
-- rename the columns the view reads.  Each view equals its query at every
-- recorded time; also in a subquery in FROM, a WITH query and UNION ALL
-- branches.  (Views over an aliased join that ruleutils must rename
-- columns in, USING under a join alias, fail once made, added columns or
-- not: not tried here.)
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TABLE ja (id int PRIMARY KEY, g int, v int);
INSERT INTO ja SELECT i, i % 4, i * 10 FROM generate_series(1, 40) i;
CREATE TABLE jb (g int PRIMARY KEY, label text, note text);
INSERT INTO jb SELECT i, 'g' || i, 'n' || i FROM generate_series(0, 3) i;
CREATE TABLE jc (label text, w int);
INSERT INTO jc SELECT 'g' || i, i * 100 FROM generate_series(0, 3) i;
SET client_min_messages = warning;
SELECT peek.create_source('ja_src', 'ja');
SELECT peek.create_source('jb_src', 'jb');
SELECT peek.create_source('jc_src', 'jc');
RESET client_min_messages;
SELECT wait_for($$SELECT bool_and(state = 'ready') FROM peek.collections WHERE name IN ('ja_src', 'jb_src', 'jc_src')$$);
ALTER TABLE ja ADD COLUMN note text, ADD COLUMN extra int;
UPDATE ja SET note = 'a' || id, extra = id;

SELECT peek.create_view('j_alias', $$SELECT j.id, j.label FROM (ja JOIN jb USING (g)) j WHERE j.id <= 12$$);
SELECT peek.create_view('j_alias_cols', $$SELECT j.a, j.label, j.c FROM (ja JOIN jb ON jb.g = ja.g) AS j(a, b, c) WHERE j.a <= 12$$);
SELECT peek.create_view('j_plain', $$SELECT ja.id, jb.label, jb.note FROM ja JOIN jb USING (g) WHERE ja.id <= 12$$);
SELECT peek.create_view('j_left', $$SELECT j.g, j.id, j.label FROM (jb LEFT JOIN ja USING (g)) j WHERE j.id IS NULL OR j.id <= 12$$);
SELECT peek.create_view('j_nested', $$SELECT k.id, k.w, k.v FROM ((ja JOIN jb USING (g)) j JOIN jc ON jc.label = j.label) k WHERE k.id <= 12$$);
SELECT peek.create_view('j_nested_plain', $$SELECT ja.id, jc.w, jb.note FROM ja JOIN jb USING (g) JOIN jc USING (label) WHERE ja.id <= 12$$);
SELECT peek.create_view('j_exists', $$SELECT j.id FROM (ja JOIN jb USING (g)) j WHERE EXISTS (SELECT 1 FROM jc WHERE jc.label = j.label AND jc.w > 100)$$);
SELECT peek.create_view('j_sub', $$SELECT s.id, s.label FROM (SELECT j.id, j.label FROM (ja JOIN jb USING (g)) j WHERE j.id <= 12) s$$);
SELECT peek.create_view('j_with', $$WITH w AS (SELECT j.id, j.label FROM (ja JOIN jb USING (g)) j) SELECT label, count(*) AS n FROM w GROUP BY label$$);
SELECT peek.create_view('j_union', $$SELECT j.label FROM (ja JOIN jb USING (g)) j WHERE j.id <= 3 UNION ALL SELECT j.label FROM (jb JOIN ja USING (g)) j WHERE j.id > 38$$);
SELECT wait_for($$SELECT count(*) = 10 FROM peek.views WHERE state <> 'hydrating' AND state <> 'waiting'$$);
SELECT name, state, failure FROM peek.views ORDER BY name;
SELECT name, query FROM peek.views ORDER BY name;
CREATE TABLE j_times (src text, t bigint);
SELECT views_past_wal('ja_src', 'j_times');
UPDATE ja SET g = (g + 1) % 4 WHERE id BETWEEN 1 AND 6;
DELETE FROM jb WHERE g = 3;
UPDATE jc SET w = w + 1;
SELECT views_past_wal('ja_src', 'j_times');
SELECT name, state FROM peek.views ORDER BY name;
SELECT * FROM views_bad_times_at('j%', 'ja_src|jb_src|jc_src', 'j_times');

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP TABLE ja, jb, jc, j_times;
