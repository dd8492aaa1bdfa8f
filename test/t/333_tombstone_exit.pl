# A merge that completes after a drop committed publishes into a tombstone:
# the tombstone keeps the list published last, whose pins are the spine's.
# The spine must keep them (and its replaced batches) until it is forgotten:
# a maintenance runtime that exits before then leaves them to its successor
# (registry_release_dead_spines), and unpinning them at the publication as
# well gave them back twice (a double dsa_free, or a live batch's count
# decremented).  Drops land during heavy merge work and the maintenance
# runtime is terminated at once; the memory accounting must come back to
# exactly the live index's batches, and peeks of the other index must stay
# right.  (The window, a merge finishing between the drop's commit and the
# runtime's next catalog read, is narrow: this drives it without a
# guarantee of hitting it on every run.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('tombstone_exit');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('keep', 'item');
SELECT peek.create_index('keep_by_id', 'keep', '{id}');
SELECT peek.write('keep', array_agg(ROW(i, 'k' || i)::item)) FROM generate_series(1, 1000) i;
});
my $start = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

for my $k (1 .. 6)
{
	# many batches of a few sizes: merges keep completing over many rounds
	$node->safe_psql('postgres', qq{
SELECT peek.create_collection('d$k', 'item');
SELECT peek.create_index('d${k}_by_id', 'd$k', '{id}');
SELECT peek.create_index('d${k}_by_name', 'd$k', '{name}');
SELECT peek.write('d$k', array_agg(ROW(i, 'x' || i)::item))
  FROM generate_series(1, 40) g, LATERAL generate_series(1, 300 * (1 + g % 5)) i GROUP BY g;
});
	my $pid = runtime_pid($node, $maint);
	$node->safe_psql('postgres', qq{
SELECT peek.drop_index('d${k}_by_id');
SELECT pg_terminate_backend($pid);
});
	ok(poll_until($node,
			"SELECT pid IS NOT NULL AND pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$maint'"),
		"round $k: the runtime is back");
	is($node->safe_psql('postgres',
			"SELECT count(*), sum(id) FROM peek.index_peek(NULL::item, 'keep_by_id')"),
		'1000|500500', "round $k: keep_by_id answers");
	$node->safe_psql('postgres', "SELECT peek.drop_collection('d$k')");
}

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $start,
	'no backend crashed');
ok(poll_until($node, qq{
SELECT rt.dsa_bytes = (SELECT sum(bytes) FROM peek.registry_status() WHERE NOT dropped)
  FROM peek.runtimes rt WHERE role = '$maint'}),
	'the arrangement memory is exactly the live batches')
  or diag($node->safe_psql('postgres',
	"SELECT dsa_bytes FROM peek.runtimes; SELECT * FROM peek.registry_status()"));
is($node->safe_psql('postgres',
		"SELECT count(*), sum(id) FROM peek.index_peek(NULL::item, 'keep_by_id')"),
	'1000|500500', 'keep_by_id answers');
unlike(slurp_file($node->logfile), qr/TRAP|was terminated by signal/,
	'no assertion failure or crash in the log');

$node->stop;
done_testing();
