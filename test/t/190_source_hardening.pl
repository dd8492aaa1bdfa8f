# Sources must not stall or restart the runtimes:
#
#  * an idle transaction holding an xid makes a source's slot creation wait:
#    the source stays 'loading' (its loader shows in pg_stat_activity) while
#    another collection's writes are peekable at once; once the transaction
#    ends the source loads with the right rows;
#  * without a free background worker (max_worker_processes) a source waits,
#    says so in the log, and loads once a worker is free;
#  * drop_source while loading stops the loader and drops the slot; so does
#    DROP EXTENSION; a server restart while loading loads after all;
#  * SIGTERM and SIGKILL of a loader in the middle of its load (its slot
#    persistent, about to write rows): no slot is left over, the source is
#    loaded exactly once;
#  * pg_drop_replication_slot on a source's slot fails that source (55000,
#    "its replication slot was dropped"); no runtime restarts, the other
#    objects go on, also after a server restart; so does WAL the slot
#    needs being removed (max_slot_wal_keep_size);
#  * a lock timeout in a decoding round is tried again: no runtime restart,
#    no change lost or applied twice.
# Throughout, the runtimes keep their pids (no restart) except across the
# server restarts and the crash a SIGKILL causes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;
# the runtimes, the logical replication launcher and one loader
my $node = new_node('source_hardening',
	conf => [ 'max_worker_processes = ' . ($nruntimes + 2), 'restart_after_crash = on' ]);
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";
my $runtimes_sql = "SELECT string_agg(role || ':' || pid || ':' || restarts, ',' ORDER BY role) FROM peek.runtimes";
my $strict = "SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '60s';";

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub slot_of
{
	my ($name) = @_;
	return sql("SELECT 'pg_peek_' || d.oid || '_' || o.id FROM pg_database d, peek.objects o "
		  . "WHERE d.datname = 'postgres' AND o.name = '$name'");
}

sub slots { return sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$_[0]'"); }

sub loaders
{
	return sql("SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity "
		  . "WHERE backend_type = 'pg_peek loader'");
}

# the source's rows equal its table's
sub same_rows
{
	my ($src, $table) = @_;
	my $digest = q{md5(coalesce(string_agg(r::text, ';' ORDER BY r::text), '')) || ' ' || count(*)};
	return sql("$strict SELECT (SELECT $digest FROM peek.persist_peek(NULL::$table, '$src') r) "
		  . "= (SELECT $digest FROM $table r)");
}

# a write to collection c, then an index peek at its time: (seconds, count)
my $k = 0;

sub write_and_peek
{
	$k++;
	my $t = sql("SELECT peek.write('c', ARRAY[ROW($k, 'x')::r])");
	my $start = time;
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = '20s'; SELECT count(*) FROM peek.index_peek(NULL::r, 'c_k', as_of => $t)");
	return (time - $start, $rc == 0 ? $out : "error: $err");
}

sub idle_xact
{
	my $s = bg_session($node);
	$s->query_safe('BEGIN');
	$s->query_safe('SELECT txid_current()');
	return $s;
}

sub end_idle_xact
{
	my ($s) = @_;
	$s->query_safe('COMMIT');
	$s->quit;
	sql('CHECKPOINT');    # logs the running transactions the slot waits for
}

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE r AS (k int, v text);
	SELECT peek.create_collection('c', 'r');
	SELECT peek.create_index('c_k', 'c', ARRAY['k']);
	CREATE TABLE t1 (k int, v text);
	INSERT INTO t1 SELECT g, 'row ' || g FROM generate_series(1, 3) g;
});
ok(poll_until($node, $running_sql), 'the runtimes are running');
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'c_k'", 'ready'), 'c_k is ready');
my $runtimes = sql($runtimes_sql);

# ---- an idle transaction holding an xid while a source is created ---------------------

my $idle = idle_xact();
sql("SELECT peek.create_source('s1', 't1')");
my $slot1 = slot_of('s1');
ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek loader'", '1'),
	's1: its loader runs');
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot1'", '1'),
	's1: its slot is being created');
sleep 1;
is(sql("SELECT state FROM peek.collections WHERE name = 's1'"), 'loading', 's1: loading meanwhile');
for my $i (1 .. 3)
{
	my ($secs, $count) = write_and_peek();
	is($count, $k, "while s1 waits: write $i to c is peekable at its time");
	cmp_ok($secs, '<', 3, "while s1 waits: ... within 3 s (" . sprintf('%.2f', $secs) . ' s)');
}
sql("INSERT INTO t1 VALUES (4, 'while loading')");
is(sql("SELECT state FROM peek.collections WHERE name = 's1'"), 'loading', 's1: still loading');
end_idle_xact($idle);
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's1'", 'ready'),
	's1: ready once the transaction ended');
is(same_rows('s1', 't1'), 't', 's1: equals its table');
sql("INSERT INTO t1 VALUES (5, 'after')");
is(same_rows('s1', 't1'), 't', 's1: and captures what comes after');
is(loaders(), '', 's1: its loader is gone');
is(sql($runtimes_sql), $runtimes, 'no runtime restarted');

# ---- no free background worker -----------------------------------------------------------

sql(q{
	CREATE TABLE t2 (k int, v text);
	CREATE TABLE t3 (k int, v text);
	INSERT INTO t2 VALUES (1, 'two');
	INSERT INTO t3 VALUES (1, 'three');
});
my $offset = -s $node->logfile;
$idle = idle_xact();
sql("SELECT peek.create_source('s2', 't2')");
ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek loader'", '1'),
	's2: its loader runs');
sql("SELECT peek.create_source('s3', 't3')");
ok( eval {
		$node->wait_for_log(qr/pg_peek source \d+ waits for a background worker to load table "t3"/, $offset);
		1;
	},
	's3: waits for a background worker, and the log says so');
is(sql("SELECT string_agg(state, ',' ORDER BY name) FROM peek.collections WHERE name IN ('s2', 's3')"),
	'loading,loading', 's2, s3: both loading');
my ($secs, $count) = write_and_peek();
cmp_ok($secs, '<', 3, 'while s2 and s3 wait: a write to c is peekable at once');
end_idle_xact($idle);
ok(poll_until($node, "SELECT string_agg(state, ',' ORDER BY name) FROM peek.collections WHERE name IN ('s2', 's3')",
		'ready,ready'),
	's2, s3: both loaded once a worker is free');
is(same_rows('s2', 't2') . same_rows('s3', 't3'), 'tt', 's2, s3: equal their tables');
is(sql($runtimes_sql), $runtimes, 'no runtime restarted');

# ---- drop_source and a server restart while loading ------------------------------------

sql("CREATE TABLE t4 (k int, v text); INSERT INTO t4 VALUES (1, 'four')");
$idle = idle_xact();
sql("SELECT peek.create_source('s4', 't4')");
my $slot4 = slot_of('s4');
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot4'", '1'),
	's4: its slot is being created');
sql("SELECT peek.drop_source('s4')");
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot4'", '0'),
	'drop_source while loading: the slot is dropped');
ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek loader'", '0'),
	'drop_source while loading: the loader stopped');
sql("SELECT peek.create_source('s4', 't4')");
ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek loader'", '1'),
	's4 again: loading');
$node->restart;    # ends the idle transaction's session too
eval { $idle->quit };
ok(poll_until($node, $running_sql), 'restart while loading: the runtimes are running');
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's4'", 'ready'),
	'restart while loading: s4 is loaded');
is(same_rows('s4', 't4'), 't', 's4: equals its table');
is(slots(slot_of('s4')), '1', 's4: one slot');
$runtimes = sql($runtimes_sql);

# ---- a loader killed in the middle of its load ---------------------------------------------

# The loader is held at its first shard row (a session locks the shard), its
# slot made and persistent, the table read under the slot's snapshot.
for my $signal ('TERM', 'KILL')
{
	my $src = lc "big_$signal";
	sql(qq{
		CREATE TABLE $src (k int, v text);
		INSERT INTO $src SELECT g % 1000, repeat('x', 100) || g FROM generate_series(1, 20000) g;
	});
	$idle = idle_xact();
	sql("SELECT peek.create_source('$src', '$src')");
	my $shard = sql("SELECT shard FROM peek.collections WHERE name = '$src'");
	my $slot = slot_of($src);
	ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'", '1'),
		"$src: its slot is being created");
	my $locker = bg_session($node);
	$locker->query_safe("BEGIN; LOCK TABLE $shard IN SHARE MODE");
	end_idle_xact($idle);
	my $loader_sql = "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
	  . "WHERE a.backend_type = 'pg_peek loader' AND l.relation = '$shard'::regclass AND NOT l.granted";
	ok(poll_until($node, "SELECT count(*) FROM ($loader_sql) l", '1'), "$src: its loader is about to write rows");
	my $pid = sql($loader_sql);
	$offset = -s $node->logfile;
	is(kill($signal, $pid), 1, "$src: SIG$signal the loader $pid in the middle of its load");
	if ($signal eq 'KILL')
	{
		ok( eval {
				$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
				1;
			},
			"$src: the postmaster crash-restarts");
		ok(poll_until($node, $running_sql, 't', 60), "$src: the runtimes are running again");
		eval { $locker->quit };
	}
	else
	{
		ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid", '0'),
			"$src: the loader exited");
		sql("INSERT INTO $src VALUES (-2, 'while no loader runs')");
		$locker->query_safe('COMMIT');
		$locker->quit;
	}
	sql("INSERT INTO $src VALUES (-1, 'after the kill'); DELETE FROM $src WHERE k = 7");
	ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = '$src'", 'ready', 60),
		"$src: loaded by another loader");
	is(same_rows($src, $src), 't', "$src: equals its table");
	# counted in the history alone: the moving base holds the load too once
	# the writes paused (see TAP 170's crash 3); the next check covers the base
	ok(poll_until($node, "SELECT o.base_time >= (SELECT min(time) FROM $shard WHERE time >= 0) "
			. "FROM peek.objects o WHERE name = '$src'", 't', 60),
		"$src: the base took the load in, the history keeps it");
	# (every row the table still has: the reload may be taken after the delete)
	is( sql("SELECT count(DISTINCT time) || ' ' || (count(*) BETWEEN (SELECT count(*) FROM $src WHERE k >= 0) AND 20000) "
			  . "FROM $shard WHERE time >= 0 AND diff > 0 AND (data).k >= 0"),
		'1 true', "$src: the table was loaded once, at one time");
	is(sql("SELECT coalesce(max(abs(c)), 0) FROM (SELECT sum(diff) AS c FROM $shard GROUP BY time, data) d"),
		'1', "$src: no row is in the shard twice");
	is(slots($slot), '1', "$src: one slot");
	is(sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'"),
		sql("SELECT count(*) FROM peek.collections WHERE source IS NOT NULL AND state <> 'failed'"),
		"$src: no slot left over from the killed load");
	is(sql($runtimes_sql), $runtimes, "$src: no runtime restarted") if $signal eq 'TERM';
}
$runtimes = sql($runtimes_sql);

# ---- a source's slot dropped by a user ------------------------------------------------------

sql("CREATE TABLE t5 (k int, v text); INSERT INTO t5 VALUES (1, 'five')");
sql("SELECT peek.create_source('s5', 't5')");
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's5'", 'ready'), 's5: ready');
my $slot5 = slot_of('s5');
# the runtime holds the slot for a moment each round
ok(poll_until($node, "SELECT true FROM (SELECT pg_drop_replication_slot('$slot5')) d"),
	"pg_drop_replication_slot('$slot5')");
# a round reads a source's slot when the server has written WAL since the
# last: a change of the table (or any other) makes it find the slot gone
sql("INSERT INTO t5 VALUES (2, 'after the drop')");
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's5'", 'failed'), 's5: failed');
is(sql("SELECT failure FROM peek.collections WHERE name = 's5'"), 'its replication slot was dropped',
	's5: the failure says why');
my ($st, $msg) = sql_error($node, "SELECT * FROM peek.persist_peek(NULL::t5, 's5')");
is($st, '55000', 's5: a peek fails with 55000');
like($msg, qr/its replication slot was dropped/, "s5: ... and the reason ($msg)");
is(sql($runtimes_sql), $runtimes, 'no runtime restarted');
($secs, $count) = write_and_peek();
is($count, $k, 'c: still peekable');
sql("INSERT INTO t1 VALUES (6, 'after s5 failed')");
is(same_rows('s1', 't1'), 't', 's1: still captures');

$node->restart;
ok(poll_until($node, $running_sql), 'after a restart: the runtimes are running');
is(sql("SELECT state FROM peek.collections WHERE name = 's5'"), 'failed', 'after a restart: s5 is still failed');
is(sql("SELECT restarts FROM peek.runtimes ORDER BY role"), join("\n", ('0') x $nruntimes),
	'after a restart: no runtime restarted since');
sql("INSERT INTO t1 VALUES (7, 'after the restart')");
is(same_rows('s1', 't1'), 't', 'after a restart: s1 captures');
($secs, $count) = write_and_peek();
is($count, $k, 'after a restart: c is peekable');

# ---- DROP EXTENSION while loading -----------------------------------------------------------

sql("CREATE TABLE t6 (k int); INSERT INTO t6 VALUES (1)");
$idle = idle_xact();
sql("SELECT peek.create_source('s6', 't6')");
my $slot6 = slot_of('s6');
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot6'", '1'),
	's6: its slot is being created');
my $start = time;
sql('DROP EXTENSION pg_peek CASCADE');
cmp_ok(time - $start, '<', 10, 'DROP EXTENSION while loading completes');
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'", '0'),
	'DROP EXTENSION while loading: no slot is left');
ok(poll_until($node, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek loader'", '0'),
	'DROP EXTENSION while loading: no loader is left');
end_idle_xact($idle);

$node->stop;

# ---- errors while decoding -------------------------------------------------------------------

# A lock timeout (set for the database) while a round waits for the source's
# catalog row: the round is tried again, the source loses nothing.  Then WAL
# the slot needs is removed: an open transaction with a change holds the
# slot's restart_lsn back, max_slot_wal_keep_size is tiny, a checkpoint after
# enough WAL invalidates the slot.  The source fails with the reason, nothing
# restarts, also across a server restart.
{
	my $n = new_node('decoding_errors', conf => [ 'max_slot_wal_keep_size = 1MB', 'wal_keep_size = 0' ]);
	my $strict_n = "SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '60s';";
	$n->safe_psql('postgres', q{
		CREATE EXTENSION pg_peek;
		CREATE TABLE w (k int);
		CREATE TABLE filler (x text);
		INSERT INTO w VALUES (1);
		SELECT peek.create_source('ws', 'w');
		ALTER DATABASE postgres SET lock_timeout = '100ms';
	});
	ok(poll_until($n, "SELECT state FROM peek.collections WHERE name = 'ws'", 'ready'), 'ws: ready');
	$n->restart;    # the runtimes take the database's lock_timeout
	ok(poll_until($n, "SELECT bool_and(state = 'running') FROM peek.runtimes"), 'the runtimes run');
	my $offset = -s $n->logfile;
	my $locker = $n->background_psql('postgres');
	$locker->query_safe("BEGIN; SELECT 1 FROM peek.objects WHERE name = 'ws' FOR UPDATE");
	$n->safe_psql('postgres', 'INSERT INTO w VALUES (2)');
	ok( eval {
			$n->wait_for_log(qr/pg_peek source \d+ could not decode: canceling statement due to lock timeout/, $offset);
			1;
		},
		'ws: a round meets the lock timeout');
	sleep 1;
	$locker->query_safe('COMMIT');
	$locker->quit;
	$n->safe_psql('postgres', 'INSERT INTO w VALUES (3)');
	is($n->safe_psql('postgres', "$strict_n SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::w, 'ws')"),
		'1,2,3', 'ws: after the lock is gone, the source has every row once');
	is($n->safe_psql('postgres', "SELECT bool_and(restarts = 0) FROM peek.runtimes"), 't',
		'ws: no runtime restarted over the lock timeout');
	$n->safe_psql('postgres', 'ALTER DATABASE postgres RESET lock_timeout');

	my $holder = $n->background_psql('postgres');
	$holder->query_safe("BEGIN; INSERT INTO filler VALUES ('held')");
	for (1 .. 3)
	{
		$n->safe_psql('postgres',
			"INSERT INTO filler SELECT repeat('y', 200) FROM generate_series(1, 100000); SELECT pg_switch_wal(); CHECKPOINT");
	}
	ok(poll_until($n, "SELECT state FROM peek.collections WHERE name = 'ws'", 'failed'),
		'ws: failed once the WAL its slot needs is removed');
	is($n->safe_psql('postgres', "SELECT failure FROM peek.collections WHERE name = 'ws'"),
		'the WAL its replication slot needs was removed (max_slot_wal_keep_size)', 'ws: the failure says why');
	eval { $holder->quit };
	$n->restart;
	ok(poll_until($n, "SELECT bool_and(state = 'running') FROM peek.runtimes"), 'after a restart: the runtimes run');
	sleep 1;
	is($n->safe_psql('postgres', "SELECT state FROM peek.collections WHERE name = 'ws'"), 'failed',
		'after a restart: ws is still failed');
	is($n->safe_psql('postgres', "SELECT bool_and(restarts = 0 AND state = 'running') FROM peek.runtimes"), 't',
		'after a restart: no runtime restarted');
	is($n->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots"), '0', 'ws: its slot is dropped');
	$n->stop;
}

done_testing();
