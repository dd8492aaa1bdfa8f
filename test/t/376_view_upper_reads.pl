# A reader who saw a view's upper u in peek.views, then reads the view
# (its PostgreSQL view: the streamed persist peek at the latest time),
# sees at least time u - 1.  A view's round commits its durable upper
# before the runtime publishes it in the registry, which the read's latest
# time comes from; peek.views showed the greater of the two, so in that
# window it ran ahead of what the read saw (seen once at load 7: upper 8,
# contents at time 4).  On a streaming standby the window lasts as long as
# the runtime that publishes replayed changes does not run: here it is
# stopped (SIGSTOP) while the primary's rounds replay, and peek.views must
# not show an upper the view's reads do not reach.  Primary and standby
# both check, after each write, that the view read right after peek.views
# holds every row written below the upper it showed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $primary = new_node('vupper_primary', init => { allows_streaming => 1 });
$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE urow AS (k int);
	SELECT peek.create_collection('uc', 'urow');
	SELECT peek.write('uc', ARRAY[ROW(1)]::urow[]);
	SELECT peek.create_view('uv', $$SELECT k, k * 2 AS d FROM peek.persist_peek(NULL::urow, 'uc') WHERE k > 0$$);
});
ok(poll_until($primary, "SELECT state = 'ready' AND upper = 1 FROM peek.views WHERE name = 'uv'"),
	'the view is ready');
my $standby = new_standby($primary, 'vupper_standby');
ok(poll_until($standby, "SELECT upper = 1 FROM peek.views WHERE name = 'uv'"),
	'the standby serves the view');

# write k at time k - 1: a view at time t holds 1 .. t + 1, so one whose
# upper is u holds max(k) = u at its latest time
my $seen_then_read = q{
	SELECT upper AS seen FROM peek.views WHERE name = 'uv' \gset
	SELECT :seen || ' ' || coalesce(max(k), 0) FROM uv;
};

sub check_reads
{
	my ($node, $what) = @_;
	my ($seen, $read) = split / /, $node->safe_psql('postgres', $seen_then_read);
	ok($read >= $seen, "$what: peek.views showed upper $seen, the view read after it holds rows to $read");
	return $seen;
}

for my $k (2 .. 6)
{
	$primary->safe_psql('postgres', "SELECT peek.write('uc', ARRAY[ROW($k)]::urow[])");
	my $seen = 0;
	for (1 .. 200)
	{
		my ($s, $r) = split / /, $primary->safe_psql('postgres', $seen_then_read);
		if ($r < $s)
		{
			$seen = -1;
			fail("primary, write $k: peek.views showed upper $s, the view read after it holds rows to $r");
			last;
		}
		$seen = $s;
		last if $s >= $k;
	}
	pass("primary, write $k: every read after peek.views reached its upper") if $seen >= 0;
}

# the standby's runtime that publishes what replay changed is stopped:
# replay goes on (the durable upper with it), the published upper not
my $pid = standby_publisher_pid($primary, $standby);
my $before = check_reads($standby, 'standby before');
stop_runtime($standby, $pid);
$primary->safe_psql('postgres', "SELECT peek.write('uc', ARRAY[ROW(7)]::urow[])");
ok(poll_until($primary, "SELECT upper = 7 FROM peek.views WHERE name = 'uv'"), 'the primary\'s view took the write');
$primary->wait_for_catchup($standby, 'replay');
is($standby->safe_psql('postgres', "SELECT max(upper) FROM peek.uppers u JOIN peek.objects o ON u.object = o.id & 4294967295 WHERE o.name = 'uv'"),
	'7', 'the standby replayed the view\'s round (its durable upper)');
is(check_reads($standby, 'standby, publishing runtime stopped'), $before,
	'peek.views on the standby shows the upper its reads resolve against');
kill 'CONT', $pid;
ok(poll_until($standby, "SELECT upper = 7 FROM peek.views WHERE name = 'uv'"), 'the standby publishes it once its runtime runs');
check_reads($standby, 'standby after');
is($standby->safe_psql('postgres', 'SELECT string_agg(k || \':\' || d, \',\' ORDER BY k) FROM uv'),
	'1:2,2:4,3:6,4:8,5:10,6:12,7:14', 'the standby\'s view holds every write');

$standby->stop;
$primary->stop;
done_testing();
