# Attacks on the uppers in peek.uppers (a seal inserts, the maintenance
# runtime prunes): times stay strictly increasing and gap-free under
# concurrent writers (READ COMMITTED and REPEATABLE READ, retried); a seal
# rolled back (ROLLBACK TO, a PL/pgSQL EXCEPTION block, ROLLBACK of a
# trigger's statement) leaves no upper, and pruning never loses the latest;
# a dropped and re-created collection, or extension, starts at 0; a peek at
# the latest time after a burst sees the last write (fast_path on and off).
# Seals per second with and without an idle REPEATABLE READ snapshot are
# reported (diag), not asserted.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

my $node = new_node('primary');
my $setup = q{
	CREATE EXTENSION pg_peek;
	SELECT peek.create_collection('c', 'item');
	SELECT peek.create_collection('r', 'item');
	SELECT peek.create_collection('s', 'item');
	SELECT peek.create_collection('tr', 'item');
	SELECT peek.create_index('c_by_id', 'c', '{id}');
};
$node->safe_psql('postgres', q{
	CREATE TYPE item AS (id int, name text);
	CREATE TABLE wlog (coll text, t bigint);
} . $setup);
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes";
ok(poll_until($node, $running_sql), 'the runtimes are running');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub upper
{
	return sql("SELECT replayed_upper FROM peek.replication WHERE object = '$_[0]'");
}

my $dir = PostgreSQL::Test::Utils::tempdir();

sub pgbench
{
	my ($coll, $clients, $tx, @opts) = @_;
	my $file = "$dir/$coll.sql";
	open(my $fh, '>', $file) or die;
	print $fh "INSERT INTO wlog SELECT '$coll', peek.write('$coll', ARRAY[(:client_id, 'x')]::item[]);\n";
	close $fh;
	my ($stdout, $stderr);
	my $ok = IPC::Run::run([ 'pgbench', '-n', '-c', $clients, '-t', $tx, @opts, '-f', $file,
			$node->connstr('postgres') ], '>', \$stdout, '2>', \$stderr);
	return ($ok, $stdout, $stderr);
}

sub check_times
{
	my ($coll, $n, $what) = @_;
	is(sql("SELECT count(*) || ':' || count(DISTINCT t) || ':' || min(t) || ':' || max(t) FROM wlog WHERE coll = '$coll'"),
		"$n:$n:0:" . ($n - 1), "$what: every returned time distinct, from 0, gap-free");
	is(upper($coll), $n, "$what: the upper is after the last");
	is(sql("SELECT count(*) || ':' || count(DISTINCT id) FROM peek.persist_peek(NULL::item, '$coll')"),
		"$n:2", "$what: every write is there");
}

# ---- concurrent writers --------------------------------------------------

my ($ok, $out, $err) = pgbench('c', 2, 150);
ok($ok, 'two READ COMMITTED writers') or diag($err);
check_times('c', 300, 'READ COMMITTED');

{
	local $ENV{PGOPTIONS} = '-c default_transaction_isolation=repeatable\ read';
	($ok, $out, $err) = pgbench('r', 2, 100, '--max-tries=10000');
}
ok($ok, 'two REPEATABLE READ writers, retried on 40001') or diag("$out\n$err");
my ($retried) = $out =~ /number of transactions retried: (\d+)/;
diag("REPEATABLE READ writers: " . ($retried // '?') . " transactions retried");
check_times('r', 200, 'REPEATABLE READ');

# ---- a peek at the latest time after a burst -----------------------------

sql(join(";\n", map { "INSERT INTO wlog SELECT 'c', peek.write('c', ARRAY[(3, 'b$_')]::item[])" } 1 .. 100));
my $last = sql("SELECT max(t) FROM wlog WHERE coll = 'c'");
is($last, 399, 'a burst of 100 more writes');
for my $fp ('on', 'off')
{
	is(sql("SET pg_peek.fast_path = $fp; SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id', ROW(3), as_of => $last)"),
		'100', "fast_path $fp: a peek at the latest time sees the last write");
	is(sql("SET pg_peek.fast_path = $fp; SELECT count(*) FROM peek.index_peek(NULL::item, 'c_by_id')"),
		'400', "fast_path $fp: a peek of this session's latest sees every write");
}

# ---- rolled-back seals ---------------------------------------------------

is(sql(q{
	BEGIN;
	SELECT peek.write('s', ARRAY[(1, 'kept')]::item[]);
	SAVEPOINT a;
	SELECT peek.write('s', ARRAY[(2, 'rolled back')]::item[]);
	SELECT peek.advance('s', 1000);
	ROLLBACK TO a;
	SELECT peek.write('s', ARRAY[(3, 'kept')]::item[]);
	COMMIT;
}), "0\n1\n\n1", 'ROLLBACK TO undoes the seals after the savepoint');
sql(q{
	CREATE FUNCTION w_exc() RETURNS bigint LANGUAGE plpgsql AS $$
	BEGIN
		BEGIN
			PERFORM peek.write('s', ARRAY[(4, 'rolled back')]::item[]);
			PERFORM peek.advance('s', 2000);
			RAISE EXCEPTION 'undo';
		EXCEPTION WHEN raise_exception THEN NULL;
		END;
		RETURN peek.write('s', ARRAY[(5, 'kept')]::item[]);
	END $$;
});
is(sql('SELECT w_exc()'), '2', 'a PL/pgSQL EXCEPTION block undoes its seals');
sql("BEGIN; SELECT peek.advance('s', 3000); ROLLBACK");
is(upper('s'), 3, 'the upper is the committed one');
# the pruning runs every second
usleep(3_000_000);
sql("SELECT peek.write('s', ARRAY[(6, 'kept')]::item[])");
usleep(3_000_000);
is(upper('s'), 4, 'pruned: the upper stays');
ok(poll_until($node,
		"SELECT count(*) = 1 FROM peek.uppers WHERE object = (SELECT id & 4294967295 FROM peek.objects WHERE name = 's')", 't', 60),
	'pruned to the latest only');
is(sql("SELECT string_agg(id::text, ',' ORDER BY id) FROM peek.persist_peek(NULL::item, 's') WHERE name = 'kept'"),
	'1,3,5,6', 'the kept writes, and no rolled-back one');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::item, 's') WHERE name <> 'kept'"), '0',
	'no rolled-back write is there');

# ---- a writer in a trigger -----------------------------------------------

sql(q{
	CREATE TABLE src (id int, at bigint);
	CREATE FUNCTION src_write() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		NEW.at := peek.write('tr', ARRAY[(NEW.id, 'trig')]::item[]);
		RETURN NEW;
	END $$;
	CREATE TRIGGER src_write BEFORE INSERT ON src FOR EACH ROW EXECUTE FUNCTION src_write();
	INSERT INTO src VALUES (1), (2), (3);
	BEGIN; INSERT INTO src VALUES (4); ROLLBACK;
	INSERT INTO src VALUES (5);
});
is(sql(q{SELECT string_agg(id || ':' || at, ',' ORDER BY id) FROM src}), '1:0,2:1,3:2,5:3',
	'a trigger writes at consecutive times, a rolled-back one leaves none');
is(upper('tr'), 4, 'the trigger\'s upper');

# ---- drop and re-create --------------------------------------------------

my $w = bg_session($node);
$w->query_safe('BEGIN');
$w->query_safe("SELECT peek.write('tr', ARRAY[(9, 'open')]::item[])");
my $drop = start_bg($node, "SELECT peek.drop_collection('tr'); SELECT peek.create_collection('tr', 'item')");
ok(poll_until($node,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$drop->{application_name}' "
		  . "AND wait_event_type = 'Lock'"),
	'a drop waits for an open writer');
$w->query_safe('COMMIT');
$w->quit;
my $rc;
($rc, $out, $err) = finish_bg($drop);
is($rc, 0, 'dropped and re-created') or diag($err);
is(sql("SELECT peek.write('tr', ARRAY[(1, 'new')]::item[])"), '0',
	'the re-created collection starts at 0');
is(sql("SELECT count(*) FROM peek.uppers u WHERE NOT EXISTS (SELECT FROM peek.objects o WHERE o.id & 4294967295 = u.object)"),
	'0', 'no uppers of a dropped object are left');

# ---- DROP EXTENSION, CREATE EXTENSION ------------------------------------

sql('DROP EXTENSION pg_peek CASCADE');
sql($setup);
ok(poll_until($node, $running_sql), 'the runtimes run for the new extension');
is(sql("SELECT peek.write('c', ARRAY[(1, 'new')]::item[])"), '0',
	'a collection of the re-created extension starts at 0');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')"), '1', 'and has only its write');

# ---- seals per second, with and without an old snapshot -------------------

sub seals_per_second
{
	my ($n) = @_;
	my $t0 = time;
	sql(join(";\n", map { "SELECT peek.write('s', ARRAY[($_, 'g')]::item[])" } 1 .. $n));
	return $n / (time - $t0);
}
my $before = seals_per_second(500);
my $holder = bg_session($node);
$holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$holder->query_safe('SELECT count(*) FROM pg_class');
my @held;
push @held, seals_per_second(500) for 1 .. 4;
diag(sprintf('seals/s without a snapshot held: %.0f; with one held, bursts of 500: %s',
		$before, join(' ', map { sprintf('%.0f', $_) } @held)));
my $size = sql("SELECT pg_relation_size('peek.uppers') || ' heap, ' || pg_relation_size('peek.uppers_pkey') || ' index'");
diag("peek.uppers after 2000 seals under the snapshot: $size bytes");
$holder->query_safe('COMMIT');
$holder->quit;
ok(poll_until($node,
		"SELECT count(*) = 1 FROM peek.uppers WHERE object = (SELECT id & 4294967295 FROM peek.objects WHERE name = 's')", 't', 60),
	'pruned once the snapshot is gone');
is(upper('s'), 2500, 'the upper after them');

$node->stop;
done_testing();
