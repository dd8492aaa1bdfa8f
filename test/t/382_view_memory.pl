# The arrangements the maintenance runtime keeps for its views count
# against pg_peek.max_memory like indexes, but they are a cache the views
# can do without: one that does not fit is let go of (its views keep their
# rows themselves, and no round builds it again), and those that fit give
# way to a user's index that would not fit beside them.  Neither the view
# nor the index fails for them.  Seen in a full bench run: a 10M-row
# input's arrangement did not fit beside the other indexes, the view's
# round that built its rows again ran past pg_peek.view_round_timeout under
# load, and that failed the view for good.  Here small: 1 MB of memory and
# rounds limited to 50 ms, which a rebuild may pass (it is then retried
# with a longer limit, never failed).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('view_memory',
	conf => [ "pg_peek.max_memory = '1MB'", "pg_peek.view_round_timeout = '50ms'" ]);

# a view's rows against its query over its input at the latest time
sub view_off
{
	my ($view, $coll) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
		  (SELECT * FROM peek.persist_peek(NULL::$view, '$view')
		   EXCEPT ALL
		   SELECT grp, count(*), sum(id) FROM peek.persist_peek(NULL::item, '$coll') GROUP BY grp)
		  UNION ALL
		  (SELECT grp, count(*), sum(id) FROM peek.persist_peek(NULL::item, '$coll') GROUP BY grp
		   EXCEPT ALL
		   SELECT * FROM peek.persist_peek(NULL::$view, '$view'))) d});
}

sub own_arrangements
{
	return $node->safe_psql('postgres',
		'SELECT count(*) FROM peek.registry_status() WHERE id < 0 AND NOT dropped');
}

# (a write of n rows of about 200 bytes: 2500 take over half of 1 MB
# arranged, 6000 more than all of it)
sub write_rows
{
	my ($coll, $from, $to) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT peek.write('$coll', array_agg(ROW(i, i % 10, repeat('x', 200))::item))
		  FROM generate_series($from, $to) i});
}

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, grp int, pad text);
SELECT peek.create_collection('fits', 'item');
SELECT peek.create_collection('other', 'item');
SELECT peek.create_collection('huge', 'item');
});
write_rows('fits', 1, 2500);

# a grouped view whose input's arrangement by its key fits: kept for it
$node->safe_psql('postgres', q{
SELECT peek.create_view('fits_v', $$SELECT grp, count(*) AS n, sum(id) AS s
    FROM peek.persist_peek(NULL::item, 'fits') GROUP BY grp$$);
});
my $t = write_rows('fits', 2501, 2510);
ok(poll_until($node, "SELECT state = 'ready' AND upper > $t FROM peek.views WHERE name = 'fits_v'"),
	'fits_v is ready');
ok(poll_until($node, 'SELECT count(*) FROM peek.registry_status() WHERE id < 0 AND NOT dropped', '1'),
	'the runtime keeps an arrangement of fits for it');
is(view_off('fits_v', 'fits'), '0', 'fits_v is its query');

# an index on another collection that does not fit beside it: the
# runtime's arrangement gives way, the index is ready
write_rows('other', 1, 2500);
$node->safe_psql('postgres', "SELECT peek.create_index('other_by_id', 'other', '{id}')");
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'other_by_id'", 'ready'),
	'other_by_id is ready');
is($node->safe_psql('postgres', "SELECT count(*) FROM peek.index_peek(NULL::item, 'other_by_id')"),
	'2500', 'other_by_id answers');
is(own_arrangements(), '0', 'the runtime\'s arrangement for fits_v gave way');

# the view goes on with its rows kept itself
$t = write_rows('fits', 2511, 2600);
ok(poll_until($node, "SELECT state = 'ready' AND upper > $t FROM peek.views WHERE name = 'fits_v'"),
	'fits_v takes the next write');
is(view_off('fits_v', 'fits'), '0', 'fits_v is still its query');
is(own_arrangements(), '0', 'and no round built the arrangement again');

# a view whose input's arrangement cannot fit at all
write_rows('huge', 1, 6000);
$node->safe_psql('postgres', q{
SELECT peek.create_view('huge_v', $$SELECT grp, count(*) AS n, sum(id) AS s
    FROM peek.persist_peek(NULL::item, 'huge') GROUP BY grp$$);
});
for my $round (1 .. 3)
{
	$t = write_rows('huge', 6000 + $round * 10, 6000 + $round * 10 + 5);
	ok(poll_until($node,
			"SELECT state = 'ready' AND upper > $t FROM peek.views WHERE name = 'huge_v'", 't', 60),
		"huge_v takes write $round");
}
is($node->safe_psql('postgres', "SELECT state, failure IS NULL FROM peek.views WHERE name = 'huge_v'"),
	'ready|t', 'huge_v is not failed');
is(view_off('huge_v', 'huge'), '0', 'huge_v is its query');
is(own_arrangements(), '0', 'the runtime keeps no arrangement that does not fit');
# a round's copy of its input's updates is bounded by maintenance_work_mem:
# a write bigger than that at one time is read from the shard instead
$node->safe_psql('postgres', q{
ALTER SYSTEM SET maintenance_work_mem = '1MB';
SELECT pg_reload_conf();
});
$t = write_rows('fits', 10001, 16000);
ok(poll_until($node, "SELECT state = 'ready' AND upper > $t FROM peek.views WHERE name = 'fits_v'", 't', 60),
	'fits_v takes a write bigger than maintenance_work_mem');
is(view_off('fits_v', 'fits'), '0', 'fits_v is its query after it');

is($node->safe_psql('postgres', "SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM peek.indexes"),
	'other_by_id:ready', 'the index is still ready');
is($node->safe_psql('postgres', "SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM peek.views"),
	'fits_v:ready,huge_v:ready', 'no view failed');

$node->stop;
done_testing();
