# A synchronous standby (synchronous_commit = remote_apply) while the
# primary's fold worker folds a big time and its views idle:
#  * the standby never starts a fold worker (its bases follow by replay);
#  * peeks on the standby before, at and after the big time are exact
#    during the fold and after it is replayed;
#  * a view read on the standby at the primary's published upper (ahead
#    of its durable one after idle rounds) answers, as the primary does;
#  * a big compaction (to a 200,000-row time at once), folded by the
#    primary's fold worker: the standby's since and base follow, its
#    contents at the since are exact and a peek below it fails (72000).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $N = 200_000;
my $primary = new_node('fold_primary', init => { allows_streaming => 'logical' },
	conf => [ 'hot_standby_feedback = on', 'wal_receiver_status_interval = 1s' ]);

sub sql { return $primary->safe_psql('postgres', $_[0]); }

item_setup($primary, 'c');
sql(q{
	CREATE TABLE t (id int PRIMARY KEY, g int);
	INSERT INTO t SELECT i, i % 4 FROM generate_series(1, 100) i;
	CREATE TABLE unrelated (id serial);
	SELECT peek.create_source('t_src', 't');
});
ok(poll_until($primary, "SELECT state = 'ready' FROM peek.collections WHERE name = 't_src'"),
	'the source is ready');
sql(q{SELECT peek.create_view('v', $$SELECT g, count(*) AS n FROM t GROUP BY g$$)});
ok(poll_until($primary, "SELECT state = 'ready' FROM peek.views WHERE name = 'v'"), 'the view is ready');

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('fold_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "cluster_name = 'fold_standby'\n");
$standby->start;
$primary->append_conf('postgresql.conf',
	"synchronous_standby_names = 'fold_standby'\nsynchronous_commit = remote_apply\n");
$primary->reload;
$primary->wait_for_catchup($standby, 'replay');
ok(poll_until($standby, "SELECT count(*) > 0 FROM peek.runtimes WHERE state = 'running'"),
	'the runtimes run on the standby');

sub ssql { return $standby->safe_psql('postgres', "SET statement_timeout = '60s'; $_[0]"); }

sub digest
{
	my ($t) = @_;
	return ssql("SELECT count(*) || ' ' || sum(id) FROM peek.persist_peek(NULL::item, 'c', as_of => $t)");
}

my $t0 = sql("SELECT peek.write('c', ARRAY[(0, 'zero')]::item[])");
ok(base_reaches($primary, 'c', $t0),
	'the base takes the first write in');
my $tb = sql("SELECT peek.write('c', ARRAY(SELECT (g, 'x' || g)::item FROM generate_series(1, $N) g))");
ok(poll_until($primary, "SELECT count(*) >= 1 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
	'a fold worker folds on the primary');
my $standby_workers = 0;
for (1 .. 20)
{
	$standby_workers += ssql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'");
	usleep(100_000);
}
is($standby_workers, 0, 'no fold worker on the standby');
my $whole = ($N + 1) . ' ' . ($N * ($N + 1) / 2);
is(digest($tb - 1), '1 0', 'standby: the time before the big one');
is(digest($tb), $whole, 'standby: the big time');
ok(base_reaches($primary, 'c', $tb),
	'the primary\'s base takes the big time in');
$primary->wait_for_catchup($standby, 'replay');
is(ssql("SELECT base_time >= $tb FROM peek.objects WHERE name = 'c'"), 't',
	'the standby\'s base follows by replay');
is(digest($tb - 1) . ', ' . digest($tb), "1 0, $whole", 'standby after the fold: both times exact');

# the view at the primary's published upper, read on the standby
sql('UPDATE t SET g = 9 WHERE id < 10');
my $want = sql('SELECT string_agg(g || \':\' || n, \',\' ORDER BY g) FROM (SELECT g, count(*) n FROM t GROUP BY g) x');
ok(poll_until($primary, "SELECT string_agg(g || ':' || n, ',' ORDER BY g) = '$want' FROM v"),
	'the view has the write');
sql('INSERT INTO unrelated DEFAULT VALUES');
usleep(300_000);
my $p = sql("SELECT upper - 1 FROM peek.views WHERE name = 'v'");
my $q = "SELECT string_agg(g || ':' || n, ',' ORDER BY g) FROM peek.persist_peek(NULL::v, 'v', as_of => $p)";
is(sql($q), $want, 'the primary answers at its published upper');
is(ssql($q), $want, 'the standby answers at the primary\'s published upper');

# a big compaction, folded on the primary, replayed on the standby
my $tc = sql("SELECT peek.write('c', ARRAY(SELECT ($N + g, 'y' || g)::item FROM generate_series(1, $N) g))");
sql("SELECT peek.allow_compaction('c', $tc)");
ok(poll_until($primary, "SELECT since >= $tc FROM peek.objects WHERE name = 'c'", 't', 60),
	'compaction: the primary\'s since takes the big time in');
$primary->wait_for_catchup($standby, 'replay');
is(ssql("SELECT since >= $tc AND base_time >= $tc FROM peek.objects WHERE name = 'c'"), 't',
	'compaction: the standby\'s since and base follow by replay');
is(digest($tc), (2 * $N + 1) . ' ' . ($N * (2 * $N + 1)), 'compaction: standby exact at the since');
is((sql_error($standby, "SELECT count(*) FROM peek.persist_peek(NULL::item, 'c', as_of => $tb)"))[0],
	'72000', 'compaction: a standby peek below the since fails');

$standby->stop('fast');
$primary->stop('fast');
done_testing();
