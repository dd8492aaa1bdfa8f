# A source whose slot is gone when the runtimes start (a cluster restored
# without its slots; here dropped while pg_peek was not loaded, and the
# table changed meanwhile) is loaded again at a new slot's start, and its
# since passes the uppers of the views over it: they hydrate again
# (dataflow/round.c, lost_history), a view over such a view too, instead
# of failing.  After that each view equals its query over its input at its
# since and at its latest time, so do the indexes on the views, peeks
# below the new since fail with 72000 (never old rows), and the views go on
# with the source's next changes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('reload_rehydrate');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE t (k int PRIMARY KEY, v text);
	INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 10) g;
	SELECT peek.create_source('s', 't');
});
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 's'"), 'the source is loaded');
sql(q{
	SELECT peek.create_view('sv', $$SELECT k, upper(v) AS u FROM peek.persist_peek(NULL::t, 's') WHERE k > 2$$);
	SELECT peek.create_view('sv2', $$SELECT length(u) AS l, count(*) AS n FROM peek.persist_peek(NULL::sv, 'sv') GROUP BY 1$$);
	SELECT peek.create_index('sv_k', 'sv', ARRAY['k']);
	SELECT peek.create_index('sv2_l', 'sv2', ARRAY['l']);
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.views UNION ALL SELECT state FROM peek.indexes) s"),
	'the views and their indexes are ready');
sql("INSERT INTO t VALUES (11, 'row 11')");
ok(poll_until($node, "SELECT count(*) = 9 FROM peek.index_peek(NULL::sv, 'sv_k', NULL)"), 'the index on sv follows');
my $old_upper = sql("SELECT upper FROM peek.views WHERE name = 'sv2'");
my $slot = sql('SELECT slot_name FROM pg_replication_slots');

# the slot goes while pg_peek is not loaded, and the table changes
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
sql("SELECT pg_drop_replication_slot('$slot')");
sql("UPDATE t SET v = 'changed ' || k WHERE k IN (4, 11); DELETE FROM t WHERE k = 5; INSERT INTO t VALUES (12, 'twelve')");
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_peek'");
$node->restart;

my $want_sv = '3:ROW 3,4:CHANGED 4,6:ROW 6,7:ROW 7,8:ROW 8,9:ROW 9,10:ROW 10,11:CHANGED 11,12:TWELVE';
ok(poll_until($node, "SELECT string_agg(k || ':' || u, ',' ORDER BY k) FROM sv", $want_sv),
	'sv hydrated again over the reloaded source');
ok(poll_until($node, "SELECT since > $old_upper FROM peek.views WHERE name = 'sv2'"),
	'sv2 hydrated again over sv (its since passed its old upper)');
is(sql("SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM peek.views"), 'sv:ready,sv2:ready',
	'neither view failed');
like(slurp_file($node->logfile), qr/view "sv2" hydrates again: its input "sv" is compacted/,
	'the log says sv2 hydrates again');

# each view, and each index on one, equals its query at its since and at
# its latest time; below the since a peek fails with 72000
sub mismatches
{
	my ($got, $want, $t) = @_;
	$got =~ s/\@T\@/$t/g;
	$want =~ s/\@T\@/$t/g;
	return sql("SELECT count(*) FROM ((($got) EXCEPT ALL ($want)) UNION ALL (($want) EXCEPT ALL ($got))) d");
}
my %oracle = (
	sv => [ q{SELECT * FROM peek.persist_peek(NULL::sv, 'sv', as_of => @T@)},
		q{SELECT k, upper(v) FROM peek.persist_peek(NULL::t, 's', as_of => @T@) WHERE k > 2} ],
	sv2 => [ q{SELECT * FROM peek.persist_peek(NULL::sv2, 'sv2', as_of => @T@)},
		q{SELECT length(u), count(*) FROM peek.persist_peek(NULL::sv, 'sv', as_of => @T@) GROUP BY 1} ],
	sv_k => [ q{SELECT * FROM peek.index_peek(NULL::sv, 'sv_k', NULL, as_of => @T@)},
		q{SELECT * FROM peek.persist_peek(NULL::sv, 'sv', as_of => @T@)} ],
	sv2_l => [ q{SELECT * FROM peek.index_peek(NULL::sv2, 'sv2_l', NULL, as_of => @T@)},
		q{SELECT * FROM peek.persist_peek(NULL::sv2, 'sv2', as_of => @T@)} ]);
ok(poll_until($node, "SELECT bool_and(upper > since) FROM peek.indexes"), 'the indexes caught up');
my ($since, $upper) = split /\|/, sql("SELECT max(since), min(upper) FROM peek.indexes");
foreach my $what (sort keys %oracle)
{
	foreach my $t ($since, $upper - 1)
	{
		is(mismatches(@{ $oracle{$what} }, $t), '0', "$what equals its query at $t");
	}
	(my $below = $oracle{$what}[0]) =~ s/\@T\@/$since - 1/;
	my ($st) = sql_error($node, $below);
	is($st, '72000', "$what below its since fails with 72000");
}

# the views go on with the source's changes
sql("UPDATE t SET v = 'later' WHERE k = 3");
ok(poll_until($node, "SELECT u FROM peek.index_peek(NULL::sv, 'sv_k', ROW(3))", 'LATER'),
	'the index on sv follows the next change');
ok(poll_until($node, "SELECT string_agg(l || ':' || n, ',' ORDER BY l) FROM peek.index_peek(NULL::sv2, 'sv2_l', NULL)",
		'5:5,6:2,9:1,10:1'),
	'so does the index on sv2');

$node->stop;
done_testing();
