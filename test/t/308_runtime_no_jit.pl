# The maintenance runtime never compiles a plan with JIT.  A view's round
# runs its plan (planned once) over a few groups' rows; a plan costed past
# jit_above_cost (a sorted aggregate: count(DISTINCT), sum(... ORDER BY),
# planned with enable_sort off) was compiled by LLVM anew at every run:
# seconds a round, in code that no cancel interrupts.  With JIT forced on
# for every plan (jit_above_cost = 0) and each compiled module dumped to
# the data directory (jit_dump_bitcode, files named <pid>.<n>.bc), the
# runtime leaves no module while its views hydrate and follow writes, and
# the views stay exact; a backend's own query, in the same cluster, does
# leave one (the check can fail).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('runtime_no_jit',
	conf => [ 'jit = on', 'jit_above_cost = 0', 'jit_dump_bitcode = on' ]);

# the test's own sessions compile nothing (it would only slow them down)
$ENV{PGOPTIONS} = '-c jit=off';

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

done_testing();
