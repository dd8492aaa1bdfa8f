-- Drop what sql/00_helpers.sql made.
DROP FUNCTION try(text), wait_for(text, int), shard_rows(text),
    view_mismatches(text, text, bigint, bigint);
