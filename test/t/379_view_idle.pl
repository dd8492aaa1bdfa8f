# An idle maintained view costs about what an idle source costs.  A view's
# round used to write its upper to the catalog every time, which is WAL,
# which capture decoded and published as the source's next upper, which
# made the view due again: with no user writes at all the maintenance
# runtime spent seconds of CPU and wrote megabytes of WAL a minute.
# Measured over WINDOW seconds with no writes, a source alone and then the
# same source with a grouped view (and an index on it): the runtime that
# maintains (maintenance, or solo) may spend less than 1 s more CPU
# (utime + stime in /proc) and the server write less than 3 times the WAL
# plus 64 kB.  The bounds leave a margin of several times what an idle
# view should cost (a durable write of its upper about once a second, a
# few hundred bytes each, and an idle round per move of the source's
# upper) and are a tenth of the bug's (4.6 s and 5.2 MB per 20 s).  Then:
# a write to a table no source captures moves the source's upper, and the
# view (persist_peek and index_peek) answers at that later time with its
# contents, without a write to its input; a restart resumes the view at
# its durable upper: after writes, idle time and an immediate stop, it
# equals the table's query, nothing lost or counted twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use POSIX ();
use PgPeekTest;

my $WINDOW = 20;

# no checkpoint nor autovacuum in the windows: their WAL is not the view's
my $node = new_node('vidle',
	conf => [ 'checkpoint_timeout = 1h', 'max_wal_size = 4GB', 'autovacuum = off' ]);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (id int PRIMARY KEY, g int, x numeric);
	INSERT INTO t SELECT i, i % 5, i * 2 FROM generate_series(1, 1000) i;
	CREATE TABLE unrelated (id serial, note text);
	SELECT peek.create_source('t_src', 't');
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 't_src'"),
	'the source is ready');

my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $clk_tck = POSIX::sysconf(POSIX::_SC_CLK_TCK());

# CPU seconds the maintaining runtime has used so far
sub runtime_cpu
{
	my $pid = runtime_pid($node, $role);
	open(my $fh, '<', "/proc/$pid/stat") or die "/proc/$pid/stat: $!";
	my $stat = <$fh>;
	close($fh);
	# the fields after the command name, which is in parentheses
	$stat =~ s/^.*\) //s;
	my @f = split(/ /, $stat);
	return ($pid, ($f[11] + $f[12]) / $clk_tck);    # utime, stime
}

sub wal_lsn
{
	return $node->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
}

# CPU seconds and WAL bytes over the window, with no user writes
sub idle_window
{
	my ($what) = @_;
	my ($pid, $cpu0) = runtime_cpu();
	my $lsn0 = wal_lsn();
	sleep($WINDOW);
	my ($pid1, $cpu1) = runtime_cpu();
	my $wal = $node->safe_psql('postgres',
		"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')") + 0;
	is($pid1, $pid, "$what: the runtime did not restart in the window");
	my $load = `cat /proc/loadavg`;
	chomp $load;
	note(sprintf("%s: runtime CPU %.2f s, WAL %d bytes in %d s (load %s)",
		$what, $cpu1 - $cpu0, $wal, $WINDOW, $load));
	return ($cpu1 - $cpu0, $wal);
}

# settle after the load (its own WAL decoded, its rounds done)
sleep(3);
my ($base_cpu, $base_wal) = idle_window('a source alone');

$node->safe_psql('postgres', q{
	SELECT peek.create_view('v', $$SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g$$);
	SELECT peek.create_index('v_g', 'v', ARRAY['g']);
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.views WHERE name = 'v'"),
	'the view is ready');
ok(poll_until($node, "SELECT state = 'ready' FROM peek.indexes WHERE name = 'v_g'"),
	'its index is ready');
sleep(3);
my ($view_cpu, $view_wal) = idle_window('the source and an idle view');

cmp_ok($view_cpu - $base_cpu, '<', 1.0,
	'an idle view adds less than 1 s of the runtime\'s CPU in the window');
cmp_ok($view_wal, '<', 3 * $base_wal + 65536,
	'an idle view adds less than 3 times the idle source\'s WAL (plus 64 kB)');

# a write no source captures moves the source's upper: the view follows
my $upper_before = $node->safe_psql('postgres', "SELECT upper FROM peek.views WHERE name = 'v'");
$node->safe_psql('postgres', "INSERT INTO unrelated (note) VALUES ('moves the WAL')");
my $later = $node->safe_psql('postgres', "SELECT pg_current_wal_lsn() - '0/0'");
cmp_ok($later, '>=', $upper_before, 'the later time is past the view\'s upper before the write');
my $want = $node->safe_psql('postgres',
	'SELECT g, count(*), sum(x) FROM t GROUP BY g ORDER BY g');
is($node->safe_psql('postgres',
		"SET statement_timeout = '30s'; SELECT g, n, s FROM peek.persist_peek(NULL::v, 'v', as_of => $later) ORDER BY g"),
	$want, 'persist_peek of the idle view at a later time answers with its contents');
is($node->safe_psql('postgres',
		"SET statement_timeout = '30s'; SELECT g, n, s FROM peek.index_peek(NULL::v, 'v_g', as_of => $later) ORDER BY g"),
	$want, 'index_peek of the idle view at that time too');

# writes, idle rounds past them (the published upper ahead of the durable
# one), more writes, then a crash: the view resumes at its durable upper
$node->safe_psql('postgres', 'INSERT INTO t SELECT i, i % 7, i FROM generate_series(1001, 1200) i');
my $synced = q{SELECT (SELECT array_agg(r ORDER BY g) FROM (SELECT g, n, s FROM v) r)
	= (SELECT array_agg(r ORDER BY g) FROM (SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g) r)};
ok(poll_until($node, $synced), 'the view has the first writes');
$node->safe_psql('postgres', "INSERT INTO unrelated (note) VALUES ('idle rounds')");
sleep(2);
$node->safe_psql('postgres', 'UPDATE t SET g = g + 1 WHERE id % 3 = 0; DELETE FROM t WHERE id % 11 = 0');
ok(poll_until($node, $synced), 'the view has the later writes');
$node->safe_psql('postgres', "INSERT INTO unrelated (note) VALUES ('idle again')");
usleep(300_000);
$node->stop('immediate');
$node->start;
$node->safe_psql('postgres', 'UPDATE t SET x = x + 1 WHERE id < 50');
ok(poll_until($node, $synced), 'after a crash restart the view equals its query over the table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM peek.views WHERE failure IS NOT NULL'),
	'0', 'no view failed');

done_testing();
