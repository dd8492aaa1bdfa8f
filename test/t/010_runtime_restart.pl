# Runtime restarts lose no answer: peeks that wait while the
# serving runtime is terminated are re-issued by their backends and answered
# correctly once their times are complete; a write made while the runtime
# that maintains the collection is down is published when it comes back.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $serve = serving_role();
# the runtime that maintains collections (and publishes their frontiers)
my $maint = $mode eq 'on' ? 'maintenance' : 'solo';

my $node = new_node('restart');

# ---- a model of the history, to compute the expected contents ------------

# $history{$coll}: list of [time, id, name, diff]
my %history;

# The contents of a collection at time $t as psql prints them with
# ORDER BY id, name: one "id|name" line per copy.
sub expected_at
{
	my ($coll, $t) = @_;
	my %count;
	for my $u (@{ $history{$coll} // [] })
	{
		my ($time, $id, $name, $diff) = @$u;
		$count{"$id|$name"} += $diff if $time <= $t;
	}
	my @rows;
	for my $row (sort { (split /\|/, $a)[0] <=> (split /\|/, $b)[0] || $a cmp $b }
		keys %count)
	{
		die "negative multiplicity in the test's own history" if $count{$row} < 0;
		push @rows, ($row) x $count{$row};
	}
	return join("\n", @rows);
}

sub rows_sql
{
	my (@rows) = @_;
	return "ARRAY[" . join(', ', map { "($_->[0], '$_->[1]')" } @rows) . "]::item[]";
}

# write($coll, [inserts], [deletes]): peek.write, recorded in the model.
sub write_rows
{
	my ($coll, $ins, $del) = @_;
	my $sql = "SELECT peek.write('$coll', " . rows_sql(@$ins);
	$sql .= ", " . rows_sql(@$del) if $del && @$del;
	$sql .= ")";
	my $t = $node->safe_psql('postgres', $sql);
	push @{ $history{$coll} }, [ $t, @$_, 1 ] for @$ins;
	push @{ $history{$coll} }, [ $t, @$_, -1 ] for @{ $del // [] };
	return $t;
}

sub append_rows
{
	my ($coll, $rows, $at, $diff) = @_;
	$node->safe_psql('postgres',
		"SELECT peek.append('$coll', " . rows_sql(@$rows) . ", $at, $diff)");
	push @{ $history{$coll} }, [ $at, @$_, $diff ] for @$rows;
}

sub peek_sql
{
	my ($coll, $t) = @_;
	my $as_of = defined $t ? $t : 'NULL';
	return "SELECT id, name FROM peek.persist_peek(NULL::item, '$coll', as_of => $as_of) ORDER BY id, name";
}

sub upper_of
{
	my ($coll) = @_;
	return $node->safe_psql('postgres',
		"SELECT upper FROM peek.collections WHERE name = '$coll'");
}

sub runtime_row
{
	my ($role) = @_;
	my ($pid, $restarts) = split /\|/, $node->safe_psql('postgres',
		"SELECT coalesce(pid, 0), restarts FROM peek.runtimes WHERE role = '$role'");
	return ($pid, $restarts);
}

# ---- set up ---------------------------------------------------------------

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('items', 'item');
SELECT peek.create_collection('empty', 'item');
});
my $nruntimes = $mode eq 'on' ? 2 : 1;
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes"),
	'runtimes are running');

is(write_rows('items', [ [ 1, 'a' ], [ 2, 'b' ] ]), '0', 'first write is at time 0');
is(write_rows('items', [ [ 3, 'c' ] ], [ [ 1, 'a' ] ]), '1', 'second write is at time 1');
is(write_rows('items', [ [ 4, 'd' ], [ 2, 'b' ] ]), '2', 'third write is at time 2');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || upper, ',' ORDER BY object) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo')",
		'empty:0,items:3'),
	'frontiers published: items upper 3, empty upper 0');
is($node->safe_psql('postgres', peek_sql('items', 2)),
	expected_at('items', 2), 'a peek at a complete time answers at once');

# ---- peeks wait while the serving runtime is terminated -------------------

my %bg = (
	'items@3' => start_bg($node, peek_sql('items', 3)),
	'items@4' => start_bg($node, peek_sql('items', 4)),
	'items@5' => start_bg($node, peek_sql('items', 5)),
	'empty@latest' => start_bg($node, peek_sql('empty', undef)),
);

my $waiting_sql =
  "SELECT string_agg(object || ':' || coalesce(time::text, 'latest') || ':' || state, ',' ORDER BY object, time) FROM peek.active_peeks";
my $waiting_all = 'empty:latest:waiting,items:3:waiting,items:4:waiting,items:5:waiting';
ok(poll_until($node, $waiting_sql, $waiting_all),
	'four peeks are waiting (as_of NULL on the empty collection waits, its time not yet resolved)');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || w, ',' ORDER BY object) FROM (SELECT object, sum(waiters) AS w FROM peek.frontiers GROUP BY object) f",
		'empty:1,items:3'),
	'frontiers count the waiters: items 3, empty 1');

my ($old_pid, $old_restarts) = runtime_row($serve);
ok($old_pid > 0, "the $serve runtime has a pid");
is( $node->safe_psql('postgres', "SELECT pg_terminate_backend($old_pid, 10000)"),
	't', "terminate the $serve runtime (pid $old_pid)");
ok( poll_until($node,
		"SELECT pid IS NOT NULL AND pid <> $old_pid AND state = 'running' AND restarts > $old_restarts"
		  . " FROM peek.runtimes WHERE role = '$serve'"),
	"the $serve runtime comes back with a new pid, state running, restarts increased");
ok( poll_until($node,
		"SELECT bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes"),
	'every runtime is running');

ok(!(grep { bg_done($bg{$_}) } keys %bg), 'no waiting peek ended because of the restart');
ok(poll_until($node, $waiting_sql, $waiting_all),
	'the backends re-issued their peeks: the same four are waiting again');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || w, ',' ORDER BY object) FROM (SELECT object, sum(waiters) AS w FROM peek.frontiers GROUP BY object) f",
		'empty:1,items:3'),
	'waiter counts are rebuilt after the restart');

# complete every time the peeks wait for: 3, 4, 5 on items, 0 on empty
is(write_rows('items', [ [ 5, 'e' ] ], [ [ 2, 'b' ] ]), '3', 'write at time 3');
append_rows('items', [ [ 6, 'f' ] ], 4, 2);
append_rows('items', [ [ 4, 'd' ] ], 4, -1);
$node->safe_psql('postgres', "SELECT peek.advance('items', 5)");
is(write_rows('items', [], [ [ 3, 'c' ] ]), '5', 'write at time 5');
is(write_rows('empty', [ [ 9, 'z' ] ]), '0', 'write at time 0 of the empty collection');

for my $name (sort keys %bg)
{
	my ($coll, $t) = split /@/, $name;
	$t = 0 if $t eq 'latest';
	my ($rc, $out, $err) = finish_bg($bg{$name}, 60);
	is($rc, 0, "peek $name finishes without error") or diag("stderr: $err");
	is($out, expected_at($coll, $t), "peek $name returns the contents at time $t");
}

ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0'),
	'no active peeks remain');
ok(poll_until($node, 'SELECT coalesce(sum(waiters), 0) FROM peek.frontiers', '0'),
	'frontiers waiters return to 0');

# ---- a write while the maintaining runtime is down ------------------------

my $t_next = upper_of('items');
is($t_next, '6', 'items upper is 6');
my $h = start_bg($node, peek_sql('items', $t_next));
ok( poll_until($node,
		"SELECT string_agg(object || ':' || time || ':' || state, ',') FROM peek.active_peeks",
		"items:$t_next:waiting"),
	"a peek at $t_next waits");

my ($m_pid, $m_restarts) = runtime_row($maint);
ok($m_pid > 0, "the $maint runtime has a pid");
# terminate and wait for the exit, then write before the 1 s restart delay
my $down = $node->safe_psql('postgres', qq{
SELECT pg_terminate_backend($m_pid, 10000);
SELECT peek.write('items', ARRAY[(7, 'g'), (8, 'h')]::item[], ARRAY[(5, 'e')]::item[]);
SELECT coalesce(pid, 0) <> $m_pid FROM peek.runtimes WHERE role = '$maint';
SELECT pid IS NULL FROM peek.runtimes WHERE role = '$maint';
});
push @{ $history{items} }, [ 6, 7, 'g', 1 ], [ 6, 8, 'h', 1 ], [ 6, 5, 'e', -1 ];
my @down = split /\n/, $down;
is($down[0], 't', "terminate the $maint runtime (pid $m_pid)");
is($down[1], '6', 'write at time 6 while it is down');
is($down[2], 't', "the old $maint runtime is gone when the write commits");
note("the $maint runtime was " . ($down[3] eq 't' ? '' : 'already back, not ') . 'down when the write committed');

ok( poll_until($node,
		"SELECT pid IS NOT NULL AND pid <> $m_pid AND state = 'running' AND restarts > $m_restarts"
		  . " FROM peek.runtimes WHERE role = '$maint'"),
	"the $maint runtime comes back");
ok( poll_until($node,
		"SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'items'", '7'),
	'the frontier catches up with the write made while it was down');
my ($rc, $out, $err) = finish_bg($h, 60);
is($rc, 0, "the peek at $t_next finishes without error") or diag("stderr: $err");
is($out, expected_at('items', $t_next), "the peek at $t_next returns the contents at $t_next");
is($node->safe_psql('postgres', peek_sql('items', undef)),
	expected_at('items', 6), 'a peek at the latest time after the restart is right');
for my $t (2 .. 6)
{
	is($node->safe_psql('postgres', peek_sql('items', $t)),
		expected_at('items', $t), "items at $t is unchanged by the restarts");
}
ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0'),
	'no active peeks remain at the end');
ok(poll_until($node, 'SELECT coalesce(sum(waiters), 0) FROM peek.frontiers', '0'),
	'frontiers waiters are 0 at the end');

# ---- the log: only the expected terminations ------------------------------

my $log = slurp_file($node->logfile);
my @bad = grep {
	/\b(ERROR|FATAL|PANIC):/
	  && !/FATAL:  terminating background worker "pg_peek (interactive|maintenance|solo)(?: runtime)?" due to administrator command/
} split /\n/, $log;
is(join("\n", @bad), '', 'the server log has no ERROR, FATAL or PANIC but the expected terminations');
my @terms = ($log =~ /terminating background worker "pg_peek \w+(?: runtime)?" due to administrator command/g);
is(scalar(@terms), 2,
	'the log shows both terminations');
unlike($log, qr/terminated by signal|server process .* was terminated/,
	'no server process crashed');

$node->stop;
done_testing();
