# peek.drop_view queued for a maintained view's PostgreSQL view leaves the
# queue now and then (its internal lock timeout, deadlock_timeout + 100 ms)
# to look at the view's peeks again.  A statement_timeout that comes due
# by the time that wait ends is reported by PostgreSQL as the earlier of
# the two, the lock timeout: it must still end the drop with 57014, not be
# taken for the internal timeout and lost (the drop then waited on, past
# its timeout, and went through).  The dropping backend is stopped
# (SIGSTOP) while it waits, over both timeouts, as a loaded machine may
# keep it from running for a while.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $node = new_node('drop_view_timeouts');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE kv AS (k int, v int);
SELECT peek.create_collection('c', 'kv');
SELECT peek.create_view('v', 'SELECT k, sum(v) AS s FROM peek.persist_peek(NULL::kv, ''c'') GROUP BY k');
});

# a reader holds the PostgreSQL view's lock for 10 s (no peek waits)
my $holder = start_bg($node, 'BEGIN; LOCK TABLE v IN ACCESS SHARE MODE; SELECT pg_sleep(10); COMMIT');
ok( poll_until($node,
		"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.relation = 'v'::regclass AND l.granted AND a.application_name = '$holder->{application_name}'",
		'1'),
	'the reader holds the lock of the PostgreSQL view');

# the drop queues for the lock: its internal timeout at 3.1 s, the
# statement's at 3.3 s
my $dropper = start_bg($node,
	"SET deadlock_timeout = '3s'; SET statement_timeout = '3300ms'; SELECT peek.drop_view('v')",
	verbose => 1);
my $pid = bg_backend_pid($node, $dropper);
ok(defined $pid, 'the dropping backend has a pid');
ok( poll_until($node,
		"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid", 'Lock'),
	'the drop is queued for the lock');

# stopped over both timeouts: both are due when it runs again
is(kill('STOP', $pid), 1, 'SIGSTOP the dropping backend');
usleep(4_000_000);
is(kill('CONT', $pid), 1, 'SIGCONT the dropping backend');

my ($rc, $out, $err) = finish_bg($dropper, 60);
isnt($rc, 0, 'the drop fails');
like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'the drop reports its statement_timeout (57014)');
finish_bg($holder, 60);
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.views WHERE name = 'v'"),
	'1', 'the view is still there');

# and with nothing stopped, the drop goes through once the reader is gone
is($node->safe_psql('postgres', "SELECT peek.drop_view('v')"), '', 'the view is dropped');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.views"), '0', 'no view is left');

$node->stop;
done_testing();
