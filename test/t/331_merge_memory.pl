# A merge reserves room for its output while its inputs are still counted:
# an index over half of pg_peek.max_memory could not merge, and a merge that
# could not reserve failed the index for good.  It must wait instead; an
# index fails only when its data cannot fit.  A failed index rebuilt by a
# restarted maintenance runtime (with room now) is ready, and its peeks
# agree with its state.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('merge_memory', conf => "pg_peek.max_memory = '1MB'");

sub index_state
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT state, bytes, since FROM peek.indexes WHERE name = '$name'");
}

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, pad text);
SELECT peek.create_collection('big', 'item');
SELECT peek.create_index('big_by_id', 'big', '{id}');
SELECT peek.write('big', array_agg(ROW(i, repeat('x', 200))::item))
  FROM generate_series(1, 2500) i;
SELECT peek.write('big', ARRAY[(0, 'new')]::item[], ARRAY[ROW(1, repeat('x', 200))]::item[]);
SELECT peek.write('big', ARRAY[(-1, 'newer')]::item[]);
});
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'big_by_id', as_of => 2)", '2501'),
	'big_by_id has caught up');
my ($state, $bytes) = split /\|/, index_state('big_by_id');
note("big_by_id: $state, $bytes bytes");
cmp_ok($bytes, '>', 512 * 1024, 'big_by_id holds over half of pg_peek.max_memory');
cmp_ok($bytes, '<', 1024 * 1024, 'and less than all of it');

$node->safe_psql('postgres', "SELECT peek.allow_compaction('big_by_id', 2)");
ok(poll_until($node, "SELECT since FROM peek.indexes WHERE name = 'big_by_id'", '2'),
	'big_by_id compacts to 2');
# merges and rewrites get their rounds meanwhile
sleep(3);
is((split /\|/, index_state('big_by_id'))[0], 'ready', 'big_by_id is still ready');
is($node->safe_psql('postgres',
		"SELECT count(*), min(id) FROM peek.index_peek(NULL::item, 'big_by_id', as_of => 2)"),
	'2501|-1', 'big_by_id answers at 2');
is($node->safe_psql('postgres',
		"SELECT pad FROM peek.index_peek(NULL::item, 'big_by_id', ROW(0))"),
	'new', 'big_by_id answers a key');

# an index whose data cannot fit fails
$node->safe_psql('postgres', q{
SELECT peek.create_collection('huge', 'item');
SELECT peek.create_index('huge_by_id', 'huge', '{id}');
SELECT peek.write('huge', array_agg(ROW(i, repeat('y', 200))::item))
  FROM generate_series(1, 6000) i;
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'huge_by_id'", 'failed'),
	'huge_by_id does not fit and fails');
my ($code) = sql_error($node,
	"SELECT count(*) FROM peek.index_peek(NULL::item, 'huge_by_id')");
isnt($code, '', 'a peek of huge_by_id fails');
is((split /\|/, index_state('big_by_id'))[0], 'ready', 'big_by_id is still ready');

# with room, a restarted maintenance runtime rebuilds it: ready, and peeks work
$node->safe_psql('postgres', q{
ALTER SYSTEM SET pg_peek.max_memory = '64MB';
SELECT pg_reload_conf();
});
# (the restarted runtime reads it at start)
my $pid = runtime_pid($node, $maint);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)");
ok(poll_until($node,
		"SELECT pid IS NOT NULL AND pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$maint'"),
	'the runtime is back');
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'huge_by_id', as_of => 0)", '6000'),
	'huge_by_id is rebuilt and answers peeks');
is((split /\|/, index_state('huge_by_id'))[0], 'ready', 'huge_by_id is ready');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'big_by_id')"),
	'2501', 'big_by_id still answers');

$node->stop;
done_testing();
