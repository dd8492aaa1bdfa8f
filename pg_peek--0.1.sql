-- pg_peek 0.1: catalog, SQL surface and views.  See README.md and docs/architecture.md.
\echo Use "CREATE EXTENSION pg_peek" to load this file. \quit

-- The schema is a member of the extension: DROP EXTENSION refuses to drop
-- collections' shards unless CASCADE is given.
CREATE SCHEMA peek;

-- The durable catalog: one row per collection or index.  Times are logical
-- bigints; upper and since are the durable frontiers of a collection's shard.
CREATE SEQUENCE peek.object_seq;

CREATE TABLE peek.objects (
    id            bigint PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    kind          "char" NOT NULL CHECK (kind IN ('c', 'i')),
    row_type      regtype NOT NULL,
    owner         regrole NOT NULL,
    shard         regclass,                       -- collections: their updates
    collection    bigint REFERENCES peek.objects (id), -- indexes: what they arrange
    key_columns   text[],                         -- indexes: key column names
    key_attnums   int2[],                         -- ... and their attribute numbers
    upper         bigint NOT NULL DEFAULT 0 CHECK (upper >= 0),
    since         bigint NOT NULL DEFAULT 0 CHECK (since >= 0),
    allowed_since bigint NOT NULL DEFAULT 0 CHECK (allowed_since >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- sources (and their indexes): the captured table; row_type is a copy of
    -- its row type, so that the table can be altered or dropped
    source        oid,
    failure       text                            -- a failed source: why
);
SELECT pg_catalog.pg_extension_config_dump('peek.objects', '');
SELECT pg_catalog.pg_extension_config_dump('peek.object_seq', '');

-- collections and their durable shards
CREATE FUNCTION peek.create_collection(name text, row_type regtype)
RETURNS void AS 'MODULE_PATHNAME', 'peek_create_collection' LANGUAGE C;

CREATE FUNCTION peek.drop_collection(name text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_drop_collection' LANGUAGE C;

CREATE FUNCTION peek.append(name text, rows anyarray, at bigint, diff bigint DEFAULT 1)
RETURNS void AS 'MODULE_PATHNAME', 'peek_append' LANGUAGE C;

CREATE FUNCTION peek.advance(name text, upper bigint)
RETURNS void AS 'MODULE_PATHNAME', 'peek_advance' LANGUAGE C;

CREATE FUNCTION peek.write(name text, inserts anyarray)
RETURNS bigint AS 'MODULE_PATHNAME', 'peek_write' LANGUAGE C;

CREATE FUNCTION peek.write(name text, inserts anyarray, deletes anyarray)
RETURNS bigint AS 'MODULE_PATHNAME', 'peek_write' LANGUAGE C;

CREATE FUNCTION peek.allow_compaction(object text, since bigint)
RETURNS void AS 'MODULE_PATHNAME', 'peek_allow_compaction' LANGUAGE C;

-- sources: collections fed from a table's changes through logical decoding
CREATE FUNCTION peek.create_source(name text, source regclass)
RETURNS void AS 'MODULE_PATHNAME', 'peek_create_source' LANGUAGE C;

CREATE FUNCTION peek.drop_source(name text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_drop_source' LANGUAGE C;

-- indexes (arrangements)
CREATE FUNCTION peek.create_index(name text, collection text, key text[])
RETURNS void AS 'MODULE_PATHNAME', 'peek_create_index' LANGUAGE C;

CREATE FUNCTION peek.drop_index(name text)
RETURNS void AS 'MODULE_PATHNAME', 'peek_drop_index' LANGUAGE C;

-- peeks
CREATE FUNCTION peek.index_peek(rowtype anyelement, index text, key record DEFAULT NULL,
                                as_of bigint DEFAULT NULL, "limit" bigint DEFAULT NULL)
RETURNS SETOF anyelement AS 'MODULE_PATHNAME', 'peek_index_peek' LANGUAGE C;

CREATE FUNCTION peek.persist_peek(rowtype anyelement, collection text,
                                  as_of bigint DEFAULT NULL, "limit" bigint DEFAULT NULL)
RETURNS SETOF anyelement AS 'MODULE_PATHNAME', 'peek_persist_peek' LANGUAGE C;

-- introspection: set-returning functions over shared state ...
CREATE FUNCTION peek.runtime_status(
    OUT role text, OUT pid integer, OUT state text, OUT started_at timestamptz,
    OUT restarts integer, OUT wakeups bigint, OUT dirty_marks bigint,
    OUT peeks_served bigint, OUT peeks_parked bigint, OUT peeks_reexamined bigint,
    OUT peeks_canceled bigint, OUT commands bigint, OUT publications bigint,
    OUT compactions bigint, OUT dsa_bytes bigint, OUT dsa_limit bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_runtime_status' LANGUAGE C;

CREATE FUNCTION peek.registry_status(
    OUT id bigint, OUT published boolean, OUT dropped boolean, OUT since bigint,
    OUT upper bigint, OUT allowed_since bigint, OUT failed boolean,
    OUT batches integer, OUT updates bigint, OUT rows bigint, OUT bytes bigint,
    OUT hydrating boolean, OUT hydrated_rows bigint, OUT hydration_total bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_registry_status' LANGUAGE C;

CREATE FUNCTION peek.runtime_object_status(
    OUT id bigint, OUT runtime text, OUT standing_hold bigint, OUT waiters integer,
    OUT live_handles integer, OUT handle_pins bigint, OUT handle_releases bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_runtime_object_status' LANGUAGE C;

CREATE FUNCTION peek.peek_hold_status(
    OUT object_id bigint, OUT runtime text, OUT "time" bigint, OUT peek uuid)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_peek_hold_status' LANGUAGE C;

CREATE FUNCTION peek.active_peek_status(
    OUT id uuid, OUT object_id bigint, OUT kind text, OUT "time" bigint,
    OUT runtime text, OUT state text, OUT pid integer, OUT submitted_at timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_active_peek_status' LANGUAGE C;

CREATE FUNCTION peek.duration_status(
    OUT runtime text, OUT kind text, OUT duration_ns bigint, OUT count bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_duration_status' LANGUAGE C;

-- ... restricted to what the current user may see, as pg_stat_statements
-- does: objects it can peek (owner, pg_read_all_data), or everything for
-- members of pg_read_all_stats (pg_monitor is one).
CREATE FUNCTION peek.visible(owner regrole) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.pg_has_role(owner, 'MEMBER')
        OR pg_catalog.pg_has_role('pg_read_all_data', 'MEMBER')
        OR pg_catalog.pg_has_role('pg_read_all_stats', 'MEMBER')
$$;

-- a collection's row count before its upper (reads its shard; NULL for a
-- collection the caller may not see)
CREATE FUNCTION peek.collection_rows(name text) RETURNS bigint
AS 'MODULE_PATHNAME', 'peek_collection_rows' LANGUAGE C STABLE STRICT;

CREATE VIEW peek.runtimes AS SELECT * FROM peek.runtime_status();

CREATE VIEW peek.collections AS
SELECT o.name, o.row_type, o.owner,
       CASE WHEN o.failure IS NOT NULL THEN 'failed'
            WHEN o.source IS NOT NULL AND o.upper = 0 THEN 'loading'
            WHEN r.published THEN 'ready' ELSE 'pending' END AS state,
       o.failure, o.source::regclass AS source,
       peek.collection_rows(o.name) AS rows,
       0 AS batches, 0::bigint AS bytes,
       pg_catalog.pg_total_relation_size(o.shard) AS shard_bytes, o.shard,
       greatest(r.since, o.since) AS since, greatest(r.upper, o.upper) AS upper,
       o.allowed_since, o.created_at
  FROM peek.objects o
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'c' AND peek.visible(o.owner);

CREATE VIEW peek.indexes AS
SELECT o.name, c.name AS collection, o.key_columns AS key, o.owner,
       CASE WHEN r.failed OR c.failure IS NOT NULL THEN 'failed'
            WHEN r.hydrating OR NOT coalesce(r.published, false) THEN 'hydrating'
            ELSE 'ready' END AS state,
       CASE WHEN c.failure IS NOT NULL THEN c.failure
            WHEN r.failed THEN 'arrangement exceeded pg_peek.max_memory' END AS failure,
       coalesce(r.rows, 0) AS rows, coalesce(r.updates, 0) AS updates,
       coalesce(r.batches, 0) AS batches, coalesce(r.bytes, 0) AS bytes,
       r.since, r.upper, o.allowed_since, o.created_at
  FROM peek.objects o
  JOIN peek.objects c ON c.id = o.collection
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'i' AND peek.visible(o.owner);

-- one row per object and runtime that holds or reads it
CREATE VIEW peek.frontiers AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' ELSE 'index' END AS kind,
       x.runtime, r.since, r.upper, x.waiters
  FROM peek.registry_status() r
  JOIN peek.objects o ON o.id = r.id
  JOIN peek.runtime_object_status() x ON x.id = r.id
 WHERE r.published AND NOT r.dropped AND peek.visible(o.owner);

-- who holds compaction back: the user's allowance, standing holds, peeks
CREATE VIEW peek.holds AS
SELECT o.name AS object, 'user' AS kind, NULL::text AS runtime, o.allowed_since AS "time",
       NULL::uuid AS peek
  FROM peek.objects o
 WHERE peek.visible(o.owner)
UNION ALL
SELECT o.name, 'standing', x.runtime, x.standing_hold, NULL
  FROM peek.runtime_object_status() x JOIN peek.objects o ON o.id = x.id
 WHERE peek.visible(o.owner)
UNION ALL
SELECT o.name, 'peek', h.runtime, h."time", h.peek
  FROM peek.peek_hold_status() h JOIN peek.objects o ON o.id = h.object_id
 WHERE peek.visible(o.owner);

CREATE VIEW peek.arrangement_sharing AS
SELECT o.name AS index, x.runtime, x.live_handles, x.handle_pins, x.handle_releases
  FROM peek.runtime_object_status() x
  JOIN peek.objects o ON o.id = x.id
 WHERE o.kind = 'i' AND peek.visible(o.owner);

CREATE VIEW peek.active_peeks AS
SELECT p.id, o.name AS object, p.kind, p."time", p.runtime,
       CASE p.state WHEN 'running' THEN 'running' ELSE 'waiting' END AS state,
       CASE p.state
            WHEN 'submitted' THEN 'runtime'
            WHEN 'parked' THEN CASE WHEN coalesce(r.published, false) THEN 'upper' ELSE 'publication' END
       END AS waiting_on,
       r.since, r.upper, p.pid, p.submitted_at
  FROM peek.active_peek_status() p
  LEFT JOIN peek.objects o ON o.id = p.object_id
  LEFT JOIN peek.registry_status() r ON r.id = p.object_id
 WHERE o.owner IS NULL OR peek.visible(o.owner);

CREATE VIEW peek.peek_durations AS SELECT * FROM peek.duration_status();

CREATE VIEW peek.hydration_progress AS
SELECT o.name AS index, c.name AS collection, r.hydrated_rows AS rows_loaded,
       r.hydration_total AS rows_total
  FROM peek.registry_status() r
  JOIN peek.objects o ON o.id = r.id
  JOIN peek.objects c ON c.id = o.collection
 WHERE r.hydrating AND NOT r.dropped AND peek.visible(o.owner);

-- the views filter their rows by what the user may see
REVOKE ALL ON peek.objects FROM PUBLIC;
GRANT SELECT ON peek.runtimes, peek.collections, peek.indexes, peek.frontiers,
    peek.holds, peek.arrangement_sharing, peek.active_peeks, peek.peek_durations,
    peek.hydration_progress TO PUBLIC;
