# A fold sorts the rows it folds by row (a tuplesort), so that it stays
# within maintenance_work_mem however many it folds: past it (1MB here: a
# few thousand rows) in temporary files.  Before, it summed them in hash
# tables of about 440 bytes a row (4.4 GB for a 10M-row load).  With the
# sort in temporary files:
#  * a load, then deletes, re-inserts and second copies of folded rows,
#    peeked at every time against the updates kept in a plain table, with
#    the history after the since kept (a compaction folds some updates
#    away as it goes);
#  * a row whose count leaves bigint's range (flagged base rows in parts)
#    folded in, then retracted by later folds: its base rows are replaced,
#    then gone;
#  * the base holds each row once;
#  * a shard read whole (its rows index dropped) compacted to its since,
#    and a captured TRUNCATE's retraction of every row, sorted the same way.
# The sort logs (DEBUG1) that it went to temporary files: each of these
# folds did.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('fold_sorted',
	conf => ["maintenance_work_mem = '1MB'", 'log_min_messages = debug1']);
my $M = '9223372036854775807';

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	CREATE TABLE updates (name text, k int, v text, t bigint, d numeric);});

# append to $name at time $t, each row of $rows (a query of k, v) with $d copies
sub add
{
	my ($name, $t, $d, $rows) = @_;
	sql("INSERT INTO updates SELECT '$name', k, v, $t, $d FROM ($rows) r(k, v);
		 SELECT peek.append('$name', ARRAY(SELECT (k, v)::kv FROM ($rows) r(k, v)), $t, $d)");
	return;
}

sub xs { my ($from, $to) = @_; return "SELECT g, 'x' || g FROM generate_series($from, $to) g"; }

# the contents at $t, written out row by row: the peek's and the updates'
sub contents
{
	my ($name, $t) = @_;
	my $peek = sql("SET statement_timeout = '60s'; SELECT count(*) || ' ' || "
		  . "md5(string_agg(k || ':' || v, ',' ORDER BY k, v)) "
		  . "FROM peek.persist_peek(NULL::kv, '$name', as_of => $t)");
	my $expected = sql("SELECT count(*) || ' ' || md5(string_agg(k || ':' || v, ',' ORDER BY k, v)) "
		  . "FROM (SELECT k, v, sum(d)::int AS c FROM updates WHERE name = '$name' AND t <= $t "
		  . "GROUP BY k, v) s, generate_series(1, c)");
	is($peek, $expected, "$name: contents at $t");
	return;
}

sub shard { return sql("SELECT shard FROM peek.collections WHERE name = '$_[0]'"); }

# how many times the rows of $name's shard were sorted in temporary files for $what
sub sorted_folds
{
	my ($name, $what) = @_;
	return sorted_in_temp_files($node, $name, $what // 'a fold', 'maintenance_work_mem \(1024 kB\)');
}

sub once_in_base
{
	my ($name) = @_;
	my $shard = shard($name);
	is(sql("SELECT count(*) - count(DISTINCT data) FROM $shard WHERE time = -1 AND diff > 0 "
		  . "AND data NOT IN (SELECT data FROM $shard WHERE time = -1 AND diff = 0)"),
		'0', "$name: each row once in the base (but flagged ones)");
	return;
}

# ---- a load, then changes of its rows, with a since -------------------------
sql("SELECT peek.create_collection('h', 'kv')");
add('h', 1, 1, xs(1, 20000));
add('h', 2, -1, xs(1, 5000));
add('h', 2, 1, xs(20001, 25000));
sql("SELECT peek.advance('h', 3)");
ok(base_reaches($node, 'h', 2, 300), 'h: the base takes the load in');
contents('h', $_) for (1, 2);

# second copies, deletes and re-inserts of folded rows, new rows twice
add('h', 3, 1, xs(5001, 10000));
add('h', 3, -1, xs(10001, 12000));
add('h', 3, 1, xs(1, 1000));
add('h', 4, -1, xs(5001, 6000));
add('h', 4, 2, xs(30001, 33000));
add('h', 5, -1, xs(6001, 9000));
add('h', 5, 1, xs(40001, 45000));
add('h', 6, 1, xs(1, 1000));
sql("SELECT peek.advance('h', 7); SELECT peek.allow_compaction('h', 4)");
ok(poll_until($node, "SELECT since = 4 AND base_time >= 6 FROM peek.objects WHERE name = 'h'", 't', 300),
	'h: the since takes 4 in, the base the rest');
contents('h', $_) for (4, 5, 6);
is(sql("SELECT count(*) FROM " . shard('h') . " WHERE time BETWEEN 0 AND 4"), '0',
	'h: no update at or before the since is left');
cmp_ok(sql("SELECT count(*) FROM " . shard('h') . " WHERE time > 4"), '>', 0,
	'h: the history after the since is kept');
once_in_base('h');
cmp_ok(sorted_folds('h'), '>=', 2, 'h: the folds sorted in temporary files');

# ---- a count out of bigint's range: flagged base rows ----------------------
sql("SELECT peek.create_collection('g', 'kv')");
add('g', 1, 1, xs(1, 10000));
add('g', 1, $M, "SELECT 0, 'big'");
add('g', 2, $M, "SELECT 0, 'big'");
add('g', 2, 1, xs(10001, 20000));
sql("SELECT peek.advance('g', 3)");
ok(base_reaches($node, 'g', 2, 300), 'g: the base takes the big count in');
is(sql("SELECT string_agg(diff::text, ' ' ORDER BY diff) FROM " . shard('g')
	  . " WHERE time = -1 AND data = ROW(0, 'big')::kv"),
	"0 $M $M", 'g: the big count is in parts, flagged');
once_in_base('g');
my $before = sorted_folds('g');
cmp_ok($before, '>=', 1, 'g: the fold sorted in temporary files');
add('g', 3, "-$M", "SELECT 0, 'big'");
add('g', 3, -1, xs(1, 10000));
add('g', 4, "-$M", "SELECT 0, 'big'");
add('g', 4, 1, xs(1, 5000));
sql("SELECT peek.advance('g', 5)");
ok(base_reaches($node, 'g', 4, 300), 'g: the base takes the retractions in');
is(sql("SELECT count(*) FROM " . shard('g') . " WHERE time = -1 AND data = ROW(0, 'big')::kv"),
	'0', 'g: the retracted big count has no base row left');
contents('g', 4);
once_in_base('g');
cmp_ok(sorted_folds('g'), '>', $before, 'g: the fold of the retractions too');

# ---- a shard read whole (its rows index dropped): compaction ---------------
sql("SELECT peek.create_collection('w', 'kv')");
sql("DROP INDEX " . shard('w') . "_rows");
add('w', 1, 1, xs(1, 20000));
add('w', 2, -1, xs(1, 5000));
add('w', 2, 2, xs(20001, 25000));
add('w', 3, 1, xs(1, 1000));
sql("SELECT peek.advance('w', 4); SELECT peek.allow_compaction('w', 2)");
ok(poll_until($node, "SELECT since = 2 AND base_time = 2 FROM peek.objects WHERE name = 'w'", 't', 300),
	'w: read whole, the base moves to the since');
is(sql("SELECT count(*) FROM " . shard('w') . " WHERE time BETWEEN 0 AND 2"), '0',
	'w: every row up to the since is a base row');
contents('w', $_) for (2, 3);
cmp_ok(sorted_folds('w', 'a fold of the shard read whole'), '>=', 1,
	'w: the fold of the shard read whole sorted in temporary files');

# ---- a captured TRUNCATE retracts every row --------------------------------
sql("CREATE TABLE t (k int, v text); INSERT INTO t SELECT g, 'x' || g FROM generate_series(1, 20000) g;
	 SELECT peek.create_source('t_src', 't')");
ok(poll_until($node, "SELECT count(*) = 20000 FROM peek.persist_peek(NULL::t, 't_src')", 't', 300),
	'TRUNCATE: the source loaded the table');
sql("TRUNCATE t; INSERT INTO t VALUES (1, 'after')");
ok(poll_until($node, "SELECT string_agg(k || ':' || v, ',') FROM peek.persist_peek(NULL::t, 't_src')",
		'1:after', 300),
	'TRUNCATE: every row before it retracted');
cmp_ok(sorted_folds('t_src', 'a retraction of everything'), '>=', 1,
	'TRUNCATE: the retraction sorted in temporary files');

log_is_clean($node, 'sorted folds');
$node->stop('fast');
done_testing();
