# Maintained views against an oracle (seeded, reproducible): generated
# queries over a collection c (filter/map/project; GROUP BY with aggregates
# and HAVING; aggregates over the whole input; DISTINCT) and over c and a
# second collection d (inner and left joins on a key, grouped by it, by
# other columns (two stages) or by none, DISTINCT or not; UNION ALL), kept
# current by the maintenance runtime under random inserts, retractions,
# updates of the join key and of other columns and rolled-back writes at
# many times (c and d written at the same times); with EXISTS, NOT EXISTS
# and IN (SELECT ...) of d or e in WHERE (semi- and anti-joins, grouped or
# not, beside a join, two on different keys); and over c, d and a
# third collection e joined on different keys (a chain of join stages:
# c and d on k, then e on a column of d, of c, or of both; or c and e
# first; or inner joins written in an order their equalities do not allow),
# inner and left, grouped by other columns, by none, DISTINCT or not, with
# numeric keys 2.5 and 2.50 and NULL keys.  At every time at or
# after a view's since, the view read by persist_peek (as_of => t) and by
# index_peek (an index on the view) equals PostgreSQL's own evaluation of
# the query over peek.persist_peek(NULL::orow, 'c', as_of => t) (and d's),
# as multisets (EXCEPT ALL both ways).  Half-way the collections compact
# and one more view is created over them (hydrated from the since); then
# the maintenance runtime is terminated and restarted while writes go on:
# the views resume at their uppers, nothing lost or counted twice.  A view
# over a view is checked against its input view.
#
# Seed: $PG_PEEK_VIEW_SEED, or a fixed default.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $seed = $ENV{PG_PEEK_VIEW_SEED};
$seed = 370370 unless defined $seed && $seed =~ /^\d+$/;
srand($seed);
note "pg_peek view oracle: seed $seed (set PG_PEEK_VIEW_SEED to replay), "
  . 'interactive = ' . interactive_mode();

my $STEPS = 60;
my $node = new_node('view_oracle');

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE orow AS (k int, v text, n numeric);
	CREATE TYPE drow AS (k int, w text);
	CREATE TYPE erow AS (t int, w text, m numeric);
	SELECT peek.create_collection('c', 'orow');
	SELECT peek.create_collection('d', 'drow');
	SELECT peek.create_collection('e', 'erow');
});
# view_mismatches(got, want, t0, t1): the times in [t0, t1] where the two
# queries (@T@: the time) differ, as the regression tests have it
$node->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));

# ---- generated queries ----
my @exprs = ('k', 'v', 'n', 'k * 2', 'k + n', 'upper(v)', 'length(v)',
	'n / 2', "coalesce(v, 'none')", 'k % 3', 'abs(n - 1)', "v || '-' || k::text",
	'round(n)', 'k > 4');
my @preds = ('k > @', 'k % 2 = 0', 'n < @', "v LIKE 'a%'", 'v IS NULL',
	'k BETWEEN @ AND @ + 3', 'n IS NOT NULL AND n <> @', "v = 'b'",
	'NOT (k < @)');

my @keys = ('k', 'v', 'k % 3', 'upper(v)', 'round(n)', 'k > 4', 'n');
my @aggs = ('count(*)', 'count(v)', 'sum(n)', 'sum(k)', 'avg(n)', 'avg(k)',
	'min(v)', 'max(n)', 'min(k * 2)', 'bool_and(k > 4)', 'bool_or(n > 1)',
	'every(k % 2 = 0)', 'count(DISTINCT v)', 'max(v) FILTER (WHERE k > 2)');
my @havings = ('count(*) > 1', 'sum(k) > @', 'min(n) IS NOT NULL', 'max(k) < @');

sub pick { return $_[ int(rand(@_)) ]; }

# the shapes over c and d: inner and left joins on a key (a.k = b.k or an
# expression of it), grouped by the key, by other columns (with HAVING at
# times), by none, DISTINCT over other columns, or not grouped; UNION ALL
# of a query over each
my @jcols = ('a.k', 'a.v', 'a.n', 'b.w', 'b.k', 'a.n + b.k', "coalesce(b.w, 'none')",
	"a.v || b.w", 'b.k IS NULL');
my @jaggs = ('count(*)', 'count(b.w)', 'sum(a.n)', 'max(b.w)', 'min(a.v)', 'sum(b.k)');
my @jpreds = ('a.k > @', "b.w <> 'x'", 'a.n < @', 'b.w IS NULL', "a.v LIKE 'a%'");
my @jkeys = ('b.w', 'a.v', 'a.n', 'b.k IS NULL', "coalesce(b.w, a.v)", 'a.n + b.k');
my @jhavings = ('count(*) > 1', 'sum(a.n) > @', 'max(b.w) IS NOT NULL');

sub random_join_query
{
	my $shape = shift // pick('join', 'left', 'union', 'joingroup', 'joinby', 'joinwhole',
		'joindistinct');
	my $c = "peek.persist_peek(NULL::orow, 'c'\@AS\@)";
	my $d = "peek.persist_peek(NULL::drow, 'd'\@AS\@)";
	if ($shape eq 'union')
	{
		(my $p = pick(@preds)) =~ s/@/int(rand(8))/ge;
		return "SELECT k AS c1, v AS c2 FROM $c WHERE $p UNION ALL "
		  . "SELECT k % 4, w FROM $d" . (rand() < 0.5 ? " WHERE w <> 'x'" : '');
	}
	my ($on, $key) = @{ pick(['a.k = b.k', 'a.k'], ['a.k % 3 = b.k % 3', 'a.k % 3'],
		['b.k = a.k', 'a.k']) };
	$on .= " AND b.w <> 'y'" if rand() < 0.3;
	my $join = ($shape eq 'join' ? 'JOIN' : 'LEFT JOIN');
	my @cols;
	my $group = '';
	if ($shape eq 'joingroup' || $shape eq 'joinby' || $shape eq 'joinwhole')
	{
		$join = pick('JOIN', 'LEFT JOIN');
		$key = pick(@jkeys) if $shape eq 'joinby';
		push @cols, $key unless $shape eq 'joinwhole';
		push @cols, pick(@jaggs) for 1 .. 1 + int(rand(3));
		$group = " GROUP BY $key" unless $shape eq 'joinwhole';
		if ($shape eq 'joinby' && rand() < 0.4)
		{
			(my $h = pick(@jhavings)) =~ s/@/int(rand(8))/ge;
			$group .= " HAVING $h";
		}
	}
	elsif ($shape eq 'joindistinct')
	{
		$join = pick('JOIN', 'LEFT JOIN');
		push @cols, pick(@jkeys) for 1 .. 1 + int(rand(2));
	}
	else
	{
		push @cols, pick(@jcols) for 1 .. 1 + int(rand(4));
	}
	my $i = 0;
	@cols = map { $_ . ' AS c' . ++$i } @cols;
	my $where = '';
	if (rand() < 0.5)
	{
		($where = ' WHERE ' . pick(@jpreds)) =~ s/@/int(rand(8))/ge;
	}
	return 'SELECT ' . ($shape eq 'joindistinct' ? 'DISTINCT ' : '') . join(', ', @cols)
	  . " FROM $c a $join $d b ON $on$where$group";
}

# the shapes over c, d and e joined on different keys: a chain of
# binary join stages in FROM order, each input inner or left joined to
# the ones before it (on a column of d, of c, or of both: a key of two
# earlier inputs), then grouped by other columns, by none, DISTINCT, or
# not grouped
my @ccols = ('a.k', 'a.v', 'a.n', 'b.w', 'b.k', 'x.w', 'x.m', 'x.t', 'coalesce(x.w, b.w)',
	'x.m + a.n', 'x.t IS NULL');
my @caggs = ('count(*)', 'count(x.t)', 'sum(x.m)', 'max(x.w)', 'min(a.v)', 'sum(b.k)',
	'avg(a.n)');
my @ckeys = ('x.w', 'x.t', 'a.v', 'b.w', 'x.m', 'x.t IS NULL', 'b.k');
my @cpreds = ('a.k > @', "x.w <> 'x'", 'x.t < @', 'x.m IS NULL', 'b.w IS NOT NULL');

sub random_chain_query
{
	my $shape = shift // pick('chain', 'chainmid', 'chaincomma', 'chaingroup', 'chainwhole',
		'chaindistinct');
	my $c = "peek.persist_peek(NULL::orow, 'c'\@AS\@)";
	my $d = "peek.persist_peek(NULL::drow, 'd'\@AS\@)";
	my $e = "peek.persist_peek(NULL::erow, 'e'\@AS\@)";
	my $join = sub { pick('JOIN', 'LEFT JOIN') };
	my $from;
	my $where = '';
	if ($shape eq 'chaincomma')
	{
		# inner joins written in an order their equalities do not allow
		# (c and e first): run as c, d, e
		$from = "$c a, $e x, $d b";
		$where = ' WHERE a.k = b.k AND ' . pick('x.w = b.w', 'x.t = b.k % 4');
	}
	elsif ($shape eq 'chainmid')
	{
		# c and e first, then d on a key of both
		$from = "$c a " . $join->() . " $e x ON x.m = a.n " . $join->()
		  . " $d b ON b.k = a.k AND b.w = x.w";
	}
	else
	{
		$from = "$c a " . $join->() . " $d b ON " . pick('a.k = b.k', 'a.k % 3 = b.k % 3')
		  . ' ' . $join->() . " $e x ON "
		  . pick('x.w = b.w', 'x.m = a.n', 'x.w = b.w AND x.m = a.n', 'x.t = a.k % 4');
	}
	my @cols;
	my $group = '';
	if ($shape eq 'chaingroup' || $shape eq 'chainwhole')
	{
		my $key = pick(@ckeys);
		push @cols, $key unless $shape eq 'chainwhole';
		push @cols, pick(@caggs) for 1 .. 1 + int(rand(3));
		$group = " GROUP BY $key" unless $shape eq 'chainwhole';
		$group .= ' HAVING count(*) > 1' if $shape eq 'chaingroup' && rand() < 0.3;
	}
	elsif ($shape eq 'chaindistinct')
	{
		push @cols, pick(@ckeys) for 1 .. 1 + int(rand(2));
	}
	else
	{
		push @cols, pick(@ccols) for 1 .. 1 + int(rand(4));
	}
	my $i = 0;
	@cols = map { $_ . ' AS c' . ++$i } @cols;
	if (rand() < 0.5)
	{
		(my $p = pick(@cpreds)) =~ s/@/int(rand(5))/ge;
		$where .= ($where eq '' ? ' WHERE ' : ' AND ') . $p;
	}
	return 'SELECT ' . ($shape eq 'chaindistinct' ? 'DISTINCT ' : '') . join(', ', @cols)
	  . " FROM $from$where$group";
}

# the shapes: plain, grouped (with HAVING at times), aggregates over the
# whole input, DISTINCT
sub random_query
{
	my $shape = shift // pick('plain', 'plain', 'group', 'group', 'whole', 'distinct');
	my @cols;
	my @group;
	if ($shape eq 'group')
	{
		push @group, pick(@keys) for 1 .. 1 + int(rand(2));
		push @cols, @group;
	}
	my $pool = ($shape eq 'plain' || $shape eq 'distinct') ? \@exprs : \@aggs;
	my $ncols = @cols + 1 + int(rand(3));
	push @cols, pick(@$pool) while @cols < $ncols;
	my $i = 0;
	@cols = map { $_ . ' AS c' . ++$i } @cols;
	my @where;
	for (1 .. int(rand(3)))
	{
		my $p = pick(@preds);
		$p =~ s/@/int(rand(8))/ge;
		push @where, "($p)";
	}
	my $join = rand() < 0.5 ? ' AND ' : ' OR ';
	my $having = '';
	if ($shape eq 'group' && rand() < 0.5)
	{
		($having = ' HAVING ' . pick(@havings)) =~ s/@/int(rand(12))/ge;
	}
	return 'SELECT ' . ($shape eq 'distinct' ? 'DISTINCT ' : '') . join(', ', @cols)
	  . " FROM peek.persist_peek(NULL::orow, 'c'\@AS\@)"
	  . (@where ? ' WHERE ' . join($join, @where) : '')
	  . (@group ? ' GROUP BY ' . join(', ', @group) : '')
	  . $having;
}

# the shapes with EXISTS, NOT EXISTS and IN (SELECT ...) in WHERE (semi-
# and anti-joins): over c with a subquery of d or e correlated by a key
# (or an expression of it), not grouped, grouped by the correlation key or
# by another column, DISTINCT; over c joined to d with a subquery of e on
# another key; two subqueries on different keys
my @scols = ('a.k', 'a.v', 'a.n', 'a.k * 2', "coalesce(a.v, 'none')", 'a.k + a.n');
my @saggs = ('count(*)', 'sum(a.n)', 'max(a.v)', 'min(a.k)', 'count(a.v)');

sub random_semi_query
{
	my $shape = shift // pick('exists', 'notexists', 'in', 'semigroup', 'semiby', 'semidistinct',
		'semijoin', 'semitwo');
	my $c = "peek.persist_peek(NULL::orow, 'c'\@AS\@)";
	my $d = "peek.persist_peek(NULL::drow, 'd'\@AS\@)";
	my $e = "peek.persist_peek(NULL::erow, 'e'\@AS\@)";
	my $not = sub { pick('', 'NOT ') };
	my $sub = sub {
		my $kind = shift // pick('d', 'e', 'in');
		return "EXISTS (SELECT FROM $d b WHERE "
		  . pick('b.k = a.k', 'b.k = a.k % 3', 'a.k = b.k') . pick('', " AND b.w <> 'y'") . ')'
		  if $kind eq 'd';
		return "EXISTS (SELECT 1 FROM $e x WHERE "
		  . pick('x.t = a.k % 4', 'x.m = a.n', 'x.t = a.k') . pick('', ' AND x.m > 1') . ')'
		  if $kind eq 'e';
		return pick("a.k IN (SELECT k FROM $d WHERE w <> 'x')", "a.k % 4 IN (SELECT t FROM $e)",
			"a.n = ANY (SELECT m FROM $e WHERE w <> 'z')");
	};
	my @cols;
	my $from = "$c a";
	my $where;
	my $group = '';
	if ($shape eq 'semijoin')
	{
		$from .= ' ' . pick('JOIN', 'LEFT JOIN') . " $d b ON b.k = a.k";
		$where = $not->() . "EXISTS (SELECT FROM $e x WHERE " . pick('x.w = b.w', 'x.t = a.k % 4') . ')';
		push @cols, pick(@scols, 'b.w') for 1 .. 1 + int(rand(3));
	}
	elsif ($shape eq 'semitwo')
	{
		$where = $not->() . $sub->('d') . ' AND ' . $not->() . $sub->('e');
		push @cols, pick(@scols) for 1 .. 1 + int(rand(3));
	}
	else
	{
		my $kind = $shape eq 'in' ? 'in' : $shape =~ /exists/ ? pick('d', 'e') : pick('d', 'e', 'in');
		# (NOT IN is refused)
		my $neg = $kind eq 'in' || $shape eq 'exists' ? '' : $shape eq 'notexists' ? 'NOT ' : $not->();
		$where = $neg . $sub->($kind);
		if ($shape eq 'semigroup' || $shape eq 'semiby')
		{
			my $key = $shape eq 'semigroup' ? 'a.k' : pick('a.v', 'a.n', 'a.k % 2');
			push @cols, $key;
			push @cols, pick(@saggs) for 1 .. 1 + int(rand(2));
			$group = " GROUP BY $key";
		}
		else
		{
			push @cols, pick(@scols) for 1 .. 1 + int(rand(3));
		}
	}
	(my $p = pick('a.k > @', 'a.n < @', "a.v <> 'b'")) =~ s/@/int(rand(6))/ge;
	$where .= " AND $p" if rand() < 0.3;
	my $i = 0;
	@cols = map { $_ . ' AS c' . ++$i } @cols;
	return 'SELECT ' . ($shape eq 'semidistinct' ? 'DISTINCT ' : '') . join(', ', @cols)
	  . " FROM $from WHERE $where$group";
}

# name => { query => text with @AS@, input_oracle => text with @T@ }
my %views;

sub create_view
{
	my ($name, $template) = @_;
	(my $query = $template) =~ s/\@AS\@//g;
	(my $oracle = $template) =~ s/\@AS\@/, as_of => \@T\@/g;
	$node->safe_psql('postgres',
		"SELECT peek.create_view('$name', \$q\$$query\$q\$)");
	$views{$name} = { oracle => $oracle };
	note "$name: $query";
	index_view($name, 'c1');
}

sub index_view
{
	my ($name, $key) = @_;
	$node->safe_psql('postgres', "SELECT peek.create_index('${name}_i', '$name', ARRAY['$key'])");
}

# Wait for every view and index to reach the collection's upper, then
# compare each at every time from its since (and the collection's: the
# oracle reads the collection) to the last one.
sub check_views
{
	my ($label, $last_write) = @_;
	# (the write's upper: peek.collections shows the published one, which
	# may not have caught up yet)
	my $upper = $last_write + 1;
	my $last = $upper - 1;
	ok(poll_until($node,
		"SELECT count(*) = 0 FROM peek.views WHERE upper < $upper OR state <> 'ready'", 't', 60),
		"$label: every view caught up to upper $upper")
	  or diag $node->safe_psql('postgres', 'SELECT name, state, failure, since, upper FROM peek.views');
	ok(poll_until($node,
		"SELECT count(*) = 0 FROM peek.indexes WHERE upper IS DISTINCT FROM $upper OR state <> 'ready'", 't', 60),
		"$label: the indexes on the views caught up");
	for my $name (sort keys %views)
	{
		my $since = $node->safe_psql('postgres',
			"SELECT greatest(v.since, max(c.since)) FROM peek.views v, peek.collections c "
			  . "WHERE v.name = '$name' AND c.name IN ('c', 'd', 'e') GROUP BY v.since");
		my $oracle = $views{$name}{oracle};
		my $rows = $node->safe_psql('postgres',
			"SELECT count(*) FROM peek.persist_peek(NULL::$name, '$name')");
		is($node->safe_psql('postgres',
			"SELECT view_mismatches(\$g\$SELECT * FROM peek.persist_peek(NULL::$name, '$name', as_of => \@T\@)\$g\$, "
			  . "\$w\$$oracle\$w\$, $since, $last)"),
			'', "$label: $name by persist_peek equals the query at every time $since..$last ($rows rows now)");
		is($node->safe_psql('postgres',
			"SELECT view_mismatches(\$g\$SELECT * FROM peek.index_peek(NULL::$name, '${name}_i', as_of => \@T\@)\$g\$, "
			  . "\$w\$$oracle\$w\$, $since, $last)"),
			'', "$label: $name by index_peek equals the query at every time $since..$last");
	}
}

# ---- workload: a Perl model of each collection's rows keeps counts >= 0 ----
my %live = (c => {}, d => {}, e => {});    # collection => row literal => count
my @vs = ("'a'", "'b'", "'ab'", "'ba'", 'NULL');
my @ns = ('0', '1', '1.5', '2.50', '-3', 'NULL');
my @ws = ("'x'", "'y'", "'z'", 'NULL');
my @ms = ('0', '1', '1.0', '2.5', '2.50', 'NULL');
my %type = (c => 'orow', d => 'drow', e => 'erow');

sub random_row
{
	my $coll = shift;
	return '(' . int(rand(10)) . ', ' . $ws[ int(rand(@ws)) ] . ')' if $coll eq 'd';
	return '(' . int(rand(5)) . ', ' . $ws[ int(rand(@ws)) ] . ', ' . $ms[ int(rand(@ms)) ] . ')'
	  if $coll eq 'e';
	return '(' . int(rand(10)) . ', ' . $vs[ int(rand(@vs)) ] . ', '
	  . $ns[ int(rand(@ns)) ] . ')';
}

# One collection's write: inserts, retractions, and updates of the key (a
# row retracted and inserted again with another k) or of its other
# columns (the same k, the rest drawn again); the model follows
# unless the write is to be rolled back.
sub write_sql
{
	my ($coll, $rollback) = @_;
	my $live = $live{$coll};
	my (@ins, @del);
	push @ins, random_row($coll) for 1 .. int(rand(4));
	my @rows = grep { $live->{$_} > 0 } sort keys %$live;
	for (1 .. int(rand(4)))
	{
		last unless @rows;
		my $r = $rows[ int(rand(@rows)) ];
		next if $live->{$r} - grep({ $_ eq $r } @del) <= 0;
		push @del, $r;
		my $moved = $r;
		if (rand() < 0.5)
		{
			$moved =~ s/^\(\d+/'(' . int(rand(10))/e;
		}
		else
		{
			my ($k) = $r =~ /^\((\d+)/;
			($moved = random_row($coll)) =~ s/^\(\d+/($k/;
		}
		push @ins, $moved if rand() < 0.5;
	}
	unless ($rollback)
	{
		$live->{$_}-- for @del;
		$live->{$_}++ for @ins;
	}
	my $arr = sub { @_ ? 'ARRAY[' . join(', ', @_) . "]::$type{$coll}\[]" : "'{}'::$type{$coll}\[]" };
	return "SELECT peek.write('$coll', " . $arr->(@ins) . ', ' . $arr->(@del) . ');';
}

# c, d and e written at the same time (their uppers move together); at
# times a write to all rolled back first
sub write_step
{
	if (rand() < 0.15)
	{
		$node->safe_psql('postgres',
			'BEGIN; ' . join(' ', map { write_sql($_, 1) } qw(c d e)) . ' ROLLBACK;');
	}
	my $times = $node->safe_psql('postgres', join(' ', map { write_sql($_) } qw(c d e)));
	my ($tc, $td, $te) = split /\n/, $times;
	die "c, d and e written at different times ($tc, $td, $te)" unless $tc == $td && $td == $te;
	return $tc;
}

write_step() for 1 .. 5;
# each shape at least once
my @shapes = ('plain', 'group', 'group', 'whole', 'distinct', 'group', 'plain', undef);
create_view("v$_", random_query($shapes[ $_ - 1 ])) for 1 .. 8;
# each join shape at least once, twice the joins
my @jshapes = ('join', 'left', 'union', 'joingroup', 'join', 'left', 'joinby', 'joinby',
	'joinwhole', 'joindistinct', 'joinby', undef);
create_view("j$_", random_join_query($jshapes[ $_ - 1 ])) for 1 .. @jshapes;
# each chain shape at least once, the plain chain twice
my @cshapes = ('chain', 'chain', 'chainmid', 'chaincomma', 'chaingroup', 'chainwhole',
	'chaindistinct', undef);
create_view("k$_", random_chain_query($cshapes[ $_ - 1 ])) for 1 .. @cshapes;
# each semi-join shape at least once
my @sshapes = ('exists', 'notexists', 'in', 'semigroup', 'semiby', 'semidistinct', 'semijoin',
	'semitwo', undef, undef);
create_view("s$_", random_semi_query($sshapes[ $_ - 1 ])) for 1 .. @sshapes;
$node->safe_psql('postgres',
	"SELECT peek.create_view('vv', 'SELECT c1 AS d1 FROM peek.persist_peek(NULL::v1, ''v1'') WHERE c1 IS NOT NULL')");
$views{vv} = { oracle => "SELECT c1 AS d1 FROM peek.persist_peek(NULL::v1, 'v1', as_of => \@T\@) WHERE c1 IS NOT NULL" };
index_view('vv', 'd1');

my $last;
for my $step (1 .. $STEPS)
{
	$last = write_step();
	if ($step == int($STEPS / 3))
	{
		check_views('before compaction', $last);
		# compaction up to near the upper; a view created now hydrates
		# from the since
		$node->safe_psql('postgres', "SELECT peek.allow_compaction('c', $last - 2)");
		$node->safe_psql('postgres', "SELECT peek.allow_compaction('d', $last - 3)");
		$node->safe_psql('postgres', "SELECT peek.allow_compaction('e', $last - 2)");
		ok(poll_until($node,
			"SELECT bool_and(since >= $last - 3 - 2) FROM peek.collections WHERE name IN ('c', 'd', 'e')"),
			'the collections compact, the views reading them caught up');
		create_view('vlate', random_query());
		create_view('jlate', random_join_query());
		create_view('klate', random_chain_query());
		create_view('slate', random_semi_query());
	}
	if ($step == int(2 * $STEPS / 3))
	{
		my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
		my $pid = runtime_pid($node, $role);
		$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
		note "terminated the $role runtime (pid $pid) at step $step";
	}
}
check_views('after the restart', $last);
is($node->safe_psql('postgres',
	"SELECT count(*) FROM peek.runtimes WHERE restarts > 0 AND role IN ('maintenance', 'solo')"),
	'1', 'the maintenance runtime was restarted');
is($node->safe_psql('postgres', "SELECT since > 0 FROM peek.views WHERE name = 'vlate'"),
	't', 'the late view was hydrated from a compacted since');
is($node->safe_psql('postgres', "SELECT since > 0 FROM peek.views WHERE name = 'jlate'"),
	't', 'the late join was hydrated from a compacted since');
is($node->safe_psql('postgres', "SELECT since > 0 FROM peek.views WHERE name = 'klate'"),
	't', 'the late chained join was hydrated from a compacted since');
is($node->safe_psql('postgres', "SELECT since > 0 FROM peek.views WHERE name = 'slate'"),
	't', 'the late semi-join was hydrated from a compacted since');
isnt($node->safe_psql('postgres',
	"SELECT sum(rows) FROM peek.views"), '0', 'the views are not all empty');

$node->stop;
done_testing();
