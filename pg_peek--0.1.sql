-- pg_peek 0.1: catalog, SQL surface and views.  See README.md and DESIGN §4.
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
    created_at    timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('peek.objects', '');
SELECT pg_catalog.pg_extension_config_dump('peek.object_seq', '');
REVOKE ALL ON peek.objects FROM PUBLIC;
GRANT SELECT ON peek.objects TO PUBLIC;

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

-- introspection
CREATE FUNCTION peek.runtime_status(
    OUT role text, OUT pid integer, OUT state text, OUT started_at timestamptz,
    OUT restarts integer, OUT wakeups bigint, OUT dirty_marks bigint,
    OUT peeks_served bigint, OUT peeks_parked bigint, OUT peeks_reexamined bigint,
    OUT peeks_canceled bigint, OUT commands bigint, OUT publications bigint,
    OUT compactions bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_runtime_status' LANGUAGE C;

CREATE FUNCTION peek.registry_status(
    OUT id bigint, OUT published boolean, OUT dropped boolean, OUT since bigint,
    OUT upper bigint, OUT allowed_since bigint, OUT maintenance_hold bigint,
    OUT interactive_hold bigint, OUT waiters integer, OUT failed boolean,
    OUT batches integer, OUT updates bigint, OUT bytes bigint,
    OUT live_handles integer, OUT handle_pins bigint, OUT handle_releases bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_registry_status' LANGUAGE C;

CREATE FUNCTION peek.active_peek_status(
    OUT id uuid, OUT object_id bigint, OUT kind text, OUT "time" bigint,
    OUT runtime text, OUT state text, OUT pid integer, OUT submitted_at timestamptz)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'peek_active_peek_status' LANGUAGE C;

CREATE VIEW peek.runtimes AS SELECT * FROM peek.runtime_status();

CREATE VIEW peek.collections AS
SELECT o.name, o.row_type, o.owner, o.shard,
       greatest(r.since, o.since) AS since, greatest(r.upper, o.upper) AS upper,
       o.allowed_since, o.created_at
  FROM peek.objects o
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'c';

CREATE VIEW peek.indexes AS
SELECT o.name, c.name AS collection, o.key_columns AS key, o.owner,
       CASE WHEN r.failed THEN 'failed'
            WHEN r.published THEN 'ready'
            ELSE 'hydrating' END AS state,
       coalesce(r.updates, 0) AS updates, coalesce(r.batches, 0) AS batches,
       coalesce(r.bytes, 0) AS bytes, r.since, r.upper, o.allowed_since, o.created_at
  FROM peek.objects o
  JOIN peek.objects c ON c.id = o.collection
  LEFT JOIN peek.registry_status() r ON r.id = o.id AND NOT r.dropped
 WHERE o.kind = 'i';

CREATE VIEW peek.frontiers AS
SELECT o.name AS object,
       CASE o.kind WHEN 'c' THEN 'collection' ELSE 'index' END AS kind,
       r.since, r.upper, r.waiters
  FROM peek.registry_status() r
  JOIN peek.objects o ON o.id = r.id
 WHERE r.published AND NOT r.dropped;

CREATE VIEW peek.active_peeks AS
SELECT p.id, o.name AS object, p.kind, p."time", p.runtime,
       p.state, p.pid, p.submitted_at
  FROM peek.active_peek_status() p
  LEFT JOIN peek.objects o ON o.id = p.object_id;
