# A spine holds one pin on each batch it published, besides the registry's
# own; a successor runtime releases a dead one's pins on the published lists
# it finds marked as spine-pinned.  A spine that let go of its pins while its
# list stayed published (the extension dropped, an index re-hydrating)
# must say so, or the successor unpins those batches a second time: they
# were freed under the registry's list, and pg_peek.max_memory's count went
# wrong (tiny indexes "exceeded" 1 GB after the regression tests that drop
# the extension and kill the runtime).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = maintenance_role();
my $node = new_node('spine_pins');

# a collection of rows (i, name) for i in 1..rows, and an index on id
sub load
{
	my ($name, $rows) = @_;
	$node->safe_psql('postgres', qq{
SELECT peek.create_collection('$name', 'item');
SELECT peek.create_index('${name}_by_id', '$name', '{id}');
SELECT peek.write('$name', array_agg(ROW(i, '$name')::item))
  FROM generate_series(1, $rows) i;
});
	ok(poll_until($node, qq{
SELECT count(*) || ' ' || min(pad) || ' ' || max(pad)
  FROM peek.index_peek(NULL::item, '${name}_by_id')}, "$rows $name $name"),
		"${name}_by_id answers");
}

# the runtime's counter of arrangement bytes equals what the indexes hold,
# once merges have settled
sub bytes_agree
{
	my ($what) = @_;
	ok(poll_until($node, qq{
SELECT (SELECT dsa_bytes FROM peek.runtimes WHERE role = '$maint') =
       (SELECT coalesce(sum(bytes), 0) FROM peek.indexes)}),
		"$what: the arrangement bytes counted are the indexes' bytes")
	  or diag($node->safe_psql('postgres', qq{
SELECT dsa_bytes, (SELECT sum(bytes) FROM peek.indexes)
  FROM peek.runtimes WHERE role = '$maint'}));
}

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, pad text);
});
load('a', 5);
load('a_big', 3000);
bytes_agree('after loading a');
my $log_offset = -s $node->logfile;

# The runtime notices the drop within a tick and lets go of its spines;
# the registry still lists a's batches until the objects are reconciled.
my $pid = runtime_pid($node, $maint);
$node->safe_psql('postgres', 'DROP EXTENSION pg_peek CASCADE');
sleep(3);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)");
ok(poll_until($node, qq{
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'pg_peek $maint' AND pid <> $pid}, '1'),
	'a successor runtime started');
sleep(2);

# the runtime reconciles the new extension's empty catalog: a's entry goes
$node->safe_psql('postgres', 'CREATE EXTENSION pg_peek');
ok(poll_until($node, "SELECT state FROM peek.runtimes WHERE role = '$maint'", 'running'),
	'the runtime runs with the new extension');
sleep(2);
is($node->safe_psql('postgres',
		"SELECT dsa_bytes FROM peek.runtimes WHERE role = '$maint'"),
	'0', 'no arrangement bytes are counted with no index');
# freed batches had been released again: DSA's free lists were corrupt and
# new batches overlapped
load('b', 3000);
load("s$_", 5) for 1 .. 20;
for my $name ('b', map { "s$_" } 1 .. 20)
{
	is($node->safe_psql('postgres', qq{
SELECT count(*) || ' ' || min(pad) || ' ' || max(pad)
  FROM peek.index_peek(NULL::item, '${name}_by_id')}),
		$name eq 'b' ? '3000 b b' : "5 $name $name", "$name still answers its own rows");
}
bytes_agree('after the drop, the kill and new indexes');
is($node->safe_psql('postgres',
		"SELECT restarts FROM peek.runtimes WHERE role = '$maint'"),
	'1', 'the runtime restarted once, for the kill alone');

my $log = substr(slurp_file($node->logfile), $log_offset);
unlike($log, qr/unpinned more often than pinned/, 'no batch was unpinned twice');
unlike($log, qr/exceeds pg_peek\.max_memory/, 'no index failed for memory');

done_testing();
