# Persist peeks over a shard's base and recent updates, against a history table written in the same transactions (the
# oracle): full and limited peeks at many times, across compactions, across
# a crash (pg_ctl stop -m immediate) in the middle of compaction-heavy
# writes, negative counts behind a limit, and a writer that keeps committing
# while a compaction folds ~200k rows into the base.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgPeekTest;

my $node = new_node('layout');
sub sql { return $node->safe_psql('postgres', $_[0]); }

my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";

sql(q{
CREATE EXTENSION pg_peek;
CREATE TYPE kv AS (k int, v text);
SELECT peek.create_collection('c', 'kv');
CREATE TABLE hist (t bigint, k int, v text, diff bigint);

-- one write of the collection and its oracle, in one transaction
CREATE FUNCTION step(ins kv[], del kv[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE t bigint;
BEGIN
    t := peek.write('c', ins, del);
    INSERT INTO hist SELECT t, (r).k, (r).v, 1 FROM unnest(ins) r;
    INSERT INTO hist SELECT t, (r).k, (r).v, -1 FROM unnest(del) r;
    RETURN t;
END $$;

-- n writes, each inserting a few rows (repeats too) and deleting a few
-- present ones; with commit, one transaction per write
CREATE FUNCTION churn_once() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE ins kv[]; del kv[];
BEGIN
    SELECT array_agg((floor(random() * 300)::int, 'v' || floor(random() * 3)::int)::kv)
      INTO ins FROM generate_series(1, 1 + floor(random() * 4)::int);
    SELECT coalesce(array_agg((k, v)::kv), '{}') INTO del FROM (
        SELECT k, v FROM hist GROUP BY k, v HAVING sum(diff) > 0
         ORDER BY random() LIMIT floor(random() * 3)::int) d;
    RETURN step(ins, del);
END $$;
CREATE PROCEDURE churn(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM churn_once();
        COMMIT;
    END LOOP;
END $$;

-- 'ok', or what differs: the full peek at t equals the history's contents
-- at t; the limited one has min(lim, size) rows, each of the contents
CREATE FUNCTION check_at(at bigint, lim bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE expect text[]; got text[]; limited text[];
BEGIN
    SELECT coalesce(array_agg(r ORDER BY r), '{}') INTO expect FROM (
        SELECT (k, v)::kv::text AS r FROM (
            SELECT k, v, sum(diff) AS c FROM hist WHERE t <= at GROUP BY k, v HAVING sum(diff) > 0) s,
          generate_series(1, s.c)) x;
    SELECT coalesce(array_agg(p::text ORDER BY p::text), '{}') INTO got
      FROM peek.persist_peek(NULL::kv, 'c', as_of => at) p;
    IF got IS DISTINCT FROM expect THEN
        RETURN format('t=%s: full peek %s rows, history %s', at, cardinality(got), cardinality(expect));
    END IF;
    SELECT coalesce(array_agg(p::text), '{}') INTO limited
      FROM peek.persist_peek(NULL::kv, 'c', as_of => at, "limit" => lim) p;
    IF cardinality(limited) <> least(lim, cardinality(expect)) OR EXISTS (
        SELECT 1 FROM (SELECT e, count(*) AS n FROM unnest(limited) e GROUP BY e) l
         WHERE l.n > (SELECT count(*) FROM unnest(expect) x WHERE x = l.e)) THEN
        RETURN format('t=%s: limit %s gave %s rows, not a part of the contents', at, lim, cardinality(limited));
    END IF;
    RETURN 'ok';
END $$;

-- every time from the durable since to the last complete one (at most
-- n of them, the latest), with limits 1 and 7
CREATE FUNCTION check_all(n int) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(r, '; '), 'ok') FROM (
        SELECT check_at(t, lim) AS r
          FROM (SELECT greatest(o.replayed_since, o.replayed_upper - n) AS lo, o.replayed_upper - 1 AS hi
                  FROM peek.replication o WHERE o.object = 'c') b,
               generate_series(b.lo, b.hi) t, (VALUES (1), (7)) l(lim)) x
     WHERE r <> 'ok'
$$;
});
ok(poll_until($node, $running_sql), 'the runtimes are running');
my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'c'");

sub durable_since { return sql("SELECT since FROM peek.objects WHERE name = 'c'"); }
sub upper { return sql("SELECT replayed_upper FROM peek.replication WHERE object = 'c'"); }

sub compact_to
{
	my ($since, $label) = @_;
	sql("SELECT peek.allow_compaction('c', $since)");
	ok(poll_until($node, "SELECT since >= $since FROM peek.objects WHERE name = 'c'"),
		"$label: the durable since reaches $since");
}

# ---- history, compactions, checks at every time ---------------------------

sql(q{SELECT step(array_agg((g % 300, 'v' || g % 3)::kv), '{}') FROM generate_series(1, 3000) g});
sql('CALL churn(60)');
is(sql('SELECT check_all(100)'), 'ok', 'before any compaction: every time agrees with the history');

for my $round (1 .. 3)
{
	my $since = upper() - 20;
	compact_to($since, "round $round");
	cmp_ok(sql("SELECT count(*) FROM $shard WHERE time <= $since")
		  , '<=', sql("SELECT count(DISTINCT (k, v)) FROM hist"),
		"round $round: at most one base row per distinct row");
	sql('CALL churn(40)');
	is(sql('SELECT check_all(100)'), 'ok', "round $round: every time from since agrees with the history");
}

# a compaction that folds everything: the base alone, then recent rows again
compact_to(upper() - 1, 'fold all');
is(sql('SELECT check_all(5)'), 'ok', 'after folding all: agrees with the history');
is(sql("SELECT count(*) FROM $shard WHERE time > (SELECT since FROM peek.objects WHERE name = 'c')"),
	'0', 'after folding all: no recent rows');
is(sql("SELECT count(*) FROM $shard WHERE time <> -1"), '0',
	'after folding all: every row is a base row, stored at time -1');

# writes, at times >= 0, add nothing to the base's indexes: 20k rows grow
# the time index, not the rows index (nor the flagged one, with deletes).
# The moving base folds such a big time in a fold worker once writes paused
# for 500 ms, or under writes once it stopped there 2 s ago
# (runtime/folds.c), which does add to them: the writes are measured again
# until no fold ran between the two measurements.  Each is taken once no
# runtime is in a transaction (a fold's uncommitted rows grow the indexes
# too; on a loaded machine the runtime is still sealing the writes when
# they return), and the base's time must be the same at both.
my $sizes = "SELECT pg_relation_size('${shard}_time_idx') || ' ' || pg_relation_size('${shard}_rows')
                    || ' ' || pg_relation_size('${shard}_flagged')
                    || ' ' || coalesce((SELECT base_time FROM peek.objects WHERE name = 'c'), -2)
                    || ' ' || (SELECT count(*) FROM pg_stat_activity
                                WHERE backend_type LIKE 'pg_peek%' AND xact_start IS NOT NULL)";

# the sizes, the base's time and how many runtimes are in a transaction (0
# unless a minute passed without a moment when none was)
sub idle_sizes
{
	my $deadline = time + 60;
	my @v;
	do { @v = split / /, sql($sizes); usleep(20_000) if $v[4] > 0 }
	  while ($v[4] > 0 && time < $deadline);
	return @v;
}
my ($time0, $rows0, $flagged0, $base0, $busy0, $time1, $rows1, $flagged1, $base1, $busy1);
for my $attempt (1 .. 5)
{
	($time0, $rows0, $flagged0, $base0, $busy0) = idle_sizes();
	sql(q{SELECT step(array_agg((1000 + g, 'bulk')::kv), '{}') FROM generate_series(1, 20000) g});
	sql(q{SELECT step('{}', array_agg((1000 + g, 'bulk')::kv)) FROM generate_series(1, 20000) g});
	($time1, $rows1, $flagged1, $base1, $busy1) = idle_sizes();
	last if $base1 == $base0 && $busy0 == 0 && $busy1 == 0;
	note("attempt $attempt: a fold ran during the writes (base $base0 -> $base1, $busy0 and $busy1 in a transaction)");
	# let the base fold what it will before the next attempt
	poll_until($node, "SELECT base_time = (SELECT replayed_upper - 1 FROM peek.replication WHERE object = 'c')
	                     FROM peek.objects WHERE name = 'c'");
}
is("$base1 $busy0 $busy1", "$base0 0 0", 'no fold ran between the measurements of the writes');
cmp_ok($time1, '>', $time0 + 100_000, 'the writes of 40k rows grew the time index');
is("$rows1 $flagged1", "$rows0 $flagged0", 'and neither the rows index nor the flagged one');
is(sql('SELECT check_all(5)'), 'ok', 'after the bulk writes: agrees with the history');

# ---- negative counts: the base does not hide them; a limit reads no further -

sql(q{
SELECT peek.create_collection('neg', 'kv');
SELECT peek.write('neg', array_agg((g, 'n')::kv)) FROM generate_series(1, 500) g;
SELECT peek.write('neg', ARRAY[(1, 'n')]::kv[]);
SELECT peek.allow_compaction('neg', 1);
});
ok(poll_until($node, "SELECT since = 1 FROM peek.objects WHERE name = 'neg'"), 'neg: compacted to 1');
# a row of the base retracted three times (it has two copies), at time 2;
# each sql() is a session of its own, which does not wait for another's
# write to be published unless it peeks at the write's time
sql(q{SELECT peek.write('neg', '{}'::kv[], ARRAY[(1, 'n'), (1, 'n'), (1, 'n')]::kv[])});
sub negative_error
{
	my ($label) = @_;
	my ($code, $msg) = sql_error($node, q{SELECT * FROM peek.persist_peek(NULL::kv, 'neg', as_of => 2)});
	is("$code: $msg", '22000: row (1,n) of "neg" has multiplicity -1 at time 2', $label);
}
negative_error('a negative count from recent updates fails a peek');
is(sql(q{SELECT count(*) FROM peek.persist_peek(NULL::kv, 'neg', "limit" => 0)}), '0',
	'a peek with limit 0 reads no row, so it does not meet the negative one (as an index peek)');
# folded into the base: a negative base row, flagged
sql(q{SELECT peek.allow_compaction('neg', 2)});
ok(poll_until($node, "SELECT since = 2 FROM peek.objects WHERE name = 'neg'"), 'neg: compacted to 2');
negative_error('a negative count in the base fails a peek');
my $made_good = sql(q{SELECT peek.write('neg', ARRAY[(1, 'n'), (1, 'n')]::kv[])});
is(sql(qq{SELECT count(*) FROM peek.persist_peek(NULL::kv, 'neg', as_of => $made_good)}), '500',
	'a negative base row made good by recent updates counts again');
is(sql(qq{SELECT count(*) FROM peek.persist_peek(NULL::kv, 'neg', as_of => $made_good, "limit" => 3)}),
	'3', 'and the limit applies');

# ---- a whole compaction (the base indexes dropped), a count out of range ----
# compact_whole replaces every row up to the since by base rows at -1 (the
# count out of bigint's range in parts), so once the index is back no row
# sits between the base and the since, outside the base's indexes
sql(q{
SELECT peek.create_collection('ovf', 'kv');
SELECT peek.append('ovf', ARRAY[(1, 'a'), (2, 'b')]::kv[], 0);
SELECT peek.append('ovf', ARRAY[(9, 'big')]::kv[], 1, 9223372036854775807);
SELECT peek.append('ovf', ARRAY[(9, 'big')]::kv[], 2, 9223372036854775807);
SELECT peek.append('ovf', ARRAY[(1, 'a')]::kv[], 3, -1);
SELECT peek.advance('ovf', 4);
});
my $ovf = sql("SELECT shard FROM peek.collections WHERE name = 'ovf'");
(my $ovf_name = $ovf) =~ s/^peek\.//;
sql("DROP INDEX ${ovf}_rows");
sql(q{SELECT peek.allow_compaction('ovf', 3)});
ok(poll_until($node, "SELECT since = 3 FROM peek.objects WHERE name = 'ovf'"), 'ovf: compacted to 3, read whole');
is(sql("SELECT count(*) FROM $ovf WHERE time >= 0"), '0',
	'ovf: every row up to the since is a base row at -1, the count out of range too');
sql(q{
SELECT peek.append('ovf', ARRAY[(9, 'big')]::kv[], 4, -9223372036854775807);
SELECT peek.append('ovf', ARRAY[(9, 'big')]::kv[], 5, -9223372036854775807);
SELECT peek.advance('ovf', 6);
});
sql("CREATE INDEX ${ovf_name}_rows ON $ovf (peek.row_hash(data)) WHERE time < 0");
is(sql(q{SELECT string_agg(p::text, ' ') FROM peek.persist_peek(NULL::kv, 'ovf') p}), '(2,b)',
	'ovf: with the index back, the retracted and the cancelled rows are gone');
is(sql(q{SELECT string_agg(p::text, ' ') FROM peek.persist_peek(NULL::kv, 'ovf', "limit" => 5) p}), '(2,b)',
	'ovf: and a limited peek agrees');

# ---- a crash in the middle of compaction-heavy writes ---------------------

sql(q{SELECT peek.allow_compaction('c', 9223372036854775807)});
my $bg = start_bg($node, 'CALL churn(100000)');
usleep(200_000) while upper() < 300;
my $before_crash = upper();
$node->stop('immediate');
finish_bg($bg);
$node->start;
ok(poll_until($node, $running_sql), 'after the crash: the runtimes are running');
cmp_ok(upper(), '>=', $before_crash, 'after the crash: the committed writes are there');
note('durable since ' . durable_since() . ', upper ' . upper());
is(sql('SELECT check_all(60)'), 'ok', 'after the crash: every time from since agrees with the history');
sql('CALL churn(30)');
ok(poll_until($node, "SELECT replayed_since = replayed_upper - 1 FROM peek.replication WHERE object = 'c'"),
	'after the crash: compaction follows the upper again');
is(sql('SELECT check_all(40)'), 'ok', 'after more writes and compactions: agrees with the history');

# ---- a writer keeps committing while ~200k rows fold into the base --------

sql(q{
SELECT peek.allow_compaction('c', (SELECT since FROM peek.objects WHERE name = 'c'));
SELECT peek.create_collection('big', 'kv');
SELECT peek.write('big', array_agg((g, 'big')::kv)) FROM generate_series(1, 200000) g;
SELECT peek.write('big', ARRAY[(0, 'x')]::kv[]);
CREATE TABLE lat (at timestamptz, ms float8);
CREATE PROCEDURE writer(n int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    FOR i IN 1 .. n LOOP
        t0 := clock_timestamp();
        PERFORM peek.write('big', ARRAY[(-i, 'w')]::kv[]);
        COMMIT;
        INSERT INTO lat VALUES (t0, extract(epoch FROM clock_timestamp() - t0) * 1000);
        COMMIT;
        PERFORM pg_sleep(0.005);
    END LOOP;
END $$;
});
my $w = start_bg($node, 'CALL writer(100000)');
usleep(300_000);
my $t0 = time;
sql(q{SELECT peek.allow_compaction('big', 1)});
ok(poll_until($node, "SELECT since >= 1 FROM peek.objects WHERE name = 'big'", 't', 120),
	'big: the durable since reaches 1 (the 200k rows folded)');
my $fold_s = time - $t0;
usleep(300_000);
$node->safe_psql('postgres', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL writer%'});
finish_bg($w);
my ($n, $max) = split /\|/, sql(q{SELECT count(*), round(max(ms)::numeric, 1) FROM lat});
note(sprintf('compaction of 200k rows took %.2f s; %d writes, the slowest %s ms', $fold_s, $n, $max));
cmp_ok($n, '>=', 10, 'the writer committed during the compaction');
cmp_ok($max, '<', 1000, 'no write waited a second for the compaction');
my $big = sql("SELECT shard FROM peek.collections WHERE name = 'big'");
# the base moves on with the writer's rows (folds.c): the rows at 1 and
# those it folded after, each distinct row once; no update at 1 is left
is(sql("SELECT count(*) = count(DISTINCT data) AND count(*) >= 200001 FROM $big WHERE time < 0"), 't',
	'big: the base has one row per distinct row');
is(sql("SELECT count(*) FROM $big WHERE time BETWEEN 0 AND 1"), '0',
	'big: no update at or before the since is left');
is(sql(q{SELECT count(*) FROM peek.persist_peek(NULL::kv, 'big', "limit" => 10)}), '10',
	'big: a limited peek');
# the cancel may land between a write's commit and its lat row's
is(sql(q{SELECT count(*) - 200001 - (SELECT count(*) FROM lat) BETWEEN 0 AND 1 FROM peek.persist_peek(NULL::kv, 'big')}),
	't', 'big: the full peek has the base and the writer\'s rows');

done_testing();
