# Capture catches up in bounded rounds.  A round reads at most 16 MB of WAL, so a source far behind -- here
# ~250 MB of another table's WAL, made while the maintenance runtime was
# stopped (SIGSTOP) -- catches up in steps, between which the runtime
# publishes everything else.
#
#  * While the source still catches up (its new row is not visible yet), a
#    write to a collection made after the WAL is already published (its
#    index answers at the write's time).  Before the bound, the first round
#    decoded all of it before anything else was published.
#  * The source then catches up: its row is visible, and its contents equal
#    the table's.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgPeekTest;

my $node = new_node('capture_catch_up',
	conf => ['autovacuum = off', 'max_wal_size = 2GB', 'logical_decoding_work_mem = 64MB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	CREATE TABLE t (k int, v text);
	CREATE TABLE noise (k int, v text);
	SELECT peek.create_source('src', 't');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);
	SELECT peek.create_collection('c', 'kv');
	SELECT peek.create_index('c_k', 'c', ARRAY['k']);
	INSERT INTO t VALUES (1, 'before');
});
ok(poll_until($node,
		"SELECT bool_and(state = 'ready') FROM peek.indexes WHERE name IN ('t_k', 'c_k')", 't'),
	'the source, the collection and their indexes are ready');
ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(1))", '1'),
	'the source has its first row');

my $maintenance = runtime_pid($node, interactive_mode() eq 'on' ? 'maintenance' : 'solo');
stop_runtime($node, $maintenance);
my $lsn0 = sql("SELECT pg_current_wal_lsn()");
# 150 transactions of 10k rows of a table no source captures
sql(q{
	CREATE PROCEDURE make_noise() LANGUAGE plpgsql AS $$
	BEGIN
	  FOR i IN 1 .. 150 LOOP
	    INSERT INTO noise SELECT g, repeat('x', 100) FROM generate_series(1, 10000) g;
	    COMMIT;
	  END LOOP;
	END $$;
	CALL make_noise();
	INSERT INTO t VALUES (2, 'after the noise');
});
my $wal_mb = sql("SELECT (pg_current_wal_lsn() - '$lsn0') / 1048576");
note("WAL made while the runtime was stopped: $wal_mb MB");
cmp_ok($wal_mb, '>', 100, 'more than 100 MB of WAL wait to be decoded');
my $at = sql(q{SELECT peek.write('c', ARRAY[(7, 'seven')]::kv[])});
kill 'CONT', $maintenance;

# the collection's write is published while the source is still behind
my $t0 = time;
my ($c_seen, $t_seen_then);
while (time - $t0 < 180)
{
	# one statement: the source's state at the moment the write is seen
	my ($c, $t) = split /\|/, sql(qq{
		SELECT (SELECT upper > $at FROM peek.indexes WHERE name = 'c_k'),
		       (SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(2)))});
	if ($c eq 't')
	{
		($c_seen, $t_seen_then) = (time - $t0, $t);
		last;
	}
	usleep(20_000);
}
ok(defined $c_seen, 'the collection\'s write was published');
note(sprintf('published after %.2f s', $c_seen // -1));
is($t_seen_then, '0', 'while the source had not caught up yet (its new row was not visible)');
is(sql(qq{SELECT v FROM peek.index_peek(NULL::kv, 'c_k', ROW(7), $at)}), 'seven',
	'the index answers at the write\'s time');

ok(poll_until($node, "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(2))", '1', 300),
	'the source catches up: its new row is visible');
note(sprintf('caught up after %.2f s', time - $t0));
is(sql(q{
	SELECT count(*) FROM ((SELECT * FROM t EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::t, 'src'))
	  UNION ALL (SELECT * FROM peek.persist_peek(NULL::t, 'src') EXCEPT ALL SELECT * FROM t)) d}),
	'0', 'and it holds exactly the table\'s rows');

done_testing();
