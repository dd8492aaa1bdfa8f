-- Attacks on the kept outputs (outputs.c) and chained join stages: keys
-- NULL on a left join's preserved side, a NULL-extended input whose key
-- expression is not NULL (ON i.k = coalesce(n.k, -1)), grouping by
-- expressions, by a column not selected, by numeric 2.5/2.50, float
-- -0/0/NaN, text under a nondeterministic collation, HAVING emptying and
-- refilling a group, output columns named like the keys appended, UNION
-- ALL, self-joins, chains, views over views, runtime restarts between
-- times and during a catch-up, groupings over joins (by the second
-- input's key, by an expression, none), a chain's later stage keyed by a
-- non-strict expression.  Every view at every time against its
-- query over its inputs at that time (as rows; as text where a group's
-- representative image is not arbitrary).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE aitem AS (k int, x numeric, t text, f float8);
CREATE TYPE aname AS (k int, label text);
SELECT peek.create_collection('aitems', 'aitem');
SELECT peek.create_collection('anames', 'aname');
CREATE FUNCTION astep(ii aitem[], id aitem[], ni aname[] DEFAULT '{}', nd aname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('aitems', ii, id) + 0 * peek.write('anames', ni, nd)$$;
CREATE FUNCTION amismatches(view text, astext bool DEFAULT false) RETURNS text
LANGUAGE sql AS $f$
    SELECT view_mismatches(
        format(CASE WHEN astext THEN 'SELECT v::text FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v'
               ELSE 'SELECT v.* FROM peek.persist_peek(NULL::%I, %L, as_of => @T@) v' END, view, view),
        format(CASE WHEN astext THEN 'SELECT q::text FROM (%s) q' ELSE 'SELECT q.* FROM (%s) q' END,
               regexp_replace(query, '''([ab]items|[ab]names|amod|anotsel|ahaving|aleft)''::text', '''\1''::text, as_of => @T@', 'g')),
        since, upper - 1)
      FROM peek.views WHERE name = view$f$;

SELECT astep(ARRAY[(1, 2.5, 'A', 0.0), (1, 2.50, 'a', -0.0), (NULL, 1, NULL, 'NaN'),
                   (NULL, 3, 'b', 'NaN'), (4, 2, 'B', 1), (5, 1, 'c', NULL)]::aitem[], '{}',
             ARRAY[(1, 'one'), (4, 'four'), (NULL, 'none'), (6, 'six')]::aname[]);

CREATE VIEW acandidates(name, q) AS VALUES
 ('amod', $$SELECT k % 3 AS m, count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k % 3$$),
 ('alower', $$SELECT lower(t) AS l, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY lower(t)$$),
 ('anotsel', $$SELECT count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k$$),
 ('anum', $$SELECT x, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY x$$),
 ('afloat', $$SELECT f, count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY f$$),
 ('ahaving', $$SELECT k, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k HAVING count(*) > 1$$),
 ('adistinct', $$SELECT DISTINCT count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k$$),
 ('adistjoin', $$SELECT DISTINCT n.label FROM peek.persist_peek(NULL::aitem, 'aitems') i JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k$$),
 ('aleftgrpn', $$SELECT n.k, count(*) AS c FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k GROUP BY n.k$$),
 ('aleftgrpi', $$SELECT i.k, count(n.label) AS c FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k GROUP BY i.k$$),
 ('aleftlabel', $$SELECT n.label, count(*) AS c, sum(i.x) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k GROUP BY n.label$$),
 ('aleft', $$SELECT i.k, i.x, n.label FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k$$),
 ('aself', $$SELECT a.k, a.x, b.x AS y FROM peek.persist_peek(NULL::aitem, 'aitems') a JOIN peek.persist_peek(NULL::aitem, 'aitems') b ON a.k = b.k$$),
 ('aself3', $$SELECT a.k, b.t, c.f FROM peek.persist_peek(NULL::aitem, 'aitems') a JOIN peek.persist_peek(NULL::aitem, 'aitems') b ON a.k = b.k LEFT JOIN peek.persist_peek(NULL::aitem, 'aitems') c ON c.t = b.t$$),
 ('aselfleft', $$SELECT a.k, b.k AS bk, count(*) AS c FROM peek.persist_peek(NULL::aitem, 'aitems') a LEFT JOIN peek.persist_peek(NULL::aitem, 'aitems') b ON a.t = b.t GROUP BY a.k, b.k$$),
 ('aunion', $$SELECT k, sum(x) AS s FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k UNION ALL SELECT k, x FROM peek.persist_peek(NULL::aitem, 'aitems')$$),
 ('arollup', $$SELECT k, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY ROLLUP (k)$$),
 ('asrf', $$SELECT k, generate_series(1, count(*)::int) AS g FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k$$),
 ('aconst', $$SELECT 1 AS one FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k$$),
 ('achain', $$SELECT i.k, n.label, m.x FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k LEFT JOIN peek.persist_peek(NULL::aitem, 'aitems') m ON m.t = n.label$$),
 ('achaingrp', $$SELECT n.label, count(*) AS c FROM peek.persist_peek(NULL::aitem, 'aitems') i LEFT JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k LEFT JOIN peek.persist_peek(NULL::aitem, 'aitems') m ON m.t = n.label GROUP BY n.label$$),
 ('agrpjoinexpr', $$SELECT i.k % 2 AS p, count(*) AS c FROM peek.persist_peek(NULL::aitem, 'aitems') i JOIN peek.persist_peek(NULL::aname, 'anames') n ON i.k = n.k GROUP BY i.k % 2$$),
 ('acountdist', $$SELECT k, count(DISTINCT x) AS d, count(*) FILTER (WHERE x > 1) AS big FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY k$$),
 ('anullgrp', $$SELECT nullif(k, 4) AS k4, count(*) AS n FROM peek.persist_peek(NULL::aitem, 'aitems') GROUP BY nullif(k, 4)$$);

SELECT name, try(format('SELECT peek.create_view(%L, %L)', name, q)) AS made FROM acandidates;
SELECT wait_for($$SELECT bool_and(state <> 'hydrating' AND upper >= 1) FROM peek.views$$);
-- views over views
SELECT name, try(format('SELECT peek.create_view(%L, %L)', name, q)) AS made
  FROM (VALUES
     ('avv1', $q$SELECT m, n FROM peek.persist_peek(NULL::amod, 'amod') WHERE m IS NULL OR m > 0$q$),
     ('avv2', $q$SELECT n, count(*) AS c FROM peek.persist_peek(NULL::anotsel, 'anotsel') GROUP BY n$q$),
     ('avv3', $q$SELECT a.k, a.n, l.label FROM peek.persist_peek(NULL::ahaving, 'ahaving') a LEFT JOIN peek.persist_peek(NULL::aleft, 'aleft') l ON a.k = l.k$q$)) v(name, q);
SELECT wait_for($$SELECT bool_and(state <> 'hydrating' AND upper >= 1) FROM peek.views$$);

SELECT astep(ARRAY[(1, 2.500, 'a', 0.0)]::aitem[], '{}');
SELECT astep('{}', ARRAY[(1, 2.5, 'A', 0.0)]::aitem[]);
SELECT astep(ARRAY[(NULL, 7, 'four', -0.0), (2, 1, 'one', 'NaN')]::aitem[], ARRAY[(4, 2, 'B', 1)]::aitem[],
             ARRAY[(NULL, 'b'), (5, 'c')]::aname[], ARRAY[(NULL, 'none')]::aname[]);
SELECT astep(ARRAY[(4, 2, 'B', 1), (4, 2.0, 'b', 1)]::aitem[], ARRAY[(NULL, 1, NULL, 'NaN')]::aitem[]);
SELECT wait_for($$SELECT bool_and(upper >= 5 OR state <> 'ready') FROM peek.views$$);
SELECT restart_maintenance();
SELECT astep(ARRAY[(NULL, 5, 'four', 'NaN')]::aitem[], ARRAY[(NULL, 3, 'b', 'NaN')]::aitem[],
             ARRAY[(NULL, 'none')]::aname[], ARRAY[(1, 'one')]::aname[]);
SELECT astep(ARRAY[(1, 9, 'one', -0.0)]::aitem[], ARRAY[(1, 2.50, 'a', -0.0)]::aitem[],
             ARRAY[(1, 'one')]::aname[], '{}');
SELECT astep('{}', ARRAY[(4, 2, 'B', 1), (4, 2.0, 'b', 1)]::aitem[]);
SELECT astep(ARRAY[(4, 2, 'B', 1), (4, 2.0, 'b', 1)]::aitem[], '{}');
SELECT wait_for($$SELECT bool_and(upper >= 9 OR state <> 'ready') FROM peek.views$$);
SELECT name, state, upper, failure FROM peek.views ORDER BY name;
SELECT name, amismatches(name) AS bad, CASE WHEN name NOT IN ('anum', 'bcoll') THEN amismatches(name, true) END AS bad_text FROM peek.views
 WHERE state = 'ready' ORDER BY name;

-- round 2
CREATE COLLATION aci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TYPE bitem AS (k int, t text COLLATE aci, x numeric);
CREATE TYPE bname AS (k int, t text, label text);
SELECT peek.create_collection('bitems', 'bitem');
SELECT peek.create_collection('bnames', 'bname');
CREATE FUNCTION bstep(ii bitem[], id bitem[], ni bname[] DEFAULT '{}', nd bname[] DEFAULT '{}')
RETURNS bigint LANGUAGE sql AS $$
    SELECT peek.write('bitems', ii, id) + 0 * peek.write('bnames', ni, nd)$$;
SELECT bstep(ARRAY[(1, 'abc', 1), (2, 'ABC', 2), (NULL, 'x', 3), (NULL, NULL, 4), (-1, 'Q', 5)]::bitem[], '{}',
             ARRAY[(1, 'Abc', 'one'), (NULL, 'X', 'nul'), (-1, 'q', 'minus')]::bname[]);
SELECT name, try(format('SELECT peek.create_view(%L, %L)', name, q)) AS made
  FROM (VALUES
     ('bcoll', $q$SELECT t, count(*) AS n, sum(x) AS s FROM peek.persist_peek(NULL::bitem, 'bitems') GROUP BY t$q$),
     ('bcolljoin', $q$SELECT i.k, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.t = n.t COLLATE aci$q$),
     ('bcollleft', $q$SELECT i.x, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.t = n.t COLLATE aci$q$),
     ('bnonstrict', $q$SELECT i.k, i.x, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = coalesce(n.k, -1)$q$),
     ('bnonstrictg', $q$SELECT n.label, count(*) AS c FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = coalesce(n.k, -1) GROUP BY n.label$q$),
     ('bnonstrict1', $q$SELECT i.k, i.x, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON coalesce(i.k, -1) = n.k$q$),
     ('bright', $q$SELECT i.k, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i RIGHT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k$q$),
     ('bfull', $q$SELECT i.k, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i FULL JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k$q$),
     ('bnames2', $q$SELECT k % 2 AS "coalesce", k % 2 AS "?column?", count(*) AS k FROM peek.persist_peek(NULL::bitem, 'bitems') GROUP BY k % 2$q$),
     ('bnow', $q$SELECT k, count(*) AS n, now() AS at FROM peek.persist_peek(NULL::bitem, 'bitems') GROUP BY k$q$),
     ('bstable', $q$SELECT k, count(*) AS n, to_char(sum(x), 'FM999D99') AS s FROM peek.persist_peek(NULL::bitem, 'bitems') GROUP BY k$q$),
     ('bisnull', $q$SELECT i.k, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON (i.k IS NULL) = (n.k IS NULL)$q$),
     ('bmulti', $q$SELECT i.k, i.t, n.label FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k AND i.t = n.t COLLATE aci$q$)
     ) v(name, q);
SELECT wait_for($$SELECT bool_and(state <> 'hydrating' AND upper >= 1) FROM peek.views WHERE name LIKE 'b%'$$);
SELECT bstep(ARRAY[(NULL, 'y', 6)]::bitem[], '{}');
SELECT bstep(ARRAY[(3, 'aBc', 7)]::bitem[], ARRAY[(1, 'abc', 1)]::bitem[], ARRAY[(NULL, 'Y', 'nul2')]::bname[], '{}');
SELECT bstep(ARRAY[(-1, 'z', 8)]::bitem[], ARRAY[(NULL, 'x', 3)]::bitem[], '{}', ARRAY[(-1, 'q', 'minus')]::bname[]);
SELECT bstep(ARRAY[(NULL, 'x', 3)]::bitem[], '{}', ARRAY[(-1, 'q', 'minus')]::bname[], '{}');
SELECT wait_for($$SELECT bool_and(upper >= 5 OR state <> 'ready') FROM peek.views WHERE name LIKE 'b%'$$);
-- restart, then writes while it catches up, and again
SELECT pid AS maintenance_pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo') \gset
SELECT pg_terminate_backend(:maintenance_pid);
SELECT bstep(ARRAY[(NULL, 'w', 9), (2, 'abC', 10)]::bitem[], ARRAY[(NULL, 'y', 6)]::bitem[]);
SELECT bstep(ARRAY[(1, 'ABC', 11)]::bitem[], ARRAY[(2, 'abC', 10)]::bitem[], ARRAY[(2, 'abc', 'two')]::bname[], ARRAY[(1, 'Abc', 'one')]::bname[]);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.runtimes
                   WHERE role IN ('maintenance', 'solo') AND state = 'running' AND pid <> $$ || :maintenance_pid);
SELECT pid AS maintenance_pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo') \gset
SELECT bstep(ARRAY[(NULL, 'v', 12)]::bitem[], ARRAY[(-1, 'Q', 5)]::bitem[]);
SELECT pg_terminate_backend(:maintenance_pid);
SELECT bstep(ARRAY[(-1, 'Q', 5)]::bitem[], ARRAY[(NULL, 'w', 9)]::bitem[], ARRAY[(NULL, 'W', 'nul3')]::bname[], '{}');
SELECT bstep(ARRAY[(4, 'abc', 13)]::bitem[], ARRAY[(NULL, NULL, 4)]::bitem[]);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.runtimes
                   WHERE role IN ('maintenance', 'solo') AND state = 'running' AND pid <> $$ || :maintenance_pid);
SELECT wait_for($$SELECT bool_and(upper >= 10 OR state <> 'ready') FROM peek.views WHERE name LIKE 'b%'$$);
SELECT name, state, upper, failure FROM peek.views WHERE name LIKE 'b%' ORDER BY name;
SELECT name, amismatches(name) AS bad, CASE WHEN name NOT IN ('anum', 'bcoll') THEN amismatches(name, true) END AS bad_text FROM peek.views
 WHERE state = 'ready' ORDER BY name;

-- round 3: groupings over joins, non-strict keys in a chain's later stage
SELECT bstep(ARRAY[(5, 'four', 20), (NULL, 'one', 21)]::bitem[], '{}', ARRAY[(5, 'four', 'four'), (7, NULL, NULL)]::bname[], '{}');
SELECT name, try(format('SELECT peek.create_view(%L, %L)', name, q)) AS made
  FROM (VALUES
     ('cgrpsecond', $q$SELECT n.k, count(*) AS c FROM peek.persist_peek(NULL::bitem, 'bitems') i JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k GROUP BY n.k$q$),
     ('cgrpexpr', $q$SELECT i.k % 2 AS p, count(n.label) AS c FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k GROUP BY i.k % 2$q$),
     ('cwhole', $q$SELECT count(*) AS c, count(n.label) AS l FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k$q$),
     ('cordinal', $q$SELECT k + 0 AS k0, count(*) AS c FROM peek.persist_peek(NULL::bitem, 'bitems') GROUP BY 1$q$),
     ('cchainns', $q$SELECT i.x, n.label, m.x AS y FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k LEFT JOIN peek.persist_peek(NULL::bitem, 'bitems') m ON coalesce(m.t, 'four') = n.label$q$),
     ('cchainns2', $q$SELECT i.x, n.label, m.x AS y FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k LEFT JOIN peek.persist_peek(NULL::bitem, 'bitems') m ON m.t = coalesce(n.label, 'one')$q$),
     ('cchaingrp', $q$SELECT m.k, count(*) AS c FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = n.k LEFT JOIN peek.persist_peek(NULL::bitem, 'bitems') m ON coalesce(m.t, 'four') = n.label GROUP BY m.k$q$),
     ('cdistinct', $q$SELECT DISTINCT n.label, i.k IS NULL AS nul FROM peek.persist_peek(NULL::bitem, 'bitems') i LEFT JOIN peek.persist_peek(NULL::bname, 'bnames') n ON i.k = coalesce(n.k, -1)$q$)
     ) v(name, q);
SELECT wait_for($$SELECT bool_and(state <> 'hydrating' AND upper >= 11) FROM peek.views WHERE name LIKE 'c%'$$);
SELECT bstep(ARRAY[(NULL, NULL, 22), (-1, 'four', 23)]::bitem[], ARRAY[(5, 'four', 20)]::bitem[], ARRAY[(NULL, 'z', 'one')]::bname[], ARRAY[(7, NULL, NULL)]::bname[]);
SELECT bstep(ARRAY[(5, 'four', 20)]::bitem[], ARRAY[(NULL, NULL, 22)]::bitem[], '{}', ARRAY[(5, 'four', 'four')]::bname[]);
SELECT pid AS maintenance_pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo') \gset
SELECT pg_terminate_backend(:maintenance_pid);
SELECT bstep(ARRAY[(NULL, 'four', 24)]::bitem[], ARRAY[(-1, 'four', 23)]::bitem[], ARRAY[(5, 'four', 'four')]::bname[], ARRAY[(NULL, 'z', 'one')]::bname[]);
SELECT wait_for($$SELECT count(*) = 1 FROM peek.runtimes
                   WHERE role IN ('maintenance', 'solo') AND state = 'running' AND pid <> $$ || :maintenance_pid);
SELECT bstep(ARRAY[(NULL, 'one', 25)]::bitem[], ARRAY[(NULL, 'one', 21)]::bitem[]);
SELECT wait_for($$SELECT bool_and(upper >= 15 OR state <> 'ready') FROM peek.views WHERE name ~ '^[bc]'$$);
SELECT name, state, upper, failure FROM peek.views WHERE name LIKE 'c%' ORDER BY name;
SELECT name, amismatches(name) AS bad, CASE WHEN name NOT IN ('anum', 'bcoll') THEN amismatches(name, true) END AS bad_text FROM peek.views
 WHERE state = 'ready' ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP VIEW acandidates;
DROP FUNCTION astep(aitem[], aitem[], aname[], aname[]);
DROP FUNCTION bstep(bitem[], bitem[], bname[], bname[]);
DROP FUNCTION amismatches(text, bool);
DROP TYPE aitem;
DROP TYPE aname;
DROP TYPE bitem;
DROP TYPE bname;
DROP COLLATION aci;
