-- Inner joins maintained by their differences (src/dataflow/delta.c):
-- d(A join B) = dA join B + A' join dB at each time, multiplicities
-- multiplied.  Each view checked against PostgreSQL's evaluation of its
-- query at every time at the edges: the same row several times on both
-- sides, both sides of a key changed at one time, a row moving between
-- keys, a key's last row deleted on one side, NULL keys, a row inserted
-- and deleted at one time, a three-way join, a self-join, a condition
-- beside the equality, a join of inputs on different keys (a chain) and
-- a join grouped by other keys (two stages), a runtime restart.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE dl AS (k int, a int);
CREATE TYPE dr AS (k int, b int, c int);
SELECT peek.create_collection('dls', 'dl');
SELECT peek.create_collection('drs', 'dr');
-- one step: both collections written at the same time (their upper)
CREATE FUNCTION dstep(li dl[], ld dl[], ri dr[], rd dr[]) RETURNS bigint
LANGUAGE sql AS $$ SELECT peek.write('dls', li, ld) + 0 * peek.write('drs', ri, rd) $$;
SELECT dstep(ARRAY[(1, 10), (1, 10), (2, 20), (NULL, 0), (3, 30)]::dl[], '{}',
             ARRAY[(1, 100, 1), (1, 100, 1), (1, 100, 1), (2, 200, 2), (NULL, 0, 0)]::dr[], '{}');

SELECT peek.create_view('dj', $$
    SELECT l.k, l.a, r.b, l.a + r.b AS ab
      FROM peek.persist_peek(NULL::dl, 'dls') l JOIN peek.persist_peek(NULL::dr, 'drs') r ON r.k = l.k$$);
SELECT peek.create_view('djcond', $$
    SELECT l.a, r.c FROM peek.persist_peek(NULL::dl, 'dls') l, peek.persist_peek(NULL::dr, 'drs') r
     WHERE r.k = l.k AND l.a * 10 <> r.b AND r.c < 5$$);
SELECT peek.create_view('djthree', $$
    SELECT l.a, r.b, s.b AS b2
      FROM peek.persist_peek(NULL::dl, 'dls') l JOIN peek.persist_peek(NULL::dr, 'drs') r ON r.k = l.k
      JOIN peek.persist_peek(NULL::dr, 'drs') s ON s.k = l.k$$);
SELECT peek.create_view('djself', $$
    SELECT x.a AS a1, y.a AS a2
      FROM peek.persist_peek(NULL::dl, 'dls') x JOIN peek.persist_peek(NULL::dl, 'dls') y ON x.k = y.k$$);
SELECT peek.create_view('djchain', $$
    SELECT l.a, r.b, s.a AS a2
      FROM peek.persist_peek(NULL::dl, 'dls') l JOIN peek.persist_peek(NULL::dr, 'drs') r ON r.k = l.k
      JOIN peek.persist_peek(NULL::dl, 'dls') s ON s.k = r.c$$);
SELECT peek.create_view('djgrouped', $$
    SELECT r.c, count(*) AS n, sum(l.a) AS s
      FROM peek.persist_peek(NULL::dl, 'dls') l JOIN peek.persist_peek(NULL::dr, 'drs') r ON r.k = l.k
     GROUP BY r.c$$);
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE state = 'ready' AND upper = 1$$);
SELECT view, operator, kind FROM peek.dataflow_operators WHERE operator > 1 ORDER BY view, operator;
SELECT k, a, b, ab, count(*) FROM dj GROUP BY k, a, b, ab ORDER BY k, a, b;

-- 1: both sides of key 1 change at once (a copy less on the left, one
-- more on the right); 2: a row moves from key 2 to key 3 on the right
-- while key 2's last left row goes; 3: a row inserted and deleted at one
-- time, and a NULL key's rows deleted; 4: key 1's right rows all deleted;
-- 5: rows back on both sides
SELECT dstep(ARRAY[(1, 11)]::dl[], ARRAY[(1, 10)]::dl[], ARRAY[(1, 100, 1), (1, 101, 3)]::dr[], '{}');
SELECT dstep('{}', ARRAY[(2, 20)]::dl[], ARRAY[(3, 200, 2)]::dr[], ARRAY[(2, 200, 2)]::dr[]);
SELECT dstep(ARRAY[(3, 31), (4, 40)]::dl[], ARRAY[(NULL, 0), (4, 40)]::dl[], '{}',
             ARRAY[(NULL, 0, 0)]::dr[]);
SELECT dstep('{}', '{}', '{}', ARRAY[(1, 100, 1), (1, 100, 1), (1, 100, 1), (1, 100, 1), (1, 101, 3)]::dr[]);
SELECT dstep(ARRAY[(1, 12), (2, 22)]::dl[], '{}', ARRAY[(1, 102, 2), (2, 202, 3)]::dr[], '{}');
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE upper = 6$$);
SELECT * FROM dj ORDER BY k, a, b;

-- the runtime restarts: the groups are built again from the inputs and
-- the differences go on from there
SELECT restart_maintenance();
SELECT dstep(ARRAY[(1, 13), (2, 22)]::dl[], ARRAY[(1, 11)]::dl[], ARRAY[(2, 203, 1)]::dr[], ARRAY[(1, 102, 2)]::dr[]);
SELECT dstep(array_agg((i % 5, i)::dl), '{}', array_agg((i % 5, i, i % 3)::dr), '{}')
  FROM generate_series(1, 200) i;
SELECT dstep(array_agg((i % 5, i)::dl), '{}', '{}', array_agg((i % 5, i, i % 3)::dr))
  FROM generate_series(1, 200, 3) i;
SELECT wait_for($$SELECT count(*) = 6 FROM peek.views WHERE upper = 9$$);
SELECT count(*), sum(ab) FROM dj;

-- every view at every time equals its query over the inputs at that time
SELECT name, state, view_mismatches(
           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
           replace(replace(query, '''dls''::text', '''dls''::text, as_of => @T@'),
                   '''drs''::text', '''drs''::text, as_of => @T@'), 0, upper - 1) AS bad_times
  FROM peek.views ORDER BY name;

SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
RESET client_min_messages;
DROP FUNCTION dstep(dl[], dl[], dr[], dr[]);
DROP TYPE dl;
DROP TYPE dr;
