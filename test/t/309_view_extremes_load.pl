# min and max kept as a group's states (accums_functions.c, accums.c)
# under 50 clients at once (pgbench, 500 transactions a second) over a captured table of 100,000
# rows: updates that lower a group's max and raise its min (the kept
# values retracted), others that copy a group's max into another row (ties),
# random updates, deletes, inserts and rolled back deletes.  Views: the
# whole table's min and max (GROUP BY of nothing), a grouping by a plain
# column kept in a shared arrangement (max, min, max of text, count, sum;
# an index on it), one by a text column and one by an expression.  The
# maintenance runtime is terminated (SIGTERM) in the first run and killed
# (SIGKILL: a crash restart) in the second.  At times recorded during the
# load, each view by persist peek equals PostgreSQL's evaluation of its
# kept query over the source's persist peek at that time; at the end each
# view (and the grouped one by index peek) equals the query over the table.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('vextremes', conf => [ 'max_connections = 80', 'restart_after_crash = on' ]);
$node->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE bt (id int PRIMARY KEY, g int, v int, t text);
	INSERT INTO bt SELECT i, i % 1000, (i * 7919) % 100003, 'k' || (i * 31) % 9973
	  FROM generate_series(1, 100000) i;
	CREATE INDEX ON bt (g, v);
	SELECT peek.create_source('bt_src', 'bt');
	CREATE TABLE bq (name text PRIMARY KEY, query text);
	INSERT INTO bq VALUES
	  ('x_whole', $$SELECT max(v) AS hi, min(v) AS lo, max(t) AS t_hi, count(*) AS n FROM bt$$),
	  ('x_by', $$SELECT g, max(v) AS hi, min(v) AS lo, max(t) AS t_hi, count(*) AS n, sum(v) AS s
	               FROM bt GROUP BY g$$),
	  ('x_byt', $$SELECT t, max(v) AS hi, min(g) AS g_lo FROM bt GROUP BY t$$),
	  ('x_expr', $$SELECT g % 7 AS k, max(v) AS hi, min(v) AS lo FROM bt GROUP BY g % 7$$);
	SELECT peek.create_view(name, query) FROM bq ORDER BY name;
	SELECT peek.create_index('x_by_g', 'x_by', ARRAY['g']);
	CREATE TABLE btimes (src text, t bigint);
});
ok(poll_until($node, q{SELECT bool_and(state = 'ready') FROM peek.views}, 't', 120),
	'the views are ready');

my $dir = PostgreSQL::Test::Utils::tempdir();
my %scripts = (
	'lower_max.sql@20' => "\\set g random(0, 999)\n"
	  . "UPDATE bt SET v = v - 7 WHERE id = (SELECT id FROM bt WHERE g = :g ORDER BY v DESC LIMIT 1);\n",
	'raise_min.sql@10' => "\\set g random(0, 999)\n"
	  . "UPDATE bt SET v = v + 5 WHERE id = (SELECT id FROM bt WHERE g = :g ORDER BY v LIMIT 1);\n",
	'ties.sql@10' => "\\set g random(0, 999)\n\\set id random(1, 100000)\n"
	  . "UPDATE bt SET v = (SELECT max(v) FROM bt WHERE g = :g), t = 'k9999' WHERE id = :id;\n",
	'random.sql@20' => "\\set id random(1, 100000)\n\\set v random(-10, 100010)\n"
	  . "UPDATE bt SET v = :v WHERE id = :id;\n",
	'moves.sql@10' => "\\set id random(1, 100000)\n\\set g random(0, 999)\n"
	  . "BEGIN;\nDELETE FROM bt WHERE id = :id;\n"
	  . "INSERT INTO bt VALUES (:id + 100000, :g, :id % 1000, 'k' || :g) ON CONFLICT (id) DO NOTHING;\n"
	  . "UPDATE bt SET g = :g WHERE id = :id + 1;\nCOMMIT;\n",
	'rollback.sql@3' => "\\set g random(0, 999)\nBEGIN;\n"
	  . "DELETE FROM bt WHERE id = (SELECT id FROM bt WHERE g = :g ORDER BY v DESC LIMIT 1);\nROLLBACK;\n",
);
my @files;
for my $f (sort keys %scripts)
{
	(my $file = $f) =~ s/@\d+$//;
	PostgreSQL::Test::Utils::append_to_file("$dir/$file", $scripts{$f});
	push @files, '-f', "$dir/$f";
}

# pgbench for $secs seconds in the background; meanwhile a time recorded
# every second, and at mid-run the maintenance runtime signalled
sub load
{
	my ($secs, $signal) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '50', '-j', '4', '-R', '500', '-T', $secs, @files, $node->connstr('postgres') ],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout($secs + 300));
	for my $s (1 .. $secs - 2)
	{
		sleep 1;
		eval {
			$node->safe_psql('postgres',
				q{INSERT INTO btimes VALUES ('bt_src', wal_time())});
		};
		if ($s == int($secs / 2))
		{
			my $pid = runtime_pid($node, maintenance_role());
			kill $signal, $pid;
			# (a crash restart: the clients' connections are lost)
			sleep 3 if $signal eq 'KILL';
		}
	}
	$h->finish;
	return ($out, $err);
}

my ($out, $err) = load(16, 'TERM');
my ($tx) = $out =~ /number of transactions actually processed: (\d+)/;
ok($err !~ /aborted/, 'pgbench: no client aborted in the run with SIGTERM') or diag($err);
cmp_ok($tx // 0, '>', 500, 'pgbench: 50 clients ran ' . ($tx // 0) . ' transactions');
($out, $err) = load(16, 'KILL');
ok(poll_until($node, q{SELECT count(*) FROM peek.runtimes WHERE state = 'running'},
	interactive_mode() eq 'on' ? '2' : '1', 60), 'the runtimes run again after the crash restart');

# the views catch up with the table's last write
my $end = $node->safe_psql('postgres', 'SELECT wal_time()');
ok(poll_until($node, "SELECT bool_and(upper > $end) FROM peek.views", 't', 180),
	'every view caught up with the load');
is($node->safe_psql('postgres', q{SELECT string_agg(name || ': ' || failure, '; ') FROM peek.views WHERE failure IS NOT NULL}),
	'', 'no view failed');
my $ntimes = $node->safe_psql('postgres', 'SELECT count(*) FROM btimes');
cmp_ok($ntimes, '>', 10, "$ntimes times recorded during the load");

# at each recorded time the view is its kept query over the source then
for my $v (qw(x_whole x_by x_byt x_expr))
{
	is($node->safe_psql('postgres', qq{SELECT view_mismatches(
		format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => \@T\@)', v.name, v.name),
		regexp_replace(v.query, '(''\\w+''::text)', '\\1, as_of => \@T\@', 'g'),
		ARRAY(SELECT t FROM btimes WHERE t >= v.since ORDER BY t))
	  FROM peek.views v WHERE v.name = '$v'}),
		'', "$v by persist_peek equals its query at the recorded times");
	is($node->safe_psql('postgres', qq{SELECT view_mismatches(format('SELECT * FROM %I', name), query,
		ARRAY[0::bigint]) FROM bq WHERE name = '$v'}),
		'', "$v equals its query over the table at the end");
}
is($node->safe_psql('postgres', q{SELECT view_mismatches(
	$g$SELECT * FROM peek.index_peek(NULL::x_by, 'x_by_g')$g$,
	(SELECT query FROM bq WHERE name = 'x_by'), ARRAY[0::bigint])}),
	'', 'x_by by index_peek equals its query over the table at the end');
$node->stop;
done_testing();
