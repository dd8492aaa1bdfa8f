# Issue 22 (hardening): pg_upgrade between two clusters of this PostgreSQL.
# pg_upgrade copies peek.objects' files but creates the extension anew,
# with a new OID, while an object's id carries the extension's OID (its
# drop notices, its slot's name and DROP EXTENSION checks go by it).  The
# maintenance runtime gives the objects the new OID when it first finds the
# extension; pg_upgrade's own servers run no runtime.  After the upgrade:
# every object answers as before, a waiting peek is answered by the next
# write (not "extension pg_peek is being dropped"), the source (whose slot
# pg_upgrade did not carry over) is loaded again and captures, drops
# remove the shards, DROP EXTENSION leaves nothing.  Views over a view,
# over a source, a role's view calling its function (in its own schema,
# with a search_path) and a view failed before come back as they were, and
# what they use is guarded again.
use strict;
use warnings;

use Cwd;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $old = new_node('upgrade_old');
$old->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, v text);
	SELECT peek.create_collection('c', 'item');
	SELECT peek.write('c', array_agg((g, 'v' || g)::item)) FROM generate_series(1, 100) g;
	SELECT peek.write('c', ARRAY[(101, 'v101')]::item[]);
	SELECT peek.create_index('c_id', 'c', ARRAY['id']);
	CREATE FUNCTION tenfold(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 * 10';
	SELECT peek.create_view('cv', $$SELECT id, tenfold(id) AS t FROM peek.persist_peek(NULL::item, 'c')$$);
	CREATE TABLE t (k int, v text);
	INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 10) g;
	SELECT peek.create_source('s', 't');
	-- a view over a view, a view over a source, a view failed before the
	-- upgrade, and a role's view calling its function, in its own schema
	-- with a search_path
	SELECT peek.create_view('cv2', $$SELECT t % 7 AS m, count(*) AS n FROM peek.persist_peek(NULL::cv, 'cv') GROUP BY 1$$);
	SELECT peek.create_view('fv', $$SELECT id, 100 / (id - 50) AS q FROM peek.persist_peek(NULL::item, 'c')$$);
	CREATE ROLE alice LOGIN;
	CREATE SCHEMA alice AUTHORIZATION alice;
	GRANT USAGE ON SCHEMA peek TO alice;
	SET ROLE alice;
	CREATE TYPE alice.arow AS (k int, v int);
	SELECT peek.create_collection('ac', 'alice.arow');
	SELECT peek.write('ac', ARRAY[(1, 1), (2, 2)]::alice.arow[]);
	CREATE FUNCTION alice.helper(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 + 1';
	CREATE FUNCTION alice.bump(int) RETURNS int IMMUTABLE LANGUAGE sql SET search_path = alice AS 'SELECT helper($1)';
	SELECT peek.create_view('av', $$SELECT k, alice.bump(v) AS b FROM peek.persist_peek(NULL::alice.arow, 'ac')$$);
	RESET ROLE;
});
ok(poll_until($old, "SELECT state = 'ready' FROM peek.collections WHERE name = 's'"), 'before: the source is ready');
$old->safe_psql('postgres', q{
	SELECT peek.create_view('sv', $$SELECT k, upper(v) AS u FROM peek.persist_peek(NULL::t, 's') WHERE k > 2$$);
});
ok(poll_until($old, "SELECT state = 'failed' FROM peek.views WHERE name = 'fv'"), 'before: the view fv failed');
ok(poll_until($old, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections UNION ALL SELECT state FROM peek.indexes UNION ALL SELECT state FROM peek.views WHERE name <> 'fv') s"),
	'before: every other object is ready');
my $ext_old = $old->safe_psql('postgres', "SELECT oid FROM pg_extension WHERE extname = 'pg_peek'");
my $before = $old->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')) || '/' ||
	       (SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL)) || '/' ||
	       (SELECT count(*) FROM peek.persist_peek(NULL::t, 's'))});
is($before, '101/101/10', 'before: 101 rows in the collection and its index, 10 in the source');
is($old->safe_psql('postgres', 'SELECT count(*) || \'/\' || sum(t) FROM cv'), '101/51510', 'before: the view');
my $views_query = q{SELECT (SELECT string_agg(m || ':' || n, ',' ORDER BY m) FROM cv2) || ' ' ||
	(SELECT string_agg(k || ':' || b, ',' ORDER BY k) FROM alice.av)};
my $views_before = $old->safe_psql('postgres', $views_query);
is($views_before, '0:14,1:14,2:15,3:15,4:14,5:14,6:15 1:2,2:3', 'before: the view over a view and the role\'s view');
is($old->safe_psql('postgres', "SELECT string_agg(k || u, ',' ORDER BY k) FROM sv"),
	'3ROW 3,4ROW 4,5ROW 5,6ROW 6,7ROW 7,8ROW 8,9ROW 9,10ROW 10', 'before: the view over the source');
$old->safe_psql('postgres', "SELECT peek.create_index('sv_k', 'sv', ARRAY['k'])");
ok(poll_until($old, "SELECT state = 'ready' FROM peek.indexes WHERE name = 'sv_k'"), 'before: the view\'s index is ready');
my $sv_upper_old = $old->safe_psql('postgres', "SELECT upper FROM peek.views WHERE name = 'sv'");
$old->stop;

my $new = new_node('upgrade_new', no_start => 1);
my $bindir = $old->config_data('--bindir');
my $cwd = getcwd();
chdir $new->basedir;
command_ok(
	[
		"$bindir/pg_upgrade", '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $bindir, '-B', $bindir,
		'-p', $old->port, '-P', $new->port
	],
	'pg_upgrade runs');
chdir $cwd;
$new->start;
ok(poll_until($new, "SELECT count(*) >= 1 AND bool_and(state = 'running') FROM peek.runtimes"), 'after: the runtimes run');
my $ext_new = $new->safe_psql('postgres', "SELECT oid FROM pg_extension WHERE extname = 'pg_peek'");
isnt($ext_new, $ext_old, "the extension has a new OID ($ext_old -> $ext_new)");
ok(poll_until($new, "SELECT bool_and(id >> 32 = $ext_new AND (collection IS NULL OR collection >> 32 = $ext_new)) FROM peek.objects"),
	'every object id carries the new OID');
ok(poll_until($new, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections UNION ALL SELECT state FROM peek.indexes UNION ALL SELECT state FROM peek.views WHERE name NOT IN ('fv', 'sv')) s"),
	'after: every other object is ready');
is($new->safe_psql('postgres', 'SELECT count(*) || \'/\' || sum(t) FROM cv'), '101/51510', 'after: the view');
ok(poll_until($new, "SELECT ($views_query) = '$views_before'"), 'after: the view over a view and the role\'s view');
is($new->safe_psql('postgres', "SELECT state || ': ' || failure FROM peek.views WHERE name = 'fv'"), 'failed: division by zero',
	'after: the failed view stays failed, with its reason');

# what the other views use is guarded too: the view a view reads, the
# role's function and schema (refused to the role), a column of the
# captured table the view over the source reads
my %refused = (
	"SELECT peek.drop_view('cv')" => qr/cannot drop view "cv" because view "cv2" reads it/,
	'SET ROLE alice; CREATE OR REPLACE FUNCTION alice.bump(int) RETURNS int IMMUTABLE LANGUAGE sql SET search_path = alice AS \'SELECT helper($1) * 2\'' =>
		qr/cannot change function (alice\.)?bump\(integer\) because maintained view "av" uses it/,
	'SET ROLE alice; DROP FUNCTION alice.bump(int)' => qr/cannot drop function (alice\.)?bump\(integer\) because other objects depend on it/,
	'SET ROLE alice; ALTER SCHEMA alice RENAME TO alice2' => qr/because maintained view "av" uses it/,
	'ALTER TABLE t ALTER COLUMN v TYPE varchar' => qr/cannot alter type of a column used by a view or rule/);
foreach my $statement (sort keys %refused)
{
	my ($rc_refused, $out_refused, $err_refused) = $new->psql('postgres', $statement);
	like($err_refused, $refused{$statement}, "after: refused: $statement");
}

# what the view's query uses is still guarded (pg_upgrade restores its
# PostgreSQL view's body, not the dependencies create_view recorded)
my ($rc_guard, $out_guard, $err_guard) = $new->psql('postgres',
	"CREATE OR REPLACE FUNCTION tenfold(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT \$1 * 100'");
like($err_guard, qr/cannot change function tenfold\(integer\) because maintained view "cv" uses it/,
	'after: a new body of a function the view calls is refused');
($rc_guard, $out_guard, $err_guard) = $new->psql('postgres', 'DROP FUNCTION tenfold(int)');
like($err_guard, qr/cannot drop function tenfold\(integer\) because other objects depend on it/,
	'after: so is dropping it');
is($new->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')) || '/' ||
	       (SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL)) || '/' ||
	       (SELECT count(*) FROM peek.persist_peek(NULL::t, 's'))}),
	'101/101/10', 'after: the same contents');
is($new->safe_psql('postgres', "SELECT v FROM peek.index_peek(NULL::item, 'c_id', ROW(7))"), 'v7',
	'after: a key lookup');

# a peek waiting for a time not sealed yet is answered by the next write
my $upper = $new->safe_psql('postgres', "SELECT upper FROM peek.collections WHERE name = 'c'");
my $bg = start_bg($new,
	"SET statement_timeout = '60s'; SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL, as_of => $upper)",
	verbose => 1);
ok(bg_backend_pid($new, $bg), 'a peek at the next time waits');
$new->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(102, 'v102')]::item[])");
my ($rc, $out, $err) = finish_bg($bg);
is("$rc:" . (split /\n/, $out)[-1], '0:102', "the waiting peek is answered by the write ($err)");

# the source is loaded again (its slot did not survive) and captures
$new->safe_psql('postgres', "INSERT INTO t VALUES (11, 'row 11')");
is($new->safe_psql('postgres',
		"SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '60s'; SELECT count(*) FROM peek.persist_peek(NULL::t, 's')"),
	'11', 'the source captures after the upgrade');

# drops find their shards by the new ids
my $shards = $new->safe_psql('postgres', "SELECT string_agg(shard::text, ',') FROM peek.collections");
$new->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(103, 'v103')]::item[])");
ok(poll_until($new, "SELECT count(*) || '/' || sum(t) = '103/53560' FROM cv"), 'after: the view follows writes');
ok(poll_until($new, "SELECT string_agg(m || ':' || n, ',' ORDER BY m) = '0:14,1:15,2:15,3:15,4:14,5:15,6:15' FROM cv2"),
	'after: so does the view over it');
# the source was loaded again at the new cluster's LSN, its since past the
# view's upper: the view hydrates again there, and follows the source
ok(poll_until($new, "SELECT string_agg(k || u, ',' ORDER BY k) LIKE '%,10ROW 10,11ROW 11' FROM sv"),
	'after: and the view over the source');
is($new->safe_psql('postgres', "SELECT state || ' ' || (since >= $sv_upper_old) FROM peek.views WHERE name = 'sv'"),
	'ready true', 'after: the view over the source is ready, hydrated again past its old upper');
my $sv_at = $new->safe_psql('postgres', "SELECT upper - 1 FROM peek.views WHERE name = 'sv'");
is($new->safe_psql('postgres', qq{
	SELECT count(*) FROM (
		(SELECT * FROM peek.persist_peek(NULL::sv, 'sv', as_of => $sv_at)
		 EXCEPT ALL SELECT k, upper(v) FROM peek.persist_peek(NULL::t, 's', as_of => $sv_at) WHERE k > 2)
		UNION ALL
		(SELECT k, upper(v) FROM peek.persist_peek(NULL::t, 's', as_of => $sv_at) WHERE k > 2
		 EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::sv, 'sv', as_of => $sv_at))) d}),
	'0', "after: the view over the source equals its query over the source at $sv_at");
ok(poll_until($new, "SELECT count(*) = 9 FROM peek.index_peek(NULL::sv, 'sv_k', NULL)"),
	'after: its index hydrated again too');
$new->safe_psql('postgres', "DELETE FROM t WHERE k = 5; UPDATE t SET v = 'moved' WHERE k = 6");
ok(poll_until($new, "SELECT string_agg(k || u, ',' ORDER BY k) = '3ROW 3,4ROW 4,6MOVED,7ROW 7,8ROW 8,9ROW 9,10ROW 10,11ROW 11' FROM sv"),
	'after: the view over the source follows a delete and an update');
$new->safe_psql('postgres', "SELECT peek.drop_index('sv_k'); SELECT peek.drop_view(name) FROM peek.views WHERE name NOT IN ('cv', 'av') ORDER BY name; SELECT peek.drop_view('cv'); SELECT peek.drop_index('c_id'); SELECT peek.drop_collection('c'); SELECT peek.drop_source('s');");
$new->safe_psql('postgres', "SET ROLE alice; SELECT peek.drop_view('av'); SELECT peek.drop_collection('ac');");
is($new->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'peek'::regnamespace AND relname LIKE 'shard_%' AND relkind = 'r'"),
	'0', "the drops removed the shards ($shards)");
ok(poll_until($new, "SELECT count(*) = 0 FROM pg_replication_slots"), 'no slot is left');
$new->safe_psql('postgres', 'DROP EXTENSION pg_peek');
is($new->safe_psql('postgres', "SELECT count(*) FROM pg_namespace WHERE nspname = 'peek'"), '0',
	'DROP EXTENSION leaves nothing');
$new->stop;
done_testing();
