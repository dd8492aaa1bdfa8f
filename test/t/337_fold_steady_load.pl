# The moving base follows its collection under a steady write load (issue
# 24).  A load of 100,000 rows at one time, then small updates at about 50
# a second for about 25 s (a procedure of their own, each in its own
# transaction), never pausing 500 ms; the same for a source (its table's
# 100,000 rows loaded, then updated by the same transactions): before, the base stopped at the
# load's time until every write paused, and a peek of 10 rows summed every
# update since the load (1.6-1.8 s against 2.3 s for a full peek, at
# 200,000 rows and 100 updates a second).  Now a fold worker folds the load
# once the base stopped there for a while, and the runtime's bounded steps
# follow the updates:
#  * the base takes the load's time in while the writes go on, and moves
#    on with them after;
#  * a peek at the newest time reads the base (the contents) and the last
#    seconds' updates, not every update since the load (the shard keeps
#    the rest as history for the retention, 1 h by default);
#  * a peek of 10 rows costs a fraction of a full peek (server-side times,
#    the median of several, interleaved);
#  * the contents at several times written during the load are exact,
#    and the source's equal its table's at the end.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);
use PgPeekTest;

my $node = new_node('fold_steady_load');
my $rows = 100_000;
my $seconds = 25;

sub sql { return $node->safe_psql('postgres', $_[0]); }

item_setup($node, 'c');
$node->safe_psql('postgres', q{
-- a query's time in the server, in ms (no client round trip)
CREATE FUNCTION timed(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	EXECUTE q;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
CREATE TABLE written (i int, t bigint, at timestamptz);
CREATE TABLE src (k int PRIMARY KEY, v text);
INSERT INTO src SELECT g, 'x' || g FROM generate_series(1, 100000) g;
});
# the steady load: update i sets row i's v to 'u' || i, every ~15 ms
steady_procedure($node, q{
		INSERT INTO written
		  SELECT i, peek.write('c', ARRAY[(i, 'u' || i)]::item[], ARRAY[(i, 'x' || i)]::item[]),
		         clock_timestamp();
		UPDATE src SET v = 'u' || i WHERE k = i;}, 0.015);
my $t_load = sql("SELECT peek.write('c', ARRAY(SELECT (g, 'x' || g)::item "
	  . "FROM generate_series(1, $rows) g))");
my $shard = sql("SELECT shard::regclass FROM peek.objects WHERE name = 'c'");

sub base_time { return sql("SELECT coalesce(base_time, -2) FROM peek.objects WHERE name = 'c'"); }

# The contents after $i updates.
sub expected_digest
{
	my ($i) = @_;
	return sql("SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(v)::bigint) FROM "
		  . "(SELECT g AS id, CASE WHEN g <= $i THEN 'u' ELSE 'x' END || g AS v "
		  . " FROM generate_series(1, $rows) g) e");
}

sub peek_digest
{
	my ($t) = @_;
	return sql("SELECT count(*) || ' ' || sum(id) || ' ' || sum(hashtext(v)::bigint) "
		  . "FROM peek.persist_peek(NULL::item, 'c', as_of => $t)");
}

# ---- while the load runs: the base's time, then peeks -----------------------

sql("SELECT peek.create_source('s', 'src')");
my $writer = start_bg($node, "CALL steady($seconds)");
my $r = bg_session($node);
my (@bases, @limit_ms, @full_ms);
my $start = [gettimeofday];
while (tv_interval($start) < $seconds - 2)
{
	push @bases, [ tv_interval($start), split(/\|/, sql(
		"SELECT coalesce(c.base_time, -2), (SELECT coalesce(max(t), -1) FROM written), "
		  . "coalesce(s.base_time, -2) "
		  . "FROM peek.objects c, peek.objects s WHERE c.name = 'c' AND s.name = 's'")) ];
	# in the last 10 s: a peek of 10 rows and a full one, interleaved
	if (tv_interval($start) >= $seconds - 12)
	{
		push @limit_ms, $r->query_safe("SELECT timed('SELECT count(*) FROM "
			  . "peek.persist_peek(NULL::item, ''c'', \"limit\" => 10)')");
		push @full_ms, $r->query_safe("SELECT timed('SELECT count(*) FROM "
			  . "peek.persist_peek(NULL::item, ''c'')')");
	}
	usleep(1_000_000);
}
# the rows a peek at the newest time reads (the base's and those after it),
# all of them, and the updates of the last 8 s, while the writes go on
my ($read_rows, $shard_rows, $base_end, $recent) = split /\|/, sql(
	"SELECT count(*) FILTER (WHERE time = -1 OR time > coalesce(o.base_time, -2)), count(*), "
	  . "coalesce(o.base_time, -2), "
	  . "(SELECT count(*) FROM written WHERE at > clock_timestamp() - interval '8 s') "
	  . "FROM $shard, peek.objects o WHERE o.name = 'c' GROUP BY o.base_time");
my $source_base_end = sql("SELECT coalesce(base_time, -2) FROM peek.objects WHERE name = 's'");
my ($rc, $out, $err) = finish_bg($writer);
is("$rc $err", '0 ', 'the steady load ran');
$r->quit;
my @times = map { [ split /\|/ ] } split /\n/, sql("SELECT i, t FROM written ORDER BY i");

sub median { my @s = sort { $a <=> $b } @_; return $s[ int(@s / 2) ]; }
my ($limit_med, $full_med) = (median(@limit_ms), median(@full_ms));
diag(sprintf('%d updates in %d s; (s:base/last write/source base) %s (load at %d); '
	  . 'shard rows a peek reads %d, all %d (contents %d, updates in the last 8 s %d); '
	  . 'limit-10 peek median %.1f ms (%s), full peek median %.1f ms (%s); load average %s',
	scalar @times, $seconds,
	join(' ', map { sprintf('%.0f:%d/%d/%d', @$_) } @bases), $t_load,
	$read_rows, $shard_rows, $rows, $recent,
	$limit_med, join(' ', map { sprintf('%.1f', $_) } @limit_ms),
	$full_med, join(' ', map { sprintf('%.1f', $_) } @full_ms),
	`cat /proc/loadavg` =~ s/\n//r));

cmp_ok(scalar @times, '>=', 20 * $seconds, 'a steady load: at least 20 updates a second');
# the load's time taken in within the first half, writes going on
my ($half) = grep { $_->[0] >= $seconds / 2 } @bases;
cmp_ok($half->[1], '>=', $t_load, 'the base takes the load in while the writes go on');
# and after it, the base follows the updates: past the time written at half
cmp_ok($base_end, '>=', $half->[2], 'the base moves on with the updates');
# (the source's load itself takes seconds on a loaded machine)
my ($source_first) = grep { $_->[3] != -2 } @bases;
ok(defined $source_first, 'the source\'s base takes its load in while the writes go on');
cmp_ok($source_base_end, '>', $source_first ? $source_first->[3] : -2,
	'and moves on with the updates');
cmp_ok($read_rows, '<=', $rows + 2 * $recent,
	'a peek reads the contents and the last seconds\' updates only');
cmp_ok(scalar @limit_ms, '>=', 5, 'peeks measured');
cmp_ok($limit_med * 3, '<', $full_med, 'a peek of 10 rows costs a fraction of a full peek');

for my $k (grep { $_->[0] % 300 == 1 || $_->[0] == $times[-1][0] } @times)
{
	is(peek_digest($k->[1]), expected_digest($k->[0]), "as_of $k->[1] (update $k->[0])");
}
is(peek_digest($t_load), expected_digest(0), 'as_of the load');
ok(poll_until($node, "SELECT count(*) = $rows FROM peek.persist_peek(NULL::src, 's') JOIN src USING (k, v)"),
	'the source\'s contents equal its table\'s');
is(sql("SELECT count(*) - count(DISTINCT data) FROM $shard WHERE time = -1"), '0',
	'no row twice in the base');
is(sql("SELECT count(*) FROM peek.collections WHERE failure IS NOT NULL"), '0',
	'no collection failed');

$node->stop;
done_testing();
