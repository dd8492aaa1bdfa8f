# Rowless stages (src/dataflow/rowless.c) at a size where keeping rows
# shows: a whole-table count(*) and sum and a date_trunc-keyed grouping
# over a 200,000-row source keep their groups' states, not the source's
# rows: the maintenance runtime's state bytes for each stay under 1 MB
# (keeping the rows took about 20 MB), after the hydration, after a
# SIGTERM of the maintenance runtime and after a crash restart of the
# server (each builds the groups again from one read of the source).
# Under a seeded workload of inserts, updates of the summed columns (numeric
# values of mixed scales, whose inverse transition answers NULL when the
# last value of the greatest scale goes) and of the timestamp the key is
# computed from, deletes, rolled-back transactions and a TRUNCATE, at every
# time recorded each view equals PostgreSQL's evaluation of its query over
# the source's persist peek at that time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

srand(301);
my $node = new_node('view_rowless');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE big (id int PRIMARY KEY, v int, n numeric, ts timestamp);
	INSERT INTO big SELECT i, i % 1000, (i % 400) / 8.0,
	                       '2026-05-01'::timestamp + (i % 10) * interval '1 day' + (i % 60) * interval '1 minute'
	  FROM generate_series(1, 200000) i;
	SELECT peek.create_source('big_src', 'big');
	CREATE TABLE times (src text, t bigint);
});
# views_past_wal, views_bad_times_at, restart_maintenance
$node->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 'big_src'", 't', 120),
	'the source is ready');
$node->safe_psql('postgres', q{
	SELECT peek.create_view('rw', $$SELECT count(*) AS n, sum(v) AS v, sum(n) AS s, avg(n) AS a,
	                                         bool_or(v > 998) AS top FROM big$$);
	SELECT peek.create_view('rd', $$SELECT date_trunc('day', ts) AS day, count(*) AS n, sum(v) AS v,
	                                         sum(n) AS s, avg(v) AS a FROM big GROUP BY 1$$);
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.views", 't', 120), 'the views are ready');

sub settle
{
	return $node->safe_psql('postgres', "SELECT views_past_wal('big_src', 'times')");
}

# each view's state bytes under 1 MB (its groups' states, keys, outputs)
sub state_small
{
	my ($what) = @_;
	# a round since the last build, so that the operators' counts are its
	$node->safe_psql('postgres', 'UPDATE big SET v = v WHERE id = 1');
	settle();
	my $bytes = $node->safe_psql('postgres', q{
		SELECT string_agg(view || ' ' || bytes, ', ' ORDER BY view) FROM peek.dataflow_operators
		 WHERE view IN ('rw', 'rd') AND kind = 'reduce'});
	note "state bytes $what: $bytes";
	like($bytes, qr/^rd \d+, rw \d+$/, "both views report their state, $what");
	my @big = grep { $_ >= 1024 * 1024 } ($bytes =~ /(\d+)/g);
	is(scalar(@big), 0, "each view keeps under 1 MB for 200,000 rows, $what");
	return;
}

my $next_id = 300000;

# a step of the workload, in its own transaction (some rolled back)
sub step
{
	my $r = rand();
	my $sql;
	if ($r < 0.2)
	{
		my $k = 1 + int(rand(4));
		$sql = join(', ', map {
			my $id = $next_id++;
			sprintf("(%d, %d, %s, '2026-05-%02d %02d:00')", $id, int(rand(1000)),
				(rand() < 0.3 ? sprintf('%.6f', rand(10)) : int(rand(50)) / 4), 1 + int(rand(12)),
				int(rand(24)))
		} 1 .. $k);
		$sql = "INSERT INTO big VALUES $sql";
	}
	elsif ($r < 0.4)
	{
		$sql = sprintf('UPDATE big SET v = v + %d WHERE id %% %d = %d', 1 + int(rand(5)),
			500 + int(rand(500)), int(rand(500)));
	}
	elsif ($r < 0.55)
	{
		# a numeric of a new greatest scale in, then out again
		my $id = 1 + int(rand(200000));
		$node->safe_psql('postgres', "UPDATE big SET n = 1.000000001 WHERE id = $id");
		settle();
		$sql = "UPDATE big SET n = 2 WHERE id = $id";
	}
	elsif ($r < 0.7)
	{
		$sql = sprintf("UPDATE big SET ts = ts + interval '%d hours' WHERE id %% 997 = %d",
			1 + int(rand(48)), int(rand(997)));
	}
	elsif ($r < 0.85)
	{
		$sql = sprintf('DELETE FROM big WHERE id %% %d = %d', 1000 + int(rand(2000)), int(rand(1000)));
	}
	else
	{
		$node->safe_psql('postgres', q{
			BEGIN;
			UPDATE big SET n = n + 0.5, ts = ts + interval '1 day' WHERE id % 50 = 7;
			DELETE FROM big WHERE id % 3 = 0;
			ROLLBACK;
		});
		$sql = 'UPDATE big SET v = v - 1 WHERE id % 401 = 3';
	}
	$node->safe_psql('postgres', $sql);
	settle();
	return;
}

settle();
state_small('after the hydration');
step() for 1 .. 15;

# the maintenance runtime terminated: the next builds the groups again
ok($node->safe_psql('postgres', 'SELECT restart_maintenance()') eq 't',
	'the maintenance runtime restarted');
step() for 1 .. 10;
state_small('after a restart of the maintenance runtime');

# a crash restart, rounds to run
$node->safe_psql('postgres', q{UPDATE big SET v = v + 7 WHERE id % 13 = 0});
$node->stop('immediate');
$node->start;
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.views", 't', 120),
	'the views are ready after the crash');
settle();
step() for 1 .. 10;
state_small('after a crash restart');

# TRUNCATE and rows again
$node->safe_psql('postgres', 'TRUNCATE big');
settle();
$node->safe_psql('postgres', q{
	INSERT INTO big SELECT i, i, i / 3.0, '2026-05-02'::timestamp + i * interval '1 hour'
	  FROM generate_series(1, 100) i});
settle();
step() for 1 .. 5;

my $ntimes = $node->safe_psql('postgres', 'SELECT count(DISTINCT t) FROM times');
cmp_ok($ntimes, '>=', 45, 'many times recorded');
is($node->safe_psql('postgres', q{
	SELECT string_agg(name || ': ' || bad_times, '; ') FROM views_bad_times_at('r_', 'big_src', 'times')
	 WHERE bad_times <> ''}), '', 'at every time recorded each view is its query over the source');
is($node->safe_psql('postgres', q{
	SELECT (SELECT n FROM rw) = (SELECT count(*) FROM big) AND (SELECT v FROM rw) = (SELECT sum(v) FROM big)}),
	't', 'the whole-table view is the table now');
log_is_clean($node, 'rowless views');
done_testing();
