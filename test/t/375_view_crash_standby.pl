# Maintained views against an oracle through a crash restart of the
# server in the middle of a workload, and on a streaming hot standby.
# Views over a collection (grouped, filtered, DISTINCT, over the whole
# input), joins of two collections (inner, left with an extra condition,
# grouped by the join key, grouped by another column or by none: two
# stages; NULL keys), joins of three collections on different keys (a
# chain of join stages, inner then left, and grouped) and views over a
# source (grouped and filtered, a self-join grouped by another column, and
# a chain of two left self-joins on different keys; times that are commit
# LSNs), each with an index.  The workload
# writes the collections and runs
# transactions on the captured table (updates of the grouping column,
# deletes, rollbacks, a TRUNCATE); half-way the server is stopped
# immediately, with views' rounds still to run, and started again.  At
# every time from a view's since to its inputs' upper, on the primary and
# then on the standby (replay alone: no runtime there owns the views), the
# view read by persist_peek and by index_peek equals PostgreSQL's own
# evaluation of the query over the inputs' persist peeks at that time, as
# multisets: nothing lost or counted twice by the crash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

srand(375);
my $primary = new_node('vcrash_primary',
	init => { allows_streaming => 1 },
	conf => [ 'hot_standby_feedback = on', 'wal_receiver_status_interval = 1s' ]);

$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE orow AS (k int, v text, n numeric);
	SELECT peek.create_collection('c', 'orow');
	CREATE TYPE drow AS (k int, w text);
	SELECT peek.create_collection('dd', 'drow');
	CREATE TYPE erow AS (t int, w text);
	SELECT peek.create_collection('ee', 'erow');
	CREATE TABLE st (id int PRIMARY KEY, g int, x numeric);
	INSERT INTO st SELECT i, i % 4, i * 1.5 FROM generate_series(1, 40) i;
	SELECT peek.create_source('st_src', 'st');
});
# view_mismatches(got, want, times): the times where two queries differ
$primary->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));
ok(poll_until($primary, "SELECT state = 'ready' FROM peek.collections WHERE name = 'st_src'"),
	'the source is ready');
my $src_type = $primary->safe_psql('postgres',
	"SELECT row_type FROM peek.collections WHERE name = 'st_src'");

# name => [inputs, query over them with @IN@ for their peeks' arguments]
my %views = (
	vj => [ [ 'c', 'dd' ], "SELECT c.k, c.v, d.w FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) c JOIN peek.persist_peek(NULL::drow, 'dd'\@IN\@) d ON d.k = c.k" ],
	vl => [ [ 'c', 'dd' ], "SELECT d.k, d.w, c.n FROM peek.persist_peek(NULL::drow, 'dd'\@IN\@) d LEFT JOIN peek.persist_peek(NULL::orow, 'c'\@IN\@) c ON c.k = d.k AND c.n > 0" ],
	vjg => [ [ 'c', 'dd' ], "SELECT c.k, count(*) AS n, max(d.w) AS w, sum(c.n) AS s FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) c JOIN peek.persist_peek(NULL::drow, 'dd'\@IN\@) d ON d.k = c.k GROUP BY c.k" ],
	vg => [ 'c', "SELECT k % 3 AS g, count(*) AS n, sum(n) AS s, min(v) AS lo, max(n) AS hi FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) GROUP BY k % 3" ],
	vf => [ 'c', "SELECT k, upper(v) AS u, n * 2 AS n2 FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) WHERE k > 3 OR v IS NULL" ],
	vd => [ 'c', "SELECT DISTINCT v FROM peek.persist_peek(NULL::orow, 'c'\@IN\@)" ],
	vw => [ 'c', "SELECT count(*) AS n, sum(k) AS s, max(v) AS hi FROM peek.persist_peek(NULL::orow, 'c'\@IN\@)" ],
	sg => [ 'st_src', "SELECT g, count(*) AS n, sum(x) AS s, max(x) AS hi FROM peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) GROUP BY g" ],
	sf => [ 'st_src', "SELECT id, x FROM peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) WHERE x > 20" ],
	vjr => [ [ 'c', 'dd' ], "SELECT d.w, count(*) AS n, sum(c.n) AS s, min(c.v) AS lo FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) c JOIN peek.persist_peek(NULL::drow, 'dd'\@IN\@) d ON d.k = c.k GROUP BY d.w" ],
	vlw => [ [ 'c', 'dd' ], "SELECT count(*) AS n, count(c.k) AS m, max(c.n) AS hi FROM peek.persist_peek(NULL::drow, 'dd'\@IN\@) d LEFT JOIN peek.persist_peek(NULL::orow, 'c'\@IN\@) c ON c.k = d.k" ],
	sjg => [ 'st_src', "SELECT a.g, count(*) AS n, sum(b.x) AS s, max(b.x) AS hi FROM peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) a JOIN peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) b ON a.id = b.id GROUP BY a.g" ],
	vch => [ [ 'c', 'dd', 'ee' ], "SELECT c.k, d.w, e.t FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) c JOIN peek.persist_peek(NULL::drow, 'dd'\@IN\@) d ON d.k = c.k LEFT JOIN peek.persist_peek(NULL::erow, 'ee'\@IN\@) e ON e.w = d.w" ],
	vchg => [ [ 'c', 'dd', 'ee' ], "SELECT e.t, count(*) AS n, sum(c.n) AS s FROM peek.persist_peek(NULL::orow, 'c'\@IN\@) c JOIN peek.persist_peek(NULL::drow, 'dd'\@IN\@) d ON d.k = c.k JOIN peek.persist_peek(NULL::erow, 'ee'\@IN\@) e ON e.w = d.w GROUP BY e.t" ],
	sch => [ 'st_src', "SELECT a.id, b.x, c.id AS cid FROM peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) a LEFT JOIN peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) b ON b.id = a.id + 1 LEFT JOIN peek.persist_peek(NULL::$src_type, 'st_src'\@IN\@) c ON c.id = b.g" ],
);
for my $name (sort keys %views)
{
	(my $query = $views{$name}[1]) =~ s/\@IN\@//g;
	$primary->safe_psql('postgres', "SELECT peek.create_view('$name', \$q\$$query\$q\$)");
	my $first = $primary->safe_psql('postgres',
		"SELECT attname FROM pg_attribute WHERE attrelid = '$name'::regclass AND attnum = 1");
	$primary->safe_psql('postgres', "SELECT peek.create_index('${name}_i', '$name', ARRAY['$first'])");
}

# a streaming standby from the start: it replays the views through the crash
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('vcrash_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# ---- the workload ----
my %live;    # the collection c's rows: literal => count
my @vs = ("'a'", "'b'", "'ab'", 'NULL');
my @ns = ('0', '1', '1.5', '2.50', '-3', 'NULL');

# a random write of a collection: a few new rows (by $row), a few of its
# live rows retracted (%$live keeps their counts)
sub write_random
{
	my ($name, $type, $live, $row) = @_;
	my (@ins, @del);
	push @ins, $row->() for 1 .. int(rand(4));
	my @rows = grep { $live->{$_} > 0 } sort keys %$live;
	for (1 .. int(rand(3)))
	{
		last unless @rows;
		my $r = $rows[ int(rand(@rows)) ];
		next if $live->{$r} == 0;
		$live->{$r}--;
		push @del, $r;
	}
	$live->{$_}++ for @ins;
	my $arr = sub { @_ ? 'ARRAY[' . join(', ', @_) . "]::${type}[]" : "'{}'::${type}[]" };
	$primary->safe_psql('postgres', "SELECT peek.write('$name', " . $arr->(@ins) . ', ' . $arr->(@del) . ')');
}

my %live_d;
my %live_e;

sub write_c
{
	write_random('c', 'orow', \%live,
		sub { '(' . int(rand(10)) . ', ' . $vs[ int(rand(@vs)) ] . ', ' . $ns[ int(rand(@ns)) ] . ')' });
	write_random('dd', 'drow', \%live_d,
		sub { '(' . (rand() < 0.1 ? 'NULL' : int(rand(10))) . ', ' . $vs[ int(rand(@vs)) ] . ')' });
	write_random('ee', 'erow', \%live_e,
		sub { '(' . int(rand(4)) . ', ' . $vs[ int(rand(@vs)) ] . ')' });
}

my $next_id = 41;
my %kinds;

sub change_st
{
	my $r = rand();
	my $sql;
	if ($r < 0.3)
	{
		$sql = 'UPDATE st SET g = (g + 1) % 5, x = x + 1 WHERE id % ' . (2 + int(rand(5))) . ' = 0';
		$kinds{update}++;
	}
	elsif ($r < 0.5)
	{
		$sql = 'DELETE FROM st WHERE id IN (SELECT id FROM st ORDER BY id LIMIT 2)';
		$kinds{delete}++;
	}
	elsif ($r < 0.6)
	{
		$sql = "BEGIN; INSERT INTO st VALUES ($next_id, 9, 99); UPDATE st SET g = 7; ROLLBACK";
		$kinds{rollback}++;
	}
	else
	{
		my $n = 1 + int(rand(4));
		$sql = "INSERT INTO st SELECT i, i % 4, i * 1.5 FROM generate_series($next_id, $next_id + $n - 1) i";
		$next_id += $n;
		$kinds{insert}++;
	}
	$primary->safe_psql('postgres', $sql);
}

sub workload
{
	my ($steps) = @_;
	for (1 .. $steps)
	{
		write_c();
		change_st();
	}
}

# Every view and index caught up to its input's upper at this moment;
# then each view is compared with its query at every time its input has
# from its since (for a source: the commit LSNs its shard holds, and the
# since itself) below that upper.
sub check_views
{
	my ($node, $label) = @_;
	for my $name (sort keys %views)
	{
		my ($inputs, $template) = @{ $views{$name} };
		my @inputs = ref $inputs ? @$inputs : ($inputs);
		my $in_list = join(', ', map { "'$_'" } @inputs);
		my $shards = join(' UNION ALL ', map { "SELECT ts FROM shard_of('$_')" } @inputs);
		my $upper = $primary->safe_psql('postgres',
			"SELECT min(upper) FROM peek.collections WHERE name IN ($in_list)");
		ok(poll_until($node,
			"SELECT upper >= $upper AND state = 'ready' FROM peek.views WHERE name = '$name'", 't', 90),
			"$label: $name caught up to its inputs' upper $upper")
		  or diag $node->safe_psql('postgres', 'SELECT name, state, failure, since, upper FROM peek.views');
		ok(poll_until($node,
			"SELECT upper >= $upper AND state = 'ready' FROM peek.indexes WHERE name = '${name}_i'", 't', 90),
			"$label: its index caught up");
		my $since = qq{(SELECT greatest(v.since, (SELECT max(since) FROM peek.collections WHERE name IN ($in_list)))
		                  FROM peek.views v WHERE v.name = '$name')};
		my $times = $node->safe_psql('postgres', qq{
			SELECT array_agg(t ORDER BY t) FROM (
				SELECT DISTINCT ts AS t FROM ($shards) s WHERE ts >= $since AND ts < $upper
				UNION SELECT $since) s});
		(my $oracle = $template) =~ s/\@IN\@/, as_of => \@T\@/g;
		my $n = () = $times =~ /,/g;
		my $rows = $node->safe_psql('postgres', "SELECT count(*) FROM $name");
		is($node->safe_psql('postgres',
			"SELECT view_mismatches(\$g\$SELECT * FROM peek.persist_peek(NULL::$name, '$name', as_of => \@T\@)\$g\$, "
			  . "\$w\$$oracle\$w\$, '$times')"),
			'', "$label: $name by persist_peek equals its query at each of its inputs' " . ($n + 1)
			  . " times ($rows rows now)");
		is($node->safe_psql('postgres',
			"SELECT view_mismatches(\$g\$SELECT * FROM peek.index_peek(NULL::$name, '${name}_i', as_of => \@T\@)\$g\$, "
			  . "\$w\$$oracle\$w\$, '$times')"),
			'', "$label: $name by index_peek equals its query at each time");
	}
}

# a shard's rows by its object's name, for the times (the base, at -1, is
# left out by time >= since)
$primary->safe_psql('postgres', q{
	CREATE FUNCTION shard_of(name text) RETURNS TABLE (ts bigint) LANGUAGE plpgsql AS $f$
	BEGIN
		RETURN QUERY EXECUTE format('SELECT time FROM %s WHERE time >= 0',
			(SELECT shard FROM peek.collections WHERE collections.name = shard_of.name));
	END $f$;
});

workload(25);
$primary->safe_psql('postgres', 'TRUNCATE st');
$kinds{truncate}++;
$primary->safe_psql('postgres',
	'INSERT INTO st SELECT i, i % 4, i * 1.5 FROM generate_series(' . $next_id . ', ' . ($next_id + 9) . ') i');
$next_id += 10;
workload(15);

# the crash: views' rounds still to run over the last writes
my $views_behind = $primary->safe_psql('postgres', q{
	SELECT count(*) FROM peek.views v JOIN peek.collections i ON i.name = v.inputs[1]
	 WHERE v.upper < i.upper});
note "at the crash, $views_behind views behind their inputs";
$primary->stop('immediate');
$primary->start;
ok(poll_until($primary, "SELECT count(*) = " . scalar(keys %views) . " FROM peek.views WHERE state = 'ready'", 't', 60),
	'after the crash restart the views are ready');
workload(20);
check_views($primary, 'after the crash');

is(join(',', grep { !$kinds{$_} } qw(update delete rollback insert truncate)), '',
	'the workload has every kind of change');
isnt($primary->safe_psql('postgres', 'SELECT sum(rows) FROM peek.views'), '0', 'the views are not all empty');

# ---- the standby serves the same views by replay ----
$primary->wait_for_catchup($standby, 'replay');
check_views($standby, 'on the standby');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'those peeks ran on a standby');

$standby->stop;
$primary->stop;
done_testing();
