-- Drop what sql/00_helpers.sql made.
DROP FUNCTION try(text), wait_for(text, int), shard_rows(text), shard_updates(text),
    view_mismatches(text, text, bigint, bigint), view_mismatches(text, text, bigint[]),
    restart_maintenance(), test_ext_with_collection(text, text, int), views_bad_times(),
    log_write(text, regtype, regclass, bigint, bigint), log_contents(regclass, bigint),
    views_bad_times_at(text, text, regclass);
