# A view that reads a failed view by name fails with it, as a view over a
# failed source does, without a restart of the runtime.  A failed input
# publishes no more times, so the runtime makes the views reading it due
# (dataflow_forget): their next round fails them naming it.  A failed view
# was forgotten without making its readers due: seen in a 50-client soak
# (a source's table altered, its view failed), the view over it stayed
# ready, lag 0, its reads answering at the upper where it stopped, until
# the maintenance runtime restarted and adopted it failed.  Here: a
# source, a view over it, a view over that view by name and a view over
# that one (three deep); the table gets row-level security (the source fails); every
# view fails, the deeper ones naming their input view, their peeks fail
# with 55000, and the runtime that maintains did not restart.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('view_over_failed_view');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE s (a int, b text);
	INSERT INTO s SELECT g, 'x' || g % 3 FROM generate_series(1, 30) g;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_view('v1', $$SELECT b, count(*) AS n FROM s GROUP BY b$$);
	SELECT peek.create_view('v2', $$SELECT b, n FROM v1 WHERE n > 1$$);
	SELECT peek.create_view('v3', $$SELECT count(*) AS groups FROM v2$$);
});
ok(poll_until($node, "SELECT count(*) = 3 FROM peek.views WHERE state = 'ready'"),
	'the three views are ready');
sql("INSERT INTO s VALUES (31, 'x1')");
ok(poll_until($node, q{SELECT count(*) = 3 FROM peek.views v
	WHERE v.upper >= (SELECT upper FROM peek.collections WHERE name = 's_src')}),
	'the views follow a write');
is(sql('SELECT groups FROM v3'), '3', 'the view three deep reads its input');

my $pid = runtime_pid($node, maintenance_role());
sql('ALTER TABLE s ENABLE ROW LEVEL SECURITY');
sql("INSERT INTO s VALUES (32, 'x2')");
ok(poll_until($node, "SELECT state = 'failed' FROM peek.collections WHERE name = 's_src'"),
	'the source fails');
ok(poll_until($node, "SELECT state = 'failed' FROM peek.views WHERE name = 'v1'"),
	'the view over it fails');
ok(poll_until($node, "SELECT count(*) = 3 FROM peek.views WHERE state = 'failed'", 't', 20),
	'the views over the failed view fail too');
like(sql("SELECT failure FROM peek.views WHERE name = 'v2'"),
	qr/^its input view "v1" is failed: /, 'the view over it names the failed view');
like(sql("SELECT failure FROM peek.views WHERE name = 'v3'"),
	qr/^its input view "v2" is failed: /, 'the view three deep names its input');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM v3',
	extra_params => ['-v', 'VERBOSITY=verbose']);
like($err, qr/ERROR:\s+55000: view "v3" is failed/, 'a read of the view three deep fails with 55000');
is(runtime_pid($node, maintenance_role()), $pid,
	'the runtime that maintains did not restart');

$node->stop;
done_testing();
