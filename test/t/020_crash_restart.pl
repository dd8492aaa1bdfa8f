# Crash recovery: after a crash-restart of the whole cluster
# (a client backend killed with SIGKILL) every committed update, the
# compaction and the frontiers are still there, the runtimes publish them
# again, and an append of a transaction open at the moment of the crash is
# gone.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

# TAP clusters default to restart_after_crash = off
my $node = new_node('crash', conf => ['restart_after_crash = on']);

sub peek_sql
{
	my ($coll, $t) = @_;
	my $as_of = defined $t ? $t : 'NULL';
	return "SELECT id, name FROM peek.persist_peek(NULL::item, '$coll', as_of => $as_of) ORDER BY id, name";
}

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('hist', 'item');
SELECT peek.create_collection('other', 'item');
});
my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";
# (every runtime has adopted the extension before the history is written;
# 050_compaction_holds.pl covers an allow_compaction that comes earlier)
ok(poll_until($node, $running_sql), 'the runtimes are running');

# history of hist:
#   t0 +a +b +c   t1 -a +d   t2 +b x2   t3 -c   t4 +e   t5 -b
#   t6 -d +f (appended, then advance to 8: t7 is empty)
$node->safe_psql('postgres', q{
SELECT peek.write('hist', ARRAY[(1, 'a'), (2, 'b'), (3, 'c')]::item[]);
SELECT peek.write('hist', ARRAY[(4, 'd')]::item[], ARRAY[(1, 'a')]::item[]);
SELECT peek.append('hist', ARRAY[(2, 'b')]::item[], 2, 2);
SELECT peek.advance('hist', 3);
SELECT peek.write('hist', '{}'::item[], ARRAY[(3, 'c')]::item[]);
SELECT peek.write('hist', ARRAY[(5, 'e')]::item[]);
SELECT peek.write('hist', '{}'::item[], ARRAY[(2, 'b')]::item[]);
SELECT peek.append('hist', ARRAY[(4, 'd')]::item[], 6, -1);
SELECT peek.append('hist', ARRAY[(6, 'f')]::item[], 6);
SELECT peek.advance('hist', 8);
SELECT peek.write('other', ARRAY[(10, 'x')]::item[]);
});
is($node->safe_psql('postgres',
		"SELECT string_agg(name || ':' || since || ':' || upper, ',' ORDER BY name) FROM peek.collections"),
	'hist:0:8,other:0:1', 'hist upper 8, other upper 1');

my $shard = $node->safe_psql('postgres',
	"SELECT shard FROM peek.collections WHERE name = 'hist'");
like($shard, qr/^peek\.shard_\d+$/, 'hist has a shard table');
my $rows_before_compaction =
  $node->safe_psql('postgres', "SELECT count(*) FROM $shard");

# compaction to since 3
$node->safe_psql('postgres', "SELECT peek.allow_compaction('hist', 3)");
ok(poll_until($node, "SELECT since FROM peek.collections WHERE name = 'hist'", '3'),
	'peek.collections.since reaches 3');
ok(poll_until($node, "SELECT since FROM peek.objects WHERE name = 'hist'", '3'),
	'the durable since reaches 3');
# the base moves on to the last complete time (a fold adds its rows); the
# row count below must not change while the crash is set up
ok(poll_until($node, "SELECT base_time FROM peek.objects WHERE name = 'hist'", '7'),
	'the base reaches the last complete time');
my $rows = $node->safe_psql('postgres', "SELECT count(*) FROM $shard");
cmp_ok($rows, '<', $rows_before_compaction, "compaction shrank the shard ($rows_before_compaction -> $rows rows)");

# what every committed update adds up to, before the crash
my @times = (3 .. 7);
my %before;
$before{$_} = $node->safe_psql('postgres', peek_sql('hist', $_)) for @times;
$before{latest} = $node->safe_psql('postgres', peek_sql('hist', undef));
$before{other} = $node->safe_psql('postgres', peek_sql('other', 0));
my %expected = (
	3 => "2|b\n2|b\n2|b\n4|d",
	4 => "2|b\n2|b\n2|b\n4|d\n5|e",
	5 => "2|b\n2|b\n4|d\n5|e",
	6 => "2|b\n2|b\n5|e\n6|f",
	7 => "2|b\n2|b\n5|e\n6|f",
);
is($before{$_}, $expected{$_}, "hist at $_ before the crash") for @times;
is($before{latest}, $before{7}, 'hist at the latest time is hist at 7');
is($before{other}, '10|x', 'other at 0 before the crash');
my ($err_before) = ($node->psql('postgres', peek_sql('hist', 2)))[2];
like($err_before, qr/compacted to since 3/, 'a peek at 2 is compacted before the crash');
my $collections_sql =
  "SELECT string_agg(name || ':' || since || ':' || upper || ':' || allowed_since, ',' ORDER BY name) FROM peek.collections";
my $collections_before = $node->safe_psql('postgres', $collections_sql);
is($collections_before, 'hist:3:8:3,other:0:1:0', 'peek.collections before the crash');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || since || ':' || upper, ',' ORDER BY object) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo')",
		'hist:3:8,other:0:1'),
	'frontiers before the crash');

# an append (and advance) in a transaction left open at the crash
my $open = bg_session($node);
$open->query_safe('BEGIN');
$open->query_safe("SELECT peek.append('hist', ARRAY[(99, 'ghost')]::item[], 8)");
$open->query_safe("SELECT peek.advance('hist', 10)");
is($open->query_safe("SELECT count(*) FROM $shard WHERE (data).id = 99"), '1',
	'the open transaction sees its own append');
is($node->safe_psql('postgres', "SELECT count(*) FROM $shard"), $rows,
	'other sessions do not see the uncommitted append');

# ---- crash ----------------------------------------------------------------

my $log_offset = -s $node->logfile;
my $sleeper = start_bg($node, 'SELECT pg_sleep(60)');
my $victim = bg_backend_pid($node, $sleeper);
ok(defined $victim, 'the sleeping backend has a pid');
is(kill('KILL', $victim), 1, "SIGKILL the client backend $victim");

ok( eval {
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
		1;
	},
	'the postmaster crash-restarts the cluster');
my ($rc) = finish_bg($sleeper, 30);
isnt($rc, 0, 'the killed backend\'s psql reports the lost connection');
eval { $open->quit };    # its connection is gone too

ok(poll_until($node, 'SELECT 1', '1', 60), 'the server accepts connections again');
ok( poll_until($node, $running_sql, 't', 60),
	'the runtimes are running again');

# ---- everything committed is still there ----------------------------------

is($node->safe_psql('postgres', "SELECT count(*) FROM $shard"), $rows,
	'the shard has the same number of rows');
is($node->safe_psql('postgres', "SELECT count(*) FROM $shard WHERE (data).id = 99"), '0',
	'the uncommitted append is gone');
is($node->safe_psql('postgres', $collections_sql), $collections_before,
	'peek.collections: same since, upper and allowed_since (the open advance is gone)');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || since || ':' || upper, ',' ORDER BY object) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo')",
		'hist:3:8,other:0:1'),
	'frontiers are published again with the same since and upper');
for my $t (@times)
{
	is($node->safe_psql('postgres', peek_sql('hist', $t)), $before{$t},
		"hist at $t is the same after the crash");
}
is($node->safe_psql('postgres', peek_sql('hist', undef)), $before{latest},
	'hist at the latest time is the same after the crash');
is($node->safe_psql('postgres', peek_sql('other', 0)), $before{other},
	'other at 0 is the same after the crash');
my ($rc2, $out2, $err2) = $node->psql('postgres', peek_sql('hist', 2));
isnt($rc2, 0, 'a peek at 2 still fails after the crash');
like($err2, qr/compacted to since 3/, 'a peek at 2 is still compacted after the crash');

# and the collection goes on: the time the ghost took is free again
is($node->safe_psql('postgres', "SELECT peek.write('hist', ARRAY[(7, 'g')]::item[])"),
	'8', 'a write after the crash lands at time 8');
is($node->safe_psql('postgres', peek_sql('hist', 8)),
	"$expected{7}\n7|g",
	'hist at 8 has the new row and no ghost');
ok(poll_until($node, "SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'hist'", '9'),
	'the frontier follows the new write');
ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0'),
	'no active peeks remain');

$node->stop;
done_testing();
