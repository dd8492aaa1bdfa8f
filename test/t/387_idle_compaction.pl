# Compaction of idle objects comes from what the runtime is told alone: the
# maintenance runtime, with no compaction pending, looks at retentions only
# when the first is due (maintenance.c), and a settled spine with no merge
# worth starting is not asked again until a batch or a later since
# (spine_nothing_to_merge).  With no write at all: a reload of
# pg_peek.retention compacts the objects that follow it; set_retention
# shortening a long retention compacts the object at once, not when the
# long one was due (1 h / 16 later); allow_compaction of an idle, settled
# index that keeps all history rewrites its one batch at the new since,
# consolidating the updates of the rows written again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('idle_compaction');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v int);
	SELECT peek.create_collection('r', 'kv');
	SELECT peek.create_index('r_by_k', 'r', '{k}');
	SELECT peek.create_collection('own', 'kv');
	SELECT peek.set_retention('own', '1 hour');
	SELECT peek.create_collection('a', 'kv');
	SELECT peek.set_retention('a', NULL);
	SELECT peek.create_index('a_by_k', 'a', '{k}');
	SELECT peek.set_retention('a_by_k', NULL);
});
# 'a' rewrites each of 20 keys 20 times, row by row: 400 seals, 780 updates
sql(q{
	DO $$
	BEGIN
		FOR i IN 0 .. 399 LOOP
			PERFORM peek.write('r', ARRAY[(i % 20, i)]::kv[]);
			PERFORM peek.write('own', ARRAY[(i % 20, i)]::kv[]);
			PERFORM peek.write('a', ARRAY[(i % 20, i)]::kv[],
				CASE WHEN i >= 20 THEN ARRAY[(i % 20, i - 20)]::kv[] ELSE '{}'::kv[] END);
			COMMIT;
		END LOOP;
	END
	$$});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections "
		  . "UNION ALL SELECT state FROM peek.indexes) s"), 'the objects are ready');
ok(poll_until($node, "SELECT batches = 1 AND updates = 780 AND since = 0 "
		  . "FROM peek.indexes WHERE name = 'a_by_k'"),
	'a_by_k settles into one batch of every update, at since 0');
# idle long enough for every compaction to be done and the runtime quiet
sleep 2;
is(sql("SELECT string_agg(name || ' ' || since, ', ' ORDER BY name) FROM "
		  . "(SELECT name, since FROM peek.collections UNION ALL SELECT name, since FROM peek.indexes) s"),
	'a 0, a_by_k 0, own 0, r 0, r_by_k 0', 'nothing compacted yet');

sql("ALTER SYSTEM SET pg_peek.retention = '1s'; SELECT pg_reload_conf()");
ok(poll_until($node, "SELECT since = upper - 1 FROM peek.collections WHERE name = 'r'"),
	'a reload alone compacts the collection that follows the setting');
ok(poll_until($node, "SELECT since = upper - 1 FROM peek.indexes WHERE name = 'r_by_k'"),
	'and its index');
is(sql("SELECT since FROM peek.collections WHERE name = 'own'"), '0',
	'the collection with its own retention of an hour is not compacted');

sql("SELECT peek.set_retention('own', '1 s')");
ok(poll_until($node, "SELECT since = upper - 1 FROM peek.collections WHERE name = 'own'"),
	'set_retention shortening it compacts it, with no write');

is(sql("SELECT updates || ' ' || since FROM peek.indexes WHERE name = 'a_by_k'"), '780 0',
	'the index that keeps all history is not compacted by the reload');
sql("SELECT peek.allow_compaction('a_by_k', 399)");
ok(poll_until($node, "SELECT batches || ' ' || updates || ' ' || since "
		  . "FROM peek.indexes WHERE name = 'a_by_k'", '1 20 399'),
	'allow_compaction alone rewrites the settled index at its since: 20 updates');
is(sql("SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM peek.index_peek(NULL::kv, 'a_by_k')"),
	join(',', map { "$_:" . (380 + $_) } 0 .. 19), 'its contents are the latest rows');
log_is_clean($node, 'idle compaction');
done_testing();
