# Upgrade: CREATE EXTENSION pg_peek VERSION '0.1' (the shipped
# 0.1 script), collections, indexes and a source with data and peeks, then
# ALTER EXTENSION pg_peek UPDATE:
#  * extversion is 0.3 (through 0.2); every peek taken before answers the
#    same at the same time; writes, new collections and indexes and the
#    source's capture go on;
#  * the extension's objects (views with their options and definitions,
#    functions, ACLs, columns, the catalog's trigger and what pg_dump keeps)
#    are exactly those of a fresh 0.3 install in another database;
#  * shards and source row types made under 0.1 have the privileges of ones
#    made under 0.2.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('upgrade');

sub sql { return $node->safe_psql($_[1] // 'postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek VERSION '0.1';
	CREATE TYPE kv AS (k int, v text);
	SELECT peek.create_collection('c', 'kv');
	SELECT peek.create_index('c_by_k', 'c', '{k}');
	SELECT peek.append('c', ARRAY[(1, 'a'), (2, 'b'), (3, 'c')]::kv[], 1);
	SELECT peek.append('c', ARRAY[(2, 'b')]::kv[], 2, -1);
	SELECT peek.append('c', ARRAY[(2, 'B'), (4, 'd')]::kv[], 3);
	SELECT peek.advance('c', 4);
	SELECT peek.create_collection('w', 'kv');
	SELECT peek.write('w', ARRAY[(10, 'x'), (11, 'y')]::kv[]);
	SELECT peek.write('w', ARRAY[(12, 'z')]::kv[], ARRAY[(10, 'x')]::kv[]);
	CREATE TABLE src (id int PRIMARY KEY, x text);
	ALTER TABLE src REPLICA IDENTITY FULL;
	INSERT INTO src VALUES (1, 'one'), (2, 'two');
	SELECT peek.create_source('s', 'src');
	SELECT peek.create_index('s_by_id', 's', '{id}');
});
is(sql("SELECT extversion FROM pg_extension WHERE extname = 'pg_peek'"),
	'0.1', 'installed at 0.1');
ok( poll_until(
		$node,
		"SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections "
		  . "UNION ALL SELECT state FROM peek.indexes) s"),
	'0.1: collections, indexes and the source are ready');
sql("INSERT INTO src VALUES (3, 'three'); UPDATE src SET x = 'TWO' WHERE id = 2");
ok( poll_until(
		$node,
		"SELECT count(*) = 3 FROM peek.persist_peek(NULL::src, 's') WHERE x <> 'two'"),
	'0.1: the source captured the change');
my $s_upper = sql("SELECT upper - 1 FROM peek.collections WHERE name = 's'");

# Every peek, at fixed times (the source's at a time it had reached).
my @peeks = (
	(map { "SELECT * FROM peek.persist_peek(NULL::kv, 'c', as_of => $_)" } 1 .. 3),
	(map { "SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', as_of => $_)" } 1 .. 3),
	"SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', ROW(2), as_of => 3)",
	"SELECT * FROM peek.persist_peek(NULL::kv, 'w', as_of => 1)",
	"SELECT * FROM peek.persist_peek(NULL::src, 's', as_of => $s_upper)",
	"SELECT * FROM peek.index_peek(NULL::src, 's_by_id', ROW(2), as_of => $s_upper)");
my %before = map { $_ => sql("$_ ORDER BY 1, 2") } @peeks;
is($before{ $peeks[2] }, "1|a\n2|B\n3|c\n4|d", 'a peek under 0.1 answers');

sql('ALTER EXTENSION pg_peek UPDATE');
is(sql("SELECT extversion FROM pg_extension WHERE extname = 'pg_peek'"),
	'0.3', 'updated to 0.3');

for my $q (@peeks)
{
	is(sql("$q ORDER BY 1, 2"), $before{$q}, "same answer after the update: $q");
}
is(sql("SELECT count(*) FROM peek.collections WHERE state <> 'ready'"),
	'0', 'the collections and the source are still ready');

# Writes and new objects after the update.
sql(q{
	SELECT peek.append('c', ARRAY[(5, 'e')]::kv[], 4);
	SELECT peek.advance('c', 5);
	SELECT peek.write('w', ARRAY[(13, 'u')]::kv[]);
	SELECT peek.create_collection('n', 'kv');
	SELECT peek.create_index('n_by_k', 'n', '{k}');
	SELECT peek.write('n', ARRAY[(7, 'n')]::kv[]);
	INSERT INTO src VALUES (4, 'four');
});
is(sql("SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', ROW(5), as_of => 4)"),
	'5|e', 'an append after the update is peekable');
is(sql("SELECT count(*) FROM peek.persist_peek(NULL::kv, 'w')"),
	'3', 'a write after the update is peekable');
ok(poll_until($node, "SELECT count(*) = 1 FROM peek.index_peek(NULL::kv, 'n_by_k', ROW(7))"),
	'a collection and index made after the update serve peeks');
ok( poll_until(
		$node, "SELECT count(*) = 1 FROM peek.index_peek(NULL::src, 's_by_id', ROW(4))"),
	'the source captures after the update');

# The same objects as a fresh 0.3 install.
my $describe = q{
	WITH ext AS (SELECT oid, extconfig FROM pg_extension WHERE extname = 'pg_peek'),
	members AS (
		SELECT d.classid, d.objid FROM pg_depend d, ext
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
		   AND d.deptype = 'e')
	SELECT string_agg(line, E'\n' ORDER BY line) FROM (
		SELECT pg_describe_object(m.classid, m.objid, 0) || ' | ' || coalesce(CASE
			WHEN m.classid = 'pg_class'::regclass THEN (
				SELECT format('%s %s %s %s [%s]', c.relkind, c.reloptions, c.relacl,
							  CASE c.relkind WHEN 'v' THEN pg_get_viewdef(c.oid) END,
							  (SELECT string_agg(format('%s %s %s', a.attname,
													   format_type(a.atttypid, a.atttypmod),
													   a.attnotnull), ', ' ORDER BY a.attnum)
								 FROM pg_attribute a
								WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped))
				  FROM pg_class c WHERE c.oid = m.objid)
			WHEN m.classid = 'pg_proc'::regclass THEN (
				SELECT format('%s -> %s %s %s %s %s %s', pg_get_function_arguments(p.oid),
							  pg_get_function_result(p.oid), p.provolatile, p.prosecdef,
							  p.proacl, p.proconfig, md5(p.prosrc))
				  FROM pg_proc p WHERE p.oid = m.objid)
			WHEN m.classid = 'pg_type'::regclass THEN (
				SELECT format('%s', t.typacl) FROM pg_type t WHERE t.oid = m.objid)
			WHEN m.classid = 'pg_namespace'::regclass THEN (
				SELECT format('%s', n.nspacl) FROM pg_namespace n WHERE n.oid = m.objid)
			END, '') AS line
		  FROM members m
		UNION ALL
		SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger
		 WHERE tgrelid = 'peek.objects'::regclass AND NOT tgisinternal
		UNION ALL
		SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		 WHERE conrelid = 'peek.objects'::regclass
		UNION ALL
		SELECT 'dumped ' || x::regclass::text FROM ext, unnest(ext.extconfig) x
	) s
};
sql('CREATE DATABASE fresh');
sql('CREATE EXTENSION pg_peek', 'fresh');
is(sql("SELECT extversion FROM pg_extension WHERE extname = 'pg_peek'", 'fresh'),
	'0.3', 'a fresh install is 0.3');
my $upgraded = sql($describe);
my $fresh    = sql($describe, 'fresh');
like($upgraded, qr/view peek\.collections \| v \{security_barrier=true\}/,
	'the description covers the views and their options');
like($upgraded, qr/trigger CREATE TRIGGER objects_restored/,
	'the description covers the catalog trigger');
is($upgraded, $fresh, 'the updated extension has exactly the objects of a fresh 0.3 install');

# Shards and source row types made under 0.1 are as ones made under 0.2.
my $type_acls = q{
	SELECT string_agg(DISTINCT coalesce(t.typacl::text, 'default'), ' ')
	  FROM peek.objects o JOIN pg_class c ON c.oid = o.shard
	  JOIN pg_type t ON t.oid IN (c.reltype, o.row_type)
	 WHERE t.typname ~ '^(shard|source)_' AND o.name = ANY (string_to_array($1, ','))
};
(my $acl_old = $type_acls) =~ s/\$1/'c,w,s'/;
(my $acl_new = $type_acls) =~ s/\$1/'n'/;
is(sql($acl_old), sql($acl_new), 'row types of 0.1 shards and sources have 0.2 privileges');
is(sql($acl_new), '{' . sql('SELECT current_user') . '=U/' . sql('SELECT current_user') . '}',
	'(no USAGE for PUBLIC)');
is(sql(q{SELECT count(*) FROM peek.objects o JOIN pg_depend d
		  ON d.classid = 'pg_class'::regclass AND d.objid = o.shard AND d.objsubid = 0
		 AND d.refclassid = 'pg_type'::regclass AND d.refobjid = o.row_type
		 WHERE o.kind = 'c'}),
	'4', 'every shard depends on its row type');

done_testing();
