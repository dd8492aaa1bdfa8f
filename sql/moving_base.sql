-- A moving base (issue 24, item 2): the maintenance runtime folds the
-- updates after a collection's base into it as they come, keeping them as
-- history, so that the base stands at a recent time above the since.  Every
-- persist peek at every time from the since on, before the base's time or
-- after it, full or limited, answers the contents at that time with their
-- multiplicities, as a plain table of the same updates says; compaction
-- then deletes only the history the since passed.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;

CREATE TYPE mbkv AS (k int, v text);
SELECT peek.create_collection('mb', 'mbkv');
SELECT peek.set_retention('mb', NULL);
-- the same updates, kept in a plain table
CREATE TABLE mb_log (t bigint, k int, v text, diff bigint);

-- mb_write(lo, hi): at each time t, a few rows in (some twice), a row of
-- three times before out once, and a row of five times before out
CREATE FUNCTION mb_write(lo int, hi int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR t IN lo .. hi LOOP
        INSERT INTO mb_log VALUES (t, t % 7, 'v' || t % 3, 1 + t % 2),
                                  (t, 100 + t, 'once', 1);
        IF t >= 3 THEN
            INSERT INTO mb_log VALUES (t, (t - 3) % 7, 'v' || (t - 3) % 3, -1);
        END IF;
        IF t >= 5 THEN
            INSERT INTO mb_log VALUES (t, 100 + t - 5, 'once', -1);
        END IF;
    END LOOP;
    PERFORM log_write('mb', 'mbkv', 'mb_log', lo, hi);
END $$;

-- mb_wrong(lo, hi): the times in [lo, hi] whose persist peek, full or with
-- a limit of 1 or 5, is not the plain table's contents (a limited peek:
-- as many rows as it allows, none more often than the contents hold it)
CREATE FUNCTION mb_wrong(lo bigint, hi bigint) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    wrong bigint[] := '{}';
    bad boolean;
BEGIN
    FOR at IN lo .. hi LOOP
        CREATE TEMP TABLE mb_want ON COMMIT DROP AS SELECT * FROM log_contents('mb_log', at);
        SELECT EXISTS (
            (SELECT k, v, n FROM mb_want
             EXCEPT SELECT k, v, count(*) FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => at)
              GROUP BY k, v)
            UNION ALL
            (SELECT k, v, count(*) FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => at)
              GROUP BY k, v EXCEPT SELECT k, v, n FROM mb_want)) INTO bad;
        -- no column read: the rows only counted
        bad := bad OR (SELECT count(*) FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => at))
                      <> (SELECT coalesce(sum(n), 0) FROM mb_want);
        FOR lim IN 1 .. 5 BY 4 LOOP
            bad := bad OR
                (SELECT count(*) FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => at, "limit" => lim))
                  <> LEAST(lim, (SELECT sum(n) FROM mb_want))
                OR EXISTS (SELECT 1 FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => at, "limit" => lim) p
                            LEFT JOIN mb_want w USING (k, v)
                            GROUP BY p.k, p.v, w.n HAVING w.n IS NULL OR count(*) > w.n);
        END LOOP;
        IF bad THEN
            wrong := wrong || at::bigint;
        END IF;
        DROP TABLE mb_want;
    END LOOP;
    RETURN wrong;
END $$;

-- mb_layout(): the shard's base rows, and its history (every update after
-- the since, 0, is kept there; those at 0 the base took in)
CREATE FUNCTION mb_layout(OUT base bigint, OUT history bigint) LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT count(*) FILTER (WHERE time < 0), count(*) FILTER (WHERE time >= 0) FROM %s',
                   (SELECT shard FROM peek.collections WHERE name = 'mb')) INTO base, history;
END $$;

SELECT mb_write(0, 39);
SELECT wait_for($$SELECT base_time = 39 FROM peek.objects WHERE name = 'mb'$$);
SELECT since, base_time FROM peek.objects WHERE name = 'mb';
-- the base is the contents at 39; every update after 0 stays as history
SELECT base = (SELECT count(*) FROM (SELECT 1 FROM mb_log GROUP BY k, v HAVING sum(diff) <> 0) c) AS base_is_contents,
       history = (SELECT count(*) FROM mb_log WHERE t > 0) AS history_kept
  FROM mb_layout();
-- peeks before the base (the history after them taken out) and at it
SELECT mb_wrong(0, 39);

-- more updates after the base: peeks read base plus them until the base
-- moves on, then the base minus what came after
SELECT mb_write(40, 59);
SELECT mb_wrong(0, 59);
SELECT wait_for($$SELECT base_time = 59 FROM peek.objects WHERE name = 'mb'$$);
SELECT history = (SELECT count(*) FROM mb_log WHERE t > 0) AS history_kept FROM mb_layout();
SELECT mb_wrong(0, 59);

-- compaction to 20: the history at or before it goes, the base stays at 59
SELECT peek.allow_compaction('mb', 20);
SELECT wait_for($$SELECT since = 20 FROM peek.objects WHERE name = 'mb'$$);
SELECT since, base_time FROM peek.objects WHERE name = 'mb';
SELECT history = (SELECT count(*) FROM mb_log WHERE t > 20) AS history_after_since FROM mb_layout();
SELECT try($$SELECT * FROM peek.persist_peek(NULL::mbkv, 'mb', as_of => 19)$$);
SELECT mb_wrong(20, 59);

-- an index hydrated now reads the contents at the since and the history
SELECT peek.create_index('mb_by_k', 'mb', '{k}');
SELECT wait_for($$SELECT state = 'ready' FROM peek.indexes WHERE name = 'mb_by_k'$$);
SELECT count(*) AS wrong_index_peeks
  FROM generate_series(20, 59) t
 WHERE EXISTS ((SELECT k, v, count(*) FROM peek.index_peek(NULL::mbkv, 'mb_by_k', as_of => t.t) GROUP BY k, v
                EXCEPT SELECT * FROM log_contents('mb_log', t.t))
               UNION ALL
               (SELECT * FROM log_contents('mb_log', t.t)
                EXCEPT SELECT k, v, count(*) FROM peek.index_peek(NULL::mbkv, 'mb_by_k', as_of => t.t) GROUP BY k, v));

-- a full peek reads the heap only from the first base row's block to the
-- last's (the time index's first and last entries at the base's time):
-- base rows before and after the history, some in the space a compaction
-- freed (vacuumed), are all read, and a peek before the base too
CREATE TYPE mbwide AS (k int, pad text);
SELECT peek.create_collection('mbw', 'mbwide');
SELECT count(peek.write('mbw', rows)) FROM (
  SELECT array_agg((g, repeat('p', 200))::mbwide) AS rows FROM generate_series(1, 4000) g GROUP BY g / 2000) w;
SELECT wait_for($$SELECT base_time = 2 FROM peek.objects WHERE name = 'mbw'$$);
SELECT peek.allow_compaction('mbw', 2);
SELECT wait_for($$SELECT since = 2 FROM peek.objects WHERE name = 'mbw'$$);
SELECT shard AS mbw_shard FROM peek.collections WHERE name = 'mbw' \gset
VACUUM :mbw_shard;
SELECT peek.write('mbw', array_agg((g, repeat('p', 200))::mbwide)) FROM generate_series(4001, 6000) g;
SELECT peek.write('mbw', '{}', array_agg((g, repeat('p', 200))::mbwide)) FROM generate_series(1, 1000) g;
SELECT wait_for($$SELECT base_time = 4 FROM peek.objects WHERE name = 'mbw'$$);
SELECT count(*), count(DISTINCT k), min(k), max(k) FROM peek.persist_peek(NULL::mbwide, 'mbw');
SELECT count(*), count(DISTINCT k), min(k), max(k) FROM peek.persist_peek(NULL::mbwide, 'mbw', as_of => 3);
SELECT count(*), count(DISTINCT k), min(k), max(k) FROM peek.persist_peek(NULL::mbwide, 'mbw', as_of => 2);
-- recent updates after the base, read through the time index with it
SELECT peek.write('mbw', array_agg((g, repeat('p', 200))::mbwide)) FROM generate_series(1, 10) g;
SELECT count(*), count(DISTINCT k), min(k), max(k) FROM peek.persist_peek(NULL::mbwide, 'mbw', as_of => 5);
SELECT peek.drop_collection('mbw');
DROP TYPE mbwide;
-- the last entries at the base's time may be a posting list (the time
-- index deduplicates equal times when a leaf page fills; REINDEX makes
-- them all so), whose tids a backward scan returns in ascending order:
-- the blocks of the base rows after its first tid are read all the same
CREATE TYPE mbnarrow AS (k int);
SELECT peek.create_collection('mbn', 'mbnarrow');
SELECT peek.write('mbn', array_agg(ROW(g)::mbnarrow)) FROM generate_series(1, 3000) g;
SELECT wait_for($$SELECT base_time = 0 FROM peek.objects WHERE name = 'mbn'$$);
SELECT shard AS mbn_shard FROM peek.collections WHERE name = 'mbn' \gset
SELECT format('%s_time_idx', :'mbn_shard') AS mbn_time_idx \gset
REINDEX INDEX :mbn_time_idx;
SELECT count(*), count(DISTINCT k), min(k), max(k) FROM peek.persist_peek(NULL::mbnarrow, 'mbn');
SELECT peek.drop_collection('mbn');
DROP TYPE mbnarrow;

SELECT peek.drop_index('mb_by_k');
SELECT peek.drop_collection('mb');
DROP FUNCTION mb_write(int, int);
DROP FUNCTION mb_wrong(bigint, bigint);
DROP FUNCTION mb_layout();
DROP TABLE mb_log;
DROP TYPE mbkv;
