-- A text search configuration's mappings or a dictionary's options
-- changed while a maintained view uses them (a regconfig constant; the
-- dictionary through the configuration) is refused with 2BP01, as a
-- function's body is: a row retracted afterwards would compute another
-- output than the view holds (the view read "multiplicity -1").  A round
-- that runs out of time and whose retry meets a real error (division by
-- zero) fails the view for good (55000 on reading it), as a plain error
-- does.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE vtrow AS (id int, t text);
SELECT peek.create_collection('vtc', 'vtrow');
CREATE TEXT SEARCH DICTIONARY vt_dict (TEMPLATE = simple);
CREATE TEXT SEARCH CONFIGURATION vt_cfg (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION vt_cfg ALTER MAPPING FOR asciiword WITH vt_dict;
SELECT peek.write('vtc', ARRAY[(1, 'the cat'), (2, 'a dog')]::vtrow[]);
SELECT peek.create_view('vtv', $$SELECT id, to_tsvector('vt_cfg'::regconfig, t)::text AS v
                                 FROM peek.persist_peek(NULL::vtrow, 'vtc')$$);
SELECT peek.create_view('vtg', $$SELECT to_tsvector('vt_cfg'::regconfig, t)::text AS v, count(*) AS n
                                 FROM peek.persist_peek(NULL::vtrow, 'vtc') GROUP BY 1$$);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE state = 'ready' AND upper > 0$$);
SELECT * FROM vtv ORDER BY id;
-- what the configuration and dictionary compute, changed
SELECT try($$ALTER TEXT SEARCH DICTIONARY vt_dict (StopWords = english)$$);
SELECT try($$ALTER TEXT SEARCH CONFIGURATION vt_cfg DROP MAPPING FOR asciiword$$);
SELECT try($$ALTER TEXT SEARCH CONFIGURATION vt_cfg OWNER TO CURRENT_USER$$);
SELECT try($$DROP TEXT SEARCH CONFIGURATION vt_cfg$$);
SELECT to_tsvector('vt_cfg'::regconfig, 'the cat')::text;
-- the rows written before retracted, one more written
SELECT peek.write('vtc', ARRAY[(3, 'the bird')]::vtrow[], ARRAY[(1, 'the cat'), (2, 'a dog')]::vtrow[]);
SELECT wait_for($$SELECT bool_and(upper >= 2 OR state = 'failed') FROM peek.views$$);
SELECT name, state, failure FROM peek.views ORDER BY name;
SELECT * FROM vtv ORDER BY id;
SELECT * FROM vtg ORDER BY v;
SELECT * FROM views_bad_times();
-- with the views dropped, they go through
SELECT peek.drop_view('vtv'), peek.drop_view('vtg');
ALTER TEXT SEARCH DICTIONARY vt_dict (StopWords = english);
ALTER TEXT SEARCH CONFIGURATION vt_cfg DROP MAPPING FOR asciiword;
DROP TEXT SEARCH CONFIGURATION vt_cfg;
DROP TEXT SEARCH DICTIONARY vt_dict;

-- a round that runs out of time, then its retry meets a real error: the
-- view fails for good
ALTER SYSTEM SET pg_peek.view_round_timeout = '500ms';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
CREATE FUNCTION vslowdiv(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM pg_sleep(0.2); RETURN 100 / x; END$$;
CREATE TYPE vone AS (x int);
SELECT peek.create_collection('vslow', 'vone');
SELECT peek.write('vslow', ARRAY[ROW(1), ROW(2), ROW(3), ROW(4)]::vone[]);
SELECT peek.create_view('vslowv', $$SELECT vslowdiv(x) AS y FROM peek.persist_peek(NULL::vone, 'vslow')$$);
SELECT wait_for($$SELECT upper > 0 OR state = 'failed' FROM peek.views WHERE name = 'vslowv'$$);
SELECT state, failure FROM peek.views WHERE name = 'vslowv';
-- 0 among four slow rows: the round times out before it, the retry fails
SELECT peek.write('vslow', ARRAY[ROW(5), ROW(6), ROW(7), ROW(0)]::vone[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'vslowv'$$, 60);
SELECT state, failure FROM peek.views WHERE name = 'vslowv';
SELECT try($$SELECT * FROM vslowv$$);
-- a plain division by zero fails at once
SELECT peek.create_view('vdiv', $$SELECT 1 / (x - 9) AS y FROM peek.persist_peek(NULL::vone, 'vslow')$$);
SELECT wait_for($$SELECT upper > 0 OR state = 'failed' FROM peek.views WHERE name = 'vdiv'$$);
SELECT peek.write('vslow', ARRAY[ROW(9)]::vone[]);
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'vdiv'$$);
SELECT state, failure FROM peek.views WHERE name = 'vdiv';
SELECT try($$SELECT * FROM vdiv$$);
ALTER SYSTEM RESET pg_peek.view_round_timeout;
SELECT pg_reload_conf();
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION vslowdiv(int);
DROP TYPE vone, vtrow;
