# Maintained views under 50 clients at once (pgbench): writers of two
# captured tables and two collections, readers of the views (SELECT,
# index_peek, persist_peek as_of a recent time), views (with indexes)
# created and dropped all the while, one name created and dropped by many
# clients at once (42710 and 42704 only), an index of a view created and
# dropped likewise, and allow_compaction, set_retention and
# reset_retention on the views, their inputs and an index.  Then: no
# client aborted, no backend still busy, no runtime restarted, no ERROR or
# worse in the server log, and at sampled times from each view's (and its
# inputs') since to its upper, each view equals PostgreSQL's evaluation of
# its kept query over its inputs' persist peeks at that time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('vload', conf => [ 'max_connections = 80' ]);
$node->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE orders (id int PRIMARY KEY, cust int, amount numeric);
	CREATE TABLE cust (id int PRIMARY KEY, region text);
	INSERT INTO cust SELECT g, 'r' || (g % 7) FROM generate_series(1, 200) g;
	INSERT INTO orders SELECT g, g % 200 + 1, g % 97 FROM generate_series(1, 5000) g;
	SELECT peek.create_source('orders_src', 'orders');
	SELECT peek.create_source('cust_src', 'cust');
	CREATE TYPE kv AS (k int, v int);
	SELECT peek.create_collection('c1', 'kv');
	SELECT peek.create_collection('c2', 'kv');
	SELECT peek.write('c1', ARRAY(SELECT (g % 50, g)::kv FROM generate_series(1, 1000) g));
	SELECT peek.write('c2', ARRAY(SELECT (g, g * 10)::kv FROM generate_series(1, 50) g));
	SELECT peek.create_view('v_agg', $$SELECT cust, count(*) AS n, sum(amount) AS s, max(amount) AS mx FROM orders GROUP BY cust$$);
	SELECT peek.create_view('v_filter', $$SELECT id, amount * 2 AS a2 FROM orders WHERE amount > 50$$);
	SELECT peek.create_view('v_join', $$SELECT c.region, count(*) AS n, sum(o.amount) AS s FROM orders o JOIN cust c ON o.cust = c.id GROUP BY c.region$$);
	SELECT peek.create_view('v_left', $$SELECT c.id, c.region, o.id AS oid FROM cust c LEFT JOIN orders o ON o.cust = c.id WHERE c.id < 20$$);
	SELECT peek.create_view('v_union', $$SELECT id AS x FROM orders WHERE amount = 1 UNION ALL SELECT cust FROM orders WHERE amount = 2$$);
	SELECT peek.create_view('v_c', $$SELECT k, count(*) AS n, sum(v) AS s, min(v) AS mn FROM peek.persist_peek(NULL::kv, 'c1') GROUP BY k$$);
	SELECT peek.create_view('v_cj', $$SELECT a.k, a.v, b.v AS w FROM peek.persist_peek(NULL::kv, 'c1') a JOIN peek.persist_peek(NULL::kv, 'c2') b ON a.k = b.k$$);
	SELECT peek.create_view('v_vv', $$SELECT n, count(*) AS groups FROM peek.persist_peek(NULL::v_c, 'v_c') GROUP BY n$$);
	SELECT peek.create_index('v_agg_key', 'v_agg', ARRAY['cust']);
	SELECT peek.create_index('v_c_key', 'v_c', ARRAY['k']);
});
$node->safe_psql('postgres', q{
-- a view made, maybe indexed, read and dropped by one client; the
-- errors expected of many clients at once are caught, any other aborts
CREATE FUNCTION churn(cid int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	nm text := 'ch_' || cid;
BEGIN
	PERFORM peek.create_view(nm, (ARRAY[
		$q$SELECT cust, count(*) AS n FROM orders WHERE amount < 30 GROUP BY cust$q$,
		$q$SELECT o.id, c.region FROM orders o JOIN cust c ON o.cust = c.id WHERE o.amount > 90$q$,
		$q$SELECT k, max(v) AS m FROM peek.persist_peek(NULL::kv, 'c1') GROUP BY k$q$,
		$q$SELECT DISTINCT region FROM cust$q$,
		$q$SELECT a.k, count(*) AS n FROM peek.persist_peek(NULL::kv, 'c1') a LEFT JOIN peek.persist_peek(NULL::kv, 'c2') b ON a.k = b.k GROUP BY a.k$q$,
		$q$SELECT n, count(*) AS g FROM peek.persist_peek(NULL::v_agg, 'v_agg') GROUP BY n$q$])[1 + cid % 6]);
	IF random() < 0.5 THEN
		PERFORM peek.create_index(nm || '_i', nm, ARRAY[(SELECT attname FROM pg_attribute
			WHERE attrelid = nm::regclass AND attnum = 1)]);
	END IF;
END $f$;
CREATE FUNCTION churn_drop(cid int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE n bigint;
BEGIN
	IF random() < 0.3 THEN
		EXECUTE format('SELECT count(*) FROM %I', 'ch_' || cid) INTO n;
	END IF;
	PERFORM peek.drop_view('ch_' || cid);
END $f$;
CREATE FUNCTION shared_churn() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	BEGIN
		IF random() < 0.5 THEN
			PERFORM peek.create_view('shared_v', $q$SELECT cust, sum(amount) AS s FROM orders GROUP BY cust$q$);
		ELSE
			PERFORM peek.drop_view('shared_v');
		END IF;
	EXCEPTION WHEN duplicate_object OR undefined_object THEN NULL;
	END;
	BEGIN
		IF random() < 0.5 THEN
			PERFORM peek.create_index('v_filter_i', 'v_filter', ARRAY['id']);
		ELSE
			PERFORM peek.drop_index('v_filter_i');
		END IF;
	EXCEPTION WHEN duplicate_object OR undefined_object THEN NULL;
	END;
END $f$;
CREATE FUNCTION read_asof() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	v text := (ARRAY['v_agg', 'v_filter', 'v_join', 'v_left', 'v_c', 'v_cj', 'v_vv', 'v_union'])[1 + (random() * 7)::int];
	u bigint;
	s bigint;
	n bigint;
BEGIN
	SELECT upper, since INTO u, s FROM peek.views WHERE name = v;
	IF u > 0 THEN
		BEGIN
			EXECUTE format('SELECT count(*) FROM peek.persist_peek(NULL::%I, %L, as_of => %s)',
						   v, v, greatest(s, u - 1 - (random() * 3)::int)) INTO n;
		EXCEPTION WHEN SQLSTATE '72000' THEN NULL;   -- compacted meanwhile
		END;
	END IF;
END $f$;
CREATE FUNCTION compact() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	o text := (ARRAY['v_agg', 'v_filter', 'v_join', 'v_c', 'v_vv', 'c1', 'c2', 'orders_src', 'cust_src', 'v_agg_key'])[1 + (random() * 9)::int];
	u bigint;
BEGIN
	SELECT upper INTO u FROM peek.frontiers WHERE object = o;
	IF random() < 0.5 THEN
		PERFORM peek.allow_compaction(o, greatest(u - 20, 0));
	ELSIF random() < 0.5 THEN
		PERFORM peek.set_retention(o, (random() * 3)::int * interval '1 second');
	ELSE
		PERFORM peek.reset_retention(o);
	END IF;
END $f$;
});

my $dir = PostgreSQL::Test::Utils::tempdir();
my %scripts = (
	'orders.sql@30' => "\\set id random(1, 6000)\n\\set c random(1, 210)\n\\set a random(0, 100)\n"
	  . "INSERT INTO orders VALUES (:id, :c, :a) ON CONFLICT (id) DO UPDATE SET cust = excluded.cust, amount = excluded.amount;\n",
	'deletes.sql@10' => "\\set id random(1, 6000)\nBEGIN;\nDELETE FROM orders WHERE id = :id;\n"
	  . "UPDATE orders SET amount = amount + 1 WHERE id = :id + 1;\nCOMMIT;\n",
	'rollback.sql@3' => "\\set id random(1, 6000)\nBEGIN;\nDELETE FROM orders WHERE id = :id;\nROLLBACK;\n",
	'cust.sql@5' => "\\set c random(1, 200)\n\\set r random(0, 9)\nUPDATE cust SET region = 'r' || :r WHERE id = :c;\n",
	'collections.sql@10' => "\\set k random(0, 60)\n\\set v random(1, 1000)\n"
	  . "SELECT peek.write('c1', ARRAY[(:k, :v)::kv]);\n"
	  . "SELECT peek.write('c1', ARRAY[]::kv[], ARRAY[(:k, :v)::kv]);\n"
	  . "SELECT peek.write('c2', ARRAY[(:k, :v)::kv]);\n"
	  . "SELECT peek.write('c2', ARRAY[]::kv[], ARRAY[(:k, :v)::kv]);\n",
	'reads.sql@30' => "\\set c random(1, 210)\n\\set k random(0, 60)\n"
	  . "SELECT count(*) FROM v_agg;\n"
	  . "SELECT * FROM peek.index_peek(NULL::v_agg, 'v_agg_key', key => ROW(:c));\n"
	  . "SELECT * FROM peek.index_peek(NULL::v_c, 'v_c_key', key => ROW(:k));\n"
	  . "SELECT sum(n) FROM v_join;\nSELECT read_asof();\n",
	'churn.sql@3' => "SELECT churn(:client_id);\nSELECT churn_drop(:client_id);\n",
	'shared.sql@4' => "SELECT shared_churn();\n",
	'compact.sql@3' => "SELECT compact();\n",
);
my @files;
for my $f (sort keys %scripts)
{
	(my $file = $f) =~ s/@\d+$//;
	PostgreSQL::Test::Utils::append_to_file("$dir/$file", $scripts{$f});
	push @files, '-f', "$dir/$f";
}

my $log_start = -s $node->logfile;
my $secs = 40;
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[ 'pgbench', '-n', '-c', '50', '-j', '4', '-T', $secs, @files, $node->connstr('postgres') ],
	'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout($secs + 300));
my ($tx) = $out =~ /number of transactions actually processed: (\d+)/;
ok($ok && $err !~ /aborted/, 'pgbench: no client aborted') or diag($err);
cmp_ok($tx // 0, '>', 1000, 'pgbench: 50 clients ran ' . ($tx // 0) . ' transactions');
like($out, qr/number of failed transactions: 0 /, 'pgbench: no transaction failed');

ok(poll_until($node, q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()}, '0', 60),
	'no backend is left busy after the load');
is($node->safe_psql('postgres', 'SELECT sum(restarts) FROM peek.runtimes'), '0',
	'no runtime restarted');
is($node->safe_psql('postgres', q{SELECT string_agg(name || ': ' || failure, '; ') FROM peek.views WHERE failure IS NOT NULL}),
	'', 'no view failed');

# every view catches up with its inputs
$node->safe_psql('postgres', q{
	SELECT peek.reset_retention(o) FROM unnest(ARRAY['v_agg', 'v_filter', 'v_join', 'v_c', 'v_vv',
		'c1', 'c2', 'orders_src', 'cust_src', 'v_agg_key']) o;
	SELECT peek.drop_view(name) FROM peek.views WHERE name = 'shared_v';
});
ok(poll_until($node, q{SELECT bool_and(w.upper >= (SELECT min(f.upper) FROM unnest(w.inputs) i
	JOIN peek.frontiers f ON f.object = i)) FROM peek.views w}, 't', 120),
	'every view caught up with its inputs');
is($node->safe_psql('postgres', q{SELECT count(*) FROM peek.views WHERE name LIKE 'ch\_%'}), '0',
	'every churned view was dropped');

# the oracle: the kept query with each input read as of the time
$node->safe_psql('postgres', q{
CREATE FUNCTION oracle_of(v text) RETURNS text LANGUAGE sql AS $f$
	SELECT regexp_replace(query, '(peek\.persist_peek\(NULL::[^,]+, ''[^'']+''::text)\)',
						  '\1, as_of => @T@)', 'g')
	  FROM peek.views WHERE name = v $f$;
-- up to n times of each of the view's and its inputs' shards, at or after
-- every since and before the view's upper, with those ends
CREATE FUNCTION check_times(v text, n int) RETURNS bigint[] LANGUAGE plpgsql AS $f$
DECLARE
	lo bigint;
	hi bigint;
	o record;
	ts bigint[] := '{}';
	t bigint[];
BEGIN
	SELECT greatest(w.since, (SELECT max(f.since) FROM unnest(w.inputs) i JOIN peek.frontiers f ON f.object = i)),
		   w.upper INTO lo, hi FROM peek.views w WHERE w.name = v;
	FOR o IN SELECT ob.shard FROM peek.objects ob
			  WHERE ob.name = v OR ob.name IN (SELECT unnest(inputs) FROM peek.views WHERE name = v) LOOP
		EXECUTE format('SELECT array_agg(time) FROM (SELECT DISTINCT time FROM %s WHERE time >= $1 AND time < $2 ORDER BY 1 DESC LIMIT $3) s',
					   o.shard) INTO t USING lo, hi, n;
		ts := ts || coalesce(t, '{}');
	END LOOP;
	RETURN ARRAY(SELECT DISTINCT x FROM unnest(ts || ARRAY[lo, hi - 1]) x WHERE x >= lo AND x < hi ORDER BY 1);
END $f$;
});
for my $v (qw(v_agg v_filter v_join v_left v_union v_c v_cj v_vv))
{
	my $times = $node->safe_psql('postgres', "SELECT check_times('$v', 8)");
	my $n = () = $times =~ /\d+/g;
	cmp_ok($n, '>', 0, "$v: times to check: $times");
	is($node->safe_psql('postgres', qq{SELECT view_mismatches(
		\$g\$SELECT * FROM peek.persist_peek(NULL::$v, '$v', as_of => \@T\@)\$g\$, oracle_of('$v'), '$times')}),
		'', "$v by persist_peek equals its query at those times");
}
is($node->safe_psql('postgres', q{SELECT view_mismatches(
	$g$SELECT * FROM peek.index_peek(NULL::v_agg, 'v_agg_key', as_of => @T@)$g$,
	oracle_of('v_agg'), ARRAY(SELECT t FROM unnest(check_times('v_agg', 8)) t
		WHERE t >= (SELECT max(since) FROM peek.frontiers WHERE object = 'v_agg_key')))}),
	'', 'v_agg by index_peek equals its query at those times');

my $log = slurp_file($node->logfile, $log_start);
# (but PostgreSQL's own cancel of an autovacuum worker in a lock's way)
my @bad = grep { /\b(ERROR|FATAL|PANIC)\b|terminated by signal/ && !/ERROR:  canceling autovacuum task$/ }
  split /\n/, $log;
is(join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]), '', 'no ERROR, FATAL or PANIC in the server log during and after the load');

$node->stop;
done_testing();
