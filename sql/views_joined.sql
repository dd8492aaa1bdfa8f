-- Maintained views over more than one input: inner joins (JOIN ... ON and
-- FROM a, b WHERE), a 3-way join, a self-join, a left join (a left row
-- losing and regaining its match), UNION ALL, a join grouped by its join
-- key, and grouped by other keys or by none (two stages); updates of
-- join columns and deletes; every view at every time
-- against PostgreSQL's evaluation of its query over the inputs' persist
-- peeks at that time (EXCEPT ALL both ways); an index peek of one key;
-- what is refused (0A000), time lines mixed, a left join of two sources,
-- 2BP01 on dropping the second input, a revoked right on the second input
-- failing the view, an error failing its view alone, the lag of a view
-- with one input ahead.  The randomized oracle is TAP 370_view_oracle.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE jorder AS (id int, cust int, amount int);
CREATE TYPE jcust AS (id int, name text);
CREATE TYPE jnote AS (cust int, note text);
SELECT peek.create_collection('jorders', 'jorder');
SELECT peek.create_collection('jcusts', 'jcust');
SELECT peek.create_collection('jnotes', 'jnote');
-- one step: each collection written at the same time (its upper)
CREATE FUNCTION jstep(oi jorder[], od jorder[], ci jcust[], cd jcust[], ni jnote[], nd jnote[])
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('jorders', oi, od) + 0 * peek.write('jcusts', ci, cd)
           + 0 * peek.write('jnotes', ni, nd)$$;
SELECT jstep(ARRAY[(1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 9, 40), (5, NULL, 50)]::jorder[], '{}',
             ARRAY[(1, 'ann'), (2, 'bob'), (3, 'cy'), (NULL, 'nobody')]::jcust[], '{}',
             ARRAY[(1, 'vip'), (2, 'new'), (2, 'late')]::jnote[], '{}');

SELECT peek.create_view('jinner', $$
    SELECT o.id, c.name, o.amount * 2 AS double
      FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id
     WHERE o.amount > 5$$);
SELECT peek.create_view('jcomma', $$
    SELECT o.id AS oid, c.name FROM peek.persist_peek(NULL::jorder, 'jorders') o,
           peek.persist_peek(NULL::jcust, 'jcusts') c WHERE c.id = o.cust AND c.name <> 'cy'$$);
SELECT peek.create_view('jthree', $$
    SELECT o.id, c.name, n.note
      FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id
      JOIN peek.persist_peek(NULL::jnote, 'jnotes') n ON n.cust = c.id$$);
SELECT peek.create_view('jleft', $$
    SELECT c.id, c.name, o.id AS order_id, o.amount
      FROM peek.persist_peek(NULL::jcust, 'jcusts') c
      LEFT JOIN peek.persist_peek(NULL::jorder, 'jorders') o ON o.cust = c.id AND o.amount < 35$$);
SELECT peek.create_view('junion', $$
    SELECT cust AS k, 'order' AS what FROM peek.persist_peek(NULL::jorder, 'jorders') WHERE amount > 15
    UNION ALL SELECT id, name FROM peek.persist_peek(NULL::jcust, 'jcusts')
    UNION ALL SELECT o.cust, n.note FROM peek.persist_peek(NULL::jorder, 'jorders') o
              JOIN peek.persist_peek(NULL::jnote, 'jnotes') n ON n.cust = o.cust$$);
SELECT peek.create_view('jself', $$
    SELECT x.id AS first, y.id AS second FROM peek.persist_peek(NULL::jorder, 'jorders') x
      JOIN peek.persist_peek(NULL::jorder, 'jorders') y ON x.cust = y.cust AND x.id < y.id$$);
SELECT peek.create_view('jtotals', $$
    SELECT c.id, c.name, count(o.id) AS orders, sum(o.amount) AS amount, max(o.amount) AS top
      FROM peek.persist_peek(NULL::jcust, 'jcusts') c
      LEFT JOIN peek.persist_peek(NULL::jorder, 'jorders') o ON o.cust = c.id
     GROUP BY c.id, c.name$$);
-- grouped by other keys than the join key, or by none: two stages, the
-- join and the grouping of its rows
SELECT peek.create_view('jregion', $$
    SELECT c.name, count(*) AS n, sum(o.amount) AS amount, min(o.amount) AS low, max(o.amount) AS high
      FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id
     GROUP BY c.name$$);
SELECT peek.create_view('jall', $$
    SELECT count(*) AS n, sum(o.amount) AS amount, max(o.amount) AS top
      FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id$$);
SELECT peek.create_view('jbycust', $$
    SELECT o.cust, count(*) AS n, count(o.id) AS orders
      FROM peek.persist_peek(NULL::jcust, 'jcusts') c
      LEFT JOIN peek.persist_peek(NULL::jorder, 'jorders') o ON o.cust = c.id
     GROUP BY o.cust$$);
SELECT peek.create_view('jnames', $$
    SELECT DISTINCT c.name FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id$$);
SELECT peek.create_view('jnoted', $$
    SELECT n.note, sum(o.amount) AS amount FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jnote, 'jnotes') n ON n.cust = o.cust
     WHERE o.amount > 5
     GROUP BY n.note HAVING sum(o.amount) > 15$$);
SELECT peek.create_view('junion2', $$
    SELECT c.name AS k, count(*) AS n FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id GROUP BY c.name
    UNION ALL SELECT name, 1::bigint FROM peek.persist_peek(NULL::jcust, 'jcusts')$$);
SELECT wait_for($$SELECT count(*) = 13 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT name, inputs, state, since, upper FROM peek.views ORDER BY name;
-- (read at the time: a view's upper in the catalog may be ahead of what
-- is published, which the latest read reads)
SELECT * FROM peek.persist_peek(NULL::jinner, 'jinner', as_of => 0) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::jthree, 'jthree', as_of => 0) ORDER BY id, note;
SELECT * FROM peek.persist_peek(NULL::jleft, 'jleft', as_of => 0) ORDER BY id, order_id;
SELECT * FROM peek.persist_peek(NULL::junion, 'junion', as_of => 0) ORDER BY k, what;
SELECT * FROM peek.persist_peek(NULL::jtotals, 'jtotals', as_of => 0) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::jself, 'jself', as_of => 0) ORDER BY first, second;
SELECT * FROM peek.persist_peek(NULL::jregion, 'jregion', as_of => 0) ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::jall, 'jall', as_of => 0);
SELECT * FROM peek.persist_peek(NULL::jbycust, 'jbycust', as_of => 0) ORDER BY cust;
-- each stage an operator
SELECT view, operator, kind FROM peek.dataflow_operators
 WHERE view IN ('jregion', 'jnames', 'jtotals', 'jinner', 'junion2') ORDER BY view, operator;

-- bob's only order moves to ann (a join column updated): bob loses his
-- match and gets a NULL-extended row; then regains one; an order's
-- amount changes; a customer is deleted and comes back renamed; a note
-- deleted
SELECT jstep(ARRAY[(3, 1, 30)]::jorder[], ARRAY[(3, 2, 30)]::jorder[], '{}', '{}', '{}', '{}');
SELECT jstep(ARRAY[(6, 2, 5)]::jorder[], '{}', '{}', '{}', '{}', ARRAY[(2, 'late')]::jnote[]);
SELECT jstep(ARRAY[(1, 1, 12)]::jorder[], ARRAY[(1, 1, 10)]::jorder[],
             '{}', ARRAY[(1, 'ann')]::jcust[], '{}', '{}');
SELECT jstep('{}', '{}', ARRAY[(1, 'anna'), (9, 'ida')]::jcust[], '{}', ARRAY[(9, 'far')]::jnote[], '{}');
SELECT jstep('{}', ARRAY[(6, 2, 5), (2, 1, 20)]::jorder[], '{}', '{}', '{}', '{}');
SELECT wait_for($$SELECT count(*) = 13 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT * FROM peek.persist_peek(NULL::jleft, 'jleft', as_of => 5) ORDER BY id, order_id;
SELECT * FROM peek.persist_peek(NULL::jleft, 'jleft', as_of => 1) ORDER BY id, order_id;
SELECT * FROM peek.persist_peek(NULL::jleft, 'jleft', as_of => 2) ORDER BY id, order_id;
SELECT * FROM peek.persist_peek(NULL::jthree, 'jthree', as_of => 5) ORDER BY id, note;
SELECT * FROM peek.persist_peek(NULL::jtotals, 'jtotals', as_of => 5) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::jregion, 'jregion', as_of => 5) ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::jall, 'jall', as_of => 5);

-- every view at every time equals its query over the inputs at that time
CREATE FUNCTION jmismatches(view text, query text) RETURNS text LANGUAGE sql AS $f$
    SELECT view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', view, view),
                           regexp_replace(query, '(''j(orders|custs|notes)''::text)', '\1, as_of => @T@', 'g'),
                           0, (SELECT upper - 1 FROM peek.views WHERE name = view))$f$;
SELECT name, jmismatches(name, query) AS bad_times, rows > 0 AS some_rows
  FROM peek.views ORDER BY name;

-- an index on a join, one key's rows
SELECT peek.create_index('jleft_id', 'jleft', ARRAY['id']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'jleft_id'$$);
SELECT * FROM peek.index_peek(NULL::jleft, 'jleft_id', key => ROW(2), as_of => 5) ORDER BY order_id;

-- what joins do not support: 0A000, naming it
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o FULL JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust = c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o RIGHT JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust = c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust < c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o, peek.persist_peek(NULL::jcust, ''jcusts'') c')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust = c.id OR o.id = c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust = c.id JOIN peek.persist_peek(NULL::jnote, ''jnotes'') n ON n.note < c.name')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust::bigint = c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM (peek.persist_peek(NULL::jorder, ''jorders'') o CROSS JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c) LEFT JOIN peek.persist_peek(NULL::jnote, ''jnotes'') n ON o.cust = c.id AND n.cust = c.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::jorder, ''jorders'') UNION SELECT id FROM peek.persist_peek(NULL::jcust, ''jcusts'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::jorder, ''jorders'') EXCEPT ALL SELECT id FROM peek.persist_peek(NULL::jcust, ''jcusts'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::jorder, ''jorders'') UNION ALL SELECT id::bigint FROM peek.persist_peek(NULL::jcust, ''jcusts'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::jorder, ''jorders'') UNION ALL SELECT id FROM peek.persist_peek(NULL::jcust, ''jcusts'') ORDER BY 1')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT id, random() FROM peek.persist_peek(NULL::jorder, ''jorders'') UNION ALL SELECT id, 1 FROM peek.persist_peek(NULL::jcust, ''jcusts'')')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jcusts'') c ON o.cust = c.id AND random() > 0.5')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::jcust, ''jnotes'') c ON o.cust = c.id')$$);

-- inputs on different time lines: a source (commit LSNs), or a view of
-- it, and a collection (logical times)
CREATE TABLE jsrc (id int PRIMARY KEY, name text);
SELECT peek.create_source('jsrc_s', 'jsrc');
SELECT wait_for($$SELECT state = 'ready' FROM peek.collections WHERE name = 'jsrc_s'$$);
SELECT row_type AS src_type FROM peek.collections WHERE name = 'jsrc_s' \gset
SELECT try(format($$SELECT peek.create_view('x', 'SELECT o.id FROM peek.persist_peek(NULL::jorder, ''jorders'') o JOIN peek.persist_peek(NULL::%s, ''jsrc_s'') s ON o.cust = s.id')$$, :'src_type'));
SELECT peek.create_view('jsrcv', format('SELECT id FROM peek.persist_peek(NULL::%s, %L)', :'src_type', 'jsrc_s'));
SELECT try($$SELECT peek.create_view('x', 'SELECT id FROM peek.persist_peek(NULL::jcust, ''jcusts'') UNION ALL SELECT id FROM peek.persist_peek(NULL::jsrcv, ''jsrcv'')')$$);
SELECT peek.drop_view('jsrcv');
SELECT count(*) FROM peek.views WHERE name = 'x';

-- the second input of a view cannot be dropped (2BP01, naming a view)
SELECT try($$SELECT peek.drop_collection('jcusts')$$);
SELECT try($$SELECT peek.drop_collection('jnotes')$$);

-- a join of two sources (both on commit LSNs): transactions that write
-- one table, both, update a join column, delete; the view follows the
-- tables' own join, also through changes to one table only (the other
-- source's upper moves on without changes)
CREATE TABLE jsa (id int PRIMARY KEY, k int);
CREATE TABLE jsb (id int PRIMARY KEY, k int, note text);
INSERT INTO jsa VALUES (1, 1), (2, 2);
INSERT INTO jsb VALUES (1, 1, 'one'), (2, 3, 'three');
SELECT peek.create_source('jsa_s', 'jsa');
SELECT peek.create_source('jsb_s', 'jsb');
SELECT wait_for($$SELECT count(*) = 2 FROM peek.collections WHERE name IN ('jsa_s', 'jsb_s') AND state = 'ready'$$);
SELECT row_type AS jsa_type FROM peek.collections WHERE name = 'jsa_s' \gset
SELECT row_type AS jsb_type FROM peek.collections WHERE name = 'jsb_s' \gset
SELECT peek.create_view('jsrcjoin', format(
    'SELECT a.id, b.note FROM peek.persist_peek(NULL::%s, %L) a LEFT JOIN peek.persist_peek(NULL::%s, %L) b ON a.k = b.k',
    :'jsa_type', 'jsa_s', :'jsb_type', 'jsb_s'));
CREATE FUNCTION jsrc_matches() RETURNS boolean LANGUAGE sql AS $$
    SELECT array_agg((id, note)::text ORDER BY id, note) IS NOT DISTINCT FROM
           (SELECT array_agg((a.id, b.note)::text ORDER BY a.id, b.note)
              FROM jsa a LEFT JOIN jsb b ON a.k = b.k)
      FROM jsrcjoin$$;
INSERT INTO jsa VALUES (3, 3);
BEGIN;
UPDATE jsb SET k = 2 WHERE id = 1;
INSERT INTO jsa VALUES (4, 1);
COMMIT;
SELECT wait_for('SELECT jsrc_matches()');
SELECT * FROM jsrcjoin ORDER BY id, note;
DELETE FROM jsb WHERE id = 2;
INSERT INTO jsb VALUES (3, 1, 'again');
SELECT wait_for('SELECT jsrc_matches()');
SELECT * FROM jsrcjoin ORDER BY id, note;
SELECT peek.drop_view('jsrcjoin');
SELECT peek.drop_source('jsa_s');
SELECT peek.drop_source('jsb_s');
DROP FUNCTION jsrc_matches();
DROP TABLE jsa, jsb;

-- a view whose owner loses the right to read one of its inputs (not the
-- one it owns) takes no more of them: it fails, naming that input
CREATE ROLE peek_join_reader IN ROLE pg_read_all_data;
GRANT CREATE ON SCHEMA public TO peek_join_reader;
GRANT USAGE ON SCHEMA peek TO peek_join_reader;
SET ROLE peek_join_reader;
SELECT peek.create_collection('jmine', 'jcust');
SELECT peek.write('jmine', ARRAY[(1, 'mine'), (2, 'ours')]::jcust[]);
SELECT peek.create_view('jpeek', $$
    SELECT m.id, m.name, c.name AS theirs FROM peek.persist_peek(NULL::jcust, 'jmine') m
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON m.id = c.id$$);
RESET ROLE;
SELECT wait_for($$SELECT upper = 1 FROM peek.views WHERE name = 'jpeek'$$);
SELECT * FROM peek.persist_peek(NULL::jpeek, 'jpeek', as_of => 0) ORDER BY id;
REVOKE pg_read_all_data FROM peek_join_reader;
SET ROLE peek_join_reader;
SELECT peek.write('jmine', ARRAY[(3, 'more')]::jcust[]);
RESET ROLE;
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'jpeek'$$);
SELECT name, state, upper, failure FROM peek.views WHERE name = 'jpeek';
SET ROLE peek_join_reader;
SELECT peek.drop_view('jpeek');
SELECT peek.drop_collection('jmine');
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM peek_join_reader;
REVOKE USAGE ON SCHEMA peek FROM peek_join_reader;
DROP ROLE peek_join_reader;

-- an error in a join's expression fails that view alone (55000)
SELECT peek.create_view('jratio', $$
    SELECT o.id, o.amount / (o.amount - 1) AS ratio
      FROM peek.persist_peek(NULL::jorder, 'jorders') o
      JOIN peek.persist_peek(NULL::jcust, 'jcusts') c ON o.cust = c.id$$);
SELECT wait_for($$SELECT upper = 6 FROM peek.views WHERE name = 'jratio'$$);
SELECT jstep(ARRAY[(7, 1, 1)]::jorder[], '{}', '{}', '{}', '{}', '{}');
SELECT wait_for($$SELECT state = 'failed' FROM peek.views WHERE name = 'jratio'$$);
SELECT name, state, failure FROM peek.views WHERE name = 'jratio';
SELECT try($$SELECT * FROM jratio$$);
SELECT wait_for($$SELECT count(*) = 13 FROM peek.views WHERE state = 'ready' AND upper = 7$$);
SELECT name, jmismatches(name, query) AS bad_times FROM peek.views WHERE state = 'ready' ORDER BY name;

-- lag counts from the least of the inputs' uppers: one input ahead
-- alone leaves the view caught up
SELECT peek.write('jorders', '{}'::jorder[]);
SELECT name, upper, lag FROM peek.views WHERE name IN ('jinner', 'jleft') ORDER BY name;

SELECT peek.drop_view('jratio');
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_source('jsrc_s');
SELECT peek.drop_collection('jnotes');
SELECT peek.drop_collection('jcusts');
SELECT peek.drop_collection('jorders');
