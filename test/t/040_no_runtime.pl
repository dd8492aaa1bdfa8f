# Without a runtime to answer, a peek fails clearly instead of hanging
#: (a) the library is not preloaded; (b) no runtime can start
# (max_worker_processes = 0); (c) the peek comes from a database the runtimes
# do not serve.  (d) The runtimes idle until the extension exists in their
# database, and follow DROP EXTENSION / CREATE EXTENSION without restarting.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PgPeekTest;

my $mode = interactive_mode();
my $serve = serving_role();
my @roles = $mode eq 'on' ? ('interactive', 'maintenance') : ('solo');
my $nruntimes = scalar @roles;

my $peek_sql =
  "SELECT id, name FROM peek.persist_peek(NULL::item, 'c', as_of => 0) ORDER BY id, name";

# ---- (a) not preloaded ----------------------------------------------------

{
	my $node = new_node('nopreload', no_peek => 1);
	my ($rc, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION pg_peek');
	isnt($rc, 0, 'without shared_preload_libraries CREATE EXTENSION pg_peek fails');
	like($err, qr/pg_peek must be loaded via shared_preload_libraries/,
		'the error says pg_peek must be loaded via shared_preload_libraries');
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'pg_peek'"),
		'0', 'the extension was not created');
	$node->stop;
}

# ---- (b) no runtime can start ---------------------------------------------

{
	my $node = new_node('noworkers',
		conf => [ 'max_worker_processes = 0', "pg_peek.runtime_wait_timeout = '1s'" ]);
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_peek');
	is( $node->safe_psql('postgres',
			"SELECT string_agg(role || ':' || state || ':' || coalesce(pid::text, 'null'), ',' ORDER BY role) FROM peek.runtimes"),
		join(',', map { "$_:stopped:null" } sort @roles),
		'peek.runtimes shows every runtime stopped with a NULL pid');
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'pg_peek%'"),
		'0', 'no pg_peek backend runs');

	is( $node->safe_psql('postgres', q{
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('c', 'item');
SELECT peek.write('c', ARRAY[(1, 'a')]::item[]);
SELECT peek.write('c', ARRAY[(2, 'b')]::item[]);
SELECT upper FROM peek.collections WHERE name = 'c';
}), "\n0\n1\n2", 'create_collection and write work without runtimes');

	my $start = time;
	my $timed_out = 0;
	my ($rc, $out, $err) = $node->psql('postgres', $peek_sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ],
		timeout => 30,
		timed_out => \$timed_out);
	my $elapsed = time - $start;
	ok(!$timed_out, 'the peek does not hang');
	isnt($rc, 0, 'the peek fails');
	like($err, qr/ERROR:  55000: pg_peek $serve runtime is not running/,
		"it fails with 55000 pg_peek $serve runtime is not running");
	cmp_ok($elapsed, '>=', 0.9, 'it waited about pg_peek.runtime_wait_timeout (1 s) first');
	cmp_ok($elapsed, '<', 10, 'it failed well before the default 10 s');
	note(sprintf('the peek failed after %.2f s', $elapsed));

	# the setting is user-settable
	$start = time;
	($rc, $out, $err) = $node->psql('postgres',
		"SET pg_peek.runtime_wait_timeout = '2500ms';\n$peek_sql",
		timeout => 30,
		timed_out => \$timed_out);
	$elapsed = time - $start;
	ok(!$timed_out && $rc != 0, 'with SET pg_peek.runtime_wait_timeout the peek fails too');
	like($err, qr/runtime is not running/, 'with the runtime-not-running message');
	cmp_ok($elapsed, '>=', 2.4, 'after the timeout set in the session (2.5 s)');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM peek.active_peeks'), '0',
		'no active peek is left behind');
	is($node->safe_psql('postgres', "SELECT upper FROM peek.collections WHERE name = 'c'"), '2',
		'the collection is unchanged');
	$node->stop;
}

# ---- (d) and (c): one node with runtimes ----------------------------------

my $node = new_node('main');

# before CREATE EXTENSION: no views, but the runtimes are there, idle
my ($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM peek.runtimes');
isnt($rc, 0, 'before CREATE EXTENSION peek.runtimes cannot be queried');
like($err, qr/relation "peek.runtimes" does not exist/, 'peek.runtimes does not exist yet');
ok( poll_until($node,
		"SELECT string_agg(backend_type, ',' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type LIKE 'pg_peek%'",
		join(',', map { "pg_peek $_" } sort @roles)),
	'pg_stat_activity shows the pg_peek runtimes: ' . join(', ', map { "pg_peek $_" } @roles));
# the runtimes' only: a fold worker or a loader may run at any moment
my $pids_sql =
  "SELECT string_agg(pid::text, ',' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type IN ("
  . join(', ', map { "'pg_peek $_'" } @roles) . ")";
my $pids = $node->safe_psql('postgres', $pids_sql);

# (c) another database
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
});
is( $node->safe_psql('other',
		"SELECT string_agg(role || ':' || state, ',' ORDER BY role) FROM peek.runtimes"),
	join(',', map { "$_:waiting for extension" } sort @roles),
	'seen from database other, the runtimes wait for the extension in postgres');
is( $node->safe_psql('other', q{
SELECT peek.create_collection('c', 'item');
SELECT peek.write('c', ARRAY[(1, 'a')]::item[]);
}), "\n0", 'create_collection and write work in database other');
($rc, $out, $err) = $node->psql('other', $peek_sql,
	extra_params => [ '-v', 'VERBOSITY=verbose' ], timeout => 30);
isnt($rc, 0, 'a peek in database other fails');
like($err, qr/ERROR:  55000: pg_peek runtimes serve database "postgres", not "other"/,
	'with 55000 pg_peek runtimes serve database "postgres", not "other"');

# (d) CREATE EXTENSION in postgres: the runtimes start running
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
});
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'after CREATE EXTENSION every runtime is running');
is($node->safe_psql('postgres', 'SELECT string_agg(restarts::text, \',\') FROM peek.runtimes'),
	join(',', map { '0' } @roles), 'no runtime restarted');

# peek: at once and after a wait
sub write_and_peek
{
	my ($what, $rows) = @_;
	$node->safe_psql('postgres', "SELECT peek.create_collection('c', 'item')");
	is($node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[$rows]::item[])"),
		'0', "$what: write at time 0");
	my $h = start_bg($node,
		"SELECT id, name FROM peek.persist_peek(NULL::item, 'c', as_of => 1) ORDER BY id, name");
	ok(poll_until($node, "SELECT string_agg(time || ':' || state, ',') FROM peek.active_peeks", '1:waiting'),
		"$what: a peek at 1 waits");
	is($node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(9, 'z')]::item[])"),
		'1', "$what: write at time 1");
	my ($rc, $out, $err) = finish_bg($h, 30);
	is($rc, 0, "$what: the waiting peek succeeds") or diag("stderr: $err");
	my $expected = join("\n", sort(map { s/^\((\d+), '(\w+)'\)$/$1|$2/r } split(/, (?=\()/, $rows)), '9|z');
	is($out, $expected, "$what: the waiting peek returns the contents at 1");
	is($node->safe_psql('postgres', $peek_sql), join("\n", grep { $_ ne '9|z' } split /\n/, $expected),
		"$what: a peek at 0 returns the contents at 0");
}

write_and_peek('first extension', "(1, 'a'), (2, 'b')");

# drop and create again in one go (the runtimes may not see the gap)
$node->safe_psql('postgres', q{
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
CREATE EXTENSION pg_peek;
});
write_and_peek('re-created at once', "(3, 'c')");

# drop, let the runtimes notice (watched from database other), create again
$node->safe_psql('postgres', q{
SET client_min_messages = warning;
DROP EXTENSION pg_peek CASCADE;
});
ok( $node->poll_query_until('other',
		"SELECT count(*) = $nruntimes AND bool_and(state = 'waiting for extension') FROM peek.runtimes"),
	'after DROP EXTENSION the runtimes wait for the extension again');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_peek');
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'after CREATE EXTENSION again every runtime is running');
write_and_peek('re-created after a pause', "(4, 'd'), (5, 'e')");

is($node->safe_psql('postgres', 'SELECT string_agg(restarts::text, \',\') FROM peek.runtimes'),
	join(',', map { '0' } @roles), 'restarts is still 0 for every runtime');
is($node->safe_psql('postgres', $pids_sql), $pids, 'the runtimes kept their pids');
ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0'), 'no active peeks remain');

# the log: nothing but LOG lines from the runtimes
my @rt_pids = split /,/, $pids;
my $log = slurp_file($node->logfile);
my @rt_lines = grep {
	my $line = $_;
	grep { $line =~ /\[$_\]/ } @rt_pids
} split /\n/, $log;
ok(scalar(grep { /pg_peek \w+ runtime started in database "postgres"/ } @rt_lines) == $nruntimes,
	'each runtime logged its start once');
is(join("\n", grep { /\b(ERROR|FATAL|PANIC|WARNING):/ } @rt_lines), '',
	'the server log has no ERROR, FATAL, PANIC or WARNING from the runtimes');
unlike($log, qr/terminated by signal|exited with exit code/, 'no server process exited');

$node->stop;
done_testing();
