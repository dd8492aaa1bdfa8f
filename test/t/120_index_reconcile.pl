# Reconciliation of arrangements:
#  * the runtime that serves peeks is terminated with index peeks parked: its
#    pending work is dropped, the backends re-issue, every peek is answered
#    correctly once it is back, and the standing holds are unchanged;
#  * the maintaining runtime is terminated: writes made meanwhile are not
#    lost, indexes are re-hydrated and published again, peeks are answered;
#  * the cluster crash-restarts (kill -9 of a backend): every index
#    re-hydrates from its shard and equals it at every time from its since.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $serve = serving_role();
my $maint = $mode eq 'on' ? 'maintenance' : 'solo';
my $node  = new_node('reconcile', conf => 'restart_after_crash = on');

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE r AS (k int, v text);
	SELECT peek.create_collection('rc', 'r');
	SELECT peek.create_index('rc_by_k', 'rc', ARRAY['k']);
	SELECT peek.create_index('rc_by_v', 'rc', ARRAY['v']);
	SELECT peek.write('rc', ARRAY[(1, 'a'), (2, 'b'), (3, 'c')]::r[]);
	SELECT peek.write('rc', ARRAY[(4, 'd')]::r[], ARRAY[(1, 'a')]::r[]);
	SELECT peek.write('rc', ARRAY[(2, 'b'), (5, 'e')]::r[]);
	SELECT peek.allow_compaction('rc_by_k', 1);
});
ok(poll_until($node, "SELECT since FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'rc_by_k'", '1'),
	'rc_by_k compacted to since 1');

# index contents equal the shard's at every time from the index's since
sub index_equals_shard
{
	my ($index, $upper_t) = @_;
	my $since = $node->safe_psql('postgres',
		"SELECT since FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = '$index'");
	my $bad = $node->safe_psql('postgres', qq{
		SELECT count(*) FROM generate_series($since, $upper_t) t
		 WHERE (SELECT array_agg(x ORDER BY x::text) FROM peek.index_peek(NULL::r, '$index', as_of => t) x)
		       IS DISTINCT FROM
		       (SELECT array_agg(x ORDER BY x::text) FROM peek.persist_peek(NULL::r, 'rc', as_of => t) x)});
	return $bad eq '0';
}

sub holds
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(object || ':' || runtime || ':' || time, ',' ORDER BY object, runtime)
		  FROM peek.holds WHERE kind = 'standing'});
}

ok(index_equals_shard('rc_by_k', 2), 'rc_by_k equals the shard before any restart');
ok(index_equals_shard('rc_by_v', 2), 'rc_by_v equals the shard before any restart');
my $holds_before = holds();

# ---- terminate the serving runtime with index peeks parked -----------------

my @peeks = (
	[ "SELECT k, v FROM peek.index_peek(NULL::r, 'rc_by_k', ROW(2), as_of => 4) ORDER BY v", "2|b\n2|b" ],
	[ "SELECT k, v FROM peek.index_peek(NULL::r, 'rc_by_v', ROW('f'), as_of => 3)", "6|f" ],
	[ "SELECT count(*) FROM peek.index_peek(NULL::r, 'rc_by_k', as_of => 4)", "7" ],
);
my @h = map { start_bg($node, $_->[0]) } @peeks;
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks WHERE waiting_on = 'upper'", '3'),
	'three index peeks parked');
my $pid = runtime_pid($node, $serve);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok(poll_until($node,
		"SELECT pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$serve'"),
	"the $serve runtime restarted");
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks WHERE waiting_on = 'upper'", '3'),
	'the backends re-issued their peeks to it');
is(holds(), $holds_before, 'standing holds are unchanged by the restart');
$node->safe_psql('postgres', q{
	SELECT peek.write('rc', ARRAY[(6, 'f'), (7, 'g')]::r[]);
	SELECT peek.write('rc', '{}'::r[]);
});
for my $i (0 .. $#peeks)
{
	my ($rc, $out, $err) = finish_bg($h[$i]);
	is($rc, 0, "re-issued peek $i returned") or diag($err);
	is($out, $peeks[$i][1], "re-issued peek $i has the right rows");
}

# ---- terminate the maintaining runtime; write while it is down -------------

$pid = runtime_pid($node, $maint);
my $h2 = start_bg($node,
	"SELECT k, v FROM peek.index_peek(NULL::r, 'rc_by_k', ROW(8), as_of => 6)");
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks WHERE waiting_on = 'upper'", '1'),
	'a peek waits for time 6');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$node->safe_psql('postgres', "SELECT peek.write('rc', ARRAY[(8, 'h')]::r[])");
$node->safe_psql('postgres', "SELECT peek.write('rc', '{}'::r[])");
ok(poll_until($node,
		"SELECT pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$maint'"),
	"the $maint runtime restarted");
my ($rc, $out, $err) = finish_bg($h2);
is($rc, 0, 'the peek waiting across the restart returned') or diag($err);
is($out, '8|h', 'with the row written while the runtime was down');
ok(poll_until($node, "SELECT count(*) FROM peek.indexes WHERE state = 'ready' AND upper = 7", '2'),
	'both indexes re-hydrated and published at upper 7');
ok(index_equals_shard('rc_by_k', 6), 'rc_by_k equals the shard after the restart');
ok(index_equals_shard('rc_by_v', 6), 'rc_by_v equals the shard after the restart');
is($node->safe_psql('postgres', "SELECT since FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'rc_by_k'"),
	'1', 'the since of rc_by_k did not go back');

# ---- crash-restart of the whole cluster ------------------------------------

is($node->safe_psql('postgres', "SELECT since FROM peek.objects WHERE name = 'rc_by_k'"),
	'1', "the index's since is durable in the catalog, for re-hydration after a crash");
my $before_crash = $node->safe_psql('postgres',
	"SELECT array_agg(x ORDER BY x::text) FROM peek.index_peek(NULL::r, 'rc_by_v', as_of => 6) x");
my $victim = start_bg($node, 'SELECT pg_sleep(60)');
my $vpid = bg_backend_pid($node, $victim);
ok(defined $vpid, 'found a backend to kill');
kill 'KILL', $vpid;
finish_bg($victim, 30);
ok(poll_until($node, "SELECT count(*) FROM peek.runtimes WHERE state = 'running'",
		$mode eq 'on' ? '2' : '1', 60),
	'runtimes are back after the crash-restart');
ok(poll_until($node, "SELECT count(*) FROM peek.indexes WHERE state = 'ready' AND upper = 7", '2', 60),
	'both indexes re-hydrated from their shards');
is($node->safe_psql('postgres',
		"SELECT array_agg(x ORDER BY x::text) FROM peek.index_peek(NULL::r, 'rc_by_v', as_of => 6) x"),
	$before_crash, 'rc_by_v has the same contents as before the crash');
ok(index_equals_shard('rc_by_k', 6), 'rc_by_k equals the shard after the crash');
is($node->safe_psql('postgres', "SELECT since FROM peek.indexes WHERE name = 'rc_by_k'"),
	'1', 'the since of rc_by_k did not go back across the crash');
ok(index_equals_shard('rc_by_v', 6), 'rc_by_v equals the shard after the crash');

# no runtime error other than the terminations we caused
my $log = slurp_file($node->logfile);
my @errors = grep { /pg_peek (maintenance|interactive|solo) ERROR/ } split /\n/, $log;
is(scalar(@errors), 0, 'the runtimes logged no ERROR') or diag(join("\n", @errors));

$node->stop;
done_testing();
