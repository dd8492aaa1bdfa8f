# Randomized oracle test (seeded, reproducible): random histories of appends,
# advances, writes and compactions on several collections; at random times
# and keys, every index_peek and persist_peek result equals a plain SQL query
# over a table (`oracle`) holding the same updates.
#
#  * 3 collections of orow (k int, v text, n numeric), 2 indexes each, on {k},
#    {k,v} or {n} (numeric equality: 1 = 1.0 = 1.00 as keys, while rows are
#    told apart by their exact value, so 1.0 and 1.00 rows stay distinct).
#    One index (c3_n) is created half-way, over a compacted shard.
#  * A Perl model of every row's multiplicity over time makes sure no row
#    ever has a negative count at any time, so every peek must succeed.
#  * Check phases between history phases: equality checks (index peeks with
#    and without key, with limit; persist peeks, with limit and as_of NULL)
#    at times t >= the object's allowed since (and its observed since), then
#    compacted checks (SQLSTATE 72000) at times below the since.
#  * At the end, one deliberate over-retraction: the peeks fail with 22000.
#
# Seed: $PG_PEEK_ORACLE_SEED, or a fixed default. Every random choice comes
# from the seed and the Perl model only (never from timing), so a seed
# replays the same history and the same checks.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $seed = $ENV{PG_PEEK_ORACLE_SEED};
$seed = 130130 unless defined $seed && $seed =~ /^\d+$/;
srand($seed);
note "pg_peek oracle test: seed $seed (set PG_PEEK_ORACLE_SEED to replay), "
  . 'interactive = ' . interactive_mode();

my $STEPS        = 60;    # history steps per collection
my $PHASE        = 10;    # steps between check phases
my $INDEX_CHECKS = 14;    # per collection per phase
my $PERSIST_CHECKS = 6;   # per collection per phase

my $node = new_node('oracle');

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE orow AS (k int, v text, n numeric);
	CREATE TABLE oracle (coll text, k int, v text, n numeric, t bigint, d bigint);
	CREATE INDEX ON oracle (coll, t);

	-- One equality (or limit) check: run the peek and the oracle query, each
	-- returning its rows as sorted row texts joined by ';'.
	CREATE FUNCTION oracle_check(id int, what text, peek_sql text, oracle_sql text,
	                             lim bigint)
	RETURNS TABLE (check_id int, ok boolean, detail text)
	LANGUAGE plpgsql AS $f$
	DECLARE
		got text;
		want text;
		g text[];
		w text[];
	BEGIN
		check_id := id;
		BEGIN
			EXECUTE peek_sql INTO got;
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			ok := false;
			detail := what || ': peek failed: ' || SQLSTATE || ': ' || SQLERRM;
			RETURN NEXT;
			RETURN;
		END;
		EXECUTE oracle_sql INTO want;
		IF lim IS NULL THEN
			ok := got = want;
			detail := what || ': ' || cardinality(string_to_array(want, ';')) || ' rows'
				|| CASE WHEN ok THEN '' ELSE
				': expected [' || want || '] got [' || got || ']' END;
		ELSE
			g := string_to_array(got, ';');
			w := string_to_array(want, ';');
			SELECT cardinality(g) = least(lim, cardinality(w))
			   AND NOT EXISTS (
				SELECT 1
				  FROM (SELECT x, count(*) AS c FROM unnest(g) x GROUP BY x) a
				  LEFT JOIN (SELECT x, count(*) AS c FROM unnest(w) x GROUP BY x) b
				       USING (x)
				 WHERE b.c IS NULL OR a.c > b.c)
			  INTO ok;
			detail := what || ': ' || cardinality(g) || ' of ' || cardinality(w) || ' rows'
				|| CASE WHEN ok THEN '' ELSE ': limit ' || lim || ' of [' || want || '] got [' || got || ']' END;
		END IF;
		detail := replace(detail, E'\n', ' ');
		RETURN NEXT;
	END $f$;

	-- One error check: the peek must fail with this SQLSTATE.
	CREATE FUNCTION oracle_expect_error(id int, what text, peek_sql text, state text)
	RETURNS TABLE (check_id int, ok boolean, detail text)
	LANGUAGE plpgsql AS $f$
	DECLARE
		got text;
	BEGIN
		check_id := id;
		BEGIN
			EXECUTE peek_sql INTO got;
			ok := false;
			detail := what || ': expected ' || state || ', got rows [' || coalesce(got, '') || ']';
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			ok := SQLSTATE = state;
			detail := what || ': ' || SQLSTATE || ': ' || SQLERRM;
		END;
		detail := replace(detail, E'\n', ' ');
		RETURN NEXT;
	END $f$;
});

# ---- the model ---------------------------------------------------------------

# collections, their indexes and key columns
my @colls = (
	{ name => 'c1', indexes => [ [ 'c1_k', ['k'] ], [ 'c1_kv', [ 'k', 'v' ] ] ] },
	{ name => 'c2', indexes => [ [ 'c2_k', ['k'] ], [ 'c2_n', ['n'] ] ] },
	{ name => 'c3', indexes => [ [ 'c3_kv', [ 'k', 'v' ] ], [ 'c3_n', ['n'] ] ] },
);
my $late_index = 'c3_n';    # created half-way, over a compacted shard
my %key_of;                  # index => [key columns]
my %coll_of;                 # index => collection
my %allowed;                 # object => allowed since (what we asked)
my %floor;                   # object => lower bound on since seen at creation
my %exists;                  # object => 1 once created

my @V = ('a', 'b', 'c');
my @N = ('1', '1.0', '1.00', '2.5', '2.50', '0', '-3', '10');

sub pick { return $_[ int(rand(scalar @_)) ]; }

sub random_row
{
	my $k = 1 + int(rand(8));
	my $v = rand() < 0.05 ? undef : pick(@V);
	my $n = rand() < 0.05 ? undef : pick(@N);
	return [ $k, $v, $n ];
}

sub row_id  { my ($r) = @_; return join("\x1f", map { $_ // '\\N' } @$r); }
sub row_sql
{
	my ($r) = @_;
	return sprintf('ROW(%d, %s, %s)::orow', $r->[0],
		defined $r->[1] ? "'$r->[1]'"          : 'NULL::text',
		defined $r->[2] ? "'$r->[2]'::numeric" : 'NULL::numeric');
}

sub oracle_values
{
	my ($coll, $r, $t, $d) = @_;
	return sprintf("('%s', %d, %s, %s, %d, %d)", $coll, $r->[0],
		defined $r->[1] ? "'$r->[1]'"          : 'NULL::text',
		defined $r->[2] ? "'$r->[2]'::numeric" : 'NULL::numeric', $t, $d);
}

for my $c (@colls)
{
	$c->{upper} = 0;
	$c->{hist}  = {};    # row id => [[t, d], ...]
	$c->{rows}  = {};    # row id => row
	$c->{pool}  = [ map { random_row() } 1 .. 24 ];
	$allowed{ $c->{name} } = 0;
	for my $ix (@{ $c->{indexes} })
	{
		$key_of{ $ix->[0] }  = $ix->[1];
		$coll_of{ $ix->[0] } = $c->{name};
		$allowed{ $ix->[0] } = 0;
	}
}

sub count_at
{
	my ($c, $id, $t) = @_;
	my $sum = 0;
	for my $u (@{ $c->{hist}{$id} // [] }) { $sum += $u->[1] if $u->[0] <= $t; }
	return $sum;
}

# the smallest count of row $id at any time >= $t
sub min_from
{
	my ($c, $id, $t) = @_;
	my $min = count_at($c, $id, $t);
	for my $u (@{ $c->{hist}{$id} // [] })
	{
		next unless $u->[0] > $t;
		my $x = count_at($c, $id, $u->[0]);
		$min = $x if $x < $min;
	}
	return $min;
}

sub record_update
{
	my ($c, $r, $t, $d) = @_;
	my $id = row_id($r);
	$c->{rows}{$id} = $r;
	push @{ $c->{hist}{$id} }, [ $t, $d ];
}

# a row that may lose $m copies at time $t (undef if none)
sub retractable
{
	my ($c, $t, $m) = @_;
	my @ok = grep { min_from($c, $_, $t) >= $m } sort keys %{ $c->{hist} };
	return undef unless @ok;
	return $c->{rows}{ pick(@ok) };
}

sub new_row
{
	my ($c) = @_;
	return rand() < 0.8 ? pick(@{ $c->{pool} }) : random_row();
}

sub objects_of
{
	my ($c) = @_;
	return ($c->{name}, grep { $exists{$_} } map { $_->[0] } @{ $c->{indexes} });
}

# One random history step on collection $c: returns its SQL (one transaction).
sub random_step
{
	my ($c) = @_;
	my $name = $c->{name};
	my $r    = rand();

	if ($r < 0.40)
	{
		# append at upper or a little above it
		my $at = $c->{upper} + (rand() < 0.7 ? 0 : 1 + int(rand(2)));
		my $d  = pick(-2, -1, 1, 2, 3);
		my @rows;
		my $n = 1 + int(rand(3));
		if ($d < 0)
		{
			for (1 .. $n)
			{
				my $row = retractable($c, $at, -$d) or last;
				record_update($c, $row, $at, $d);
				push @rows, $row;
			}
			$d = -$d unless @rows;    # nothing to retract: insert instead
		}
		if ($d > 0)
		{
			for (1 .. $n)
			{
				my $row = new_row($c);
				record_update($c, $row, $at, $d);
				push @rows, $row;
			}
		}
		return sprintf(
			"BEGIN;\nSELECT peek.append('%s', ARRAY[%s], %d, %d);\n"
			  . "INSERT INTO oracle VALUES %s;\nCOMMIT;\n",
			$name, join(', ', map { row_sql($_) } @rows), $at, $d,
			join(', ', map { oracle_values($name, $_, $at, $d) } @rows));
	}
	elsif ($r < 0.60)
	{
		$c->{upper} += 1 + int(rand(3));
		return sprintf("SELECT peek.advance('%s', %d);\n", $name, $c->{upper});
	}
	elsif ($r < 0.90 || $c->{upper} < 2)
	{
		my $t = $c->{upper};
		my (@ins, @del);
		push @ins, new_row($c) for 1 .. int(rand(4));
		record_update($c, $_, $t, 1) for @ins;
		for (1 .. int(rand(3)))
		{
			my $row = retractable($c, $t, 1) or last;
			record_update($c, $row, $t, -1);
			push @del, $row;
		}
		$c->{upper} = $t + 1;
		my @vals = (
			(map { oracle_values($name, $_, $t, 1) } @ins),
			(map { oracle_values($name, $_, $t, -1) } @del));
		return sprintf(
			"BEGIN;\nSELECT peek.write('%s', %s%s);\n%sCOMMIT;\n",
			$name,
			@ins ? 'ARRAY[' . join(', ', map { row_sql($_) } @ins) . ']' : "'{}'::orow[]",
			@del ? ', ARRAY[' . join(', ', map { row_sql($_) } @del) . ']' : '',
			@vals ? 'INSERT INTO oracle VALUES ' . join(', ', @vals) . ";\n" : '');
	}
	else
	{
		# allow compaction of the collection or one of its indexes, to a time
		# between what is allowed now and upper - 1
		my $obj = pick(objects_of($c));
		my $top = $c->{upper} - 1;
		return '' if $top <= $allowed{$obj};
		my $s = $allowed{$obj} + 1 + int(rand($top - $allowed{$obj}));
		$allowed{$obj} = $s;
		return sprintf("SELECT peek.allow_compaction('%s', %d);\n", $obj, $s);
	}
}

# ---- checks ------------------------------------------------------------------

my $check_id = 0;
my %kind_count = (index => 0, persist => 0, compacted => 0, invalid => 0);
my %detail_of;    # check id => description, for failures

# lowest time at which $obj may be peeked (exact contents)
sub low_time
{
	my ($obj) = @_;
	my $lo = $allowed{$obj};
	$lo = $floor{$obj} if defined $floor{$obj} && $floor{$obj} > $lo;
	return $lo;
}

# a random key for $index: mostly the key of a row $c has had (so that lookups
# find rows), sometimes any value of the domain, a miss or a NULL
sub random_key
{
	my ($index, $c) = @_;
	my @cols = @{ $key_of{$index} };
	my (@sql, @pred, @show);
	my @ids = sort keys %{ $c->{hist} };
	my $from = @ids && rand() < 0.7 ? $c->{rows}{ pick(@ids) } : undef;
	my %pos = (k => 0, v => 1, n => 2);
	for my $col (@cols)
	{
		my $val = $from ? $from->[ $pos{$col} ] : undef;
		if ($from && !defined $val)
		{
			my $type = $col eq 'k' ? 'int' : $col eq 'v' ? 'text' : 'numeric';
			push @sql,  "NULL::$type";
			push @pred, "$col = NULL::$type";
			push @show, 'NULL';
		}
		elsif ($from && $col eq 'k')
		{
			push @sql,  $val;
			push @pred, "k = $val";
			push @show, $val;
		}
		elsif ($from && $col eq 'v')
		{
			push @sql,  "'$val'";
			push @pred, "v = '$val'";
			push @show, $val;
		}
		elsif ($from)
		{
			# numeric equality: the same value at another scale finds it too
			my $lit = rand() < 0.5 ? "'$val'::numeric" : "'$val'::numeric + 0.000";
			push @sql,  $lit;
			push @pred, "n = '$val'::numeric";
			push @show, $val;
		}
		elsif (rand() < 0.1)
		{
			my $type = $col eq 'k' ? 'int' : $col eq 'v' ? 'text' : 'numeric';
			push @sql,  "NULL::$type";
			push @pred, "$col = NULL::$type";
			push @show, 'NULL';
		}
		elsif ($col eq 'k')
		{
			my $k = int(rand(10));    # 0 and 9 hit nothing
			my $lit = rand() < 0.2 ? "${k}::bigint" : "$k";
			push @sql,  $lit;
			push @pred, "k = $k";
			push @show, $k;
		}
		elsif ($col eq 'v')
		{
			my $v = rand() < 0.1 ? 'zz' : pick(@V);
			push @sql,  "'$v'";
			push @pred, "v = '$v'";
			push @show, $v;
		}
		else
		{
			# numeric equality: any scale finds every row of equal value
			my $n = pick(@N, '1.000', '2.500000', '7');
			my $lit = rand() < 0.2 && $n =~ /^-?\d+$/ ? "${n}::int" : "'$n'::numeric";
			push @sql,  $lit;
			push @pred, "n = '$n'::numeric";
			push @show, $n;
		}
	}
	return ('ROW(' . join(', ', @sql) . ')', join(' AND ', @pred),
		'(' . join(', ', @show) . ')');
}

sub peek_text_sql
{
	my ($from) = @_;
	return "SELECT coalesce(string_agg(r::text, ';' ORDER BY r::text COLLATE \"C\"), '') FROM $from r";
}

sub oracle_text_sql
{
	my ($coll, $t, $pred) = @_;
	my $where = "coll = '$coll' AND t <= $t" . ($pred ? " AND ($pred)" : '');
	return "SELECT coalesce(string_agg(x, ';' ORDER BY x COLLATE \"C\"), '') FROM ("
	  . "SELECT ROW(g.k, g.v, g.nt::numeric)::orow::text AS x FROM ("
	  . "SELECT k, v, n::text AS nt, sum(d) AS c FROM oracle WHERE $where "
	  . "GROUP BY k, v, n::text HAVING sum(d) > 0) g, generate_series(1, g.c)) s";
}

sub dq { my ($s) = @_; return '$q$' . $s . '$q$'; }

# a random equality/limit check of index $index (or of the collection's shard
# when $index is undef), as one SQL statement
sub random_check
{
	my ($c, $index) = @_;
	my $obj = $index // $c->{name};
	my $lo  = low_time($obj);
	my $hi  = $c->{upper} - 1;
	return undef if $hi < $lo;
	my $t = $lo + int(rand($hi - $lo + 1));
	my $lim = rand() < 0.2 ? int(rand(6)) : undef;
	my ($peek, $pred, $what);
	$check_id++;

	if (defined $index)
	{
		my ($key_sql, $key_pred, $key_show) = (undef, undef, 'none');
		($key_sql, $key_pred, $key_show) = random_key($index, $c) if rand() < 0.75;
		$pred = $key_pred;
		$peek = "peek.index_peek(NULL::orow, '$index'"
		  . (defined $key_sql ? ", $key_sql" : '')
		  . ", as_of => $t"
		  . (defined $lim ? ", \"limit\" => $lim" : '') . ')';
		$what = "index $index t=$t key=$key_show" . (defined $lim ? " limit=$lim" : '');
		$kind_count{index}++;
	}
	else
	{
		# sometimes as_of NULL: the latest complete time, upper - 1
		my $null_asof = rand() < 0.1;
		$t = $hi if $null_asof;
		$peek = "peek.persist_peek(NULL::orow, '$obj'"
		  . ($null_asof ? '' : ", as_of => $t")
		  . (defined $lim ? ", \"limit\" => $lim" : '') . ')';
		$what = "persist $obj t=" . ($null_asof ? "NULL($t)" : $t)
		  . (defined $lim ? " limit=$lim" : '');
		$kind_count{persist}++;
	}
	$detail_of{$check_id} = [ $c->{name}, $what ];
	return sprintf("SELECT * FROM oracle_check(%d, %s, %s, %s, %s);\n",
		$check_id, dq($what), dq(peek_text_sql($peek)),
		dq(oracle_text_sql($c->{name}, $t, $pred)), $lim // 'NULL');
}

# a peek of $obj at a time below its since: 72000
sub compacted_check
{
	my ($c, $obj) = @_;
	my $lo = low_time($obj);
	return undef if $lo <= 0;
	my $t = int(rand($lo));
	my $peek;
	if ($obj eq $c->{name})
	{
		$peek = "peek.persist_peek(NULL::orow, '$obj', as_of => $t)";
	}
	else
	{
		my ($key_sql) = rand() < 0.5 ? random_key($obj, $c) : (undef);
		$peek = "peek.index_peek(NULL::orow, '$obj'"
		  . (defined $key_sql ? ", $key_sql" : '') . ", as_of => $t)";
	}
	$check_id++;
	my $what = "compacted $obj t=$t (since >= $lo)";
	$detail_of{$check_id} = [ $c->{name}, $what ];
	$kind_count{compacted}++;
	return sprintf("SELECT * FROM oracle_expect_error(%d, %s, %s, '72000');\n",
		$check_id, dq($what), dq(peek_text_sql($peek)));
}

sub run_checks
{
	my ($label, $script) = @_;
	return if $script eq '';
	my $out = $node->safe_psql('postgres', "SET statement_timeout = '20s';\n$script");
	for my $line (split /\n/, $out)
	{
		next if $line eq '' || $line eq 'SET';
		my ($id, $ok, $detail) = split /\|/, $line, 3;
		ok($ok eq 't', "$label check $id: $detail");
		if ($ok ne 't')
		{
			my $coll = $detail_of{$id}[0];
			diag("history of $coll (t, d, row):\n"
				  . $node->safe_psql('postgres',
					"SELECT t, d, ROW(k, v, n)::orow FROM oracle WHERE coll = '$coll' ORDER BY t, k, v, n::text, d"));
			diag("frontiers:\n"
				  . $node->safe_psql('postgres',
					"SELECT object, since, upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') ORDER BY object"));
		}
	}
}

sub allowed_reached_sql
{
	my @pairs = map { "('$_', $allowed{$_})" }
	  grep { $exists{$_} && $allowed{$_} > 0 } sort keys %allowed;
	return 'SELECT true' unless @pairs;
	return 'SELECT bool_and(f.since IS NOT NULL AND f.since >= a.s) FROM (VALUES '
	  . join(', ', @pairs)
	  . ') a(o, s) LEFT JOIN peek.frontiers f ON f.object = a.o AND f.runtime IN (\'maintenance\', \'solo\')';
}

# ---- the run -----------------------------------------------------------------

my $index_sql = '';
for my $c (@colls)
{
	$index_sql .= "SELECT peek.create_collection('$c->{name}', 'orow');\n";
	$exists{ $c->{name} } = 1;
	for my $ix (@{ $c->{indexes} })
	{
		next if $ix->[0] eq $late_index;
		$index_sql .= sprintf("SELECT peek.create_index('%s', '%s', '{%s}');\n",
			$ix->[0], $c->{name}, join(',', @{ $ix->[1] }));
		$exists{ $ix->[0] } = 1;
	}
}
$node->safe_psql('postgres', $index_sql);

for (my $phase = 1; $phase * $PHASE <= $STEPS; $phase++)
{
	# -- history
	my $sql = '';
	for (1 .. $PHASE)
	{
		$sql .= random_step($_) for @colls;
	}
	$node->safe_psql('postgres', $sql);

	if ($phase == int($STEPS / $PHASE / 2) && !$exists{$late_index})
	{
		# the late index hydrates from c3's shard, compacted to its allowance
		my ($c3) = grep { $_->{name} eq $coll_of{$late_index} } @colls;
		my $top = $c3->{upper} - 1;
		if ($top > $allowed{ $c3->{name} })
		{
			$allowed{ $c3->{name} } += 1 + int(rand($top - $allowed{ $c3->{name} }));
			$node->safe_psql('postgres',
				"SELECT peek.allow_compaction('$c3->{name}', $allowed{ $c3->{name} })");
		}
		ok(poll_until($node, allowed_reached_sql()),
			"phase $phase: since reached every allowance before $late_index is created");
		$node->safe_psql('postgres',
			sprintf("SELECT peek.create_index('%s', '%s', '{%s}')",
				$late_index, $c3->{name}, join(',', @{ $key_of{$late_index} })));
		$exists{$late_index} = 1;
		ok(poll_until($node,
				"SELECT count(*) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = '$late_index'", '1'),
			"$late_index is published");
		my $since = $node->safe_psql('postgres',
			"SELECT since FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = '$late_index'");
		$floor{$late_index} = $since;
		note "$late_index hydrated with since $since (collection allowance "
		  . "$allowed{$c3->{name}}, upper $c3->{upper})";
		cmp_ok($since, '>=', $allowed{ $c3->{name} },
			"$late_index since starts at or above its collection's since");
	}

	# -- the catalog agrees with the model
	my $want = join("\n", map { "$_->{name}|$_->{upper}" } @colls);
	# (polled: peek.collections shows the published uppers)
	ok(poll_until($node, 'SELECT name, upper FROM peek.collections ORDER BY name', $want),
		"phase $phase: collection uppers follow the history");

	# -- equality checks, possibly racing compaction and the index catch-up
	my $script = '';
	for my $c (@colls)
	{
		my @ix = grep { $exists{$_} } map { $_->[0] } @{ $c->{indexes} };
		for (1 .. $INDEX_CHECKS)
		{
			$script .= random_check($c, pick(@ix)) // '';
		}
		for (1 .. $PERSIST_CHECKS)
		{
			$script .= random_check($c, undef) // '';
		}
	}
	run_checks("phase $phase", $script);

	# -- compaction reaches every allowance; below it peeks are refused
	ok(poll_until($node, allowed_reached_sql()),
		"phase $phase: every object's since reached its allowance");
	$script = '';
	for my $c (@colls)
	{
		for my $obj (objects_of($c))
		{
			$script .= compacted_check($c, $obj) // '' if rand() < 0.7;
		}
	}
	run_checks("phase $phase compacted", $script);
}

# ---- one deliberate over-retraction: invalid data (22000) --------------------

{
	my ($c) = @colls;
	my $t = $c->{upper};
	my ($row) = grep { min_from($c, row_id($_), $t) > 0 }
	  map { $c->{rows}{$_} } sort keys %{ $c->{hist} };
	$row //= $c->{pool}[0];
	my $have = count_at($c, row_id($row), $t);
	my $d = -($have + 1);
	note sprintf('over-retraction: %s of %s at t=%d (count %d, diff %d)',
		row_sql($row), $c->{name}, $t, $have, $d);
	$node->safe_psql('postgres', sprintf(
		"BEGIN;\nSELECT peek.append('%s', ARRAY[%s], %d, %d);\n"
		  . "INSERT INTO oracle VALUES %s;\nCOMMIT;\nSELECT peek.advance('%s', %d);\n",
		$c->{name}, row_sql($row), $t, $d,
		oracle_values($c->{name}, $row, $t, $d), $c->{name}, $t + 1));
	record_update($c, $row, $t, $d);
	$c->{upper} = $t + 1;

	my $script = '';
	my @bad = (
		"peek.persist_peek(NULL::orow, '$c->{name}', as_of => $t)",
		"peek.index_peek(NULL::orow, 'c1_k', as_of => $t)",
		"peek.index_peek(NULL::orow, 'c1_k', ROW($row->[0]), as_of => $t)",
	);
	for my $peek (@bad)
	{
		$check_id++;
		$kind_count{invalid}++;
		$detail_of{$check_id} = [ $c->{name}, "invalid $peek" ];
		$script .= sprintf("SELECT * FROM oracle_expect_error(%d, %s, %s, '22000');\n",
			$check_id, dq("invalid data: $peek"), dq(peek_text_sql($peek)));
	}
	# just before it, everything is still exact
	if ($t - 1 >= low_time($c->{name}))
	{
		$check_id++;
		$kind_count{persist}++;
		my $what = "persist $c->{name} t=" . ($t - 1) . ' (before the over-retraction)';
		$detail_of{$check_id} = [ $c->{name}, $what ];
		$script .= sprintf("SELECT * FROM oracle_check(%d, %s, %s, %s, NULL);\n",
			$check_id, dq($what),
			dq(peek_text_sql("peek.persist_peek(NULL::orow, '$c->{name}', as_of => " . ($t - 1) . ')')),
			dq(oracle_text_sql($c->{name}, $t - 1, undef)));
	}
	run_checks('invalid', $script);
}

note sprintf('seed %d: %d checks (%d index, %d persist, %d compacted, %d invalid)',
	$seed, $check_id, @kind_count{qw(index persist compacted invalid)});
cmp_ok($kind_count{index} + $kind_count{persist}, '>=', 300,
	'at least 300 equality checks against the oracle');

$node->stop;
done_testing();
