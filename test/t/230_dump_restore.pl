# pg_dump / pg_restore: a database with collections (one
# compacted), indexes and a source is dumped (pg_dump -Fc) and restored into the
# database the runtimes serve on a second node, which is then restarted
# (README, Dump and restore):
#  * every collection and index answers the same peeks at the same times;
#  * the restored rows belong to the new extension (their ids carry its OID,
#    which differs from the old one's); a source names its table;
#    shards depend on their row types and keep their row types private, as
#    made by create_collection;
#  * writes and new objects go on, with fresh ids;
#  * the source, restored without its replication slot, is failed with a
#    reason that names the remedy, and peeks on it and its index fail with
#    55000; dropping and creating it again captures the table;
#  * maintained views (one over a collection; one over a captured table,
#    made by a role that is no superuser in its own schema; one reads a
#    subquery, the other a WITH query, pulled up: flatten.c) come back with
#    their owners, rows and queries as written, and what their queries use cannot be dropped or
#    changed after the restore as before it: DROP FUNCTION, DROP TABLE,
#    DROP COLUMN and ALTER COLUMN TYPE fail with the same errors;
#  * restored without a function its query calls (pg_restore -L), a view
#    gets a WARNING, the restore goes on, and the view serves its rows
#    until its next round (its input moves on) fails it, naming what is
#    missing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $old = new_node('dumped');

sub sql { my ($node, $q) = @_; return $node->safe_psql('postgres', $q); }

sql($old, q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	SELECT peek.create_collection('c', 'kv');
	SELECT peek.create_index('c_by_k', 'c', '{k}');
	SELECT peek.create_index('c_by_v', 'c', '{v}');
	SELECT peek.append('c', ARRAY[(1, 'a'), (2, 'b'), (3, 'c')]::kv[], 1);
	SELECT peek.append('c', ARRAY[(2, 'b')]::kv[], 2, -1);
	SELECT peek.append('c', ARRAY[(2, 'B'), (4, 'd'), (4, 'd')]::kv[], 3);
	SELECT peek.append('c', ARRAY[(1, 'a')]::kv[], 5, -1);
	SELECT peek.advance('c', 6);
	SELECT peek.create_collection('w', 'kv');
	SELECT peek.create_index('w_by_k', 'w', '{k}');
	SELECT peek.write('w', ARRAY[(10, 'x'), (11, 'y')]::kv[]);
	SELECT peek.write('w', ARRAY[(12, 'z')]::kv[], ARRAY[(10, 'x')]::kv[]);
	SELECT peek.allow_compaction('w', 1);
	CREATE TABLE src (id int PRIMARY KEY, x text);
	ALTER TABLE src REPLICA IDENTITY FULL;
	INSERT INTO src VALUES (1, 'one'), (2, 'two');
	SELECT peek.create_source('s', 'src');
	SELECT peek.create_index('s_by_id', 's', '{id}');
	CREATE ROLE vowner;
	GRANT USAGE ON SCHEMA peek TO vowner;
	CREATE SCHEMA vowner AUTHORIZATION vowner;
	CREATE TABLE vsrc (id int PRIMARY KEY, gone int, cust int, amount int);
	ALTER TABLE vsrc DROP COLUMN gone;
	ALTER TABLE vsrc REPLICA IDENTITY FULL;
	INSERT INTO vsrc SELECT g, g % 3, g FROM generate_series(1, 9) g;
	SELECT peek.create_source('vs', 'vsrc');
	GRANT SELECT ON vsrc TO vowner;
	CREATE TABLE vcust (id int, active boolean);
	ALTER TABLE vcust REPLICA IDENTITY FULL;
	INSERT INTO vcust VALUES (0, true), (1, false), (1, true), (2, false);
	SELECT peek.create_source('vcs', 'vcust');
	GRANT SELECT ON vcust TO vowner;
	CREATE FUNCTION vdouble(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 2';
	CREATE FUNCTION vlabel(text) RETURNS text IMMUTABLE LANGUAGE sql AS 'SELECT upper($1)';
	SELECT peek.create_view('vc', 'SELECT k, label FROM (SELECT k, public.vlabel(v) AS label FROM peek.persist_peek(NULL::kv, ''c'')) s');
});
my $all_ready =
    "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections "
  . "UNION ALL SELECT state FROM peek.indexes) s";
ok(poll_until($old, $all_ready), 'collections, indexes and the source are ready');
ok(poll_until($old, "SELECT since = 1 FROM peek.collections WHERE name = 'w'"),
	'w is compacted to 1');
sql($old, q{
	SET ROLE vowner;
	SET search_path = vowner;
	SELECT peek.create_view('vt', 'WITH o AS (SELECT cust, amount FROM public.vsrc) SELECT cust, sum(public.vdouble(amount)) AS total FROM o GROUP BY cust');
	SELECT peek.create_view('vx', 'SELECT id, amount FROM public.vsrc o WHERE EXISTS (SELECT FROM public.vcust c WHERE c.id = o.cust AND c.active)');
});
ok(poll_until($old, "SELECT bool_and(state = 'ready') FROM peek.views"), 'the views are ready');

# What the views' queries use, dropped or changed: each error, before the
# dump and after the restore.
my @ddl = (
	'DROP FUNCTION vdouble(int)',
	'DROP FUNCTION vlabel(text)',
	'DROP TABLE vsrc',
	'ALTER TABLE vsrc DROP COLUMN amount',
	'ALTER TABLE vsrc DROP COLUMN cust',
	'ALTER TABLE vsrc ALTER COLUMN amount TYPE bigint',
	q{CREATE OR REPLACE FUNCTION vlabel(text) RETURNS text IMMUTABLE LANGUAGE sql AS 'SELECT lower($1)'},
	'ALTER FUNCTION vlabel(text) RENAME TO vlabel_old',
	'DROP TABLE vcust',
	'ALTER TABLE vcust DROP COLUMN active');
sub ddl_error
{
	my ($node, $stmt) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "BEGIN; $stmt; ROLLBACK;");
	return $err;
}
my %ddl_before = map { $_ => ddl_error($old, $_) } @ddl;
like($ddl_before{ $ddl[0] }, qr/view vowner\.vt depends on function vdouble/,
	'before the dump, a function the view over the table calls cannot be dropped');
like($ddl_before{ $ddl[2] }, qr/view vowner\.vt depends on (table|column \w+ of table) vsrc/,
	'... nor the table it reads');
like($ddl_before{ $ddl[8] }, qr/view vowner\.vx depends on (table|column \w+ of table) vcust/,
	'... nor a table only an EXISTS subquery reads');
like($ddl_before{ $ddl[9] }, qr/view vowner\.vx depends on column active of table vcust/,
	'... nor its column');
my $views_sql = "SELECT string_agg(format('%s %s %s', o.name, o.owner, c.relowner::regrole), ', ' ORDER BY o.name) "
  . "FROM peek.objects o JOIN pg_class c ON c.reltype = o.row_type WHERE o.kind = 'v'";
my $views_before = sql($old, $views_sql);
is($views_before, 'vc postgres postgres, vt vowner vowner, vx vowner vowner',
	'the views and their owners');
is(sql($old, 'SELECT count(*) FROM vowner.vx'), sql($old, 'SELECT count(*) FROM vsrc o WHERE EXISTS (SELECT FROM vcust c WHERE c.id = o.cust AND c.active)'),
	'the view with EXISTS has its query\'s rows');
my $vc_before = sql($old, 'SELECT * FROM vc ORDER BY k, label');
my $queries_sql = "SELECT string_agg(query, ' / ' ORDER BY name) FROM peek.views";
my $queries_before = sql($old, $queries_sql);
like($queries_before, qr/FROM \( SELECT .*WITH o AS.*WHERE \(EXISTS \( SELECT/s, 'the kept queries are as written');

my @peeks = (
	(map { "SELECT * FROM peek.persist_peek(NULL::kv, 'c', as_of => $_)" } 1 .. 5),
	(map { "SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', as_of => $_)" } 1 .. 5),
	"SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', ROW(4), as_of => 3)",
	"SELECT * FROM peek.index_peek(NULL::kv, 'c_by_v', ROW('B'), as_of => 4)",
	"SELECT * FROM peek.persist_peek(NULL::kv, 'w', as_of => 1)",
	"SELECT * FROM peek.index_peek(NULL::kv, 'w_by_k', as_of => 1)",
	"SELECT * FROM peek.index_peek(NULL::kv, 'w_by_k', ROW(12))");
my %before = map { $_ => sql($old, "$_ ORDER BY 1, 2") } @peeks;
is($before{ $peeks[2] }, "1|a\n2|B\n3|c\n4|d\n4|d", 'a peek answers before the dump');
my $frontiers_sql =
  "SELECT string_agg(format('%s %s %s %s', name, since, upper, allowed_since), ', ' ORDER BY name) "
  . "FROM peek.collections WHERE source IS NULL";
my $frontiers = sql($old, $frontiers_sql);

my $dump = PostgreSQL::Test::Utils::tempdir() . '/peek.dump';
$old->command_ok([ 'pg_dump', '-Fc', '-d', $old->connstr('postgres'), '-f', $dump ],
	'pg_dump -Fc');

my $new = new_node('restored');
# (a fresh cluster would give the new extension the OID of the old one; the
# roles come first, as from pg_dumpall --globals-only)
sql($new, 'CREATE TABLE shift_oids (a int); DROP TABLE shift_oids; CREATE ROLE vowner');
$new->command_ok([ 'pg_restore', '--exit-on-error', '-d', $new->connstr('postgres'), $dump ],
	'pg_restore into the database the runtimes serve');
$new->restart;
ok(poll_until($new, "SELECT count(*) = 3 FROM peek.indexes WHERE state = 'ready'"),
	'the restored indexes of collections are ready');

for my $q (@peeks)
{
	is(sql($new, "$q ORDER BY 1, 2"), $before{$q}, "same answer after the restore: $q");
}
is(sql($new, $frontiers_sql), $frontiers, 'the same since, upper and allowed_since');

# The views: their owners, rows and dependencies.  The view over the
# source's table fails with its source.
is(sql($new, $views_sql), $views_before, 'the views keep their owners');
ok(poll_until($new, "SELECT state FROM peek.views WHERE name = 'vc'", 'ready'),
	'the view over a collection is ready');
is(sql($new, 'SELECT * FROM vc ORDER BY k, label'), $vc_before, '... with the same rows');
is(sql($new, $queries_sql), $queries_before, 'the views keep their queries as written');
ok(poll_until($new, "SELECT state || ': ' || failure FROM peek.views WHERE name = 'vt'",
		'failed: its input collection "vs" is failed: restored from a dump without its replication slot: drop the source and create it again'),
	'the view over the restored source fails with it');
for my $stmt (@ddl)
{
	is(ddl_error($new, $stmt), $ddl_before{$stmt}, "the same error after the restore: $stmt");
}
is((sql_error($new, "BEGIN; $ddl[0]; ROLLBACK"))[0], '2BP01', 'DROP FUNCTION: 2BP01');
is((sql_error($new, "BEGIN; $ddl[2]; ROLLBACK"))[0], '2BP01', 'DROP TABLE: 2BP01');
is((sql_error($new, "BEGIN; $ddl[3]; ROLLBACK"))[0], '2BP01', 'DROP COLUMN: 2BP01');
is((sql_error($new, "BEGIN; $ddl[5]; ROLLBACK"))[0], '0A000', 'ALTER COLUMN TYPE: 0A000');
is((sql_error($new, "BEGIN; $ddl[6]; ROLLBACK"))[0], '2BP01', 'CREATE OR REPLACE FUNCTION: 2BP01');
is((sql_error($new, "BEGIN; $ddl[7]; ROLLBACK"))[0], '2BP01', 'ALTER FUNCTION RENAME: 2BP01');
is((sql_error($new, "BEGIN; $ddl[8]; ROLLBACK"))[0], '2BP01', 'DROP TABLE read in EXISTS: 2BP01');

my $ext_oid = "SELECT oid FROM pg_extension WHERE extname = 'pg_peek'";
isnt(sql($new, $ext_oid), sql($old, $ext_oid), 'the new extension has another OID');
is( sql(
		$new,
		"SELECT count(*) FROM peek.objects WHERE (id >> 32) & 4294967295 <> "
		  . "(SELECT oid FROM pg_extension WHERE extname = 'pg_peek')"),
	'0',
	'the restored ids carry the new extension OID');
is( sql(
		$new, q{SELECT count(*) FROM peek.objects o JOIN pg_depend d
		  ON d.classid = 'pg_class'::regclass AND d.objid = o.shard AND d.objsubid = 0
		 AND d.refclassid = 'pg_type'::regclass AND d.refobjid = o.row_type
		 WHERE o.kind = 'c'}),
	'5',
	'every restored shard depends on its row type');
my $type_acls = q{SELECT string_agg(format('%s %s', t.typname, t.typacl), ', ' ORDER BY t.typname)
	  FROM pg_type t WHERE t.typnamespace = 'peek'::regnamespace AND t.typname ~ '^(shard|source)_'};
is(sql($new, $type_acls), sql($old, $type_acls), 'shard and source row types keep their privileges');
my ($rc, $out, $err) = $new->psql('postgres', 'DROP TYPE kv');
like($err, qr/cannot drop type kv because other objects depend on it/,
	'DROP TYPE of a restored collection\'s row type is refused');

# Writes and new objects.
sql($new, q{
	SELECT peek.append('c', ARRAY[(5, 'e')]::kv[], 6);
	SELECT peek.advance('c', 7);
	SELECT peek.write('w', ARRAY[(13, 'u')]::kv[]);
	SELECT peek.create_collection('n', 'kv');
	SELECT peek.create_index('n_by_k', 'n', '{k}');
	SELECT peek.write('n', ARRAY[(7, 'n')]::kv[]);
});
is(sql($new, "SELECT * FROM peek.index_peek(NULL::kv, 'c_by_k', ROW(5), as_of => 6)"),
	'5|e', 'an append after the restore is peekable through a restored index');
ok(poll_until($new, "SELECT count(*) = 3 FROM peek.index_peek(NULL::kv, 'w_by_k')"),
	'a write after the restore is peekable');
ok(poll_until($new, "SELECT count(*) = 1 FROM peek.index_peek(NULL::kv, 'n_by_k', ROW(7))"),
	'a new collection and index serve peeks');
is(sql($new, "SELECT count(DISTINCT id) FROM peek.objects"), '14', 'new objects get fresh ids');

# The source: failed, with the remedy.
my $reason = 'restored from a dump without its replication slot: drop the source and create it again';
is(sql($new, "SELECT state || ': ' || failure FROM peek.collections WHERE name = 's'"),
	"failed: $reason", 'the restored source is failed, with the reason');
is(sql($new, "SELECT source FROM peek.collections WHERE name = 's'"),
	'src', 'it names its table');
is(sql($new, "SELECT state FROM peek.indexes WHERE name = 's_by_id'"),
	'failed', 'and so is its index');
my ($state, $msg) = sql_error($new, "SELECT * FROM peek.index_peek(NULL::src, 's_by_id')");
is($state, '55000', 'a peek on its index fails with 55000');
like($msg, qr/\Q$reason\E/, '... and the reason');
is(sql($new, "SELECT count(*) FROM pg_replication_slots"), '0', 'no slot was made for it');
sql($new, q{
	INSERT INTO src VALUES (3, 'three');
	SELECT peek.drop_source('s');
	SELECT peek.create_source('s', 'src');
	SELECT peek.create_index('s_by_id', 's', '{id}');
});
ok(poll_until($new, "SELECT count(*) = 3 FROM peek.index_peek(NULL::src, 's_by_id')"),
	'created again, the source captures the table');
sql($new, "INSERT INTO src VALUES (4, 'four')");
ok(poll_until($new, "SELECT count(*) = 1 FROM peek.index_peek(NULL::src, 's_by_id', ROW(4))"),
	'... and its changes');

# Restored without a function a view's query calls: a WARNING, the restore
# goes on, and the view fails at its next round, naming the function.
my $partial = new_node('partial');
sql($partial, 'CREATE ROLE vowner');
my ($list) = run_command([ 'pg_restore', '-l', $dump ]);
my $list_file = PostgreSQL::Test::Utils::tempdir() . '/partial.list';
open(my $fh, '>', $list_file) or die "could not write $list_file: $!";
print $fh join("\n", grep { !/ FUNCTION public vlabel\(/ } split /\n/, $list), "\n";
close($fh);
my ($restore_out, $restore_err) =
  run_command([ 'pg_restore', '--verbose', '-L', $list_file, '-d', $partial->connstr('postgres'), $dump ]);
like($restore_err, qr/WARNING:  the query of maintained view "vc" no longer plans: function public\.vlabel\(text\) does not exist/,
	'a view whose function was not restored: a WARNING');
is(sql($partial, "SELECT count(*) FROM peek.views"), '3', 'the restore went on');
$partial->restart;
ok(poll_until($partial, "SELECT state FROM peek.views WHERE name = 'vc'", 'ready'),
	'until its input moves on, the view serves its restored rows');
is(sql($partial, 'SELECT * FROM vc ORDER BY k, label'), $vc_before, '... as they were');
sql($partial, q{
	SELECT peek.append('c', ARRAY[(9, 'z')]::kv[], 6);
	SELECT peek.advance('c', 7);
});
ok(poll_until($partial,
		"SELECT state = 'failed' AND failure ~ 'function public\\.vlabel\\(text\\) does not exist' FROM peek.views WHERE name = 'vc'"),
	'then its next round fails it, naming the function');
is((sql_error($partial, 'BEGIN; DROP FUNCTION vdouble(int); ROLLBACK'))[0], '2BP01',
	'the other view keeps its dependencies');

done_testing();
