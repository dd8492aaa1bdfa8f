# A runtime's command queue can hold commands of an extension other than
# the one it works for: another database's pg_peek (its backends notify the
# same runtimes), or an extension dropped since.  Such a command makes the
# runtime check the extension again, and the check finds the same one: the
# commands of its own extension taken with it must still be taken.  They
# were skipped (the start over was to re-read them, and there was none):
# a write committed after another database's write, both taken in one
# round, was never published, and a peek at its time waited until the
# next write; an allow_compaction's standing hold was never raised.  The
# runtimes are stopped (SIGSTOP) so that both commands wait in one queue.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('foreign_commands');
item_setup($node, 'c');
my $t0 = $node->safe_psql('postgres', q{SELECT peek.write('c', ARRAY[(1, 'a')]::item[])});
ok(poll_until($node, "SELECT upper > $t0 FROM peek.collections WHERE name = 'c'"),
	'the first write is published');

$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, v text);
	SELECT peek.create_collection('o', 'item');
});

my @pids = split /\n/, $node->safe_psql('postgres', 'SELECT pid FROM peek.runtimes');

# each runtime stopped while another database's write and then $sql commit
sub after_foreign_write
{
	my ($sql, $other_row) = @_;
	stop_runtime($node, $_) for @pids;
	$node->safe_psql('other', "SELECT peek.write('o', ARRAY[$other_row]::item[])");
	my $out = $node->safe_psql('postgres', $sql);
	kill 'CONT', $_ for @pids;
	return $out;
}

my $t = after_foreign_write(q{SELECT peek.write('c', ARRAY[(2, 'b')]::item[])}, "(1, 'a')");
is( $node->safe_psql('postgres',
		"SET statement_timeout = '30s'; SELECT count(*) FROM peek.persist_peek(NULL::item, 'c', as_of => $t)"),
	'2', 'a write taken in one round with another database\'s is published');

after_foreign_write("SELECT peek.allow_compaction('c', $t)", "(2, 'b')");
ok( poll_until(
		$node,
		"SELECT count(*) FROM peek.holds WHERE object = 'c' AND kind = 'standing' AND time = $t",
		scalar(@pids)),
	'every runtime raised its standing hold to the allowance');

done_testing();
