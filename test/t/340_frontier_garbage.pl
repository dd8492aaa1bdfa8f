# Frontiers make no garbage: sealing a collection (peek.write,
# peek.advance) while another session holds an old snapshot (an idle
# REPEATABLE READ transaction) leaves no dead row versions in peek.objects,
# whose size stays put, nor in peek.uppers, which keeps its rows until the
# snapshot is gone and then prunes them.  An upper keeps its transactional meaning: a committed
# seal survives a crash, a rolled-back or interrupted one is not applied;
# writers of one collection still follow commit order (READ COMMITTED
# waits and writes after, REPEATABLE READ fails with 40001 as it did); a
# standby sees the uppers advance through replay.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

my $node = new_node('primary',
	init => { allows_streaming => 1 },
	# nothing but the writes and the runtime takes an xid: the uppers are
	# pruned once the old snapshot ends though no transaction follows
	conf => ['restart_after_crash = on', 'autovacuum = off']);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE EXTENSION pgstattuple;
	CREATE TYPE item AS (id int, name text);
	SELECT peek.create_collection('c', 'item');
	SELECT peek.create_collection('adv', 'item');
});
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes";
ok(poll_until($node, $running_sql), 'the runtimes are running');

sub durable_upper
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT replayed_upper FROM peek.replication WHERE object = '$name'");
}

# ---- seals under an old snapshot ----------------------------------------

$node->safe_psql('postgres', 'VACUUM peek.objects');
my $size0 = $node->safe_psql('postgres', "SELECT pg_relation_size('peek.objects')");

my $holder = bg_session($node);
$holder->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$holder->query_safe('SELECT count(*) FROM pg_class');
# a pruning that began before the snapshot's first second may still delete
sleep(2);

my $seals = 500;
$node->safe_psql('postgres', join(";\n",
		map { "SELECT peek.write('c', ARRAY[($_, 'n$_')]::item[])" } 1 .. $seals));
$node->safe_psql('postgres', join(";\n",
		map { "SELECT peek.advance('adv', $_)" } 1 .. $seals));

my $size1 = $node->safe_psql('postgres', "SELECT pg_relation_size('peek.objects')");
cmp_ok($size1 - $size0, '<=', 8192,
	"$seals writes and $seals advances under an old snapshot: peek.objects "
	  . "grows by at most a page ($size0 -> $size1 bytes)");
is($node->safe_psql('postgres',
		"SELECT string_agg(name || ':' || upper, ',' ORDER BY name) FROM peek.collections"),
	"adv:$seals,c:$seals", 'the uppers advanced');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')"),
	$seals, 'every write is there');

# Under the snapshot the uppers are not pruned either: rows deleted now
# would stay dead until it ends.  The runtime prunes at most once a second;
# after three seconds it has looked at least twice since the writes.
sleep(3);
is($node->safe_psql('postgres', 'SELECT dead_tuple_count FROM pgstattuple(\'peek.uppers\')'),
	'0', 'under the old snapshot no pruning left dead rows in peek.uppers');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM peek.uppers'), '>=', 2 * $seals,
	'the uppers wait for the snapshot to end');
$holder->query_safe('COMMIT');
$holder->quit;

# the maintenance runtime prunes the uppers below each latest one
ok(poll_until($node,
		"SELECT count(*) <= 2 FROM peek.uppers WHERE object IN "
		  . "(SELECT id OPERATOR(pg_catalog.&) 4294967295 FROM peek.objects)", 't', 60),
	'the uppers below the latest are pruned');
is(durable_upper('c'), $seals, 'the upper stays after pruning');

# ---- what keeps no row of peek.uppers does not hold pruning back ---------
# An idle logical slot (its catalog horizon lags, as a source's own slot's
# does) and a snapshot in another database keep no dead row of peek.uppers
# (VACUUM would remove them): pruning goes on, so the uppers stay bounded.

# (the latest of c, adv and pr)
my $uppers_live = "SELECT count(*) <= 3 FROM peek.uppers WHERE object IN "
  . "(SELECT id OPERATOR(pg_catalog.&) 4294967295 FROM peek.objects)";
$node->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('idle_slot', 'test_decoding')");
$node->safe_psql('postgres', 'CREATE DATABASE elsewhere');
$node->safe_psql('postgres', "SELECT peek.create_collection('pr', 'item')");
my $other_db = $node->background_psql('elsewhere');
$other_db->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$other_db->query_safe('SELECT count(*) FROM pg_class');
$node->safe_psql('postgres', join(";\n",
		map { "SELECT peek.write('pr', ARRAY[($_, 'slot')]::item[])" } 1 .. 200));
ok(poll_until($node, $uppers_live, 't', 15),
	'an idle logical slot and a snapshot in another database do not stop pruning');
$other_db->query_safe('COMMIT');
$other_db->quit;
$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('idle_slot')");

# A snapshot older than a pruning would keep the rows it deletes: pruning
# waits for it, and goes on once it ends, though no transaction follows.
my $old = bg_session($node);
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM pg_class');
sleep(2);
$node->safe_psql('postgres', join(";\n",
		map { "SELECT peek.write('pr', ARRAY[($_, 'idle')]::item[])" } 1 .. 200));
sleep(2);
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM peek.uppers'), '>=', 200,
	'the uppers wait for the old snapshot');
is($node->safe_psql('postgres', 'SELECT dead_tuple_count FROM pgstattuple(\'peek.uppers\')'),
	'0', 'no pruning under the old snapshot');
$old->query_safe('COMMIT');
$old->quit;
ok(poll_until($node, $uppers_live, 't', 10), 'the uppers are pruned once the old snapshot ends');
is(durable_upper('pr'), 400, 'the upper stays after these prunings');
$node->safe_psql('postgres', "SELECT peek.drop_collection('pr')");

# ---- writers of one collection follow commit order ----------------------

my $w1 = bg_session($node);
$w1->query_safe('BEGIN');
is($w1->query_safe("SELECT peek.write('c', ARRAY[(1001, 'a')]::item[])"), $seals,
	'a first writer writes at the upper');
my $w2 = start_bg($node, "SELECT peek.write('c', ARRAY[(1002, 'b')]::item[])");
ok(poll_until($node,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$w2->{application_name}' "
		  . "AND wait_event_type = 'Lock'"),
	'a second writer waits for the first');
$w1->query_safe('COMMIT');
my ($rc, $out, $err) = finish_bg($w2);
is("$rc|$out", '0|' . ($seals + 1), 'the second writer writes after the first');

my $rr = bg_session($node, on_error_stop => 0);
$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$rr->query_safe('SELECT count(*) FROM pg_class');
$node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(1003, 'c')]::item[])");
$rr->query("SELECT peek.write('c', ARRAY[(1004, 'd')]::item[])");
like($rr->{stderr}, qr/could not serialize access/,
	'a REPEATABLE READ writer whose snapshot misses a later seal fails to serialize');
$rr->query('ROLLBACK');    # (its stderr may still hold the error)
$rr->quit;
$w1->quit;
is(durable_upper('c'), $seals + 3, 'three more seals');

# ---- crash: committed uppers kept, others not ---------------------------

$node->safe_psql('postgres', q{
	BEGIN;
	SELECT peek.write('c', ARRAY[(2001, 'rolled back')]::item[]);
	SELECT peek.advance('adv', 100000);
	ROLLBACK;
});
is(durable_upper('c'), $seals + 3, 'a rolled-back write does not move the upper');
is(durable_upper('adv'), $seals, 'a rolled-back advance does not move the upper');

my $open = bg_session($node, on_error_stop => 0);
$open->query_safe('BEGIN');
$open->query_safe("SELECT peek.write('c', ARRAY[(2002, 'open')]::item[])");
my $committed = $node->safe_psql('postgres', "SELECT peek.advance('adv', 777); SELECT 777");
$node->stop('immediate');
eval { $open->quit };
$node->start;
ok(poll_until($node, $running_sql), 'the runtimes run again after the crash');
is(durable_upper('c'), $seals + 3, 'after the crash: the committed upper, not the open write\'s');
is(durable_upper('adv'), 777, 'after the crash: the advance committed meanwhile');
ok(poll_until($node,
		"SELECT string_agg(name || ':' || state || ':' || upper, ',' ORDER BY name) FROM peek.collections",
		'adv:ready:777,c:ready:' . ($seals + 3)),
	'the runtimes publish the durable uppers');
is($node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(3001, 'after')]::item[])"),
	$seals + 3, 'a write after the crash writes at the durable upper');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM peek.persist_peek(NULL::item, 'c') WHERE name IN ('rolled back', 'open')"),
	'0', 'neither the rolled-back nor the open write is there');

# ---- a standby sees the uppers advance ----------------------------------

$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
ok(poll_until($standby, "SELECT count(*) = $nruntimes FROM peek.runtimes WHERE state = 'running'"),
	'the runtimes run on the standby');
my $last;
for my $i (1 .. 50)
{
	$last = $node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(4000 + $i, 's')]::item[])");
}
$node->safe_psql('postgres', 'SELECT peek.advance(\'adv\', 5000)');
$node->wait_for_catchup($standby, 'replay');
is($standby->safe_psql('postgres',
		"SELECT string_agg(object || ':' || replayed_upper, ',' ORDER BY object) FROM peek.replication"),
	'adv:5000,c:' . ($last + 1), 'the standby replayed the uppers');
ok(poll_until($standby,
		"SELECT string_agg(name || ':' || upper, ',' ORDER BY name) FROM peek.collections",
		'adv:5000,c:' . ($last + 1)),
	'the standby\'s runtimes publish them');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM peek.persist_peek(NULL::item, 'c', as_of => $last) WHERE name = 's'"),
	'50', 'a peek on the standby at the last write sees it');

$standby->stop;
$node->stop;
done_testing();
