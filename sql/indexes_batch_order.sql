-- The order a batch is built in (src/ipc/batch.c's sort_updates): a key's
-- versions sorted by their leads (length and six bytes past the prefix all
-- images share), by their whole images where leads tie, and consolidated.
-- Rows of one key and length whose first bytes are the same, written
-- twice, written and retracted in one write, beside rows of other lengths,
-- NULLs (a header of its own: a shorter shared prefix) and a row too long
-- for a lead; in an index hydrated over them and one following their
-- writes.  Each index equals the persist peek, whole and by key, at every
-- time.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE bo AS (k int, t text);
SELECT peek.create_collection('bos', 'bo');
SELECT peek.create_collection('bon', 'bo');
SELECT peek.create_index('bon_by_k', 'bon', '{k}');

-- same length, same first bytes, per key: leads tie; each twice
CREATE FUNCTION bo_rows(from_i int, to_i int) RETURNS bo[] LANGUAGE sql AS $$
    SELECT array_agg((k, 'same-prefix-' || lpad(i::text, 3, '0'))::bo)
    FROM generate_series(1, 3) k, generate_series(from_i, to_i) i, generate_series(1, 2)$$;
CREATE FUNCTION bo_write(inserts bo[], deletes bo[]) RETURNS void LANGUAGE sql AS $$
    SELECT peek.write('bos', inserts, deletes);
    SELECT peek.write('bon', inserts, deletes);$$;

SELECT bo_write(bo_rows(1, 20) || ARRAY[(1, 'a'), (1, 'ab'), (1, 'abc'), (1, 'b'), (2, NULL),
                                         (2, NULL), (NULL, 'same-prefix-001'),
                                         (3, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 2200) i)),
                                         (3, 'gone at once')]::bo[],
                ARRAY[(3, 'gone at once')]::bo[]);
-- an index hydrated over them
SELECT peek.create_index('bos_by_k', 'bos', '{k}');
SELECT bo_write(bo_rows(5, 25), bo_rows(1, 10));
SELECT bo_write(ARRAY[(1, 'same-prefix-007'), (1, 'abd'), (2, NULL), (2, 'same-prefix-0')]::bo[],
                ARRAY[(1, 'abc'), (2, NULL), (1, 'same-prefix-015')]::bo[]);
SELECT bo_write(bo_rows(1, 3) || ARRAY[(3, 'twice in, once out'), (3, 'twice in, once out')]::bo[],
                ARRAY[(3, 'twice in, once out'), (1, 'a')]::bo[]);
SELECT wait_for($$SELECT count(*) = 2 FROM peek.frontiers
                   WHERE runtime IN ('maintenance', 'solo') AND kind = 'index' AND upper = 4$$);

-- whole and by key, at every time: index peek = persist peek
SELECT i.name, t,
       (SELECT array_agg(r::text ORDER BY r::text)
          FROM peek.index_peek(NULL::bo, i.name, as_of => t) r)
       IS NOT DISTINCT FROM
       (SELECT array_agg(r::text ORDER BY r::text)
          FROM peek.persist_peek(NULL::bo, i.collection, as_of => t) r) AS whole,
       (SELECT bool_and((SELECT array_agg(r::text ORDER BY r::text)
                           FROM peek.index_peek(NULL::bo, i.name, ROW(key), as_of => t) r)
                        IS NOT DISTINCT FROM
                        (SELECT array_agg(r::text ORDER BY r::text)
                           FROM peek.persist_peek(NULL::bo, i.collection, as_of => t) r
                          WHERE r.k = key))
          FROM generate_series(1, 3) key) AS by_key
FROM peek.indexes i, generate_series(0, 3) t
ORDER BY 1, 2;
-- the rows whose leads tie are all there, with their counts
SELECT r.t, count(*) FROM peek.index_peek(NULL::bo, 'bos_by_k', ROW(1)) r
WHERE r.t LIKE 'same-prefix-%' GROUP BY r.t ORDER BY r.t;

SELECT peek.drop_index('bos_by_k');
SELECT peek.drop_index('bon_by_k');
SELECT peek.drop_collection('bos');
SELECT peek.drop_collection('bon');
DROP FUNCTION bo_write(bo[], bo[]);
DROP FUNCTION bo_rows(int, int);
DROP TYPE bo;
