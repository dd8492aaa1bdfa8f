# Faults leave nothing behind and lose nothing committed:
#  * a cancel in the middle of a large walk (index and persist) releases the
#    peek's hold and its pinned batches;
#  * an error inside a subtransaction after a peek was answered releases it;
#  * SIGKILL of the runtime that serves peeks crash-restarts the cluster:
#    every committed update is still there and indexes re-hydrate.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $serve = serving_role();
my $node  = new_node('faults', conf => 'restart_after_crash = on');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE f AS (k int, v text);
	SELECT peek.create_collection('many', 'f');
	SELECT peek.create_index('many_by_k', 'many', ARRAY['k']);
	SELECT count(peek.write('many', rows)) FROM (
		SELECT array_agg((g, repeat('v', 50))::f) AS rows
		  FROM generate_series(1, 300000) g GROUP BY g / 100000) chunks;
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'many_by_k'", 'ready', 120),
	'a 300000-row index is ready');

sub clean
{
	my ($what) = @_;
	ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0', 10),
		"$what: no active peek left");
	is(sql("SELECT count(*) FROM peek.holds WHERE kind = 'peek'"), '0', "$what: no peek hold left");
	is(sql('SELECT coalesce(sum(live_handles), 0) FROM peek.arrangement_sharing'), '0',
		"$what: no live handle left");
	is(sql('SELECT bool_and(handle_pins = handle_releases) FROM peek.arrangement_sharing'), 't',
		"$what: every pin released");
}

# cancel mid-walk: statement_timeout fires while the backend walks
my ($rc, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '30ms'; SELECT count(*) FROM peek.index_peek(NULL::f, 'many_by_k') a, peek.index_peek(NULL::f, 'many_by_k') b WHERE a.k = b.k");
like($err, qr/canceling statement due to statement timeout/, 'a long index walk is canceled');
clean('canceled index walk');

($rc, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '30ms'; SELECT count(*) FROM peek.persist_peek(NULL::f, 'many') a, peek.persist_peek(NULL::f, 'many') b WHERE a.k = b.k");
like($err, qr/canceling statement due to statement timeout/, 'a long persist walk is canceled');
clean('canceled persist walk');

# an error after the answer, inside a subtransaction that is rolled back
is(sql(q{
	DO $$
	BEGIN
		BEGIN
			PERFORM count(*) FROM peek.index_peek(NULL::f, 'many_by_k', ROW(7)) p WHERE 1 / (p.k - 7) = 0;
		EXCEPTION WHEN division_by_zero THEN
			RAISE NOTICE 'caught';
		END;
	END $$;
	SELECT count(*) FROM peek.index_peek(NULL::f, 'many_by_k', ROW(7));
}), '1', 'a peek after an error in a subtransaction works');
clean('error in a subtransaction');

# SIGKILL of the serving runtime: a crash-restart that loses nothing
my $before = sql("SELECT count(*) || ':' || sum(k) FROM peek.persist_peek(NULL::f, 'many')");
my $pid = runtime_pid($node, $serve);
my $log_offset = -s $node->logfile;
kill 'KILL', $pid;
# the postmaster may not have seen the death yet: until it has, the old
# server still answers, and the next query could meet its recovery
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
ok(poll_until($node, "SELECT count(*) FROM peek.runtimes WHERE state = 'running'",
		$mode eq 'on' ? '2' : '1', 60),
	"the cluster came back after SIGKILL of the $serve runtime");
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'many_by_k'", 'ready', 120),
	'the index re-hydrated');
is(sql("SELECT count(*) || ':' || sum(k) FROM peek.persist_peek(NULL::f, 'many')"), $before,
	'the shard lost nothing');
is(sql("SELECT count(*) || ':' || sum(k) FROM peek.index_peek(NULL::f, 'many_by_k')"), $before,
	'the index has the same contents');
like(slurp_file($node->logfile), qr/was terminated by signal 9/, 'the server saw the SIGKILL');

$node->stop;
done_testing();
