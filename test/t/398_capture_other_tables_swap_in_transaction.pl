# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's (rounds.c, other_tables_change), and forget
# them at each relcache invalidation this process executes.  Decoding
# executes a transaction's invalidations at its commit, so a relfilenode
# that moves to the source inside a transaction (its files swapped with the
# other table's by a catalog update, what pg_repack does) is still noted
# while that same transaction's later records are read: the source's own
# writes after the swap, in the same transaction, must not be skipped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables_swap',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }



sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE a (k int, v int);
	CREATE TABLE acopy (k int, v int);
	CREATE TABLE z (k int);
	INSERT INTO a SELECT i, i FROM generate_series(1, 100) i;
	SELECT peek.create_source('a_src', 'a');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the source is loaded');

# the copy's changes replayed once: its relfilenode noted
sql("INSERT INTO acopy SELECT * FROM a");
ok(sources_caught_up($node), 'the source decoded the copy\'s writes');

# the files swapped and the source written in the same transaction, whose
# records the source reads before its commit (other commits go on meanwhile)
my $swap = $node->background_psql('postgres');
$swap->query_safe(q{
	BEGIN;
	LOCK TABLE a, acopy IN ACCESS EXCLUSIVE MODE;
	UPDATE pg_class SET relfilenode = CASE oid
	    WHEN 'a'::regclass THEN (SELECT relfilenode FROM pg_class WHERE oid = 'acopy'::regclass)
	    ELSE (SELECT relfilenode FROM pg_class WHERE oid = 'a'::regclass) END
	  WHERE oid IN ('a'::regclass, 'acopy'::regclass);
	INSERT INTO a VALUES (1000, 1000);
	UPDATE a SET v = -v WHERE k <= 10;
	DELETE FROM a WHERE k BETWEEN 11 AND 20;
	INSERT INTO acopy VALUES (7, 7);
});
for my $i (1 .. 3)
{
	sql("INSERT INTO z VALUES ($i)");
	sleep(1);
}
$swap->query_safe('COMMIT');
$swap->quit;
ok(sources_caught_up($node), 'the source decoded the swapping transaction');
is(source_off($node, 'a', 'a_src'), '0', 'a_src holds exactly a\'s rows: its writes after the swap in the same transaction');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::a, 'a_src') WHERE k = 1000"), '1',
	'a_src has the row inserted after the swap');

# and later transactions, after the swap's commit, as before
sql(q{
	INSERT INTO a VALUES (1001, 1001);
	DELETE FROM a WHERE k BETWEEN 21 AND 25;
	INSERT INTO acopy VALUES (8, 8);
});
ok(sources_caught_up($node), 'the source decoded the writes after the swap');
is(source_off($node, 'a', 'a_src'), '0', 'a_src holds exactly a\'s rows after the swap');
is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready', 'no source failed');
log_is_clean($node, 'capture swapped in a transaction');

done_testing();
