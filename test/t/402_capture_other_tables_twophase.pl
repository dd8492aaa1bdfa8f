# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's, and note the transactions changing the
# catalog (nothing skipped until their commit, abort or prepared commit);
# both live in the runtime's memory only.  Here: prepared transactions
# writing the source and the other table, some giving the other table or
# the source new files (TRUNCATE, SET TABLESPACE), the maintenance runtime
# restarted between PREPARE and COMMIT PREPARED (and ROLLBACK PREPARED);
# subtransactions giving the other table new files, rolled back (its old
# relfilenode, noted, back in use) or released; logical messages,
# transactional or not, between the writes; synchronous_commit off, local
# and remote_write.  Each source must hold exactly its table's rows at the
# latest time and at every time recorded (as_of).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables_twophase',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB',
		'max_prepared_transactions = 8']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my @at;

# both sources exact now, and recorded for a read at this time later
sub exact
{
	my ($what) = @_;
	sources_exact($node, \@at, $what, [ 's', 's_src' ], [ 'x', 'x_src' ]);
}

sub restart
{
	my ($what) = @_;
	my ($old_pid, $back) = restart_runtime($node, maintenance_role());
	ok($back, "the maintenance runtime came back $what");
}

my $ts = PostgreSQL::Test::Utils::tempdir;
sql("CREATE TABLESPACE elsewhere LOCATION '$ts'");
sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	CREATE TABLE x (k int PRIMARY KEY, v int, t text);
	CREATE TABLE o (k int PRIMARY KEY, v int, t text);
	CREATE TABLE y (k int, v int);
	CREATE TABLE w (k int, v int);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	ALTER TABLE o ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_source('x_src', 'x');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');

my $big = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)};

# every table's first changes replayed: their relfilenodes noted
sql(q{
	INSERT INTO o SELECT i, i, NULL FROM generate_series(1, 300) i;
	INSERT INTO x SELECT i, i, NULL FROM generate_series(1, 300) i;
	INSERT INTO y SELECT i, i FROM generate_series(1, 300) i;
	INSERT INTO w SELECT i, i FROM generate_series(1, 300) i;
	INSERT INTO s SELECT i, i, NULL FROM generate_series(1, 300) i;
});
exact('first writes');

# a subtransaction whose first record (the one naming its top transaction)
# is the other table's, skipped: decoding meets it as a transaction of its
# own from its write of the source on, until the commit names it.  More
# than 64 subtransactions follow (an assignment record, the proc array's
# cache of them overflowed), checkpoints log the running transactions
# (the slot's restart point may move), and the runtime restarts before the
# commit: the source's write must be decoded again
my $folded = $node->background_psql('postgres');
$folded->query_safe(q{
	BEGIN;
	SAVEPOINT first;
	INSERT INTO o VALUES (500, 0, 'first of its subtransaction');
	INSERT INTO s VALUES (500, 0, 'in the first subtransaction');
	RELEASE first;
});
my $written = $folded->query_safe("SELECT pg_current_wal_insert_lsn()");
ok(sources_caught_up($node), 'the source read past its write in the open transaction');
sql("CHECKPOINT");
$folded->query_safe(q{
	DO $$
	BEGIN
		FOR i IN 1 .. 70 LOOP
			BEGIN
				INSERT INTO o VALUES (500 + i, i, 'subtransaction');
			EXCEPTION WHEN unique_violation THEN NULL;
			END;
		END LOOP;
	END $$;
});
ok(sources_caught_up($node), 'the source read the assignment record');
sql("CHECKPOINT");
sql("INSERT INTO x VALUES (601, 1, 'confirm')");
ok(sources_caught_up($node), 'the source confirmed its reads');
note('restart_lsn of s_src\'s slot: '
	  . sql(qq{SELECT restart_lsn || CASE WHEN restart_lsn > '$written' THEN ' (past the write of s)' ELSE '' END
		FROM pg_replication_slots s JOIN peek.objects o ON s.slot_name = 'pg_peek_' || s.datoid || '_' || o.id
		WHERE o.name = 's_src'}));
restart('with a transaction open whose subtransaction wrote the source');
$folded->query_safe(q{
	INSERT INTO s VALUES (501, 1, 'after the restart');
	COMMIT;
});
$folded->quit;
exact('a subtransaction first met as a transaction of its own');
is(sql("SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::s, 's_src') WHERE k IN (500, 501)"),
	'500,501', 's_src has the write of the subtransaction the restart point passed');

# prepared transactions: one writing all, one truncating another table,
# one moving another to another tablespace
sql(qq{
	BEGIN;
	INSERT INTO o VALUES (1001, 1, $big);
	INSERT INTO s VALUES (1001, 1, $big);
	UPDATE o SET v = -v WHERE k <= 20;
	UPDATE s SET v = -v WHERE k <= 20;
	UPDATE x SET v = -v WHERE k <= 20;
	DELETE FROM s WHERE k BETWEEN 21 AND 25;
	PREPARE TRANSACTION 'all';
	BEGIN;
	INSERT INTO w VALUES (1002, 2);
	TRUNCATE w;
	INSERT INTO w SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO s VALUES (1002, 2, 'w truncated');
	PREPARE TRANSACTION 'truncate';
	BEGIN;
	INSERT INTO y VALUES (1003, 3);
	ALTER TABLE y SET TABLESPACE elsewhere;
	INSERT INTO y VALUES (1004, 3);
	INSERT INTO x VALUES (1003, 3, 'y moved');
	INSERT INTO s VALUES (1003, 3, 'y moved');
	PREPARE TRANSACTION 'moved';
});
# (writes that take none of their locks)
sql(q{
	INSERT INTO x VALUES (1005, 5, 'meanwhile');
	UPDATE x SET v = 0 WHERE k BETWEEN 200 AND 210;
});
restart('after three PREPAREs');
sql(q{
	INSERT INTO x VALUES (1006, 6, 'after the restart');
});
exact('three transactions prepared');
sql("COMMIT PREPARED 'all'");
sql("INSERT INTO x VALUES (1007, 7, 'all committed')");
restart('after the first COMMIT PREPARED');
sql("COMMIT PREPARED 'truncate'");
sql(q{
	INSERT INTO w VALUES (1008, 8);
	INSERT INTO s VALUES (1008, 8, 'after');
	UPDATE w SET v = v + 1;
	UPDATE o SET v = v + 1;
	UPDATE s SET v = v + 1 WHERE k > 1000;
});
sql("COMMIT PREPARED 'moved'");
exact('the prepared transactions committed');

# the source moved in a prepared transaction, a restart, then rolled back;
# then moved in one committed after a restart
sql(q{
	BEGIN;
	INSERT INTO s VALUES (2001, 1, 'rolled back');
	ALTER TABLE s SET TABLESPACE elsewhere;
	INSERT INTO s VALUES (2002, 2, 'rolled back');
	INSERT INTO o VALUES (2002, 2, 'rolled back');
	PREPARE TRANSACTION 'back';
});
sql("INSERT INTO y VALUES (2003, 3)");
restart('with the source moved in a prepared transaction');
sql("ROLLBACK PREPARED 'back'");
sql(q{
	INSERT INTO s VALUES (2004, 4, 'after the rollback');
	INSERT INTO o VALUES (2004, 4, 'after the rollback');
	BEGIN;
	UPDATE o SET v = -v WHERE k <= 10;
	ALTER TABLE s SET TABLESPACE elsewhere;
	UPDATE s SET v = -v WHERE k <= 10;
	INSERT INTO s VALUES (2005, 5, $$moved$$);
	UPDATE o SET v = -v WHERE k <= 20;
	PREPARE TRANSACTION 'forth';
});
restart('with the source moved in another prepared transaction');
sql("INSERT INTO x VALUES (2006, 6, 'x')");
sql("COMMIT PREPARED 'forth'");
sql(q{
	INSERT INTO s VALUES (2007, 7, 'after');
	UPDATE o SET v = 0 WHERE k <= 5;
});
exact('the source moved by a prepared transaction');

# subtransactions giving the other table new files: rolled back (its old,
# noted relfilenode back in use) or released; the source's writes between
sql(q{
	BEGIN;
	INSERT INTO o VALUES (3001, 1, 'o');
	SAVEPOINT a;
	TRUNCATE o;
	INSERT INTO o VALUES (3002, 2, 'rolled back');
	INSERT INTO s VALUES (3002, 2, 'rolled back');
	ROLLBACK TO a;
	INSERT INTO o VALUES (3003, 3, 'o old files');
	INSERT INTO s VALUES (3003, 3, 'o old files');
	SAVEPOINT b;
	ALTER TABLE o SET TABLESPACE elsewhere;
	INSERT INTO o VALUES (3004, 4, 'o moved');
	SAVEPOINT c;
	INSERT INTO s VALUES (3004, 4, 'o moved');
	RELEASE c;
	RELEASE b;
	SAVEPOINT d;
	TRUNCATE s;
	INSERT INTO s VALUES (3005, 5, 'rolled back');
	ROLLBACK TO d;
	UPDATE s SET v = v * 3 WHERE k <= 50;
	UPDATE o SET v = v * 3 WHERE k <= 50;
	COMMIT;
	INSERT INTO o VALUES (3006, 6, 'after');
	INSERT INTO s VALUES (3006, 6, 'after');
});
exact('subtransactions giving the other table new files');

# logical messages between the writes, transactional or not
sql(q{
	BEGIN;
	INSERT INTO o VALUES (4001, 1, 'o');
	SELECT pg_logical_emit_message(true, 'attack', 'in the transaction');
	INSERT INTO s VALUES (4001, 1, 's');
	SELECT pg_logical_emit_message(false, 'attack', 'not transactional');
	UPDATE o SET v = -v WHERE k <= 30;
	UPDATE s SET v = -v WHERE k <= 30;
	SELECT pg_logical_emit_message(true, 'attack', repeat('m', 100000));
	DELETE FROM s WHERE k BETWEEN 31 AND 33;
	COMMIT;
	SELECT pg_logical_emit_message(false, 'attack', 'alone');
	INSERT INTO s VALUES (4002, 2, 'after the messages');
});
exact('logical messages');

# synchronous_commit variations, sessions side by side
my @sessions = map { $node->background_psql('postgres') } 1 .. 3;
my @modes = ('off', 'local', 'remote_write');
for my $i (0 .. 2)
{
	$sessions[$i]->query_safe("SET synchronous_commit = $modes[$i]");
}
for my $round (1 .. 5)
{
	for my $i (0 .. 2)
	{
		my $k = 5000 + $round * 10 + $i;
		$sessions[$i]->query_safe(qq{
			BEGIN;
			INSERT INTO o VALUES ($k, $round, 'o');
			INSERT INTO s VALUES ($k, $round, '$modes[$i]');
			UPDATE o SET v = v + 1 WHERE k <= 10;
			UPDATE s SET v = v + 1 WHERE k <= 10;
			UPDATE x SET v = v + 1 WHERE k = $i + 1;
			COMMIT;
		});
	}
	restart('between the synchronous_commit rounds') if $round == 3;
}
$_->quit for @sessions;
exact('synchronous_commit off, local and remote_write');

source_off_at($node, $_->[1], $_->[0]) for @at;

is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready', 'no source failed');
log_is_clean($node, 'capture next to prepared transactions');

done_testing();
