-- Maintained views over several inputs, attacked: a join key class must
-- not join two preserved inputs of a left join through its nullable
-- side.  In a JOIN b ON a.j = b.j LEFT JOIN c ON c.k = a.k AND c.k = b.k
-- the ON's equalities hold only where c has a row, so a and b pair rows
-- of different k: kept by k, a time that touched only a's key ran the
-- query without b's rows (a row changed in a stayed in the view with
-- its old values; a left join of a and b retracted a row it never had:
-- multiplicity -1).  Such a join runs as a chain of stages (a and b by
-- j, then c by (a.k, b.k)); the same shapes whose equalities do make
-- every input's key equal run on one key; all agree
-- with their queries at every time through updates that move rows
-- between keys; so do joins grouped by other keys than their join key or
-- by none (two stages) from empty inputs, with NULL group keys, numeric
-- keys 2.5 and 2.50, a key under a collation, a group emptied and
-- refilled, min and max as their rows go.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE kr AS (id int, k int, j int);
SELECT peek.create_collection('ka', 'kr');
SELECT peek.create_collection('kb', 'kr');
SELECT peek.create_collection('kc', 'kr');
CREATE FUNCTION kstep(ai kr[], ad kr[], bi kr[], bd kr[], ci kr[], cd kr[])
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('ka', ai, ad) + 0 * peek.write('kb', bi, bd)
           + 0 * peek.write('kc', ci, cd)$$;
SELECT kstep(ARRAY[(1, 1, 5), (2, NULL, 5)]::kr[], '{}',
             ARRAY[(11, 2, 5), (12, 1, 6)]::kr[], '{}',
             ARRAY[(21, 9, 9), (22, 1, 5)]::kr[], '{}');

-- no one key: a chain of stages (a and b by j, then their rows and c by
-- the pair (a.k, b.k) against (c.k, c.k)), so a time that touches only
-- a's key still joins b's rows
SELECT peek.create_view('kchain', $$
    SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, 'ka') a
      JOIN peek.persist_peek(NULL::kr, 'kb') b ON a.j = b.j
      LEFT JOIN peek.persist_peek(NULL::kr, 'kc') c ON c.k = a.k AND c.k = b.k$$);
SELECT peek.create_view('kchainleft', $$
    SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, 'ka') a
      LEFT JOIN peek.persist_peek(NULL::kr, 'kb') b ON a.j = b.j
      LEFT JOIN peek.persist_peek(NULL::kr, 'kc') c ON c.k = a.k AND c.k = b.k$$);

-- kept: the preserved inputs are joined on the key themselves, or an
-- inner join's ON makes the keys equal
SELECT peek.create_view('kleft3', $$
    SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, 'ka') a
      LEFT JOIN peek.persist_peek(NULL::kr, 'kb') b ON a.k = b.k
      LEFT JOIN peek.persist_peek(NULL::kr, 'kc') c ON c.k = a.k AND c.k = b.k$$);
SELECT peek.create_view('kinner3', $$
    SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, 'ka') a
      LEFT JOIN peek.persist_peek(NULL::kr, 'kb') b ON a.j = b.j
      JOIN peek.persist_peek(NULL::kr, 'kc') c ON c.k = a.k AND c.k = b.k$$);
SELECT peek.create_view('knull', $$
    SELECT a.id AS a, c.id AS c, c.j FROM peek.persist_peek(NULL::kr, 'ka') a
      LEFT JOIN peek.persist_peek(NULL::kr, 'kc') c ON c.k = a.k AND c.j > 5$$);
-- a.j = b.k in a left join's ON does not make a.j the key (it holds only
-- where b has a row): grouped by a.j, the join's rows (by a.k) are
-- grouped in a stage of their own
SELECT peek.create_view('kgroupj', $$
    SELECT a.j, count(*) AS n, count(b.id) AS m FROM peek.persist_peek(NULL::kr, 'ka') a
      LEFT JOIN peek.persist_peek(NULL::kr, 'kb') b ON a.k = b.k AND a.j = b.k GROUP BY a.j$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND upper = 1$$);

-- a's row changes alone; b's row moves between keys; c's last match of
-- a goes and comes back; a NULL key gets a value
SELECT kstep(ARRAY[(3, 1, 5)]::kr[], ARRAY[(1, 1, 5)]::kr[], '{}', '{}', '{}', '{}');
SELECT kstep('{}', '{}', ARRAY[(11, 1, 5)]::kr[], ARRAY[(11, 2, 5)]::kr[], '{}', '{}');
SELECT kstep('{}', '{}', '{}', '{}', '{}', ARRAY[(22, 1, 5)]::kr[]);
SELECT kstep('{}', '{}', '{}', '{}', ARRAY[(22, 1, 7), (23, 1, 7)]::kr[], '{}');
SELECT kstep(ARRAY[(2, 1, 6)]::kr[], ARRAY[(2, NULL, 5)]::kr[], '{}', '{}', '{}', '{}');
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             regexp_replace(query, '(''k[abc]''::text)', '\1, as_of => @T@', 'g'),
                             0, 5) AS bad_times
  FROM peek.views ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::kleft3, 'kleft3', as_of => 5) ORDER BY a, b, c;
SELECT * FROM peek.persist_peek(NULL::kchain, 'kchain', as_of => 5) ORDER BY a, b, c;

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('kc');
SELECT peek.drop_collection('kb');
SELECT peek.drop_collection('ka');
DROP FUNCTION kstep;
DROP TYPE kr;

-- joins grouped by other keys than the join key, or by none, from empty
-- inputs: NULL group keys (a NULL column, a NULL-extended row), numeric
-- keys equal but not binary-equal (2.5, 2.50), a key under collation
-- "C", a group emptied and refilled, min and max as their rows go
CREATE TYPE kn AS (id int, k int, g numeric, t text);
SELECT peek.create_collection('na', 'kn');
SELECT peek.create_collection('nb', 'kn');
CREATE FUNCTION nstep(ai kn[], ad kn[], bi kn[], bd kn[])
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('na', ai, ad) + 0 * peek.write('nb', bi, bd)$$;
SELECT peek.create_view('ngnum', $$
    SELECT b.g, count(*) AS n, min(a.id) AS low, max(a.id) AS high, sum(a.g) AS total
      FROM peek.persist_peek(NULL::kn, 'na') a JOIN peek.persist_peek(NULL::kn, 'nb') b ON a.k = b.k
     GROUP BY b.g$$);
SELECT peek.create_view('ngtext', $$
    SELECT b.t COLLATE "C" AS t, count(*) AS n, max(a.t) AS top
      FROM peek.persist_peek(NULL::kn, 'na') a JOIN peek.persist_peek(NULL::kn, 'nb') b ON a.k = b.k
     GROUP BY b.t COLLATE "C"$$);
SELECT peek.create_view('nall', $$
    SELECT count(*) AS n, count(b.id) AS matched, min(b.g) AS low, max(b.g) AS high, sum(b.g) AS total
      FROM peek.persist_peek(NULL::kn, 'na') a LEFT JOIN peek.persist_peek(NULL::kn, 'nb') b ON a.k = b.k$$);
SELECT peek.create_view('nleftg', $$
    SELECT b.g, count(*) AS n, count(b.id) AS matched
      FROM peek.persist_peek(NULL::kn, 'na') a LEFT JOIN peek.persist_peek(NULL::kn, 'nb') b ON a.k = b.k
     GROUP BY b.g HAVING count(*) > 0$$);
-- na empty; then rows; a group emptied, refilled; the max and min go
SELECT nstep('{}', '{}', ARRAY[(11, 1, 2.5, 'b'), (12, 2, 2.50, 'B'), (13, 3, NULL, 'a')]::kn[], '{}');
SELECT nstep(ARRAY[(1, 1, 1, 'x'), (2, 2, 2, 'y'), (3, 3, 3, 'z'), (4, 4, 4, 'w'), (5, NULL, 5, NULL)]::kn[], '{}', '{}', '{}');
SELECT nstep('{}', ARRAY[(1, 1, 1, 'x'), (2, 2, 2, 'y')]::kn[], '{}', '{}');
SELECT nstep(ARRAY[(6, 2, 6, 'v')]::kn[], '{}', ARRAY[(14, 4, 2.50, 'b')]::kn[], ARRAY[(12, 2, 2.50, 'B')]::kn[]);
SELECT nstep('{}', ARRAY[(3, 3, 3, 'z')]::kn[], ARRAY[(12, 2, 9, 'c')]::kn[], ARRAY[(11, 1, 2.5, 'b')]::kn[]);
SELECT nstep(ARRAY[(1, 1, 1, 'x')]::kn[], ARRAY[(6, 2, 6, 'v')]::kn[], ARRAY[(11, 1, 2.5, 'b')]::kn[], ARRAY[(14, 4, 2.50, 'b')]::kn[]);
SELECT wait_for($$SELECT count(*) = 4 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             regexp_replace(query, '(''n[ab]''::text)', '\1, as_of => @T@', 'g'),
                             0, 5) AS bad_times
  FROM peek.views ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::ngnum, 'ngnum', as_of => 1) ORDER BY g;
SELECT * FROM peek.persist_peek(NULL::nall, 'nall', as_of => 0);
SELECT * FROM peek.persist_peek(NULL::nall, 'nall', as_of => 5);
SELECT * FROM peek.persist_peek(NULL::nleftg, 'nleftg', as_of => 5) ORDER BY g;
SELECT view, operator, kind FROM peek.dataflow_operators WHERE view = 'nall' ORDER BY operator;
SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('nb');
SELECT peek.drop_collection('na');
DROP FUNCTION nstep;
DROP TYPE kn;
