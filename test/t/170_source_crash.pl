# Crashes under a write load on a captured table:
# after each crash-restart, once the source has caught up, the source's
# persist peek, its index and the multiset its shard sums to all equal the
# table: no change lost, none applied twice.
#
#  * pgbench writes the table (inserts, updates of key and value, deletes,
#    multi-statement transactions that also write another table, rollbacks)
#    from two clients the whole time; the source is created while it runs, so
#    its initial load races the writers too.
#  * crash 1: SIGKILL of a client backend (the postmaster restarts all);
#  * crash 2: SIGKILL of the runtime that decodes (maintenance, or solo);
#  * then a load with no crash;
#  * crash 3: SIGKILL of that runtime while its loader loads a 300000-row
#    table (the crash takes the loader down too): the
#    load starts again (its slot too) and the source equals the table.
#  * After each: every (time, row) of the shard sums to -1, 0 or 1 (a change
#    applied twice would give 2), no row sums to a negative count, and the
#    source keeps its one slot.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode  = interactive_mode();
my $maint = $mode eq 'on' ? 'maintenance' : 'solo';
my $node  = new_node('source_crash', conf => ['restart_after_crash = on']);
my $nruntimes = $mode eq 'on' ? 2 : 1;
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE cap (id bigserial PRIMARY KEY, k int, v text);
	CREATE TABLE other (x int);
	INSERT INTO cap (k, v) SELECT g % 50, md5(g::text) FROM generate_series(1, 1000) g;
});
ok(poll_until($node, $running_sql), 'the runtimes are running');

# ---- the load ----------------------------------------------------------------------

my $dir = PostgreSQL::Test::Utils::tempdir();
my %scripts = (
	'insert.sql@4' => "\\set k random(1, 50)\nINSERT INTO cap (k, v) VALUES (:k, md5(random()::text));\n",
	'update.sql@4' => "\\set id random(1, 3000)\n\\set k random(1, 50)\n"
	  . "UPDATE cap SET k = :k, v = md5(random()::text) WHERE id = :id;\n",
	'delete.sql@2' => "\\set id random(1, 3000)\nDELETE FROM cap WHERE id = :id;\n",
	'multi.sql@2' => "\\set id random(1, 3000)\n\\set k random(1, 50)\nBEGIN;\n"
	  . "INSERT INTO cap (k, v) VALUES (:k, 'multi');\n"
	  . "UPDATE cap SET v = v || '+' WHERE id = :id;\n"
	  . "INSERT INTO other VALUES (:k);\nCOMMIT;\n",
	'rollback.sql@1' => "BEGIN;\nINSERT INTO cap (k, v) VALUES (0, 'rolled back');\n"
	  . "UPDATE cap SET v = 'rolled back' WHERE id = 7;\nROLLBACK;\n",
);
my @files;
for my $f (sort keys %scripts)
{
	(my $file = $f) =~ s/@\d+$//;
	PostgreSQL::Test::Utils::append_to_file("$dir/$file", $scripts{$f});
	push @files, '-f', "$dir/$f";
}

# pgbench for $secs seconds in the background
sub start_load { return pgbench_start($node, $_[0], \@files); }
sub finish_load { return pgbench_finish($_[0]); }

# ---- the checks ----------------------------------------------------------------------

my $digest = q{md5(coalesce(string_agg(r::text, ';' ORDER BY r::text COLLATE "C"), '')) || ' ' || count(*)};
my ($shard, $slot);

sub check_source
{
	my ($label) = @_;
	# strict serializable: the peeks see every commit before them
	# the shard's contents: its base (stored at time -1) plus the updates
	# after the base's time; those between the since and it are history
	my $res = sql(qq{
		CREATE TEMP VIEW current_updates AS
			SELECT data, diff FROM $shard
			 WHERE time = -1 OR time > (SELECT coalesce(base_time, -1) FROM peek.objects WHERE shard = '$shard'::regclass);
		SET pg_peek.isolation = 'strict serializable';
		SET statement_timeout = '60s';
		SELECT $digest FROM cap r;
		SELECT $digest FROM peek.persist_peek(NULL::cap, 'src') r;
		SELECT $digest FROM peek.index_peek(NULL::cap, 'cap_k') r;
		SELECT $digest FROM (
			SELECT data AS r FROM (SELECT data, sum(diff) AS c FROM current_updates GROUP BY data HAVING sum(diff) > 0) g,
			       generate_series(1, g.c)) s;
		SELECT count(*) FROM (SELECT data FROM current_updates GROUP BY data HAVING sum(diff) < 0) n;
		SELECT coalesce(max(abs(c)), 0) FROM (SELECT sum(diff) AS c FROM $shard GROUP BY time, data) d;
	});
	my ($table, $persist, $index, $sums, $negative, $maxabs) =
	  grep { $_ ne 'SET' } split /\n/, $res;
	note "$label: table $table";
	my $ok = is($persist, $table, "$label: the source's persist peek equals the table");
	$ok &= is($index, $table, "$label: the index equals the table");
	$ok &= is($sums, $table, "$label: the shard sums to the table's multiset");
	$ok &= is($negative, '0', "$label: no row of the shard sums to a negative count");
	$ok &= cmp_ok($maxabs, '<=', 1, "$label: no change is in the shard twice (|sum| per time and row <= 1)");
	if (!$ok)
	{
		diag("in the table, not the source:\n"
			  . sql(qq{SET pg_peek.isolation = 'strict serializable';
				SELECT r::text FROM cap r EXCEPT ALL SELECT r::text FROM peek.persist_peek(NULL::cap, 'src') r LIMIT 20}));
		diag("in the source, not the table:\n"
			  . sql(qq{SET pg_peek.isolation = 'strict serializable';
				SELECT r::text FROM peek.persist_peek(NULL::cap, 'src') r EXCEPT ALL SELECT r::text FROM cap r LIMIT 20}));
		diag("shard updates at one time and row summing beyond 1:\n"
			  . sql("SELECT time, data::text, sum(diff) FROM $shard GROUP BY time, data HAVING abs(sum(diff)) > 1 LIMIT 20"));
	}
	is(sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'"), '1',
		"$label: the source still has its slot");
}

sub wait_crash_restart
{
	my ($label, $offset) = @_;
	ok( eval {
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
			1;
		},
		"$label: the postmaster crash-restarts the cluster");
	ok(poll_until($node, 'SELECT 1', '1', 60), "$label: the server accepts connections again");
	ok(poll_until($node, $running_sql, 't', 60), "$label: the runtimes are running again");
}

# ---- the source is created under the load --------------------------------------------

my $load = start_load(60);
ok(poll_until($node, 'SELECT count(*) > 1000 FROM cap'), 'the load is writing');
sql(q{
	SELECT peek.create_source('src', 'cap');
	SELECT peek.create_index('cap_k', 'src', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 'src'", 'ready'),
	'the source is ready (loaded under the load)');
$shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");
$slot = sql("SELECT slot_name FROM pg_replication_slots");
like($slot, qr/^pg_peek_\d+_\d+$/, "the source has its slot $slot");
ok(poll_until($node, "SELECT count(DISTINCT time) > 200 FROM $shard"),
	'the source is capturing the load');

# ---- crash 1: SIGKILL of a client backend ---------------------------------------------

my $offset = -s $node->logfile;
my $sleeper = start_bg($node, 'SELECT pg_sleep(60)');
my $victim = bg_backend_pid($node, $sleeper);
ok(defined $victim, 'a client backend to kill');
is(kill('KILL', $victim), 1, "SIGKILL the client backend $victim under the load");
wait_crash_restart('crash 1', $offset);
finish_bg($sleeper, 30);
my $tx = finish_load($load);
cmp_ok($tx, '>', 0, "crash 1: pgbench committed $tx transactions before the crash");
is(sql('SELECT slot_name FROM pg_replication_slots'), $slot, 'crash 1: the slot survived');
check_source('crash 1');

# ---- crash 2: SIGKILL of the runtime that decodes -----------------------------------------

$load = start_load(60);
my $upper = sql("SELECT upper FROM peek.collections WHERE name = 'src'");
ok(poll_until($node, "SELECT replayed_upper > $upper FROM peek.replication WHERE object = 'src'"),
	'the source commits decoded changes under the new load');
usleep(500_000);
my $pid = runtime_pid($node, $maint);
$offset = -s $node->logfile;
is(kill('KILL', $pid), 1, "SIGKILL the $maint runtime $pid under the load");
wait_crash_restart('crash 2', $offset);
$tx = finish_load($load);
cmp_ok($tx, '>', 0, "crash 2: pgbench committed $tx transactions before the crash");
like(slurp_file($node->logfile, $offset), qr/pg_peek $maint.*was terminated by signal 9|terminated by signal 9/,
	"crash 2: the server saw the $maint runtime killed");
check_source('crash 2');

# ---- a load with no crash -------------------------------------------------------------------

$tx = finish_load(start_load(3));
cmp_ok($tx, '>', 0, "after the crashes: pgbench committed $tx more transactions");
check_source('after the crashes');

# ---- crash 3: SIGKILL of the runtime while a source loads ------------------------------------

sql(q{
	CREATE TABLE big (k int, v text);
	ALTER TABLE big REPLICA IDENTITY FULL;
	INSERT INTO big SELECT g % 1000, repeat('x', 100) || g FROM generate_series(1, 300000) g;
	SELECT peek.create_source('big_src', 'big');
});
my $loading = poll_until($node,
	"SELECT state = 'loading' AND EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%' "
	  . "AND slot_name <> '$slot') FROM peek.collections WHERE name = 'big_src'");
ok($loading, 'big_src is loading, its slot created');
$pid = runtime_pid($node, $maint);
$offset = -s $node->logfile;
is(kill('KILL', $pid), 1, "SIGKILL the $maint runtime $pid while it loads");
wait_crash_restart('crash 3', $offset);
sql("INSERT INTO big VALUES (-1, 'after the crash'); DELETE FROM big WHERE k = 7;");
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 'big_src'", 'ready', 60),
	'crash 3: big_src is loaded after all');
is( sql(qq{
		SET pg_peek.isolation = 'strict serializable';
		SET statement_timeout = '60s';
		SELECT (SELECT $digest FROM peek.persist_peek(NULL::big, 'big_src') r) = (SELECT $digest FROM big r)}),
	't', 'crash 3: big_src equals its table');
my $big_shard = sql("SELECT shard FROM peek.collections WHERE name = 'big_src'");
# The history keeps the load at its time (the since is at or before it) and
# the moving base takes it in as well once the writes pause (a big time
# folds alone, runtime/folds.c), waited for: the load's updates are counted
# in the history alone: at one time, each row once (the check after), every
# row the table still has (the reload may be taken after the delete of k = 7).
ok(poll_until($node, "SELECT o.base_time >= (SELECT min(time) FROM $big_shard WHERE time >= 0) "
		. "FROM peek.objects o WHERE name = 'big_src'", 't', 60),
	'crash 3: the base took the load in, the history keeps it');
is( sql("SELECT count(DISTINCT time) || ' ' || (count(*) BETWEEN (SELECT count(*) FROM big WHERE k <> -1) AND 300000) "
		  . "FROM $big_shard WHERE time >= 0 AND diff > 0 AND (data).k <> -1"),
	'1 true', 'crash 3: the table was loaded once, at one time');
is(sql("SELECT coalesce(max(abs(c)), 0) FROM (SELECT sum(diff) AS c FROM $big_shard GROUP BY time, data) d"),
	'1', 'crash 3: no row is in the shard twice, in the base or at a time');
is(sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'"), '2',
	'crash 3: one slot per source, none left from the killed load');
check_source('after crash 3');

$node->stop;
done_testing();
