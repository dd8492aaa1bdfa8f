# An index rebuilt from its collection's shard (a row type change, a runtime
# restart, a reconcile) can be exact only from the shard's since: after the
# collection alone was compacted, the shard holds no history before its
# since.  The rebuilt index must not answer older times with later contents;
# its since is raised to the shard's, and an older peek fails with 72000.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('rebuild');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
SELECT peek.write('c', ARRAY[(1, 'a')]::item[]);
SELECT peek.write('c', ARRAY[(2, 'b')]::item[], ARRAY[(1, 'a')]::item[]);
SELECT peek.write('c', ARRAY[(3, 'c')]::item[]);
SELECT peek.write('c', ARRAY[(4, 'd')]::item[]);
});
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 3)", '3'),
	'the index has caught up');
is($node->safe_psql('postgres',
		"SELECT id FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 0) ORDER BY 1"),
	'1', 'the index at 0 before compaction');

# only the collection may compact: its shard folds to 2, the index stays at 0
$node->safe_psql('postgres', "SELECT peek.allow_compaction('c', 2)");
ok(poll_until($node, "SELECT since FROM peek.objects WHERE name = 'c'", '2'),
	'the collection is compacted to 2');

# every peek of the index either is exact or fails with 72000
sub check_exact
{
	my ($what) = @_;
	for my $t (0, 1)
	{
		my $expected = $t == 0 ? '1' : "2";
		my ($rc, $out, $err) = $node->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT string_agg(id::text, ',' ORDER BY id) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => $t)");
		if ($rc == 0)
		{
			is($out, $expected, "$what: the index at $t is exact");
		}
		else
		{
			like($err, qr/72000/, "$what: the index at $t fails with 72000");
		}
	}
	is($node->safe_psql('postgres',
			"SELECT string_agg(id::text, ',' ORDER BY id) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 3)"),
		'2,3,4', "$what: the index at 3");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 2)"),
		'2', "$what: the index at 2");
}

check_exact('before the type change');

# a row type change: the index is rebuilt from the shard
$node->safe_psql('postgres', q{
ALTER TYPE item ADD ATTRIBUTE extra int;
SELECT peek.write('c', ARRAY[(5, 'e', 1)]::item[]);
});
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 4) WHERE extra = 1", '1'),
	'the index is rebuilt after the type change');
check_exact('after the type change');
ok(poll_until($node,
		"SELECT since >= 2 FROM peek.frontiers WHERE object = 'c_by_id' AND runtime IN ('maintenance', 'solo')"),
	'the rebuilt index shows a since at least the shard\'s');

# a restart of the maintenance runtime: rebuilt again
my $pid = runtime_pid($node, interactive_mode() eq 'on' ? 'maintenance' : 'solo');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)");
ok(poll_until($node,
		"SELECT pid IS NOT NULL AND pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role IN ('maintenance', 'solo')"),
	'the runtime is back');
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 3)", '3'),
	'the index is back after the restart');
$node->safe_psql('postgres', q{SELECT peek.write('c', ARRAY[(6, 'f', 2)]::item[])});
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 5) WHERE extra = 2", '1'),
	'the index follows the next write after the restart');
check_exact('after the restart');

# a server restart: the catalog's since of the index is what it starts from
$node->restart;
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', as_of => 3)", '3'),
	'the index is back after the server restart');
check_exact('after the server restart');

$node->stop;
done_testing();
