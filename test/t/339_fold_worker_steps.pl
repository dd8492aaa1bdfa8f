# Every fold of a base is a fold worker's, never the maintenance runtime's
# while a worker can be had (issue 25: a fold step in the runtime, tens to
# hundreds of milliseconds on a loaded machine, held every view's round
# behind it, and that was the views' commit-to-visible tail):
#  * under a steady load of small writes (no time bigger than a fold step)
#    on a captured table with an aggregate view over its source, fold
#    workers fold the bases again and again, one at a time, and the
#    source's and the view's bases follow the writes; the runtime logs no
#    fold of its own.  On the code before, no fold worker ran at all
#    (the runtime folded every step itself).  The view's commit-to-visible
#    by index_peek under the load is reported (diag), not asserted: it
#    depends on the machine's load;
#  * without a free background worker the runtime folds the steps itself,
#    says so once, and the base still follows the writes.
# The server log has no ERROR or WARNING line.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);
use PgPeekTest;

my $seconds = 8;
my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';

sub setup
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TABLE t (id bigserial PRIMARY KEY, g int NOT NULL, v int NOT NULL);
INSERT INTO t (g, v) SELECT i % 100, i % 1000 FROM generate_series(1, 10000) i;
SELECT peek.create_source('t_src', 't');});
	# small writes, each in its own transaction, every ~5 ms
	steady_procedure($node, q{
		UPDATE t SET v = (v + 1) % 1000 WHERE id = 1 + i % 10000;
		INSERT INTO t (g, v) VALUES (i % 100, i % 1000);}, 0.005);
	ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 't_src'"),
		'the source is loaded');
	my $rt = $node->safe_psql('postgres', "SELECT row_type FROM peek.collections WHERE name = 't_src'");
	$node->safe_psql('postgres',
		"SELECT peek.create_view('agg', \$q\$SELECT g, count(*) AS n, sum(v) AS s "
		  . "FROM peek.persist_peek(NULL::$rt, 't_src') GROUP BY g\$q\$)");
	ok(poll_until($node, "SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'agg'"),
		'the view is ready');
	$node->safe_psql('postgres', "SELECT peek.create_index('agg_by_g', 'agg', ARRAY['g'])");
	ok(poll_until($node, "SELECT state = 'ready' FROM peek.indexes WHERE name = 'agg_by_g'"),
		'its index is ready');
	return;
}

sub base_time
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres', "SELECT base_time FROM peek.objects WHERE name = '$name'");
}

# the time of the last update in a collection's shard
sub last_write
{
	my ($node, $name) = @_;
	my $shard = $node->safe_psql('postgres', "SELECT shard::regclass FROM peek.objects WHERE name = '$name'");
	return $node->safe_psql('postgres', "SELECT max(time) FROM $shard");
}


# Run the steady load; meanwhile sample the fold workers and probe the view:
# returns (fold workers started, most at once, probe ms list).  The starts
# are counted from the postmaster's log (log_min_messages = debug1): a
# worker folding a small step lives a few milliseconds, too short for
# sampling on a loaded machine.
sub under_load
{
	my ($node) = @_;
	my $log_from = -s $node->logfile;
	my $load = start_bg($node, "CALL steady($seconds)");
	my $s = bg_session($node);
	my ($most, @probe_ms) = (0);
	my $at = [gettimeofday];
	my $n = $node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE g = -1');
	while (tv_interval($at) < $seconds - 0.5)
	{
		my @now = grep { /^\d+$/ } split /\n/,
		  $s->query_safe("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'");
		$most = @now if @now > $most;
		# a probe row into a group of its own, until the view shows it
		$s->query_safe('INSERT INTO t (g, v) VALUES (-1, 1)');
		$n++;
		my $t0 = [gettimeofday];
		while ($s->query_safe("SELECT coalesce((SELECT n FROM peek.index_peek(NULL::agg, 'agg_by_g', ROW(-1))), 0)") < $n
			&& tv_interval($t0) < 10)
		{
			usleep(1_000);
		}
		push @probe_ms, tv_interval($t0) * 1000;
		usleep(50_000);
	}
	my ($rc, $out, $err) = finish_bg($load, 60);
	is($rc, 0, 'the load ran') or diag($err);
	$s->quit;
	my $log = substr(slurp_file($node->logfile), $log_from);
	my @starts = $log =~ /starting background worker process "pg_peek fold of object/g;
	return (scalar @starts, $most, @probe_ms);
}

# ---- fold workers take every step ----------------------------------------
my $node = new_node('fold_worker_steps', conf => ['log_min_messages = debug1']);
setup($node);
my %before = map { $_ => base_time($node, $_) } qw(t_src agg);
my ($workers, $most, @probe_ms) = under_load($node);
my @sorted = sort { $a <=> $b } @probe_ms;
diag(sprintf('%d probes of the view under the load: p50 %.1f ms, p99 %.1f ms, max %.1f ms; '
	  . '%d fold workers started; load average %s',
	scalar @sorted, $sorted[int($#sorted / 2)], $sorted[int($#sorted * 0.99)], $sorted[-1],
	$workers, `cat /proc/loadavg` =~ s/\n//r));
cmp_ok(scalar @sorted, '>=', 10, 'probes measured');
cmp_ok($workers, '>=', 4, 'steady load: fold workers fold the steps, again and again');
cmp_ok($most, '<=', 1, 'steady load: one fold worker at a time');
for my $name (qw(t_src agg))
{
	ok(base_reaches($node, $name, last_write($node, $name), 30),
		"steady load: $name\'s base takes the last write in");
	cmp_ok(base_time($node, $name), '>', $before{$name}, "steady load: $name\'s base moved on");
}
unlike(slurp_file($node->logfile), qr/pg_peek fold.* in the $maint runtime/,
	'steady load: the runtime folds nothing itself');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM peek.index_peek(NULL::agg, 'agg_by_g') a "
	  . "FULL JOIN (SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g) q USING (g, n, s) "
	  . "WHERE a.g IS NULL OR q.g IS NULL"), '0',
	'steady load: the view equals its query over the table');
log_is_clean($node, 'steady load');
$node->stop('fast');

# ---- no free background worker --------------------------------------------
# the runtimes and the logical replication launcher take every slot, once
# the source is loaded (its loader is a worker too)
my $slots = interactive_mode() eq 'on' ? 3 : 2;
$node = new_node('fold_steps_no_worker', conf => ['log_min_messages = debug1']);
setup($node);
$node->append_conf('postgresql.conf', "max_worker_processes = $slots\n");
$node->restart;
ok(poll_until($node, "SELECT state = 'ready' AND lag = 0 FROM peek.views WHERE name = 'agg'"),
	'no free worker: the view is ready after the restart');
my $src_before = base_time($node, 't_src');
($workers) = under_load($node);
is($workers, 0, 'no free worker: no fold worker started');
ok(base_reaches($node, 't_src', last_write($node, 't_src'), 30),
	"no free worker: the source's base takes the last write in");
cmp_ok(base_time($node, 't_src'), '>', $src_before, "no free worker: the source's base moved on");
my @said = slurp_file($node->logfile) =~ /pg_peek folds bases in the $maint runtime: no background worker is free/g;
is(scalar @said, 1, 'no free worker: the runtime says once that it folds');
log_is_clean($node, 'no free worker');
$node->stop('fast');
done_testing();
