# Sources that cannot go on, and what may not be done with them:
#
#  * wal_level = replica (or no replication slots): create_source fails with
#    55000 naming the setting, and leaves nothing behind;
#  * a source stays 'loading' while a transaction older than its slot runs,
#    and then loads that transaction's rows;
#  * ALTER TABLE dropping a captured column is refused (2BP01, naming the
#    source; with CASCADE, with a column added in the same statement, from
#    a parent whose child a source captures, not with ONLY) and leaves the
#    source whole;
#  * ALTER TABLE retyping a captured column (with a column
#    added in the same statement), REPLICA IDENTITY
#    DEFAULT and DROP TABLE each fail the source: peek.collections and
#    peek.indexes say 'failed' with a reason naming the table, peeks of the
#    source and its index fail with 55000 and that reason, its slot is
#    dropped, and no runtime restarts; another source goes on capturing;
#  * a renamed column or table, a VACUUM FULL, a column dropped before
#    create_source and columns added after it (one by a rewrite with a
#    volatile default, one of them dropped again) do not fail a source: it
#    captures the columns the table had, and a peek as the table's row type
#    (which has columns the source lacks) fails with 42804;
#  * privileges: create_source needs ownership of the table (42501); peeks of
#    a source and its index need SELECT on the table (42501 without it, also
#    after a REVOKE in a session that peeked before); a non-superuser owner
#    can create a source and reads its failure;
#  * append, write, advance and drop_collection on a source, drop_source on
#    a collection: 42809; drop_source drops the source, its index, its shard,
#    its row type and its slot;
#  * DROP EXTENSION pg_peek CASCADE drops every slot (on a fresh node and
#    after all of the above), and the extension can be created again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();

# ---- settings that rule sources out ---------------------------------------------------

for my $case ([ 'wal_level = replica', qr/wal_level/, 'wal_level' ],
	[ 'max_replication_slots = 0', qr/max_replication_slots/, 'max_replication_slots' ])
{
	my ($conf, $re, $what) = @$case;
	my $n = new_node("no_$what", conf => $conf);
	$n->safe_psql('postgres', 'CREATE EXTENSION pg_peek; CREATE TABLE t (k int)');
	my ($st, $msg) = sql_error($n, "SELECT peek.create_source('s', 't')");
	is($st, '55000', "$conf: create_source fails with 55000");
	like($msg, $re, "$conf: the error names $what ($msg)");
	is($n->safe_psql('postgres',
			"SELECT (SELECT count(*) FROM peek.collections) || ':' || (SELECT count(*) FROM pg_replication_slots)"),
		'0:0', "$conf: no source and no slot are left");
	$n->stop;
}

# ---- DROP EXTENSION on a node where nothing else happened ------------------------------

{
	my $n = new_node('drop_extension');
	$n->safe_psql('postgres', q{
		CREATE EXTENSION pg_peek;
		CREATE TABLE t (k int, v text);
		INSERT INTO t VALUES (1, 'a');
		SELECT peek.create_source('s', 't');
		SELECT peek.create_index('s_k', 's', ARRAY['k']);
	});
	ok(poll_until($n, "SELECT state FROM peek.indexes WHERE name = 's_k'", 'ready'),
		'drop_extension node: the source is ready');
	$n->safe_psql('postgres', "INSERT INTO t VALUES (2, 'b')");
	is( $n->safe_psql('postgres',
			"SET pg_peek.isolation = 'strict serializable'; SELECT count(*) FROM peek.index_peek(NULL::t, 's_k')"),
		'2', 'drop_extension node: the source captured a change');
	is($n->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'), '1', 'it has its slot');
	my $offset = -s $n->logfile;
	$n->safe_psql('postgres', 'DROP EXTENSION pg_peek CASCADE');
	ok(poll_until($n, 'SELECT count(*) FROM pg_replication_slots', '0', 10),
		'DROP EXTENSION pg_peek CASCADE drops the slot');
	my $log = slurp_file($n->logfile, $offset);
	my ($bad) = $log =~ /^.*((?:ERROR|LOG):.*(?:terminated by signal|exited with exit code|does not exist).*)$/m;
	is($bad // '', '', 'no runtime error or crash after DROP EXTENSION');
	$n->safe_psql('postgres', q{
		CREATE EXTENSION pg_peek;
		SELECT peek.create_source('s2', 't');
	});
	ok(poll_until($n, "SELECT state FROM peek.collections WHERE name = 's2'", 'ready'),
		'after CREATE EXTENSION again, a new source is ready');
	is( $n->safe_psql('postgres',
			"SET pg_peek.isolation = 'strict serializable'; SELECT string_agg(v, ',' ORDER BY k) FROM peek.persist_peek(NULL::t, 's2')"),
		'a,b', 'and has the table\'s rows');
	$n->stop;
}

# ---- the main node ----------------------------------------------------------------------

# (a runtime that crashes restarts the cluster, so that the other cases
# still run: each case checks that nothing crashed or restarted during it)
my $node = new_node('source_failures',
	conf => [ 'max_replication_slots = 20', 'restart_after_crash = on' ]);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $nruntimes = $mode eq 'on' ? 2 : 1;
sql('CREATE EXTENSION pg_peek');
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'the runtimes are running');
my $runtimes_sql =
  "SELECT string_agg(role || ':' || pid || ':' || state || ':' || restarts, ',' ORDER BY role) FROM peek.runtimes";
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";

# the runtimes and the end of the server log, before a case
sub case_start
{
	return (sql($runtimes_sql), -s $node->logfile);
}

# after a change that may crash a runtime (it would within milliseconds):
# wait until the server and the runtimes are up, so that the next query is
# not cut off by a crash-restart
sub settle
{
	usleep(500_000);
	poll_until($node, 'SELECT 1', '1', 60);
	poll_until($node, $running_sql, 't', 60);
}

# after a case: no runtime crashed or restarted since case_start
sub case_end
{
	my ($label, $runtimes, $offset) = @_;
	my $crash = '';
	$crash = $1 if slurp_file($node->logfile, $offset) =~ /^.*(LOG:.*terminated by signal.*)$/m;
	is($crash, '', "$label: no server process crashed");
	ok(poll_until($node, $running_sql, 't', 60), "$label: the runtimes are running");
	is(sql($runtimes_sql), $runtimes, "$label: the runtimes kept running, none restarted");
}

# a source that keeps working throughout
sql(q{
	CREATE TABLE ok_t (k int, v text);
	INSERT INTO ok_t VALUES (1, 'one'), (2, 'two');
	SELECT peek.create_source('s_ok', 'ok_t');
	SELECT peek.create_index('ok_k', 's_ok', ARRAY['k']);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'ok_k'", 'ready'), 's_ok is ready');

my $ok_n = 100;

# s_ok still captures: a new row shows in a strict peek
sub ok_source_goes_on
{
	my ($label) = @_;
	$ok_n++;
	sql("INSERT INTO ok_t VALUES ($ok_n, 'after')");
	is( sql("SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '30s'; "
			  . "SELECT count(*) FROM peek.index_peek(NULL::ok_t, 'ok_k', ROW($ok_n))"),
		'1', "$label: another source goes on capturing");
}

# the slot name of a source
sub slot_of
{
	my ($name) = @_;
	return sql("SELECT 'pg_peek_' || d.oid || '_' || o.id FROM pg_database d, peek.objects o "
		  . "WHERE d.datname = 'postgres' AND o.name = '$name'");
}

# ---- loading waits for a transaction older than the slot ------------------------------

sql(q{
	CREATE TABLE load_t (k int, v text);
	ALTER TABLE load_t REPLICA IDENTITY FULL;
	INSERT INTO load_t VALUES (1, 'before');
});
my $older = bg_session($node);
$older->query_safe("BEGIN; INSERT INTO load_t VALUES (2, 'older transaction')");
sql("SELECT peek.create_source('s_load', 'load_t')");
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" . slot_of('s_load') . "'", '1'),
	's_load: its slot is being created');
sleep 1;
is(sql("SELECT state FROM peek.collections WHERE name = 's_load'"), 'loading',
	's_load: loading while a transaction older than the slot runs');
$older->query_safe('COMMIT');
$older->quit;
sql('CHECKPOINT');    # logs the running transactions the slot waits for
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's_load'", 'ready'),
	's_load: ready once it ended');
is( sql("SET pg_peek.isolation = 'strict serializable'; "
		  . "SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM peek.persist_peek(NULL::load_t, 's_load')"),
	'1:before,2:older transaction', 's_load: loaded with the older transaction\'s row');
sql("INSERT INTO load_t VALUES (3, 'after')");
is( sql("SET pg_peek.isolation = 'strict serializable'; "
		  . "SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM peek.persist_peek(NULL::load_t, 's_load')"),
	'1:before,2:older transaction,3:after', 's_load: and captures what comes after');

# ---- changes that fail a source -------------------------------------------------------------

# fail_case(source, table, ddl, reason regexp, table survives?)
sub fail_case
{
	my ($src, $table, $ddl, $reason, $table_stays) = @_;
	my $label = "$src ($ddl)";
	my @before = case_start();
	sql(qq{
		CREATE TABLE $table (k int, v text, w int);
		INSERT INTO $table VALUES (1, 'a', 10), (2, 'b', 20);
		SELECT peek.create_source('$src', '$table');
		SELECT peek.create_index('${src}_k', '$src', ARRAY['k']);
	});
	ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = '${src}_k'", 'ready'),
		"$label: the source is ready");
	my $slot = slot_of($src);
	my $rowtype = sql("SELECT row_type FROM peek.collections WHERE name = '$src'");
	is( sql("SET pg_peek.isolation = 'strict serializable'; "
			  . "SELECT count(*) FROM peek.persist_peek(NULL::$table, '$src')"),
		'2', "$label: peeks work before");

	# (not safe_psql: it must not end the test if the runtime crashed)
	$node->psql('postgres', $ddl);
	$node->psql('postgres', "INSERT INTO $table (k, v) VALUES (3, 'c')") if $table_stays;
	ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = '$src'", 'failed'),
		"$label: the source is failed");
	settle();
	my $failure = sql("SELECT failure FROM peek.collections WHERE name = '$src'");
	like($failure, qr/"$table"/, "$label: the failure names the table: $failure");
	like($failure, $reason, "$label: and says why");
	is(sql("SELECT state || '|' || failure FROM peek.indexes WHERE name = '${src}_k'"),
		"failed|$failure", "$label: its index is failed with the same reason");

	my @peeks = (
		"SELECT * FROM peek.persist_peek(NULL::$rowtype, '$src')",
		"SELECT * FROM peek.index_peek(NULL::$rowtype, '${src}_k', ROW(1))",
		"SELECT * FROM peek.index_peek(NULL::$rowtype, '${src}_k', as_of => 0)");
	# the peeks a user writes, with the table's row type
	push @peeks, "SELECT * FROM peek.persist_peek(NULL::$table, '$src')",
	  "SELECT * FROM peek.index_peek(NULL::$table, '${src}_k', ROW(1))"
	  if $table_stays;
	for my $peek (@peeks)
	{
		my ($st, $msg) = sql_error($node, "SET statement_timeout = '10s'; $peek");
		is("$st: $msg" =~ /\Q$failure\E/ ? $st : "$st: $msg", '55000',
			"$label: $peek fails with 55000 and the reason");
	}
	ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'", '0', 10),
		"$label: its slot $slot is dropped");
	case_end($label, @before);
	ok_source_goes_on($label);
}

fail_case('s_addret', 'addret_t', 'ALTER TABLE addret_t ADD COLUMN extra int, ALTER COLUMN w TYPE bigint',
	qr/row type .*changed/, 1);
fail_case('s_retype', 'retype_t', 'ALTER TABLE retype_t ALTER COLUMN v TYPE varchar(20)',
	qr/row type .*changed/, 1);
fail_case('s_ident', 'ident_t', 'ALTER TABLE ident_t REPLICA IDENTITY DEFAULT',
	qr/REPLICA IDENTITY FULL/, 1);
fail_case('s_droptab', 'droptab_t', 'DROP TABLE droptab_t', qr/dropped/, 0);

# ---- a captured column cannot be dropped ---------------------------------------------------

# (the columns after it would take its place: w, say, captured as v)
sql(q{
	CREATE TABLE dropcol_t (k int, v int, w int);
	INSERT INTO dropcol_t VALUES (1, 10, 100);
	SELECT peek.create_source('s_dropcol', 'dropcol_t');
	CREATE TABLE dropp_t (k int, v int);
	CREATE TABLE dropc_t () INHERITS (dropp_t);
	INSERT INTO dropc_t VALUES (1, 10);
	SELECT peek.create_source('s_dropc', 'dropc_t');
});
ok(poll_until($node, "SELECT count(*) FROM peek.collections WHERE name IN ('s_dropcol', 's_dropc') AND state = 'ready'", '2'),
	's_dropcol and s_dropc are ready');
for my $ddl ('ALTER TABLE dropcol_t DROP COLUMN v', 'ALTER TABLE dropcol_t DROP COLUMN v CASCADE',
	'ALTER TABLE dropcol_t ADD COLUMN v2 int, DROP COLUMN v')
{
	my ($st, $msg) = sql_error($node, $ddl);
	is("$st $msg", '2BP01 cannot drop column v of table public.dropcol_t because source "s_dropcol" captures it',
		"$ddl: refused, naming the source");
}
my ($inh_st, $inh_msg) = sql_error($node, 'ALTER TABLE dropp_t DROP COLUMN v');
is("$inh_st $inh_msg", '2BP01 cannot drop column v of table public.dropc_t because source "s_dropc" captures it',
	'a drop from a parent that goes down to a captured child: refused, naming its source');
is((sql_error($node, 'ALTER TABLE ONLY dropp_t DROP COLUMN v'))[0], '',
	'ALTER TABLE ONLY of the parent leaves the child its column: not refused');
sql('ALTER TABLE dropcol_t ADD COLUMN extra int');
is((sql_error($node, 'ALTER TABLE dropcol_t DROP COLUMN extra'))[0], '', 'an added column may be dropped');
sql('INSERT INTO dropcol_t VALUES (2, 20, 200)');
sql('INSERT INTO dropc_t VALUES (2, 20)');
is(sql("SET pg_peek.isolation = 'strict serializable'; SELECT string_agg(r::text, ';' ORDER BY r::text) "
		  . "FROM peek.persist_peek(NULL::dropcol_t, 's_dropcol') r"),
	'(1,10,100);(2,20,200)', 'the source is whole after the refusals');
is(sql("SET pg_peek.isolation = 'strict serializable'; SELECT string_agg(r::text, ';' ORDER BY r::text) "
		  . "FROM peek.persist_peek(NULL::dropc_t, 's_dropc') r"),
	'(1,10);(2,20)', 'and so is the child\'s');
is(sql("SELECT string_agg(state, ',' ORDER BY name) FROM peek.collections WHERE name IN ('s_dropcol', 's_dropc')"),
	'ready,ready', 'both sources are ready');

# ---- changes that do not fail a source --------------------------------------------------

sql(q{
	CREATE TABLE ren_t (k int, v text);
	INSERT INTO ren_t VALUES (1, 'a');
	SELECT peek.create_source('s_ren', 'ren_t');
	CREATE TABLE vac_t (k int, v text);
	INSERT INTO vac_t SELECT g, 'v' || g FROM generate_series(1, 200) g;
	SELECT peek.create_source('s_vac', 'vac_t');
	SELECT peek.create_index('vac_k', 's_vac', ARRAY['k']);
	CREATE TABLE gap_t (k int, junk int, v text);
	ALTER TABLE gap_t DROP COLUMN junk;
	INSERT INTO gap_t VALUES (1, 'a'), (2, 'b');
	SELECT peek.create_source('s_gap', 'gap_t');
	SELECT peek.create_index('gap_k', 's_gap', ARRAY['k']);
	CREATE TABLE add_t (k int, v text);
	INSERT INTO add_t VALUES (1, 'a'), (2, 'b');
	SELECT peek.create_source('s_add', 'add_t');
	SELECT peek.create_index('add_k', 's_add', ARRAY['k']);
});
ok( poll_until($node,
		"SELECT count(*) FROM peek.collections WHERE name IN ('s_ren', 's_vac', 's_gap', 's_add') AND state = 'ready'",
		'4'),
	's_ren, s_vac, s_gap and s_add are ready');
sql(q{
	ALTER TABLE ren_t RENAME COLUMN v TO w;
	ALTER TABLE ren_t RENAME TO ren_t2;
	INSERT INTO ren_t2 VALUES (2, 'b');
	DELETE FROM vac_t WHERE k % 2 = 0;
	VACUUM FULL vac_t;
	UPDATE vac_t SET v = v || '!' WHERE k < 50;
	INSERT INTO gap_t VALUES (3, 'c');
	UPDATE gap_t SET v = 'B' WHERE k = 2;
	ALTER TABLE add_t ADD COLUMN extra int;
	INSERT INTO add_t VALUES (3, 'c', 30);
	UPDATE add_t SET extra = 10 WHERE k = 1;
	UPDATE add_t SET v = 'B', extra = 20 WHERE k = 2;
	ALTER TABLE add_t ADD COLUMN later timestamptz DEFAULT clock_timestamp();
	INSERT INTO add_t VALUES (4, 'd');
	ALTER TABLE add_t DROP COLUMN extra;
	DELETE FROM add_t WHERE k = 3;
});
my $strict = "SET pg_peek.isolation = 'strict serializable'; SET statement_timeout = '30s';";
my $digest = q{string_agg(r::text, ';' ORDER BY r::text COLLATE "C")};
is(sql("$strict SELECT $digest FROM peek.persist_peek(NULL::ren_t2, 's_ren') r"), '(1,a);(2,b)',
	'renamed column and table: the source goes on');
is(sql("$strict SELECT $digest FROM peek.index_peek(NULL::vac_t, 'vac_k') r"),
	sql("SELECT $digest FROM vac_t r"), 'VACUUM FULL: the source goes on and equals the table');
is(sql("$strict SELECT $digest FROM peek.index_peek(NULL::gap_t, 'gap_k') r"), '(1,a);(2,B);(3,c)',
	'a column dropped before create_source: index rows in the table\'s row type');
is(sql("$strict SELECT $digest FROM peek.persist_peek(NULL::gap_t, 's_gap') r"), '(1,a);(2,B);(3,c)',
	'a column dropped before create_source: persist rows in the table\'s row type');
is(sql("$strict SELECT k FROM peek.index_peek(NULL::gap_t, 'gap_k', ROW(2)) WHERE v = 'B'"), '2',
	'a column dropped before create_source: lookups by key');
my $add_type = sql("SELECT row_type FROM peek.collections WHERE name = 's_add'");
is(sql("$strict SELECT $digest FROM peek.persist_peek(NULL::$add_type, 's_add') r"), '(1,a);(2,B);(4,d)',
	'columns added (one by a rewrite with a volatile default) and one of them dropped: the source captures its columns');
is(sql("$strict SELECT $digest FROM peek.index_peek(NULL::$add_type, 'add_k') r"), '(1,a);(2,B);(4,d)',
	'and its index');
my ($add_st, $add_msg) = sql_error($node, "SELECT * FROM peek.persist_peek(NULL::add_t, 's_add')");
is("$add_st $add_msg", '42804 table add_t has columns that source "s_add" does not capture',
	'read as the table\'s row type, which has a column the source does not capture: 42804');
is(sql("SELECT string_agg(state, ',') FROM peek.collections WHERE name IN ('s_ren', 's_vac', 's_gap', 's_add')"),
	'ready,ready,ready,ready', 'none of them failed');

# ---- privileges ----------------------------------------------------------------------------

sql(q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT CREATE ON SCHEMA public TO alice;
	GRANT USAGE ON SCHEMA peek TO alice, bob;
});
my ($st, $msg) = sql_error($node, "SET ROLE alice; SELECT peek.create_source('s_alice', 'ok_t')");
is("$st $msg", '42501 must be owner of table ok_t', "create_source on another's table: 42501");
for my $peek ("SELECT * FROM peek.persist_peek(NULL::ok_t, 's_ok')",
	"SELECT * FROM peek.index_peek(NULL::ok_t, 'ok_k', ROW(1))")
{
	($st, $msg) = sql_error($node, "SET ROLE alice; $peek");
	like("$st $msg", qr/^42501 permission denied to peek (source "s_ok"|index "ok_k")$/,
		"without SELECT on the table: $peek fails with 42501 ($msg)");
}

my $alice = bg_session($node, on_error_stop => 0);
$alice->query_safe('SET client_min_messages = warning; SET ROLE alice');
my ($out, $failed) = $alice->query("SELECT count(*) FROM peek.index_peek(NULL::ok_t, 'ok_k', ROW(1))");
ok($failed, 'alice may not peek s_ok yet');
$alice->{stderr} = '';
sql('GRANT SELECT ON ok_t TO alice');
is($alice->query_safe("SELECT v FROM peek.index_peek(NULL::ok_t, 'ok_k', ROW(1))"), 'one',
	'with SELECT on the table alice peeks the index');
is($alice->query_safe("SELECT count(*) FROM peek.persist_peek(NULL::ok_t, 's_ok') WHERE k = 2"), '1',
	'and the source');
sql('REVOKE SELECT ON ok_t FROM alice');
($out, $failed) = $alice->query("SELECT count(*) FROM peek.index_peek(NULL::ok_t, 'ok_k', ROW(1))");
ok($failed && $alice->{stderr} =~ /permission denied/,
	'after REVOKE, the same session may not peek the index again');
$alice->{stderr} = '';
($out, $failed) = $alice->query("SELECT count(*) FROM peek.persist_peek(NULL::ok_t, 's_ok')");
ok($failed && $alice->{stderr} =~ /permission denied/, 'nor the source');
$alice->{stderr} = '';

# a non-superuser owner creates a source of her table
$alice->query_safe(q{
	CREATE TABLE alice_t (k int, v text);
	INSERT INTO alice_t VALUES (1, 'mine');
	SELECT peek.create_source('s_alice', 'alice_t');
	SELECT peek.create_index('alice_k', 's_alice', ARRAY['k']);
});
ok( poll_until($node,
		"SELECT string_agg(state, ',') FROM (SELECT state FROM peek.collections WHERE name = 's_alice' "
		  . "UNION ALL SELECT state FROM peek.indexes WHERE name = 'alice_k') s", 'ready,ready'),
	'a non-superuser owner creates a source of her table');
# (strict: a serializable peek may still read a time before the load)
$alice->query_safe("SET pg_peek.isolation = 'strict serializable'");
is($alice->query_safe("SELECT v FROM peek.index_peek(NULL::alice_t, 'alice_k', ROW(1))"), 'mine',
	'and peeks it');
($st, $msg) = sql_error($node, "SET ROLE bob; SELECT * FROM peek.index_peek(NULL::alice_t, 'alice_k', ROW(1))");
is("$st $msg", '42501 permission denied to peek index "alice_k"', 'bob, without SELECT on alice_t: 42501');
sql('GRANT SELECT ON alice_t TO bob');
($st) = sql_error($node, "SET ROLE bob; SELECT * FROM peek.persist_peek(NULL::alice_t, 's_alice')");
is($st, '', 'bob, with SELECT on alice_t, peeks s_alice');
my @alice_case = case_start();
$alice->query('ALTER TABLE alice_t ALTER COLUMN v TYPE varchar(20)');
$alice->quit;
ok(poll_until($node, "SELECT state FROM peek.collections WHERE name = 's_alice'", 'failed'),
	"alice's source failed after her ALTER TABLE");
settle();
my $alice_type = sql("SELECT row_type FROM peek.collections WHERE name = 's_alice'");
($st, $msg) = sql_error($node,
	"SET ROLE alice; SELECT count(*) FROM peek.persist_peek(NULL::$alice_type, 's_alice')");
is($st, '55000', "alice reads why her source failed: $msg");
like($msg, qr/alice_t/, 'the reason names her table');
case_end("alice's failed source", @alice_case);

# ---- what a source refuses, and drop_source ---------------------------------------------

sql("CREATE TYPE plain_row AS (k int, v text); SELECT peek.create_collection('plain', 'plain_row')");
for my $case (
	[ "SELECT peek.append('s_ok', ARRAY[(9, 'x')]::ok_t[], 1)", 'append' ],
	[ "SELECT peek.write('s_ok', ARRAY[(9, 'x')]::ok_t[])", 'write' ],
	[ "SELECT peek.advance('s_ok', 1)", 'advance' ],
	[ "SELECT peek.drop_collection('s_ok')", 'drop_collection on a source' ],
	[ "SELECT peek.drop_source('plain')", 'drop_source on a collection' ])
{
	($st, $msg) = sql_error($node, $case->[0]);
	is($st, '42809', "$case->[1]: 42809 ($msg)");
}
is(sql("SELECT state FROM peek.collections WHERE name = 's_ok'"), 'ready', 's_ok is still there');

my @before = case_start();
my $slot = slot_of('s_vac');
my ($vac_shard, $vac_type) = split /\|/,
  sql("SELECT shard || '|' || row_type FROM peek.collections WHERE name = 's_vac'");
# (not safe_psql, and polled: a runtime that crashes must not end the test)
$node->psql('postgres', "SELECT peek.drop_source('s_vac')");
settle();
ok( poll_until($node,
		"SELECT (SELECT count(*) FROM peek.collections WHERE name = 's_vac') || ':' || "
		  . "(SELECT count(*) FROM peek.indexes WHERE name = 'vac_k') || ':' || "
		  . "coalesce(to_regclass('$vac_shard')::text, 'no shard') || ':' || "
		  . "coalesce(to_regtype('$vac_type')::text, 'no type')",
		'0:0:no shard:no type', 10),
	'drop_source drops the source, its index, its shard and its row type');
ok(poll_until($node, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'", '0', 10),
	"drop_source: its slot $slot is dropped");
ok(poll_until($node, 'SELECT 1', '1', 60), 'the server accepts connections');
($st) = sql_error($node, "SELECT * FROM peek.index_peek(NULL::vac_t, 'vac_k')");
is($st, '42704', 'a peek of the dropped index: 42704');
is(sql("SELECT count(*) FROM vac_t"), '100', 'the table itself is untouched');
case_end('drop_source', @before);
ok_source_goes_on('after drop_source');

# ---- DROP EXTENSION ---------------------------------------------------------------------------

cmp_ok(sql("SELECT count(*) FROM pg_replication_slots"), '>=', 4, 'the live sources have slots');
my $offset = -s $node->logfile;
sql('DROP EXTENSION pg_peek CASCADE');
ok(poll_until($node, 'SELECT count(*) FROM pg_replication_slots', '0', 10),
	'DROP EXTENSION pg_peek CASCADE drops every slot');
my $crash = '';
$crash = $1 if slurp_file($node->logfile, $offset) =~ /^.*(LOG:.*terminated by signal.*)$/m;
is($crash, '', 'DROP EXTENSION: no server process crashed');

$node->stop;
done_testing();
