# A reader who saw a collection's upper u in peek.collections, then reads
# the collection at the latest time (persist_peek, as_of NULL), sees at
# least time u - 1, as TAP 376 checks for peek.views.  A write commits the
# collection's durable upper (peek.uppers) before the runtime publishes it
# in the registry, which the read's latest time comes from; peek.collections
# showed the greater of the two, so in that window it ran ahead of the read
# (seen on a primary under writes: upper 147 shown, the read held the rows
# of time 145).  On a streaming standby the window lasts while the runtime
# that publishes replayed changes does not run (stopped here with SIGSTOP).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $primary = new_node('cupper_primary', init => { allows_streaming => 1 });
$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE urow AS (k int);
	SELECT peek.create_collection('uc', 'urow');
	SELECT peek.write('uc', ARRAY[ROW(1)]::urow[]);
});
ok(poll_until($primary, "SELECT state = 'ready' AND upper = 1 FROM peek.collections WHERE name = 'uc'"),
	'the collection is ready');
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('cupper_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby, 'replay');
ok(poll_until($standby, "SELECT upper = 1 FROM peek.collections WHERE name = 'uc'"),
	'the standby serves the collection');

# write k at time k - 1: the collection at time t holds 1 .. t + 1, so at
# the time below an upper u its greatest k is u
my $seen_then_read = q{
	SELECT upper AS seen FROM peek.collections WHERE name = 'uc' \gset
	SELECT :seen || ' ' || coalesce(max(k), 0) FROM peek.persist_peek(NULL::urow, 'uc');
};

sub check_reads
{
	my ($node, $what) = @_;
	my ($seen, $read) = split / /, $node->safe_psql('postgres', $seen_then_read);
	ok($read >= $seen, "$what: peek.collections showed upper $seen, the read after it holds rows to $read");
	return $seen;
}

# the standby's runtime that publishes what replay changed is stopped:
# replay goes on (the durable upper with it), the published upper not
my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
my $pid = runtime_pid($standby, $role);
ok($pid, "the standby's $role runtime runs");
my $before = check_reads($standby, 'standby before');
stop_runtime($standby, $pid);
$primary->safe_psql('postgres', "SELECT peek.write('uc', ARRAY[ROW(2)]::urow[])");
$primary->wait_for_catchup($standby, 'replay');
is($standby->safe_psql('postgres',
		"SELECT max(upper) FROM peek.uppers u JOIN peek.objects o ON u.object = o.id & 4294967295 WHERE o.name = 'uc'"),
	'2', 'the standby replayed the write (its durable upper)');
is(check_reads($standby, 'standby, publishing runtime stopped'), $before,
	'peek.collections on the standby shows the upper its reads resolve against');
kill 'CONT', $pid;
ok(poll_until($standby, "SELECT upper = 2 FROM peek.collections WHERE name = 'uc'"),
	'the standby publishes it once its runtime runs');
check_reads($standby, 'standby after');

# on the primary under writes: every read after peek.collections reaches
# the upper it showed
my $bg = start_bg($primary, q{
	DO $$ BEGIN
	  FOR k IN 3 .. 1000 LOOP PERFORM peek.write('uc', ARRAY[ROW(k)]::urow[]); COMMIT; PERFORM pg_sleep(0.002); END LOOP;
	END $$;
});
my ($reads, $behind) = (0, '');
while (!bg_done($bg))
{
	my ($s, $r) = split / /, $primary->safe_psql('postgres', $seen_then_read);
	$reads++;
	$behind .= " $s>$r" if $r < $s;
}
finish_bg($bg);
is($behind, '', "primary: none of $reads reads after peek.collections was behind the upper it showed");

$standby->stop;
$primary->stop;
done_testing();
