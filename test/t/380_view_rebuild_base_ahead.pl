# A view's groups rebuilt after a restart are built from its inputs'
# contents at the view's upper, also when an input's base has moved past
# it (persist_scan_at reads the whole shard then, the history after the
# view's upper taken out of the base).  A join view over a fast input and
# a slow one: the slow one holds the view's upper at 21 while the fast
# one is written to time 50 and its base folded there; after an immediate
# stop and a start, the slow input moves on (with a change of its own)
# and the view must equal its query over the inputs at every time from
# its since, as must a grouped view over the fast input alone.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('vbase');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE ra AS (k int, x int);
	CREATE TYPE rb AS (k int, label text);
	SELECT peek.create_collection('fast', 'ra');
	SELECT peek.create_collection('slow', 'rb');
	SELECT peek.set_retention('fast', NULL);
	SELECT peek.set_retention('slow', NULL);
	DO $$BEGIN
		FOR i IN 0..19 LOOP PERFORM peek.append('fast', ARRAY[(i % 4 + 1, i)]::ra[], i, 1); END LOOP;
		PERFORM peek.advance('fast', 20);
	END $$;
	SELECT peek.append('slow', ARRAY[(1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')]::rb[], 0, 1);
	SELECT peek.advance('slow', 21);
	SELECT peek.create_view('joined', $$SELECT a.k, b.label, count(*) AS n, sum(a.x) AS s, min(a.x) AS lo
		FROM peek.persist_peek(NULL::ra, 'fast') a JOIN peek.persist_peek(NULL::rb, 'slow') b ON a.k = b.k
		GROUP BY a.k, b.label$$);
	SELECT peek.create_view('grouped', $$SELECT k, count(*) AS n, max(x) AS hi
		FROM peek.persist_peek(NULL::ra, 'fast') GROUP BY k$$);
});
ok(poll_until($node, "SELECT bool_and(upper = 20) FROM peek.views WHERE name IN ('joined', 'grouped')"),
	'the views hydrated');

# times 20..50: x = t inserted, and at every third time x = t - 10 deleted
$node->safe_psql('postgres', q{
	DO $$BEGIN
		FOR i IN 20..50 LOOP
			PERFORM peek.append('fast', ARRAY[(i % 4 + 1, i)]::ra[], i, 1);
			IF i % 3 = 0 THEN
				PERFORM peek.append('fast', ARRAY[((i - 10) % 4 + 1, i - 10)]::ra[], i, -1);
			END IF;
		END LOOP;
		PERFORM peek.advance('fast', 51);
	END $$;
});
ok(poll_until($node, "SELECT base_time = 50 FROM peek.objects WHERE name = 'fast'"),
	"the fast input's base moved to 50");
ok(poll_until($node, "SELECT upper = 21 FROM peek.views WHERE name = 'joined'"),
	'the join view waits at the slow input');
$node->safe_psql('postgres', 'CHECKPOINT');

$node->stop('immediate');
$node->start;
my $upper = $node->safe_psql('postgres', "SELECT upper FROM peek.views WHERE name = 'joined'");
my $base = $node->safe_psql('postgres', "SELECT base_time FROM peek.objects WHERE name = 'fast'");
cmp_ok($upper, '<', $base, "after the restart the view's upper ($upper) is before the input's base ($base)");

$node->safe_psql('postgres', q{
	SELECT peek.append('slow', ARRAY[(2, 'deux')]::rb[], 30, 1);
	SELECT peek.append('slow', ARRAY[(2, 'two')]::rb[], 30, -1);
	SELECT peek.advance('slow', 51);
});
ok(poll_until($node, "SELECT bool_and(upper = 51) FROM peek.views WHERE name IN ('joined', 'grouped')"),
	'the views caught up');

# each view's rows, as text, against its query over the inputs, at every
# time from its since: the times that differ
foreach my $view ('joined', 'grouped')
{
	my ($query, $since, $vupper) = split(/\|/, $node->safe_psql('postgres',
		"SELECT query, since, upper FROM peek.views WHERE name = '$view'"));
	$query =~ s/('(?:fast|slow)'::text)/$1, as_of => \@T\@/g;
	my $mismatches = '';
	for my $t ($since .. $vupper - 1)
	{
		(my $want = $query) =~ s/\@T\@/$t/g;
		my $n = $node->safe_psql('postgres', qq{
			WITH got AS (SELECT r::text AS r FROM peek.persist_peek(NULL::$view, '$view', as_of => $t) r),
			     want AS (SELECT q::text AS r FROM ($want) q)
			SELECT count(*) FROM ((SELECT r FROM got EXCEPT ALL SELECT r FROM want)
			                      UNION ALL (SELECT r FROM want EXCEPT ALL SELECT r FROM got)) d});
		$mismatches .= "$t " if $n ne '0';
	}
	is($mismatches, '', "$view equals its query at every time from $since to " . ($vupper - 1));
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM peek.views WHERE failure IS NOT NULL'),
	'0', 'no view failed');

done_testing();
