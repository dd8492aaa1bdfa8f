# An index whose compaction a view holds back (the view reads the index's
# spine at its last round's start, below the since allowed): the since is
# published at once and the spine takes it once the view lets it
# (spine_compact retries).  The catalog's since, which a server restart
# starts from, must be the published one meanwhile: it stayed behind, and
# a restart published the index at the lower since until its first
# compaction, answering times it had refused with 72000.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('since_held');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE TYPE gv AS (g int, v int);
SELECT peek.create_collection('c', 'gv');
SELECT peek.create_index('c_g', 'c', ARRAY['g']);
SELECT peek.write('c', array_agg((i % 10, i)::gv)) FROM generate_series(1, 100) i;
SELECT peek.create_view('sums', 'SELECT g, sum(v) AS s FROM peek.persist_peek(NULL::gv, ''c'') GROUP BY g');
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.views WHERE name = 'sums'"), 'the view is ready');
# five writes committed together: the view's next round takes them at once,
# and reads the index's spine from its start (1)
$node->safe_psql('postgres',
	"SELECT peek.write('c', ARRAY[(i, i)]::gv[]) FROM generate_series(1, 5) i");
ok(poll_until($node, "SELECT upper FROM peek.views WHERE name = 'sums'", '6'),
	'the view has the five writes');
is($node->safe_psql('postgres',
		"SELECT string_agg(op, ',' ORDER BY operator) FROM (SELECT operator, kind AS op FROM peek.dataflow_operators WHERE view = 'sums') o"),
	'input,reduce, shared arrangement', 'the view reads the index\'s spine');

$node->safe_psql('postgres', "SELECT peek.allow_compaction('c_g', 1000)");
ok(poll_until($node, "SELECT since FROM peek.indexes WHERE name = 'c_g'", '5'),
	'the index shows since 5');
is((sql_error($node, "SELECT count(*) FROM peek.index_peek(NULL::gv, 'c_g', ROW(3), as_of => 3)"))[0],
	'72000', 'the index refuses time 3 with 72000');
ok(poll_until($node, "SELECT since FROM peek.objects WHERE name = 'c_g'", '5'),
	'the catalog keeps since 5, while the view holds the spine below it');

# a server restart starts from the catalog's since: the index answers at 5
# as the collection, and refuses 3
$node->restart;
ok(poll_until($node,
		"SELECT count(*) FROM peek.index_peek(NULL::gv, 'c_g', ROW(3), as_of => 5)",
		$node->safe_psql('postgres',
			"SELECT count(*) FROM peek.persist_peek(NULL::gv, 'c', as_of => 5) WHERE g = 3")),
	'the index at 5 after the restart');
is((sql_error($node, "SELECT count(*) FROM peek.index_peek(NULL::gv, 'c_g', ROW(3), as_of => 3)"))[0],
	'72000', 'the index still refuses time 3 after the restart');
is($node->safe_psql('postgres', "SELECT since FROM peek.indexes WHERE name = 'c_g'"),
	'5', 'the index shows since 5 after the restart');
# the next write moves the view on, and the since with it
$node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(3, 3)]::gv[])");
ok(poll_until($node,
		"SELECT i.since = 6 AND o.since = 6 FROM peek.indexes i JOIN peek.objects o USING (name) WHERE name = 'c_g'"),
	'the index and the catalog at since 6 after the next write');

$node->stop;
done_testing();
