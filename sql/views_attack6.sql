-- A view's kept query (dataflow_plan_text) writes its constants whatever
-- the creator's settings say, in the forms the maintenance runtime reads
-- back alike: before, a date written in the creator's DateStyle 'SQL, DMY'
-- ('01/02/2020', 1 February) was read by the runtime as 2 January, an
-- sql_standard interval '-1 2:00:00' (minus a day and two hours) as -1
-- day +2 hours, a float8 constant at extra_float_digits 0 rounded to 15
-- digits, and a string a\b, written 'a\\b' under standard_conforming_strings
-- off, read back with two backslashes: each view filtered other rows than
-- its query.  Each view is compared with its query under the settings it
-- was made in, at every time, through writes, deletes and a restart.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE va6_r AS (k int, d date, i interval, f float8, s text);
SELECT peek.create_collection('va6_c', 'va6_r');
SELECT peek.write('va6_c', ARRAY[
    (1, '2020-02-01', '-1 day -2 hours', 0.30000000000000004::float8, E'a\\b'),
    (2, '2020-01-02', '-1 day +2 hours', 0.3::float8, E'a\\\\b'),
    (3, '2020-02-01', '-1 day -2 hours', 0.3::float8, E'a\\b')]::va6_r[]);

SET DateStyle = 'SQL, DMY';
SELECT peek.create_view('va6_date', $$
    SELECT k, d FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE d = '01/02/2020'$$);
SELECT peek.create_view('va6_date_g', $$
    SELECT d = '01/02/2020' AS feb, count(*) AS n FROM peek.persist_peek(NULL::va6_r, 'va6_c') GROUP BY 1$$);
RESET DateStyle;
SET IntervalStyle = sql_standard;
SELECT peek.create_view('va6_int', $$
    SELECT k, i FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE i = '-1 2:00:00'$$);
RESET IntervalStyle;
SET extra_float_digits = 0;
SELECT peek.create_view('va6_flt', $$
    SELECT k, f FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE f = '0.30000000000000004'::float8$$);
RESET extra_float_digits;
SET standard_conforming_strings = off;
SET escape_string_warning = off;
SELECT peek.create_view('va6_str', $$
    SELECT k, s FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE s = 'a\\b'$$);
RESET standard_conforming_strings;
RESET escape_string_warning;
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND lag = 0$$);

-- va6_compare(view, query, setting, value): the view against its query
-- under the setting it was made in, at every time
CREATE FUNCTION va6_compare(v text, q text, setting text, value text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE bad text;
BEGIN
    PERFORM set_config(setting, value, true);
    IF setting = 'standard_conforming_strings' THEN
        PERFORM set_config('escape_string_warning', 'off', true);
    END IF;
    bad := view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', v, v),
                           replace(q, '''va6_c''', '''va6_c'', as_of => @T@'),
                           0, (SELECT upper - 1 FROM peek.views WHERE name = v));
    RETURN bad;
END $$;
CREATE TABLE va6_views (v text, q text, setting text, value text);
INSERT INTO va6_views VALUES
    ('va6_date', $$SELECT k, d FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE d = '01/02/2020'$$,
     'DateStyle', 'SQL, DMY'),
    ('va6_date_g', $$SELECT d = '01/02/2020' AS feb, count(*) AS n FROM peek.persist_peek(NULL::va6_r, 'va6_c') GROUP BY 1$$,
     'DateStyle', 'SQL, DMY'),
    ('va6_int', $$SELECT k, i FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE i = '-1 2:00:00'$$,
     'IntervalStyle', 'sql_standard'),
    ('va6_flt', $$SELECT k, f FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE f = '0.30000000000000004'::float8$$,
     'extra_float_digits', '0'),
    ('va6_str', $$SELECT k, s FROM peek.persist_peek(NULL::va6_r, 'va6_c') WHERE s = 'a\\b'$$,
     'standard_conforming_strings', 'off');
-- (the function's SET of each setting is local to its transaction: one
-- statement per view)
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_date';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_date_g';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_int';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_flt';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_str';
-- what each holds now: the rows its query picks, 1 and 3
SELECT 'date' AS v, k FROM va6_date UNION ALL SELECT 'int', k FROM va6_int
 UNION ALL SELECT 'flt', k FROM va6_flt UNION ALL SELECT 'str', k FROM va6_str ORDER BY 1, 2;

-- the rows it took out, the others moved in, and again after a restart
SELECT peek.write('va6_c', ARRAY[
    (4, '2020-02-01', '-1 day -2 hours', 0.30000000000000004::float8, E'a\\b'),
    (5, '2020-01-02', '-1 day +2 hours', 0.3::float8, E'a\\\\b')]::va6_r[],
    ARRAY[(1, '2020-02-01', '-1 day -2 hours', 0.30000000000000004::float8, E'a\\b')]::va6_r[]);
SELECT restart_maintenance();
SELECT peek.write('va6_c', ARRAY[]::va6_r[],
    ARRAY[(3, '2020-02-01', '-1 day -2 hours', 0.3::float8, E'a\\b'),
          (2, '2020-01-02', '-1 day +2 hours', 0.3::float8, E'a\\\\b')]::va6_r[]);
SELECT wait_for($$SELECT count(*) = 5 FROM peek.views WHERE state = 'ready' AND lag = 0$$);
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_date';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_date_g';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_int';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_flt';
SELECT v, va6_compare(v, q, setting, value) AS bad_times FROM va6_views WHERE v = 'va6_str';

-- The kept query read again where a session replaces the PostgreSQL
-- view's body by its own (as pg_restore does) to record what it uses:
-- read in that session's standard_conforming_strings = off, a constant
-- ending in a backslash no longer parsed, the view was left depending on
-- nothing (a WARNING) and the function it calls could be dropped.
CREATE FUNCTION va6_f(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT $1 || '!'$$;
SELECT peek.create_view('va6_dep', $$
    SELECT k, va6_f(s || '\') AS t FROM peek.persist_peek(NULL::va6_r, 'va6_c')$$);
SET standard_conforming_strings = off;
SET escape_string_warning = off;
CREATE OR REPLACE VIEW va6_dep AS SELECT * FROM peek.persist_peek(NULL::va6_dep, 'va6_dep');
RESET standard_conforming_strings;
RESET escape_string_warning;
SELECT try('DROP FUNCTION va6_f(text)');
SELECT wait_for($$SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'va6_dep'$$);
SELECT * FROM va6_dep ORDER BY k;

-- A constraint added to a domain a view casts to: before, it went
-- through, and the delete of a row made before (its cast now failing at
-- its retraction) failed the views while their query over the contents
-- did not fail.  Refused (2BP01, naming the view), the views exact.
CREATE DOMAIN va6_pos AS int;
SELECT peek.create_view('va6_dom', $$
    SELECT k, (k - 5)::va6_pos AS p FROM peek.persist_peek(NULL::va6_r, 'va6_c')$$);
SELECT peek.create_view('va6_dom_g', $$
    SELECT k % 2 AS g, sum((k - 5)::va6_pos) AS p FROM peek.persist_peek(NULL::va6_r, 'va6_c') GROUP BY 1$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'va6_dom%' AND state = 'ready' AND lag = 0$$);
SELECT try('ALTER DOMAIN va6_pos ADD CONSTRAINT va6_pos_check CHECK (VALUE > 0)');
SELECT try('ALTER DOMAIN va6_pos ADD CONSTRAINT va6_pos_check CHECK (VALUE > 0) NOT VALID');
SELECT try('ALTER DOMAIN va6_pos SET NOT NULL');
SELECT try('ALTER DOMAIN va6_pos SET DEFAULT 1');
SELECT peek.write('va6_c', ARRAY[]::va6_r[],
    ARRAY[(4, '2020-02-01', '-1 day -2 hours', 0.30000000000000004::float8, E'a\\b')]::va6_r[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'va6_dom%' AND state = 'ready' AND lag = 0$$);
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             regexp_replace(query, '(''\w+''::text)', '\1, as_of => @T@', 'g'), since, upper - 1) AS bad_times
  FROM peek.views WHERE name LIKE 'va6_dom%' ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION va6_compare(text, text, text, text);
DROP FUNCTION va6_f(text);
DROP DOMAIN va6_pos;
DROP TABLE va6_views;
DROP TYPE va6_r;
