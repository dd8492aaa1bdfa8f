# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's (rounds.c, other_tables_change).  Paths where
# a skipped record sits next to the source's own: subtransactions whose
# first record (the one naming the top transaction) is the other table's,
# rolled back or not; prepared transactions; TRUNCATE of both tables in one
# transaction (new relfilenodes); VACUUM FULL of the source after the
# other table was noted; INSERT ... ON CONFLICT DO UPDATE of the source
# after the other table's speculative insertion; two sources each the
# other's other table; and the maintenance runtime restarted in the middle
# of a mixed transaction.  Every source must hold exactly its table's rows.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables_mixed',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB',
		'max_prepared_transactions = 4']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

# both sources against their tables after a scenario
sub both_exact
{
	my ($what) = @_;
	ok(sources_caught_up($node), "$what: decoded");
	is(source_off($node, 's', 's_src'), '0', "$what: s_src holds exactly s's rows");
	is(source_off($node, 'x', 'x_src'), '0', "$what: x_src holds exactly x's rows");
	is(source_off($node, 'y', 'y_src'), '0', "$what: y_src holds exactly y's rows");
}

# x and y are sources too: each is the others' other table; o is no source's
sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	CREATE TABLE x (k int PRIMARY KEY, v int, t text);
	CREATE TABLE y (k int, v int);
	CREATE TABLE o (k int PRIMARY KEY, v int);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_source('x_src', 'x');
	SELECT peek.create_source('y_src', 'y');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');

# every table's first changes replayed: their relfilenodes noted
sql(q{
	INSERT INTO o SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO x SELECT i, i, NULL FROM generate_series(1, 100) i;
	INSERT INTO y SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO s SELECT i, i, NULL FROM generate_series(1, 100) i;
});
both_exact('first writes');

# subtransactions whose first record is another table's
sql(q{
	BEGIN;
	INSERT INTO o VALUES (1001, 1);
	SAVEPOINT a;
	INSERT INTO o VALUES (1002, 1);
	INSERT INTO s VALUES (1001, 1, 'a');
	INSERT INTO x VALUES (1001, 1, 'a');
	ROLLBACK TO a;
	SAVEPOINT b;
	INSERT INTO o VALUES (1003, 1);
	INSERT INTO s VALUES (1002, 2, 'b');
	UPDATE y SET v = -v WHERE k <= 5;
	SAVEPOINT c;
	UPDATE o SET v = 0 WHERE k <= 50;
	DELETE FROM s WHERE k <= 5;
	RELEASE c;
	RELEASE b;
	SAVEPOINT d;
	UPDATE o SET v = 1 WHERE k <= 50;
	INSERT INTO s VALUES (1003, 3, 'd');
	ROLLBACK TO d;
	INSERT INTO x VALUES (1004, 4, 'e');
	COMMIT;
});
both_exact('subtransactions');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::s, 's_src') WHERE k > 1000"), '1',
	'only the released subtransaction\'s row of s');

# a prepared transaction mixing them
sql(q{
	BEGIN;
	INSERT INTO o VALUES (2001, 1);
	INSERT INTO s VALUES (2001, 1, 'p');
	UPDATE o SET v = v + 1 WHERE k <= 20;
	UPDATE x SET v = v + 1 WHERE k <= 20;
	INSERT INTO o SELECT i, i FROM generate_series(2002, 4000) i;
	DELETE FROM y WHERE k BETWEEN 6 AND 10;
	PREPARE TRANSACTION 'mixed';
});
sql("INSERT INTO o VALUES (4001, 1)");
sql("COMMIT PREPARED 'mixed'");
both_exact('a prepared transaction');

# ON CONFLICT DO UPDATE of the source after the other table's speculative insertions
sql(q{
	BEGIN;
	INSERT INTO o VALUES (5001, 1) ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO x VALUES (5001, 1, 'n'), (1, -7, 'c') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO s VALUES (5001, 1, 'n'), (50, -7, 'c') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO o VALUES (5001, 2) ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	INSERT INTO s VALUES (5001, 2, 'm') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
	COMMIT;
});
both_exact('ON CONFLICT after the other tables\' speculative insertions');

# TRUNCATE of the source and another table in one transaction, then writes
sql(q{
	BEGIN;
	INSERT INTO o VALUES (6001, 1);
	TRUNCATE s, o;
	INSERT INTO o SELECT i, i FROM generate_series(1, 50) i;
	INSERT INTO s SELECT i, i, 't' FROM generate_series(1, 50) i;
	TRUNCATE y;
	INSERT INTO y SELECT i, i FROM generate_series(1, 30) i;
	COMMIT;
	INSERT INTO o VALUES (6002, 1);
	INSERT INTO s VALUES (6002, 1, 'after');
});
both_exact('TRUNCATE of both in one transaction');

# VACUUM FULL of the source after the others were noted, then writes
sql("VACUUM FULL s");
sql("VACUUM FULL o");
sql(q{
	BEGIN;
	INSERT INTO o VALUES (7001, 1);
	INSERT INTO s VALUES (7001, 1, 'v');
	UPDATE s SET v = -v WHERE k <= 10;
	INSERT INTO y VALUES (7001, 1);
	COMMIT;
});
both_exact('VACUUM FULL of the source and the other table');

# the maintenance runtime restarted in the middle of a mixed transaction
my $big = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)};
my $mixed = $node->background_psql('postgres');
$mixed->query_safe(qq{
	BEGIN;
	INSERT INTO o SELECT i, i FROM generate_series(10000, 20000) i;
	INSERT INTO s SELECT i, i, $big FROM generate_series(10000, 10010) i;
	UPDATE x SET v = v + 100 WHERE k <= 30;
	INSERT INTO o SELECT i, i FROM generate_series(20001, 30000) i;
});
sql("INSERT INTO y VALUES (8001, 1)");
sleep(2);
my ($old_pid, $back) = restart_runtime($node, maintenance_role());
ok($back, 'the maintenance runtime came back');
$mixed->query_safe(qq{
	UPDATE s SET v = -v WHERE k >= 10000;
	INSERT INTO o SELECT i, i FROM generate_series(30001, 31000) i;
	DELETE FROM s WHERE k = 10005;
	COMMIT;
});
$mixed->quit;
both_exact('a restart in a mixed transaction');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::s, 's_src') WHERE k >= 10000 AND v < 0 AND length(t) > 9000"),
	'10', 's_src has the restarted transaction\'s rows');

is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready,ready', 'no source failed');
log_is_clean($node, 'capture mixed with other tables');

done_testing();
