# Cancel of a waiting peek: pg_cancel_backend and
# statement_timeout end it with 57014, remove it from the pending work and
# its waiter count, count it in peeks_canceled, and leave the session (also
# one inside an explicit transaction) able to peek again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PgPeekTest;

my $serve = serving_role();
my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
my $node = new_node('cancel');

sub peek_sql
{
	my ($t) = @_;
	return "SELECT id, name FROM peek.persist_peek(NULL::item, 'c', as_of => $t) ORDER BY id, name";
}

sub canceled_count
{
	return $node->safe_psql('postgres',
		"SELECT peeks_canceled FROM peek.runtimes WHERE role = '$serve'");
}

sub write_row
{
	my ($id, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT peek.write('c', ARRAY[($id, '$name')]::item[])");
}

# nothing pending is left behind: no active peek, no waiter
sub check_clean
{
	my ($what) = @_;
	ok(poll_until($node, 'SELECT count(*) FROM peek.active_peeks', '0', 10),
		"$what: peek.active_peeks is empty");
	ok(poll_until($node, 'SELECT coalesce(sum(waiters), 0) FROM peek.frontiers', '0', 10),
		"$what: frontiers waiters = 0");
}

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('c', 'item');
});
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes"),
	'the runtimes are running');
is(write_row(1, 'a'), '0', 'write at time 0');
ok(poll_until($node, "SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'c'", '1'),
	'upper 1 is published');

# ---- pg_cancel_backend ----------------------------------------------------

my $canceled0 = canceled_count();
my $h = start_bg($node, peek_sql(5), verbose => 1);
my $pid = bg_backend_pid($node, $h);
ok(defined $pid, 'the peeking backend has a pid');
ok( poll_until($node,
		"SELECT string_agg(object || ':' || time || ':' || state || ':' || (pid = $pid), ',') FROM peek.active_peeks",
		'c:5:waiting:true'),
	'the peek at 5 waits, shown with its backend pid');
ok(poll_until($node, "SELECT sum(waiters) FROM peek.frontiers WHERE object = 'c'", '1'),
	'frontiers count one waiter');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't',
	'pg_cancel_backend on the waiting backend');
my ($rc, $out, $err) = finish_bg($h, 30);
isnt($rc, 0, 'the canceled peek fails');
like($err, qr/ERROR:  57014: canceling statement due to user request/,
	'the canceled peek reports 57014 canceling statement due to user request');
is($out, '', 'the canceled peek returns no rows');
check_clean('after pg_cancel_backend');
ok(poll_until($node, "SELECT peeks_canceled > $canceled0 FROM peek.runtimes WHERE role = '$serve'"),
	"peeks_canceled of the $serve runtime increased");

# the next peek works, both at once and after a wait
is($node->safe_psql('postgres', peek_sql(0)), '1|a', 'a peek at 0 works after the cancel');
$h = start_bg($node, peek_sql(1));
ok(poll_until($node, "SELECT string_agg(time || ':' || state, ',') FROM peek.active_peeks", '1:waiting'),
	'a new peek at 1 waits');
is(write_row(2, 'b'), '1', 'write at time 1');
($rc, $out, $err) = finish_bg($h, 30);
is($rc, 0, 'the new peek at 1 succeeds') or diag("stderr: $err");
is($out, "1|a\n2|b", 'the new peek at 1 returns the contents at 1');
check_clean('after the next peek');

# ---- statement_timeout ----------------------------------------------------

my $canceled1 = canceled_count();
my $start = time;
($rc, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '500ms';\n" . peek_sql(7) . ";\n",
	extra_params => [ '-v', 'VERBOSITY=verbose' ],
	timeout => 30);
my $elapsed = time - $start;
isnt($rc, 0, 'a peek at 7 under statement_timeout 500ms fails');
like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'it reports 57014 canceling statement due to statement timeout');
cmp_ok($elapsed, '>=', 0.45, 'it waited for the statement_timeout');
cmp_ok($elapsed, '<', 20, 'it did not hang');
check_clean('after statement_timeout');
ok(poll_until($node, "SELECT peeks_canceled > $canceled1 FROM peek.runtimes WHERE role = '$serve'"),
	"peeks_canceled increased after statement_timeout");
is(write_row(3, 'c'), '2', 'write at time 2');
is($node->safe_psql('postgres', "SET statement_timeout = '5s';\n" . peek_sql(2)),
	"1|a\n2|b\n3|c", 'a peek at 2 under statement_timeout works after the timeout');

# ---- a waiting peek inside an explicit transaction ------------------------

my $canceled2 = canceled_count();
my $s = bg_session($node, on_error_stop => 0);
$s->query_safe('\set VERBOSITY verbose');
$s->query_safe('BEGIN');
my $spid = $s->query_safe('SELECT pg_backend_pid()');
like($spid, qr/^\d+$/, 'the session has a backend pid');
is($s->query_safe(peek_sql(1)), "1|a\n2|b", 'a ready peek inside the transaction works');

# issue a waiting peek without waiting for its result
$s->{stdin} .= peek_sql(10) . ";\n";
$s->{run}->pump_nb;
ok( poll_until($node,
		"SELECT string_agg(time || ':' || state, ',') FROM peek.active_peeks WHERE pid = $spid",
		'10:waiting'),
	'a peek at 10 waits inside the transaction');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($spid)"), 't',
	'pg_cancel_backend on the session');
# the transaction is now aborted: the next statement fails until ROLLBACK
my ($aborted_out) = $s->query('SELECT 1');
like($s->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'the peek in the transaction reports 57014');
like($s->{stderr}, qr/25P02: current transaction is aborted/,
	'the transaction is aborted');
$s->{stderr} = '';
check_clean('after the cancel inside a transaction (before ROLLBACK)');
ok(poll_until($node, "SELECT peeks_canceled > $canceled2 FROM peek.runtimes WHERE role = '$serve'"),
	"peeks_canceled increased after the cancel inside a transaction");
$s->query_safe('ROLLBACK');

is($s->query_safe(peek_sql(2)), "1|a\n2|b\n3|c", 'after ROLLBACK a peek in the same session works');
# and a peek in the same session that waits and is answered
$s->{stdin} .= peek_sql(3) . ";\n";
$s->{run}->pump_nb;
ok( poll_until($node,
		"SELECT string_agg(time || ':' || state, ',') FROM peek.active_peeks WHERE pid = $spid",
		'3:waiting'),
	'a peek at 3 waits in the same session');
is(write_row(4, 'd'), '3', 'write at time 3');
my $res = $s->query_safe("SELECT 'end'");
is($res, "1|a\n2|b\n3|c\n4|d\nend", 'the peek at 3 in the same session returns the contents at 3');
is($s->{stderr}, '', 'the session reported no error after the ROLLBACK');

# a transaction with a savepoint: the canceled peek rolls back to it
$s->query_safe('BEGIN');
$s->query_safe('SAVEPOINT before_peek');
$s->{stdin} .= peek_sql(20) . ";\n";
$s->{run}->pump_nb;
ok( poll_until($node,
		"SELECT string_agg(time || ':' || state, ',') FROM peek.active_peeks WHERE pid = $spid",
		'20:waiting'),
	'a peek at 20 waits after a savepoint');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($spid)"), 't',
	'pg_cancel_backend on the session again');
check_clean('after the cancel inside a savepoint (before ROLLBACK TO)');
$s->query('ROLLBACK TO SAVEPOINT before_peek');
like($s->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'the peek after the savepoint is canceled');
unlike($s->{stderr}, qr/ROLLBACK|25P02/, 'ROLLBACK TO SAVEPOINT succeeds');
$s->{stderr} = '';
is($s->query_safe(peek_sql(3)), "1|a\n2|b\n3|c\n4|d",
	'after ROLLBACK TO SAVEPOINT a peek in the same transaction works');
$s->query_safe('COMMIT');
$s->quit;

check_clean('at the end');
$node->stop;
done_testing();
