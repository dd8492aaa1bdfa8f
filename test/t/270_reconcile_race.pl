# An object created while the maintenance runtime reconciles (found while
# measuring capture on a cluster that re-hydrated millions of rows at
# start): after a restart the runtime reads the whole catalog, adopts every
# object (hydrating each index, which takes a while for a big one) and then
# tombstones the registry entries the read did not list.  An index created
# and peeked meanwhile got a placeholder entry from its peek after that
# read; it was tombstoned with the stale ones and the peek failed with
# "index ... was dropped while the peek waited".  Now an unpublished entry
# the read did not list is checked against the catalog in the next round,
# as a placeholder is.
#
#  * 5 rounds: SIGTERM the runtime that maintains, and while it re-hydrates
#    an index over 1M rows, create a collection and an index, write a row,
#    and peek the index at the write's time: the peek answers with the row
#    (before the fix all 5 failed with 42704).
#  * A dropped index is still reported as missing (42704).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode = interactive_mode();
my $role = $mode eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('reconcile_race');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	SELECT peek.create_collection('big', 'kv');
	SELECT count(peek.write('big', rows)) FROM (
	  SELECT array_agg((g, 'value ' || g)::kv) AS rows
	    FROM generate_series(1, 1000000) g GROUP BY g / 100000) chunks;
	SELECT peek.create_index('big_k', 'big', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'big_k'", 'ready', 120),
	'the big index is ready');

for my $round (1 .. 5)
{
	my $pid = runtime_pid($node, $role);
	kill 'TERM', $pid;
	ok(poll_until($node,
			"SELECT count(*) FROM peek.runtimes WHERE role = '$role' AND pid IS NOT NULL AND pid <> $pid",
			'1', 60),
		"round $round: the $role runtime restarted");
	my $t = sql(qq{
		SELECT peek.create_collection('fresh_$round', 'kv');
		SELECT peek.create_index('fresh_${round}_k', 'fresh_$round', ARRAY['k']);
		SELECT peek.write('fresh_$round', ARRAY[($round, 'fresh')::kv]);
	});
	my ($state, $msg) = sql_error($node, qq{
		SET statement_timeout = '60s';
		SELECT k, v FROM peek.index_peek(NULL::kv, 'fresh_${round}_k', ROW($round), as_of => $t)});
	is("$state $msg", ' ', "round $round: the new index's peek, issued during reconciliation, does not fail");
	is(sql("SELECT string_agg(k || ':' || v, ',') FROM peek.index_peek(NULL::kv, 'fresh_${round}_k', as_of => $t)"),
		"$round:fresh", "round $round: and it has the row");
}

sql("SELECT peek.drop_index('fresh_1_k')");
my ($state) = sql_error($node, "SELECT * FROM peek.index_peek(NULL::kv, 'fresh_1_k', ROW(1))");
is($state, '42704', 'a dropped index is still reported as missing');

done_testing();
