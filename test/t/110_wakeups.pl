# Wake-ups scale with what changed, through the real
# write/advance -> maintenance publish -> dirty mark path:
#  * 1000 seals of an index with nothing parked on it do not wake the
#    runtime that serves peeks (no wake-up, no dirty mark, no re-examination);
#  * with one peek parked on one of 50 indexes, seals of the other 49 wake
#    nobody, and the seal of that index marks it dirty once, re-examines that
#    one peek and answers it.
# In solo mode the solo runtime is also the maintainer, so its wake-ups count
# the seals it publishes; there the dirty marks and re-examinations carry
# the claim.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $serve = serving_role();
my $node  = new_node('wakeups');

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE w AS (k int, v int);
});

sub counters
{
	my $row = $node->safe_psql('postgres',
		"SELECT wakeups, dirty_marks, peeks_reexamined, peeks_served FROM peek.runtimes WHERE role = '$serve'");
	my %c;
	@c{qw(wakeups dirty reexamined served)} = split /\|/, $row;
	return \%c;
}

sub index_upper
{
	my ($index) = @_;
	return $node->safe_psql('postgres',
		"SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = '$index'");
}

# ---- 1000 seals with nothing parked ----------------------------------------

$node->safe_psql('postgres', q{
	SELECT peek.create_collection('busy', 'w');
	SELECT peek.create_index('busy_by_k', 'busy', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'busy_by_k'", 'ready'),
	'index over an empty collection is published');

my $before = counters();
# 1000 seals, each a separate transaction, through peek.write
$node->safe_psql('postgres', q{
	DO $$
	BEGIN
		FOR i IN 1 .. 1000 LOOP
			PERFORM peek.write('busy', ARRAY[(i % 10, i)]::w[]);
			COMMIT;
		END LOOP;
	END $$;
});
ok(poll_until($node, "SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'busy_by_k'", '1000'),
	'the index followed all 1000 seals');
my $after = counters();
if ($mode eq 'on')
{
	is($after->{wakeups}, $before->{wakeups},
		'1000 seals with nothing parked: no wake-up of the interactive runtime');
}
is($after->{dirty}, $before->{dirty}, '1000 seals with nothing parked: no dirty mark');
is($after->{reexamined}, $before->{reexamined},
	'1000 seals with nothing parked: nothing re-examined');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.index_peek(NULL::w, 'busy_by_k', ROW(3))"),
	'100', 'the index holds every sealed update');

# ---- one parked peek on one of 50 indexes ----------------------------------

$node->safe_psql('postgres', q{
	DO $$
	BEGIN
		FOR i IN 1 .. 50 LOOP
			PERFORM peek.create_collection('c' || i, 'w');
			PERFORM peek.create_index('c' || i || '_by_k', 'c' || i, ARRAY['k']);
			PERFORM peek.write('c' || i, ARRAY[(1, i)]::w[]);
		END LOOP;
	END $$;
});
ok(poll_until($node,
		"SELECT count(*) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object LIKE 'c%\\_by\\_k' AND upper = 1", '50'),
	'50 indexes published');

# park a key peek on index 7 at time 3 (upper is 1)
my $h = start_bg($node,
	"SELECT k, v FROM peek.index_peek(NULL::w, 'c7_by_k', ROW(1), as_of => 3) ORDER BY v");
ok(poll_until($node, "SELECT state || ':' || waiting_on FROM peek.active_peeks WHERE object = 'c7_by_k'",
		'waiting:upper'),
	'the peek on c7_by_k is parked');
my $parked = counters();

# five seals of each of the other 49 indexes
$node->safe_psql('postgres', q{
	DO $$
	BEGIN
		FOR round IN 1 .. 5 LOOP
			FOR i IN 1 .. 50 LOOP
				CONTINUE WHEN i = 7;
				PERFORM peek.write('c' || i, ARRAY[(1, 100 * round + i)]::w[]);
				COMMIT;
			END LOOP;
		END LOOP;
	END $$;
});
ok(poll_until($node,
		"SELECT count(*) FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object LIKE 'c%\\_by\\_k' AND upper = 6", '49'),
	'the other 49 indexes followed 5 seals each');
my $others = counters();
if ($mode eq 'on')
{
	is($others->{wakeups}, $parked->{wakeups},
		'245 seals of other indexes: no wake-up of the interactive runtime');
}
is($others->{dirty}, $parked->{dirty}, '245 seals of other indexes: no dirty mark');
is($others->{reexamined}, $parked->{reexamined}, '245 seals of other indexes: nothing re-examined');
ok(!bg_done($h), 'the parked peek is still waiting');

# seal index 7 past time 3: exactly that peek is woken and answered
$node->safe_psql('postgres', q{
	SELECT peek.append('c7', ARRAY[(1, 70), (2, 71)]::w[], 2);
	SELECT peek.advance('c7', 4);
});
my ($rc, $out, $err) = finish_bg($h);
is($rc, 0, 'the parked peek returned') or diag($err);
is($out, "1|7\n1|70", 'it returned exactly key 1 at time 3');
ok(poll_until($node,
		"SELECT dirty_marks - $parked->{dirty} FROM peek.runtimes WHERE role = '$serve'", '1'),
	'the seal of c7_by_k made one dirty mark');
my $woken = counters();
is($woken->{reexamined} - $parked->{reexamined}, 1, 'and re-examined exactly one peek');
if ($mode eq 'on')
{
	cmp_ok($woken->{wakeups} - $parked->{wakeups}, '>=', 1, 'the interactive runtime woke for it');
	cmp_ok($woken->{wakeups} - $parked->{wakeups}, '<=', 2,
		'and not for the seals of the other indexes');
}
is($node->safe_psql('postgres', 'SELECT coalesce(sum(waiters), 0) FROM peek.frontiers'),
	'0', 'no waiter left in the registry');

$node->stop;
done_testing();
