# Issue 22 (hardening): pg_upgrade between two clusters of this PostgreSQL.
# pg_upgrade copies peek.objects' files but creates the extension anew,
# with a new OID, while an object's id carries the extension's OID (its
# drop notices, its slot's name and DROP EXTENSION checks go by it).  The
# maintenance runtime gives the objects the new OID when it first finds the
# extension; pg_upgrade's own servers run no runtime.  After the upgrade:
# every object answers as before, a waiting peek is answered by the next
# write (not "extension pg_peek is being dropped"), the source (whose slot
# pg_upgrade did not carry over) is loaded again and captures, drops
# remove the shards, DROP EXTENSION leaves nothing.
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
});
ok(poll_until($old, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections UNION ALL SELECT state FROM peek.indexes UNION ALL SELECT state FROM peek.views) s"),
	'before: every object is ready');
my $ext_old = $old->safe_psql('postgres', "SELECT oid FROM pg_extension WHERE extname = 'pg_peek'");
my $before = $old->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM peek.persist_peek(NULL::item, 'c')) || '/' ||
	       (SELECT count(*) FROM peek.index_peek(NULL::item, 'c_id', NULL)) || '/' ||
	       (SELECT count(*) FROM peek.persist_peek(NULL::t, 's'))});
is($before, '101/101/10', 'before: 101 rows in the collection and its index, 10 in the source');
is($old->safe_psql('postgres', 'SELECT count(*) || \'/\' || sum(t) FROM cv'), '101/51510', 'before: the view');
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
ok(poll_until($new, "SELECT bool_and(state = 'ready') FROM (SELECT state FROM peek.collections UNION ALL SELECT state FROM peek.indexes UNION ALL SELECT state FROM peek.views) s"),
	'after: every object is ready');
is($new->safe_psql('postgres', 'SELECT count(*) || \'/\' || sum(t) FROM cv'), '101/51510', 'after: the view');

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
$new->safe_psql('postgres', "SELECT peek.drop_view('cv'); SELECT peek.drop_index('c_id'); SELECT peek.drop_collection('c'); SELECT peek.drop_source('s');");
is($new->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'peek'::regnamespace AND relname LIKE 'shard_%' AND relkind = 'r'"),
	'0', "the drops removed the shards ($shards)");
ok(poll_until($new, "SELECT count(*) = 0 FROM pg_replication_slots"), 'no slot is left');
$new->safe_psql('postgres', 'DROP EXTENSION pg_peek');
is($new->safe_psql('postgres', "SELECT count(*) FROM pg_namespace WHERE nspname = 'peek'"), '0',
	'DROP EXTENSION leaves nothing');
$new->stop;
done_testing();
