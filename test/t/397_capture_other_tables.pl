# Every source's slot reads the whole database's WAL.  Once a replay has
# shown that a relfilenode is another table's, a source's rounds skip that
# table's heap changes unread (rounds.c, other_tables_change) instead of
# queueing them in the reorder buffer, spilling them past
# logical_decoding_work_mem and dropping them at the commit.  What must
# hold: the source still gets every change of its own table, in
# transactions that interleave them with the other table's (updates,
# deletes, TOASTed values, multi-inserts, INSERT ... ON CONFLICT on both),
# and a table whose files are swapped with the source's (what pg_repack
# does: a catalog update) is not skipped after the swap.  And what it is
# for: a big transaction of the other table no longer spills.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }



sub spilled
{
	return sql(q{SELECT coalesce(sum(spill_bytes), 0) FROM pg_stat_replication_slots
				  WHERE slot_name LIKE 'pg_peek%'});
}

sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	CREATE TABLE x (k int PRIMARY KEY, v int, t text);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	ALTER TABLE x ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('s_src', 's');
	-- files swapped like pg_repack's: no index to point into the other file
	CREATE TABLE s2 (k int, v int);
	CREATE TABLE s2copy (k int, v int);
	INSERT INTO s2 SELECT i, i FROM generate_series(1, 100) i;
	SELECT peek.create_source('s2_src', 's2');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');

# the other tables' changes replayed once: their relfilenodes noted
sql("INSERT INTO x SELECT i, i, NULL FROM generate_series(1, 100) i");
sql("INSERT INTO s2copy SELECT * FROM s2");
ok(sources_caught_up($node), 'the sources decoded the other tables\' first writes');

# transactions interleaving the source's changes with the other table's
my $big = q{(SELECT string_agg(md5(g::text || random()::text), '') FROM generate_series(1, 300) g)};
sql(qq{
	BEGIN;
	INSERT INTO x SELECT i, i, $big FROM generate_series(101, 120) i;
	INSERT INTO s SELECT i, i, $big FROM generate_series(1, 20) i;
	UPDATE x SET v = v + 1, t = $big WHERE k <= 10;
	UPDATE s SET v = v + 1 WHERE k <= 10;
	UPDATE s SET t = $big || 'u' WHERE k = 3;
	DELETE FROM x WHERE k BETWEEN 11 AND 15;
	DELETE FROM s WHERE k BETWEEN 11 AND 15;
	INSERT INTO x VALUES (1, -1, 'c'), (500, 500, 'n') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO s VALUES (1, -1, 'c'), (500, 500, 'n') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO x VALUES (2, 0, 'n') ON CONFLICT DO NOTHING;
	INSERT INTO s VALUES (2, 0, 'n'), (501, 0, 'n') ON CONFLICT DO NOTHING;
	COMMIT;
});
# multi-inserts (COPY) of both in one transaction
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/rows.csv") or die;
print $fh "$_,$_,r$_\n" for (1000 .. 1999);
close($fh);
chmod 0644, "$dir/rows.csv";
chmod 0755, $dir;
sql(qq{
	BEGIN;
	COPY x FROM '$dir/rows.csv' (FORMAT csv);
	COPY s FROM '$dir/rows.csv' (FORMAT csv);
	UPDATE x SET v = 0 WHERE k >= 1000;
	COMMIT;
});
ok(sources_caught_up($node), 'the sources decoded the interleaved transactions');
is(source_off($node, 's', 's_src'), '0', 's_src holds exactly s\'s rows');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::s, 's_src') WHERE length(t) > 9000"), '15',
	's_src has the TOASTed values (20 inserted, 5 deleted)');

# a big transaction of the other table alone spills nowhere now
my $spilled = spilled();
sql("INSERT INTO x SELECT i, i, repeat('y', 200) FROM generate_series(10000, 40000) i");
ok(sources_caught_up($node), 'the sources decoded the other table\'s big transaction');
sql("SELECT pg_stat_force_next_flush()");
is(spilled(), $spilled, 'no slot spilled the other table\'s 30,000 rows');

# s2's files swapped with s2copy's, whose changes were skipped: s2's
# changes after the swap (in s2copy's old file) must be decoded
sql(q{
	BEGIN;
	LOCK TABLE s2, s2copy IN ACCESS EXCLUSIVE MODE;
	UPDATE pg_class SET relfilenode = CASE oid
	    WHEN 's2'::regclass THEN (SELECT relfilenode FROM pg_class WHERE oid = 's2copy'::regclass)
	    ELSE (SELECT relfilenode FROM pg_class WHERE oid = 's2'::regclass) END
	  WHERE oid IN ('s2'::regclass, 's2copy'::regclass);
	COMMIT;
});
sql(q{
	INSERT INTO s2 VALUES (1000, 1000);
	UPDATE s2 SET v = -v WHERE k <= 10;
	DELETE FROM s2 WHERE k BETWEEN 11 AND 20;
	INSERT INTO s2copy VALUES (7, 7);
});
ok(sources_caught_up($node), 'the sources decoded the writes after the swap');
is(source_off($node, 's2', 's2_src'), '0', 's2_src holds exactly s2\'s rows after its files were swapped');
is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready', 'no source failed');
log_is_clean($node, 'capture of other tables');

done_testing();
