# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's (record_filters.c), forgotten at each relcache
# invalidation, nothing skipped while a catalog-changing transaction is
# open.  Here every way PostgreSQL gives a table new files, of the other
# table and of the source, in and out of transactions that write both
# before and after: ALTER TABLE ... SET TABLESPACE (a copy to a new
# relfilenode) and back, ALTER COLUMN TYPE rewrites (one of the source
# with the same type, USING an expression: a rewrite it captures), CLUSTER,
# REINDEX, TRUNCATE of the other table then of the source in one
# transaction, a TRUNCATE between the source's writes of one transaction
# (and one rolled back to a savepoint), VACUUM FULL; then the noted table
# dropped and tables made, the source dropped and made again on a new
# table of the same name.  First, the other tables' TOASTed values (their
# chunks decoded, the row that carries them skipped) followed by a
# source's delete, by a write of a table without a TOAST table.  Each source must hold exactly its table's rows
# at the latest time and at every time recorded (as_of).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables_files',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my @at;

# every source exact now, and recorded for a read at this time later
sub exact
{
	my ($what, @sources) = @_;
	sources_exact($node, \@at, $what, @sources);
}

# every recorded time, read now
sub recorded_exact
{
	source_off_at($node, $_->[1], $_->[0]) for @at;
	@at = ();
}

my $ts = PostgreSQL::Test::Utils::tempdir;
sql("CREATE TABLESPACE elsewhere LOCATION '$ts'");
sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	CREATE TABLE x (k int PRIMARY KEY, v int, t text);
	CREATE TABLE o (k int PRIMARY KEY, v int, t text);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	ALTER TABLE o ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_source('x_src', 'x');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');
my @both = ([ 's', 's_src' ], [ 'x', 'x_src' ]);

my $big = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)};

# every table's first changes replayed: o, x noted by s_src, o, s by x_src
sql(qq{
	INSERT INTO o SELECT i, i, NULL FROM generate_series(1, 200) i;
	INSERT INTO x SELECT i, i, NULL FROM generate_series(1, 200) i;
	INSERT INTO s SELECT i, i, CASE WHEN i % 50 = 0 THEN $big END FROM generate_series(1, 200) i;
});
exact('first writes', @both);
sql(q{
	UPDATE o SET v = v + 1 WHERE k <= 20;
	UPDATE x SET v = v + 1 WHERE k <= 20;
	INSERT INTO s VALUES (201, 201, 'after the notes');
});
exact('the notes in place', @both);

# a TOASTed value of a noted table: its chunks (the TOAST table's inserts,
# decoded) come right before the row that carries it, whose change is
# skipped; decoding keeps the chunks for the next change of the
# transaction, which must carry them.  A delete of a source next (no new
# row: the server's maintenance runtime crashed, SIGSEGV), a write of a
# table without a TOAST table next (t2's source failed: could not open
# toast relation with OID 0), an update of the other table's TOASTed value
sql(q{
	CREATE TABLE t2 (k int PRIMARY KEY, v int);
	CREATE TABLE ow (k int, pad text, t text);
	ALTER TABLE ow ALTER COLUMN pad SET STORAGE PLAIN;
	ALTER TABLE ow ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('t2_src', 't2');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the source of a table without a TOAST table is loaded');
is(sql("SELECT reltoastrelid FROM pg_class WHERE oid = 't2'::regclass"), '0', 't2 has no TOAST table');
# (the source's creation made every source forget its notes: noted again)
sql(q{
	INSERT INTO t2 SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO ow VALUES (0, 'p', 't');
	UPDATE s SET v = v + 1 WHERE k = 1;
	UPDATE x SET v = v + 1 WHERE k = 1;
	UPDATE o SET v = v + 1 WHERE k = 1;
});
push @both, [ 't2', 't2_src' ];
exact('t2 noted', @both);
sql(qq{
	BEGIN;
	INSERT INTO s VALUES (301, 301, $big);
	DELETE FROM x WHERE k = 1;
	COMMIT;
});
exact('a source\'s delete after the other table\'s TOASTed row', @both);
sql(qq{
	BEGIN;
	INSERT INTO o VALUES (301, 301, $big);
	INSERT INTO t2 VALUES (301, 301);
	UPDATE o SET t = $big || 'u' WHERE k = 2;
	UPDATE t2 SET v = -v WHERE k <= 10;
	INSERT INTO s VALUES (302, 302, $big);
	INSERT INTO x VALUES (302, 302, 'x');
	UPDATE s SET t = $big || 'v' WHERE k = 3;
	DELETE FROM t2 WHERE k = 11;
	COMMIT;
});
exact('writes after the other tables\' TOASTed rows', @both);
# a TOASTed value replaced: the old value's chunks deleted between the new
# one's and the row that carries them
sql(qq{
	BEGIN;
	UPDATE o SET t = $big || 'w' WHERE k = 301;
	DELETE FROM x WHERE k = 2;
	UPDATE s SET t = $big || 'x' WHERE k = 302;
	DELETE FROM t2 WHERE k = 12;
	UPDATE o SET t = $big || 'y', v = 0 WHERE k = 301;
	INSERT INTO t2 VALUES (302, 302);
	COMMIT;
});
exact('writes after the other tables\' TOASTed values replaced', @both);
# a multi-insert (COPY) of TOASTed rows of a noted table, its rows wide
# enough that one call writes a record per page: the chunks of all of
# them first, kept until the last record's last row
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/wide.csv") or die;
print $fh "$_," . ('p' x 1200) . ',' . join('', map { sprintf('%08x', $_ * 7919 + $_) } 1 .. 400) . "\n"
  for (1 .. 120);
close($fh);
chmod 0644, "$dir/wide.csv";
chmod 0755, $dir;
sql(qq{
	BEGIN;
	COPY ow FROM '$dir/wide.csv' WITH (FORMAT csv);
	DELETE FROM x WHERE k = 3;
	INSERT INTO t2 VALUES (303, 303);
	COPY ow FROM '$dir/wide.csv' WITH (FORMAT csv);
	INSERT INTO t2 VALUES (304, 304);
	UPDATE s SET v = 0 WHERE k = 4;
	COMMIT;
});
exact('writes after a multi-insert of TOASTed rows', @both);
is(sql("SELECT count(*) FROM ow"), '241', 'the rows were copied');

# the other table moved to another tablespace in a transaction writing both
sql(qq{
	BEGIN;
	INSERT INTO o VALUES (1001, 1, 'before');
	INSERT INTO s VALUES (1001, 1, 'before');
	ALTER TABLE o SET TABLESPACE elsewhere;
	INSERT INTO o VALUES (1002, 2, $big);
	INSERT INTO s VALUES (1002, 2, 'after o moved');
	UPDATE o SET v = -v WHERE k <= 30;
	UPDATE s SET v = -v WHERE k <= 30;
	COMMIT;
});
sql(q{
	INSERT INTO o VALUES (1003, 3, 'moved');
	INSERT INTO s VALUES (1003, 3, 'o moved');
	DELETE FROM o WHERE k BETWEEN 31 AND 35;
	DELETE FROM s WHERE k BETWEEN 31 AND 35;
});
exact('the other table in another tablespace', @both);

# the source moved, between its own writes, and x (the other table of
# x_src's... and s_src's) too, then the source's writes outside
sql(qq{
	BEGIN;
	INSERT INTO s VALUES (2001, 1, 'before s moved');
	UPDATE x SET v = v + 1 WHERE k <= 10;
	ALTER TABLE s SET TABLESPACE elsewhere;
	INSERT INTO s VALUES (2002, 2, $big);
	UPDATE s SET v = v * 10 WHERE k BETWEEN 40 AND 60;
	INSERT INTO o VALUES (2002, 2, 'o');
	ALTER TABLE x SET TABLESPACE elsewhere;
	INSERT INTO x VALUES (2002, 2, 'x moved');
	DELETE FROM s WHERE k = 2001;
	COMMIT;
});
sql(q{
	INSERT INTO s VALUES (2003, 3, 's moved');
	INSERT INTO x VALUES (2003, 3, 'x moved');
	UPDATE o SET v = 0 WHERE k <= 5;
});
exact('the source in another tablespace', @both);

# all of them back, in one transaction, each written right after its move
sql(q{
	BEGIN;
	ALTER TABLE o SET TABLESPACE pg_default;
	INSERT INTO o VALUES (3001, 1, 'o back');
	INSERT INTO s VALUES (3001, 1, 'o back');
	ALTER TABLE s SET TABLESPACE pg_default;
	INSERT INTO s VALUES (3002, 2, 's back');
	INSERT INTO o VALUES (3002, 2, 's back');
	ALTER TABLE x SET TABLESPACE pg_default;
	UPDATE x SET v = v - 1 WHERE k <= 10;
	UPDATE s SET v = v - 1 WHERE k <= 10;
	COMMIT;
	INSERT INTO s VALUES (3003, 3, 'all back');
	INSERT INTO o VALUES (3003, 3, 'all back');
});
exact('all back in the default tablespace', @both);

# rewrites: the other table's column type changed, then the source
# rewritten to the same type by an expression (captured as a retraction
# of every row and the rewritten ones), writes around each
sql(q{
	BEGIN;
	INSERT INTO s VALUES (4001, 1, 'before the rewrites');
	UPDATE o SET v = v + 1 WHERE k <= 10;
	ALTER TABLE o ALTER COLUMN v TYPE bigint;
	INSERT INTO o VALUES (4001, 1, 'o rewritten');
	INSERT INTO s VALUES (4002, 2, 'o rewritten');
	ALTER TABLE s ALTER COLUMN v TYPE int USING v + 1000;
	INSERT INTO s VALUES (4003, 3, 's rewritten');
	UPDATE s SET v = -v WHERE k <= 10;
	INSERT INTO o VALUES (4003, 3, 's rewritten');
	COMMIT;
	INSERT INTO o VALUES (4004, 4, 'after');
	INSERT INTO s VALUES (4004, 4, 'after');
});
exact('ALTER COLUMN TYPE rewrites', @both);
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::s, 's_src') WHERE v > 1000 AND k < 4003"),
	sql("SELECT count(*) FROM s WHERE v > 1000 AND k < 4003"), 's_src has the rewritten values');

# CLUSTER, REINDEX and TRUNCATE of the other table, then of the source, in
# one transaction writing both between each
sql(q{
	BEGIN;
	INSERT INTO o VALUES (5001, 1, 'o');
	INSERT INTO s VALUES (5001, 1, 's');
	CLUSTER o USING o_pkey;
	INSERT INTO o VALUES (5002, 2, 'o clustered');
	INSERT INTO s VALUES (5002, 2, 'o clustered');
	CLUSTER s USING s_pkey;
	INSERT INTO s VALUES (5003, 3, 's clustered');
	UPDATE s SET v = v + 7 WHERE k BETWEEN 100 AND 120;
	INSERT INTO o VALUES (5003, 3, 's clustered');
	REINDEX TABLE o;
	REINDEX TABLE s;
	INSERT INTO s VALUES (5004, 4, 'reindexed');
	INSERT INTO o VALUES (5004, 4, 'reindexed');
	TRUNCATE o;
	INSERT INTO o SELECT i, i, 'o again' FROM generate_series(1, 100) i;
	INSERT INTO s VALUES (5005, 5, 'o truncated');
	TRUNCATE s;
	INSERT INTO s SELECT i, i, 's again' FROM generate_series(1, 100) i;
	INSERT INTO o VALUES (5006, 6, 's truncated');
	COMMIT;
	INSERT INTO o VALUES (5007, 7, 'after');
	INSERT INTO s VALUES (5007, 7, 'after');
	UPDATE x SET v = v + 1 WHERE k <= 3;
});
exact('CLUSTER, REINDEX, TRUNCATE of both in one transaction', @both);

# a TRUNCATE between the source's own writes of one transaction, one
# rolled back to a savepoint, with the other table written around them
sql(q{
	BEGIN;
	INSERT INTO s VALUES (6001, 1, 'gone with the truncate');
	UPDATE s SET v = -1 WHERE k <= 10;
	INSERT INTO o VALUES (6001, 1, 'o');
	TRUNCATE s;
	INSERT INTO s VALUES (6002, 2, 'after the truncate');
	SAVEPOINT a;
	TRUNCATE s, o;
	INSERT INTO s VALUES (6003, 3, 'rolled back');
	INSERT INTO o VALUES (6003, 3, 'rolled back');
	ROLLBACK TO a;
	INSERT INTO o VALUES (6004, 4, 'o');
	INSERT INTO s VALUES (6004, 4, 'kept');
	COMMIT;
	INSERT INTO s VALUES (6005, 5, 'after');
	INSERT INTO o VALUES (6005, 5, 'after');
});
exact('a TRUNCATE between the source\'s writes', @both);
is(sql("SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::s, 's_src')"),
	'6002,6004,6005', 's_src has only the rows after the TRUNCATE');

# VACUUM FULL of both, then a transaction writing both
sql("INSERT INTO s SELECT i, i, 'v' FROM generate_series(1, 300) i");
sql("DELETE FROM s WHERE k % 3 = 0");
sql("VACUUM FULL o");
sql("VACUUM FULL s");
sql("VACUUM FULL x");
sql(q{
	BEGIN;
	INSERT INTO o VALUES (7001, 1, 'o');
	INSERT INTO s VALUES (7001, 1, 'vacuumed');
	UPDATE s SET v = -v WHERE k <= 50;
	UPDATE x SET v = -v WHERE k <= 50;
	DELETE FROM o WHERE k <= 50;
	COMMIT;
});
exact('VACUUM FULL of all', @both);

# the noted table dropped, others made and written, then the source dropped
# and made again on a new table of the same name
sql(q{
	DROP TABLE o;
	CREATE TABLE o2 (k int PRIMARY KEY, v int, t text);
	CREATE TABLE o3 (k int, v int, t text);
	INSERT INTO o2 SELECT i, i, 'o2' FROM generate_series(1, 50) i;
	INSERT INTO o3 SELECT i, i, 'o3' FROM generate_series(1, 50) i;
	INSERT INTO s VALUES (8001, 1, 'o dropped');
});
exact('the noted table dropped', @both);
recorded_exact();
sql(q{
	SELECT peek.drop_source('s_src');
	DROP TABLE s;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	INSERT INTO s SELECT i, i, 'new s' FROM generate_series(1, 20) i;
	SELECT peek.create_source('s_src2', 's');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the new source is loaded');
sql(q{
	INSERT INTO o2 SELECT i, i, 'o2' FROM generate_series(51, 100) i;
	INSERT INTO o3 SELECT i, i, 'o3' FROM generate_series(51, 100) i;
	INSERT INTO s VALUES (9001, 1, 'new');
});
sql(q{
	BEGIN;
	UPDATE o2 SET v = -v;
	UPDATE s SET v = -v WHERE k <= 10;
	TRUNCATE o3;
	INSERT INTO s VALUES (9002, 2, 'new');
	INSERT INTO o3 VALUES (1, 1, 'o3');
	COMMIT;
	INSERT INTO s VALUES (9003, 3, 'new');
	UPDATE o3 SET v = 0;
});
exact('the source made again', [ 's', 's_src2' ], [ 'x', 'x_src' ], [ 't2', 't2_src' ]);

recorded_exact();

is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready,ready', 'no source failed');
log_is_clean($node, 'capture next to new files');

done_testing();
