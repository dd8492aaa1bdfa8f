-- Maintained views joining inputs on different keys: a chain of binary
-- join stages in FROM order (order lines -> orders -> customers ->
-- regions), inner and left joins, grouped by other keys, by none, DISTINCT
-- or not, a key of two earlier inputs, numeric keys 2.5 and 2.50, NULL
-- keys; updates of join columns on both sides at one time, deletes, rows
-- twice, a rolled-back write; every view at every time against
-- PostgreSQL's evaluation of its query over the inputs' persist peeks at
-- that time, and by an index; each stage an operator; what is refused
-- (0A000, naming it).  The randomized oracle is TAP 370_view_oracle.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE cline AS (id int, ord int, qty int, price numeric);
CREATE TYPE cord AS (id int, cust numeric, status text);
CREATE TYPE ccust AS (id numeric, region text, name text);
CREATE TYPE cregion AS (region text, zone text);
SELECT peek.create_collection('clines', 'cline');
SELECT peek.create_collection('cords', 'cord');
SELECT peek.create_collection('ccusts', 'ccust');
SELECT peek.create_collection('cregions', 'cregion');
-- one step: each collection written at the same time (its upper)
CREATE FUNCTION cstep(li cline[], ld cline[], oi cord[], od cord[], ci ccust[], cd ccust[],
                      ri cregion[], rd cregion[])
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('clines', li, ld) + 0 * peek.write('cords', oi, od)
           + 0 * peek.write('ccusts', ci, cd) + 0 * peek.write('cregions', ri, rd)$$;
-- order 3's customer is 2.50 (customer 2.5); order 4's is NULL; customer
-- NULL has no orders; line 7 is there twice; line 8's order is missing
SELECT cstep(ARRAY[(1, 1, 2, 1.5), (2, 1, 1, 10), (3, 2, 5, 2), (4, 3, 1, 7), (5, 4, 3, 1),
                   (6, 5, 1, 4), (7, 3, 2, 2.5), (7, 3, 2, 2.5), (8, 9, 1, 1)]::cline[], '{}',
             ARRAY[(1, 1, 'open'), (2, 1, 'paid'), (3, 2.50, 'open'), (4, NULL, 'open'),
                   (5, 7, 'paid')]::cord[], '{}',
             ARRAY[(1, 'north', 'ann'), (2.5, 'south', 'bob'), (NULL, 'north', 'nobody'),
                   (7, NULL, 'cy')]::ccust[], '{}',
             ARRAY[('north', 'cold'), ('south', 'warm'), ('east', 'warm')]::cregion[], '{}');

-- inner, three inputs on two keys
SELECT peek.create_view('cinner', $$
    SELECT l.id, l.qty, o.status, c.name
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON o.cust = c.id$$);
-- FROM a, c, b WHERE: inner joins in the order their equalities allow
-- (lines, orders, customers), a filter on the last input and one across two
SELECT peek.create_view('ccomma', $$
    SELECT l.id, c.name FROM peek.persist_peek(NULL::cline, 'clines') l,
           peek.persist_peek(NULL::ccust, 'ccusts') c, peek.persist_peek(NULL::cord, 'cords') o
     WHERE l.ord = o.id AND c.id = o.cust AND c.name <> 'cy' AND l.qty * l.price > 2$$);
-- left joins: a line without its order, an order without its customer
SELECT peek.create_view('cleft', $$
    SELECT l.id AS line, o.id AS ord, c.name, r.zone
      FROM peek.persist_peek(NULL::cline, 'clines') l
      LEFT JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      LEFT JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON c.id = o.cust AND c.name <> 'nobody'
      LEFT JOIN peek.persist_peek(NULL::cregion, 'cregions') r ON r.region = c.region$$);
-- inner then left, WHERE on the nullable side after its join
SELECT peek.create_view('cinnerleft', $$
    SELECT l.id, o.status, c.name
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      LEFT JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON o.cust = c.id
     WHERE c.name IS NULL OR c.region = 'north'$$);
-- grouped by another input's column: the chain, then the grouping
SELECT peek.create_view('czone', $$
    SELECT r.zone, count(*) AS lines, sum(l.qty * l.price) AS amount, max(l.price) AS top
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON o.cust = c.id
      JOIN peek.persist_peek(NULL::cregion, 'cregions') r ON r.region = c.region
     GROUP BY r.zone HAVING count(*) > 0$$);
-- by none, over a left join
SELECT peek.create_view('cwhole', $$
    SELECT count(*) AS n, count(c.id) AS known, sum(l.qty) AS qty
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      LEFT JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON o.cust = c.id$$);
SELECT peek.create_view('cdistinct', $$
    SELECT DISTINCT c.region, o.status
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON o.cust = c.id$$);
-- a key of two earlier inputs: customers by (order's customer, line's
-- quantity) against (id, id)
SELECT peek.create_view('ctwo', $$
    SELECT l.id, o.id AS ord, c.name
      FROM peek.persist_peek(NULL::cline, 'clines') l
      JOIN peek.persist_peek(NULL::cord, 'cords') o ON l.ord = o.id
      LEFT JOIN peek.persist_peek(NULL::ccust, 'ccusts') c ON c.id = o.cust AND c.id = l.qty$$);
SELECT wait_for($$SELECT count(*) = 8 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT * FROM peek.persist_peek(NULL::cinner, 'cinner', as_of => 0) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::cleft, 'cleft', as_of => 0) ORDER BY line, ord;
SELECT * FROM peek.persist_peek(NULL::czone, 'czone', as_of => 0) ORDER BY zone;
SELECT * FROM peek.persist_peek(NULL::ctwo, 'ctwo', as_of => 0) ORDER BY id;
-- each stage an operator: a join per input after the first, then the grouping
SELECT view, operator, kind FROM peek.dataflow_operators
 WHERE view IN ('cinner', 'cleft', 'czone') ORDER BY view, operator;

-- line 4 moves to order 1 while order 1 moves to customer 2.5 (join
-- columns of both sides of both stages at one time); order 3 is deleted
-- as customer 2.5 is renamed
SELECT cstep(ARRAY[(4, 1, 1, 7)]::cline[], ARRAY[(4, 3, 1, 7)]::cline[],
             ARRAY[(1, 2.5, 'open')]::cord[], ARRAY[(1, 1, 'open')]::cord[], '{}', '{}', '{}', '{}');
SELECT cstep('{}', '{}', '{}', ARRAY[(3, 2.50, 'open')]::cord[],
             ARRAY[(2.50, 'south', 'bobby')]::ccust[], ARRAY[(2.5, 'south', 'bob')]::ccust[], '{}', '{}');
-- a rolled-back write changes nothing
BEGIN;
SELECT cstep('{}', ARRAY[(1, 1, 2, 1.5)]::cline[], '{}', '{}', '{}', '{}', '{}', '{}') > 0 AS wrote;
ROLLBACK;
-- one copy of line 7 goes; order 3 comes back with customer 7 (region
-- NULL); north becomes east's zone; the NULL-id customer gets an id
SELECT cstep('{}', ARRAY[(7, 3, 2, 2.5)]::cline[], ARRAY[(3, 7, 'paid')]::cord[], '{}',
             ARRAY[(3, 'north', 'dee')]::ccust[], ARRAY[(NULL, 'north', 'nobody')]::ccust[],
             ARRAY[('north', 'warm')]::cregion[], ARRAY[('north', 'cold')]::cregion[]);
-- lines and orders all deleted, then some back
SELECT cstep('{}', ARRAY[(1, 1, 2, 1.5), (2, 1, 1, 10), (3, 2, 5, 2), (4, 1, 1, 7), (5, 4, 3, 1),
                         (6, 5, 1, 4), (7, 3, 2, 2.5), (8, 9, 1, 1)]::cline[],
             '{}', ARRAY[(1, 2.5, 'open'), (2, 1, 'paid'), (3, 7, 'paid'), (4, NULL, 'open'),
                         (5, 7, 'paid')]::cord[], '{}', '{}', '{}', '{}');
SELECT cstep(ARRAY[(9, 6, 3, 3), (10, 6, 1, 1)]::cline[], '{}', ARRAY[(6, 3, 'open')]::cord[], '{}',
             '{}', '{}', '{}', '{}');
SELECT wait_for($$SELECT count(*) = 8 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT * FROM peek.persist_peek(NULL::cinner, 'cinner', as_of => 1) ORDER BY id;
SELECT * FROM peek.persist_peek(NULL::czone, 'czone', as_of => 3) ORDER BY zone;
SELECT * FROM peek.persist_peek(NULL::cwhole, 'cwhole', as_of => 4);
SELECT * FROM peek.persist_peek(NULL::cleft, 'cleft', as_of => 5) ORDER BY line, ord;

-- every view at every time equals its query over the inputs at that time
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             regexp_replace(query, '(''c(lines|ords|custs|regions)''::text)', '\1, as_of => @T@', 'g'),
                             0, 5) AS bad_times, rows > 0 AS some_rows
  FROM peek.views ORDER BY name;
-- an index on a chained view, one key's rows
SELECT peek.create_index('cleft_line', 'cleft', ARRAY['line']);
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'cleft_line'$$);
SELECT * FROM peek.index_peek(NULL::cleft, 'cleft_line', key => ROW(4), as_of => 1) ORDER BY ord;
SELECT * FROM peek.index_peek(NULL::cleft, 'cleft_line', key => ROW(9), as_of => 5) ORDER BY ord;

-- what chains do not support: 0A000, naming it
-- an input with no equality to the others (or, with a left join, to the
-- inputs before it in FROM)
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l, peek.persist_peek(NULL::ccust, ''ccusts'') c, peek.persist_peek(NULL::cord, ''cords'') o WHERE l.ord = o.id AND c.name = ''ann''')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l CROSS JOIN peek.persist_peek(NULL::ccust, ''ccusts'') c JOIN peek.persist_peek(NULL::cord, ''cords'') o ON l.ord = o.id AND o.cust = c.id LEFT JOIN peek.persist_peek(NULL::cregion, ''cregions'') r ON r.region = c.region')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l JOIN peek.persist_peek(NULL::cord, ''cords'') o ON l.ord = o.id JOIN peek.persist_peek(NULL::ccust, ''ccusts'') c ON o.cust < c.id')$$);
-- a left join's nullable side a join, or joined by no equality
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l LEFT JOIN (peek.persist_peek(NULL::cord, ''cords'') o JOIN peek.persist_peek(NULL::ccust, ''ccusts'') c ON o.cust = c.id) ON l.ord = o.id')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l JOIN peek.persist_peek(NULL::cord, ''cords'') o ON l.ord = o.id LEFT JOIN peek.persist_peek(NULL::ccust, ''ccusts'') c ON o.cust > c.id AND l.qty = 1')$$);
-- an equality of two types
SELECT try($$SELECT peek.create_view('x', 'SELECT l.id FROM peek.persist_peek(NULL::cline, ''clines'') l JOIN peek.persist_peek(NULL::cord, ''cords'') o ON l.ord = o.id JOIN peek.persist_peek(NULL::ccust, ''ccusts'') c ON c.id::bigint = l.ord')$$);
-- more stages than a view's operators: seven joins then a grouping
SELECT try($$SELECT peek.create_view('x', 'SELECT count(*) FROM peek.persist_peek(NULL::cline, ''clines'') a
    JOIN peek.persist_peek(NULL::cline, ''clines'') b ON b.id = a.ord JOIN peek.persist_peek(NULL::cline, ''clines'') c ON c.id = b.ord
    JOIN peek.persist_peek(NULL::cline, ''clines'') d ON d.id = c.ord JOIN peek.persist_peek(NULL::cline, ''clines'') e ON e.id = d.ord
    JOIN peek.persist_peek(NULL::cline, ''clines'') f ON f.id = e.ord JOIN peek.persist_peek(NULL::cline, ''clines'') g ON g.id = f.ord
    JOIN peek.persist_peek(NULL::cline, ''clines'') h ON h.id = g.ord')$$);
SELECT count(*) FROM peek.views WHERE name = 'x';

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection(name) FROM peek.collections
 WHERE name IN ('clines', 'cords', 'ccusts', 'cregions') ORDER BY name;
DROP FUNCTION cstep;
DROP TYPE cline, cord, ccust, cregion;
