# Indexes over a source follow its capture rounds from the updates the
# rounds decoded, not by reading
# back from the shard what the round has just appended to it.
#
#  * The feed is used: 30 commits, each awaited in the index before the
#    next (a round each), do not scan the shard's time index
#    (pg_stat_all_indexes.idx_scan), which every range an index reads from
#    the shard does; a round with a TRUNCATE, whose retractions are written
#    through the shard and not decoded, is read from the shard (the count
#    rises).
#  * Fed, the answers are the table's: a seeded workload on a table with a
#    dropped column -- inserts of NULLs, empty, inline-compressed and
#    out-of-line TOASTed values, exact duplicates; updates of values and of
#    keys (leaving a TOASTed value alone); deletes; TRUNCATEs; rollbacks --
#    in many rounds, the maintenance runtime terminated while it runs.
#    Index peeks of two indexes (one created before, one half-way) and
#    persist peeks at every logged commit equal the table's contents logged
#    after that commit.  Rows loaded before the indexes (arranged from the
#    shard) are retracted by fed updates, so the images from both paths
#    must be the same bytes or those rows would stay.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;
use Time::HiRes qw(usleep);

srand(285285);

my $node = new_node('capture_feed', conf => ['autovacuum = off']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';

sql(q{
	CREATE EXTENSION pg_peek;
	-- hardly compressible, stored out of line
	CREATE FUNCTION longtext(n int) RETURNS text IMMUTABLE LANGUAGE sql AS
	  $$ SELECT string_agg(md5(n || '-' || g), '') FROM generate_series(1, 200) g $$;
	CREATE TABLE t (k int, junk int, v text);
	ALTER TABLE t DROP COLUMN junk;
	INSERT INTO t VALUES (1, 'a'), (1, 'a'), (2, NULL), (NULL, 'n'), (3, ''),
	                     (4, longtext(1)), (5, repeat('ab', 3000)), (6, 'x');
	CREATE TABLE olog (seq int PRIMARY KEY, l bigint, rows t[]);
	SELECT peek.create_source('src', 't');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);

	CREATE PROCEDURE insert_awaited(first int, n int) LANGUAGE plpgsql AS $$
	BEGIN
	  FOR i IN first .. first + n - 1 LOOP
	    INSERT INTO t VALUES (1000 + i, 'w' || i);
	    COMMIT;
	    WHILE (SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(1000 + i))) = 0 LOOP
	      PERFORM pg_sleep(0.002);
	    END LOOP;
	  END LOOP;
	END $$;
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'the source and its index are ready');

# ---- the feed is used ----------------------------------------------------------

my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");
my $time_idx_scans = qq{
	SELECT idx_scan FROM pg_stat_all_indexes
	 WHERE relid = '$shard'::regclass AND indexrelname LIKE '%time_idx'};
is(sql("SELECT count(*) FROM ($time_idx_scans) s"), '1', "the shard's time index is found");

my $next_key = 0;

# idx_scan once the runtime has flushed its statistics: it does so after a
# round's publications, at most once a second
sub flushed_scans
{
	usleep(1_200_000);
	sql("CALL insert_awaited($next_key, 1)");
	$next_key++;
	return sql($time_idx_scans);
}

my $before = flushed_scans();
sql("CALL insert_awaited($next_key, 30)");
$next_key += 30;
my $after = flushed_scans();
note "time index scans: $before -> $after over 31 fed rounds";
# each fold moving the shard's base on (at most one a pause of the writes,
# one a second under load) reads the new updates by the time index too; a
# round that read its range back would add one scan each, 31 or more
cmp_ok($after - $before, '<', 12,
	"31 rounds, each awaited in the index, read none of their ranges back from the shard");

sql("TRUNCATE t");
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k')", '0'),
	'the TRUNCATE reaches the index');

# ---- fed answers are the table's -------------------------------------------------

sql(q{
	TRUNCATE olog;
	INSERT INTO t VALUES (1, 'a'), (1, 'a'), (2, NULL), (NULL, 'n'), (3, ''),
	                     (4, longtext(1)), (5, repeat('ab', 3000)), (6, 'x'),
	                     (7, longtext(2)), (8, repeat('cd', 4000));
});
# the rows above come back from the shard: an index created now hydrates
# from it, and an index that hydrates again after the runtime's restart
my $seq = 0;

sub pick { return $_[ int(rand(scalar @_)) ]; }

sub rand_key { return rand() < 0.08 ? 'NULL' : 1 + int(rand(8)); }

sub rand_val
{
	return pick('NULL', "''", "'a'", "'x'", 'longtext(1)', 'longtext(2)',
		"repeat('ab', 3000)", "repeat('cd', 4000)");
}

sub rand_statement
{
	my $r = rand();
	my $k = 1 + int(rand(8));
	return 'INSERT INTO t VALUES ' . join(', ',
		map { '(' . rand_key() . ', ' . rand_val() . ')' } 1 .. 1 + int(rand(3))) . ';'
	  if $r < 0.30;
	return "INSERT INTO t SELECT k, v FROM t WHERE k = $k LIMIT 1;" if $r < 0.38;
	return 'UPDATE t SET v = ' . rand_val() . " WHERE k = $k;" if $r < 0.55;
	return 'UPDATE t SET k = ' . rand_key() . " WHERE k = $k;" if $r < 0.70;
	return "UPDATE t SET v = v WHERE k = $k;" if $r < 0.75;
	return "DELETE FROM t WHERE ctid = (SELECT ctid FROM t WHERE k = $k LIMIT 1);"
	  if $r < 0.88;
	return "DELETE FROM t WHERE k = $k;";
}

my %kinds;

sub workload
{
	my ($n, $pause) = @_;
	my $script = '';
	for (1 .. $n)
	{
		$seq++;
		my @stmts;
		push @stmts, 'TRUNCATE t;' if rand() < 0.03;
		push @stmts, rand_statement() for 1 .. 1 + int(rand(3));
		my $rollback = rand() < 0.08;
		my $all = join(' ', @stmts);
		$kinds{truncate}++ if !$rollback && $all =~ /TRUNCATE/;
		$kinds{key_update}++ if !$rollback && $all =~ /SET k = /;
		$kinds{delete}++ if !$rollback && $all =~ /DELETE/;
		$kinds{rollback}++ if $rollback;
		$script .= "BEGIN;\n$all\n"
		  . ($rollback ? "ROLLBACK;\n" : "COMMIT;\n"
			  . "INSERT INTO olog SELECT $seq, pg_current_wal_insert_lsn() - '0/0', "
			  . "coalesce((SELECT array_agg(t) FROM t), '{}');\n");
		# spread the commits over rounds
		$script .= 'SELECT pg_sleep(' . ($pause // 0.004) . ");\n" if rand() < 0.3;
	}
	return $script;
}

sql(workload(60));
sql("SELECT peek.create_index('t_v', 'src', ARRAY['v'])");
sql(workload(40));
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_v'", 'ready'),
	'the index created half-way is ready');

# the runtime that arranges terminated while a workload runs
my $script = workload(100, 0.02);
my $psql = $node->can('installed_command') ? $node->installed_command('psql') : 'psql';
my ($bg_out, $bg_err) = ('', '');
my $bg = IPC::Run::start(
	[ $psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
	'<', \$script, '>', \$bg_out, '2>', \$bg_err);
usleep(300_000);
my ($pid, $restarts) = split /\|/,
  sql("SELECT pid, restarts FROM peek.runtimes WHERE role = '$maint'");
is(sql("SELECT pg_terminate_backend($pid, 10000)"), 't', "the $maint runtime is terminated");
my $seq_at_stop = sql('SELECT max(seq) FROM olog');
$bg->finish;
is($? >> 8, 0, 'the workload ran through') or diag($bg_err);
cmp_ok(sql('SELECT max(seq) FROM olog'), '>', $seq_at_stop,
	'it committed more after the runtime stopped');
ok( poll_until($node,
		"SELECT pid <> $pid AND state = 'running' AND restarts > $restarts "
		  . "FROM peek.runtimes WHERE role = '$maint'"),
	"the $maint runtime is back");
sql(workload(60));
note 'workload: ' . join(', ', map { "$_ $kinds{$_}" } sort keys %kinds);
is(join(',', grep { !$kinds{$_} } qw(truncate key_update delete rollback)), '',
	'the workload has every kind of transaction');

# every logged commit: both indexes and the persist peek at its time
my $checks = sql(q{
	SET statement_timeout = '60s';
	SELECT count(*) || ' checked, failed: '
	       || coalesce(string_agg(what || ' seq ' || seq, ', ') FILTER (WHERE got IS DISTINCT FROM want), 'none')
	  FROM (SELECT o.seq, p.what,
	               (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	                  FROM unnest(o.rows) r) AS want,
	               CASE p.what
	                 WHEN 't_k' THEN (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	                                    FROM peek.index_peek(NULL::t, 't_k', as_of => o.l) r)
	                 WHEN 't_v' THEN (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	                                    FROM peek.index_peek(NULL::t, 't_v', as_of => o.l) r)
	                 ELSE (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	                         FROM peek.persist_peek(NULL::t, 'src', as_of => o.l) r)
	               END AS got
	          FROM olog o,
	               (VALUES ('t_k'), ('t_v'), ('persist')) p(what)
	         -- t_v was created after the 60th transaction
	         WHERE p.what <> 't_v' OR o.seq > 60) c;
});
$checks =~ s/^SET\n//;
my $ncommits = sql('SELECT count(*) FROM olog');
cmp_ok($ncommits, '>', 150, "$ncommits commits logged");
like($checks, qr/failed: none$/, "index and persist peeks at every logged commit: $checks");

# keyed lookups through both indexes at the last commit, and the table now
is( sql(q{
	SELECT count(*) FILTER (WHERE NOT ok) || '/' || count(*) FROM (
	  SELECT (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	            FROM peek.index_peek(NULL::t, 't_k', ROW(kk.k), as_of => o.l) r)
	       = (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	            FROM unnest(o.rows) r WHERE r.k = kk.k) AS ok
	    FROM (SELECT l, rows FROM olog ORDER BY seq DESC LIMIT 1) o,
	         (SELECT NULL::int AS k UNION ALL SELECT generate_series(1, 8)) kk
	  UNION ALL
	  SELECT (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	            FROM peek.index_peek(NULL::t, 't_v', ROW(vv.v), as_of => o.l) r)
	       = (SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}')
	            FROM unnest(o.rows) r WHERE r.v = vv.v)
	    FROM (SELECT l, rows FROM olog ORDER BY seq DESC LIMIT 1) o,
	         (VALUES (NULL), (''), ('a'), ('x'), (longtext(1)), (longtext(2)),
	                 (repeat('ab', 3000)), (repeat('cd', 4000))) vv(v)) s}),
	'0/17', 'keyed lookups at the last commit, TOASTed keys too (a NULL key finds nothing)');
my $current = q{SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') FROM t r};
ok( poll_until($node,
		q{SELECT coalesce(array_agg(r::text ORDER BY r::text COLLATE "C"), '{}') = (}
		  . $current . q{) FROM peek.index_peek(NULL::t, 't_k') r}),
	'the index reaches the current table');

$node->stop;
done_testing();
