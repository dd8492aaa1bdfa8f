# A view hydrated at once writes its rows in the rows index's order (row
# hash, then image) and a first hydration's base straight through the
# writer's multi-insert (dataflow/hydrate.c, storage/shard_compact.c).
# Here the views' rows include distinct rows of colliding row hashes and
# equal rows counted into one base row, over a source (times are commit
# LSNs) and over collections, and the hydrations meet:
#  * the maintenance runtime killed while it hydrates a big view (the
#    base's multi-insert rolled back, the hydration run again);
#  * a server restart right after the hydrations, then updates of those
#    rows (the groups built again from the inputs must be what the
#    hydration wrote, or an update retracts rows the view lacks) and a
#    fold;
#  * pg_dump and pg_restore into another cluster, restarted: the views
#    answer the same at the same times, their bases found through their
#    rows indexes (amcheck: every heap row in the index), and go on.
# Every view at every time against its query; each base's rows distinct.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $old = new_node('hydrate_order', conf => ['autovacuum = off']);

sub sql { my ($node, $q) = @_; return $node->safe_psql('postgres', $q); }

my $maintenance_role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';

# pairs of distinct rows (1, 'c' || i) of equal row hashes, found, not hard-coded
sql($old, q{
	SET client_min_messages = warning;
	CREATE EXTENSION pg_peek;
	CREATE EXTENSION amcheck;
	CREATE TYPE hitem AS (g int, s text);
	CREATE TYPE hname AS (g int, label text);
	CREATE TABLE hcollide AS
	SELECT min(i) AS i1, max(i) AS i2 FROM (
	    SELECT i, peek.row_hash(ROW(1, 'c' || i)::hitem) AS h FROM generate_series(1, 300000) i) x
	 GROUP BY h HAVING count(*) = 2;
	CREATE FUNCTION hlong(seed int) RETURNS text LANGUAGE sql IMMUTABLE
	RETURN (SELECT string_agg(md5(seed::text || ':' || k), '') FROM generate_series(1, 400) k);
	-- the table a source captures: the colliding rows (3 and 2 copies), NULLs, long rows
	CREATE TABLE items (g int, s text);
	INSERT INTO items SELECT 1, 'c' || i1 FROM hcollide, generate_series(1, 3);
	INSERT INTO items SELECT 1, 'c' || i2 FROM hcollide, generate_series(1, 2);
	INSERT INTO items VALUES (NULL, 'nullg'), (NULL, 'nullg'), (1, NULL), (2, hlong(1)), (2, hlong(1));
	INSERT INTO items SELECT i % 5, 'p' || i FROM generate_series(1, 150000) i;
	CREATE TABLE names (g int, label text);
	INSERT INTO names VALUES (1, 'one'), (1, 'uno'), (2, 'two'), (3, 'three'), (4, 'four'), (0, 'zero');
	SELECT peek.create_source('items_src', 'items');
	SELECT peek.create_source('names_src', 'names');
	-- collections of the same rows
	SELECT peek.create_collection('citems', 'hitem');
	SELECT peek.create_collection('cnames', 'hname');
	SELECT peek.write('citems', ARRAY(SELECT ROW(g, s)::hitem FROM items));
	SELECT peek.write('cnames', ARRAY(SELECT ROW(g, label)::hname FROM names));
	SELECT peek.write('cnames', ARRAY[(-1, 'none')]::hname[]);
	SELECT peek.write('citems', ARRAY(SELECT ROW(i % 5, 'q' || i)::hitem FROM generate_series(1, 50) i));
});
ok(poll_until($old, "SELECT count(*) FROM peek.collections WHERE state = 'ready' AND upper > 1", '4', 120),
	'the sources are loaded, the collections written');
ok(poll_until($old, "SELECT bool_and(base_time = 1) FROM peek.objects WHERE name IN ('citems', 'cnames')",
		't', 60),
	'the collections folded to time 1');

my %queries = (
	v_src => q{SELECT i.g, i.s FROM peek.persist_peek(NULL::items, 'items_src') i
	  JOIN peek.persist_peek(NULL::names, 'names_src') n ON i.g = n.g},
	v_col => q{SELECT i.g, i.s FROM peek.persist_peek(NULL::hitem, 'citems') i
	  JOIN peek.persist_peek(NULL::hname, 'cnames') n ON coalesce(i.g, -1) = n.g},
	v_cnt => q{SELECT i.g, i.s, count(*) AS n FROM peek.persist_peek(NULL::hitem, 'citems') i
	  GROUP BY i.g, i.s});

# the big view's hydration stopped in the middle: the runtime is terminated as
# soon as it has begun (the base written and folded in one transaction, all or none)
sql($old, "SELECT peek.create_view('v_src', \$\$$queries{v_src}\$\$)");
my $pid = runtime_pid($old, $maintenance_role);
ok(poll_until($old, "SELECT state <> 'ready' FROM peek.views WHERE name = 'v_src'", 't', 30),
	'v_src is hydrating');
kill 'TERM', $pid;
ok(poll_until($old, "SELECT count(*) FROM peek.runtimes WHERE role = '$maintenance_role' AND pid <> $pid",
		'1', 60),
	'the maintenance runtime is back');
sql($old, "SELECT peek.create_view('$_', \$\$$queries{$_}\$\$)") for qw(v_col v_cnt);
ok(poll_until($old, "SELECT count(*) FROM peek.views WHERE state = 'ready'", '3', 180),
	'the views are ready');

# each view's base: each distinct row once; every heap row in the rows index;
# the view at every time from its since against its query
sub bases_ok
{
	my ($node, $what) = @_;
	for my $v (sort keys %queries)
	{
		my $shard = sql($node, "SELECT shard FROM peek.views WHERE name = '$v'");
		is(sql($node, "SELECT count(*) = count(DISTINCT data::text) FROM $shard WHERE time < 0"),
			't', "$v: each base row distinct, $what");
		my $indexes = sql($node, qq{SELECT string_agg(indexrelid::regclass::text, ' ')
			FROM pg_index WHERE indrelid = '$shard'::regclass});
		for my $index (split / /, $indexes)
		{
			is(sql($node, "SELECT bt_index_check('$index', true)"), '',
				"$v: $index has every row, $what");
		}
	}
}

sub views_at_every_time
{
	my ($node, $what) = @_;
	for my $v (sort keys %queries)
	{
		my $query = $queries{$v};
		$query =~ s/'(items_src|names_src|citems|cnames)'\)/'$1', as_of => \@T\@)/g;
		is(sql($node, qq{SELECT view_mismatches(
			\$g\$SELECT v::text FROM peek.persist_peek(NULL::$v, '$v', as_of => \@T\@) v\$g\$,
			\$w\$SELECT v::text FROM ($query) v\$w\$,
			ARRAY(SELECT t FROM (SELECT since AS t FROM peek.views WHERE name = '$v'
			                     UNION SELECT upper - 1 FROM peek.views WHERE name = '$v'
			                     UNION SELECT t FROM times) x
			       WHERE t >= (SELECT since FROM peek.views WHERE name = '$v')
			         AND t < (SELECT upper FROM peek.views WHERE name = '$v')))}),
			'', "$v equals its query at every time, $what");
	}
}

sql($old, q{
	CREATE TABLE times (t bigint);
	CREATE FUNCTION view_mismatches(got text, want text, times bigint[])
	RETURNS text LANGUAGE plpgsql AS $$
	DECLARE
	    bad text := '';
	    n bigint;
	    t bigint;
	BEGIN
	    FOREACH t IN ARRAY times LOOP
	        EXECUTE format('SELECT count(*) FROM (((%s) EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL (%s))) d',
	                       replace(got, '@T@', t::text), replace(want, '@T@', t::text),
	                       replace(want, '@T@', t::text), replace(got, '@T@', t::text)) INTO n;
	        IF n > 0 THEN
	            bad := bad || t || ' ';
	        END IF;
	    END LOOP;
	    RETURN bad;
	END $$;
});
bases_ok($old, 'after the hydrations');
views_at_every_time($old, 'after the hydrations');

# restarted right after: then each colliding row's copies changed, the rows
# the learn of the groups built again must retract
$old->restart;
sub updates
{
	my ($node, $round) = @_;
	sql($node, qq{
		DELETE FROM items WHERE ctid IN (SELECT min(ctid) FROM items WHERE s IN (SELECT 'c' || i1 FROM hcollide) GROUP BY s);
		DELETE FROM items WHERE s IN (SELECT 'c' || i2 FROM hcollide);
		INSERT INTO items VALUES (1, hlong(10 + $round)), (NULL, 'nullg');
		DELETE FROM names WHERE label = 'uno';
		INSERT INTO names VALUES (1, 'uno $round');
		SELECT peek.write('citems', ARRAY[(1, hlong(10 + $round)), (NULL, 'nullg')]::hitem[],
		                  ARRAY(SELECT ROW(1, 'c' || i1)::hitem FROM hcollide)
		                  || ARRAY(SELECT ROW(1, 'c' || i2)::hitem FROM hcollide));
		INSERT INTO times SELECT upper FROM peek.collections WHERE name = 'citems';
		INSERT INTO times VALUES ((pg_current_wal_insert_lsn() - '0/0')::bigint);
		SELECT peek.write('citems', ARRAY(SELECT ROW(1, 'c' || i2)::hitem FROM hcollide), '{}');
		INSERT INTO times SELECT upper FROM peek.collections WHERE name = 'citems';
	});
}
updates($old, 1);
ok(poll_until($old, caught_up_sql(), 't', 180), 'the views caught up after the restart');
bases_ok($old, 'after the restart and the updates');
views_at_every_time($old, 'after the restart and the updates');

# folded to the newest time
sql($old, q{CREATE TABLE folds AS SELECT name, upper - 1 AS t FROM peek.views;
	SELECT peek.allow_compaction(name, t) FROM folds});
ok(poll_until($old, q{SELECT bool_and(o.base_time >= f.t) FROM peek.objects o
	JOIN folds f USING (name)}, 't', 60),
	'the views folded');
bases_ok($old, 'after the fold');
views_at_every_time($old, 'after the fold');

# dumped and restored into another cluster, restarted
my @peeks = map { "SELECT v::text FROM peek.persist_peek(NULL::$_, '$_') v ORDER BY 1" }
  sort keys %queries;
my %before = map { $_ => sql($old, $_) } @peeks;
my $dump = PostgreSQL::Test::Utils::tempdir() . '/peek.dump';
$old->command_ok([ 'pg_dump', '-Fc', '-d', $old->connstr('postgres'), '-f', $dump ], 'pg_dump -Fc');
my $new = new_node('hydrate_order_restored', conf => ['autovacuum = off']);
sql($new, 'CREATE TABLE shift_oids (a int); DROP TABLE shift_oids');
$new->command_ok([ 'pg_restore', '--exit-on-error', '-d', $new->connstr('postgres'), $dump ],
	'pg_restore');
$new->restart;
ok(poll_until($new, "SELECT count(*) FROM peek.views WHERE name IN ('v_col', 'v_cnt') AND state = 'ready'",
		'2', 60),
	'the views over collections are ready after the restore');
for my $q (@peeks)
{
	next if $q =~ /v_src/;    # fails with its restored source
	is(sql($new, $q), $before{$q}, "the same answer after the restore: $q");
}
delete $queries{v_src};
bases_ok($new, 'after the restore');
updates($new, 2);
ok(poll_until($new, "SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE name <> 'v_src' AND (state <> 'ready' OR lag > 0))",
		't', 120),
	'the restored views caught up');
views_at_every_time($new, 'after the restore and more updates');
bases_ok($new, 'after the restore and more updates');

done_testing();
