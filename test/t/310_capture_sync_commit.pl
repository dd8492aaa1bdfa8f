# A captured commit is not visible to peeks before PostgreSQL makes it
# visible to other sessions.  A commit
# whose session waits for a synchronous standby has its commit record in
# the WAL (written, flushed) but its transaction is still in the proc array:
# SQL in other sessions does not see it, and a failover could lose it.
# Capture rounds decode the written WAL; the source's upper stays below such
# a commit until it is visible.
#
#  * synchronous_standby_names names a standby that does not exist: an
#    INSERT into the captured table hangs in its session (wait event
#    SyncRep).  A later INSERT with synchronous_commit = local commits, and
#    one into another captured table, which is peeked meanwhile.  For
#    3 s, peeks at the latest time (persist and index, serializable) show
#    neither (the later one is after the held commit); the source's upper
#    stays at or below the WAL position the held commit had reached; a
#    strict serializable peek waits (statement_timeout); a persist peek and
#    an index peek as_of a time after the commit wait, while later WAL is
#    written.  Clearing
#    synchronous_standby_names releases the INSERT: SQL sees it, the waiting
#    peeks return it, and latest peeks show both rows.  (Before the fix the
#    peeks showed the held row within a few milliseconds.)
#  * a real synchronous standby: a commit completes and is peeked promptly;
#    with the standby stopped, a commit hangs and is not peeked; once the
#    standby is started again it completes and is peeked.
#  * a commit held when the server crashes (immediate stop; the names
#    cleared for the restart): committed locally, so after the restart SQL
#    sees it, and so do the peeks, exactly once.
#  * ordinary commits (synchronous_commit on, no standby named): 20 single
#    INSERTs, each visible to an index peek within 10 s (a loaded machine);
#    at the end the source holds exactly the table's rows, no change twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $node = new_node('sync_commit',
	init => { allows_streaming => 1 },
	conf => [ 'wal_receiver_status_interval = 1s', 'autovacuum = off' ]);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int, v text);
	CREATE TABLE other (k int);
	SELECT peek.create_source('src', 't');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);
	SELECT peek.create_source('other_src', 'other');
	SELECT peek.create_index('other_k', 'other_src', ARRAY['k']);
	INSERT INTO t VALUES (1, 'first');
});
ok(poll_until($node, "SELECT count(*) FROM peek.indexes WHERE name IN ('t_k', 'other_k') AND state = 'ready'", '2'),
	'the sources and their indexes are ready');
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(1))", '1'),
	'the first row is peeked');

sub set_standby_names
{
	my ($names) = @_;
	sql(defined $names
		? "ALTER SYSTEM SET synchronous_standby_names = '$names'"
		: "ALTER SYSTEM RESET synchronous_standby_names");
	sql("SELECT pg_reload_conf()");
	ok(poll_until($node, "SHOW synchronous_standby_names", $names // ''),
		'synchronous_standby_names = ' . ($names // "''"));
}

# a commit into t in its own session, waiting for the synchronous standby
sub start_held_insert
{
	my ($k, $what) = @_;
	my $h = start_bg($node, "INSERT INTO t VALUES ($k, 'held $k')");
	my $pid = bg_backend_pid($node, $h);
	ok(defined $pid
		  && poll_until($node,
			"SELECT wait_event FROM pg_stat_activity WHERE pid = $pid", 'SyncRep'),
		"$what: the INSERT of $k waits for the synchronous standby");
	is(sql("SELECT count(*) FROM t WHERE k = $k"), '0',
		"$what: another session's SQL does not see $k");
	return $h;
}

# Peeks at the latest time, for secs seconds: how often one showed a row in @ks.
sub peeks_showing
{
	my ($secs, @ks) = @_;
	my $in = join(', ', @ks);
	my ($shown, $n) = (0, 0);
	my $until = time + $secs;
	while (time < $until)
	{
		$shown += sql("SELECT (SELECT count(*) FROM peek.persist_peek(NULL::t, 'src') WHERE k IN ($in))
			+ (SELECT count(*) FROM unnest(ARRAY[$in]) k,
			     LATERAL peek.index_peek(NULL::t, 't_k', ROW(k)))");
		$n++;
		usleep(100_000);
	}
	note("$n peeks in ${secs}s, $shown rows of ($in) shown");
	return $shown;
}

sub upper { return sql("SELECT upper FROM peek.collections WHERE name = 'src'"); }

# ---- no standby: the commit hangs, the peeks do not show it ---------------------

set_standby_names('absent_standby');
my $held = start_held_insert(2, 'absent standby');
my $after_commit = sql("SELECT pg_current_wal_insert_lsn() - '0/0'");
sql("SET synchronous_commit = local; INSERT INTO t VALUES (3, 'local'); INSERT INTO other VALUES (1)");
is(sql("SELECT count(*) FROM t WHERE k = 3"), '1', 'a later commit with synchronous_commit = local is visible to SQL');
is(peeks_showing(3, 2, 3), 0,
	'for 3 s, latest peeks (persist and index) show neither the held commit nor the later one');
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::other, 'other_k', ROW(1))", '1'),
	'meanwhile the commit into another captured table is peeked: only the held source waits');
cmp_ok(upper(), '<=', $after_commit,
	"the source's upper stays below the held commit");

my ($state) = sql_error($node,
	"SET statement_timeout = '1s'; SET pg_peek.isolation = 'strict serializable';
	 SELECT count(*) FROM peek.persist_peek(NULL::t, 'src')");
is($state, '57014', 'a strict serializable peek waits for the held commit');

my $beyond = sql("SELECT pg_current_wal_insert_lsn() - '0/0'");
my $wait_persist = start_bg($node,
	"SELECT k FROM peek.persist_peek(NULL::t, 'src', as_of => $beyond) ORDER BY k");
my $wait_index = start_bg($node,
	"SELECT k FROM peek.index_peek(NULL::t, 't_k', ROW(2), as_of => $beyond)");
my @waiting = grep { defined } map { bg_backend_pid($node, $_, 10) } $wait_persist, $wait_index;
# WAL after their time, which an upper that ignored the held commit would pass
sql("SET synchronous_commit = local; INSERT INTO other VALUES (2)");
sleep(1);
is(sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'pg_peek%' AND wait_event = 'SyncRep'"),
	'0', 'no runtime waits for the standby');
is(@waiting == 2 ? sql("SELECT count(*) FROM pg_stat_activity
		 WHERE pid IN (" . join(', ', @waiting) . ") AND state = 'active'") : 'not started',
	'2', 'peeks as_of a time after the held commit wait, while later WAL is decoded');

set_standby_names(undef);
my ($rc, $out, $err) = finish_bg($held);
is($rc, 0, 'clearing synchronous_standby_names releases the INSERT') or diag($err);
is(sql("SELECT count(*) FROM t WHERE k = 2"), '1', 'SQL sees the released commit');
($rc, $out, $err) = finish_bg($wait_persist);
is("$rc|$out", "0|1\n2\n3", 'the waiting persist peek returns it, and the later commit');
($rc, $out, $err) = finish_bg($wait_index);
is("$rc|$out", "0|2", 'the waiting index peek returns it');
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(3))", '1'),
	'latest peeks show the later commit');

# ---- a real synchronous standby, stopped and started -------------------------------

$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('sync_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
set_standby_names('sync_standby');
ok(poll_until($node,
		"SELECT sync_state FROM pg_stat_replication WHERE application_name = 'sync_standby'",
		'sync'),
	'the standby is synchronous');
sql("INSERT INTO t VALUES (4, 'acknowledged')");
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(4))", '1'),
	'a commit the standby acknowledged is peeked');

$standby->stop;
$held = start_held_insert(5, 'standby stopped');
is(peeks_showing(2, 5), 0, 'for 2 s, latest peeks do not show it');
$standby->start;
($rc, $out, $err) = finish_bg($held);
is($rc, 0, 'the standby back: the INSERT completes') or diag($err);
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(5))", '1'),
	'and it is peeked');
$standby->stop;

# ---- a crash while a commit is held --------------------------------------------

$held = start_held_insert(6, 'before the crash');
is(peeks_showing(1, 6), 0, 'for 1 s, latest peeks do not show it');
# for the restart, without reloading now
sql("ALTER SYSTEM RESET synchronous_standby_names");
$node->stop('immediate');
finish_bg($held);
$node->start;
is(sql("SELECT count(*) FROM t WHERE k = 6"), '1', 'after the crash: the commit is there (local)');
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(6))", '1'),
	'after the crash: and it is peeked');

# ---- ordinary commits are visible promptly ---------------------------------------

sql(q{
	CREATE TABLE waits (k int, ms float8);
	CREATE PROCEDURE insert_awaited(k0 int, n int) LANGUAGE plpgsql AS $$
	DECLARE t0 timestamptz;
	BEGIN
	  FOR i IN k0 .. k0 + n - 1 LOOP
	    INSERT INTO t VALUES (i, 'ordinary ' || i);
	    COMMIT;
	    t0 := clock_timestamp();
	    WHILE NOT EXISTS (SELECT 1 FROM peek.index_peek(NULL::t, 't_k', ROW(i)))
	          AND clock_timestamp() < t0 + interval '30 s' LOOP
	      PERFORM pg_sleep(0.001);
	    END LOOP;
	    INSERT INTO waits VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
	    COMMIT;
	  END LOOP;
	END $$;
});
sql("CALL insert_awaited(100, 20)");
my ($n, $max, $p50) = split /\|/,
  sql("SELECT count(*), round(max(ms)), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)) FROM waits");
note("ordinary commits: $n, visible after p50 $p50 ms, max $max ms");
cmp_ok($max, '<', 10000, 'each of 20 ordinary commits was peeked within 10 s');

my $at = sql("SELECT pg_current_wal_insert_lsn() - '0/0'");
my $persist = "SELECT * FROM peek.persist_peek(NULL::t, 'src', $at)";
is(sql("SELECT count(*) FROM ((SELECT * FROM t EXCEPT ALL $persist)
	      UNION ALL ($persist EXCEPT ALL SELECT * FROM t)) d"),
	'0', 'the source holds exactly the table\'s rows');
my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");
is(sql("SELECT count(*) FROM (SELECT 1 FROM $shard GROUP BY time, data HAVING abs(sum(diff)) > 1) d"),
	'0', 'no change is in the shard twice');

done_testing();
