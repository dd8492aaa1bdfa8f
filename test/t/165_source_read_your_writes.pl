# Read-your-writes on a source: pg_peek.isolation.
#
#  * 'strict serializable': a session that commits a change to the table
#    (autocommit INSERT, UPDATE or DELETE) and peeks right after with
#    as_of NULL always sees it, by index and by persist peek, 300 times; a
#    second session sees a change the first committed before it peeked.
#  * 'serializable' (the default): as_of NULL reads the latest time already
#    decoded and never waits for ingestion. With the maintenance runtime held
#    up (a row lock on the source's catalog row, which its decoding round
#    takes), a serializable peek answers at once without the new row, while a
#    strict peek waits (statement_timeout cancels it) and one that is left
#    waiting is answered with the row once the runtime goes on. (Split mode
#    only: in solo mode the held-up runtime is also the one that serves.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PgPeekTest;

my $mode = interactive_mode();
my $node = new_node('source_ryw');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int, v text);
	SELECT peek.create_source('src', 't');
	SELECT peek.create_index('t_k', 'src', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 't_k'", 'ready'),
	'the source and its index are ready');
is(sql("SHOW pg_peek.isolation"), 'serializable', 'the default isolation is serializable');
my ($state) = sql_error($node, "SET pg_peek.isolation = 'snapshot'");
is($state, '22023', 'pg_peek.isolation refuses other values');

# ---- strict serializable: the session's own writes, 300 times ------------------

my $N = 300;
my (@script, @want);
for my $i (1 .. $N)
{
	my $peek = $i % 2
	  ? "peek.index_peek(NULL::t, 't_k', ROW($i))"
	  : "peek.persist_peek(NULL::t, 'src') WHERE k = $i";
	push @script, "INSERT INTO t VALUES ($i, 'v$i');",
	  "SELECT 'i$i', count(*), string_agg(v, ',') FROM $peek;";
	push @want, "i$i|1|v$i";
	if ($i % 3 == 0)
	{
		push @script, "UPDATE t SET v = 'u$i' WHERE k = $i;",
		  "SELECT 'u$i', count(*), string_agg(v, ',') FROM peek.index_peek(NULL::t, 't_k', ROW($i));";
		push @want, "u$i|1|u$i";
	}
	if ($i % 5 == 0)
	{
		push @script, "DELETE FROM t WHERE k = $i;",
		  "SELECT 'd$i', count(*), string_agg(v, ',') FROM peek.persist_peek(NULL::t, 'src') WHERE k = $i;";
		push @want, "d$i|0|";
	}
}
# (psql goes on after an error, so that every pair is counted)
my $start = time;
my ($rc, $out, $err) = $node->psql('postgres',
	"SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '20s';\n"
	  . join("\n", @script),
	on_error_stop => 0);
my %got = map { my ($l, $rest) = split /\|/, $_, 2; ($l => "$l|$rest") }
  grep { /\|/ } split /\n/, $out;
my @bad = grep { ($got{ (split /\|/, $_)[0] } // '<error>') ne $_ } @want;
my @errors = grep { /ERROR/ } split /\n/, $err;
is(scalar @bad, 0,
	sprintf('strict: %d write-then-peek pairs, every peek saw its own write (%.1f s)',
		scalar @want, time - $start))
  or diag(sprintf("%d of %d peeks wrong, e.g.:\n", scalar @bad, scalar @want)
	  . join("\n", map { "want $_ got " . ($got{ (split /\|/, $_)[0] } // '<error>') } @bad[0 .. ($#bad < 4 ? $#bad : 4)])
	  . "\nerrors:\n" . join("\n", @errors[0 .. ($#errors < 4 ? $#errors : 4)]));
is(scalar @errors, 0, 'strict: no peek failed');

# A strict peek reads at the current WAL insert position and flushes the WAL
# up to it. When the last record ends exactly at a page boundary, that
# position is the first byte after the next page's header, which no record
# has reached yet: the flush must still succeed. Pad the WAL with logical
# messages until the insert position is just after a page header, then peek.
sql(q{
	CREATE FUNCTION strict_peek_at_page_start() RETURNS text LANGUAGE plpgsql AS $f$
	DECLARE
		p bigint;
		r bigint;
		n bigint;
	BEGIN
		PERFORM set_config('pg_peek.isolation', 'strict serializable', true);
		FOR i IN 1 .. 100 LOOP
			p := pg_current_wal_insert_lsn() - '0/0';
			r := 8192 - p % 8192;
			IF r < 400 THEN
				PERFORM pg_logical_emit_message(false, 'p', repeat('x', 500));
				CONTINUE;
			END IF;
			-- record header 24, long data header 5, xl_logical_message 24, 'p\0'
			PERFORM pg_logical_emit_message(false, 'p', repeat('x', (r - 55)::int));
			p := pg_current_wal_insert_lsn() - '0/0';
			IF p % 8192 IN (24, 40) THEN
				BEGIN
					SELECT count(*) INTO n FROM peek.persist_peek(NULL::t, 'src');
					RETURN 'answered at a page start';
				EXCEPTION WHEN OTHERS THEN
					RETURN 'insert position ' || ('0/0'::pg_lsn + p) || ': ' || SQLSTATE || ': ' || SQLERRM;
				END;
			END IF;
		END LOOP;
		RETURN 'the insert position never was at a page start';
	END $f$;
});
is(sql('SELECT strict_peek_at_page_start()'), 'answered at a page start',
	'strict: a peek when the WAL insert position is just after a page header');

# another session's commit, seen by a strict peek issued after it
my $reader = bg_session($node);
$reader->query_safe("SET pg_peek.isolation = 'strict serializable'");
my @cross_bad;
for my $i (1001 .. 1050)
{
	sql("INSERT INTO t VALUES ($i, 'x$i')");
	my $r = $reader->query_safe("SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW($i))");
	push @cross_bad, "$i: $r" if $r ne '1';
}
is(join(', ', @cross_bad), '', 'strict: 50 commits by one session, each seen by the next peek of another');
$reader->quit;

# ---- serializable: never waits for ingestion -------------------------------------

# (the default) as_of NULL right after a write answers, with or without it
$start = time;
$out = sql("SET statement_timeout = '5s';\n"
	  . join("\n", map { "INSERT INTO t VALUES ($_, 's'); SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW($_));" }
		  2001 .. 2050));
my @counts = grep { $_ ne 'SET' && $_ ne '' } split /\n/, $out;
is(scalar(grep { $_ eq '0' || $_ eq '1' } @counts), 50,
	sprintf('serializable: 50 write-then-peek pairs answered (%.2f s)', time - $start));

SKIP:
{
	skip 'in solo mode the runtime that decodes also serves peeks', 8 if $mode ne 'on';

	ok(poll_until($node,
			"SELECT count(*) FROM peek.persist_peek(NULL::t, 'src') WHERE k BETWEEN 2001 AND 2050", '50'),
		'serializable as_of NULL reaches the writes');
	# hold up the maintenance runtime's next decoding round
	my $locker = bg_session($node);
	$locker->query_safe('BEGIN');
	$locker->query_safe("SELECT 1 FROM peek.objects WHERE name = 'src' FOR UPDATE");
	sql("INSERT INTO t VALUES (3000, 'held')");
	ok(poll_until($node,
			"SELECT count(*) > 0 FROM pg_locks l JOIN peek.runtimes r ON r.pid = l.pid "
			  . "WHERE r.role = 'maintenance' AND NOT l.granted"),
		'the maintenance runtime waits for the lock in its decoding round');

	$start = time;
	is( sql("SET statement_timeout = '3s'; SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(3000))"),
		'0', 'serializable: an index peek answers without the row not yet ingested');
	is( sql("SET statement_timeout = '3s'; SELECT count(*) FROM peek.persist_peek(NULL::t, 'src') WHERE k = 3000"),
		'0', 'serializable: a persist peek too');
	cmp_ok(time - $start, '<', 3, 'and neither waited');

	my ($st, $msg) = sql_error($node,
		"SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '500ms'; "
		  . "SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(3000))");
	is($st, '57014', "strict: the peek waits for ingestion until statement_timeout ($msg)");

	my $h = start_bg($node,
		"SET pg_peek.isolation = 'strict serializable'; SELECT count(*) FROM peek.index_peek(NULL::t, 't_k', ROW(3000))");
	ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks WHERE object = 't_k' AND state = 'waiting'", '1'),
		'strict: a second peek is parked');
	$locker->query_safe('ROLLBACK');
	$locker->quit;
	my ($rc2, $res) = finish_bg($h, 30);
	$res = join(',', grep { $_ ne 'SET' } split /\n/, $res);
	is("$rc2:$res", '0:1', 'strict: once the runtime goes on, the parked peek sees the row');
}

$node->stop;
done_testing();
