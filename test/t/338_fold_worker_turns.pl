# Fold workers take turns and keep big folds out of the maintenance
# runtime (issue 24):
#  * an idle-in-transaction writer holding collection a's catalog row, which
#    a's fold worker must change at its commit, does not stop collection
#    b's big fold: a's worker gives way (lock_timeout) and no other starts
#    for a while the writer's transaction is open; b's big time is folded
#    meanwhile, and a's once the writer commits, with exact contents.
#    Before, a's worker waited for the writer, and every other collection's
#    big fold waited for a's worker (one worker at a time).
#  * a big compaction (allow_compaction to a 300,000-row time, at once, before
#    the base took it in) is folded by a fold worker: writes to another collection committed while
#    it runs are visible long before it ends (before, the runtime folded it
#    itself, and every seal waited for it); the since and the base take the
#    compaction in, its history is deleted and the contents are exact.
# The server log has no ERROR or WARNING line.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);
use PgPeekTest;

my $N = 200_000;
my $H = 300_000;
my $node = new_node('fold_worker_turns');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub base_time { return sql("SELECT base_time FROM peek.objects WHERE name = '$_[0]'"); }

sub digest
{
	my ($name, $t) = @_;
	return sql("SET statement_timeout = '60s'; SELECT count(*) || ' ' || sum(id) "
		  . "FROM peek.persist_peek(NULL::item, '$name', as_of => $t)");
}

sub fold_workers
{
	return sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'");
}

item_setup($node, qw(a b h probe));
for my $name (qw(a b h))
{
	my $t0 = sql("SELECT peek.write('$name', ARRAY[(0, 'zero')]::item[])");
	base_reaches($node, $name, $t0);
}

# ---- an open writer holds a's row ------------------------------------------
my $ta = sql("SELECT peek.write('a', ARRAY(SELECT (g, 'x' || g)::item FROM generate_series(1, $N) g))");
ok(poll_until($node, "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
	'open writer: a fold worker folds a');
my $s = bg_session($node);
$s->query_safe("BEGIN");
$s->query_safe("SELECT peek.write('a', ARRAY[(-1, 'open')]::item[])");
my $tb = sql("SELECT peek.write('b', ARRAY(SELECT (g, 'x' || g)::item FROM generate_series(1, $N) g))");
ok(base_reaches($node, 'b', $tb, 90), "open writer: b's big time is folded while a's writer is open");
cmp_ok(base_time('a'), '<', $ta, "open writer: a's base waits for the writer");
ok(poll_until($node, "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
	"open writer: no fold worker waits for the writer");
like(slurp_file($node->logfile), qr/pg_peek fold of object \d+ gave way, to be looked at again: canceling statement due to lock timeout/,
	"open writer: a's worker gave way to the writer");
# looked at again every second meanwhile: no worker starts for a
my $most = 0;
for (1 .. 20)
{
	my $n = fold_workers();
	$most = $n if $n > $most;
	usleep(100_000);
}
is($most, 0, 'open writer: no worker starts for a while its row is held');
cmp_ok(base_time('a'), '<', $ta, "open writer: a's base still waits");
$s->query_safe("COMMIT");
ok(base_reaches($node, 'a', $ta, 90), "open writer: a's big time is folded after the writer's commit");
is(digest('a', $ta), ($N + 1) . ' ' . ($N * ($N + 1) / 2), 'open writer: contents of a at its big time');
is(digest('b', $tb), ($N + 1) . ' ' . ($N * ($N + 1) / 2), 'open writer: contents of b at its big time');
$s->quit;

# ---- a big compaction ------------------------------------------------------
# compaction to a big time the base has not taken in yet: it folds it
my $th = sql("SELECT peek.write('h', ARRAY(SELECT (g, 'x' || g)::item FROM generate_series(1, $H) g))");
$s = bg_session($node);
sql("SELECT peek.allow_compaction('h', $th)");
my $at = [gettimeofday];
my (@during, $compact_ms, $seen);
for (my $i = 1; $i <= 600 && !defined $compact_ms; $i++)
{
	$seen ||= fold_workers() > 0;
	push @during, commit_to_visible_ms($s, 'probe', $i);
	$compact_ms = tv_interval($at) * 1000
	  if sql("SELECT since >= $th FROM peek.objects WHERE name = 'h'") eq 't';
	usleep(50_000);
}
ok(defined $compact_ms, 'compaction: the since takes the big time in');
my $shard = sql("SELECT shard::regclass FROM peek.objects WHERE name = 'h'");
$compact_ms //= tv_interval($at) * 1000;
my ($max_during) = sort { $b <=> $a } @during;
diag(sprintf('compaction of %d updates: %.0f ms; %d writes during it, commit-to-visible max %.0f ms (%s); load average %s',
	$H, $compact_ms, scalar @during, $max_during,
	join(' ', map { sprintf('%.0f', $_) } @during), `cat /proc/loadavg` =~ s/\n//r));
ok($seen, 'compaction: a fold worker folds it');
cmp_ok($compact_ms, '>=', 1000, 'compaction: it takes a second or more (the test measures something)');
cmp_ok($max_during, '<', $compact_ms / 3,
	'compaction: a write committed during it is visible long before it ends');
is(sql("SELECT count(*) FROM $shard WHERE time > 0 AND time <= $th"), '0',
	'compaction: the history it passed is deleted');
cmp_ok(base_time('h'), '>=', $th, 'compaction: the base takes the since in');
is(digest('h', $th), ($H + 1) . ' ' . ($H * ($H + 1) / 2), 'compaction: contents at the since');
$s->quit;

log_is_clean($node, 'the whole run');
$node->stop('fast');
done_testing();
