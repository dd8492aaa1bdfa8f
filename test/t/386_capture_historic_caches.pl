# Each source's slot is decoded in the maintenance runtime at its own
# position in the WAL, and the runtime reads the current catalog between
# rounds: one process, one relcache.  A relation's entry built while one
# source decoded a transaction from before a catalog change -- whose
# invalidation the runtime had already taken -- must not serve another
# source's decoding after the change, nor the runtime's own reads.
#
# Here source a (of table x) is far behind, in two million rows of its own
# table to arrange, when it replays an UPDATE of table lsa made before lsa had REPLICA
# IDENTITY FULL; create_source of lsa (which sets it) committed after that
# WAL, and the runtime, stopped meanwhile, took its invalidation on waking.
# The new source lsa_src then decodes its first UPDATE while a is still in
# its rows: before the fix it found lsa's entry as a had built it, without
# REPLICA IDENTITY FULL, and failed ("no longer has REPLICA IDENTITY FULL").
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_historic_caches',
	conf => ['autovacuum = off', 'max_wal_size = 2GB', 'logical_decoding_work_mem = 64MB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE x (k int, v text);
	CREATE TABLE lsa (k int, v int);
	INSERT INTO lsa SELECT i, i FROM generate_series(1, 10) i;
	SELECT peek.create_source('a', 'x');
	SELECT peek.create_index('a_k', 'a', ARRAY['k']);
	INSERT INTO x VALUES (1, 'one');
	CREATE PROCEDURE fill_x() LANGUAGE plpgsql AS $$
	BEGIN
	  FOR i IN 1 .. 40 LOOP
	    INSERT INTO x SELECT g, repeat('n', 100) FROM generate_series(1, 50000) g;
	    COMMIT;
	  END LOOP;
	END $$;
});
ok(poll_until($node, "SELECT count(*) FROM peek.persist_peek(NULL::x, 'a')", '1'),
	'source a has its row');
is(sql("SELECT relreplident FROM pg_class WHERE relname = 'lsa'"), 'd',
	'lsa has the default replica identity');

my $maintenance = runtime_pid($node, interactive_mode() eq 'on' ? 'maintenance' : 'solo');
stop_runtime($node, $maintenance);
sql("UPDATE lsa SET v = v + 1");
my $before_fill = sql("SELECT pg_current_wal_insert_lsn()");
sql("CALL fill_x()");
sql(q{
	SET client_min_messages = warning;
	SELECT peek.create_source('lsa_src', 'lsa');
});
my $created = sql("SELECT pg_current_wal_insert_lsn()");
note('WAL between the UPDATE and create_source: '
	  . sql("SELECT ('$created'::pg_lsn - '$before_fill') / 1048576") . ' MB');
kill 'CONT', $maintenance;

ok(poll_until($node, "SELECT state IN ('ready', 'failed') FROM peek.collections WHERE name = 'lsa_src'",
		't', 120),
	'lsa_src is loaded');
sql("UPDATE lsa SET v = v * 10 WHERE k <= 5");
my $updated = sql("SELECT pg_current_wal_insert_lsn()");
ok(poll_until($node, qq{
	SELECT state = 'failed' OR upper > ('$updated'::pg_lsn - '0/0')::bigint
	  FROM peek.collections WHERE name = 'lsa_src'}, 't', 120),
	'lsa_src decoded its UPDATE (or failed)');
# the scenario: a had not passed create_source when lsa_src decoded its UPDATE
my $a_upper = sql("SELECT upper FROM peek.collections WHERE name = 'a'");
note("a's upper then: $a_upper; create_source's commit before "
	  . sql("SELECT ('$created'::pg_lsn - '0/0')::bigint"));
cmp_ok($a_upper, '<', sql("SELECT ('$created'::pg_lsn - '0/0')::bigint"),
	'source a was still behind create_source meanwhile');
is(sql("SELECT state || coalesce(': ' || failure, '') FROM peek.collections WHERE name = 'lsa_src'"),
	'ready', 'lsa_src did not fail');
is(sql(q{
	SELECT count(*) FROM ((TABLE lsa EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::lsa, 'lsa_src'))
	  UNION ALL (SELECT * FROM peek.persist_peek(NULL::lsa, 'lsa_src') EXCEPT ALL TABLE lsa)) d}),
	'0', 'lsa_src holds exactly the table\'s rows');
ok(poll_until($node, "SELECT count(*) FROM peek.persist_peek(NULL::x, 'a')", '2000001', 300),
	'source a catches up');
is(sql("SELECT state FROM peek.collections WHERE name = 'a'"), 'ready', 'source a did not fail');

done_testing();
