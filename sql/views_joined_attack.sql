-- Maintained views over several inputs, attacked: a join key class must
-- not join two preserved inputs of a left join through its nullable
-- side.  In a JOIN b ON a.j = b.j LEFT JOIN c ON c.k = a.k AND c.k = b.k
-- the ON's equalities hold only where c has a row, so a and b pair rows
-- of different k: kept by k, a time that touched only a's key ran the
-- query without b's rows (a row changed in a stayed in the view with
-- its old values; a left join of a and b retracted a row it never had:
-- multiplicity -1).  Such a join is refused (0A000); the same shapes
-- whose equalities do make every input's key equal are kept, and agree
-- with their queries at every time through updates that move rows
-- between keys.
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

-- refused: the key class reaches b only through c, which may be NULL
SELECT try($$SELECT peek.create_view('x', 'SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, ''ka'') a
    JOIN peek.persist_peek(NULL::kr, ''kb'') b ON a.j = b.j
    LEFT JOIN peek.persist_peek(NULL::kr, ''kc'') c ON c.k = a.k AND c.k = b.k')$$);
SELECT try($$SELECT peek.create_view('x', 'SELECT a.id AS a, b.id AS b, c.id AS c FROM peek.persist_peek(NULL::kr, ''ka'') a
    LEFT JOIN peek.persist_peek(NULL::kr, ''kb'') b ON a.j = b.j
    LEFT JOIN peek.persist_peek(NULL::kr, ''kc'') c ON c.k = a.k AND c.k = b.k')$$);
-- refused: a.j = b.k in a left join's ON does not make a.j the key (it
-- holds only where b has a row): grouped by a.j, groups would mix keys
SELECT try($$SELECT peek.create_view('x', 'SELECT a.j, count(*) AS n, count(b.id) AS m FROM peek.persist_peek(NULL::kr, ''ka'') a
    LEFT JOIN peek.persist_peek(NULL::kr, ''kb'') b ON a.k = b.k AND a.j = b.k GROUP BY a.j')$$);
SELECT count(*) FROM peek.views WHERE name = 'x';

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
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready' AND upper = 1$$);

-- a's row changes alone; b's row moves between keys; c's last match of
-- a goes and comes back; a NULL key gets a value
SELECT kstep(ARRAY[(3, 1, 5)]::kr[], ARRAY[(1, 1, 5)]::kr[], '{}', '{}', '{}', '{}');
SELECT kstep('{}', '{}', ARRAY[(11, 1, 5)]::kr[], ARRAY[(11, 2, 5)]::kr[], '{}', '{}');
SELECT kstep('{}', '{}', '{}', '{}', '{}', ARRAY[(22, 1, 5)]::kr[]);
SELECT kstep('{}', '{}', '{}', '{}', ARRAY[(22, 1, 7), (23, 1, 7)]::kr[], '{}');
SELECT kstep(ARRAY[(2, 1, 6)]::kr[], ARRAY[(2, NULL, 5)]::kr[], '{}', '{}', '{}', '{}');
SELECT wait_for($$SELECT count(*) = 3 FROM peek.views WHERE state = 'ready' AND upper = 6$$);
SELECT name, view_mismatches(format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
                             regexp_replace(query, '(''k[abc]''::text)', '\1, as_of => @T@', 'g'),
                             0, 5) AS bad_times
  FROM peek.views ORDER BY name;
SELECT * FROM peek.persist_peek(NULL::kleft3, 'kleft3', as_of => 5) ORDER BY a, b, c;

SELECT peek.drop_view(name) FROM peek.views ORDER BY name;
SELECT peek.drop_collection('kc');
SELECT peek.drop_collection('kb');
SELECT peek.drop_collection('ka');
DROP FUNCTION kstep;
DROP TYPE kr;
