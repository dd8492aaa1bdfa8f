# Replicas: a primary and two hot standbys, the second cascading
# from the first.  The runtimes run on the standbys, follow replay, and
# answer index and persist peeks at the primary's logical times with the
# primary's answers (read-your-writes across servers through as_of); they
# refuse writes and DDL with 25006; a peek below the replayed since fails
# with 72000; a standby's runtime SIGTERM and a standby restart lose
# nothing; after promotion the promoted standby takes writes, and the
# cascading standby follows it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $maint = $mode eq 'on' ? 'maintenance' : 'solo';

srand(250);

my $primary = new_node('primary',
	init => { allows_streaming => 1 },
	conf => [ 'hot_standby_feedback = on', 'wal_receiver_status_interval = 1s' ],
	no_start => 1);
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, name text);
	SELECT peek.create_collection('items', 'item');
	SELECT peek.create_index('items_by_id', 'items', ARRAY['id']);
	CREATE TABLE stock (id int PRIMARY KEY, qty int);
	INSERT INTO stock SELECT g, g FROM generate_series(1, 20) g;
	SELECT peek.create_source('stock_src', 'stock');
	SELECT peek.create_index('stock_by_id', 'stock_src', ARRAY['id']);
});

# ---- the model: every update, to compute each time's contents ------------

my @history;    # [time, id, name, diff]

sub expected_at
{
	my ($t, $key) = @_;
	my %count;
	for my $u (@history)
	{
		my ($time, $id, $name, $diff) = @$u;
		next if $time > $t || (defined $key && $id != $key);
		$count{"$id|$name"} += $diff;
	}
	my @rows;
	for my $row (sort { (split /\|/, $a)[0] <=> (split /\|/, $b)[0] || $a cmp $b } keys %count)
	{
		push @rows, ($row) x $count{$row};
	}
	return join("\n", @rows);
}

my %live;       # "id|name" => count, the current contents
my $next_id = 1;

sub rows_sql
{
	return "ARRAY[" . join(', ', map { my ($i, $n) = split /\|/; "($i, '$n')" } @_) . "]::item[]";
}

# One random write on the primary: a few inserts, some deletes of live rows.
sub random_write
{
	my (@ins, @del);
	for (1 .. 1 + int(rand(4)))
	{
		my $id = int(rand(10)) < 3 && %live ? (split /\|/, (sort keys %live)[int(rand(scalar keys %live))])[0] : $next_id++;
		push @ins, "$id|n" . int(rand(1000));
	}
	for my $row (sort keys %live)
	{
		push @del, $row if rand() < 0.15 && $live{$row} > 0;
	}
	my $sql = "SELECT peek.write('items', " . rows_sql(@ins);
	$sql .= ", " . rows_sql(@del) if @del;
	my $t = $primary->safe_psql('postgres', "$sql)");
	for (@ins) { push @history, [ $t, split(/\|/), 1 ]; $live{$_}++; }
	for (@del)
	{
		push @history, [ $t, split(/\|/), -1 ];
		delete $live{$_} if --$live{$_} == 0;
	}
	return $t;
}

random_write() for 1 .. 10;

# ---- two standbys: one from the primary, one cascading from it -----------

$primary->backup('b1');
my $standby1 = PostgreSQL::Test::Cluster->new('standby1');
$standby1->init_from_backup($primary, 'b1', has_streaming => 1);
$standby1->start;
$primary->wait_for_catchup($standby1, 'replay');
$standby1->backup('b2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($standby1, 'b2', has_streaming => 1);
$standby2->start;
$standby1->wait_for_catchup($standby2, 'replay', $primary->lsn('insert'));

for my $s ($standby1, $standby2)
{
	ok(poll_until($s, "SELECT count(*) FROM peek.runtimes WHERE state = 'running'",
			$mode eq 'on' ? '2' : '1'),
		$s->name . ': the runtimes run on the standby');
}

my $psql_timeout = 60;

sub persist_sql
{
	my ($t) = @_;
	return "SELECT id, name FROM peek.persist_peek(NULL::item, 'items', as_of => $t) ORDER BY id, name";
}

sub index_sql
{
	my ($t, $key) = @_;
	my $k = defined $key ? "ROW($key)" : 'NULL';
	return "SELECT id, name FROM peek.index_peek(NULL::item, 'items_by_id', $k, as_of => $t) ORDER BY id, name";
}

my $disagreements = 0;

# Peeks at $t on the node equal the model (and so the primary's).
sub compare_at
{
	my ($node, $t, $what) = @_;
	my $key = (split /\|/, (sort keys %live)[0] // '1|x')[0];
	my @checks = (
		[ persist_sql($t), expected_at($t) ],
		[ index_sql($t), expected_at($t) ],
		[ index_sql($t, $key), expected_at($t, $key) ]);
	for my $c (@checks)
	{
		my $got = $node->safe_psql('postgres', $c->[0], timeout => $psql_timeout);
		if ($got ne $c->[1])
		{
			$disagreements++;
			is($got, $c->[1], "$what: $c->[0]");
		}
	}
}

# The primary itself agrees with the model.
compare_at($primary, $_, 'primary') for 0 .. 9;

# ---- a random workload; peeks on the standbys at logged times -------------

my @logged;
for my $round (1 .. 30)
{
	my $t = random_write();
	push @logged, $t;
	# read-your-writes across servers: the write's time, at once
	compare_at($round % 2 ? $standby1 : $standby2, $t, "round $round, fresh time $t");
	# and an older logged time
	compare_at($round % 2 ? $standby2 : $standby1, $logged[ int(rand(@logged)) ], "round $round, older time");
}
is($disagreements, 0, 'standby peeks at logged times equal the primary\'s answers');

# as_of NULL: the standby's latest complete time, once replay brought it
my $last = $logged[-1];
$primary->wait_for_catchup($standby1, 'replay');
$standby1->wait_for_catchup($standby2, 'replay', $primary->lsn('insert'));
for my $s ($standby1, $standby2)
{
	ok(poll_until($s, "SELECT string_agg(id || '|' || name, E'\\n' ORDER BY id, name) FROM peek.persist_peek(NULL::item, 'items')",
			expected_at($last)), $s->name . ': as_of NULL reads the latest replayed time');
}

# ---- a source captured on the primary: the same answers at its times -----

# Change the table; return the last time the primary's source has durably
# ingested (a standby's upper: the published one follows the WAL while the
# table is idle, which is not replicated).
sub change_stock
{
	my ($n) = @_;
	my $durable = "SELECT replayed_upper FROM peek.replication WHERE object = 'stock_src'";
	my $before = $primary->safe_psql('postgres', $durable);
	$primary->safe_psql('postgres', qq{
		UPDATE stock SET qty = qty + 1 WHERE id % $n = 0;
		DELETE FROM stock WHERE id = (SELECT max(id) FROM stock);
		INSERT INTO stock SELECT max(id) + 1, $n FROM stock;
	});
	ok(poll_until($primary, "SELECT replayed_upper > $before FROM peek.replication WHERE object = 'stock_src'"),
		'the primary ingested the source');
	return $primary->safe_psql('postgres', $durable) - 1;
}

sub stock_sqls
{
	my ($t) = @_;
	return (
		"SELECT id, qty FROM peek.persist_peek(NULL::stock, 'stock_src', as_of => $t) ORDER BY id",
		"SELECT id, qty FROM peek.index_peek(NULL::stock, 'stock_by_id', as_of => $t) ORDER BY id",
		"SELECT id, qty FROM peek.index_peek(NULL::stock, 'stock_by_id', ROW(2), as_of => $t)");
}

my @stock_times;
for my $n (2 .. 4)
{
	my $t = change_stock($n);
	push @stock_times, $t;
	for my $sql (stock_sqls($t))
	{
		my $want = $primary->safe_psql('postgres', $sql);
		for my $s ($standby1, $standby2)
		{
			my $got = $s->safe_psql('postgres', $sql, timeout => $psql_timeout);
			$disagreements++ if $got ne $want;
			is($got, $want, $s->name . ": source at $t: $sql");
		}
	}
}

# read-your-writes for a source: a primary's time published while the
# table is idle (its upper follows the WAL), and strict serializable, which
# reads on a standby every transaction it replayed
$primary->safe_psql('postgres', 'UPDATE stock SET qty = -qty WHERE id = 3');
my $table = $primary->safe_psql('postgres', 'SELECT id, qty FROM stock ORDER BY id');
my $idle_lsn = $primary->safe_psql('postgres', "SELECT pg_current_wal_lsn() - '0/0'");
ok(poll_until($primary, "SELECT upper > $idle_lsn FROM peek.collections WHERE name = 'stock_src'"),
	'the primary publishes the idle source\'s upper');
my $idle_t = $primary->safe_psql('postgres', "SELECT upper - 1 FROM peek.collections WHERE name = 'stock_src'");
for my $s ($standby1, $standby2)
{
	is($s->safe_psql('postgres', (stock_sqls($idle_t))[0], timeout => $psql_timeout), $table,
		$s->name . ': the source at a time the primary published while idle');
}
$primary->wait_for_catchup($standby1, 'replay');
is($standby1->safe_psql('postgres', "SET pg_peek.isolation = 'strict serializable'; "
		. "SELECT id, qty FROM peek.persist_peek(NULL::stock, 'stock_src') ORDER BY id", timeout => $psql_timeout),
	$table, 'standby1: strict serializable sees what was replayed');

# ---- paused replay: a peek waits for its time; compaction lands at once ----

$standby2->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
my $paused_t = random_write();
my $h = start_bg($standby2, index_sql($paused_t));
random_write() for 1 .. 3;
# compacted to the end of what standby2's arrangement has read (the
# waiting peek's time: a standby's peek cannot hold the primary back)
$primary->safe_psql('postgres', "SELECT peek.allow_compaction('items', $paused_t)");
ok(poll_until($primary, "SELECT since = $paused_t FROM peek.collections WHERE name = 'items'"),
	'the primary compacts while standby2 is paused');
my $paused_late = random_write();
usleep(300_000);
ok(!bg_done($h), 'a peek at a time replay has not brought waits');
$standby2->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
my ($rc, $out) = finish_bg($h);
is($out, expected_at($paused_t), 'it answers once replay brings its time');
compare_at($standby2, $paused_late, 'standby2 after replaying a compaction past its arrangement');

# ---- a waiting peek holds no lock that replay needs ---------------------
# A fresh session looks the name up in peek.objects, then waits for a time
# the primary has not written.  The primary meanwhile takes (and logs) an
# AccessExclusiveLock on peek.objects: replaying it must not wait for the
# peek (which would wait for replay until max_standby_streaming_delay
# cancelled it).
# (the last write's time + 1: peek.collections shows the published upper,
# which may trail the stored one for a moment)
my $next_t = $paused_late + 1;
$h = start_bg($standby2, index_sql($next_t));
ok(poll_until($standby2, "SELECT count(*) > 0 FROM peek.active_peeks WHERE state = 'waiting'"), 'standby2: a fresh session\'s peek waits for its time');
$primary->safe_psql('postgres', 'BEGIN; LOCK TABLE peek.objects IN ACCESS EXCLUSIVE MODE; COMMIT');
is(random_write(), $next_t, 'the primary writes at the awaited time after the lock');
($rc, $out) = finish_bg($h, 20);
is($rc, 0, 'the waiting peek was not cancelled by a replay conflict');
is($out, expected_at($next_t), '... and answers once replay brings its time');

# ---- writes and DDL are refused -----------------------------------------

for my $sql (
	"SELECT peek.write('items', ARRAY[(1, 'x')]::item[])",
	"SELECT peek.append('items', ARRAY[(1, 'x')]::item[], 1000)",
	"SELECT peek.advance('items', 1000)",
	"SELECT peek.create_collection('other', 'item')",
	"SELECT peek.create_index('other_by_id', 'items', ARRAY['id'])",
	"SELECT peek.drop_index('items_by_id')",
	"SELECT peek.drop_collection('items')",
	"SELECT peek.allow_compaction('items', 5)")
{
	my ($code, $msg) = sql_error($standby2, $sql);
	is($code, '25006', "standby refuses: $sql");
	like($msg, qr/during recovery/, "... saying why: $sql");
}

# ---- compaction on the primary: the standbys' since follows --------------

my $since = $paused_late;
$primary->safe_psql('postgres', "SELECT peek.allow_compaction('items', $since); SELECT peek.allow_compaction('items_by_id', $since)");
ok(poll_until($primary, "SELECT since >= $since FROM peek.collections WHERE name = 'items'"),
	'the primary compacts');
for my $s ($standby1, $standby2)
{
	ok(poll_until($s, "SELECT since >= $since FROM peek.collections WHERE name = 'items'"),
		$s->name . ': the replayed since is published');
	ok(poll_until($s, "SELECT since >= $since FROM peek.indexes WHERE name = 'items_by_id'"),
		$s->name . ': the index compacts to the replayed since');
	my ($code) = sql_error($s, persist_sql($since - 1));
	is($code, '72000', $s->name . ': a persist peek below the replayed since fails with 72000');
	($code) = sql_error($s, index_sql($since - 1));
	is($code, '72000', $s->name . ': an index peek below the replayed since fails with 72000');
	compare_at($s, $paused_late, $s->name . ' after compaction');
}

# introspection: frontiers and lag on a standby
is($standby1->safe_psql('postgres',
	"SELECT bool_and(standby AND upper = replayed_upper AND lag_times = 0 AND replay_lag_ms = 0) FROM peek.replication"),
	't', 'peek.replication shows the standby caught up');

# ---- a standby runtime's SIGTERM and a standby restart lose nothing -------

my @recent = map { random_write() } 1 .. 3;
for my $role ($mode eq 'on' ? ('maintenance', 'interactive') : ('solo'))
{
	my $pid = runtime_pid($standby1, $role);
	ok(kill('TERM', $pid), "standby1: SIGTERM the $role runtime");
	ok(poll_until($standby1, "SELECT count(*) FROM peek.runtimes WHERE role = '$role' AND state = 'running' AND pid <> $pid", '1'),
		"standby1: the $role runtime is back");
	my $t = random_write();
	push @recent, $t;
	compare_at($standby1, $t, "after the $role runtime's restart");
	compare_at($standby2, $t, "standby2, while standby1's $role runtime restarted");
}
$standby2->restart;
my $t = random_write();
compare_at($standby2, $t, 'standby2 after its restart');
compare_at($standby2, $_, 'standby2 after its restart, older') for @recent;
is($disagreements, 0, 'no disagreement after runtime restarts and a standby restart');

# ---- promotion --------------------------------------------------------------

$primary->wait_for_catchup($standby1, 'replay');
$primary->stop;
# strict serializable peeks of the source issued the moment standby1 is
# promoted: their read position lies below the time the source is loaded
# again at (see below), which they must read at, not fail with 72000
my $at_promotion = q{DO $$ BEGIN WHILE pg_is_in_recovery() LOOP PERFORM pg_sleep(0.001); END LOOP; END $$; }
  . q{SET pg_peek.isolation = 'strict serializable'; };
my @strict = map { start_bg($standby1, $at_promotion . $_, verbose => 1) }
  ("SELECT id, qty FROM peek.persist_peek(NULL::stock, 'stock_src') ORDER BY id",
   "SELECT id, qty FROM peek.index_peek(NULL::stock, 'stock_by_id') ORDER BY id");
my $stock_at_promotion = $standby1->safe_psql('postgres', 'SELECT id, qty FROM stock ORDER BY id');
$standby1->promote;
ok(poll_until($standby1, "SELECT NOT pg_is_in_recovery()"), 'standby1 is promoted');
my $after = $standby1->safe_psql('postgres', "SELECT peek.write('items', ARRAY[(900, 'promoted')]::item[])", timeout => $psql_timeout);
push @history, [ $after, 900, 'promoted', 1 ];
is($after, $t + 1, 'the promoted standby writes at the next time: nothing committed was lost');
compare_at($standby1, $after, 'promoted standby1');
compare_at($standby1, $t, 'promoted standby1, the last primary time');
# the cascading standby follows the new primary
compare_at($standby2, $after, 'standby2 following the promoted standby1');
$standby1->safe_psql('postgres', "SELECT peek.allow_compaction('items', $after)");
ok(poll_until($standby1, "SELECT since = $after FROM peek.collections WHERE name = 'items'"),
	'the promoted standby compacts');
ok(poll_until($standby2, "SELECT since = $after FROM peek.collections WHERE name = 'items'"),
	'... and its standby follows');
is($disagreements, 0, 'no disagreement after promotion');

# a source goes on capturing on the promoted standby.  Its slot stayed on
# the old primary (PostgreSQL 15 does not replicate slots), so the runtime
# loads the table again at a new slot's start: the history before that is
# compacted away, and every change after it is captured.
for my $i (0 .. $#strict)
{
	my ($rc, $out, $err) = finish_bg($strict[$i]);
	$out =~ s/^(DO|SET)\n//mg;
	is("$rc|$out", "0|$stock_at_promotion",
		'promoted standby1: a strict ' . ('persist', 'index')[$i] . ' peek issued at the promotion reads the table')
	  or diag $err;
}
$standby1->safe_psql('postgres', 'UPDATE stock SET qty = qty * 10 WHERE id % 2 = 0');
ok(poll_until($standby1, "SELECT since > $stock_times[-1] FROM peek.collections WHERE name = 'stock_src'"),
	'promoted standby1: the source is loaded again');
my ($code, $msg) = sql_error($standby1, (stock_sqls($stock_times[-1]))[0]);
is($code, '72000', '... its history before the promotion is compacted');
is($standby1->safe_psql('postgres', "SELECT failure IS NULL FROM peek.objects WHERE name = 'stock_src'"), 't',
	'... and it is not failed');
$standby1->safe_psql('postgres', 'INSERT INTO stock VALUES (1000, 7); DELETE FROM stock WHERE id = 1');
$table = $standby1->safe_psql('postgres', 'SELECT id, qty FROM stock ORDER BY id');
my $strict = "SET pg_peek.isolation = 'strict serializable'; ";
my $key2 = $standby1->safe_psql('postgres', 'SELECT id, qty FROM stock WHERE id = 2');
for my $s ($standby1, $standby2)
{
	$standby1->wait_for_catchup($standby2, 'replay') if $s == $standby2;
	is($s->safe_psql('postgres', $strict . "SELECT id, qty FROM peek.persist_peek(NULL::stock, 'stock_src') ORDER BY id",
			timeout => $psql_timeout), $table, $s->name . ': the source after the promotion, persist peek');
	is($s->safe_psql('postgres', $strict . "SELECT id, qty FROM peek.index_peek(NULL::stock, 'stock_by_id') ORDER BY id",
			timeout => $psql_timeout), $table, $s->name . ': ... index peek');
	is($s->safe_psql('postgres', $strict . "SELECT id, qty FROM peek.index_peek(NULL::stock, 'stock_by_id', ROW(2))",
			timeout => $psql_timeout), $key2, $s->name . ': ... index peek by key');
}

done_testing();
