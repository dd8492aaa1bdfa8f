# DDL churn while writers and readers run: for 30 s, one session
# writes inserts and deletes to collection c (and logs every update in a
# history table, in the same transaction); another creates and drops an
# index on c every 0.3 s, creates, fills, peeks and drops a second
# collection with an index, raises allow_compaction and rolls back drops in
# savepoints; readers peek c's stable index, the churned index and c's
# shard at logged times and compare every answer with the history; the
# runtimes get SIGTERM now and then.  Afterwards: no wrong answer, no
# unexpected error, no crash in the server log, no runtime restart but the
# ones the test caused, no tombstone left, and the arrangement memory back
# to zero once everything is dropped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use PgPeekTest;

my $seconds = 30;
# %b: the backend type, to tell the runtimes' log lines apart
my $node = new_node('churn', conf => ['max_connections = 40', "log_line_prefix = '%m [%p] %b '"]);

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v int);
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
CREATE TABLE mirror (id int PRIMARY KEY, v int);
CREATE TABLE hist (t bigint, id int, v int, diff int);
CREATE INDEX ON hist (t);
CREATE INDEX ON hist (id, t);
CREATE TABLE wrong (what text, t bigint, got text, want text);
CREATE TABLE errors (what text, sqlstate text, message text);
CREATE TABLE checks (what text);

-- the contents of c at time t per the history, as sorted 'id:v' items
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
        ins := '{}'; del := '{}';
        FOR j IN 1 .. 5 LOOP
            k := 1 + floor(random() * 200)::int;
            SELECT v INTO old_v FROM mirror WHERE id = k;
            IF FOUND THEN
                del := del || ROW(k, old_v)::item;
                DELETE FROM mirror WHERE id = k;
            END IF;
            IF random() < 0.7 THEN
                new_v := floor(random() * 1000)::int;
                ins := ins || ROW(k, new_v)::item;
                INSERT INTO mirror VALUES (k, new_v);
            END IF;
        END LOOP;
        t := peek.write('c', ins, del);
        INSERT INTO hist SELECT t, (r).id, (r).v, 1 FROM unnest(ins) r;
        INSERT INTO hist SELECT t, (r).id, (r).v, -1 FROM unnest(del) r;
        COMMIT;
    END LOOP;
END $$;

-- one answer checked: counted, and recorded if wrong
CREATE FUNCTION compare(what text, t bigint, got text, want text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF got <> want THEN
        INSERT INTO wrong VALUES (what, t, got, want);
    END IF;
    INSERT INTO checks VALUES (what);
END $$;

-- errors a churned object may give: it is dropped (42704), compacted past
-- the time (72000); anything else is recorded
CREATE PROCEDURE reader(secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    t bigint; k int; got text; want text; what text;
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        SELECT max(h.t) - floor(random() * 20)::int INTO t FROM hist h;
        IF t IS NULL OR t < 0 THEN
            PERFORM pg_sleep(0.01);
            CONTINUE;
        END IF;
        k := 1 + floor(random() * 200)::int;
        BEGIN
            what := 'c_by_id key';
            SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
              FROM peek.index_peek(NULL::item, 'c_by_id', ROW(k), as_of => t) p;
            want := want_at(t, k);
            PERFORM compare(what, t, got, want);
            IF random() < 0.3 THEN
                what := 'c_by_id';
                SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                  FROM peek.index_peek(NULL::item, 'c_by_id', as_of => t) p;
                want := want_at(t);
                PERFORM compare(what, t, got, want);
                what := 'c persist';
                SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                  FROM peek.persist_peek(NULL::item, 'c', as_of => t) p;
                PERFORM compare(what, t, got, want);
            END IF;
            IF random() < 0.3 THEN
                what := 'tmp_i';
                SELECT coalesce(string_agg(p.id || ':' || p.v, ',' ORDER BY p.id, p.v), '') INTO got
                  FROM peek.index_peek(NULL::item, 'tmp_i', as_of => t) p;
                want := want_at(t);
                PERFORM compare(what, t, got, want);
            END IF;
        EXCEPTION
            WHEN undefined_object OR snapshot_too_old THEN
                NULL;
            WHEN OTHERS THEN
                INSERT INTO errors VALUES (what, SQLSTATE, SQLERRM);
        END;
        COMMIT;
    END LOOP;
END $$;

CREATE PROCEDURE ddl(secs float8) LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + secs * interval '1 second';
    n int := 0; top bigint; got bigint;
BEGIN
    WHILE clock_timestamp() < deadline LOOP
        n := n + 1;
        PERFORM peek.create_index('tmp_i', 'c', '{v}');
        COMMIT;
        PERFORM pg_sleep(0.3);
        PERFORM peek.drop_index('tmp_i');
        COMMIT;

        -- a second collection, its index, peeked, then dropped whole
        PERFORM peek.create_collection('tmp_c', 'item');
        PERFORM peek.write('tmp_c', ARRAY[(1, n), (2, n)]::item[]);
        PERFORM peek.create_index('tmp_ci', 'tmp_c', '{id}');
        COMMIT;
        SELECT count(*) INTO got FROM peek.index_peek(NULL::item, 'tmp_ci', ROW(1), as_of => 0);
        IF got <> 1 THEN
            INSERT INTO wrong VALUES ('tmp_ci', 0, got::text, '1');
        END IF;
        PERFORM peek.drop_collection('tmp_c');
        COMMIT;

        -- drops undone by a savepoint leave the objects working
        BEGIN
            PERFORM peek.drop_index('c_by_id');
            PERFORM peek.drop_collection('c');
            RAISE EXCEPTION 'undo';
        EXCEPTION WHEN raise_exception THEN
            NULL;
        END;
        COMMIT;

        IF n % 3 = 0 THEN
            SELECT max(t) INTO top FROM hist;
            IF top > 40 THEN
                PERFORM peek.allow_compaction('c', top - 40);
                PERFORM peek.allow_compaction('c_by_id', top - 40);
            END IF;
            COMMIT;
        END IF;
    END LOOP;
END $$;
});

my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
ok(poll_until($node,
	"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'runtimes are running');
my %restarts_before = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT role, restarts FROM peek.runtimes');

my @bg = (
	start_bg($node, "CALL writer($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL ddl($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL reader($seconds)", timeout => $seconds + 120),
	start_bg($node, "CALL reader($seconds)", timeout => $seconds + 120),
);

# SIGTERM a runtime every 7 s, each role in turn
my @roles = interactive_mode() eq 'on' ? ('maintenance', 'interactive') : ('solo');
my %kills = map { $_ => 0 } @roles;
my $start = time;
my $next_kill = $start + 5;
my $i = 0;
while (time < $start + $seconds - 3)
{
	if (time >= $next_kill)
	{
		my $role = $roles[ $i++ % @roles ];
		my $pid = runtime_pid($node, $role);
		if (defined $pid && kill('TERM', $pid))
		{
			$kills{$role}++;
			# wait for its successor before the next one
			poll_until($node,
				"SELECT pid IS NOT NULL AND pid <> $pid AND state = 'running' FROM peek.runtimes WHERE role = '$role'");
		}
		$next_kill = time + 7;
	}
	usleep(200_000);
}

for my $h (@bg)
{
	my ($rc, $out, $err) = finish_bg($h, $seconds + 120);
	is($rc, 0, "background session '$h->{sql}' ended normally") or diag($err);
}

my $writes = $node->safe_psql('postgres', 'SELECT count(DISTINCT t) FROM hist');
cmp_ok($writes, '>', 20, "the writer wrote ($writes writes)");
# the readers did compare answers, of each kind
my %checked = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT what, count(*) FROM checks GROUP BY what');
for my $what ('c_by_id key', 'c_by_id', 'c persist', 'tmp_i')
{
	cmp_ok($checked{$what} // 0, '>', 10, "readers compared answers of $what (" . ($checked{$what} // 0) . ")");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM wrong'), '0', 'no wrong answer')
  or diag($node->safe_psql('postgres', 'SELECT * FROM wrong LIMIT 10'));
is($node->safe_psql('postgres', 'SELECT count(*) FROM errors'), '0', 'no unexpected error')
  or diag($node->safe_psql('postgres', 'SELECT * FROM errors LIMIT 10'));

# the end state equals the mirror, through the index and the shard
my $mirror = $node->safe_psql('postgres',
	"SELECT coalesce(string_agg(id || ':' || v, ',' ORDER BY id, v), '') FROM mirror");
is($node->safe_psql('postgres',
	"SELECT coalesce(string_agg(id || ':' || v, ',' ORDER BY id, v), '') FROM peek.index_peek(NULL::item, 'c_by_id')"),
	$mirror, 'the index at the latest time equals the mirror table');
is($node->safe_psql('postgres',
	"SELECT coalesce(string_agg(id || ':' || v, ',' ORDER BY id, v), '') FROM peek.persist_peek(NULL::item, 'c')"),
	$mirror, 'the shard at the latest time equals the mirror table');

# restarts: exactly the SIGTERMs the test sent
my %restarts_after = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT role, restarts FROM peek.runtimes');
for my $role (@roles)
{
	cmp_ok($kills{$role}, '>', 0, "the $role runtime got SIGTERM");
	is($restarts_after{$role} - $restarts_before{$role}, $kills{$role},
		"the $role runtime restarted only after its $kills{$role} SIGTERMs");
}

# drops leave nothing behind
$node->safe_psql('postgres', "SELECT peek.drop_collection('c')");
ok(poll_until($node, 'SELECT count(*) = 0 FROM peek.registry_status()'),
	'no registry entry is left once every object is dropped');
ok(poll_until($node, 'SELECT bool_and(dsa_bytes = 0) FROM peek.runtimes'),
	'arrangement memory is back to zero')
  or diag($node->safe_psql('postgres', 'SELECT role, dsa_bytes FROM peek.runtimes'));

my $log = slurp_file($node->logfile);
my @crashes = $log =~ /^.*(?:terminated by signal|PANIC:|TRAP:|dsa_allocate|could not find free pages|exited with exit code [2-9]).*$/mg;
is(scalar(@crashes), 0, 'no crash or DSA error in the server log')
  or diag(join("\n", @crashes[0 .. ($#crashes < 9 ? $#crashes : 9)]));
my @runtime_errors = $log =~ /^.*pg_peek (?:maintenance|interactive|solo) .*ERROR:.*$/mg;
is(scalar(@runtime_errors), 0, 'no runtime logged an error')
  or diag(join("\n", @runtime_errors[0 .. ($#runtime_errors < 9 ? $#runtime_errors : 9)]));

$node->stop;
done_testing();
