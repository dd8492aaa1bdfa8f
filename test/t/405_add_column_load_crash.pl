# Attack on 8faddd9 (a captured table's ADD COLUMN goes on): columns added
# to a captured table under a write load (without a default, with one that
# rewrites the table, a stored generated one), an UPDATE of an added column
# alone under the load, the runtime that decodes SIGKILLed (crash restart)
# right after an ALTER, and a streaming standby following.  After each
# step, once the source caught up: the source and its index equal the
# table's captured columns (its rows as of now), no change is in the shard
# twice, the view over it equals its query, on the primary and on the
# standby; the source stays ready.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $maint = maintenance_role();
my $node  = new_node('add_column_crash', init => { allows_streaming => 1 },
	conf => ['restart_after_crash = on']);
my $runtimes_up = [ "SELECT count(*) FROM peek.runtimes WHERE state = 'running' AND pid IS NOT NULL",
	$mode eq 'on' ? '2' : '1' ];

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE cap (id bigserial PRIMARY KEY, k int, v text);
	ALTER TABLE cap REPLICA IDENTITY FULL;
	INSERT INTO cap (k, v) SELECT g % 20, md5(g::text) FROM generate_series(1, 2000) g;
	SELECT peek.create_source('src', 'cap');
	SELECT peek.create_index('cap_k', 'src', ARRAY['k']);
});
ok(poll_until($node, @$runtimes_up), 'the runtimes are running');
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 'src'", 'ready'), 'the source is ready');
my $type = sql("SELECT row_type FROM peek.collections WHERE name = 'src'");
my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");
my %views = (cap_by_k => 'SELECT k, count(*) AS n, sum(length(v)) AS l FROM cap GROUP BY k');
sql("SELECT peek.create_view('$_', \$\$$views{$_}\$\$)") for sort keys %views;
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.views"), 'the view is ready');
my $standby = new_standby($node, 'add_column_standby');

my $dir = PostgreSQL::Test::Utils::tempdir();
my %scripts = (
	'insert.sql@4' => "\\set k random(0, 19)\nINSERT INTO cap (k, v) VALUES (:k, md5(random()::text));\n",
	'update.sql@4' => "\\set id random(1, 4000)\n\\set k random(0, 19)\n"
	  . "UPDATE cap SET k = :k, v = md5(random()::text) WHERE id = :id;\n",
	'delete.sql@1' => "\\set id random(1, 4000)\nDELETE FROM cap WHERE id = :id;\n",
);
my @files;
for my $f (sort keys %scripts)
{
	(my $file = $f) =~ s/@\d+$//;
	PostgreSQL::Test::Utils::append_to_file("$dir/$file", $scripts{$f});
	push @files, '-f', "$dir/$f";
}

sub start_load { return pgbench_start($node, $_[0], \@files); }
sub finish_load { return pgbench_finish($_[0]); }

# the source, its index and the view against the table, on $n
sub check
{
	my ($n, $label, $isolation) = @_;
	my $res = $n->safe_psql('postgres', qq{
		SET pg_peek.isolation = '$isolation';
		SELECT count(*) FROM ((SELECT id, k, v FROM cap EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::$type, 'src'))
		  UNION ALL (SELECT * FROM peek.persist_peek(NULL::$type, 'src') EXCEPT ALL SELECT id, k, v FROM cap)) d;
		SELECT count(*) FROM ((SELECT id, k, v FROM cap WHERE k = 3 EXCEPT ALL SELECT * FROM peek.index_peek(NULL::$type, 'cap_k', ROW(3)))
		  UNION ALL (SELECT * FROM peek.index_peek(NULL::$type, 'cap_k', ROW(3)) EXCEPT ALL SELECT id, k, v FROM cap WHERE k = 3)) d;
		SELECT count(*) FROM cap;
	});
	my ($off, $index_off, $rows) = grep { $_ ne 'SET' } split /\n/, $res;
	is($off, '0', "$label: the source equals the table's captured columns ($rows rows)");
	is($index_off, '0', "$label: the index equals the table's part");
	views_equal_queries($n, \%views, $label);
	return;
}

sub check_primary
{
	my ($label) = @_;
	ok(sources_caught_up($node), "$label: the source caught up");
	is(sql("SELECT state || coalesce(': ' || failure, '') FROM peek.collections WHERE name = 'src'"), 'ready',
		"$label: the source is ready");
	ok(poll_until($node, caught_up_sql(), 't', 120), "$label: the view caught up");
	check($node, $label, 'strict serializable');
	cmp_ok(sql("SELECT coalesce(max(abs(c)), 0) FROM (SELECT sum(diff) AS c FROM $shard GROUP BY time, data) d"),
		'<=', 1, "$label: no change is in the shard twice");
	return;
}

# ---- columns added under the load --------------------------------------------------

my $load = start_load(8);
ok(poll_until($node, 'SELECT count(*) > 2100 FROM cap'), 'the load is writing');
sql('ALTER TABLE cap ADD COLUMN note text');
sql("UPDATE cap SET note = 'n' || id WHERE id % 3 = 0");
sql('ALTER TABLE cap ADD COLUMN at timestamptz DEFAULT clock_timestamp()');
sql("UPDATE cap SET note = 'again' WHERE id % 5 = 0");
my $tx = finish_load($load);
cmp_ok($tx, '>', 0, "pgbench committed $tx transactions around the ALTERs");
check_primary('added under the load');

# ---- a crash right after an ALTER ------------------------------------------------------

$load = start_load(8);
ok(poll_until($node, 'SELECT count(*) > 0 FROM cap WHERE at > now() - interval \'1 hour\''), 'the load goes on');
my $pid = runtime_pid($node, $maint);
my $offset = -s $node->logfile;
sql('ALTER TABLE cap ADD COLUMN twice int GENERATED ALWAYS AS (k * 2) STORED');
is(kill('KILL', $pid), 1, "SIGKILL the $maint runtime $pid right after the ALTER");
ok( eval {
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		1;
	},
	'the postmaster crash-restarts the cluster');
ok(poll_until($node, @$runtimes_up, 60), 'the runtimes are running again');
finish_load($load);
sql("UPDATE cap SET note = 'after the crash' WHERE id % 7 = 0");
sql('INSERT INTO cap (k, v) SELECT g % 20, md5(g::text) FROM generate_series(1, 100) g');
check_primary('after the crash');

# ---- the standby --------------------------------------------------------------------------

$node->wait_for_catchup($standby, 'replay');
my $primary_upper = sql("SELECT upper FROM peek.collections WHERE name = 'src'");
my $view_upper = sql("SELECT upper FROM peek.views WHERE name = 'cap_by_k'");
ok(poll_until($standby, "SELECT upper >= $primary_upper FROM peek.collections WHERE name = 'src'", 't', 60),
	'the standby has the source up to the primary\'s upper');
ok(poll_until($standby, "SELECT upper >= $view_upper FROM peek.views WHERE name = 'cap_by_k'", 't', 60),
	'the standby has the view up to the primary\'s upper');
check($standby, 'on the standby', 'serializable');

$standby->stop;
$node->stop;
done_testing();
