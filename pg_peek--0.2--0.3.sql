-- pg_peek 0.2 -> 0.3
\echo Use "ALTER EXTENSION pg_peek UPDATE TO '0.3'" to load this file. \quit

-- A fresh CREATE EXTENSION runs pg_peek--0.1.sql, pg_peek--0.1--0.2.sql and
-- then this script, so every change of 0.3 to the SQL objects lives here,
-- once.
