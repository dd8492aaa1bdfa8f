-- A peek in a parallel operation: pg_peek's functions are PARALLEL UNSAFE,
-- but a user's function marked PARALLEL SAFE that peeks may run in a
-- parallel worker.  Before: an internal error (XX000, "cannot update
-- SecondarySnapshot during a parallel operation") from the catalog lookup;
-- now 25000 saying why.  The same function called outside one peeks.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_peek CASCADE;
CREATE EXTENSION pg_peek;
RESET client_min_messages;
CREATE TYPE pprow AS (k int, v int);
SELECT peek.create_collection('ppc', 'pprow');
SELECT peek.create_index('ppc_k', 'ppc', '{k}');
SELECT peek.write('ppc', ARRAY[(1, 10), (2, 20)]::pprow[]);
CREATE FUNCTION pp_rows() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS
    $$SELECT count(*) FROM peek.persist_peek(NULL::pprow, 'ppc', as_of => 0)$$;
CREATE FUNCTION pp_key() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS
    $$SELECT count(*) FROM peek.index_peek(NULL::pprow, 'ppc_k', ROW(1), as_of => 0)$$;
SELECT pp_rows(), pp_key();
SET force_parallel_mode = on;
SET parallel_leader_participation = off;
\set VERBOSITY sqlstate
SELECT pp_rows();
SELECT pp_key();
\set VERBOSITY default
SELECT try('SELECT pp_rows()');
RESET force_parallel_mode;
RESET parallel_leader_participation;
SELECT pp_rows(), pp_key();
DROP FUNCTION pp_rows(), pp_key();
SELECT peek.drop_index('ppc_k');
SELECT peek.drop_collection('ppc');
DROP TYPE pprow;
