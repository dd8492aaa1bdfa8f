# Capture skips pg_peek's own transactions: the
# maintenance runtime's transactions (each round's shard appends and catalog
# update) carry the replication origin DoNotReplicateId, and the decoder
# filters them out before the reorder buffer queues their changes, so a
# source's slot hands its plugin the user's transactions only.
#
#  * 30 single-row INSERTs into a captured table, each awaited in the index
#    before the next (so each is appended by a capture round of its own):
#    pg_stat_replication_slots.total_txns of the source's slot grows by the
#    30 user transactions, not by the 30 rounds' transactions as well.
#  * A second source's slot decodes the first source's appends no more
#    than its own: its count grows by the same 30.
#  * Every row is there by index and persist peek, and still after a crash
#    restart, whose recovery replays the marked commits.
#  * Only pg_peek's own mark is skipped: a session with a replication origin
#    of its own (pg_replication_origin_session_setup), and a subscription
#    applying a publisher's inserts, updates and deletes into the captured
#    table, are captured.
#  * pg_peek's own tables (a shard, the catalog) cannot be captured: their
#    changes come from the runtimes (0A000).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_own_writes',
	conf => ['autovacuum = off', 'max_wal_senders = 10', 'max_logical_replication_workers = 4']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int, v text);
	CREATE TABLE other (k int);
	SELECT peek.create_source('src', 't');
	SELECT peek.create_source('other_src', 'other');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'the source and its index are ready');
ok(poll_until($node,
		"SELECT count(*) FROM pg_replication_slots WHERE plugin = 'pg_peek'", '2'),
	'both sources have their slots');

# the slots' decoded transactions: src's, then other_src's (slots are
# named pg_peek_<database oid>_<source id>)
my $slot = q{'pg_peek_' || (SELECT oid FROM pg_database WHERE datname = 'postgres') || '_' || o.id};
my $txns = qq{
	SELECT string_agg(coalesce(s.total_txns, 0)::text, ' ' ORDER BY o.id)
	  FROM peek.objects o
	  JOIN pg_replication_slots r ON r.slot_name = $slot
	  LEFT JOIN pg_stat_replication_slots s ON s.slot_name = r.slot_name
	 WHERE o.name IN ('src', 'other_src')
};
is(sql("SELECT count(*) FROM peek.objects o JOIN pg_replication_slots r ON r.slot_name = $slot"),
	'2', "the sources' slots are found by name");

sql(q{
	CREATE PROCEDURE insert_awaited(n int) LANGUAGE plpgsql AS $$
	BEGIN
	  FOR i IN 1 .. n LOOP
	    INSERT INTO t VALUES (i, 'v' || i);
	    COMMIT;
	    WHILE (SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(i))) = 0 LOOP
	      PERFORM pg_sleep(0.002);
	    END LOOP;
	  END LOOP;
	END $$;
});
my ($src0, $other0) = split / /, sql($txns);
sql("CALL insert_awaited(30)");
# the other slot decodes past the same transactions within a round or two
my $inserted = sql("SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint");
ok(poll_until($node, "SELECT upper > $inserted FROM peek.collections WHERE name = 'other_src'"),
	'the other source has decoded past them too');
sql("SELECT pg_stat_force_next_flush()");
my ($src1, $other1) = split / /, sql($txns);
note("total_txns src $src0 -> $src1, other_src $other0 -> $other1");
is($src1 - $src0, 30, "the source's slot decoded the 30 user transactions and none of the runtime's");
# (once a replay showed t is not its table, it skips t's changes unread:
# capture/rounds.c other_tables_change; never more than the user's 30)
cmp_ok($other1 - $other0, '<=', 30,
	"the other source's slot replayed no more: the first source's appends were skipped");

my $want = join(',', map { "v$_" } 1 .. 30);
is(sql("SELECT string_agg(v, ',' ORDER BY k) FROM peek.persist_peek(NULL::t, 'src')"),
	$want, 'the persist peek has every row');
$node->stop('immediate');
$node->start;
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'after a crash restart the index is ready again');
is(sql("SELECT string_agg(v, ',' ORDER BY k) FROM peek.persist_peek(NULL::t, 'src')"),
	$want, 'and the source still has every row');
sql("INSERT INTO t VALUES (31, 'v31')");
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(31))", '1'),
	'and captures a new one');

# ---- other origins are captured ----------------------------------------------
sql(q{
	SELECT pg_replication_origin_create('user_origin');
	SELECT pg_replication_origin_session_setup('user_origin');
	BEGIN;
	SELECT pg_replication_origin_xact_setup('0/1', now());
	INSERT INTO t VALUES (40, 'with origin');
	COMMIT;
	INSERT INTO t VALUES (41, 'with origin, no xact setup');
	SELECT pg_replication_origin_session_reset();
});
ok(poll_until($node,
		"SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::t, 'src') WHERE v LIKE 'with origin%'",
		'40,41'),
	'the writes of a session with a replication origin of its own are captured');

my $pub = new_node('publisher', no_peek => 1,
	conf => ['wal_level = logical', 'max_wal_senders = 10', 'max_replication_slots = 10']);
$pub->safe_psql('postgres', q{
	CREATE TABLE t (k int, v text);
	ALTER TABLE t REPLICA IDENTITY FULL;
	CREATE PUBLICATION p FOR TABLE t;
	INSERT INTO t VALUES (100, 'pub initial');
});
my $connstr = $pub->connstr('postgres');
$connstr =~ s/'/''/g;
sql("CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p");
$pub->wait_for_catchup('s');
$pub->safe_psql('postgres', q{
	INSERT INTO t SELECT i, 'pub ' || i FROM generate_series(101, 150) i;
	UPDATE t SET v = v || ' upd' WHERE k % 2 = 0;
	DELETE FROM t WHERE k % 5 = 0;
});
$pub->wait_for_catchup('s');
my $table = sql("SELECT string_agg(k || ':' || v, ',' ORDER BY k, v) FROM t");
ok(poll_until($node,
		"SELECT string_agg(k || ':' || v, ',' ORDER BY k, v) FROM peek.persist_peek(NULL::t, 'src')", $table),
	'what a subscription applies (inserts, updates, deletes) is captured');
ok(poll_until($node,
		"SELECT string_agg(k || ':' || v, ',' ORDER BY k, v) FROM peek.index_peek(NULL::t, 't_k')", $table),
	'and the index has it too');
sql("DROP SUBSCRIPTION s");
$pub->stop;

# ---- pg_peek's own tables ----------------------------------------------------
for my $own (sql("SELECT shard::regclass FROM peek.objects WHERE name = 'src'"), 'peek.objects')
{
	my ($state, $msg) = sql_error($node, "SELECT peek.create_source('own', '$own')");
	is($state, '0A000', "create_source refuses $own: $msg");
}
is(sql("SELECT count(*) FROM peek.objects WHERE name = 'own'"), '0', 'and creates nothing');

done_testing();
