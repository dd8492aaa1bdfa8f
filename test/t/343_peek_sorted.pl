# A persist peek sums what changed between the base and its time in memory
# only while the sums fit in work_mem (times hash_mem_multiplier, as a hash
# aggregate); past that it sorts the changes by row (a tuplesort, in
# temporary files past work_mem) and merges them with the base read
# through its rows index.  Before, it summed them in a hash table however
# many they were (about 170 bytes a row: 480 MB of backend memory for a
# peek over 2.9M updates of history).  With work_mem at 64kB:
#  * peeks at every time of a collection with multiplicities, a row that
#    goes negative then positive, NULLs, numerics 1.0 and 1.00 (distinct
#    rows), TOASTed values, rows deleted and added again, against the
#    updates kept in a plain table: counted, read row by row (the streamed
#    scan), through a SQL view, through the set-returning function, and
#    with limits;
#  * a row whose count leaves bigint's range (flagged base rows in parts)
#    peeked where its count is in range;
#  * rows of one row hash (found by scanning), merged by their images;
#  * a shard read whole (its rows index dropped), sorted whole;
#  * each of those peeks sorted in temporary files (the sort's DEBUG1 line);
#  * rows of 512kB: the sums' memory looked at after each row (the backend
#    grows by less than 64MB, not by 256 such rows);
#  * a peek canceled mid-sort leaves no temporary file, and the next is
#    exact; one past temp_file_limit fails with 53400.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('peek_sorted', conf => ['log_min_messages = debug1']);
my $M = '9223372036854775807';
my $tiny = "SET work_mem = '64kB';";

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TYPE r AS (k int, n numeric, v text);
	CREATE TABLE updates (name text, k int, n numeric, v text, t bigint, d numeric);});

# append to $name at time $t, each row of $rows (a query of k, n, v) with $d copies
sub add
{
	my ($name, $t, $d, $rows) = @_;
	sql("INSERT INTO updates SELECT '$name', k, n, v, $t, $d FROM ($rows) s(k, n, v);
		 SELECT peek.append('$name', ARRAY(SELECT (k, n, v)::r FROM ($rows) s(k, n, v)), $t, $d)");
	return;
}

sub xs
{
	my ($from, $to, $n) = @_;
	$n //= '1.0';
	return "SELECT g, $n, 'x' || g FROM generate_series($from, $to) g";
}

# a TOASTed value (hex digits: too few repeats to compress), of row g
sub big_value { return "(SELECT string_agg(md5($_[0]::text || i), '') FROM generate_series(1, 200) i)"; }

# a row as text that tells 1.0 from 1.00 and NULL from 'NULL'
my $row_text = "k || ':' || coalesce(n::text, '-') || ':' || coalesce(md5(v), '-')";

# the contents of $name at $t by the updates: a count and a digest
sub expected
{
	my ($name, $t) = @_;
	return sql("SELECT count(*) || ' ' || md5(string_agg(x, ',' ORDER BY x)) FROM "
		  . "(SELECT $row_text AS x, sum(d)::int AS c FROM updates WHERE name = '$name' AND t <= $t "
		  . "GROUP BY 1) s, generate_series(1, c)");
}

# how many times the sorted peeks of $name's shard went to temporary files
sub sorted_peeks
{
	my ($name, $what) = @_;
	return sorted_in_temp_files($node, $name, $what // 'a peek', 'work_mem \(64 kB\)');
}

# the contents of $name at $t, by every way of reading a peek, against the updates
sub contents
{
	my ($name, $t, $what) = @_;
	my $want = expected($name, $t);
	my $digest = "count(*) || ' ' || md5(string_agg(x, ',' ORDER BY x))";
	my $before = sorted_peeks($name, $what);
	is(sql("$tiny SELECT $digest FROM (SELECT $row_text AS x "
			  . "FROM peek.persist_peek(NULL::r, '$name', as_of => $t)) s"),
		$want, "$name: the rows at $t, streamed");
	is(sql("$tiny SELECT count(*) FROM peek.persist_peek(NULL::r, '$name', as_of => $t)"),
		(split / /, $want)[0], "$name: the count at $t");
	is(sql("$tiny SELECT $digest FROM (SELECT $row_text AS x "
			  . "FROM (SELECT (peek.persist_peek(NULL::r, '$name', $t)).*) p) s"),
		$want, "$name: the rows at $t, the set-returning function");
	sql("CREATE VIEW ${name}_at_$t AS SELECT * FROM peek.persist_peek(NULL::r, '$name', as_of => $t)");
	is(sql("$tiny SELECT $digest FROM (SELECT $row_text AS x FROM ${name}_at_$t) s"),
		$want, "$name: the rows at $t, through a view");
	# a limited peek: as many rows as asked, each one of the contents'
	my $all = (split / /, $want)[0];
	for my $limit (1, 100, 5000)
	{
		my $take = $limit < $all ? $limit : $all;
		is(sql("$tiny SELECT count(*) FROM peek.persist_peek(NULL::r, '$name', $t, $limit)"),
			$take, "$name: limit $limit at $t, counted");
		is(sql("$tiny SELECT count(*) FROM (SELECT $row_text FROM peek.persist_peek(NULL::r, '$name', $t, $limit) "
				  . "EXCEPT ALL SELECT $row_text FROM (SELECT k, n::text AS n, v, sum(d)::int AS c FROM updates "
				  . "WHERE name = '$name' AND t <= $t GROUP BY 1, 2, 3 HAVING sum(d) > 0) s, "
				  . "generate_series(1, c)) e"),
			'0', "$name: limit $limit at $t, each row one of the contents'");
	}
	cmp_ok(sorted_peeks($name, $what), '>=', $before + 4 + 6,
		"$name: the peeks at $t sorted in temporary files");
	return;
}

# ---- a collection of every kind of row -------------------------------------
sql("SELECT peek.create_collection('p', 'r'); SELECT peek.set_retention('p', NULL)");
add('p', 1, 1, xs(1, 20000));
add('p', 1, 2, "SELECT 0, NULL::numeric, NULL::text");
add('p', 1, 1, "SELECT g, 1.00, " . big_value('g') . " FROM generate_series(1, 20) g");
add('p', 2, -1, xs(1, 5000));
add('p', 2, 3, xs(20001, 25000));
add('p', 2, 1, xs(1, 3000, '1.00'));
add('p', 2, -1, "SELECT -2, 2.5, 'goes negative'");
add('p', 3, 2, "SELECT -2, 2.5, 'goes negative'");
add('p', 3, -1, "SELECT g, 1.00, " . big_value('g') . " FROM generate_series(1, 10) g");
add('p', 3, 1, xs(1, 1000));
add('p', 3, 1, "SELECT g, NULL::numeric, NULL::text FROM generate_series(1, 3000) g");
add('p', 4, 1, xs(25001, 31000));
add('p', 4, -2, "SELECT 0, NULL::numeric, NULL::text");
sql("SELECT peek.advance('p', 5)");
ok(base_reaches($node, 'p', 4, 300), 'p: the base takes every time in');
is(sql("SELECT count(*) > 0 FROM " . sql("SELECT shard FROM peek.collections WHERE name = 'p'")
	  . " WHERE pg_column_size(data) > 2000 AND time > 0"), 't', 'p: TOASTed rows in the history');
contents('p', $_) for (1, 3);
is( (sql_error($node, "$tiny SELECT count(*) FROM peek.persist_peek(NULL::r, 'p', as_of => 2)"))[0],
	'22000', 'p: at 2 a row has multiplicity -1, as in memory');

# ---- a count out of bigint's range: flagged base rows ----------------------
# the base holds 2 + 2 * M copies of big (in parts); at 1 it has 2
sql("SELECT peek.create_collection('g', 'r'); SELECT peek.set_retention('g', NULL)");
add('g', 1, 1, xs(1, 10000));
add('g', 1, 2, "SELECT 0, 1.0, 'big'");
add('g', 2, $M, "SELECT 0, 1.0, 'big'");
add('g', 2, 1, xs(10001, 20000));
add('g', 3, $M, "SELECT 0, 1.0, 'big'");
sql("SELECT peek.advance('g', 4)");
ok(base_reaches($node, 'g', 3, 300), 'g: the base takes the big count in');
is(sql("SELECT count(*) FILTER (WHERE diff = 0) || ' ' || count(*) FROM "
	  . sql("SELECT shard FROM peek.collections WHERE name = 'g'")
	  . " WHERE time = -1 AND data = ROW(0, 1.0, 'big')::r"), '1 4', 'g: the big count is in parts, flagged');
contents('g', 1);
is( (sql_error($node, "$tiny SELECT count(*) FROM peek.persist_peek(NULL::r, 'g', as_of => 2)"))[0],
	'22003', 'g: at 2 the count is out of range, as in memory');

# ---- rows of one hash: merged by their images ------------------------------
# pairs of rows with the same row hash (found by scanning), in the base, in
# the changes or both: the base rows of a hash come in tid order, the
# sorted ones in image order, and each row keeps its own count
my @pairs = map { [split / /] } split /,/, sql(
	"SELECT string_agg(a || ' ' || b, ',') FROM (SELECT min(g) a, max(g) b FROM "
	  . "(SELECT g, peek.row_hash((g, 1.0, 'c')::r) h FROM generate_series(1, 600000) g) s "
	  . "GROUP BY h HAVING count(*) = 2 ORDER BY 1 LIMIT 60) p");
is(scalar @pairs, 60, 'h: 60 pairs of rows with one hash');

# the first ($which 0) or second rows of pairs $from to $to
sub pair_rows
{
	my ($which, $from, $to) = @_;
	return "SELECT g, 1.0, 'c' FROM unnest(ARRAY["
	  . join(',', map { $_->[$which] } @pairs[$from .. $to]) . "]) g";
}
sql("SELECT peek.create_collection('h', 'r'); SELECT peek.set_retention('h', NULL)");
add('h', 1, 1, pair_rows(0, 0, 59));
add('h', 1, 1, xs(1, 20000));
add('h', 2, 1, pair_rows(1, 0, 19));
add('h', 2, -1, pair_rows(0, 20, 59));
add('h', 2, 1, pair_rows(1, 40, 59));
add('h', 2, 1, xs(20001, 30000));
add('h', 3, 2, pair_rows(0, 20, 29));
add('h', 3, 2, pair_rows(1, 0, 9));
add('h', 3, -1, pair_rows(0, 0, 4));
add('h', 3, -1, xs(1, 5000));
add('h', 4, -1, pair_rows(1, 40, 59));
add('h', 4, 1, pair_rows(1, 20, 24));
add('h', 4, 1, xs(30001, 40000));
sql("SELECT peek.advance('h', 5)");
ok(base_reaches($node, 'h', 4, 300), 'h: the base takes every time in');
contents('h', $_) for (1, 2, 3);

# ---- a shard read whole (its rows index dropped) ---------------------------
sql("SELECT peek.create_collection('w', 'r')");
sql("DROP INDEX " . sql("SELECT shard FROM peek.collections WHERE name = 'w'") . "_rows");
add('w', 1, 1, xs(1, 20000));
add('w', 2, -1, xs(1, 5000));
add('w', 2, 2, xs(20001, 25000));
add('w', 3, 1, xs(1, 1000, '1.00'));
sql("SELECT peek.advance('w', 4)");
contents('w', $_, 'a peek of the shard read whole') for (1, 3);

# ---- wide rows: the sums' memory looked at after each row ------------------
# 300 rows of 512kB (compressed in the shard, 512kB each in memory) changed
# between the base and the peek's time: the sums pass work_mem at the first,
# and the peek sorts them; the backend grows by a row or two and the sort's
# buffers, not by the 256 rows summed before the sums' memory was looked at
# (about 130MB).
sql("SELECT peek.create_collection('m', 'r'); SELECT peek.set_retention('m', NULL)");
for my $t (1, 2)
{
	sql("SELECT peek.append('m', ARRAY(SELECT (g, 1.0, repeat(md5(g::text), 16384))::r "
		  . "FROM generate_series(1, 300) g), $t, " . ($t == 1 ? 1 : -1) . ")");
}
sql("SELECT peek.advance('m', 3)");
ok(base_reaches($node, 'm', 2, 300), 'm: the base takes every time in');
my $peak = "substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') from 'VmHWM:\\s+(\\d+) kB')::int";
my $sorted = sorted_peeks('m');
my ($before, $rows, $after) = split /\n/,
  sql("$tiny SELECT $peak; SELECT count(*) FROM peek.persist_peek(NULL::r, 'm', 1, 1); SELECT $peak");
is($rows, '1', 'm: a row of 512kB at 1');
cmp_ok($after - $before, '<', 64 * 1024, "m: the peek's backend grew by less than 64MB");
is(sorted_peeks('m'), $sorted + 1, 'm: the peek sorted the rows in temporary files');

# ---- a cancel mid-peek, and temp_file_limit --------------------------------
sql("SELECT peek.create_collection('c', 'r'); SELECT peek.set_retention('c', NULL)");
add('c', 1, 1, xs(1, 200000));
add('c', 2, -1, xs(1, 200000));
add('c', 2, 1, xs(200001, 400000));
sql("SELECT peek.advance('c', 3)");
ok(base_reaches($node, 'c', 2, 300), 'c: the base takes every time in');
my ($rc, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\n$tiny SET statement_timeout = '20ms';
	 SELECT count(*) FROM peek.persist_peek(NULL::r, 'c', as_of => 1);
	 RESET statement_timeout;
	 SELECT 'temporary files ' || count(*) FROM pg_ls_tmpdir();
	 SELECT 'rows ' || count(*) FROM peek.persist_peek(NULL::r, 'c', as_of => 1);",
	on_error_stop => 0);
like($err, qr/57014/, 'c: the peek was canceled');
like($out, qr/^temporary files 0$/m, 'c: the canceled peek left no temporary file');
like($out, qr/^rows 200000$/m, 'c: the next peek in the session is exact');
my ($code, $msg) = sql_error($node,
	"$tiny SET temp_file_limit = '256kB'; SELECT count(*) FROM peek.persist_peek(NULL::r, 'c', as_of => 1)");
is($code, '53400', "c: a peek past temp_file_limit fails with 53400 ($msg)");
is(sql("SELECT count(*) FROM pg_ls_tmpdir()"), '0', 'c: and leaves no temporary file');

$node->stop('fast');
done_testing();
