-- pg_peek 0.1 -> 0.2
\echo Use "ALTER EXTENSION pg_peek UPDATE TO '0.2'" to load this file. \quit

-- A fresh CREATE EXTENSION runs pg_peek--0.1.sql and then this script, so
-- every change of 0.2 to the SQL objects lives here, once.

-- Security: an index fails on its own (a key column dropped by
-- ALTER TABLE), with the reason in its own row; the views filter by
-- peek.visible before any condition of the caller's runs (security_barrier),
-- so that a function in a caller's WHERE never sees another role's objects.
CREATE OR REPLACE VIEW peek.indexes WITH (security_barrier) AS
SELECT o.name, c.name AS collection, o.key_columns AS key, o.owner,
       CASE WHEN r.failed OR o.failure IS NOT NULL OR c.failure IS NOT NULL THEN 'failed'
            WHEN r.hydrating OR NOT coalesce(r.published, false) THEN 'hydrating'
            ELSE 'ready' END AS state,
       CASE WHEN o.failure IS NOT NULL THEN o.failure
            WHEN c.failure IS NOT NULL THEN c.failure
            WHEN r.failed THEN 'arrangement exceeded pg_peek.max_memory' END AS failure,
       coalesce(r.rows, 0) AS rows, coalesce(r.updates, 0) AS updates,
       coalesce(r.batches, 0) AS batches, coalesce(r.bytes, 0) AS bytes,
       r.since, r.upper, o.allowed_since, o.created_at
  FROM peek.objects o
  JOIN peek.objects c ON c.id = o.collection
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'i' AND peek.visible(o.owner);

-- (filtered once, after the UNION ALL: a security barrier does not keep a
-- caller's condition from the branches of a UNION ALL)
CREATE OR REPLACE VIEW peek.holds WITH (security_barrier) AS
SELECT o.name AS object, h.kind, h.runtime, h."time", h.peek
  FROM (SELECT id, 'user' AS kind, NULL::text AS runtime, allowed_since AS "time",
               NULL::uuid AS peek
          FROM peek.objects
        UNION ALL
        SELECT x.id, 'standing', x.runtime, x.standing_hold, NULL
          FROM peek.runtime_object_status() x
        UNION ALL
        SELECT h.object_id, 'peek', h.runtime, h."time", h.peek
          FROM peek.peek_hold_status() h) h
  JOIN peek.objects o ON o.id = h.id
 WHERE peek.visible(o.owner);

ALTER VIEW peek.collections SET (security_barrier);
ALTER VIEW peek.frontiers SET (security_barrier);
ALTER VIEW peek.arrangement_sharing SET (security_barrier);
ALTER VIEW peek.active_peeks SET (security_barrier);
ALTER VIEW peek.hydration_progress SET (security_barrier);

-- Security: no role but the extension's may use a shard's or a
-- source's row type (in a column of its own table, which would block the
-- collection's drop); shards made from now on are created so.
DO $$
DECLARE
    t regtype;
BEGIN
    FOR t IN SELECT oid FROM pg_catalog.pg_type
              WHERE typnamespace OPERATOR(pg_catalog.=) 'peek'::regnamespace
                AND (typname OPERATOR(pg_catalog.~) '^shard_[0-9]+$'
                     OR typname OPERATOR(pg_catalog.~) '^source_[0-9]+$')
    LOOP
        EXECUTE pg_catalog.format('REVOKE USAGE ON TYPE %s FROM PUBLIC', t);
    END LOOP;
END
$$;

-- Security: peek.visible and the status functions behind the
-- views agree on who sees an object (privileges of the owner, as
-- has_privs_of_role: membership without INHERIT does not count).
CREATE OR REPLACE FUNCTION peek.visible(owner regrole) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.pg_has_role(owner, 'USAGE')
        OR pg_catalog.pg_has_role('pg_read_all_data', 'USAGE')
        OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
$$;

-- Dump and restore: pg_dump writes peek.objects' rows (a
-- configuration table, see pg_peek--0.1.sql) and the shards (ordinary
-- tables); pg_restore loads them into a new extension.
--
-- A source names its table by OID, which a restore does not keep: it is a
-- regclass from now on, dumped by name.  (peek.collections reads it, so the
-- view is made again, as it was.)
DROP VIEW peek.collections;
ALTER TABLE peek.objects ALTER COLUMN source TYPE regclass;
CREATE VIEW peek.collections WITH (security_barrier) AS
SELECT o.name, o.row_type, o.owner,
       CASE WHEN o.failure IS NOT NULL THEN 'failed'
            WHEN o.source IS NOT NULL AND o.upper = 0 THEN 'loading'
            WHEN r.published THEN 'ready' ELSE 'pending' END AS state,
       o.failure, o.source,
       peek.collection_rows(o.name) AS rows,
       0 AS batches, 0::bigint AS bytes,
       pg_catalog.pg_total_relation_size(o.shard) AS shard_bytes, o.shard,
       greatest(r.since, o.since) AS since, greatest(r.upper, o.upper) AS upper,
       o.allowed_since, o.created_at
  FROM peek.objects o
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'c' AND peek.visible(o.owner);
GRANT SELECT ON peek.collections TO PUBLIC;

-- Restored rows are adopted as they arrive (see peek_objects_restored):
-- their ids get this extension's OID, their shards' row types and
-- dependencies are made again, and a source, restored without its
-- replication slot, fails.
CREATE FUNCTION peek.objects_restored() RETURNS trigger
AS 'MODULE_PATHNAME', 'peek_objects_restored' LANGUAGE C;
CREATE TRIGGER objects_restored AFTER INSERT ON peek.objects REFERENCING NEW TABLE AS restored
    FOR EACH STATEMENT EXECUTE FUNCTION peek.objects_restored();
REVOKE ALL ON FUNCTION peek.objects_restored() FROM PUBLIC;

-- Fast reads: a backend gates a ready peek itself
-- (pg_peek.fast_path); peek.runtimes counts those peeks with the runtime
-- that would have served them, in peeks_fast.
DROP VIEW peek.runtimes;
DROP FUNCTION peek.runtime_status();
CREATE FUNCTION peek.runtime_status(
    OUT role text, OUT pid integer, OUT state text, OUT started_at timestamptz,
    OUT restarts integer, OUT wakeups bigint, OUT dirty_marks bigint,
    OUT peeks_served bigint, OUT peeks_parked bigint, OUT peeks_reexamined bigint,
    OUT peeks_canceled bigint, OUT commands bigint, OUT publications bigint,
    OUT compactions bigint, OUT peeks_fast bigint, OUT dsa_bytes bigint,
    OUT dsa_limit bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_runtime_status' LANGUAGE C;
CREATE VIEW peek.runtimes AS SELECT * FROM peek.runtime_status();
GRANT SELECT ON peek.runtimes TO PUBLIC;

-- Persist peeks in O(limit + recent updates).  A shard's
-- history up to its durable since is its consolidated base, stored at time
-- -1 (below every time a write gets); each shard gets an index on
-- peek.row_hash(data) of the base rows (a row's base rows, found without a
-- scan) and one on the base rows that cannot be read alone (diff <= 0).
-- Writes, at times >= 0, add nothing to either.  0.1's compaction left the
-- history up to the since consolidated at the since: it moves to -1 here.
CREATE FUNCTION peek.row_hash(record) RETURNS integer
AS 'MODULE_PATHNAME', 'peek_row_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
DO $$
DECLARE
    s regclass;
    since bigint;
    n name;
BEGIN
    FOR s, since IN SELECT o.shard, o.since FROM peek.objects o WHERE o.shard IS NOT NULL LOOP
        n := (SELECT relname FROM pg_catalog.pg_class WHERE oid = s);
        IF since OPERATOR(pg_catalog.>) 0 THEN
            EXECUTE pg_catalog.format('UPDATE %s SET time = -1 WHERE time OPERATOR(pg_catalog.<=) $1', s)
              USING since;
        END IF;
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (peek.row_hash(data)) WHERE time OPERATOR(pg_catalog.<) 0',
                                  n || '_rows', s);
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (time) WHERE diff OPERATOR(pg_catalog.<=) 0 AND time OPERATOR(pg_catalog.<) 0',
                                  n || '_flagged', s);
    END LOOP;
END $$;

-- Replicas: how a hot standby follows its primary, per object:
-- the frontiers replay brought (the catalog row; an index's upper is its
-- collection's), the frontiers its runtimes published, the times replayed
-- but not published yet, and how far replay trails the primary (0 while
-- it has replayed all it received).  On a primary, lag_times shows what
-- the maintenance runtime has not published yet and replay_lag_ms is NULL.
CREATE VIEW peek.replication WITH (security_barrier) AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' ELSE 'index' END AS kind,
       pg_catalog.pg_is_in_recovery() AS standby,
       c.upper AS replayed_upper, o.since AS replayed_since,
       r.upper, r.since,
       c.upper OPERATOR(pg_catalog.-) coalesce(r.upper, 0) AS lag_times,
       CASE WHEN NOT pg_catalog.pg_is_in_recovery() THEN NULL
            WHEN pg_catalog.pg_last_wal_receive_lsn() OPERATOR(pg_catalog.<=) pg_catalog.pg_last_wal_replay_lsn() THEN 0
            ELSE (extract(epoch FROM pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.pg_last_xact_replay_timestamp())
                  OPERATOR(pg_catalog.*) 1000)::bigint
       END AS replay_lag_ms
  FROM peek.objects o
  JOIN peek.objects c ON c.id = coalesce(o.collection, o.id)
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE peek.visible(o.owner);
GRANT SELECT ON peek.replication TO PUBLIC;
