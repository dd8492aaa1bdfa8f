# A reader who saw a collection's or a source's upper u in
# peek.collections, then peeks at it with as_of NULL, sees at least time
# u - 1.  A write's upper (and a source's, when the maintenance runtime
# ingests a transaction) commits in peek.uppers before the runtime
# publishes it in the registry, which as_of NULL resolves against;
# peek.collections showed the greater of the two, so in that window it ran
# ahead of what the peek saw.  On a streaming standby the window lasts as
# long as the runtime that publishes replayed changes does not run: here
# it is stopped (SIGSTOP) while the primary's writes replay, and
# peek.collections must not show an upper the peeks do not reach (it did:
# the old definition fails the standby checks).  The same view is checked
# for peek.indexes and peek.frontiers, which show the published upper.
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
	SELECT peek.create_collection('rw', 'urow');
	CREATE TABLE ut (k int);
	SELECT peek.create_source('us', 'ut');
});
ok(poll_until($primary, "SELECT count(*) FROM peek.collections WHERE state = 'ready' AND upper > 0", '2'),
	'the collection and the source are ready');
my $standby = new_standby($primary, 'cupper_standby');
ok(poll_until($standby, "SELECT upper = 1 FROM peek.collections WHERE name = 'uc'"),
	'the standby serves the collection');

# the collection: write k at time k - 1, so at its latest time one whose
# upper is u holds max(k) = u
my $seen_then_read_uc = q{
	SELECT upper AS seen FROM peek.collections WHERE name = 'uc' \gset
	SELECT :seen || ' ' || coalesce(max(k), 0) FROM peek.persist_peek(NULL::urow, 'uc');
};

# the source: its times are commit LSNs.  Row k's commit is below lsn[k],
# the WAL position read after it committed, so a source whose upper u has
# passed lsn[k] holds row k at its latest time.
my @lsn = (0);
my $seen_then_read_us = q{
	SELECT upper AS seen FROM peek.collections WHERE name = 'us' \gset
	SELECT :seen || ' ' || coalesce(max(k), 0) FROM peek.persist_peek(NULL::ut, 'us');
};

sub source_rows_below
{
	my ($upper) = @_;
	my $k = 0;
	$k++ while $k + 1 < @lsn && $lsn[$k + 1] <= $upper;
	return $k;
}

# one reader's view then peek: (seen upper, least rows the peek must hold,
# rows it held)
sub seen_then_read
{
	my ($node, $which) = @_;
	my ($seen, $read) = split / /,
	  $node->safe_psql('postgres', $which eq 'uc' ? $seen_then_read_uc : $seen_then_read_us);
	return ($seen, $which eq 'uc' ? $seen : source_rows_below($seen), $read);
}

sub check_reads
{
	my ($node, $which, $what) = @_;
	my ($seen, $least, $read) = seen_then_read($node, $which);
	ok($read >= $least,
		"$what: peek.collections showed $which\'s upper $seen, the peek after it holds rows to $read (at least $least)");
	return $seen;
}

sub write_source
{
	my ($node, $k) = @_;
	push @lsn, $node->safe_psql('postgres',
		"INSERT INTO ut VALUES ($k); SELECT pg_current_wal_lsn() - '0/0'");
}

for my $k (2 .. 6)
{
	$primary->safe_psql('postgres', "SELECT peek.write('uc', ARRAY[ROW($k)]::urow[])");
	write_source($primary, $k - 1);
	for my $which ('uc', 'us')
	{
		my $done = $which eq 'uc' ? $k : $k - 1;
		my $ok = 1;
		for (1 .. 200)
		{
			my ($s, $least, $r) = seen_then_read($primary, $which);
			if ($r < $least)
			{
				$ok = 0;
				fail("primary, write $k: peek.collections showed $which\'s upper $s, the peek after it holds rows to $r (at least $least)");
				last;
			}
			last if $r >= $done && $least >= $done;
		}
		pass("primary, write $k: every peek of $which after peek.collections reached its upper") if $ok;
	}
}

# read-your-writes: a session's committed write is seen by its own next
# peek at as_of NULL (which waits for its publication), while
# peek.collections may still show the published upper below it; a write
# in the session's open transaction is not complete, so as_of NULL reads
# the published contents without it, and a peek at its time, which only
# that transaction's commit could complete, fails at once (it never waits
# for its own transaction)
is($primary->safe_psql('postgres', q{
	SELECT peek.write('rw', ARRAY[ROW(100)]::urow[]) AS t \gset
	SELECT :t || ' ' || max(k) FROM peek.persist_peek(NULL::urow, 'rw');
}), '0 100', 'a session\'s peek at as_of NULL right after its write sees it');
my ($rc, $out, $err) = $primary->psql('postgres', q{
	BEGIN;
	SELECT peek.write('rw', ARRAY[ROW(200)]::urow[]) AS t \gset
	SELECT max(k) FROM peek.persist_peek(NULL::urow, 'rw');
	SET LOCAL statement_timeout = '300ms';
	SELECT count(*) FROM peek.persist_peek(NULL::urow, 'rw', as_of => :t);
	ROLLBACK;
}, on_error_stop => 0);
is($out, '100', 'as_of NULL in the writer\'s open transaction reads without its write');
like($err, qr/time \d+ of collection "rw" is not complete before this transaction commits/,
	'a peek at the open transaction\'s own time fails at once');

# the standby's runtime that publishes what replay changed is stopped:
# replay goes on (the stored uppers with it), the published uppers not
my $pid = standby_publisher_pid($primary, $standby);
ok(poll_until($standby, "SELECT upper = 6 FROM peek.collections WHERE name = 'uc'"),
	'the standby published the collection\'s writes');
# (read once it is stopped: until then it publishes the source's upper as
# replay brings any WAL, an idle source's too)
stop_runtime($standby, $pid);
my $before_uc = check_reads($standby, 'uc', 'standby before');
my $before_us = check_reads($standby, 'us', 'standby before');
$primary->safe_psql('postgres', "SELECT peek.write('uc', ARRAY[ROW(7)]::urow[])");
write_source($primary, 6);
ok(poll_until($primary, "SELECT count(*) FROM peek.persist_peek(NULL::ut, 'us') WHERE k = 6", '1'),
	'the primary\'s source took the insert');
my $stored = "SELECT max(upper) FROM peek.uppers u JOIN peek.objects o ON u.object = o.id & 4294967295 WHERE o.name = ";
ok(poll_until($primary, "SELECT ($stored 'us') >= $lsn[6]"), 'the primary stored the source\'s upper past the insert');
$primary->wait_for_catchup($standby, 'replay');
is($standby->safe_psql('postgres', "$stored 'uc'"), '7',
	'the standby replayed the collection\'s write (its stored upper)');
ok($standby->safe_psql('postgres', "SELECT ($stored 'us') >= $lsn[6]") eq 't',
	'the standby replayed the source\'s stored upper past the insert');
is(check_reads($standby, 'uc', 'standby, publishing runtime stopped'), $before_uc,
	'peek.collections on the standby shows the collection\'s upper its peeks resolve against');
is(check_reads($standby, 'us', 'standby, publishing runtime stopped'), $before_us,
	'peek.collections on the standby shows the source\'s upper its peeks resolve against');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM peek.frontiers WHERE object IN ('uc', 'us') AND upper > CASE object WHEN 'uc' THEN $before_uc ELSE $before_us END"),
	'0', 'peek.frontiers on the standby shows no upper past the published ones');
kill 'CONT', $pid;
ok(poll_until($standby, "SELECT upper = 7 FROM peek.collections WHERE name = 'uc'"),
	'the standby publishes the collection\'s write once its runtime runs');
ok(poll_until($standby, "SELECT upper >= $lsn[6] FROM peek.collections WHERE name = 'us'"),
	'the standby publishes the source\'s upper once its runtime runs');
check_reads($standby, 'uc', 'standby after');
check_reads($standby, 'us', 'standby after');
is($standby->safe_psql('postgres', "SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::urow, 'uc')"),
	'1,2,3,4,5,6,7', 'the standby\'s collection holds every write');
is($standby->safe_psql('postgres', "SELECT string_agg(k::text, ',' ORDER BY k) FROM peek.persist_peek(NULL::ut, 'us')"),
	'1,2,3,4,5,6', 'the standby\'s source holds every insert');

$standby->stop;
$primary->stop;
done_testing();
