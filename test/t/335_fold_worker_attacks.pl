# What a fold worker (a big time's fold outside the maintenance runtime)
# must survive, each while a worker folds a 200,000-row time:
#  * compaction (allow_compaction to the big time) racing the worker's fold
#    of the same base: one gives way, the base and since take the time in,
#    its contents are exact, no base row twice, nothing fails;
#  * drop_collection: waits for the fold, the worker ends;
#  * ALTER TYPE ... DROP ATTRIBUTE of the row type: contents exact, and a
#    delete written after it retracts the folded rows;
#  * an open writer transaction holding the row (the worker waits for it at
#    its catalog write a second at most, then gives way, and none starts
#    again while it holds the row): a fast stop does not hang, and after
#    the restart the base takes the time in;
#  * DROP EXTENSION: waits for the fold, the worker ends;
#  * a fast stop during an active fold: the worker stops at once, also
#    while it writes the base rows of a load of millions of rows (a
#    stop waited minutes for that loop);
#  * the runtime restarted three times during a long fold: one worker at a
#    time (each restart used to start one more, waiting for the first);
#  * no background worker free (max_worker_processes taken by the
#    runtimes): the runtime folds the big time itself, exactly, and says
#    which runtime (maintenance or solo) in its log line.
# The server log has no ERROR or WARNING line.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);
use PgPeekTest;

my $N = 200_000;
my $node = new_node('fold_attacks');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub worker_runs
{
	my ($what) = @_;
	ok(poll_until($node, "SELECT count(*) >= 1 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
		"$what: a fold worker folds");
}

sub worker_gone
{
	my ($what) = @_;
	ok(poll_until($node, "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
		"$what: no fold worker is left");
}

# a collection with one row at its base, then a big time: returns its time
sub big_time
{
	my ($name, $type) = @_;
	my $row = $type eq 'item' ? "(0, 'zero')" : "(0, 'zero', 0)";
	my $gen = $type eq 'item' ? "(g, 'x' || g)" : "(g, 'x' || g, g)";
	sql("SELECT peek.create_collection('$name', '$type')");
	my $t0 = sql("SELECT peek.write('$name', ARRAY[$row]::${type}[])");
	base_reaches($node, $name, $t0);
	return sql("SELECT peek.write('$name', ARRAY(SELECT ${gen}::$type FROM generate_series(1, $N) g))");
}

sub digest
{
	my ($name, $type, $t) = @_;
	return sql("SET statement_timeout = '60s'; SELECT count(*) || ' ' || sum(id) "
		  . "FROM peek.persist_peek(NULL::$type, '$name', as_of => $t)");
}

my $whole = ($N + 1) . ' ' . ($N * ($N + 1) / 2);

# a big time in a new collection, and $action run while a worker folds it
sub during_fold
{
	my ($name, $type, $what, $action) = @_;
	my $t = big_time($name, $type);
	worker_runs($what);
	sql($action) if defined $action;
	return $t;
}

# the base took the big time in, with exact contents
sub taken_in
{
	my ($name, $type, $t, $what, $timeout_s) = @_;
	ok(base_reaches($node, $name, $t, $timeout_s), "$what: the base takes the big time in");
	is(digest($name, $type, $t), $whole, "$what: contents at the big time");
	return;
}


sql(q{CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, v text);
	CREATE TYPE item3 AS (id int, v text, w int);});

# ---- compaction racing the worker ----------------------------------------
my $tc = during_fold('c', 'item', 'compaction');
sql("SELECT peek.allow_compaction('c', $tc)");
ok(poll_until($node, "SELECT since >= $tc FROM peek.objects WHERE name = 'c'", 't', 60),
	'compaction: the since takes the big time in');
taken_in('c', 'item', $tc, 'compaction');
my $shard = sql("SELECT shard::regclass FROM peek.objects WHERE name = 'c'");
is(sql("SELECT count(*) - count(DISTINCT data) FROM $shard WHERE time = -1"), '0',
	'compaction: no row twice in the base');

# ---- drop_collection during the fold --------------------------------------
during_fold('d', 'item', 'drop_collection', "SELECT peek.drop_collection('d')");
worker_gone('drop_collection');
is(sql("SELECT count(*) FROM peek.objects WHERE name = 'd'"), '0', 'drop_collection: dropped');

# ---- ALTER TYPE ... DROP ATTRIBUTE during the fold ------------------------
# the worker locks the row type before it reads the shard: an ALTER that
# came first would leave a shard read whole, whose base moves only with its
# since (a niced worker on a busy machine can be that late)
my $te = during_fold('e', 'item3', 'DROP ATTRIBUTE');
ok(poll_until($node, "SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
	  . "WHERE a.backend_type = 'pg_peek fold' AND l.relation = 'item3'::regclass AND l.granted) "
	  . "OR (SELECT base_time >= $te FROM peek.objects WHERE name = 'e')"),
	'DROP ATTRIBUTE: the worker holds the row type (or has folded)');
sql("ALTER TYPE item3 DROP ATTRIBUTE w");
taken_in('e', 'item3', $te, 'DROP ATTRIBUTE');
sql("SELECT peek.write('e', ARRAY[]::item3[], ARRAY(SELECT (g, 'x' || g)::item3 FROM generate_series(1, 10) g))");
is(sql("SELECT count(*) || ' ' || sum(id) FROM peek.persist_peek(NULL::item3, 'e')"),
	($N - 9) . ' ' . ($N * ($N + 1) / 2 - 55), 'DROP ATTRIBUTE: later deletes retract folded rows');

# ---- an open writer holds the row; a fast stop ----------------------------
my $tf = during_fold('f', 'item', 'open writer');
my $s = bg_session($node);
$s->query_safe("BEGIN");
$s->query_safe("SELECT peek.write('f', ARRAY[(-1, 'open')]::item[])");
worker_gone('open writer');
cmp_ok(sql("SELECT base_time FROM peek.objects WHERE name = 'f'"), '<', $tf,
	'open writer: the base waits for the writer');
my $at = [gettimeofday];
my $stopped = eval {
	local $SIG{ALRM} = sub { die "timeout\n" };
	alarm 60;
	$node->stop('fast');
	alarm 0;
	1;
};
ok($stopped && tv_interval($at) < 10, 'open writer: a fast stop does not wait for the writer');
eval { $s->quit };
$node->start;
taken_in('f', 'item', $tf, 'open writer, after the restart');

# ---- a fast stop during an active fold ------------------------------------
sql("SELECT peek.write('f', ARRAY(SELECT (g + $N, 'y')::item FROM generate_series(1, 3 * $N) g))");
worker_runs('fast stop');
usleep(300_000);
$at = [gettimeofday];
$node->stop('fast');
cmp_ok(tv_interval($at), '<', 5, 'fast stop: the fold does not hold the stop');
$node->start;

# ---- the runtime restarted during a long fold -----------------------------
# a restarted runtime leaves the earlier runtime's worker to finish: before,
# each restart started one more worker, which waited for it (a slot each)
my $maint = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $tr = sql("SELECT peek.write('f', ARRAY(SELECT (g + 4 * $N, 'z')::item FROM generate_series(1, 4 * $N) g))");
worker_runs('restarts');
my $most = 0;
for (1 .. 3)
{
	my $pid = runtime_pid($node, $maint);
	sql("SELECT pg_terminate_backend($pid)");
	poll_until($node, "SELECT pid <> $pid FROM peek.runtimes WHERE role = '$maint' AND state = 'running'");
	for (1 .. 10)
	{
		my $n = sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'");
		$most = $n if $n > $most;
		usleep(100_000);
	}
}
# (at most two: a worker that has just started, on a loaded machine niced
# and not yet holding its collection's lock, can be missed by a restarted
# runtime, whose worker then waits for it; before, every restart added one
# more, four after three restarts)
cmp_ok($most, '<=', 2, 'restarts: the workers do not pile up');
ok(base_reaches($node, 'f', $tr, 120), 'restarts: the base takes the big time in');

# ---- DROP EXTENSION during the fold ---------------------------------------
sql("SELECT peek.write('c', ARRAY(SELECT (g + $N, 'y')::item FROM generate_series(1, $N) g))");
worker_runs('DROP EXTENSION');
sql("DROP EXTENSION pg_peek CASCADE");
worker_gone('DROP EXTENSION');
log_is_clean($node, 'fold worker attacks');
$node->stop('fast');

# ---- no free background worker --------------------------------------------
# the runtimes and the logical replication launcher take every slot
my $slots = interactive_mode() eq 'on' ? 3 : 2;
$node = new_node('fold_no_worker', conf => ["max_worker_processes = $slots"]);
sql("CREATE EXTENSION pg_peek; CREATE TYPE item AS (id int, v text)");
my $tg = big_time('g', 'item');
taken_in('g', 'item', $tg, 'no free worker');
like(slurp_file($node->logfile), qr/in the $maint runtime once every write pauses: no background worker is free/,
	'no free worker: logged, naming the runtime');
log_is_clean($node, 'no free worker');
$node->stop('fast');

# ---- a fast stop while the fold writes its base rows ----------------------
# The shard grows only once the fold deletes the load's update rows and
# writes their base rows: a stop then used to wait for every row written.
my $M = 5 * $N;
$node = new_node('fold_stop_writes');
sql("CREATE EXTENSION pg_peek; CREATE TYPE item AS (id int, v text)");
sql("SELECT peek.create_collection('w', 'item')");
base_reaches($node, 'w', sql("SELECT peek.write('w', ARRAY[(0, 'zero')]::item[])"));
my $tw = sql("SELECT peek.write('w', ARRAY(SELECT (g, 'x' || g)::item FROM generate_series(1, $M) g))");
worker_runs('fast stop in the writes');
my $size = sql("SELECT pg_relation_size(shard) FROM peek.collections WHERE name = 'w'");
ok(poll_until($node, "SELECT pg_relation_size(shard) > $size + 8 * 1024 * 1024 "
	  . "FROM peek.collections WHERE name = 'w'", 't', 300),
	'fast stop in the writes: the fold writes base rows');
ok(sql("SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_peek fold'"),
	'fast stop in the writes: the worker still folds');
$at = [gettimeofday];
$node->stop('fast');
cmp_ok(tv_interval($at), '<', 5, 'fast stop in the writes: the fold does not hold the stop');
$node->start;
ok(base_reaches($node, 'w', $tw, 600), 'fast stop in the writes: the base takes the load in after the restart');
is(sql("SET statement_timeout = '120s'; SELECT count(*) || ' ' || sum(id) FROM peek.persist_peek(NULL::item, 'w')"),
	($M + 1) . ' ' . ($M * ($M + 1) / 2), 'fast stop in the writes: contents exact');
log_is_clean($node, 'fast stop in the writes');
$node->stop('fast');
done_testing();
