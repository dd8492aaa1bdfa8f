# Fast-path peeks racing compaction and drops: a backend gates a
# ready peek itself and takes its hold under the registry entry's lock, the
# same lock under which compaction advances since.  For 20 s a writer logs
# every update in a history table, a compactor keeps allow_compaction three
# times behind the latest write, an index is created and dropped every
# 0.2 s, and readers peek at times that straddle the since: two with the
# fast path (the default), one with pg_peek.fast_path = off.  Every answer
# must equal the history at its time (a peek let through below the since
# would read updates advanced past its time); a compacted error must name
# a since above the peek's time; nothing else may fail.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $seconds = 20;
my $node = new_node('fast_path', conf => ['max_connections = 40']);
my $serve = serving_role();

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v int);
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
CREATE TABLE mirror (id int PRIMARY KEY, v int);
CREATE TABLE hist (t bigint, id int, v int, diff int);
CREATE INDEX ON hist (t);
CREATE TABLE wrong (route text, what text, t bigint, got text, want text);
CREATE TABLE errors (route text, what text, t bigint, sqlstate text, message text);
CREATE TABLE checks (route text, what text, compacted boolean);

CREATE FUNCTION want_at(t bigint, key int DEFAULT NULL) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(id || ':' || v, ',' ORDER BY id, v), '')
      FROM (SELECT id, v, generate_series(1, sum(diff)::int) FROM hist
             WHERE hist.t <= want_at.t AND (key IS NULL OR id = key)
             GROUP BY id, v HAVING sum(diff) > 0) s
$$;

CREATE PROCEDURE writer(secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    k int; old_v int; new_v int; t bigint; ins item[]; del item[];
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        k := 1 + floor(random() * 50)::int;
        new_v := floor(random() * 1000)::int;
        ins := ARRAY[ROW(k, new_v)::item]; del := '{}';
        SELECT v INTO old_v FROM mirror WHERE id = k;
        IF FOUND THEN
            del := ARRAY[ROW(k, old_v)::item];
            DELETE FROM mirror WHERE id = k;
        END IF;
        INSERT INTO mirror VALUES (k, new_v);
        t := peek.write('c', ins, del);
        INSERT INTO hist SELECT t, (r).id, (r).v, 1 FROM unnest(ins) r;
        INSERT INTO hist SELECT t, (r).id, (r).v, -1 FROM unnest(del) r;
        COMMIT;
        PERFORM pg_sleep(0.005);
    END LOOP;
END $$;

-- since chases the latest write: three times behind it
CREATE PROCEDURE compactor(secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    top bigint;
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        SELECT max(t) INTO top FROM hist;
        IF top > 3 THEN
            PERFORM peek.allow_compaction('c', top - 3);
            PERFORM peek.allow_compaction('c_by_id', top - 3);
        END IF;
        COMMIT;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;

CREATE PROCEDURE churn(secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        PERFORM peek.create_index('tmp_i', 'c', '{v}');
        COMMIT;
        PERFORM pg_sleep(0.2);
        PERFORM peek.drop_index('tmp_i');
        COMMIT;
    END LOOP;
END $$;

CREATE FUNCTION compare(route text, what text, t bigint, got text, want text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF got <> want THEN
        INSERT INTO wrong VALUES (route, what, t, got, want);
    END IF;
    INSERT INTO checks VALUES (route, what, false);
END $$;

-- peeks at times around the since; route is 'fast' or 'routed'
CREATE PROCEDURE reader(route text, secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    t bigint; k int; got text; what text; since bigint;
BEGIN
    PERFORM set_config('pg_peek.fast_path', CASE route WHEN 'fast' THEN 'on' ELSE 'off' END, false);
    WHILE clock_timestamp() < deadline LOOP
        SELECT max(h.t) - floor(random() * 8)::int INTO t FROM hist h;
        IF t IS NULL OR t < 0 THEN
            PERFORM pg_sleep(0.01);
            CONTINUE;
        END IF;
        k := 1 + floor(random() * 50)::int;
        FOR i IN 1 .. 4 LOOP
            BEGIN
                CASE i
                    WHEN 1 THEN
                        what := 'c_by_id key';
                        SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                          FROM peek.index_peek(NULL::item, 'c_by_id', ROW(k), as_of => t) p;
                        PERFORM compare(route, what, t, got, want_at(t, k));
                    WHEN 2 THEN
                        what := 'c_by_id';
                        SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                          FROM peek.index_peek(NULL::item, 'c_by_id', as_of => t) p;
                        PERFORM compare(route, what, t, got, want_at(t));
                    WHEN 3 THEN
                        what := 'c persist';
                        SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                          FROM peek.persist_peek(NULL::item, 'c', as_of => t) p;
                        PERFORM compare(route, what, t, got, want_at(t));
                    ELSE
                        what := 'tmp_i';
                        SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                          FROM peek.index_peek(NULL::item, 'tmp_i', as_of => t) p;
                        PERFORM compare(route, what, t, got, want_at(t));
                END CASE;
            EXCEPTION
                WHEN snapshot_too_old THEN
                    since := substring(SQLERRM FROM 'since (\d+)')::bigint;
                    IF since IS NULL OR since <= t THEN
                        INSERT INTO errors VALUES (route, what, t, SQLSTATE, SQLERRM);
                    ELSE
                        INSERT INTO checks VALUES (route, what, true);
                    END IF;
                WHEN undefined_object THEN
                    IF what <> 'tmp_i' THEN
                        INSERT INTO errors VALUES (route, what, t, SQLSTATE, SQLERRM);
                    END IF;
                WHEN OTHERS THEN
                    INSERT INTO errors VALUES (route, what, t, SQLSTATE, SQLERRM);
            END;
        END LOOP;
        COMMIT;
    END LOOP;
END $$;
});

# A session's cached lookup of a name does not outlive the extension: after
# another session's DROP EXTENSION and CREATE EXTENSION, the name is gone at
# once (not read from the old arrangement until maintenance notices).  The
# race below gets c and its index made again.
$node->safe_psql('postgres', q{
SELECT peek.create_collection('x', 'item');
SELECT peek.write('x', ARRAY[(1, 1)]::item[]);
SELECT peek.create_index('x_by_id', 'x', '{id}');
});
my $reader = bg_session($node, on_error_stop => 0);
is($reader->query_safe("SELECT count(*) FROM peek.index_peek(NULL::item, 'x_by_id')"), '1',
	'a session peeks x_by_id (its lookup is cached)');
$node->safe_psql('postgres', 'BEGIN; DROP EXTENSION pg_peek CASCADE; CREATE EXTENSION pg_peek; COMMIT;');
$reader->query("SELECT count(*) FROM peek.index_peek(NULL::item, 'x_by_id')");
like($reader->{stderr}, qr/index "x_by_id" does not exist/,
	'after DROP and CREATE EXTENSION in another session, its next peek of the name gets 42704');
$reader->quit;

# Nor does it outlive the object: a session skips the registry lookup of a
# cached object while no entry was tombstoned since its last one.  Another
# session drops the index and creates it again over a text column; the
# next peek converts ROW('a') to the new key's type (with the old lookup it
# would fail converting 'a' to int, before its gate).
$node->safe_psql('postgres', q{
CREATE TYPE named AS (id int, name text);
SELECT peek.create_collection('y', 'named');
SELECT peek.write('y', ARRAY[(1, 'a')]::named[]);
SELECT peek.create_index('y_by', 'y', '{id}');
});
$reader = bg_session($node, on_error_stop => 0);
is($reader->query_safe("SELECT name FROM peek.index_peek(NULL::named, 'y_by', ROW(1))")
	  . $reader->query_safe("SELECT name FROM peek.index_peek(NULL::named, 'y_by', ROW(1))"),
	'aa', 'a session peeks y_by keyed by id twice (the second from its cache)');
$node->safe_psql('postgres', q{
SELECT peek.drop_index('y_by');
SELECT peek.create_index('y_by', 'y', '{name}');
});
is($reader->query_safe("SELECT id FROM peek.index_peek(NULL::named, 'y_by', ROW('a'))"), '1',
	'after another session made y_by again over name, its next peek reads the new index');
$reader->quit;
$node->safe_psql('postgres', q{
SELECT peek.drop_collection('y');
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
});

sub counter
{
	my ($column) = @_;
	return $node->safe_psql('postgres', "SELECT $column FROM peek.runtimes WHERE role = '$serve'");
}

# A ready peek in a session with the fast path off goes through the runtime,
# with it on it does not.
$node->safe_psql('postgres', q{
INSERT INTO hist SELECT peek.write('c', ARRAY[(0, 0)]::item[]), 0, 0, 1;
INSERT INTO mirror VALUES (0, 0);
});
my ($fast0, $served0) = (counter('peeks_fast'), counter('peeks_served'));
$node->safe_psql('postgres', q{
SET pg_peek.fast_path = off;
SELECT * FROM peek.persist_peek(NULL::item, 'c', as_of => NULL);
SELECT * FROM peek.index_peek(NULL::item, 'c_by_id', as_of => NULL);
});
is(counter('peeks_fast') - $fast0, 0, 'fast_path off: no peek is gated in the backend');
is(counter('peeks_served') - $served0, 2, "fast_path off: both peeks are served by the $serve runtime");
($fast0, $served0) = (counter('peeks_fast'), counter('peeks_served'));
$node->safe_psql('postgres', q{
SELECT * FROM peek.persist_peek(NULL::item, 'c', as_of => NULL);
SELECT * FROM peek.index_peek(NULL::item, 'c_by_id', as_of => NULL);
});
is(counter('peeks_fast') - $fast0, 2, 'fast_path on (the default): both ready peeks are gated in the backend');
is(counter('peeks_served') - $served0, 0, "fast_path on: the $serve runtime serves neither");
my $durations0 = $node->safe_psql('postgres', 'SELECT sum(count) FROM peek.peek_durations');

# A fast-path peek records its hold in its backend's slot, where compaction
# reads it (as it does a routed peek's, see 050): a peek whose walk is
# blocked on the shard's lock shows its hold at its time until it returns,
# with the contents at that time, and then the since may pass it.
$node->safe_psql('postgres', q{
DO $$ BEGIN
    FOR i IN 1 .. 5 LOOP
        INSERT INTO hist SELECT peek.write('c', ARRAY[(100 + i, i)]::item[]), 100 + i, i, 1;
        INSERT INTO mirror VALUES (100 + i, i);
    END LOOP;
END $$;
});
my $t0 = $node->safe_psql('postgres', 'SELECT min(t) + 1 FROM hist');
my $top = $node->safe_psql('postgres', 'SELECT max(t) FROM hist');
my $want0 = $node->safe_psql('postgres', "SELECT want_at($t0)");
my $shard = $node->safe_psql('postgres', "SELECT shard FROM peek.collections WHERE name = 'c'");
my $locker = bg_session($node);
$locker->query_safe("BEGIN; LOCK TABLE $shard IN ACCESS EXCLUSIVE MODE;");
my $fast1 = counter('peeks_fast');
my $blocked = start_bg($node,
	"SELECT coalesce(string_agg(id || ':' || v, ',' ORDER BY id, v), '') FROM peek.persist_peek(NULL::item, 'c', as_of => $t0)");
ok(poll_until($node,
	"SELECT count(*) = 1 FROM peek.holds WHERE kind = 'peek' AND object = 'c' AND \"time\" = $t0"),
	"a fast-path peek blocked in its walk holds c at its time ($t0)");
is(counter('peeks_fast') - $fast1, 1, 'it was gated in its backend');
$node->safe_psql('postgres', "SELECT peek.allow_compaction('c', $top)");
$locker->query_safe('COMMIT;');
$locker->quit;
my ($rc0, $out0, $err0) = finish_bg($blocked, 60);
is($rc0, 0, 'the blocked peek finished') or diag($err0);
is($out0, $want0, 'with the contents at its time');
ok(poll_until($node, "SELECT since > $t0 FROM peek.frontiers WHERE object = 'c' LIMIT 1"),
	'once it returned, the since moved past its time');


my @bg = (
	start_bg($node, "CALL writer($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL compactor($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL churn($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL reader('fast', $seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL reader('fast', $seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL reader('routed', $seconds)", timeout => $seconds + 120),
);
for my $h (@bg)
{
	my ($rc, $out, $err) = finish_bg($h, $seconds + 120);
	is($rc, 0, "background session '$h->{sql}' ended normally") or diag($err);
}

my %checked = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT route || ' ' || what || ' ' || CASE WHEN compacted THEN 'compacted' ELSE 'answered' END, count(*)
	   FROM checks GROUP BY 1");
for my $route ('fast', 'routed')
{
	for my $what ('c_by_id key', 'c_by_id', 'c persist', 'tmp_i')
	{
		my $n = $checked{"$route $what answered"} // 0;
		cmp_ok($n, '>', 5, "$route readers compared answers of $what with the history ($n)");
	}
	my $compacted = 0;
	$compacted += $checked{"$route $_ compacted"} // 0 for ('c_by_id key', 'c_by_id', 'c persist');
	cmp_ok($compacted, '>', 0,
		"$route readers met the since: $compacted peeks below it were refused, naming a since above their time");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM wrong'), '0', 'no answer differs from the history')
  or diag($node->safe_psql('postgres', 'SELECT * FROM wrong LIMIT 10'));
is($node->safe_psql('postgres', 'SELECT count(*) FROM errors'), '0',
	'no unexpected error, and no compacted error at a time at or above the since')
  or diag($node->safe_psql('postgres', 'SELECT * FROM errors LIMIT 10'));

# both routes are counted: the fast ones in peeks_fast, all in the durations
cmp_ok(counter('peeks_fast') - $fast0, '>', 100, 'the fast readers were gated in their backends');
cmp_ok($node->safe_psql('postgres', 'SELECT sum(count) FROM peek.peek_durations') - $durations0,
	'>=', $node->safe_psql('postgres', 'SELECT count(*) FROM checks'),
	'peek.peek_durations counts the peeks of both routes');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.holds WHERE kind = 'peek'"), '0',
	'no peek hold is left behind');
cmp_ok($node->safe_psql('postgres', "SELECT since FROM peek.frontiers WHERE object = 'c_by_id' LIMIT 1"),
	'>', 0, 'compaction did advance the since while the readers ran');

done_testing();
