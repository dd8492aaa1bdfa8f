# An open transaction that holds one object's catalog row or shard (an
# uncommitted drop_source, drop_collection or DROP TYPE ... CASCADE) delays
# that object only: the runtimes wait for a user's lock a bounded time and
# retry later, so other collections' writes stay peekable at once.  Once the
# transactions roll back, the held objects work again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PgPeekTest;

my $node = new_node('open_xacts');
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v text);
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
CREATE TYPE other AS (id int);
SELECT peek.create_collection('o', 'other');
SELECT peek.create_index('o_by_id', 'o', '{id}');
SELECT peek.write('o', ARRAY[ROW(1)]::other[]);
CREATE TABLE src_t (id int, v text);
INSERT INTO src_t VALUES (1, 'a');
SELECT peek.create_source('src', 'src_t');
SELECT peek.create_collection('d', 'item');
SELECT peek.write('d', ARRAY[(1, 'd')]::item[]);
});
ok(poll_until($node, "SELECT count(*) = 4 FROM peek.collections WHERE state = 'ready'"),
	'collections are ready');

# A write to c and a peek of its time: seconds it took (statement_timeout 10 s).
my $k = 0;
sub write_and_peek
{
	$k++;
	my $start = time;
	my $out = $node->safe_psql('postgres', qq{
SET statement_timeout = '10s';
SELECT peek.write('c', ARRAY[($k, 'x')]::item[]) AS t \\gset
SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', ROW($k), as_of => :t);
});
	return (time - $start, $out);
}

my @held;
for my $stmt (
	"SELECT peek.drop_source('src')",
	"SELECT peek.drop_collection('d')",
	'DROP TYPE other CASCADE')
{
	my $s = bg_session($node);
	$s->query_safe('SET client_min_messages = warning');
	$s->query_safe('BEGIN');
	$s->query_safe($stmt);
	push @held, $s;

	# the runtimes meet the held locks in their next rounds
	$node->safe_psql('postgres', "INSERT INTO src_t VALUES ($k + 100, 'held')");
	for my $round (1 .. 3)
	{
		my ($secs, $count) = write_and_peek();
		is($count, '1', "with '$stmt' open: write $round to c is peekable");
		cmp_ok($secs, '<', 3, "with '$stmt' open: ... within 3 s ($secs s)");
	}
}

$_->query_safe('ROLLBACK') for @held;
$_->quit for @held;

# the held objects work again
$node->safe_psql('postgres', "INSERT INTO src_t VALUES (1000, 'after')");
ok(poll_until($node,
	"SELECT count(*) = 1 FROM peek.persist_peek(NULL::src_t, 'src') WHERE id = 1000"),
	'after the rollbacks: the source captures');
is($node->safe_psql('postgres', q{
SELECT peek.write('d', ARRAY[(2, 'd')]::item[]);
SELECT count(*) FROM peek.persist_peek(NULL::item, 'd')}), "1\n2",
	'after the rollbacks: collection d is written and peeked');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM peek.index_peek(NULL::other, 'o_by_id', ROW(1))"), '1',
	'after the rollbacks: the index over type other answers');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM peek.collections WHERE state = 'failed'"), '0',
	'after the rollbacks: nothing is failed');
is($node->safe_psql('postgres', 'SELECT sum(restarts) FROM peek.runtimes'), '0',
	'no runtime restarted');

$node->stop;
done_testing();
