# pg_peek's workers run under their own settings, not the server's or the
# database's (ALTER DATABASE ... SET, which the database's owner may do).
#
# No JIT: the maintenance runtime never compiles a plan.  A view's round
# runs its plan (planned once) over a few groups' rows; a plan costed past
# jit_above_cost (a sorted aggregate: count(DISTINCT), sum(... ORDER BY),
# planned with enable_sort off) was compiled by LLVM anew at every run:
# seconds a round, in code that no cancel interrupts.  With JIT forced on
# for every plan (jit_above_cost = 0) and each compiled module dumped to
# the data directory (jit_dump_bitcode, files named <pid>.<n>.bc), the
# runtime leaves no module while its views hydrate and follow writes, and
# the views stay exact; a backend's own query, in the same cluster, does
# leave one (the check can fail).
#
# Read-write transactions: with the database's default_transaction_read_only
# on, the maintenance runtime failed at each start ("cannot execute UPDATE
# in a read-only transaction"), forever, and nothing was maintained.  Now
# the runtimes restarted under it keep the views current, a new source's
# loader loads its table and its rows are peeked.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('workers_own_settings',
	conf => [ 'jit = on', 'jit_above_cost = 0', 'jit_dump_bitcode = on' ]);

# the test's own sessions compile nothing (it would only slow them down),
# write, and give up on a statement after a minute
$ENV{PGOPTIONS} = '-c jit=off -c default_transaction_read_only=off -c statement_timeout=60s';

sub sql { return $node->safe_psql('postgres', $_[0]); }

plan skip_all => 'JIT is not available in this build of PostgreSQL'
  unless sql('SET jit = on; SELECT pg_jit_available()') eq 't';

sub modules_of
{
	my ($pid) = @_;
	opendir(my $dh, $node->data_dir) or die "cannot read the data directory: $!";
	my @files = grep { /^\Q$pid\E\.\d+\.bc$/ } readdir($dh);
	closedir($dh);
	return scalar @files;
}

sql(q{CREATE EXTENSION pg_peek;
	CREATE TABLE t (id int PRIMARY KEY, g int, v int);
	INSERT INTO t SELECT i, i % 7, i % 5 FROM generate_series(1, 2000) i;});
sql(q{SELECT peek.create_source('t_src', 't')});

my %views = (
	distinct_counts => 'SELECT g, count(DISTINCT v) AS nd, sum(DISTINCT v) AS sd FROM t GROUP BY g',
	ordered_sums    => 'SELECT g, sum(v ORDER BY v) AS so FROM t GROUP BY g',
	plain_sums      => 'SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g',
	distinct_rows   => 'SELECT DISTINCT g, v FROM t');
sql("SELECT peek.create_view('$_', \$q\$$views{$_}\$q\$)") for sort keys %views;

my $caught_up = q{
	SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
	   AND NOT EXISTS (SELECT 1 FROM peek.collections
	                    WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - '0/0')};
ok(poll_until($node, $caught_up, 't', 120), 'the views are ready');

# writes that touch every group, one transaction at a time
for my $i (1 .. 20)
{
	sql("UPDATE t SET v = v + $i WHERE id % 97 = $i");
	sql("DELETE FROM t WHERE id = $i * 13");
	sql("INSERT INTO t VALUES (10000 + $i, $i % 7, $i)");
}
ok(poll_until($node, $caught_up, 't', 120), 'the views caught up with the writes');

for my $view (sort keys %views)
{
	is( sql("SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT ($view.*)::text AS r FROM $view) a)
	        IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM ($views{$view}) q) b)"),
		't', "$view equals its query over the table");
}

my $runtime = runtime_pid($node, maintenance_role());
ok(defined $runtime, 'the maintenance runtime runs');
is(modules_of($runtime), 0, 'the maintenance runtime compiled no plan with JIT');

my $backend = sql('SET jit = on; SELECT pg_backend_pid() FROM (SELECT count(*) FROM t GROUP BY g) q LIMIT 1');
cmp_ok(modules_of($backend), '>', 0, "a backend's query in the same cluster was compiled with JIT");

# --- the database's transactions read-only by default ---
sql('ALTER DATABASE postgres SET default_transaction_read_only = on');
my $restarts = sql('SELECT sum(restarts) FROM peek.runtimes');
sql('SELECT pg_terminate_backend(pid) FROM peek.runtimes WHERE pid IS NOT NULL');
ok(poll_until($node, "SELECT sum(restarts) > $restarts AND count(pid) = count(*) FROM peek.runtimes", 't', 60),
	'the runtimes started again');
sql(q{CREATE TABLE u (id int PRIMARY KEY, v int);
	INSERT INTO u SELECT i, i FROM generate_series(1, 500) i;});
sql(q{SELECT peek.create_source('u_src', 'u')});
for my $i (21 .. 30)
{
	sql("UPDATE t SET v = v + $i WHERE id % 97 = $i");
	sql("INSERT INTO t VALUES (10000 + $i, $i % 7, $i)");
	sql("UPDATE u SET v = -v WHERE id = $i");
}
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 'u_src'", 'ready', 60),
	"a new source's table is loaded");
ok(poll_until($node, $caught_up, 't', 60), 'the views and sources caught up with the writes');
for my $view (sort keys %views)
{
	is( sql("SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT ($view.*)::text AS r FROM $view) a)
	        IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM ($views{$view}) q) b)"),
		't', "$view equals its query over the table, read-only by default");
}
is( sql(q{SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT p::text AS r FROM peek.persist_peek(NULL::u, 'u_src') p) a)
	        IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT u::text AS r FROM u) b)}),
	't', "the new source's peek equals its table");
log_is_clean($node, 'the workers under the database settings');

done_testing();
