# A lazy view's learning steps are bounded (dataflow/learn.c): a key hash
# of more rows than a step walks (here a NULL group of 20,000 rows, every
# NULL key hashing alike) is passed over, its group learned when a round
# first touches it, and the other groups are learned around it; the view
# then equals its query at every time, with the passed-over group and
# learned ones written to, and the same after a runtime restart, which
# learns again and passes over the same hash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('learn_passes_over', conf => ['log_min_messages = debug1']);
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE gv AS (g int, v int);
	SELECT peek.create_collection('c', 'gv');
	-- 300 groups of 1,000 rows (their rows outweigh their states: learned),
	-- and 20,000 rows of a NULL group
	SELECT peek.write('c', array_agg((CASE WHEN i <= 300000 THEN i % 300 END, i)::gv))
	  FROM generate_series(1, 320000) i;
	SELECT peek.create_view('s', $$SELECT g, count(*) AS n, sum(v) AS s
	                                 FROM peek.persist_peek(NULL::gv, 'c') GROUP BY g$$);
});

my $ready = "SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 's'";
my $learned = "SELECT NOT bool_or(learning) FROM peek.dataflow_operators WHERE view = 's'";
# (its rows and the writes' updates of it, each an entry of the arrangement)
my $passed = qr/passes over key hash \d+ in its learning: 200\d\d rows/;

# the view at every time from 0 to its upper - 1 against its query
sub bad_times
{
	return sql(q{
		SELECT count(*) FROM generate_series(0, (SELECT upper - 1 FROM peek.views WHERE name = 's')) t
		 WHERE EXISTS (
		   (SELECT * FROM peek.persist_peek(NULL::s, 's', as_of => t)
		    EXCEPT ALL
		    SELECT g, count(*), sum(v) FROM peek.persist_peek(NULL::gv, 'c', as_of => t) GROUP BY g)
		   UNION ALL
		   (SELECT g, count(*), sum(v) FROM peek.persist_peek(NULL::gv, 'c', as_of => t) GROUP BY g
		    EXCEPT ALL
		    SELECT * FROM peek.persist_peek(NULL::s, 's', as_of => t)))});
}

# a write to the passed-over group and to some learned ones
sub write_some
{
	my ($round) = @_;
	sql(qq{
		SELECT peek.write('c', ARRAY[(NULL, -$round), (7, -$round), (8, -$round)]::gv[],
		                       ARRAY(SELECT (NULL, i)::gv FROM generate_series(300001 + 10 * $round, 300005 + 10 * $round) i)
		                       || ARRAY[(7 % 300, 7 + 300 * $round)]::gv[]);
	});
}

ok(poll_until($node, $ready), 'the view is ready');
# its first round after the hydration starts it lazy, learning
write_some(1);
ok(poll_until($node, $ready), 'the view took a first write');
ok(poll_until($node, $learned, 't', 60), 'its groups are learned');
like(slurp_file($node->logfile), $passed, 'the NULL group of 20,000 rows was passed over');
is(bad_times(), '0', 'the view equals its query at every time after the learning');

write_some(2);
ok(poll_until($node, $ready), 'the view took a second write');
is(bad_times(), '0', 'the passed-over group and learned ones written to: equal at every time');
is(sql("SELECT n FROM s WHERE g IS NULL"), '19992', 'the NULL group lost ten rows and gained two');

# a restart starts lazy and learns again, passing over the same hash
my $log_offset = -s $node->logfile;
my $pid = runtime_pid($node, 'maintenance') // runtime_pid($node, 'solo');
sql("SELECT pg_terminate_backend($pid)");
ok(poll_until($node, "SELECT count(*) > 0 FROM peek.runtimes WHERE pid <> $pid AND role IN ('maintenance', 'solo')"),
	'the maintenance runtime is back');
write_some(3);
ok(poll_until($node, $ready), 'the view took a write after the restart');
ok(poll_until($node, $learned, 't', 60), 'its groups are learned again');
like(substr(slurp_file($node->logfile), $log_offset), qr/passes over key hash \d+ in its learning: 19\d\d\d rows/,
	'the restart passed over the NULL group again');
write_some(4);
ok(poll_until($node, $ready), 'the view took a last write');
is(bad_times(), '0', 'the view equals its query at every time after the restart');
is(sql("SELECT state FROM peek.views WHERE name = 's'"), 'ready', 'the view did not fail');

done_testing();
