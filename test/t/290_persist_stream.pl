# Streamed persist peeks: a persist_peek call in FROM is read by
# a custom scan that streams its walk's rows up the plan.  The peek's hold
# ends once its walk has begun (the walk's snapshot keeps the answer), so a
# cursor that streams slowly holds back neither compaction nor its
# backend's next peek.  Shown here through the real runtimes:
#   * a cursor at time T, read in parts while writes go on and compaction
#     moves since past T, returns exactly the contents at T; a new peek at
#     T is then refused as compacted;
#   * the runtimes restarted in the middle of a stream do not disturb it;
#   * a cancel in the middle of a stream leaves nothing behind;
#   * 40 clients streaming at once, while a writer writes and compaction
#     folds up to their time, all get the answer of the function scan.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('persist_stream', conf => ['max_connections = 60']);

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v text);
SELECT peek.create_collection('c', 'item');
SELECT peek.write('c', array_agg((g, 'v' || g)::item)) FROM generate_series(1, 20000) g;
SELECT peek.write('c', array_agg((g, 'v' || g)::item)) FROM generate_series(1, 2000) g;
SELECT peek.allow_compaction('c', 1);
});
poll_until($node, "SELECT since = 1 FROM peek.objects WHERE name = 'c'")
  or die "c was not compacted to 1";
# recent updates after the base
$node->safe_psql('postgres', q{
SELECT peek.write('c', ARRAY[(g, 'w' || g)::item], ARRAY[(g, 'v' || g)::item]) FROM generate_series(1, 50) g;
});

# the contents at a time through the function scan (a call in the select
# list), as sorted 'id:v' lines
sub function_scan_rows
{
	my ($t) = @_;
	return $node->safe_psql('postgres',
		"SELECT (p).id || ':' || (p).v FROM (SELECT peek.persist_peek(NULL::item, 'c', $t) p) x ORDER BY 1");
}

my $t = $node->safe_psql('postgres', "SELECT replayed_upper - 1 FROM peek.replication WHERE object = 'c'");
my $want = function_scan_rows($t);
is(scalar(split /\n/, $want), 22000, "the contents at $t: 22000 rows");
like($node->safe_psql('postgres',
		"EXPLAIN SELECT * FROM peek.persist_peek(NULL::item, 'c', as_of => $t)"),
	qr/Custom Scan \(PersistPeekScan\)/, 'a call in FROM is streamed');

# 1. a cursor at $t, read in parts across compaction past $t
my $reader = bg_session($node, on_error_stop => 0);
$reader->query_safe('BEGIN');
$reader->query_safe(
	"DECLARE cur CURSOR FOR SELECT id || ':' || v FROM peek.persist_peek(NULL::item, 'c', as_of => $t)");
my @got = split /\n/, $reader->query_safe('FETCH 1000 FROM cur');
is(scalar(@got), 1000, 'the cursor returns its first 1000 rows');
is($node->safe_psql('postgres', 'SELECT count(*) FROM peek.active_peeks'), '0',
	'a streaming cursor holds no peek');
$node->safe_psql('postgres', q{
SELECT peek.write('c', ARRAY[(g, 'x' || g)::item], ARRAY[(g, 'v' || g)::item]) FROM generate_series(100, 400) g;
});
my $top = $node->safe_psql('postgres', "SELECT replayed_upper - 1 FROM peek.replication WHERE object = 'c'");
$node->safe_psql('postgres', "SELECT peek.allow_compaction('c', $top)");
ok(poll_until($node, "SELECT since = $top FROM peek.objects WHERE name = 'c'"),
	"compaction moves since to $top, past the cursor's time $t");
push @got, split /\n/, $reader->query_safe('FETCH 5000 FROM cur');

# 2. the runtimes restarted in the middle of the stream
my @pids = split /\n/, $node->safe_psql('postgres', 'SELECT pid FROM peek.runtimes');
kill 'TERM', @pids;
ok(poll_until($node,
		"SELECT count(*) = " . scalar(@pids) . " AND bool_and(state = 'running') FROM peek.runtimes"
		  . " WHERE pid NOT IN (" . join(',', @pids) . ")"),
	'the runtimes came back after SIGTERM');
push @got, split /\n/, $reader->query_safe('FETCH ALL FROM cur');
$reader->query_safe('COMMIT');
is(join("\n", sort @got), $want,
	"the cursor read the contents at $t exactly, across compaction and the runtimes' restart");
my ($state, $message) = sql_error($node,
	"SELECT count(*) FROM peek.persist_peek(NULL::item, 'c', as_of => $t)");
is($state, '72000', "a new peek at $t is refused: compacted ($message)");
$reader->quit;

# 3. a cancel in the middle of a slow stream
my $slow = start_bg($node, q{
SELECT count(*) FROM peek.persist_peek(NULL::item, 'c') p WHERE pg_sleep(0.001) IS NOT NULL;
}, verbose => 1);
my $pid = bg_backend_pid($node, $slow);
ok(defined $pid, 'the slow stream runs');
ok(poll_until($node,
		"SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid"),
	'the slow stream is between rows');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my ($rc, $out, $err) = finish_bg($slow, 30);
like($err, qr/57014/, 'the cancel ends the stream with 57014');
is($node->safe_psql('postgres', 'SELECT count(*) FROM peek.active_peeks'), '0',
	'nothing stays behind: no active peek');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')"),
	'22000', 'and the next peek works');

# 3b. one statement, one answer: a subquery rescanned for each outer row
# (its arguments unchanged) gives the answer of its first peek, though a
# write is published between the outer rows
my $locker = bg_session($node);
$locker->query_safe('SELECT pg_advisory_lock(4242)');
my $twice = start_bg($node, q{
SELECT string_agg(n::text, ',' ORDER BY g) FROM (
  SELECT g, (SELECT count(*) FROM peek.persist_peek(NULL::item, 'c') p WHERE p.id <> -g) AS n
    FROM generate_series(1, 2) g
   WHERE g = 1 OR pg_advisory_lock_shared(4242) IS NOT NULL) x;
});
my $twice_pid = bg_backend_pid($node, $twice);
ok(poll_until($node,
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $twice_pid"),
	'the statement peeked for its first row and waits before its second');
my $before = $node->safe_psql('postgres', "SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')");
$node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(30001, 'new')]::item[])");
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')"),
	$before + 1, 'a write is published meanwhile');
$locker->query_safe('SELECT pg_advisory_unlock(4242)');
$locker->quit;
($rc, $out, $err) = finish_bg($twice, 60);
is($out, "$before,$before", 'both outer rows saw the first answer (the function scan\'s behaviour)');

# 4. 40 clients at once, racing a writer and compaction up to their time
$t = $node->safe_psql('postgres', "SELECT replayed_upper - 1 FROM peek.replication WHERE object = 'c'");
$node->safe_psql('postgres', qq{
CREATE TABLE want AS
  SELECT count(*) AS n, sum(hashtext((p).id || ':' || (p).v)) AS h
    FROM (SELECT peek.persist_peek(NULL::item, 'c', $t) p) x;
CREATE TABLE wrong (n bigint, h bigint);
CREATE TABLE done (client int);
CREATE PROCEDURE writer(secs float8) LANGUAGE plpgsql AS \$\$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    k int;
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        k := 1 + floor(random() * 20000)::int;
        PERFORM peek.write('c', ARRAY[(k, 'y' || k)::item]);
        COMMIT;
        PERFORM peek.allow_compaction('c', $t);
        COMMIT;
        PERFORM pg_sleep(0.002);
    END LOOP;
END \$\$;
});
my $writer = start_bg($node, 'CALL writer(15)');
my @clients;
for my $client (1 .. 40)
{
	push @clients, start_bg($node, qq{
DO \$\$
DECLARE got_n bigint; got_h bigint;
BEGIN
    FOR i IN 1 .. 4 LOOP
        SELECT count(*), sum(hashtext(id || ':' || v)) INTO got_n, got_h
          FROM peek.persist_peek(NULL::item, 'c', as_of => $t);
        IF NOT EXISTS (SELECT FROM want w WHERE w.n = got_n AND w.h = got_h) THEN
            INSERT INTO wrong VALUES (got_n, got_h);
        END IF;
    END LOOP;
    INSERT INTO done VALUES ($client);
END \$\$;
}, timeout => 180);
}
my $failed = 0;
for my $h (@clients)
{
	my ($crc, $cout, $cerr) = finish_bg($h, 180);
	if ($crc != 0)
	{
		diag("client failed: $cerr");
		$failed++;
	}
}
is($failed, 0, '40 streaming clients all finished');
is($node->safe_psql('postgres', 'SELECT count(*) FROM done'), '40', 'each ran its 4 peeks');
is($node->safe_psql('postgres', 'SELECT count(*) FROM wrong'), '0',
	'every streamed answer equals the function scan\'s');
($rc, $out, $err) = finish_bg($writer, 60);
is($rc, 0, "the writer wrote throughout ($err)");
is($node->safe_psql('postgres', "SELECT since FROM peek.objects WHERE name = 'c'"), $t,
	"compaction folded up to the clients' time $t meanwhile");

$node->stop;
done_testing();
