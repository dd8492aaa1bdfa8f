# A source's adoption that fails half-way is retried, not half kept.  The
# maintenance runtime bounds its lock waits (100 ms); a restarted runtime
# looks a source's row type up afresh, which opens the type's relation, so
# a session that holds that relation (ALTER TYPE in an open transaction)
# makes the adoption time out.  A stream entered in the runtime's table
# before its row type was looked up stayed there with no row descriptor,
# and the next decoding crashed the runtime (SIGSEGV in rows_match_table;
# made whole first since f153818, which this test fails before).  Here the
# adoption fails while the lock is held; once it is let go, writes to the
# table are decoded and peeked, and no process crashed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = maintenance_role();
my $node = new_node('adopt_locked_row_type');

$node->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION pg_peek;
CREATE ROLE adopt_other;
CREATE TABLE t(id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'r' || g FROM generate_series(1, 5) g;
SELECT peek.create_source('s', 't');
SELECT peek.create_index('si', 's', ARRAY['id']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'si'", 'ready'),
	'the source and its index are ready');
my $type = $node->safe_psql('postgres',
	"SELECT row_type FROM peek.collections WHERE name = 's'");
like($type, qr/^peek\.source_\d+$/, "the source's row type is $type");
my $sid = $node->safe_psql('postgres', "SELECT id FROM peek.objects WHERE name = 's'");

# The table's rows as peeked (persist and index), and as the table has them.
my $strict = "SET pg_peek.isolation = 'strict serializable';";
my $table_sql = "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM t";
my $persist_sql = "$strict SELECT string_agg(id || ':' || v, ',' ORDER BY id)"
  . " FROM peek.persist_peek(NULL::t, 's')";
my $index_sql = "$strict SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM"
  . " (SELECT (peek.index_peek(NULL::t, 'si', key => ROW(g))).* FROM generate_series(1, 20) g) x";

# ---- the row type's relation held across a restart of the runtime --------

my $locker = bg_session($node);
$locker->query_safe("BEGIN; ALTER TYPE $type OWNER TO adopt_other;");

my $offset = -s $node->logfile;
my ($old_pid, $back) = restart_runtime($node, $maint);
ok($back, 'the runtime is started again');
my $retried = 0;
for (1 .. 300)
{
	$retried = 1
	  if slurp_file($node->logfile, $offset) =~
	  /pg_peek object $sid will be retried(?: in \d+ ms[^:]*)?: canceling statement due to lock timeout/;
	last if $retried;
	select(undef, undef, undef, 0.1);
}
ok($retried, "the source's adoption timed out on its row type's relation and is retried");
# a few more tries fail the same way while the lock is held
select(undef, undef, undef, 0.5);
$locker->query_safe('ROLLBACK');
$locker->quit;

# ---- the source decodes again, nothing lost, nothing doubled ------------

$node->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'n' || g FROM generate_series(6, 8) g;
UPDATE t SET v = 'u' WHERE id = 2;
DELETE FROM t WHERE id = 3;
});
my $want = $node->safe_psql('postgres', $table_sql);
my $peek = start_bg($node, $persist_sql, timeout => 60);
my ($rc, $out, $err) = finish_bg($peek, 60);
$out =~ s/^SET\n//;
is($rc, 0, 'the persist peek is answered') or diag($err);
is($out, $want, 'the persist peek shows the table: no write lost or doubled');
$peek = start_bg($node, $index_sql, timeout => 60);
($rc, $out, $err) = finish_bg($peek, 60);
$out =~ s/^SET\n//;
is($rc, 0, 'the index peek is answered') or diag($err);
is($out, $want, 'the index peek shows the table');
is($node->safe_psql('postgres', "SELECT state FROM peek.collections WHERE name = 's'"),
	'ready', 'the source did not fail');

my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/terminated by signal|server process .* was terminated/,
	'no process crashed');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM peek.runtimes WHERE role = '$maint' AND pid <> $old_pid"),
	'1', 'the restarted runtime still runs');

$node->stop;
done_testing();
