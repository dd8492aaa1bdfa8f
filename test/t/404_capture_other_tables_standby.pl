# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's (record_filters.c).  A streaming standby
# replays the shards those rounds write: at every time recorded on the
# primary (after transactions mixing the source with other tables, a
# TRUNCATE of the other table then of the source in one transaction, a
# VACUUM FULL, a rewrite of the source by ALTER COLUMN TYPE ... USING), the
# standby's source must hold exactly the primary's table's rows then, and
# at its latest time the table's rows as replayed.  Then the standby is
# promoted: its sources load again at new slots (README, Sources after a
# promotion) and capture the promoted server's transactions mixing the
# sources with other tables exactly, from a restart of the runtime too.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $primary = new_node('capture_other_tables_primary',
	init => { allows_streaming => 'logical' },
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB',
		'hot_standby_feedback = on', 'wal_receiver_status_interval = 1s']);

sub sql { return $primary->safe_psql('postgres', $_[0]); }

my @at;

# both sources exact on the primary now, recorded for the standby
sub exact
{
	my ($node, $what) = @_;
	sources_exact($node, \@at, $what, [ 's', 's_src' ], [ 'x', 'x_src' ]);
}

sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE s (k int PRIMARY KEY, v int, t text);
	CREATE TABLE x (k int PRIMARY KEY, v int, t text);
	CREATE TABLE o (k int PRIMARY KEY, v int, t text);
	ALTER TABLE s ALTER COLUMN t SET STORAGE EXTERNAL;
	SELECT peek.create_source('s_src', 's');
	SELECT peek.create_source('x_src', 'x');
});
ok(poll_until($primary, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');
my $standby = new_standby($primary, 'capture_other_tables_standby');
standby_publisher_pid($primary, $standby);

my $big = q{(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)};

sql(qq{
	INSERT INTO o SELECT i, i, NULL FROM generate_series(1, 300) i;
	INSERT INTO x SELECT i, i, NULL FROM generate_series(1, 300) i;
	INSERT INTO s SELECT i, i, CASE WHEN i % 100 = 0 THEN $big END FROM generate_series(1, 300) i;
});
exact($primary, 'first writes');
sql(qq{
	BEGIN;
	INSERT INTO o SELECT i, i, 'o' FROM generate_series(301, 3000) i;
	INSERT INTO s VALUES (1001, 1, $big);
	UPDATE o SET v = -v WHERE k <= 100;
	UPDATE s SET v = -v WHERE k <= 100;
	DELETE FROM x WHERE k <= 10;
	DELETE FROM o WHERE k BETWEEN 101 AND 200;
	COMMIT;
});
exact($primary, 'a transaction mixing them');
sql(q{
	BEGIN;
	INSERT INTO s VALUES (2001, 1, 'before');
	TRUNCATE o;
	INSERT INTO o SELECT i, i, 'o again' FROM generate_series(1, 100) i;
	INSERT INTO s VALUES (2002, 2, 'o truncated');
	TRUNCATE s;
	INSERT INTO s SELECT i, i, 's again' FROM generate_series(1, 100) i;
	INSERT INTO o VALUES (2003, 3, 's truncated');
	COMMIT;
	INSERT INTO s VALUES (2004, 4, 'after');
	INSERT INTO o VALUES (2004, 4, 'after');
});
exact($primary, 'TRUNCATE of both in one transaction');
sql("VACUUM FULL o");
sql("VACUUM FULL s");
sql(q{
	BEGIN;
	UPDATE o SET v = v + 1;
	ALTER TABLE s ALTER COLUMN v TYPE int USING v * 2;
	INSERT INTO s VALUES (3001, 1, 'rewritten');
	UPDATE o SET v = v + 1;
	UPDATE x SET v = v + 1 WHERE k <= 50;
	COMMIT;
	INSERT INTO s VALUES (3002, 2, 'after');
});
exact($primary, 'VACUUM FULL and a rewrite of the source');

# the standby: every recorded time, and its latest one
$primary->wait_for_catchup($standby, 'replay');
my $upper = sql("SELECT min(upper) FROM peek.collections WHERE source IS NOT NULL");
ok(poll_until($standby, "SELECT min(upper) >= $upper FROM peek.collections WHERE source IS NOT NULL",
		't', 60), 'the standby published the sources\' uppers');
source_off_at($standby, $_->[1], "standby, $_->[0]") for @at;
is($standby->safe_psql('postgres', "SELECT count(*) FROM ((TABLE s EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::s, 's_src'))"
		. " UNION ALL (SELECT * FROM peek.persist_peek(NULL::s, 's_src') EXCEPT ALL TABLE s)) d"),
	'0', 'the standby\'s s_src holds exactly the replayed s');

# promoted: the sources load again at new slots, then capture
$standby->promote;
ok(poll_until($standby, "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg_peek%'",
		'2', 120), 'the promoted server\'s sources have new slots');
ok(poll_until($standby, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the promoted server\'s sources are ready');
@at = ();
$standby->safe_psql('postgres', qq{
	INSERT INTO o SELECT i, i, 'promoted' FROM generate_series(5001, 5100) i;
	INSERT INTO x VALUES (5001, 1, 'promoted');
	INSERT INTO s VALUES (5001, 1, 'promoted');
});
exact($standby, 'the promoted server\'s first writes');
$standby->safe_psql('postgres', qq{
	BEGIN;
	INSERT INTO o SELECT i, i, 'promoted' FROM generate_series(5101, 8000) i;
	UPDATE s SET v = v + 1, t = $big WHERE k <= 20;
	DELETE FROM o WHERE k <= 50;
	UPDATE x SET v = -v;
	INSERT INTO s VALUES (5002, 2, 'promoted');
	COMMIT;
});
my ($old_pid, $back) = restart_runtime($standby, maintenance_role());
ok($back, 'the promoted server\'s maintenance runtime came back');
$standby->safe_psql('postgres', q{
	BEGIN;
	UPDATE o SET v = 0 WHERE k <= 100;
	DELETE FROM s WHERE k BETWEEN 10 AND 15;
	TRUNCATE o;
	INSERT INTO s VALUES (5003, 3, 'o truncated');
	COMMIT;
});
exact($standby, 'the promoted server captures');
source_off_at($standby, $_->[1], $_->[0]) for @at;

is($standby->safe_psql('postgres', "SELECT string_agg(state, ',') FROM peek.collections WHERE source IS NOT NULL"),
	'ready,ready', 'no source failed');

done_testing();
