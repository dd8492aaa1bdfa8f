# An object's publication that meets a transient error that lasts is put
# off, not retried at every step of the maintenance runtime:
#  * a collection's shard held in ACCESS EXCLUSIVE mode by an open
#    transaction: the collection's adoption (and its index's) times out on
#    the runtime's 100 ms lock bound each try.  Before, each try set the
#    whole catalog to be read again at the next step: with a source, whose
#    polls wake the runtime every few ms, about nine "will be retried"
#    lines a second per object, and every step paid the 100 ms.  Now the
#    object is read again after 100, 200, 400 ms ... (up to 10 s), logged
#    only when the wait grew, saying when;
#  * the other objects (a collection, its index, a source) go on being
#    published meanwhile;
#  * once the lock is gone, the write that waited for it is published
#    within the wait then due, exact;
#  * the wait is cleared by the publication: the next failure waits 100 ms.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(usleep time);
use PgPeekTest;

my $node = new_node('object_retry_backoff');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, v text);
	SELECT peek.create_collection('c', 'item');
	SELECT peek.create_collection('d', 'item');
	SELECT peek.write('c', array_agg((g, 'c' || g)::item)) FROM generate_series(1, 10) g;
	SELECT peek.write('d', array_agg((g, 'd' || g)::item)) FROM generate_series(1, 10) g;
	SELECT peek.create_index('c_id', 'c', ARRAY['id']);
	SELECT peek.create_index('d_id', 'd', ARRAY['id']);
	CREATE TABLE t (id int PRIMARY KEY, v int);
	INSERT INTO t SELECT i, i FROM generate_series(1, 10) i;});
sql(q{SELECT peek.create_source('t_src', 't')});
ok(poll_until($node,
		q{SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections
		  UNION ALL SELECT state FROM peek.indexes) s}, 't', 60),
	'the collections, the source and the indexes are ready');

my $cid = sql(q{SELECT id FROM peek.objects WHERE name = 'c'});
my $iid = sql(q{SELECT id FROM peek.objects WHERE name = 'c_id'});
my $shard = sql(q{SELECT shard::regclass FROM peek.objects WHERE name = 'c'});

# "will be retried" lines for an object since a log offset, and the waits they said
sub retried
{
	my ($id, $offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my @lines = $log =~ /(pg_peek object $id will be retried[^\n]*)/g;
	my @waits = map { /will be retried in (\d+) ms/ ? $1 : () } @lines;
	return (scalar(@lines), @waits);
}

# a process's CPU time (user and system), from /proc
sub cpu_seconds
{
	my ($pid) = @_;
	my @stat = split / /, (slurp_file("/proc/$pid/stat") =~ s/^.*\) //sr);
	return ($stat[11] + $stat[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK);
}
my $runtime = runtime_pid($node, maintenance_role());

# a write to d, then how long until its index follows it (published)
sub d_published_after
{
	my ($n) = @_;
	my $t = sql("SELECT peek.write('d', ARRAY[($n, 'd$n')]::item[])");
	my $start = time();
	return -1
	  unless poll_until($node, "SELECT upper > $t FROM peek.indexes WHERE name = 'd_id'", 't', 30);
	my $ms = int((time() - $start) * 1000);
	return -1
	  unless sql("SELECT v FROM peek.index_peek(NULL::item, 'd_id', ROW($n), as_of => $t)") eq "d$n";
	return $ms;
}

# --- c's shard held: its publication fails, and is put off ---
my $locker = bg_session($node);
$locker->query_safe('BEGIN');
$locker->query_safe("LOCK TABLE $shard IN ACCESS EXCLUSIVE MODE");
my $offset = -s $node->logfile;
my $held_at = time();
my $cpu = cpu_seconds($runtime);
sql(q{SELECT peek.set_retention('c', interval '1 hour')});
# a write to c waits for the lock: published once it is gone
my $writer = start_bg($node, q{SELECT peek.write('c', ARRAY[(11, 'c11')]::item[])});
$node->wait_for_log(qr/pg_peek object $cid will be retried/, $offset);
pass('c\'s publication met the lock');

# the others go on meanwhile
my $worst = 0;
my $n = 100;
while (time() - $held_at < 4)
{
	my $ms = d_published_after(++$n);
	$worst = $ms if $ms < 0 || ($worst >= 0 && $ms > $worst);
	sql("INSERT INTO t VALUES ($n, $n)");
	usleep(200_000);
}
cmp_ok($worst, '>=', 0, 'held: each write to d was published, exact');
cmp_ok($worst, '<', 3000, "held: ... within 3 s of its commit (the slowest in ${worst} ms)");
ok(poll_until($node,
		q{SELECT upper >= pg_current_wal_insert_lsn() - '0/0' FROM peek.collections WHERE name = 't_src'},
		't', 10),
	'held: the source is published');
is(sql(q{SELECT count(*) FROM peek.persist_peek(NULL::t, 't_src')}), $n - 100 + 10,
	'held: ... with every row inserted');
ok(!bg_done($writer), 'held: the write to c waits for the lock');

my $held_for = time() - $held_at;
my ($tries, @waits) = retried($cid, $offset);
my ($index_tries) = retried($iid, $offset);
note(sprintf('c: %d lines in %.1f s, waits %s; c_id: %d lines; the runtime\'s CPU %.2f s',
		$tries, $held_for, "@waits", $index_tries, cpu_seconds($runtime) - $cpu));
# tries after 100 + 200 + 400 + 800 + 1600 ms of waits, ~100 ms each:
# about 6 in 4 s, each logged (its wait grew); before, 30 or more
cmp_ok($tries, '>=', 1, sprintf("held: c's publication was logged as retried (%d in %.1f s)", $tries, $held_for));
cmp_ok($tries, '<=', 8, 'held: ... after waits that double, not at every step');
cmp_ok($index_tries, '<=', 8, "held: its index's no more often ($index_tries)");
is(scalar(@waits), $tries, 'held: each line says when it is retried');
ok(!grep({ $waits[$_] <= $waits[$_ - 1] } 1 .. $#waits),
	"held: ... and is logged only when the wait grew (@waits ms)");
cmp_ok($waits[0] // 1e9, '<=', 100, 'held: the first wait is 100 ms at most');

# --- the lock gone: c catches up ---
$locker->query_safe('COMMIT');
my $released = time();
my ($rc, $t) = finish_bg($writer);
is($rc, 0, 'released: the write to c committed');
ok(poll_until($node, "SELECT upper > $t FROM peek.indexes WHERE name = 'c_id'", 't', 30),
	'released: c\'s index follows the write');
my $caught_up = time() - $released;
cmp_ok($caught_up, '<', 11, sprintf('released: ... within the wait then due (%.1f s)', $caught_up));
is(sql("SELECT v FROM peek.index_peek(NULL::item, 'c_id', ROW(11), as_of => $t)"), 'c11',
	'released: the write is peeked through the index');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::item, 'c', as_of => $t)"), '11',
	'released: the collection has all its rows');
ok(poll_until($node, q{SELECT retention = interval '1 hour' FROM peek.collections WHERE name = 'c'}),
	'released: c\'s retention is published');
is(sql(q{SELECT count(*) FROM (SELECT state FROM peek.collections UNION ALL
		SELECT state FROM peek.indexes) s WHERE state = 'failed'}), '0', 'nothing failed');

# --- published: the wait was cleared, the next failure waits 100 ms ---
usleep(500_000);
$offset = -s $node->logfile;
$locker = bg_session($node);
$locker->query_safe('BEGIN');
$locker->query_safe("LOCK TABLE $shard IN ACCESS EXCLUSIVE MODE");
sql(q{SELECT peek.set_retention('c', interval '2 hours')});
$node->wait_for_log(qr/pg_peek object $cid will be retried/, $offset);
$locker->query_safe('COMMIT');
$locker->quit;
(undef, @waits) = retried($cid, $offset);
cmp_ok($waits[0] // 1e9, '<=', 100, "again: the first wait is 100 ms at most (@waits)");
ok(poll_until($node, q{SELECT retention = interval '2 hours' FROM peek.collections WHERE name = 'c'}),
	'again: c\'s new retention is published');

$node->stop;
done_testing();
