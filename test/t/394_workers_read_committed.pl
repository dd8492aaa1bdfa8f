# pg_peek's workers run read committed whatever the database's
# default_transaction_isolation says.  Before, with the database's
# transactions serializable by default, the runtimes' and fold workers'
# transactions took part in serializable conflicts with users': fold
# workers gave way ("could not serialize access") and a user's own
# create_source or create_view, alone in its session, failed with 40001
# against them.  Now a user creating sources and views and writing, the
# only serializable transactions in the cluster, meets no serialization
# failure, and the views and sources stay exact.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('workers_read_committed');
$ENV{PGOPTIONS} = '-c statement_timeout=60s';

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql('CREATE EXTENSION pg_peek');
sql(q{ALTER DATABASE postgres SET default_transaction_isolation = 'serializable';
	ALTER DATABASE postgres SET default_transaction_deferrable = on});
my $restarts = sql('SELECT sum(restarts) FROM peek.runtimes');
sql('SELECT pg_terminate_backend(pid) FROM peek.runtimes WHERE pid IS NOT NULL');
ok(poll_until($node, "SELECT sum(restarts) > $restarts AND count(pid) = count(*) FROM peek.runtimes", 't', 60),
	'the runtimes started again');
is(sql('SHOW default_transaction_isolation'), 'serializable', "the test's sessions are serializable");

my @failed;
for my $i (1 .. 8)
{
	for my $step (
		"CREATE TABLE t$i (id int PRIMARY KEY, g int, v int);
		 INSERT INTO t$i SELECT j, j % 5, j FROM generate_series(1, 200) j",
		"SELECT peek.create_source('t${i}_src', 't$i')",
		"SELECT peek.create_view('v$i', 'SELECT g, count(*) AS n, sum(v) AS s FROM t$i GROUP BY g')",
		"SELECT peek.create_index('t${i}_ix', 't${i}_src', ARRAY['g'])",
		"UPDATE t$i SET v = v + 1 WHERE id % 7 = 0; DELETE FROM t$i WHERE id % 11 = 0")
	{
		my ($state, $message) = sql_error($node, $step);
		push @failed, "$state $message" if $state ne '';
	}
}
is(join("\n", @failed), '', 'no step failed');
ok(poll_until($node, caught_up_sql(), 't', 120), 'the views and sources caught up');
for my $i (1 .. 8)
{
	is( sql("SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT v${i}::text AS r FROM v$i) a)
	         IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM
	             (SELECT q::text AS r FROM (SELECT g, count(*) AS n, sum(v) AS s FROM t$i GROUP BY g) q) b)
	     AND (SELECT array_agg(r ORDER BY r) FROM (SELECT p::text AS r FROM peek.persist_peek(NULL::t$i, 't${i}_src') p) a)
	         IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT t::text AS r FROM t$i t) b)"),
		't', "v$i and t${i}_src are exact");
}
my @conflicts = grep { /could not serialize/ } split /\n/, slurp_file($node->logfile);
is(join("\n", @conflicts), '', 'no worker met a serialization failure');
log_is_clean($node, 'the workers under serializable by default');

done_testing();
