# DROP EXTENSION and CREATE EXTENSION restart the catalog's sequence: a new
# object's id has the dropped one's sequence part (the part peek.uppers
# names objects by) under another extension OID.  The maintenance runtime
# may still have a pruning of the dropped object pending when it runs its
# next round (it notices the re-creation once a second): that pruning must
# not delete the new object's uppers, or the new collection's upper falls
# back and a write reuses a time already written.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

my $node = new_node('primary');
$node->safe_psql('postgres', 'CREATE TYPE item AS (id int, name text)');

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $writes = join(";\n", map { "SELECT peek.write('c', ARRAY[($_, 'x')]::item[])" } 1 .. 40);
my $bad = 0;
for my $round (1 .. 8)
{
	sql("CREATE EXTENSION pg_peek; SELECT peek.create_collection('c', 'item')");
	# the old collection's uppers, adopted (noted for pruning) by the runtime
	sql($writes);
	usleep(200_000 + 100_000 * $round);
	sql("DROP EXTENSION pg_peek CASCADE; CREATE EXTENSION pg_peek; "
		  . "SELECT peek.create_collection('c', 'item'); "
		  . join(";\n", map { "SELECT peek.write('c', ARRAY[($_, 'n')]::item[])" } 1 .. 5));
	usleep(2_500_000);
	my $upper = sql("SELECT upper FROM peek.collections WHERE name = 'c'");
	my $next = sql("SELECT peek.write('c', ARRAY[(6, 'n')]::item[])");
	if ($upper ne '5' || $next ne '5')
	{
		diag("round $round: the new collection's upper is $upper, its next write at $next");
		$bad++;
	}
	sql('DROP EXTENSION pg_peek CASCADE');
}
is($bad, 0, 'no pruning of a dropped extension\'s object deletes a new object\'s uppers');

$node->stop;
done_testing();
