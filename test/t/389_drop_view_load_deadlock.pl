# peek.drop_view in a transaction that holds an xid, of a view over a
# source still loading: the load waits for that transaction (its slot waits
# for every transaction that held an xid), a reader of the view waits for
# the load, and the drop waits while a peek of the view waits.  The drop
# waited for ever (a hostile soak hung 46 readers and its churn client this
# way); it now reports the cycle as 40P01, as a peek of the transaction's
# own does, and once it is rolled back the load, the reader and a drop
# go through.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('drop_view_load_deadlock');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TABLE d(id int PRIMARY KEY, v int);
INSERT INTO d VALUES (1, 10), (2, 20);
CREATE TABLE other(x int);
});

# the dropper's transaction holds an xid before the source is made
my $dropper = start_bg($node,
	"BEGIN; INSERT INTO other VALUES (1); SELECT pg_sleep(4); SELECT peek.drop_view('dv'); COMMIT",
	verbose => 1, timeout => 40);
ok( poll_until($node,
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = '$dropper->{application_name}' AND backend_xid IS NOT NULL",
		'1'),
	'the dropping transaction holds an xid');

$node->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT peek.create_source('ds', 'd');
SELECT peek.create_view('dv', 'SELECT count(*) AS n, sum(v) AS s FROM d');
});
my $reader = start_bg($node, 'SELECT * FROM dv');
ok( poll_until($node,
		"SELECT count(*) FROM peek.active_peeks WHERE object = 'dv' AND state = 'waiting'", '1'),
	'a reader of the view waits for the load');

my ($rc, $out, $err) = finish_bg($dropper, 40);
isnt($rc, -1, 'the drop does not wait for ever');
isnt($rc, 0, 'the drop fails');
like($err, qr/ERROR:  40P01: deadlock detected/, 'the drop reports the deadlock (40P01)');
like($err, qr/the pg_peek loader process \d+, which waits for this transaction to end/,
	'it names the loader that waits for its transaction');

($rc, $out, $err) = finish_bg($reader, 60);
is($rc, 0, 'the reader is answered once the dropper rolled back');
is($out, '2|30', 'the reader sees the loaded rows');
is($node->safe_psql('postgres', "SELECT peek.drop_view('dv')"), '', 'the view is dropped');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.views"), '0', 'no view is left');

$node->stop;
done_testing();
