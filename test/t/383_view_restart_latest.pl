# Read-your-writes through a view's upper across maintenance runtime
# restarts: a user who wrote at time t, waited until peek.views showed the
# view's upper past t, then read the view at the latest time (as_of NULL,
# by the fast path and routed through the runtime) sees the write, even
# while the restarted runtime has not yet published its inputs again.
# (regress views_delta_needed_attack once saw a latest-time read of a
# view "behind" right after a restart: it had waited for the views' shown
# uppers to reach the collections' shown uppers, both of them what the
# runtime had last published, not yet the writes just committed; a wait
# for the view's upper to pass the written time is the one that holds.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = maintenance_role();
my $node = new_node('view_restart_latest');
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE rrow AS (k int, g int);
SELECT peek.create_collection('rc', 'rrow');
SELECT peek.write('rc', ARRAY[ROW(0, 0)]::rrow[]);
SELECT peek.create_view('rv_map', $$SELECT k, g FROM peek.persist_peek(NULL::rrow, 'rc') WHERE k >= 0$$);
SELECT peek.create_view('rv_grp', $$SELECT g, max(k) AS top FROM peek.persist_peek(NULL::rrow, 'rc') GROUP BY g$$);
SELECT peek.create_index('rv_grp_g', 'rv_grp', '{g}');
});
ok(poll_until($node, "SELECT count(*) FROM peek.views WHERE state = 'ready' AND upper > 0", '2'),
	'the views are ready');

# the write's row is in each view's latest contents, read three ways
sub latest_reads
{
	my ($fast_path, $k) = @_;
	return $node->safe_psql('postgres', qq{
		SET pg_peek.fast_path = $fast_path;
		SELECT (SELECT count(*) FROM rv_map WHERE k = $k)
		    || ' ' || (SELECT count(*) FROM peek.persist_peek(NULL::rv_grp, 'rv_grp') WHERE top = $k)
		    || ' ' || (SELECT count(*) FROM peek.index_peek(NULL::rv_grp, 'rv_grp_g', ROW(1)) WHERE top = $k);
	});
}

my $k = 0;
for my $fast_path ('on', 'off')
{
	for my $restart (1 .. 4)
	{
		my $pid = runtime_pid($node, $maint);
		$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
		$k++;
		# written while the runtime restarts (or just after)
		my $t = $node->safe_psql('postgres', "SELECT peek.write('rc', ARRAY[ROW($k, 1)]::rrow[])");
		ok(poll_until($node,
				"SELECT bool_and(upper > $t) AND count(*) = 2 FROM peek.views WHERE name IN ('rv_map', 'rv_grp')"),
			"fast_path $fast_path, restart $restart: the views' uppers pass the write at $t");
		is(latest_reads($fast_path, $k), '1 1 1',
			"fast_path $fast_path, restart $restart: a latest-time read after that sees the write");
		# a second write with the runtime up: the same
		$k++;
		$t = $node->safe_psql('postgres', "SELECT peek.write('rc', ARRAY[ROW($k, 1)]::rrow[])");
		ok(poll_until($node,
				"SELECT bool_and(upper > $t) AND count(*) = 2 FROM peek.views WHERE name IN ('rv_map', 'rv_grp')"),
			"fast_path $fast_path, restart $restart: and past the next write at $t");
		is(latest_reads($fast_path, $k), '1 1 1',
			"fast_path $fast_path, restart $restart: which a latest-time read sees");
		ok(poll_until($node,
				"SELECT pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$maint'"),
			"fast_path $fast_path, restart $restart: the runtime is back");
	}
}
# the window the regress test fell into, held open: the runtime stopped
# (SIGSTOP) after a write commits has not published it, so peek.collections
# shows the collection's upper last published, not past the write, and the
# views' uppers reach that one without having taken it; a latest-time
# read then reads before the write, and that is right: the view's upper
# has not passed it.  Once the runtime runs, it does, and reads see it.
my $pid = runtime_pid($node, $maint);
stop_runtime($node, $pid);
$k++;
my $t = $node->safe_psql('postgres', "SELECT peek.write('rc', ARRAY[ROW($k, 1)]::rrow[])");
is($node->safe_psql('postgres', qq{
	SELECT (SELECT upper <= $t FROM peek.collections WHERE name = 'rc')
	   AND (SELECT bool_and(v.upper >= c.upper) FROM peek.views v, peek.collections c WHERE c.name = 'rc')
	   AND (SELECT bool_and(upper <= $t) FROM peek.views)}),
	't', 'runtime stopped: the views reach the collection\'s shown upper, neither passes the write');
kill 'CONT', $pid;
ok(poll_until($node,
		"SELECT bool_and(upper > $t) AND count(*) = 2 FROM peek.views WHERE name IN ('rv_map', 'rv_grp')"),
	'runtime running again: the views\' uppers pass the write');
is(latest_reads('off', $k), '1 1 1', 'and a latest-time read sees it');

is($node->safe_psql('postgres', "SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM peek.views"),
	'rv_grp:ready,rv_map:ready', 'no view failed');

$node->stop;
done_testing();
