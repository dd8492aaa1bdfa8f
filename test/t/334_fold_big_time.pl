# A big time (one write of many rows) is folded into the collection's base
# alone, in one long fold.  Writes committed while it runs must be sealed
# and visible as soon as they would be without it: the fold must not hold
# the maintenance runtime (it runs in a fold worker of its own).  Before,
# a write committed during the fold waited for the whole fold (one to two
# seconds per 100,000 updates).
#
#  * phase 1: a 300,000-row write, then small writes while its fold runs.
#    Each small write's commit-to-visible (a peek at its time, which waits
#    until the time is sealed) stays far below the fold's own duration
#    (measured too, from the big write's commit to the base's time passing
#    it); every time written reads its exact contents during and after the
#    fold.
#  * phase 2: another big write; SIGTERM of the maintenance runtime while
#    its fold worker folds, then SIGKILL of the fold worker (a crash
#    restart).  Nothing is lost or counted twice, and the base takes the
#    time in afterwards.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);
use PgPeekTest;

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
# TAP clusters default to restart_after_crash = off
my $node = new_node('fold_big_time', conf => ['restart_after_crash = on']);
my $big = 300_000;
my $big2 = 200_000;

sub sql { return $node->safe_psql('postgres', $_[0]); }

item_setup($node, qw(c probe));
my $t0 = sql("SELECT peek.write('c', ARRAY[(0, 'zero')]::item[])");
ok(base_reaches($node, 'c', $t0), 'the base takes the first write in');

# The contents after $i small writes (and the second big write, if $with2):
# the digest a peek must give.
sub expected_sql
{
	my ($i, $with2) = @_;
	my $rows = "SELECT 0 AS id, 'zero' AS v"
	  . " UNION ALL SELECT g, 'x' || g FROM generate_series($i + 1, $big) g"
	  . " UNION ALL SELECT $big + j, 'w' || j FROM generate_series(1, $i) j";
	$rows .= " UNION ALL SELECT 2 * $big + g, 'y' || g FROM generate_series(1, $big2) g"
	  if $with2;
	return "SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(v)::bigint) FROM ($rows) e";
}

sub expected_digest { return sql(expected_sql(@_)); }

sub peek_digest
{
	my ($t) = @_;
	return sql("SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(v)::bigint) "
		  . "FROM peek.persist_peek(NULL::item, 'c', as_of => $t)");
}

sub base_time { return sql("SELECT base_time FROM peek.objects WHERE name = 'c'"); }

# ---- phase 1: small writes during the big time's fold ----------------------

my $s = bg_session($node);
my $t_big = sql("SELECT peek.write('c', ARRAY(SELECT (g, 'x' || g)::item "
	  . "FROM generate_series(1, $big) g))");
my $big_at = [gettimeofday];
# a pause after the load, as after any load: the fold starts
usleep(700_000);

my (@times, @during, @after);
my ($fold_ms, $during_check, $after_fold) = (undef, undef, 0);
for (my $i = 1; $i <= 300 && $after_fold < 3; $i++)
{
	my $running = base_time() < $t_big;
	if (!$running && !defined $fold_ms)
	{
		$fold_ms = tv_interval($big_at) * 1000;
	}
	$after_fold++ if !$running;
	my $t = $s->query_safe("SELECT peek.write('c', ARRAY[($big + $i, 'w$i')]::item[], "
		  . "ARRAY[($i, 'x$i')]::item[])");
	push @times, [ $i, $t ];
	my $delay = commit_to_visible_ms($s, 'probe', $i);
	push @{ $running ? \@during : \@after }, $delay;

	# exact contents at the newest time while the fold runs, read beside
	# the loop (a peek that sums the big time's updates takes seconds)
	$during_check = start_bg($node, "SELECT base_time < $t_big, "
		  . "(SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(v)::bigint) "
		  . " FROM peek.persist_peek(NULL::item, 'c', as_of => $t)) = (" . expected_sql($i, 0) . ") "
		  . "FROM peek.objects WHERE name = 'c'")
	  if $running && !defined $during_check;
	usleep(50_000);
}
ok(defined $fold_ms, 'the base takes the big time in');
$fold_ms //= tv_interval($big_at) * 1000;
my ($max_during) = sort { $b <=> $a } @during;
$max_during //= 0;
diag(sprintf('fold of %d updates: %.0f ms; %d writes during it, commit-to-visible max %.0f ms '
	  . '(%s); %d after it, max %.0f ms; load average %s',
	$big, $fold_ms, scalar @during, $max_during,
	join(' ', map { sprintf('%.0f', $_) } @during), scalar @after,
	(sort { $b <=> $a } @after)[0] // 0, `cat /proc/loadavg` =~ s/\n//r));
cmp_ok($fold_ms, '>=', 1000, 'the fold of the big time takes a second or more (the test measures something)');
cmp_ok(scalar @during, '>=', 3, 'small writes committed while the fold ran');
cmp_ok($max_during, '<', $fold_ms / 3,
	'a write committed during the fold is visible long before the fold ends');
ok(defined $during_check, 'a peek during the fold was started');
my ($rc, $out, $err) = $during_check ? finish_bg($during_check) : (-1, '', '');
is("$rc $out", '0 t|t', 'a peek during the fold (its snapshot before the fold\'s commit) reads exact contents');

# every time written reads its exact contents after the fold
is(peek_digest($t_big - 1), sql("SELECT '1 0 ' || hashtext('zero')::bigint"),
	'after the fold: the time before the big one');
is(peek_digest($t_big), expected_digest(0, 0), 'after the fold: the big time');
for my $w (grep { $_->[0] % 7 == 1 || $_->[0] == $times[-1][0] } @times)
{
	is(peek_digest($w->[1]), expected_digest($w->[0], 0),
		"after the fold: as_of $w->[1] (small write $w->[0])");
}
my $shard = sql("SELECT shard::regclass FROM peek.objects WHERE name = 'c'");
is(sql("SELECT count(*) - count(DISTINCT data) FROM $shard WHERE time = -1"), '0',
	'no row twice in the base');

# ---- phase 2: the runtime and the fold worker killed mid-fold --------------

my $n = scalar @times;
my $t_big2 = sql("SELECT peek.write('c', ARRAY(SELECT (2 * $big + g, 'y' || g)::item "
	  . "FROM generate_series(1, $big2) g))");
ok(poll_until($node, "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
	'a fold worker folds the second big time');
my $runtime = runtime_pid($node, $maint);
sql("SELECT pg_terminate_backend($runtime)");
ok(poll_until($node, "SELECT pid <> $runtime FROM peek.runtimes WHERE role = '$maint'"),
	'the runtime restarted while the fold worker ran');
$s->quit;
# the earliest: the restarted runtime's own worker waits for it
my $worker = sql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_peek fold' "
	  . "ORDER BY backend_start LIMIT 1");
if ($worker ne '' && base_time() < $t_big2)
{
	my $log_offset = -s $node->logfile;

	kill 'KILL', $worker;
	# until the postmaster has seen the death the old server still answers
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
	ok(poll_until($node, "SELECT count(*) > 0 FROM peek.runtimes WHERE state = 'running'", 't', 60),
		'the cluster came back after SIGKILL of the fold worker');
}
else
{
	pass('the fold ended before its worker could be killed');
}
ok(base_reaches($node, 'c', $t_big2, 120),
	'after the kills the base takes the second big time in');
is(peek_digest($t_big2), expected_digest($n, 1), 'after the kills: the second big time');
is(peek_digest($t_big2 - 1), expected_digest($n, 0), 'after the kills: the time before it');
is(peek_digest($t_big), expected_digest(0, 0), 'after the kills: the first big time');
is(sql("SELECT count(*) - count(DISTINCT data) FROM $shard WHERE time = -1"), '0',
	'after the kills: no row twice in the base');
is(sql("SELECT count(*) FROM peek.collections WHERE failure IS NOT NULL"), '0',
	'no collection failed');

$node->stop;
done_testing();
