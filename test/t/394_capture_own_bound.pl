# A capture round executes again the invalidations the runtime learned
# since the oldest transaction it may replay (historic_caches.c); pg_peek's
# own transactions (origin DoNotReplicateId: the runtime's, fold workers',
# loaders') never replay and do not hold that bound back (rounds.c,
# oldest_replay).  Attacked here: DDL on captured tables that keeps their
# sources (a rewrite keeping the row type, a RENAME, VACUUM FULL, a new
# source's REPLICA IDENTITY FULL, an attribute added to a composite
# column's type) or fails one by design (a captured column retyped) committed while long own transactions run
# -- a view's hydration over a big source, a fold of its shard -- and while
# users' transactions that began before it (with savepoints, one rolled
# back) are open and write the tables after it, one doing DDL after its
# first write; the sources decoding at different positions (one far behind
# in a big UPDATE); the maintenance runtime restarted in the middle of a
# hydration.  Each source must equal its table at every time recorded
# after a commit, no source fails, the view equals its query, and the log
# has no error ("cache lookup failed", "no longer has REPLICA IDENTITY").
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_own_bound',
	conf => ['autovacuum = off', 'max_wal_size = 2GB', 'logical_decoding_work_mem = 64MB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $maintenance_role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my @tables = qw(big names t1 t2 t3 t4);

sql(q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_peek;
	CREATE TABLE big (k int, v text);
	INSERT INTO big SELECT i, 'b' || i FROM generate_series(1, 200000) i;
	CREATE TABLE names (g int, label text);
	INSERT INTO names SELECT g, 'n' || g FROM generate_series(0, 999) g;
	CREATE TABLE t1 (k int, v text);
	CREATE TABLE t2 (k int, v int);
	CREATE TABLE t3 (k int, v text);
	CREATE TABLE t4 (k int, v int);
	INSERT INTO t1 SELECT i, 'a' || i FROM generate_series(1, 100) i;
	INSERT INTO t2 SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO t3 SELECT i, 'c' || i FROM generate_series(1, 100) i;
	INSERT INTO t4 SELECT i, i FROM generate_series(1, 100) i;
	CREATE TYPE comp AS (a int, b text);
	CREATE TABLE t5 (k int, c comp);
	INSERT INTO t5 SELECT i, ROW(i, 'x' || i)::comp FROM generate_series(1, 100) i;
	CREATE TABLE t6 (k int, v int);
	INSERT INTO t6 SELECT i, i FROM generate_series(1, 100) i;
	SELECT peek.create_source('big_src', 'big');
	SELECT peek.create_source('names_src', 'names');
	SELECT peek.create_source('t1_src', 't1');
	SELECT peek.create_source('t2_src', 't2');
	SELECT peek.create_source('t3_src', 't3');
	SELECT peek.create_source('t5_src', 't5');
	SELECT peek.create_source('t6_src', 't6');
	-- each table's contents at a time recorded after a commit, as text
	CREATE TABLE snaps (src text, t bigint, r text);
	CREATE FUNCTION snap(tbl regclass, src text) RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE t bigint := (pg_current_wal_insert_lsn() - '0/0')::bigint;
	BEGIN
		EXECUTE format('INSERT INTO snaps SELECT %L, %s, x::text FROM %s x', src, t, tbl);
		RETURN t;
	END $$;
});
ok(poll_until($node, "SELECT count(*) FROM peek.collections WHERE source IS NOT NULL AND state = 'ready'",
		'7', 120),
	'the sources are loaded');

# record every source's table now (each table of a source under its current name)
my %source_of = (big => 'big_src', names => 'names_src', t1 => 't1_src', t2 => 't2_src',
	t3 => 't3_src', t5 => 't5_src', t6 => 't6_src');
sub snap_all
{
	for my $tbl (sort keys %source_of)
	{
		sql("SELECT snap('$tbl', '$source_of{$tbl}')");
	}
}
snap_all();

# big_src far behind the others: a big UPDATE of its table
sql("UPDATE big SET v = v || 'u' WHERE k % 2 = 0");
snap_all();

# users' transactions that began before the DDL below
my $u1 = bg_session($node);
$u1->query_safe("BEGIN; INSERT INTO t1 VALUES (1001, 'u1 before')");
my $u2 = bg_session($node);
$u2->query_safe(q{BEGIN; SAVEPOINT a; INSERT INTO t2 VALUES (1001, 1); RELEASE a;
	SAVEPOINT b; INSERT INTO t2 VALUES (1002, 2); UPDATE t2 SET v = -v WHERE k <= 10; ROLLBACK TO b;
	UPDATE t2 SET v = v + 1000 WHERE k = 11});
my $u3 = bg_session($node);
$u3->query_safe("BEGIN; INSERT INTO t1 VALUES (1003, 'u3 before')");

# a long own transaction: a view's hydration over big (200k rows out)
sql(q{SELECT peek.create_view('bigv', $$
	SELECT b.k, b.v, n.label FROM peek.persist_peek(NULL::big, 'big_src') b
	  JOIN peek.persist_peek(NULL::names, 'names_src') n ON b.k % 1000 = n.g$$)});

# DDL that keeps the sources, while it hydrates and the users' transactions are open
sql("ALTER TABLE t3 ALTER COLUMN v TYPE text USING v || '.'");
snap_all();
sql("ALTER TABLE names RENAME TO names2");
delete $source_of{names};
$source_of{names2} = 'names_src';
sql("INSERT INTO names2 VALUES (1000, 'renamed')");
snap_all();
# a composite column's type gains an attribute in a user's transaction that
# wrote the table before and after it; a column added to t6, which fails its
# source by design (its row type changed) and no other
sql(q{BEGIN;
	INSERT INTO t5 VALUES (1001, ROW(1001, 'before'));
	ALTER TYPE comp ADD ATTRIBUTE z int;
	INSERT INTO t5 VALUES (1002, ROW(1002, 'after', 7));
	COMMIT});
# (the rows before read with the new attribute NULL: compared from here on)
sql("DELETE FROM snaps WHERE src = 't5_src'");
sql("UPDATE t5 SET c = ROW((c).a, (c).b, -(c).a) WHERE k <= 3");
sql("INSERT INTO t6 VALUES (1001, 1)");
snap_all();
delete $source_of{t6};
sql("ALTER TABLE t6 ALTER COLUMN v TYPE bigint");
sql("INSERT INTO t6 VALUES (1002, 2)");
snap_all();
sql("VACUUM FULL t3");
sql("INSERT INTO t3 VALUES (1001, 'after vacuum full')");
snap_all();

# the users' transactions write the tables after the DDL, then commit
$u1->query_safe("INSERT INTO t3 VALUES (1002, 'u1 after'); UPDATE t1 SET v = v || '!' WHERE k <= 5");
$u2->query_safe(q{SAVEPOINT c; INSERT INTO t3 VALUES (1003, 'u2 after'); DELETE FROM names2 WHERE g = 7;
	RELEASE c; SAVEPOINT d; DELETE FROM t3; ROLLBACK TO d});
$u3->query_safe("INSERT INTO names2 VALUES (1003, 'u3 after')");
$u1->query_safe("COMMIT");
snap_all();
$u2->query_safe("COMMIT");
snap_all();

# the maintenance runtime restarted in the middle of the hydration (or after it)
my (undef, $back) = restart_runtime($node, $maintenance_role);
ok($back, 'the maintenance runtime came back');

# a user's transaction writes a table, rewrites it, writes it again
sql(q{BEGIN;
	INSERT INTO t3 VALUES (1004, 'before own rewrite');
	ALTER TABLE t3 ALTER COLUMN v TYPE text USING v || '+';
	INSERT INTO t3 VALUES (1005, 'after own rewrite');
	COMMIT});
snap_all();
$u3->query_safe("UPDATE t1 SET v = 'u3 ' || v WHERE k > 95; COMMIT");
snap_all();

# a table updated before it is captured (without REPLICA IDENTITY FULL), the
# source created while an older transaction is open, then its updates
my $u4 = bg_session($node);
$u4->query_safe("BEGIN; UPDATE t4 SET v = v + 1 WHERE k <= 3");
$u4->query_safe("COMMIT");
sql(q{SET client_min_messages = warning; SELECT peek.create_source('t4_src', 't4')});
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 't4_src'", 'ready', 120),
	't4_src is loaded');
$source_of{t4} = 't4_src';
sql("UPDATE t4 SET v = v * 10 WHERE k <= 5");
sql("UPDATE t4 SET v = v + 1 WHERE k > 95");
snap_all();

# a fold of big_src's shard: another long own transaction, while a
# source's table is rewritten and written
sql("SELECT peek.allow_compaction('big_src', (pg_current_wal_insert_lsn() - '0/0')::bigint)");
sql("UPDATE big SET v = v || 'w' WHERE k % 3 = 0");
sql("ALTER TABLE t2 ALTER COLUMN v TYPE int USING v + 1");
sql("UPDATE t2 SET v = v * 2 WHERE k % 2 = 0");
snap_all();

$u1->quit;
$u2->quit;
$u3->quit;
$u4->quit;

ok(poll_until($node, q{SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
	   AND NOT EXISTS (SELECT 1 FROM peek.collections
	                    WHERE source IS NOT NULL AND state <> 'failed'
	                      AND upper < pg_current_wal_insert_lsn() - '0/0')}, 't', 300),
	'the sources and the view caught up');
is(sql(q{SELECT string_agg(name || ': ' || coalesce(failure, state), ', ' ORDER BY name)
	FROM peek.collections WHERE source IS NOT NULL AND state <> 'ready'}),
	't6_src: the row type of table "t6" changed: it no longer matches the source\'s row type '
	  . sql("SELECT row_type::regtype FROM peek.objects WHERE name = 't6_src'"),
	'no source failed but t6_src, whose row type changed');
is(sql("SELECT state FROM peek.views WHERE name = 'bigv'"), 'ready', 'the view is ready');

# every source at every recorded time (each at or after its since) as its table was
my %type_of = (big_src => 'big', names_src => 'names2', t1_src => 't1', t2_src => 't2',
	t3_src => 't3', t4_src => 't4', t5_src => 't5');
for my $src (sort keys %type_of)
{
	my $type = $type_of{$src};
	is(sql(qq{
	SELECT coalesce(string_agg(t::text, ' ' ORDER BY t), '') FROM (
	  SELECT DISTINCT s.t FROM snaps s JOIN peek.collections c ON c.name = s.src
	   WHERE s.src = '$src' AND s.t >= c.since) times
	 WHERE EXISTS (
	   (SELECT r FROM snaps WHERE snaps.src = '$src' AND snaps.t = times.t
	    EXCEPT ALL
	    SELECT x::text FROM peek.persist_peek(NULL::$type, '$src', as_of => times.t) x)
	   UNION ALL
	   (SELECT x::text FROM peek.persist_peek(NULL::$type, '$src', as_of => times.t) x
	    EXCEPT ALL
	    SELECT r FROM snaps WHERE snaps.src = '$src' AND snaps.t = times.t))}),
		'', "$src equals its table at every recorded time");
	cmp_ok(sql(qq{SELECT count(DISTINCT s.t) FROM snaps s JOIN peek.collections c ON c.name = s.src
		WHERE s.src = '$src' AND s.t >= c.since}), '>=', 1, "$src was compared at some time");
}
is(sql("SELECT count(DISTINCT t) >= 10 FROM snaps"), 't', 'the times were recorded');
views_equal_queries($node, {
	bigv => q{SELECT b.k, b.v, n.label FROM big b JOIN names2 n ON b.k % 1000 = n.g} },
	'after the DDL and the restart');
my @bad = grep { /cache lookup failed|REPLICA IDENTITY|TRAP|PANIC/ } split /\n/,
  slurp_file($node->logfile);
is(join("\n", @bad), '', 'no cache lookup failure, no replica identity refusal in the log');

done_testing();
