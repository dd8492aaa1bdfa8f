# Issue 22 (hardening): in solo mode (pg_peek.interactive = off) the runtime
# answers ready index peeks from its own spine.  After a restart whose
# adoption of the index fails on the runtimes' 100 ms lock timeout (an open
# transaction holds the shard), the registry still admits the index's
# times: a peek the runtime answers meanwhile must get the whole answer
# (the list the runtime's last incarnation published), neither an empty
# one nor an error that stops the runtime, and the adoption must be
# retried once the lock is gone.  In split mode the same holds through the
# interactive runtime's shared handles.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('solo_adoption');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v text);
SELECT peek.create_collection('c', 'item');
SELECT peek.write('c', array_agg((g, 'v' || g)::item)) FROM generate_series(1, 100) g;
SELECT peek.create_index('c_id', 'c', ARRAY['id']);
});
ok(poll_until($node, "SELECT state = 'ready' AND upper = 1 FROM peek.indexes WHERE name = 'c_id'"),
	'the index is ready');
my $shard = $node->safe_psql('postgres', "SELECT shard FROM peek.collections WHERE name = 'c'");

# every peek below is answered by the runtime that serves peeks
my $routed = 'SET pg_peek.fast_path = off; SET statement_timeout = 20000;';
sub peek_count
{
	return $node->safe_psql('postgres',
		"$routed SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL, as_of => 0)");
}
is(peek_count(), '100', 'before the restart: 100 rows');

# an open transaction holds the shard: the restarted runtime's adoption
# waits 100 ms for it, fails, and is retried on later rounds
my $locker = bg_session($node);
$locker->query_safe('BEGIN');
$locker->query_safe("LOCK TABLE $shard IN ACCESS EXCLUSIVE MODE");
my $log_offset = -s $node->logfile;
my $old_pid = runtime_pid($node, $maint);
kill 'TERM', $old_pid;
ok(poll_until($node,
		"SELECT count(*) = 1 FROM peek.runtimes WHERE role = '$maint' AND state = 'running' AND pid <> $old_pid"),
	"the $maint runtime came back");
$node->wait_for_log(qr/pg_peek object \d+ will be retried/, $log_offset);
pass('its adoption met the lock timeout and will be retried');
my $new_pid = runtime_pid($node, $maint);

is(peek_count(), '100', 'while the adoption waits: the whole answer, not an empty one');
is($node->safe_psql('postgres',
		"$routed SELECT id || ':' || v FROM peek.index_peek(NULL::item, 'c_id', ROW(7))"),
	'7:v7', 'a key lookup finds its row');
is(peek_count(), '100', 'and again');
is(runtime_pid($node, $maint), $new_pid, "the $maint runtime did not exit");

# the lock gone, the adoption is retried: a new write is published
$locker->query_safe('COMMIT');
$locker->quit;
$node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(101, 'v101')]::item[])");
ok(poll_until($node, "SELECT upper = 2 FROM peek.indexes WHERE name = 'c_id'"),
	'the adoption was retried: the index follows the next write');
is($node->safe_psql('postgres',
		"$routed SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL, as_of => 1)"),
	'101', 'the new write is peeked');
is(peek_count(), '100', 'time 0 still has 100 rows');
is(runtime_pid($node, $maint), $new_pid, "the $maint runtime did not exit");

$node->stop;
done_testing();
