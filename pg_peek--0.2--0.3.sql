-- pg_peek 0.2 -> 0.3
\echo Use "ALTER EXTENSION pg_peek UPDATE TO '0.3'" to load this file. \quit

-- A fresh CREATE EXTENSION runs pg_peek--0.1.sql, pg_peek--0.1--0.2.sql and
-- then this script, so every change of 0.3 to the SQL objects lives here,
-- once.

-- Issue 22, frontiers make no garbage: a seal no longer updates its
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

CREATE OR REPLACE VIEW peek.collections WITH (security_barrier) AS
SELECT o.name, o.row_type, o.owner,
       CASE WHEN o.failure IS NOT NULL THEN 'failed'
            WHEN o.source IS NOT NULL AND u.upper = 0 THEN 'loading'
            WHEN r.published THEN 'ready' ELSE 'pending' END AS state,
       o.failure, o.source,
       peek.collection_rows(o.name) AS rows,
       0 AS batches, 0::bigint AS bytes,
       pg_catalog.pg_total_relation_size(o.shard) AS shard_bytes, o.shard,
       greatest(r.since, o.since) AS since, greatest(r.upper, u.upper) AS upper,
       o.allowed_since, o.created_at
  FROM peek.objects o
  CROSS JOIN LATERAL (SELECT coalesce(max(x.upper), 0) AS upper FROM peek.uppers x
                       WHERE x.object = o.id OPERATOR(pg_catalog.&) 4294967295) u
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'c' AND peek.visible(o.owner);

CREATE OR REPLACE VIEW peek.replication WITH (security_barrier) AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' ELSE 'index' END AS kind,
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
