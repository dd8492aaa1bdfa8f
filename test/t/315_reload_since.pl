# Issue 22 (hardening): a source whose slot is lost is loaded again by a
# loader, which compacts its shard to the new slot's start and raises its
# durable since in the same transaction -- before the registry knows.  A
# persist peek gated meanwhile at an older time must not read the reloaded
# contents as that time's history: it fails with 72000, as a peek older
# than the since does.
#
# The slot is removed while the server is down; a prepared transaction
# holding the table keeps the loader from finding its start until the
# runtime that applies catalog notices (maintenance, or solo) is stopped
# with SIGSTOP, so the registry keeps the old since while the reload
# commits.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Path qw(rmtree);
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('reload_since', conf => ['max_prepared_transactions = 2']);
sub sql { return $node->safe_psql('postgres', $_[0]); }
my $strict = "SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '30s';";

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int, v text);
	INSERT INTO t VALUES (1, 'old');
	SELECT peek.create_source('s', 't');
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 's'"), 'the source is ready');
is(sql("$strict SELECT v FROM peek.persist_peek(NULL::t, 's')"), 'old', 'the first row is peeked');
my $t_old = sql("SELECT upper - 1 FROM peek.collections WHERE name = 's'");
sql("DELETE FROM t; INSERT INTO t VALUES (2, 'new');");
is(sql("$strict SELECT v FROM peek.persist_peek(NULL::t, 's')"), 'new', 'the later row is peeked');
is(sql("SELECT v FROM peek.persist_peek(NULL::t, 's', as_of => $t_old)"), 'old',
	"as_of $t_old: the first row, history kept");
my $slot = sql("SELECT slot_name FROM pg_replication_slots");

# the slot gone while the server is down; a prepared transaction holds a
# transaction open across the restart, so the loader waits for it
sql(q{BEGIN; INSERT INTO t VALUES (3, 'held'); PREPARE TRANSACTION 'hold';});
$node->stop;
rmtree($node->data_dir . "/pg_replslot/$slot");
$node->start;
ok(poll_until($node, "SELECT count(*) = 2 FROM peek.runtimes WHERE state = 'running'")
	  || poll_until($node, "SELECT count(*) = 1 FROM peek.runtimes WHERE state = 'running' AND role = 'solo'"),
	'the runtimes run');
ok(poll_until($node, "SELECT replayed_upper > 0 AND replayed_since <= $t_old FROM peek.replication WHERE object = 's'"),
	'the catalog still has the old since');
ok(poll_until($node, "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type LIKE '%loader%'"),
	'a loader waits');
my $pid = runtime_pid($node, $maint);
stop_runtime($node, $pid);
sql("COMMIT PREPARED 'hold'");
ok(poll_until($node, "SELECT since > $t_old FROM peek.objects WHERE name = 's'"),
	'the reload raised the durable since');

my ($st, $msg) = sql_error($node,
	"SET statement_timeout = '20s'; SELECT * FROM peek.persist_peek(NULL::t, 's', as_of => $t_old)");
is($st, '72000', "a peek at $t_old gated by the old since fails with 72000 ($msg)");
($st, $msg) = sql_error($node,
	"SET statement_timeout = '20s'; SELECT count(*) FROM peek.persist_peek(NULL::t, 's', as_of => $t_old) WHERE true");
is($st, '72000', "so does the streamed scan ($msg)");

kill 'CONT', $pid;
($st, $msg) = sql_error($node, "SELECT * FROM peek.persist_peek(NULL::t, 's', as_of => $t_old)");
is($st, '72000', "once the registry knows: 72000 too ($msg)");
is(sql("$strict SELECT string_agg(v, ',' ORDER BY k) FROM peek.persist_peek(NULL::t, 's')"), 'new,held',
	'latest: the table as it is');
is(runtime_pid($node, $maint), $pid, "the $maint runtime did not exit");

$node->stop;
done_testing();
