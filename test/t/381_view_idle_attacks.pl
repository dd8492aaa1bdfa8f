# Idle view rounds (a view's upper raised in memory alone, ahead of its
# durable upper) under attack, on a chain of views three deep (v1 groups a
# source, v2 reads v1 and has an index, v3 sums v2):
#  * peeks answered at the published upper, past every view's durable
#    upper, give the same rows after a runtime restart and after a crash
#    restart (persist_peek and index_peek), and the views then follow;
#  * the source compacted to its upper while the views idle, then a crash:
#    its since stays below v1's durable upper (where a restart resumes;
#    the source's own durable upper bounds it too), the views resume, none
#    fails;
#  * REVOKE of the owner's right to read the input while the view idles
#    (no write to its input): the view fails.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('view_idle_attacks', conf => ['restart_after_crash = on']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (id int PRIMARY KEY, g int, x numeric);
	INSERT INTO t SELECT i, i % 5, i * 2 FROM generate_series(1, 1000) i;
	CREATE TABLE unrelated (id serial);
	SELECT peek.create_source('t_src', 't');
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 't_src'"),
	'the source is ready');
sql(q{
	SELECT peek.create_view('v1', $$SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g$$);
	SELECT peek.create_view('v2', $$SELECT g, n FROM peek.persist_peek(NULL::v1, 'v1') WHERE n > 0$$);
	SELECT peek.create_index('v2_g', 'v2', ARRAY['g']);
	SELECT peek.create_view('v3', $$SELECT sum(n) AS total FROM peek.persist_peek(NULL::v2, 'v2')$$);
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.views"), 'the views are ready');
ok(poll_until($node, "SELECT state = 'ready' FROM peek.indexes WHERE name = 'v2_g'"), 'the index is ready');

my $synced = q{SELECT (SELECT total FROM v3) = (SELECT count(*) FROM t)
	AND (SELECT array_agg(r ORDER BY g) FROM (SELECT g, n, s FROM v1) r)
	  = (SELECT array_agg(r ORDER BY g) FROM (SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g) r)};
ok(poll_until($node, $synced), 'the views equal their queries');

# the least published upper of the views, if it is past every durable one
sub published_ahead
{
	return sql(q{SELECT CASE WHEN bool_and(v.upper > d.upper) THEN min(v.upper) END
		FROM peek.views v JOIN peek.objects o ON o.name = v.name
		CROSS JOIN LATERAL (SELECT max(x.upper) AS upper FROM peek.uppers x
			WHERE x.object = o.id & 4294967295) d});
}

# idle rounds (writes no source captures move the source's upper) until
# every view's published upper is past its durable one: returns the least
sub idle_rounds
{
	for (1 .. 20)
	{
		sql('INSERT INTO unrelated DEFAULT VALUES');
		usleep(100_000);
		my $p = published_ahead();
		return $p if $p ne '';
	}
	return '';
}

# every view's answer at time $t
sub answers
{
	my ($t) = @_;
	return sql("SET statement_timeout = '30s';
		SELECT string_agg(g || ':' || n || ':' || s, ',' ORDER BY g) FROM peek.persist_peek(NULL::v1, 'v1', as_of => $t);
		SELECT string_agg(g || ':' || n, ',' ORDER BY g) FROM peek.index_peek(NULL::v2, 'v2_g', as_of => $t);
		SELECT total FROM peek.persist_peek(NULL::v3, 'v3', as_of => $t)");
}

for my $restart ('runtime', 'crash')
{
	sql('UPDATE t SET g = g + 1 WHERE id % 3 = 0');
	ok(poll_until($node, $synced), "$restart: the views have the write");
	my $p = idle_rounds();
	ok($p ne '', "$restart: idle rounds published every view's upper past its durable one")
	  or next;
	my $before = answers($p - 1);
	if ($restart eq 'runtime')
	{
		my $pid = runtime_pid($node, $role);
		sql("SELECT pg_terminate_backend($pid)");
		ok(poll_until($node, "SELECT pid <> $pid FROM peek.runtimes WHERE role = '$role' AND state = 'running'"),
			'runtime: restarted');
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	is(answers($p - 1), $before, "$restart: the answers at the published upper are the same after the restart");
	sql('DELETE FROM t WHERE id % 13 = 0');
	ok(poll_until($node, $synced), "$restart: the views follow the next write");
}

# compaction of the source to its upper while the views idle (below v1's
# durable upper, where a restart resumes), then a crash
idle_rounds();
sql("SELECT peek.allow_compaction('t_src', (SELECT upper - 1 FROM peek.collections WHERE name = 't_src'))");
my $held = 1;
for (1 .. 5)
{
	usleep(100_000);
	$held &&= sql(q{SELECT s.since < (SELECT max(x.upper) FROM peek.uppers x
		JOIN peek.objects v ON x.object = v.id & 4294967295 WHERE v.name = 'v1')
		FROM peek.objects s WHERE s.name = 't_src'}) eq 't';
}
ok($held, 'compaction: the source\'s since stays below v1\'s durable upper');
$node->stop('immediate');
$node->start;
sql('UPDATE t SET x = x + 1 WHERE id < 100');
ok(poll_until($node, $synced), 'compaction: after the crash the views follow the next write');
is(sql('SELECT count(*) FROM peek.views WHERE failure IS NOT NULL'), '0', 'compaction: no view failed');

# REVOKE while the view idles
sql(q{CREATE ROLE idle_owner;
	GRANT USAGE ON SCHEMA peek TO idle_owner;
	GRANT CREATE ON SCHEMA public TO idle_owner;
	GRANT SELECT ON t TO idle_owner;
	SET ROLE idle_owner;
	SELECT peek.create_view('vowned', $$SELECT g, count(*) AS n FROM t GROUP BY g$$);});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.views WHERE name = 'vowned'"), 'REVOKE: the view is ready');
sql('REVOKE SELECT ON t FROM idle_owner');
idle_rounds();
ok(poll_until($node, "SELECT state = 'failed' AND failure LIKE 'permission denied%' FROM peek.views WHERE name = 'vowned'", 't', 10),
	'REVOKE: the idle view fails with no write to its input');

$node->stop('fast');
done_testing();
