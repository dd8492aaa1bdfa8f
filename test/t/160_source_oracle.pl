# Randomized oracle of a source,
# seeded and reproducible: a random workload of transactions on a table,
# run one at a time from one session, with the table's full contents logged
# after every committed transaction. Index and persist peeks of the source at
# random logged times, and at times between two commits, equal the logged
# contents (as sorted multisets).
#
#  * The table (k int, v text, no key: duplicate rows are allowed) starts with
#    rows, so the initial load is checked too (its rows at one time, T0).
#  * Transactions: inserts (of short, empty, NULL and TOASTed values, and
#    exact duplicates of existing rows), updates of values, of keys (all rows
#    of a key or one of several identical rows, a TOASTed row whose value the
#    UPDATE leaves alone), no-op updates, deletes, bulk inserts that spill the
#    reorder buffer (logical_decoding_work_mem = 64kB), rolled-back
#    savepoints, occasional TRUNCATE, writes to another table in the same
#    transaction, and some whole rollbacks.
#  * Time of a commit (its commit record's LSN): the transaction's last
#    statement records M = pg_current_wal_insert_lsn() (below the commit
#    record), and right after the commit L = pg_current_wal_insert_lsn() (at
#    or above it). The contents after committed transaction i are the
#    source's contents at every t in [L_i, M_next - 1].
#  * Every distinct time in the shard lies in [M_i, L_i) of a committed
#    transaction i (or is T0): updates are stamped with commit LSNs.
#  * Then compaction: at and above the allowance the peeks are still exact,
#    below it they fail with 72000.
#  * as_of NULL: under 'strict serializable' it is the current table; under
#    'serializable' it reaches it.
#
# Seed: $PG_PEEK_ORACLE_SEED, or 160160. Every random choice comes from the
# seed (the table, not a Perl model, is the oracle).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $seed = $ENV{PG_PEEK_ORACLE_SEED};
$seed = 160160 unless defined $seed && $seed =~ /^\d+$/;
srand($seed);
note "pg_peek source oracle: seed $seed (set PG_PEEK_ORACLE_SEED to replay), "
  . 'interactive = ' . interactive_mode();

my $TXNS           = 160;    # workload transactions (two halves)
my $INDEX_CHECKS   = 140;
my $PERSIST_CHECKS = 60;

my $node = new_node('source_oracle', conf => ['logical_decoding_work_mem = 64kB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	-- a deterministic, hardly compressible value stored out of line (TOAST)
	CREATE FUNCTION longtext(n int) RETURNS text IMMUTABLE LANGUAGE sql AS
	  $$ SELECT string_agg(md5(n || '-' || g), '') FROM generate_series(1, 200) g $$;
	CREATE TABLE tbl (k int, v text);
	CREATE TABLE other (x int);                       -- not captured
	CREATE TABLE omark (seq int, m bigint);           -- M of each committed txn
	CREATE TABLE olog (seq int PRIMARY KEY, l bigint, rows tbl[]);  -- L and contents

	-- One check: the peek's rows equal the logged contents after txn `seq`
	-- restricted to `pred` (as sorted multisets; with a limit: `lim` of them).
	CREATE FUNCTION src_check(id int, what text, peek_sql text, seq int, pred text, lim bigint)
	RETURNS TABLE (check_id int, ok boolean, detail text)
	LANGUAGE plpgsql AS $f$
	DECLARE
		got text[];
		want text[];
		missing text;
		extra text;
	BEGIN
		check_id := id;
		BEGIN
			EXECUTE format('SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), ''{}'') FROM %s r', peek_sql)
			   INTO got;
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			ok := false;
			detail := what || ': peek failed: ' || SQLSTATE || ': ' || SQLERRM;
			RETURN NEXT;
			RETURN;
		END;
		EXECUTE format('SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), ''{}'') '
		               'FROM unnest((SELECT rows FROM olog WHERE seq = %s)) r WHERE %s', seq, pred)
		   INTO want;
		SELECT string_agg(left(x, 60), ' ; ') INTO missing
		  FROM (SELECT unnest(want) EXCEPT ALL SELECT unnest(got)) m(x);
		SELECT string_agg(left(x, 60), ' ; ') INTO extra
		  FROM (SELECT unnest(got) EXCEPT ALL SELECT unnest(want)) e(x);
		IF lim IS NULL THEN
			ok := got = want;
		ELSE
			ok := cardinality(got) = least(lim, cardinality(want)) AND extra IS NULL;
		END IF;
		detail := what || ': ' || cardinality(got) || ' of ' || cardinality(want) || ' rows'
			|| CASE WHEN ok THEN '' ELSE
			   ': missing [' || coalesce(missing, '') || '] extra [' || coalesce(extra, '') || ']' END;
		RETURN NEXT;
	END $f$;

	-- One error check: the peek fails with SQLSTATE `state`.
	CREATE FUNCTION src_expect_error(id int, what text, peek_sql text, state text)
	RETURNS TABLE (check_id int, ok boolean, detail text)
	LANGUAGE plpgsql AS $f$
	DECLARE
		n bigint;
	BEGIN
		check_id := id;
		BEGIN
			EXECUTE format('SELECT count(*) FROM %s r', peek_sql) INTO n;
			ok := false;
			detail := what || ': expected ' || state || ', got ' || n || ' rows';
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			ok := SQLSTATE = state;
			detail := what || ': ' || SQLSTATE || ': ' || SQLERRM;
		END;
		RETURN NEXT;
	END $f$;
});

# ---- the workload --------------------------------------------------------------

sub pick { return $_[ int(rand(scalar @_)) ]; }

my @WORDS = ('a', 'b', 'c', 'x y', '', 'é€', "quote's");

sub rand_key { return rand() < 0.06 ? 'NULL' : 1 + int(rand(10)); }

sub rand_val
{
	my $r = rand();
	return 'NULL' if $r < 0.08;
	return 'longtext(' . int(rand(5)) . ')' if $r < 0.18;
	my $w = pick(@WORDS);
	$w =~ s/'/''/g;
	return "'$w'";
}

sub rand_statement
{
	my $r = rand();
	my $k = 1 + int(rand(10));
	my $k2 = rand_key();
	if ($r < 0.30)
	{
		my @rows = map { '(' . rand_key() . ', ' . rand_val() . ')' } 1 .. 1 + int(rand(3));
		return 'INSERT INTO tbl VALUES ' . join(', ', @rows) . ';';
	}
	return "INSERT INTO tbl SELECT k, v FROM tbl WHERE k = $k LIMIT 1;" if $r < 0.36;
	return 'UPDATE tbl SET v = ' . rand_val() . " WHERE k = $k;" if $r < 0.46;
	return "UPDATE tbl SET k = $k2 WHERE k = $k;" if $r < 0.53;
	return "UPDATE tbl SET k = $k2 WHERE ctid = (SELECT ctid FROM tbl WHERE k = $k LIMIT 1);"
	  if $r < 0.60;
	return "UPDATE tbl SET k = $k2 WHERE ctid = "
	  . '(SELECT ctid FROM tbl WHERE length(v) > 1000 ORDER BY k, v LIMIT 1);'
	  if $r < 0.66;
	return "UPDATE tbl SET v = v WHERE k = $k;" if $r < 0.70;
	return "DELETE FROM tbl WHERE k = $k;" if $r < 0.78;
	return "DELETE FROM tbl WHERE ctid = (SELECT ctid FROM tbl WHERE k = $k LIMIT 1);"
	  if $r < 0.86;
	return "INSERT INTO tbl SELECT 100 + g % 7, 'bulk ' || g FROM generate_series(1, 400) g;"
	  if $r < 0.89;
	return "UPDATE tbl SET v = v || '!' WHERE k >= 100;" if $r < 0.91;
	return 'DELETE FROM tbl WHERE k >= 100;' if $r < 0.94;
	return "INSERT INTO other VALUES ($k);" if $r < 0.97;
	return 'SAVEPOINT s; ' . rand_statement() . ' ROLLBACK TO SAVEPOINT s;';
}

my $seq = 0;
my %fate;     # seq => 'commit' | 'rollback'
my %kinds;    # what the workload did, for the record

sub workload
{
	my ($n) = @_;
	my $sql = '';
	for (1 .. $n)
	{
		$seq++;
		my @stmts;
		push @stmts, 'TRUNCATE tbl;' if rand() < 0.04;
		push @stmts, rand_statement() for 1 .. 1 + int(rand(4));
		my $rollback = rand() < 0.1;
		$fate{$seq} = $rollback ? 'rollback' : 'commit';
		if (!$rollback)
		{
			my $all = join(' ', @stmts);
			$all =~ s/SAVEPOINT s; .*? ROLLBACK TO SAVEPOINT s;//g;
			$kinds{truncate}++ if $all =~ /TRUNCATE/;
			$kinds{toast_key_update}++ if $all =~ /length\(v\) > 1000/;
			$kinds{toast_insert}++ if $all =~ /INSERT INTO tbl VALUES.*longtext/;
			$kinds{key_update}++ if $all =~ /SET k = /;
			$kinds{bulk}++ if $all =~ /generate_series/;
			$kinds{delete}++ if $all =~ /DELETE/;
		}
		$kinds{savepoint}++ if join(' ', @stmts) =~ /SAVEPOINT/;
		$kinds{rollback}++ if $rollback;
		$sql .= "BEGIN;\n" . join("\n", @stmts) . "\n"
		  . "INSERT INTO omark VALUES ($seq, pg_current_wal_insert_lsn() - '0/0');\n"
		  . ($rollback ? "ROLLBACK;\n" : "COMMIT;\n"
			  . "INSERT INTO olog SELECT $seq, pg_current_wal_insert_lsn() - '0/0', "
			  . "coalesce((SELECT array_agg(t) FROM tbl t), '{}');\n");
	}
	sql($sql);
}

# ---- the source over a table with rows -----------------------------------------

sql(q{
	INSERT INTO tbl VALUES (1, 'a'), (1, 'a'), (2, 'b'), (3, NULL), (NULL, 'n'),
	                       (4, longtext(0)), (5, ''), (6, 'x y');
	INSERT INTO tbl SELECT g % 10 + 1, 'init ' || g FROM generate_series(1, 30) g;
	INSERT INTO olog SELECT 0, NULL, array_agg(t) FROM tbl t;
});
my $l_init = sql("SELECT pg_current_wal_insert_lsn() - '0/0'");
my ($rc, $out, $err) = $node->psql('postgres',
	"SELECT peek.create_source('src', 'tbl'::regclass)");
is($rc, 0, 'create_source succeeds');
like($err, qr/NOTICE:.*table "tbl" now has REPLICA IDENTITY FULL/,
	'create_source says it set REPLICA IDENTITY FULL');
is(sql("SELECT relreplident FROM pg_class WHERE oid = 'tbl'::regclass"), 'f',
	'the table has REPLICA IDENTITY FULL');
# an index created while the source loads
sql("SELECT peek.create_index('tbl_k', 'src', ARRAY['k'])");
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 'src'", 'ready'),
	'the source is ready');
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'tbl_k'", 'ready'),
	'its index is ready');
is( sql(q{SELECT slot_name || '|' || plugin || '|' || slot_type || '|' || database
	FROM pg_replication_slots}),
	sql(q{SELECT 'pg_peek_' || d.oid || '_' || o.id || '|pg_peek|logical|postgres'
	FROM pg_database d, peek.objects o WHERE d.datname = 'postgres' AND o.name = 'src'}),
	'one logical slot pg_peek_<dboid>_<id> with the pg_peek plugin');

my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");
my ($t0, $ntimes) = split /\|/,
  sql("SELECT min(time) || '|' || count(DISTINCT time) FROM $shard WHERE time >= 0");
is($ntimes, '1', 'the initial load is at one time');
cmp_ok($t0, '>=', $l_init, "the load time $t0 is after the rows' commit (below $l_init)");
is(sql("UPDATE olog SET l = $t0 WHERE seq = 0 RETURNING l"), $t0, 'the load is logged as seq 0');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::tbl, 'src', as_of => $t0 - 1)"), '0',
	'nothing before the load time');

workload($TXNS / 2);
# an index created half-way: it hydrates from the shard
sql("SELECT peek.create_index('tbl_v', 'src', ARRAY['v'])");
workload($TXNS / 2);
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'tbl_v'", 'ready'),
	'the late index is ready');

my @committed = grep { $fate{$_} eq 'commit' } 1 .. $seq;
note sprintf('%d transactions, %d committed', $seq, scalar @committed);
is(sql('SELECT count(*) FROM olog WHERE seq > 0'), scalar @committed, 'every commit is logged');
is(sql('SELECT count(*) FROM omark'), scalar @committed, 'no rolled-back mark survived');
note 'workload: ' . join(', ', map { "$_ $kinds{$_}" } sort keys %kinds);
my @kinds = qw(truncate toast_key_update toast_insert key_update bulk delete savepoint rollback);
is(join(',', grep { !$kinds{$_} } @kinds), '', 'the workload has every kind of transaction');
# the bulk inserts did not fit logical_decoding_work_mem
cmp_ok(sql('SELECT coalesce(sum(spill_txns), 0) FROM pg_stat_replication_slots'), '>', 0,
	'decoding spilled large transactions to disk');

# [lo, hi] of the contents after each committed seq (0: the load)
my %window;
for my $line (split /\n/, sql(q{
	SELECT o.seq, o.l, coalesce(lead(m.m) OVER (ORDER BY o.seq) - 1, -1)
	  FROM olog o LEFT JOIN omark m USING (seq) ORDER BY o.seq}))
{
	my ($s, $lo, $hi) = split /\|/, $line;
	$window{$s} = [ $lo, $hi ];
}
my $last = $committed[-1];
$window{$last}[1] = $window{$last}[0] + 1000;    # no more writes: open-ended
ok((!grep { $window{$_}[1] < $window{$_}[0] } keys %window),
	'every commit has a non-empty window [L_i, M_next - 1]');

# ---- checks ---------------------------------------------------------------------

my $check_id = 0;
my %counts = (index => 0, persist => 0, compacted => 0);

sub dq { return '$q$' . $_[0] . '$q$'; }

sub rand_time
{
	my ($s) = @_;
	my ($lo, $hi) = @{ $window{$s} };
	my $r = rand();
	return $lo if $r < 0.3;
	return $hi if $r < 0.6;
	return $lo + int(rand($hi - $lo + 1));
}

sub check_sql
{
	my ($s, $t, $kind, $min_seq) = @_;
	$check_id++;
	my $lim = rand() < 0.15 ? int(rand(5)) : undef;
	my ($peek, $pred, $what);
	if ($kind eq 'persist')
	{
		$peek = "peek.persist_peek(NULL::tbl, 'src', as_of => $t"
		  . (defined $lim ? ", \"limit\" => $lim" : '') . ')';
		$pred = 'true';
		$what = "persist seq=$s t=$t";
	}
	else
	{
		my $index = rand() < 0.7 ? 'tbl_k' : 'tbl_v';
		my ($key, $p);
		my $r = rand();
		if ($r < 0.2) { ($key, $p) = (undef, 'true'); }
		elsif ($index eq 'tbl_k')
		{
			my $k = $r < 0.3 ? pick('NULL::int', 0, 100, 103, 11) : 1 + int(rand(10));
			($key, $p) = ("ROW($k)", "r.k = $k");
		}
		else
		{
			my $v = pick((map { my $w = $_; $w =~ s/'/''/g; "'$w'" } @WORDS),
				'longtext(' . int(rand(5)) . ')', 'NULL::text', "'bulk 7'", "'init 3'");
			($key, $p) = ("ROW($v)", "r.v = $v");
		}
		$peek = "peek.index_peek(NULL::tbl, '$index'" . (defined $key ? ", $key" : '')
		  . ", as_of => $t" . (defined $lim ? ", \"limit\" => $lim" : '') . ')';
		$pred = $p;
		$what = "index $index seq=$s t=$t key=" . ($key // 'none');
	}
	$what .= " limit=$lim" if defined $lim;
	$counts{$kind}++;
	return sprintf("SELECT * FROM src_check(%d, %s, %s, %d, %s, %s);\n",
		$check_id, dq($what), dq($peek), $s, dq($pred), $lim // 'NULL');
}

sub run_checks
{
	my ($label, $script) = @_;
	my $out = sql("SET statement_timeout = '30s';\n$script");
	my $failed = 0;
	for my $line (split /\n/, $out)
	{
		next if $line eq '' || $line eq 'SET';
		my ($id, $ok, $detail) = split /\|/, $line, 3;
		ok($ok eq 't', "$label check $id: $detail") or $failed++;
	}
	if ($failed)
	{
		diag("olog windows (seq lo hi):\n"
			  . join("\n", map { "$_ @{$window{$_}}" } sort { $a <=> $b } keys %window));
		diag("shard (time, diff, data):\n"
			  . sql("SELECT time, diff, left(data::text, 40) FROM $shard ORDER BY time, data::text LIMIT 300"));
	}
}

my @seqs = (0, @committed);
my $script = '';
for (1 .. $INDEX_CHECKS)
{
	my $s = pick(@seqs);
	$script .= check_sql($s, rand_time($s), 'index');
}
for (1 .. $PERSIST_CHECKS)
{
	my $s = pick(@seqs);
	$script .= check_sql($s, rand_time($s), 'persist');
}
# the first and last moment of every logged contents, by persist peek
for my $s (@seqs)
{
	$script .= check_sql($s, $window{$s}[0], 'persist') if rand() < 0.5;
}
run_checks('history', $script);

# every update is stamped with the LSN of a committed transaction's commit
is( sql(qq{
	SELECT count(*) FROM (SELECT DISTINCT time FROM $shard WHERE time >= 0 AND time <> $t0) s
	 WHERE (SELECT count(*) FROM omark m JOIN olog o USING (seq)
	         WHERE m.m <= s.time AND s.time < o.l) <> 1}),
	'0', 'every shard time lies in [M_i, L_i) of exactly one committed transaction');
cmp_ok(sql("SELECT count(DISTINCT time) FROM $shard WHERE time >= 0 AND time <> $t0"), '>=',
	scalar(@committed) / 2, 'the shard holds the changes of many transactions');

# ---- as_of NULL ----------------------------------------------------------------------

my $current = q{SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') FROM tbl r};
my $want = sql($current);
my $strict_sql = q{
	SET pg_peek.isolation = 'strict serializable';
	SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') FROM peek.persist_peek(NULL::tbl, 'src') r;
	SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') FROM peek.index_peek(NULL::tbl, 'tbl_k') r;
};
is(join("\n", grep { $_ ne 'SET' } split /\n/, sql($strict_sql)), "$want\n$want",
	'strict serializable, as_of NULL: persist and index peeks are the current table');
ok( poll_until($node,
		q{SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') = (}
		  . $current . q{) FROM peek.index_peek(NULL::tbl, 'tbl_v') r}),
	'serializable, as_of NULL: an index peek reaches the current table');

# ---- compaction ----------------------------------------------------------------------

my $mid = $committed[ int(@committed / 2) ];
my $since = $window{$mid}[0];
sql("SELECT peek.allow_compaction('src', $since); SELECT peek.allow_compaction('tbl_k', $since);"
	  . "SELECT peek.allow_compaction('tbl_v', $since);");
ok( poll_until($node,
		"SELECT bool_and(since >= $since) FROM peek.frontiers WHERE object IN ('src', 'tbl_k', 'tbl_v') "
		  . "AND runtime IN ('maintenance', 'solo')"),
	"every object's since reached $since");
$script = '';
my @later = grep { $_ >= $mid } @committed;
for (1 .. 40)
{
	my $s = pick(@later);
	$script .= check_sql($s, rand_time($s), rand() < 0.6 ? 'index' : 'persist');
}
for my $i (1 .. 6)
{
	my $s = pick(grep { $_ < $mid } @seqs);
	my $t = $window{$s}[0];
	next if $t >= $since;
	$check_id++;
	$counts{compacted}++;
	my $peek = $i % 2
	  ? "peek.persist_peek(NULL::tbl, 'src', as_of => $t)"
	  : "peek.index_peek(NULL::tbl, 'tbl_k', ROW(1), as_of => $t)";
	$script .= sprintf("SELECT * FROM src_expect_error(%d, %s, %s, '72000');\n",
		$check_id, dq("compacted t=$t < $since"), dq($peek));
}
run_checks('after compaction', $script);
# the shard's contents: its base (at time -1) and the updates after the
# base's time (those before it are history the base has taken in)
is(sql(qq{SELECT count(*) FROM (SELECT data FROM $shard
	 WHERE time = -1 OR time > (SELECT coalesce(base_time, -1) FROM peek.objects WHERE shard = '$shard'::regclass)
	 GROUP BY data HAVING sum(diff) < 0) x}),
	'0', 'no row has a negative count in the shard');

note sprintf('seed %d: %d checks (%d index, %d persist, %d compacted)',
	$seed, $check_id, @counts{qw(index persist compacted)});
cmp_ok($counts{index} + $counts{persist}, '>=', 200, 'at least 200 equality checks');

$node->stop;
done_testing();
