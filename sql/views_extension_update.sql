-- An extension's script (ALTER EXTENSION ... UPDATE) that changes what a
-- maintained view uses is guarded as the same DDL outside a script: a new
-- body of a function the view calls or of an operator's function, a value
-- of its enum renamed, the function renamed or dropped are refused with
-- 2BP01 naming the view, the extension stays at its version and the view
-- computes as before.  Before, the guard skipped every extension script:
-- the update went through and the view mixed old and new results, or
-- failed at its next round.  peek_test_ext is installed by scripts/test
-- (test/extensions).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

SELECT test_ext_with_collection('euc', 'eurow', 3);
SELECT peek.create_view('eu_double', $$SELECT k, ext_double(v) AS d FROM peek.persist_peek(NULL::eurow, 'euc')$$);
SELECT peek.create_view('eu_plus', $$SELECT k, k +# v AS p FROM peek.persist_peek(NULL::eurow, 'euc')$$);
SELECT peek.create_view('eu_mood', $$SELECT k, CASE WHEN v > 15 THEN 'high'::ext_mood ELSE 'low'::ext_mood END AS m
                                     FROM peek.persist_peek(NULL::eurow, 'euc')$$);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name LIKE 'eu\_%' AND state = 'ready' AND upper = 1$$);

-- each update is refused, naming the view that uses what it changes
SELECT v, try(format('ALTER EXTENSION peek_test_ext UPDATE TO %L', v))
  FROM unnest(ARRAY['1.1', '1.2', '1.3', '1.4', '1.5']) v;
SELECT extversion FROM pg_extension WHERE extname = 'peek_test_ext';

-- the views compute as before, and follow writes
SELECT peek.write('euc', ARRAY[(4, 40)]::eurow[]);
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE name LIKE 'eu\_%' AND upper = 2$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'eu\_%' ORDER BY name;
SELECT * FROM eu_double ORDER BY k;
SELECT * FROM eu_plus ORDER BY k;
SELECT * FROM eu_mood ORDER BY k;

-- with the view that calls ext_double gone, the update that changes it
-- goes through (the other views use none of it)
SELECT peek.drop_view('eu_double');
ALTER EXTENSION peek_test_ext UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'peek_test_ext';
SELECT ext_double(5);
SELECT peek.write('euc', ARRAY[(5, 50)]::eurow[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.views WHERE name LIKE 'eu\_%' AND upper = 3$$);
SELECT name, state, failure FROM peek.views WHERE name LIKE 'eu\_%' ORDER BY name;
SELECT * FROM eu_plus ORDER BY k;

SELECT peek.drop_view('eu_plus');
SELECT peek.drop_view('eu_mood');
SELECT peek.drop_collection('euc');
DROP TYPE eurow;
DROP EXTENSION peek_test_ext;
