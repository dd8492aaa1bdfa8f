# A view's round that cannot go on now is put off, not spun on:
#  * its catalog row held by a user's open transaction (set_retention not
#    yet committed): the round is put off a little and tried again, with
#    no log line, while another view over the same source stays current;
#    once the transaction ends the view catches up, exact.  Before, each
#    try waited 100 ms for the row and logged "will be retried", about ten
#    times a second for as long as the transaction stayed open.
#  * a transient error that lasts (its shard locked against its appends:
#    a lock timeout each try): retried after 100, 200, 400 ms ..., not
#    at every turn of the runtime (before: about every 110 ms), and exact
#    once the lock is gone.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use PgPeekTest;

my $node = new_node('view_round_put_off');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TABLE t (id int PRIMARY KEY, g int, v int);
	INSERT INTO t SELECT i, i % 5, i FROM generate_series(1, 100) i;});
sql(q{SELECT peek.create_source('t_src', 't')});
sql(q{SELECT peek.create_view('held', 'SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g')});
sql(q{SELECT peek.create_view('other', 'SELECT g, count(*) AS n FROM t GROUP BY g')});

my $caught_up = q{
	SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
	   AND NOT EXISTS (SELECT 1 FROM peek.collections
	                    WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - '0/0')};
ok(poll_until($node, $caught_up, 't', 60), 'the views are ready');
my $vid = sql(q{SELECT id FROM peek.objects WHERE name = 'held'});
my $retried = qr/pg_peek object $vid will be retried/;

sub exact
{
	my ($view, $query) = @_;
	return sql("SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT ($view.*)::text AS r FROM $view) a)
	        IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM ($query) q) b)");
}
my $held_query = 'SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g';
my $other_query = 'SELECT g, count(*) AS n FROM t GROUP BY g';

sub tries_since
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my $n = () = $log =~ /$retried/g;
	return $n;
}

# --- the view's row held by a user's open transaction ---
my $offset = -s $node->logfile;
my $holder = start_bg($node,
	"BEGIN; SELECT peek.set_retention('held', interval '1 hour'); SELECT pg_sleep(3); COMMIT;");
ok(poll_until($node,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$holder->{application_name}' AND wait_event = 'PgSleep'",
		't', 30), 'a transaction holds the view\'s row');
my $started = time();
sql(q{INSERT INTO t VALUES (101, 1, 1000); UPDATE t SET v = v + 1 WHERE id <= 10});
ok(poll_until($node, "SELECT lag = 0 FROM peek.views WHERE name = 'other'", 't', 30),
	'held: the other view over the source catches up meanwhile');
cmp_ok(time() - $started, '<', 2.5, 'held: ... before the transaction ends');
is(exact('other', $other_query), 't', 'held: the other view is exact');
is(sql("SELECT lag > 0 FROM peek.views WHERE name = 'held'"), 't',
	'held: the held view waits for the transaction');
my ($rc) = finish_bg($holder);
is($rc, 0, 'held: the transaction committed');
ok(poll_until($node, $caught_up, 't', 30), 'held: the view catches up once it ends');
is(exact('held', $held_query), 't', 'held: the view is exact');
is(tries_since($offset), 0, 'held: no round of the view was logged as retried');

# --- a transient error that lasts: the view's shard locked ---
my $shard = sql(q{SELECT shard::regclass FROM peek.objects WHERE name = 'held'});
$offset = -s $node->logfile;
my $locker = start_bg($node, "BEGIN; LOCK TABLE $shard IN SHARE MODE; SELECT pg_sleep(4); COMMIT;");
ok(poll_until($node,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$locker->{application_name}' AND wait_event = 'PgSleep'",
		't', 30), 'locked: a transaction holds the view\'s shard');
$started = time();
sql(q{INSERT INTO t VALUES (102, 2, 2000); DELETE FROM t WHERE id = 3});
($rc) = finish_bg($locker);
is($rc, 0, 'locked: the lock was let go');
my $locked_for = time() - $started;
my $tries = tries_since($offset);
cmp_ok($tries, '>=', 1, "locked: the round met the lock ($tries tries in ${locked_for}s)");
# 100 + 200 + 400 + 800 + 1600 ms of waits, each try ~100 ms of lock timeout
cmp_ok($tries, '<=', 8, 'locked: retried after waits that double, not at every turn');
ok(poll_until($node, $caught_up, 't', 60), 'locked: the view catches up once the lock is gone');
is(exact('held', $held_query), 't', 'locked: the view is exact');
is(exact('other', $other_query), 't', 'locked: the other view is exact');
is(sql(q{SELECT count(*) FROM peek.views WHERE state = 'failed'}), '0', 'nothing failed');

done_testing();
