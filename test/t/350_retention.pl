# Retention: under a steady write load, a collection
# following pg_peek.retention (set to 2s by a reload) and a source given 2s
# by peek.set_retention keep shards of about their contents plus the rows
# of the retention's window, while a collection with set_retention(NULL)
# keeps every update; their contents stay right; a peek older than the
# retention fails with 72000; the views show the since's age; a NULL
# retention keeps the since where it is; a streaming standby follows the
# primary's sinces.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgPeekTest;

my $primary = new_node('primary', init => { allows_streaming => 1 }, no_start => 1);
$primary->start;

sub sql { return $primary->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v int);
	SELECT peek.create_collection('w', 'kv');
	SELECT peek.create_index('w_by_k', 'w', '{k}');
	SELECT peek.create_collection('keep', 'kv');
	SELECT peek.set_retention('keep', NULL);
	CREATE TABLE src (k int PRIMARY KEY, v int);
	INSERT INTO src SELECT g, g FROM generate_series(0, 19) g;
	SELECT peek.create_source('s', 'src');
	SELECT peek.set_retention('s', '2 s');
	SELECT peek.write('w', (SELECT array_agg((g, g)::kv) FROM generate_series(0, 19) g));
	SELECT peek.write('keep', (SELECT array_agg((g, g)::kv) FROM generate_series(0, 19) g));
});
ok( poll_until(
		$primary,
		"SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections "
		  . "UNION ALL SELECT state FROM peek.indexes) s"),
	'the collections, the index and the source are ready');
my $s_start = sql("SELECT upper - 1 FROM peek.collections WHERE name = 's'");

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby, 'replay');

# the setting, reloaded: the objects without a retention of their own follow it
is(sql("SELECT string_agg(name || ' ' || coalesce(retention::text, 'all'), ', ' ORDER BY name) "
		  . "FROM peek.collections"),
	'keep all, s 00:00:02, w 01:00:00', 'retentions: NULL, its own, the default');
sql("ALTER SYSTEM SET pg_peek.retention = '2s'; SELECT pg_reload_conf()");
ok(poll_until($primary, "SELECT retention = '2 s' FROM peek.indexes WHERE name = 'w_by_k'"),
	'the reloaded setting is the retention of w and its index');

# ---- the load: one iteration writes each object's key i % 20 again --------

my $load_s = 25;
my $load = start_bg($primary, qq{
	DO \$\$
	DECLARE
		i int := 20;
		stop timestamptz := clock_timestamp() + interval '$load_s s';
	BEGIN
		WHILE clock_timestamp() < stop LOOP
			PERFORM peek.write('w', ARRAY[(i % 20, i)]::kv[], ARRAY[(i % 20, i - 20)]::kv[]);
			PERFORM peek.write('keep', ARRAY[(i % 20, i)]::kv[], ARRAY[(i % 20, i - 20)]::kv[]);
			UPDATE src SET v = i WHERE k = i % 20;
			COMMIT;
			i := i + 1;
			PERFORM pg_sleep(0.02);
		END LOOP;
	END
	\$\$}, timeout => 300);

sub shard_rows
{
	my ($name) = @_;
	my $shard = sql("SELECT shard FROM peek.collections WHERE name = '$name'");
	return sql("SELECT count(*) FROM $shard");
}

# Each iteration adds two rows to each shard (a retraction and an insert).
# The window: the iterations in the last retention and two seconds more
# (the sample taken at least that long ago), for the rounds a loaded
# machine makes late.  Bounded: at most 1.5 times the contents and the
# window's rows; keep, with all its history, is the control.
my @samples;    # [clock, w's upper]
my ($bounded_w, $bounded_s, $checked, $aged) = (1, 1, 0, 1);
my $start = time;
while (time < $start + $load_s - 1)
{
	sleep 2;
	my $now = time;
	my $upper = sql("SELECT upper FROM peek.collections WHERE name = 'w'");
	push @samples, [ $now, $upper ];
	my ($back) = grep { $_->[0] <= $now - 4 } reverse @samples;
	next unless defined $back;
	my $bound = 1.5 * (20 + 2 * ($upper - $back->[1]));
	my ($w, $s) = (shard_rows('w'), shard_rows('s'));
	$checked++;
	note("w: $w rows, s: $s rows, bound $bound");
	diag("w: $w rows, s: $s rows, bound $bound") if $w > $bound || $s > $bound;
	$bounded_w &&= $w <= $bound;
	$bounded_s &&= $s <= $bound;
	# the since trails by the retention at least, by the wall clock
	$aged &&= sql("SELECT bool_and(since_age >= '2 s') FROM peek.collections WHERE name IN ('w', 's')") eq 't';
}
my ($rc, $out, $err) = finish_bg($load, 120);
is($rc, 0, 'the load ran') or diag($err);
my $writes = sql("SELECT upper FROM peek.collections WHERE name = 'w'") - 1;
cmp_ok($writes, '>', 40, "the load wrote ($writes writes)");
cmp_ok($checked, '>=', 3, "shard rows sampled $checked times under the load");
ok($bounded_w, "w's shard stayed within 1.5 times its contents and window");
ok($bounded_s, "the source's shard stayed within 1.5 times its contents and window");
ok($aged, 'the sinces trailed by the retention at least');
cmp_ok(shard_rows('keep'), '>=', 20 + 2 * $writes, 'NULL retention kept every update');

# ---- after the load ---------------------------------------------------------

ok(poll_until($primary, "SELECT since = upper - 1 FROM peek.collections WHERE name = 'w'"),
	'idle, w compacts to its newest complete time');
ok(poll_until($primary, "SELECT since = upper - 1 FROM peek.indexes WHERE name = 'w_by_k'"),
	'and so does its index');
ok(poll_until($primary, "SELECT count(*) = 20 FROM peek.persist_peek(NULL::kv, 'w') a "
		. "JOIN peek.persist_peek(NULL::kv, 'keep') b USING (k, v)"),
	"w's contents are keep's");
is(sql("SELECT count(*) FROM peek.index_peek(NULL::kv, 'w_by_k') JOIN src USING (k, v)"),
	'20', "the index's contents are right");
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::src, 's') JOIN src USING (k, v)"),
	'20', "the source's contents are right");
cmp_ok(shard_rows('w'), '<=', 40, "w's shard holds about its contents");

for my $q ("SELECT * FROM peek.persist_peek(NULL::kv, 'w', as_of => 1)",
	"SELECT * FROM peek.index_peek(NULL::kv, 'w_by_k', as_of => 1)",
	"SELECT * FROM peek.persist_peek(NULL::src, 's', as_of => $s_start)")
{
	my ($state) = sql_error($primary, $q);
	is($state, '72000', "older than the retention: $q");
}
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::kv, 'keep', as_of => 1)"),
	'20', 'NULL retention: the first time is still readable');
is(sql("SELECT since FROM peek.collections WHERE name = 'keep'"), '0',
	'NULL retention: the since stayed at 0');

# set_retention(NULL) keeps the since where it is, through further writes
my $w_since = sql("SELECT since FROM peek.collections WHERE name = 'w'");
sql("SELECT peek.set_retention('w', NULL)");
sql("SELECT peek.write('w', ARRAY[(100, 1)]::kv[])") for 1 .. 3;
ok(poll_until($primary, "SELECT upper = $w_since + 4 FROM peek.frontiers "
		. "WHERE object = 'w' AND runtime IN ('maintenance', 'solo')"),
	'the writes after set_retention(NULL) are published');
sleep 3;
is(sql("SELECT since FROM peek.collections WHERE name = 'w'"), $w_since,
	'after set_retention(NULL) the since stays');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::kv, 'w', as_of => $w_since)"),
	'20', 'and the time it stayed at is readable');

# ---- the standby follows ----------------------------------------------------

$primary->wait_for_catchup($standby, 'replay');
ok(poll_until($standby, "SELECT since = $w_since FROM peek.collections WHERE name = 'w'"),
	"the standby's since of w follows the primary's");
ok( poll_until(
		$standby,
		"SELECT since > $s_start FROM peek.collections WHERE name = 's'"),
	"the standby's since of the source moved");
ok( poll_until(
		$standby,
		"SELECT count(*) = 20 FROM peek.persist_peek(NULL::kv, 'w', as_of => $w_since) a "
		  . "JOIN peek.persist_peek(NULL::kv, 'keep', as_of => $w_since) b USING (k, v)"),
	'the standby peeks w at its since');
my ($state) = sql_error($standby, "SELECT * FROM peek.persist_peek(NULL::kv, 'w', as_of => 1)");
is($state, '72000', 'on the standby, a peek older than the retention fails too');
is($standby->safe_psql('postgres', "SELECT count(*) FROM peek.persist_peek(NULL::kv, 'keep', as_of => 1)"),
	'20', 'and NULL retention keeps history there');

$standby->stop;
$primary->stop;
done_testing();
