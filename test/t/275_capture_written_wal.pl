# Capture rounds decode the WAL the server has written, not only what is
# flushed.  The server runs with
# synchronous_commit = off and wal_writer_delay = 10s, so the WAL writer
# leaves a partly filled last page unwritten for up to 10 s: what makes a
# lone commit visible promptly is the round writing that tail itself once it
# has waited 10 ms.
#
#  * A lone commit on a quiet server: 20 single-row INSERTs, each awaited in
#    the index (as_of NULL) before the next, each visible within 3 s (the
#    WAL writer alone leaves them up to 10 s: with the tail write taken
#    out, they were visible after 10 s at the median, 24 s at most).
#  * Records that straddle the written end, read again from their start by
#    the next round: transactions of rows from 10 bytes to 30 kB (TOAST
#    chunks), updates and deletes after CHECKPOINTs (full-page images larger
#    than a page), a 20k-row transaction, savepoints rolled back and aborted
#    transactions; while they run, the index is peeked at the latest time.
#    Afterwards, by index and by persist peek, the source holds exactly the
#    table's rows, and its shard no change twice.
#  * Strict serializable read-your-writes: with
#    pg_peek.isolation = 'strict serializable', 50 INSERTs, each seen by the
#    peek right after it.
#  * After a crash restart (immediate stop): the same contents, and capture
#    goes on.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_written',
	conf => ['synchronous_commit = off', 'wal_writer_delay = 10s', 'autovacuum = off']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int, v text);
	ALTER TABLE t ALTER COLUMN v SET STORAGE EXTERNAL;
	SELECT peek.create_source('src', 't');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'the source and its index are ready');

# ---- a lone commit on a quiet server --------------------------------------------

sql(q{
	CREATE TABLE waits (k int, ms float8);
	CREATE PROCEDURE insert_awaited(k0 int, n int) LANGUAGE plpgsql AS $$
	DECLARE t0 timestamptz;
	BEGIN
	  FOR i IN k0 .. k0 + n - 1 LOOP
	    PERFORM pg_sleep(0.05);
	    INSERT INTO t VALUES (i, 'lone ' || i);
	    COMMIT;
	    t0 := clock_timestamp();
	    WHILE NOT EXISTS (SELECT 1 FROM peek.index_peek(NULL::t, 't_k', ROW(i)))
	          AND clock_timestamp() < t0 + interval '30 s' LOOP
	      PERFORM pg_sleep(0.001);
	    END LOOP;
	    INSERT INTO waits VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
	    COMMIT;
	  END LOOP;
	END $$;
});
sql("CALL insert_awaited(1, 20)");
my ($n, $max, $p50) = split /\|/,
  sql("SELECT count(*), round(max(ms)), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))
		 FROM waits");
note("lone commits: $n, visible after p50 $p50 ms, max $max ms");
is($n, '20', 'twenty lone commits were awaited');
cmp_ok($max, '<', 3000,
	'each lone commit was visible within 3 s (the WAL writer would leave it up to 10 s)');

# ---- records straddling the written end ---------------------------------------------

# seeded: rows from 10 bytes to 30 kB, incompressible enough (md5 chains) to
# be TOASTed out of line in chunks
sql(q{
	CREATE FUNCTION blob(seed int, len int) RETURNS text LANGUAGE sql AS $$
	  SELECT left(string_agg(md5((seed * 100003 + g)::text), ''), len)
	    FROM generate_series(0, len / 32) g
	$$;
	CREATE PROCEDURE churn(rounds int) LANGUAGE plpgsql AS $$
	BEGIN
	  PERFORM setseed(0.275);
	  FOR r IN 1 .. rounds LOOP
	    IF r % 25 = 0 THEN
	      CHECKPOINT;
	    END IF;
	    INSERT INTO t SELECT 1000 + r * 10 + g, blob(r * 10 + g, (10 + random() * 30000)::int)
	      FROM generate_series(0, (random() * 6)::int) g;
	    UPDATE t SET v = blob(r, (10 + random() * 3000)::int) WHERE k % 97 = r % 97 AND k > 1000;
	    DELETE FROM t WHERE k % 89 = r % 89 AND k > 1000 AND random() < 0.5;
	    BEGIN
	      INSERT INTO t VALUES (-r, 'rolled back');
	      PERFORM 1 / 0;
	    EXCEPTION WHEN division_by_zero THEN
	      NULL;
	    END;
	    COMMIT;
	    IF r % 40 = 0 THEN
	      INSERT INTO t VALUES (-1000 - r, 'aborted');
	      ROLLBACK;
	    END IF;
	  END LOOP;
	  INSERT INTO t SELECT 100000 + g, 'bulk ' || g FROM generate_series(1, 20000) g;
	  COMMIT;
	END $$;
});
my $reader = start_bg($node, q{
	DO $$
	BEGIN
	  FOR i IN 1 .. 4000 LOOP
	    PERFORM count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(1));
	    PERFORM pg_sleep(0.001);
	  END LOOP;
	END $$;
});
sql("CALL churn(200)");
finish_bg($reader);

my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'src'");

# Every commit so far, read at a time after them all (as_of: the current WAL
# position; the peeks wait until the source has decoded that far).
sub check_contents
{
	my ($when) = @_;
	my $at = sql("SELECT pg_current_wal_insert_lsn() - '0/0'");
	my $by_key = "SELECT p.k, p.v FROM (SELECT DISTINCT k FROM t) x,
	                LATERAL peek.index_peek(NULL::t, 't_k', ROW(x.k), $at) p";
	my $persist = "SELECT * FROM peek.persist_peek(NULL::t, 'src', $at)";

	is(sql("SELECT count(*) FROM ($persist) p"), sql("SELECT count(*) FROM t"),
		"$when: the persist peek has as many rows as the table");
	is(sql("SELECT count(*) FROM ((SELECT * FROM t EXCEPT ALL $persist)
		      UNION ALL ($persist EXCEPT ALL SELECT * FROM t)) d"),
		'0', "$when: persist peek = the table's rows, exactly");
	is(sql("SELECT count(*) FROM ((SELECT k, v FROM t EXCEPT ALL $by_key)
		      UNION ALL ($by_key EXCEPT ALL SELECT k, v FROM t)) d"),
		'0', "$when: index peeks by every key = the table's rows, exactly");
	is(sql("SELECT count(*) FROM (SELECT 1 FROM $shard GROUP BY time, data
		      HAVING abs(sum(diff)) > 1) d"),
		'0', "$when: no change is in the shard twice");
}

cmp_ok(sql("SELECT count(*) FROM t WHERE length(v) > 8000"), '>', 50,
	'the churn left rows that are TOASTed out of line');
is(sql("SELECT count(*) FROM t WHERE k < 0"), '0', 'the rolled-back and aborted rows are not in the table');
check_contents('after the churn');

# ---- strict serializable read-your-writes ----------------------------------------------

sql(q{
	CREATE PROCEDURE strict_ryw(k0 int, n int, INOUT missed int DEFAULT 0) LANGUAGE plpgsql AS $$
	BEGIN
	  SET pg_peek.isolation = 'strict serializable';
	  FOR i IN k0 .. k0 + n - 1 LOOP
	    INSERT INTO t VALUES (i, 'strict ' || i);
	    COMMIT;
	    IF NOT EXISTS (SELECT 1 FROM peek.index_peek(NULL::t, 't_k', ROW(i))) THEN
	      missed := missed + 1;
	    END IF;
	  END LOOP;
	END $$;
});
is(sql("CALL strict_ryw(500000, 50)"), '0',
	'strict serializable: each of 50 INSERTs was seen by the peek right after it');

# ---- a crash restart -------------------------------------------------------------------

$node->stop('immediate');
$node->start;
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'after the crash: the index is ready again');
check_contents('after the crash');
sql("INSERT INTO t VALUES (600000, 'after the crash')");
is(sql("SET pg_peek.isolation = 'strict serializable';
		 SELECT v FROM peek.index_peek(NULL::t, 't_k', ROW(600000))"), 'after the crash',
	'after the crash: capture goes on');

done_testing();
