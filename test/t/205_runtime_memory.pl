# The runtimes' memory stays flat under a steady load.  Each runtime logs its memory contexts
# (pg_log_backend_memory_contexts) after a warm-up and again after many more
# writes, captured changes and peeks of the same kind; its grand total may
# not grow by more than a small allowance (it grew by nothing here).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $node = new_node('memory');
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, v int);
SELECT peek.create_collection('c', 'item');
SELECT peek.create_index('c_by_id', 'c', '{id}');
SELECT peek.create_collection('d', 'item');
SELECT peek.write('d', ARRAY[(0, 0)]::item[]);
-- a captured table: the maintenance runtime decodes a round per change
CREATE TABLE src_t (id int, v int);
SELECT peek.create_source('src', 'src_t');
-- writes, each its own transaction, each followed by peeks of its time;
-- d (one row at a time) is allowed to compact as it goes, so compaction
-- rounds run too
CREATE PROCEDURE load(first int, n int) LANGUAGE plpgsql AS $$
DECLARE t bigint; s bigint;
BEGIN
    FOR i IN first .. first + n - 1 LOOP
        t := peek.write('c', ARRAY[ROW(i % 100, i)::item], ARRAY[]::item[]);
        s := peek.write('d', ARRAY[ROW(i, i)::item], ARRAY[ROW(i - 1, i - 1)::item]);
        IF i % 50 = 0 THEN
            PERFORM peek.allow_compaction('d', s);
        END IF;
        COMMIT;
        INSERT INTO src_t VALUES (i, i);
        COMMIT;
        PERFORM count(*) FROM peek.index_peek(NULL::item, 'c_by_id', ROW(i % 100), as_of => t);
        PERFORM count(*) FROM peek.persist_peek(NULL::item, 'd', as_of => s);
        COMMIT;
    END LOOP;
END $$;
});

ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 'src'"),
	'the source is loaded');
my @roles = interactive_mode() eq 'on' ? ('maintenance', 'interactive') : ('solo');
ok(poll_until($node,
	"SELECT count(*) = " . scalar(@roles) . " AND bool_and(state = 'running') FROM peek.runtimes"),
	'runtimes are running');

# The grand total of a runtime's memory contexts, as it logs them.
sub memory_total
{
	my ($role) = @_;
	my $pid = runtime_pid($node, $role);
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
	for (1 .. 300)
	{
		my $log = substr(slurp_file($node->logfile), $offset);
		return $1 if $log =~ /\[$pid\][^\n]*Grand total: (\d+) bytes/;
		usleep(100_000);
	}
	die "the $role runtime (pid $pid) did not log its memory contexts\n";
}

$node->safe_psql('postgres', 'CALL load(1, 1000)');
my %before = map { $_ => memory_total($_) } @roles;
my %pids = map { $_ => runtime_pid($node, $_) } @roles;
$node->safe_psql('postgres', 'CALL load(1001, 4000)');
my %after = map { $_ => memory_total($_) } @roles;

for my $role (@roles)
{
	is(runtime_pid($node, $role), $pids{$role}, "the $role runtime did not restart");
	my $growth = $after{$role} - $before{$role};
	cmp_ok($growth, '<', 64 * 1024,
		"the $role runtime's memory grew by $growth bytes over 4000 more writes (from $before{$role})");
}

$node->stop;
done_testing();
