# A view's round over many times at once (its groups run in waves, each
# group at its own times, reduce.c and waves.c): while the maintenance
# runtime is stopped (SIGSTOP), hundreds of single-row commits to the same
# and to different groups of a collection c (and to d, at the same times)
# wait, so that the next round takes them all; every time's contents of
# each view (GROUP BY with min and max, HAVING, a whole-input aggregate,
# DISTINCT, a left join, a join grouped by another key (two stages), UNION
# ALL, a view over a view, groups giving the same rows), read by
# persist_peek and by index_peek, must equal PostgreSQL's evaluation of its
# query over the inputs' persist peeks at that time.  A wave that mixed two times
# of one group, or emitted a group's difference at another group's time,
# shows as a wrong time.  Then the same with the runtime terminated while
# stopped, so that its groups are built again and learn their output in
# the first wave that touches them.
#
# Seed: $PG_PEEK_VIEW_SEED, or a fixed default.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $seed = $ENV{PG_PEEK_VIEW_SEED};
$seed = 372372 unless defined $seed && $seed =~ /^\d+$/;
srand($seed);
note "seed $seed (set PG_PEEK_VIEW_SEED to replay), interactive = " . interactive_mode();

my $STEPS = 300;
my $node = new_node('view_waves');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE crow AS (k int, v int);
	CREATE TYPE drow AS (k int, w text);
	SELECT peek.create_collection('c', 'crow');
	SELECT peek.create_collection('d', 'drow');
	SELECT peek.write('c', ARRAY[(1, 5), (2, 7), (2, 1), (3, 3)]::crow[]);
	SELECT peek.write('d', ARRAY[(1, 'x'), (2, 'y'), (2, 'x')]::drow[]);
});
sql(slurp_file('../sql/00_helpers.sql'));

my $C = "peek.persist_peek(NULL::crow, 'c'\@AS\@)";
my $D = "peek.persist_peek(NULL::drow, 'd'\@AS\@)";
my %views = (
	wg => "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM $C GROUP BY k",
	wh => "SELECT k % 3 AS m, count(*) AS n FROM $C GROUP BY k % 3 HAVING count(*) > 4",
	wa => "SELECT count(*) AS n, sum(v) AS s, max(v) AS hi FROM $C",
	wd => "SELECT DISTINCT v % 4 AS r FROM $C",
	wj => "SELECT c.k, c.v, d.w FROM $C c LEFT JOIN $D d ON d.k = c.k",
	ws => "SELECT d.w, count(*) AS n, sum(c.v) AS s FROM $C c JOIN $D d ON d.k = c.k GROUP BY d.w",
	wu => "SELECT k, count(*) AS n FROM $C GROUP BY k UNION ALL SELECT k, count(*) FROM $D GROUP BY k",
	wv => "SELECT n, count(*) AS groups FROM peek.persist_peek(NULL::wg, 'wg'\@AS\@) GROUP BY n",
	# the same row from two groups: retracted by one and added by the other
	# at one time, in different waves
	wn => "SELECT count(*) AS n, max(v) AS hi FROM $C GROUP BY k");
my %index_key = (wg => 'k', wh => 'm', wa => 'n', wd => 'r', wj => 'k', ws => 'w', wu => 'k',
	wv => 'n', wn => 'n');
for my $name (sort keys %views)
{
	(my $query = $views{$name}) =~ s/\@AS\@//g;
	sql("SELECT peek.create_view('$name', \$q\$$query\$q\$)");
	sql("SELECT peek.create_index('${name}_i', '$name', ARRAY['$index_key{$name}'])");
}
my $NVIEWS = keys %views;
ok(poll_until($node, "SELECT count(*) = $NVIEWS FROM peek.views WHERE state = 'ready' AND upper = 1", 't'),
	'the views are ready');

# ---- single-row commits: c's rows modelled, each step one change to c and
# a write to d (mostly empty) at the same time ----
my %live = ('(1,5)' => 1, '(2,7)' => 1, '(2,1)' => 1, '(3,3)' => 1);
my %dlive = ('(1,x)' => 1, '(2,y)' => 1, '(2,x)' => 1);

sub change
{
	my ($live, $new) = @_;
	my @rows = grep { $live->{$_} > 0 } sort keys %$live;
	my (@ins, @del);
	my $r = rand();
	# a few keys: many commits touch the same group
	if (!@rows || $r < 0.45) { push @ins, $new->(); }
	elsif ($r < 0.7) { push @del, $rows[ int(rand(@rows)) ]; }
	else { push @del, $rows[ int(rand(@rows)) ]; push @ins, $new->(); }
	$live->{$_}-- for @del;
	$live->{$_}++ for @ins;
	return (\@ins, \@del);
}

sub write_sql
{
	my ($coll, $type, $ins, $del) = @_;
	my $arr = sub {
		@_ ? 'ARRAY[' . join(', ', map { my ($a, $b) = /^\((-?\d+),(.*)\)$/; "($a, " . ($b =~ /^-?\d+$/ ? $b : "'$b'") . ')' } @_) . "]::$type\[]"
		  : "'{}'::$type\[]" };
	return "SELECT peek.write('$coll', " . $arr->(@$ins) . ', ' . $arr->(@$del) . ');';
}

sub burst
{
	my @stmts;
	for (1 .. $STEPS)
	{
		push @stmts, write_sql('c', 'crow', change(\%live, sub { '(' . int(rand(6)) . ',' . int(rand(20)) . ')' }));
		if (rand() < 0.2)
		{
			push @stmts, write_sql('d', 'drow',
				change(\%dlive, sub { '(' . int(rand(6)) . ',' . ('x', 'y', 'z')[ int(rand(3)) ] . ')' }));
		}
		else
		{
			push @stmts, write_sql('d', 'drow', [], []);
		}
	}
	my @times = split /\n/, sql(join("\n", @stmts));
	for (my $i = 0; $i < @times; $i += 2)
	{
		die "c and d written at different times ($times[$i], $times[$i + 1])"
		  unless $times[$i] == $times[ $i + 1 ];
	}
	return ($times[0], $times[-1]);
}

# every view at every time of the burst equals its query then
sub check_views
{
	my ($label, $first, $last) = @_;
	ok(poll_until($node,
		"SELECT count(*) = $NVIEWS FROM peek.views WHERE state = 'ready' AND upper = $last + 1", 't', 120),
		"$label: every view caught up to upper " . ($last + 1))
	  or diag sql('SELECT name, state, failure, since, upper FROM peek.views');
	ok(poll_until($node,
		"SELECT count(*) = $NVIEWS FROM peek.indexes WHERE state = 'ready' AND upper = $last + 1", 't', 120),
		"$label: the indexes on the views caught up");
	for my $name (sort keys %views)
	{
		(my $oracle = $views{$name}) =~ s/\@AS\@/, as_of => \@T\@/g;
		is(sql("SELECT view_mismatches(\$g\$SELECT * FROM peek.persist_peek(NULL::$name, '$name', as_of => \@T\@)\$g\$, "
				  . "\$w\$$oracle\$w\$, $first - 1, $last)"),
			'', "$label: $name equals its query at every time " . ($first - 1) . "..$last");
		is(sql("SELECT view_mismatches(\$g\$SELECT * FROM peek.index_peek(NULL::$name, '${name}_i', as_of => \@T\@)\$g\$, "
				  . "\$w\$$oracle\$w\$, $first - 1, $last)"),
			'', "$label: $name by index_peek equals its query at every time " . ($first - 1) . "..$last");
	}
}

my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $pid = runtime_pid($node, $role);
stop_runtime($node, $pid);
my ($first, $last) = burst();
kill 'CONT', $pid;
check_views('one round over the burst', $first, $last);
is(runtime_pid($node, $role), $pid, 'the runtime ran the burst without a restart');

# the same with the groups built again: the runtime is ended while stopped
$pid = runtime_pid($node, $role);
stop_runtime($node, $pid);
($first, $last) = burst();
kill 'TERM', $pid;
kill 'CONT', $pid;
check_views('after a restart, one round over the burst', $first, $last);
isnt(runtime_pid($node, $role), $pid, 'the runtime was started again');
isnt(sql('SELECT sum(rows) FROM peek.views'), '0', 'the views are not all empty');

$node->stop;
done_testing();
