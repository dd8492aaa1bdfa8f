-- pg_peek 0.2 -> 0.3
\echo Use "ALTER EXTENSION pg_peek UPDATE TO '0.3'" to load this file. \quit

-- A fresh CREATE EXTENSION runs pg_peek--0.1.sql, pg_peek--0.1--0.2.sql and
-- then this script, so every change of 0.3 to the SQL objects lives here,
-- once.

-- retention: every collection, source and index keeps its
-- history of the last `retention` by the wall clock; the maintenance runtime
-- raises its since to the time that was its upper that long ago (never past
-- a peek's hold, and never lowering it), and compaction folds its shard.
-- An object follows pg_peek.retention until peek.set_retention gives it
-- one (retention_set); NULL keeps all history.
ALTER TABLE peek.objects
    ADD COLUMN retention interval CHECK (retention >= interval '0'),
    ADD COLUMN retention_set boolean NOT NULL DEFAULT false;

CREATE FUNCTION peek.set_retention(object text, retention interval)
RETURNS void AS 'MODULE_PATHNAME', 'peek_set_retention' LANGUAGE C;

CREATE FUNCTION peek.reset_retention(object text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_reset_retention' LANGUAGE C;

-- when each object's since was last its newest complete time
CREATE FUNCTION peek.since_status(OUT id bigint, OUT since_at timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_since_status' LANGUAGE C;

-- the retention in force (NULL: all history kept), and how old the since
-- is by the wall clock: how far back a peek can read
CREATE FUNCTION peek.retention(retention interval, retention_set boolean)
RETURNS interval LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN retention_set THEN retention
                WHEN pg_catalog.current_setting('pg_peek.retention') OPERATOR(pg_catalog.<>) '-1'
                THEN pg_catalog.current_setting('pg_peek.retention')::pg_catalog.interval END
$$;

-- frontiers make no garbage: a seal no longer updates its
-- object's row in peek.objects (each update left a dead row version, which
-- a long snapshot kept, and which every later write walked).  A seal
-- inserts the new upper into peek.uppers, in the writer's transaction
-- (committed, rolled back, WAL-logged and replayed with it); an object's
-- upper is the greatest of its rows there (0 without any), found at the
-- end of the primary key.  The maintenance runtime deletes the rows below
-- the latest now and then.  The rows name an object by the sequence part
-- of its id (id & 4294967295), which pg_restore and pg_upgrade keep while
-- the id's extension part changes.  Writers of one collection still
-- serialize on its row in peek.objects (FOR NO KEY UPDATE, a lock: no new
-- row version).
CREATE TABLE peek.uppers (
    object bigint NOT NULL,
    upper  bigint NOT NULL CHECK (upper > 0),
    PRIMARY KEY (object, upper)
);
SELECT pg_catalog.pg_extension_config_dump('peek.uppers', '');
INSERT INTO peek.uppers
SELECT id OPERATOR(pg_catalog.&) 4294967295, upper FROM peek.objects WHERE upper OPERATOR(pg_catalog.>) 0;

-- the rows a collection (or view) holds below a given upper: the views
-- below count at the upper they show, read once from the registry (a
-- second read could see a newer publication than the upper shown)
CREATE FUNCTION peek.collection_rows(name text, upper bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'peek_collection_rows' LANGUAGE C STABLE STRICT;

-- a collection's upper is its published one, which a peek at as_of NULL
-- resolves against (the stored one until it is published): a write's or an
-- ingested source transaction's upper (peek.uppers) commits before the
-- maintenance runtime publishes it, and on a standby replay brings it
-- before the runtime publishes it; a reader who saw that upper here would
-- then read an older time.  A failed one's reads fail, whatever its upper:
-- it shows the stored upper, where its updates stopped.  A source is
-- loading until the upper shown is past its load (its rows are readable)
CREATE OR REPLACE VIEW peek.collections WITH (security_barrier) AS
SELECT o.name, o.row_type, o.owner,
       CASE WHEN o.failure IS NOT NULL THEN 'failed'
            WHEN o.source IS NOT NULL AND shown.upper = 0 THEN 'loading'
            WHEN r.published THEN 'ready' ELSE 'pending' END AS state,
       o.failure, o.source,
       peek.collection_rows(o.name, shown.upper) AS rows,
       0 AS batches, 0::bigint AS bytes,
       pg_catalog.pg_total_relation_size(o.shard) AS shard_bytes, o.shard,
       greatest(r.since, o.since) AS since,
       shown.upper,
       o.allowed_since, o.created_at,
       peek.retention(o.retention, o.retention_set) AS retention,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.since_at AS since_age
  FROM peek.objects o
  CROSS JOIN LATERAL (SELECT coalesce(max(x.upper), 0) AS upper FROM peek.uppers x
                       WHERE x.object = o.id OPERATOR(pg_catalog.&) 4294967295) u
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
  CROSS JOIN LATERAL (SELECT CASE WHEN r.published AND o.failure IS NULL
                                  THEN r.upper ELSE u.upper END AS upper) shown
  LEFT JOIN peek.since_status() t ON t.id = o.id
 WHERE o.kind = 'c' AND peek.visible(o.owner);

-- an index of a source or a view is hydrating until its upper is past the
-- source's load or the view's hydration: until then it is published
-- empty, at upper 0, and a peek waits
CREATE OR REPLACE VIEW peek.indexes WITH (security_barrier) AS
SELECT o.name, c.name AS collection, o.key_columns AS key, o.owner,
       CASE WHEN r.failed OR o.failure IS NOT NULL OR c.failure IS NOT NULL THEN 'failed'
            WHEN r.hydrating OR NOT coalesce(r.published, false) THEN 'hydrating'
            WHEN coalesce(r.upper, 0) = 0 AND (c.source IS NOT NULL OR c.kind = 'v') THEN 'hydrating'
            ELSE 'ready' END AS state,
       CASE WHEN o.failure IS NOT NULL THEN o.failure
            WHEN c.failure IS NOT NULL THEN c.failure
            WHEN r.failed THEN 'arrangement exceeded pg_peek.max_memory' END AS failure,
       coalesce(r.rows, 0) AS rows, coalesce(r.updates, 0) AS updates,
       coalesce(r.batches, 0) AS batches, coalesce(r.bytes, 0) AS bytes,
       r.since, r.upper, o.allowed_since, o.created_at,
       peek.retention(o.retention, o.retention_set) AS retention,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.since_at AS since_age
  FROM peek.objects o
  JOIN peek.objects c ON c.id = o.collection
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
  LEFT JOIN peek.since_status() t ON t.id = o.id
 WHERE o.kind = 'i' AND peek.visible(o.owner);

CREATE OR REPLACE VIEW peek.replication WITH (security_barrier) AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' WHEN 'v' THEN 'view' ELSE 'index' END AS kind,
       pg_catalog.pg_is_in_recovery() AS standby,
       u.upper AS replayed_upper, o.since AS replayed_since,
       r.upper, r.since,
       u.upper OPERATOR(pg_catalog.-) coalesce(r.upper, 0) AS lag_times,
       CASE WHEN NOT pg_catalog.pg_is_in_recovery() THEN NULL
            WHEN pg_catalog.pg_last_wal_receive_lsn() OPERATOR(pg_catalog.<=) pg_catalog.pg_last_wal_replay_lsn() THEN 0
            ELSE (extract(epoch FROM pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.pg_last_xact_replay_timestamp())
                  OPERATOR(pg_catalog.*) 1000)::bigint
       END AS replay_lag_ms
  FROM peek.objects o
  CROSS JOIN LATERAL (SELECT coalesce(max(x.upper), 0) AS upper FROM peek.uppers x
                       WHERE x.object = coalesce(o.collection, o.id) OPERATOR(pg_catalog.&) 4294967295) u
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE peek.visible(o.owner);

ALTER TABLE peek.objects DROP COLUMN upper;

-- ---- many keys in one index peek ----
-- index_peek takes keys, an array of keys, next to key: ARRAY[ROW(1, 'a'), ...],
-- or for an index of one key column an array of its values, ARRAY[1, 2].
-- It comes last, so that positional calls of 0.2 mean what they meant.  Its
-- default is typed: an untyped one stays of the polymorphic type itself,
-- which no call could resolve.
DROP FUNCTION peek.index_peek(anyelement, text, record, bigint, bigint);
CREATE FUNCTION peek.index_peek(rowtype anyelement, index text, key record DEFAULT NULL,
                                as_of bigint DEFAULT NULL, "limit" bigint DEFAULT NULL,
                                keys anycompatiblearray DEFAULT NULL::int[])
RETURNS SETOF anyelement AS 'MODULE_PATHNAME', 'peek_index_peek' LANGUAGE C;

-- ---- a moving base (issue 24, item 2) ----
-- A shard's base, its rows consolidated at one time, may stand at a time
-- above the since: the maintenance runtime folds the updates after it into
-- the base as they come, keeping them as history for peeks between the
-- since and the base (which read the base minus the updates after their
-- time), so that a peek at a recent time reads the base and few updates.
-- base_time is the time the base's rows are the contents at (-1: no base
-- yet); NULL, in a catalog from before, means where compaction left it:
-- the since, or -1 at since 0.
ALTER TABLE peek.objects ADD COLUMN base_time bigint CHECK (base_time >= -1);

-- ---- maintained views (issue 25) ----
-- A view is an object of kind 'v': a collection whose rows the maintenance
-- runtime appends to its shard, the answer of its query at its input's
-- times.  Its row keeps the query (analyzed and written out with every name
-- qualified) and its inputs' names (names, which a restore keeps).
ALTER TABLE peek.objects DROP CONSTRAINT objects_kind_check;
ALTER TABLE peek.objects ADD CONSTRAINT objects_kind_check CHECK (kind IN ('c', 'i', 'v'));
ALTER TABLE peek.objects
    ADD COLUMN query text,                        -- views: their query
    ADD COLUMN inputs text[];                     -- ... and what it reads

CREATE FUNCTION peek.create_view(name text, query text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_create_view' LANGUAGE C;

CREATE FUNCTION peek.drop_view(name text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_drop_view' LANGUAGE C;

-- lag: how many times the view trails the least of its inputs' uppers;
-- while it hydrates, how many of its inputs' rows it has read and how
-- many there are (estimated from their shards until all are read)
-- a view whose rounds ran out of time (pg_peek.view_round_timeout) is
-- 'retrying' until one completes: retried with the limit shown, doubled
-- after each timeout (peek.view_round_status)
CREATE FUNCTION peek.view_round_status(OUT id bigint, OUT timeouts integer,
                                       OUT limit_ms integer)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_view_round_status' LANGUAGE C;

-- a view's upper is its published one, which a read of the view (as_of
-- NULL) resolves against: the round's durable upper (peek.uppers) commits
-- before the runtime publishes it, and a reader who saw that upper here
-- would then read an older time (the durable one until it is published);
-- retention and since_age as in peek.collections, which shows no view.
-- The hydration's progress is shown exactly while the state is
-- 'hydrating': how many of its inputs' updates the first round has read
-- and how many they have (estimated from their shards while it reads; all
-- it read once its upper is durable and waits to be published; NULL
-- before it starts reading)
CREATE VIEW peek.views WITH (security_barrier) AS
SELECT o.name, o.query, o.inputs, o.owner, o.row_type, st.state,
       o.failure,
       peek.collection_rows(o.name, shown.upper) AS rows,
       greatest(r.since, o.since) AS since,
       shown.upper,
       greatest(i.upper OPERATOR(pg_catalog.-) shown.upper, 0) AS lag,
       o.allowed_since, o.shard, o.created_at,
       CASE WHEN st.state = 'hydrating'
            THEN coalesce(r.hydrated_rows, 0) END AS hydration_rows_read,
       CASE WHEN st.state = 'hydrating'
            THEN CASE WHEN r.hydrating THEN r.hydration_total
                      WHEN u.upper > 0 THEN r.hydrated_rows END END AS hydration_rows_total,
       peek.retention(o.retention, o.retention_set) AS retention,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) sa.since_at AS since_age
  FROM peek.objects o
  CROSS JOIN LATERAL (SELECT coalesce(max(x.upper), 0) AS upper FROM peek.uppers x
                       WHERE x.object = o.id OPERATOR(pg_catalog.&) 4294967295) u
  CROSS JOIN LATERAL (SELECT coalesce(min(m.upper), 0) AS upper
                        FROM (SELECT max(x.upper) AS upper
                                FROM peek.objects c JOIN peek.uppers x
                                  ON x.object = c.id OPERATOR(pg_catalog.&) 4294967295
                               WHERE c.name OPERATOR(pg_catalog.=) ANY (o.inputs)
                               GROUP BY c.id) m) i
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
  CROSS JOIN LATERAL (SELECT CASE WHEN r.published AND o.failure IS NULL
                                  THEN r.upper ELSE u.upper END AS upper) shown
  LEFT JOIN peek.view_round_status() t ON t.id = o.id
  CROSS JOIN LATERAL (SELECT CASE WHEN o.failure IS NOT NULL THEN 'failed'
                                  WHEN t.timeouts IS NOT NULL THEN 'retrying'
                                  WHEN shown.upper = 0 THEN 'hydrating'
                                  WHEN shown.upper <= greatest(r.since, o.since) THEN 'waiting'
                                  WHEN r.published THEN 'ready' ELSE 'pending' END AS state) st
  LEFT JOIN peek.since_status() sa ON sa.id = o.id
 WHERE o.kind = 'v' AND peek.visible(o.owner);
GRANT SELECT ON peek.views TO PUBLIC;

-- what each maintained view's operators did: the rows into and out of
-- each, the state it keeps (a grouped view's groups), the time spent in
-- it, whether it is learning its groups between rounds; counted by the maintenance runtime since the view was made or the
-- server started
CREATE FUNCTION peek.operator_status(
    OUT id bigint, OUT operator integer, OUT kind text, OUT rows_in bigint,
    OUT rows_out bigint, OUT bytes bigint, OUT time_ms double precision,
    OUT learning boolean)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_operator_status' LANGUAGE C;

CREATE VIEW peek.dataflow_operators WITH (security_barrier) AS
SELECT o.name AS view, s.operator, s.kind, s.rows_in, s.rows_out, s.bytes, s.time_ms,
       s.learning
  FROM peek.operator_status() s
  JOIN peek.objects o ON o.id = s.id
 WHERE o.kind = 'v' AND peek.visible(o.owner);
GRANT SELECT ON peek.dataflow_operators TO PUBLIC;

-- the views that name an object's kind know views (peek.replication's
-- is above)
CREATE OR REPLACE VIEW peek.frontiers WITH (security_barrier) AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' WHEN 'v' THEN 'view' ELSE 'index' END AS kind,
       x.runtime, r.since, r.upper, x.waiters
  FROM peek.registry_status() r
  JOIN peek.objects o ON o.id = r.id
  JOIN peek.runtime_object_status() x ON x.id = r.id
 WHERE r.published AND NOT r.dropped AND peek.visible(o.owner);


-- A shard's rows and their hashes keep no statistics: gathering them loads
-- the row type, which for a view's shard opens the view, and an autovacuum
-- ANALYZE of the shard then deadlocked with a DDL that a view refuses
-- through its dependencies (see persist_create_shard).
DO $$
DECLARE
    s regclass;
BEGIN
    FOR s IN SELECT o.shard FROM peek.objects o WHERE o.shard IS NOT NULL LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN data SET STATISTICS 0', s);
        IF pg_catalog.to_regclass(s::text OPERATOR(pg_catalog.||) '_rows') IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER INDEX %s ALTER COLUMN 1 SET STATISTICS 0',
                                      s::text OPERATOR(pg_catalog.||) '_rows');
        END IF;
    END LOOP;
END $$;

-- sources (and their indexes): the captured table's name, kept as a table
-- rename changes it (storage/catalog_sources.c), so that a failure names a table
-- that was dropped while no runtime ran; a regclass shows only its OID then
ALTER TABLE peek.objects ADD COLUMN source_name name;
UPDATE peek.objects o SET source_name = c.relname
  FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) o.source;

-- the float sums and averages maintained views compute in place of
-- sum(float8), sum(float4), avg(float8) and avg(float4), whose results
-- depend on the order of the rows: exact sums of the finite values,
-- rounded once, with Infinity, -Infinity and NaN counted apart
-- (src/sql/exact_sums.c, src/dataflow/float_sums.c)
CREATE FUNCTION peek.exact_sum_accum(internal, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'peek_exact_sum_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION peek.exact_sum_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'peek_exact_sum_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION peek.exact_sum4_final(internal) RETURNS float4
    AS 'MODULE_PATHNAME', 'peek_exact_sum4_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION peek.exact_avg_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'peek_exact_avg_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE peek.exact_sum(float8) (SFUNC = peek.exact_sum_accum, STYPE = internal,
                                         FINALFUNC = peek.exact_sum_final);
CREATE AGGREGATE peek.exact_sum4(float8) (SFUNC = peek.exact_sum_accum, STYPE = internal,
                                          FINALFUNC = peek.exact_sum4_final);
CREATE AGGREGATE peek.exact_avg(float8) (SFUNC = peek.exact_sum_accum, STYPE = internal,
                                         FINALFUNC = peek.exact_avg_final);

-- ---- the runtime's rounds read few rows (issue 25) ----
-- After each round the maintenance runtime reads the rows of a few objects
-- and of their indexes (storage/catalog.c, catalog_read): by the primary
-- key and by this index, not by a scan of every object (28% of its CPU
-- with 3,000 objects).
CREATE INDEX objects_collection_idx ON peek.objects (collection);
