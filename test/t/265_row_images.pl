# Row images through hydration (row_from_shard takes a shard row as stored
# when it is already its canonical image): indexes hydrated before and after
# the writes against persist_peek and a plain SQL oracle at every time, across
# ALTER TYPE, toasted fields, NULLs, numeric scales, arrays, domains,
# collations, and rows stored with a table tuple's header (as 0.1 stored
# rows as they came; simulated by a superuser insert into the shard); again
# after a runtime restart and after compaction.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode = interactive_mode();
my $maint_role = $mode eq 'on' ? 'maintenance' : 'solo';
my $node = new_node('row_images');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sub q_or_err
{
	my ($q) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $q);
	return $rc == 0 ? $out : "ERROR: $err";
}

sql(q{
	CREATE EXTENSION pg_peek;
});

# oracle answer at time t: the rows' texts, each as many times as it counts
sub oracle
{
	my ($coll, $t) = @_;
	return sql(qq{
		SELECT coalesce(string_agg(r, ';' ORDER BY r), '') FROM (
		SELECT r FROM (SELECT r::text AS r, sum(d) AS c FROM log_$coll WHERE t <= $t GROUP BY r::text) s,
		       generate_series(1, greatest(c, 0)::int)) x});
}

sub peeked
{
	my ($type, $fn, $name, $t) = @_;
	return q_or_err(qq{
		SELECT coalesce(string_agg(zz_::text, ';' ORDER BY zz_::text), '') FROM peek.$fn(NULL::$type, '$name', as_of => $t) zz_});
}

# write and log: ins/del are SQL array expressions of $type
sub w
{
	my ($coll, $type, $ins, $del) = @_;
	my $t = sql("SELECT peek.write('$coll', ${ins}::${type}[], ${del}::${type}[])");
	sql(qq{CREATE TABLE IF NOT EXISTS log_$coll (t bigint, d bigint, r $type);
	       INSERT INTO log_$coll SELECT $t, 1, zz_ FROM unnest(${ins}::${type}[]) zz_;
	       INSERT INTO log_$coll SELECT $t, -1, zz_ FROM unnest(${del}::${type}[]) zz_});
	return $t;
}

sub wait_ready
{
	my ($coll) = @_;
	return poll_until($node, qq{SELECT bool_and(i.state = 'ready' AND i.upper = c.upper)
		FROM peek.indexes i JOIN peek.collections c ON c.name = i.collection WHERE c.name = '$coll'}, 't', 60);
}

sub compare_all
{
	my ($coll, $type, $label) = @_;
	ok(wait_ready($coll), "$label: indexes of $coll ready");
	my $upper = sql("SELECT upper FROM peek.collections WHERE name = '$coll'");
	my @idx = split /\n/, sql("SELECT name FROM peek.indexes WHERE collection = '$coll' ORDER BY name");
	for my $t (0 .. $upper - 1)
	{
		my $want = oracle($coll, $t);
		is(peeked($type, 'persist_peek', $coll, $t), $want, "$label: persist_peek $coll at $t");
		for my $i (@idx)
		{
			is(peeked($type, 'index_peek', $i, $t), $want, "$label: index_peek $i at $t");
		}
	}
}

sub restart_runtime
{
	my $pid = runtime_pid($node, $maint_role);
	kill 'TERM', $pid;
	poll_until($node, "SELECT count(*) = 1 FROM peek.runtimes WHERE role = '$maint_role' AND pid <> $pid", 't', 60);
}

# ---- S1: a stored row with a heap tuple's header (0.1 stored rows as they came)
sql(q{
	CREATE TYPE kv AS (k int, v text);
	CREATE TABLE src (k int, v text);
	INSERT INTO src VALUES (1, 'a'), (2, 'b');
	SELECT peek.create_collection('c1', 'kv');
	SELECT peek.create_index('c1_before', 'c1', '{k}');
});
my $shard1 = sql("SELECT shard::regclass FROM peek.objects WHERE name = 'c1'");
note "shard of c1: $shard1";
sql(qq{DO \$\$ DECLARE r kv; BEGIN
	FOR r IN SELECT * FROM src LOOP
		INSERT INTO $shard1 (time, diff, data) VALUES (0, 1, r);
	END LOOP; END \$\$;
	SELECT peek.advance('c1', 1);
	CREATE TABLE log_c1 (t bigint, d bigint, r kv);
	INSERT INTO log_c1 VALUES (0, 1, (1,'a')), (0, 1, (2,'b'));});
w('c1', 'kv', q{ARRAY[(3,'c')]}, q{ARRAY[(1,'a')]});
sql(q{SELECT peek.create_index('c1_after', 'c1', '{k}')});
compare_all('c1', 'kv', 'S1 header rows');
is(q_or_err("SELECT count(*) FROM peek.index_peek(NULL::kv, 'c1_after', ROW(1))"), '0',
	'S1: key 1 retracted in the hydrated index');

# ---- S2: ADD ATTRIBUTE between writes
sql(q{
	CREATE TYPE t2 AS (k int, v text);
	SELECT peek.create_collection('c2', 't2');
	SELECT peek.create_index('c2_before', 'c2', '{k}');
});
w('c2', 't2', q{ARRAY[(1,'a'),(2,'b'),(3,NULL),(4,repeat('L', 5000))]}, q{'{}'});
sql('ALTER TYPE t2 ADD ATTRIBUTE w int');
w('c2', 't2', q{ARRAY[(1,'a',5)]}, q{ARRAY[(1,'a',NULL)]});
sql('ALTER TYPE t2 ADD ATTRIBUTE z text');
w('c2', 't2', q{ARRAY[(5,'e',NULL,'zz')]}, q{ARRAY[(2,'b',NULL,NULL),(4,repeat('L', 5000),NULL,NULL)]});
sql(q{SELECT peek.create_index('c2_after', 'c2', '{k}')});
compare_all('c2', 't2', 'S2 add attribute');

# ---- S3: DROP ATTRIBUTE between writes
sql(q{
	CREATE TYPE t3 AS (k int, x text, v text);
	SELECT peek.create_collection('c3', 't3');
	SELECT peek.create_index('c3_before', 'c3', '{k}');
});
w('c3', 't3', q{ARRAY[(1,'x1','a'),(2,'x2','b'),(3,'x3',repeat('q', 4000))]}, q{'{}'});
sql('ALTER TYPE t3 DROP ATTRIBUTE x');
w('c3', 't3', q{ARRAY[(4,'d')]}, q{ARRAY[(1,'a'),(3,repeat('q', 4000))]});
sql(q{SELECT peek.create_index('c3_after', 'c3', '{k}')});
compare_all('c3', 't3', 'S3 drop attribute');

# ---- S4: toasted and compressed fields, wide rows
sql(q{
	CREATE TYPE t4 AS (k int, v text, b bytea);
	SELECT peek.create_collection('c4', 't4');
	SELECT peek.create_index('c4_before', 'c4', '{k}');
	CREATE TABLE rnd AS SELECT decode(string_agg(md5(i::text), ''), 'hex') AS b FROM generate_series(1, 400) i;
	CREATE TABLE toasty (k int, v text, b bytea);
	ALTER TABLE toasty ALTER v SET STORAGE MAIN;
	INSERT INTO toasty SELECT 7, repeat('abc', 3000), (SELECT b FROM rnd);
	INSERT INTO toasty SELECT 8, repeat('z', 100000), NULL;
});
w('c4', 't4', q{ARRAY[(1,repeat('x',10000),NULL),(2,'short',(SELECT b FROM rnd)),(3,repeat('m',1500),'\x00')]}, q{'{}'});
w('c4', 't4', q{(SELECT array_agg(ROW(t.k, t.v, t.b)::t4) FROM toasty t)}, q{ARRAY[(2,'short',(SELECT b FROM rnd))]});
w('c4', 't4', q{ARRAY[(2,'short',(SELECT b FROM rnd))]}, q{(SELECT array_agg(ROW(t.k, t.v, t.b)::t4) FROM toasty t WHERE k = 7)});
w('c4', 't4', q{'{}'}, q{ARRAY[(1,repeat('x',10000),NULL)]});
sql(q{SELECT peek.create_index('c4_after', 'c4', '{k}')});
compare_all('c4', 't4', 'S4 toast');

# ---- S5: NULLs, numeric scales, arrays, domains, collations
sql(q{
	CREATE DOMAIN pos AS int CHECK (VALUE > 0);
	CREATE TYPE t5 AS (k int, n numeric, a text[], d pos, c text COLLATE "C", f float8);
	SELECT peek.create_collection('c5', 't5');
	SELECT peek.create_index('c5_before', 'c5', '{k}');
	SELECT peek.create_index('c5_by_n', 'c5', '{n}');
});
w('c5', 't5', q{ARRAY[(1,1.0,'{a,b}',1,'x',0.0),(1,1.00,'{a,b}',1,'x',-0.0),(2,NULL,NULL,NULL,NULL,NULL),(3,2,'{}',3,'',1),(3,2,'{NULL}',3,'',1)]},
	q{'{}'});
w('c5', 't5', q{'{}'}, q{ARRAY[(1,1.00,'{a,b}',1,'x',-0.0),(2,NULL,NULL,NULL,NULL,NULL)]});
w('c5', 't5', q{ARRAY[(2,NULL,NULL,NULL,NULL,NULL)]}, q{ARRAY[(3,2,'{NULL}',3,'',1)]});
sql(q{SELECT peek.create_index('c5_after', 'c5', '{k}')});
compare_all('c5', 't5', 'S5 types');
is(q_or_err("SELECT string_agg(zz_::text, ';' ORDER BY zz_::text) FROM peek.index_peek(NULL::t5, 'c5_by_n', ROW(1), as_of => 0) zz_"),
	oracle_n1(), 'S5: key 1 by numeric finds both scales');

sub oracle_n1
{
	return sql(q{SELECT string_agg(r::text, ';' ORDER BY r::text) FROM log_c5 WHERE t = 0 AND d = 1 AND (r).k = 1});
}

# ---- re-hydration of everything after a runtime restart
restart_runtime();
for my $c ([ 'c1', 'kv' ], [ 'c2', 't2' ], [ 'c3', 't3' ], [ 'c4', 't4' ], [ 'c5', 't5' ])
{
	compare_all(@$c, 'after restart');
}

# ---- compaction, then persist_peek through the base and re-hydration
for my $c (qw(c1 c2 c3 c4 c5))
{
	my $u = sql("SELECT upper FROM peek.collections WHERE name = '$c'");
	sql("SELECT peek.allow_compaction(name, $u - 1) FROM peek.indexes WHERE collection = '$c'");
	sql("SELECT peek.allow_compaction('$c', $u - 1)");
}
ok(poll_until($node, "SELECT bool_and(since = upper - 1) FROM peek.collections", 't', 60), 'compacted');
for my $c ([ 'c1', 'kv' ], [ 'c2', 't2' ], [ 'c3', 't3' ], [ 'c4', 't4' ], [ 'c5', 't5' ])
{
	my ($coll, $type) = @$c;
	my $t = sql("SELECT upper - 1 FROM peek.collections WHERE name = '$coll'");
	my $want = oracle($coll, $t);
	is(peeked($type, 'persist_peek', $coll, $t), $want, "compacted persist_peek $coll");
	sql("SELECT peek.create_index('${coll}_late', '$coll', '{k}')");
	ok(wait_ready($coll), "late index on $coll ready");
	is(peeked($type, 'index_peek', "${coll}_late", $t), $want, "compacted hydration $coll");
}

done_testing();
