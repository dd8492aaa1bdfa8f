-- A full persist peek hands the executor the rows its walk reads from the
-- shard's pages (scan.c, persist_peek_next): each a copy of its own, valid
-- until the next row, with no table row's tid.  The executor keeps or
-- changes such rows where a table's rows would be: inserted (their ctid is
-- the table's), through row triggers, in an UPDATE ... FROM, a nested
-- loop's rescans, a SCROLL cursor read backward, a cursor read across an
-- aborted subtransaction, a whole-row value; the shard is left unchanged.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE item AS (k int, v text);
SELECT peek.create_collection('items', 'item');
-- 3000 rows over many pages, k = 7 twice; compacted into the base
SELECT peek.write('items', array_agg(ROW(i, repeat('v', 40) || i)::item))
  FROM generate_series(1, 3000) i;
SELECT peek.write('items', ARRAY[ROW(7, repeat('v', 40) || 7)]::item[]);
SELECT peek.allow_compaction('items', 1);
SELECT wait_for($$SELECT since = 1 FROM peek.collections WHERE name = 'items'$$);
SELECT wait_for($$SELECT shard_updates('items') = 0$$);
CREATE TABLE shard_before AS
  SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) AS h FROM peek.persist_peek(NULL::item, 'items') t;

-- inserted: the rows are the table's own, with its ctids, and can be updated
CREATE TABLE copy (k int, v text);
INSERT INTO copy SELECT * FROM peek.persist_peek(NULL::item, 'items');
SELECT count(*), count(DISTINCT ctid), min(ctid) = '(0,1)' AS first_tid FROM copy;
SELECT count(*) FROM copy WHERE tableoid = 'copy'::regclass;
UPDATE copy SET v = 'u' WHERE k = 7;
SELECT k, v FROM copy WHERE k = 7;
DELETE FROM copy;

-- row triggers: a BEFORE trigger changes NEW, an AFTER one keeps it
CREATE TABLE seen (k int, v text, tid tid);
CREATE FUNCTION copy_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.v := 'b' || NEW.k; RETURN NEW; END $$;
CREATE FUNCTION copy_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO seen VALUES (NEW.k, NEW.v, NEW.ctid); RETURN NULL; END $$;
CREATE TRIGGER b BEFORE INSERT ON copy FOR EACH ROW EXECUTE FUNCTION copy_before();
CREATE TRIGGER a AFTER INSERT ON copy FOR EACH ROW EXECUTE FUNCTION copy_after();
INSERT INTO copy SELECT * FROM peek.persist_peek(NULL::item, 'items') WHERE k <= 10;
SELECT k, v, tid IS NOT NULL AS has_tid FROM seen ORDER BY k;
SELECT count(*) FROM seen s JOIN copy c ON c.ctid = s.tid AND c.k = s.k AND c.v = s.v;
DROP TRIGGER b ON copy;
DROP TRIGGER a ON copy;

-- UPDATE ... FROM the peek, the peek rescanned by a nested loop
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
UPDATE copy SET v = p.v || '!' FROM peek.persist_peek(NULL::item, 'items') p WHERE copy.k = p.k;
SELECT k, v FROM copy ORDER BY k, v;
-- a nested loop's rescans read the whole answer again each time, copies
-- (k = 7 counts 2) and the row's fields the same
EXPLAIN (COSTS OFF)
SELECT count(*) FROM generate_series(1, 3) g, peek.persist_peek(NULL::item, 'items') p WHERE p.k % 1000 = g;
SELECT g, count(*), sum(p.k), count(DISTINCT p) FROM generate_series(1, 3) g,
  peek.persist_peek(NULL::item, 'items') p WHERE p.k % 1000 = g GROUP BY g ORDER BY g;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
-- whole-row values outlive the next row
SELECT array_agg(p ORDER BY p.k)::text FROM peek.persist_peek(NULL::item, 'items') p WHERE p.k IN (6, 7, 8);

-- a SCROLL cursor read forward to its end, then backward to its start,
-- gives the same rows in reverse; an absolute fetch the row at that place
CREATE FUNCTION scroll_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c refcursor := 'c';
    r record;
    fwd text[] := '{}';
    bwd text[] := '{}';
    whole boolean := true;
BEGIN
    OPEN c SCROLL FOR SELECT k, v FROM peek.persist_peek(NULL::item, 'items') WHERE k IN (5, 6, 7, 8);
    LOOP
        FETCH NEXT FROM c INTO r;
        EXIT WHEN NOT FOUND;
        fwd := fwd || (r.k || '/' || r.v);
        whole := whole AND r.v = repeat('v', 40) || r.k;
    END LOOP;
    LOOP
        FETCH PRIOR FROM c INTO r;
        EXIT WHEN NOT FOUND;
        bwd := (r.k || '/' || r.v) || bwd;
    END LOOP;
    FETCH ABSOLUTE 3 FROM c INTO r;
    CLOSE c;
    RETURN format('%s rows, keys %s, backward the same: %s, third: %s, fields whole: %s',
                  cardinality(fwd),
                  (SELECT string_agg(split_part(x, '/', 1), ',' ORDER BY x) FROM unnest(fwd) x),
                  fwd = bwd, fwd[3] = r.k || '/' || r.v, whole);
END $$;
SELECT scroll_check();
DROP FUNCTION scroll_check();

-- a cursor read in a subtransaction that aborts goes on where it was: its
-- scans are the portal's, not the subtransaction's
BEGIN;
DECLARE d CURSOR FOR SELECT v = repeat('v', 40) || k AS whole FROM peek.persist_peek(NULL::item, 'items');
MOVE 100 FROM d;
SAVEPOINT s;
MOVE 1000 FROM d;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT s2;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT s2;
FETCH 2 FROM d;
COMMIT;
-- and in a block that catches an error: the cursor moved in the aborted
-- block reads the rest, whole
CREATE FUNCTION read_across_abort() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c refcursor := 'c';
    r record;
    n bigint := 0;
    whole boolean := true;
BEGIN
    OPEN c FOR SELECT k, v FROM peek.persist_peek(NULL::item, 'items');
    MOVE FORWARD 100 FROM c;
    BEGIN
        MOVE FORWARD 1000 FROM c;
        PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN
        NULL;
    END;
    LOOP
        FETCH NEXT FROM c INTO r;
        EXIT WHEN NOT FOUND;
        n := n + 1;
        whole := whole AND r.v = repeat('v', 40) || r.k;
    END LOOP;
    CLOSE c;
    RETURN format('%s rows after 1100, fields whole: %s', n, whole);
END $$;
SELECT read_across_abort();
DROP FUNCTION read_across_abort();

-- the shard's rows are as they were
SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) = (SELECT h FROM shard_before) AS unchanged
  FROM peek.persist_peek(NULL::item, 'items') t;

DROP TABLE copy, seen, shard_before;
DROP FUNCTION copy_before();
DROP FUNCTION copy_after();
DROP EXTENSION pg_peek CASCADE;
DROP TYPE item;
