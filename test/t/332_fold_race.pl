# A fold deletes the shard rows it replaces.  Another transaction that
# changed one of them meanwhile (a loader's fold of the same shard, the
# 0.1 to 0.2 upgrade's rewrite of the base rows) made the delete fail with
# "tuple concurrently updated" (XX000), which failed the collection for
# good.  The conflict is transient: the fold is retried on a new snapshot.
#
# The other transaction here updates a row the fold will delete and commits
# while the maintenance runtime's fold waits for it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('fold_race');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('c', 'item');
SELECT peek.write('c', ARRAY[(0, 'zero')]::item[]);
});
my $shard = $node->safe_psql('postgres',
	"SELECT shard::regclass FROM peek.objects WHERE name = 'c'");
my $pid = runtime_pid($node, $maint);
my $other = bg_session($node);

for my $k (1 .. 4)
{
	my $t = $node->safe_psql('postgres',
		"SELECT peek.write('c', ARRAY[($k, 'row $k')]::item[])");
	$node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(-$k, 'later')]::item[])");
	$other->query_safe("BEGIN; UPDATE $shard SET diff = diff WHERE time = $t");
	$node->safe_psql('postgres', "SELECT peek.allow_compaction('c', $t + 1)");
	# commit as soon as the fold waits for this transaction
	$other->query_safe(qq{
DO \$\$
BEGIN
    FOR i IN 1 .. 6000 LOOP
        EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
                           WHERE pid = $pid AND wait_event_type = 'Lock');
        PERFORM pg_sleep(0.002);
    END LOOP;
END \$\$;
COMMIT;
});
	ok(poll_until($node,
			"SELECT since >= $t + 1 OR failure IS NOT NULL FROM peek.collections WHERE name = 'c'"),
		"round $k: the fold to " . ($t + 1) . ' is done or failed');
	is($node->safe_psql('postgres',
			"SELECT coalesce(failure, 'none') FROM peek.collections WHERE name = 'c'"),
		'none', "round $k: the collection has not failed");
}
is($node->safe_psql('postgres',
		"SELECT string_agg(id::text, ',' ORDER BY id) FROM peek.persist_peek(NULL::item, 'c')"),
	'-4,-3,-2,-1,0,1,2,3,4', 'the collection\'s contents');
is(runtime_pid($node, $maint), $pid, 'the maintenance runtime did not restart');

$other->quit;
$node->stop;
done_testing();
