# The maintenance runtime killed (SIGKILL: a crash restart of the cluster)
# while writers seal and it prunes: the latest upper survives, times go on
# from it without reuse, and the pruning resumes afterwards.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

my $node = new_node('primary', conf => ['restart_after_crash = on']);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, name text);
	CREATE TABLE wlog (t bigint);
	SELECT peek.create_collection('c', 'item');
});
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes";
ok(poll_until($node, $running_sql), 'the runtimes are running');

sub sql { return $node->safe_psql('postgres', $_[0]); }
my $burst = join(";\n", map { "INSERT INTO wlog SELECT peek.write('c', ARRAY[($_, 'x')]::item[])" } 1 .. 200);

for my $round (1 .. 3)
{
	my $bg = start_bg($node, $burst);
	usleep(300_000 * $round);
	my $pid = runtime_pid($node, $mode eq 'on' ? 'maintenance' : 'solo');
	ok(defined $pid && kill('KILL', $pid), "round $round: the runtime that prunes is killed");
	finish_bg($bg);    # the crash restart may end it
	ok(poll_until($node, $running_sql), "round $round: the runtimes run again");
	sql($burst);
}
is(sql('SELECT count(*) = count(DISTINCT t) AND min(t) = 0 AND max(t) = count(*) - 1 FROM wlog'), 't',
	'every committed write at a distinct time, gap-free');
my $n = sql('SELECT count(*) FROM wlog');
is(sql("SELECT replayed_upper FROM peek.replication WHERE object = 'c'"), $n, 'the upper is after the last');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')"), $n, 'every committed write is there');
ok(poll_until($node,
		"SELECT count(*) = 1 FROM peek.uppers", 't', 60),
	'the pruning resumed');
cmp_ok(() = slurp_file($node->logfile) =~ /terminated by signal 9/g, '>=', 3, 'three crash restarts');

$node->stop;
done_testing();
