# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's, forget them at each relcache invalidation,
# and skip nothing while a catalog-changing transaction is open
# (record_filters.c): all in the maintenance runtime's memory.  Here the
# notes are in place under a mixed load (transactions writing the sources
# and other tables, big ones spilling, rolled back ones, savepoints,
# ANALYZE and VACUUM whose catalog changes and invalidations come
# throughout, autovacuum's too) when the maintenance runtime is killed
# (SIGKILL: the postmaster restarts all) and when the server stops
# immediately, a prepared transaction writing both open across that crash;
# and a big transaction runs while ANALYZE and autovacuum invalidate
# around it.  Each source must hold exactly its table's rows at the latest
# time and at every time recorded (as_of), no change twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = maintenance_role();
my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";
my $node = new_node('capture_other_tables_crash',
	conf => ['restart_after_crash = on', 'logical_decoding_work_mem = 64kB',
		'max_prepared_transactions = 4', 'autovacuum_naptime = 1s',
		'autovacuum_vacuum_threshold = 20', 'autovacuum_analyze_threshold = 20',
		'autovacuum_vacuum_scale_factor = 0.01', 'autovacuum_analyze_scale_factor = 0.01']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my @at;

# both sources exact now, and recorded for a read at this time later
sub exact
{
	my ($what) = @_;
	sources_exact($node, \@at, $what, [ 's', 's_src' ], [ 'x', 'x_src' ]);
}

sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (id int PRIMARY KEY, k int, t text);
	CREATE TABLE x (id int PRIMARY KEY, k int, t text);
	CREATE TABLE o (id int, k int, t text);
	CREATE TABLE o2 (id int PRIMARY KEY, k int);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	ALTER TABLE o ALTER COLUMN t SET STORAGE EXTERNAL;
	INSERT INTO s SELECT i, i % 50, 's' FROM generate_series(1, 1000) i;
	INSERT INTO x SELECT i, i % 50, 'x' FROM generate_series(1, 1000) i;
	INSERT INTO o2 SELECT i, i FROM generate_series(1, 1000) i;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_source('x_src', 'x');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');

# the load: every transaction next to another table's changes
my $dir = PostgreSQL::Test::Utils::tempdir();
my $big = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)};
my %scripts = (
	'mixed.sql@6' => "\\set id random(1, 3000)\n\\set k random(1, 50)\nBEGIN;\n"
	  . "INSERT INTO o SELECT i, :k, 'o' FROM generate_series(1, 20) i;\n"
	  . "INSERT INTO s VALUES (:id + 3000 * (random() * 1000)::int, :k, 'm') ON CONFLICT DO NOTHING;\n"
	  . "UPDATE o2 SET k = k + 1 WHERE id = :id;\n"
	  . "UPDATE s SET k = :k, t = t || '+' WHERE id = :id;\n"
	  . "DELETE FROM x WHERE id = :id + 1;\n"
	  . "INSERT INTO x VALUES (:id + 1, :k, 'm') ON CONFLICT (id) DO UPDATE SET k = excluded.k;\n"
	  . "COMMIT;\n",
	'big.sql@1' => "\\set id random(1, 3000)\nBEGIN;\n"
	  . "INSERT INTO o SELECT i, i, 'big' FROM generate_series(1, 2000) i;\n"
	  . "UPDATE s SET t = $big WHERE id = :id;\n"
	  . "UPDATE o2 SET k = -k WHERE id BETWEEN :id AND :id + 200;\n"
	  . "DELETE FROM o WHERE t = 'big' AND id % 2 = 0;\n"
	  . "INSERT INTO s VALUES (:id + 3000000 + (random() * 100000)::int, 0, 'big') ON CONFLICT DO NOTHING;\n"
	  . "COMMIT;\n",
	'rollback.sql@1' => "\\set id random(1, 3000)\nBEGIN;\n"
	  . "INSERT INTO o VALUES (:id, 0, 'rolled back');\n"
	  . "UPDATE s SET t = 'rolled back' WHERE id = :id;\nROLLBACK;\n",
	'savepoint.sql@1' => "\\set id random(1, 3000)\nBEGIN;\n"
	  . "INSERT INTO o VALUES (:id, 0, 'sp');\nSAVEPOINT a;\n"
	  . "UPDATE s SET k = -1 WHERE id = :id;\nINSERT INTO o VALUES (:id, 1, 'sp');\nROLLBACK TO a;\n"
	  . "UPDATE x SET k = k + 1 WHERE id = :id;\nSAVEPOINT b;\nUPDATE s SET k = k + 1 WHERE id = :id;\nRELEASE b;\n"
	  . "COMMIT;\n",
	'analyze.sql@1' => "ANALYZE o;\nANALYZE s;\n",
	'vacuum.sql@1' => "VACUUM o;\nDELETE FROM o WHERE id % 7 = 0;\n",
);
my @files;
for my $f (sort keys %scripts)
{
	(my $file = $f) =~ s/@\d+$//;
	PostgreSQL::Test::Utils::append_to_file("$dir/$file", $scripts{$f});
	push @files, '-f', "$dir/$f";
}

# pgbench for $secs seconds in the background
sub start_load
{
	my ($secs) = @_;
	my $h = { out => '', err => '' };
	$h->{run} = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '3', '-T', $secs, @files, $node->connstr('postgres') ],
		'<', \undef, '>', \$h->{out}, '2>', \$h->{err},
		IPC::Run::timeout($secs + 120));
	return $h;
}

sub finish_load
{
	my ($h) = @_;
	eval { $h->{run}->finish; 1 } or $h->{run}->kill_kill;
	my ($tx) = $h->{out} =~ /number of transactions actually processed: (\d+)/;
	return $tx // 0;
}

sub back_after_crash
{
	my ($what, $offset) = @_;
	ok( eval {
			$node->wait_for_log(qr/all server processes terminated; reinitializing|database system is ready/, $offset);
			1;
		},
		"$what: the server restarted");
	ok(poll_until($node, 'SELECT 1', '1', 60), "$what: the server accepts connections again");
	ok(poll_until($node, $running_sql, 't', 60), "$what: the runtimes run again");
}

# the load's first transactions replayed: the other tables noted
my $tx = finish_load(start_load(6));
cmp_ok($tx, '>', 0, "a first load committed $tx transactions");
exact('a first load');

# the maintenance runtime killed under the load, the notes in place
my $load = start_load(12);
ok(poll_until($node, "SELECT count(*) > 0 FROM o WHERE t = 'big'"), 'the load is writing');
sleep(3);
my $offset = -s $node->logfile;
is(kill('KILL', runtime_pid($node, $maint)), 1, "SIGKILL the $maint runtime under the load");
back_after_crash('SIGKILL', $offset);
finish_load($load);
$tx = finish_load(start_load(4));
cmp_ok($tx, '>', 0, "after the SIGKILL: $tx more transactions");
exact('the maintenance runtime killed');

# an immediate stop under the load, a prepared transaction open across it
sql(qq{
	BEGIN;
	INSERT INTO o SELECT i, i, 'prepared' FROM generate_series(1, 500) i;
	INSERT INTO s VALUES (5000001, 1, $big), (5000002, 2, 'prepared');
	UPDATE s SET k = k * 100 WHERE id BETWEEN 1 AND 10;
	UPDATE o2 SET k = 0 WHERE id BETWEEN 1 AND 10;
	INSERT INTO x VALUES (5000001, 1, 'prepared');
	PREPARE TRANSACTION 'across';
});
$load = start_load(12);
sleep(4);
$node->stop('immediate');
finish_load($load);
$node->start;
ok(poll_until($node, $running_sql, 't', 60), 'after the immediate stop: the runtimes run again');
$load = start_load(4);
sleep(2);
sql("COMMIT PREPARED 'across'");
finish_load($load);
exact('an immediate stop');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::s, 's_src') WHERE id > 5000000"), '2',
	's_src has the prepared transaction\'s rows');

# a big transaction while ANALYZE and autovacuum invalidate around it
my $session = $node->background_psql('postgres');
$session->query_safe(q{
	BEGIN;
	INSERT INTO o SELECT i, i, 'long' FROM generate_series(1, 5000) i;
	INSERT INTO s VALUES (6000001, 1, 'long');
});
for my $i (1 .. 6)
{
	sql("ANALYZE o; ANALYZE s; ANALYZE x");
	sql("UPDATE o2 SET k = k + 1 WHERE id <= 100");
	$session->query_safe(qq{
		INSERT INTO o SELECT i, $i, 'long' FROM generate_series(1, 3000) i;
		UPDATE s SET k = k + 1 WHERE id BETWEEN $i * 10 AND $i * 10 + 5;
		DELETE FROM o WHERE t = 'long' AND id % 11 = $i;
		UPDATE x SET k = k + 1 WHERE id = $i;
	});
	sql("INSERT INTO x VALUES (6000000 + $i, $i, 'meanwhile')");
	sleep(1);
}
$session->query_safe('COMMIT');
$session->quit;
exact('a big transaction among ANALYZE and autovacuum');

source_off_at($node, $_->[1], $_->[0]) for @at;

is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready', 'no source failed');
is(sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'"), '2',
	'the sources keep their slots');

done_testing();
