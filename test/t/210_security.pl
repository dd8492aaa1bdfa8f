# Hostile roles.  Two non-superuser roles: alice owns
# the database the runtimes serve, bob is an ordinary user.  Each attack must
# fail or be harmless, no runtime may restart over it, and bob's collection
# keeps publishing:
#
#  * search_path: alice puts a schema of hers first in the database's
#    search_path (and her own) with operators, an aggregate and functions
#    named like pg_catalog's, which would make her superuser and leave a
#    marker if a superuser ever called them; the runtimes (restarted under
#    that search_path) and the extension's own statements never do;
#  * DROP TYPE on a collection's row type is refused; with CASCADE the
#    collection and its index are failed (55000, reason in the views) and can
#    be dropped; ALTER TABLE ... DROP COLUMN of an index's key column fails
#    the index; a temporary row type is refused with 0A000;
#  * bob cannot block alice's drops with a column of a shard's or a source's
#    row type (42501);
#  * a cheap function of bob's in a WHERE on any view sees none of alice's
#    names; the status functions behind the views show bob none of alice's
#    objects; collection_rows answers bob the same error for alice's
#    collection as for one that does not exist;
#  * DROP EXTENSION completes while a peek is parked, which fails with 55000;
#  * after a server restart, the failed objects stay failed and the
#    runtimes stay up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

# the harness's own sessions (a superuser) must not run alice's operators:
# a client setting overrides the database's search_path
$ENV{PGOPTIONS} = '-c search_path=pg_catalog,public';

my $node = new_node('security');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	ALTER DATABASE postgres OWNER TO alice;
	GRANT CREATE ON SCHEMA public TO alice, bob;
	CREATE EXTENSION pg_peek;
	GRANT USAGE ON SCHEMA peek TO alice, bob;
});

# ---- alice's trap: pg_catalog look-alikes that escalate when a superuser runs them

sql(q{
	SET ROLE alice;
	CREATE TABLE public.marker (who text, what text);
	GRANT INSERT ON public.marker TO PUBLIC;
	CREATE SCHEMA evil;
	GRANT USAGE ON SCHEMA evil TO PUBLIC;
	CREATE FUNCTION evil.trap(what text) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
			INSERT INTO public.marker VALUES (current_user, what);
			ALTER ROLE alice SUPERUSER;
		END IF;
	END $$;
	CREATE FUNCTION evil.int8ge(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('>='); RETURN pg_catalog.int8ge($1, $2); END $$;
	CREATE FUNCTION evil.int8lt(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('<'); RETURN pg_catalog.int8lt($1, $2); END $$;
	CREATE FUNCTION evil.int8eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('='); RETURN pg_catalog.int8eq($1, $2); END $$;
	CREATE FUNCTION evil.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('text ='); RETURN pg_catalog.texteq($1, $2); END $$;
	CREATE OPERATOR evil.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8ge);
	CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8lt);
	CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8eq);
	CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq);
	CREATE FUNCTION evil.count_step(bigint) RETURNS bigint LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('count'); RETURN $1 + 1; END $$;
	CREATE AGGREGATE evil.count(*) (SFUNC = evil.count_step, STYPE = bigint, INITCOND = '0');
	CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('nextval'); RETURN pg_catalog.nextval($1); END $$;
	CREATE FUNCTION evil.coalesce(text, text) RETURNS text LANGUAGE plpgsql AS
		$$ BEGIN PERFORM evil.trap('coalesce'); RETURN pg_catalog.concat($1, $2); END $$;
	-- pg_catalog is searched after evil for every session that does not say otherwise
	ALTER DATABASE postgres SET search_path = evil, pg_catalog, public;
});

# the runtimes pick the database's settings up when they connect
$node->restart;
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'the runtimes run again under alice\'s search_path');

# alice's and bob's calls run under her search_path too
my $as_alice = "SET ROLE alice; SET search_path = evil, pg_catalog, public;";
my $as_bob = "SET ROLE bob; SET search_path = public, evil, pg_catalog;";

sql(qq{
	$as_bob
	CREATE TYPE bob_row AS (k bigint, v text);
	SELECT peek.create_collection('bob_c', 'bob_row');
	SELECT peek.create_index('bob_k', 'bob_c', ARRAY['k']);
	SELECT peek.write('bob_c', ARRAY[ROW(1, 'one')]::bob_row[]);
});
sql(qq{
	$as_alice
	CREATE TYPE alice_row AS (k bigint, v text);
	CREATE TABLE alice_t (k bigint, v text);
	SELECT peek.create_collection('alice_c', 'alice_row');
	SELECT peek.create_index('alice_k', 'alice_c', ARRAY['k']);
	SELECT peek.create_collection('alice_tc', 'alice_t');
	SELECT peek.create_index('alice_tk', 'alice_tc', ARRAY['k']);
	SELECT peek.create_index('alice_tv', 'alice_tc', ARRAY['v']);
	SELECT peek.write('alice_c', ARRAY[ROW(1, 'a'), ROW(2, 'b')]::alice_row[]);
	SELECT peek.write('alice_c', ARRAY[ROW(3, 'c')]::alice_row[], ARRAY[ROW(1, 'a')]::alice_row[]);
	SELECT peek.write('alice_tc', ARRAY[ROW(1, 'x')]::alice_t[]);
	SELECT peek.allow_compaction('alice_c', 1);
});
ok( poll_until($node,
		"SELECT count(*) FROM peek.indexes WHERE state = 'ready' AND name IN ('bob_k', 'alice_k', 'alice_tk', 'alice_tv')",
		'4'),
	'the indexes hydrated');
is( sql(qq{$as_alice SELECT string_agg(v, ',' ORDER BY k) FROM peek.index_peek(NULL::alice_row, 'alice_k')}),
	'b,c', 'alice peeks her index');
is( sql(qq{$as_alice SELECT string_agg(v, ',' ORDER BY k) FROM peek.persist_peek(NULL::alice_row, 'alice_c')}),
	'b,c', 'and her collection');
ok( poll_until($node, "SELECT since FROM peek.collections WHERE name = 'alice_c'", '1'),
	'her collection compacted');

# a restart makes the maintenance runtime hydrate every index again
$node->restart;
ok( poll_until($node,
		"SELECT count(*) FROM peek.indexes WHERE state = 'ready' AND name IN ('bob_k', 'alice_k', 'alice_tk', 'alice_tv')",
		'4'),
	'the indexes hydrated again after a restart');
is(sql(qq{$as_alice SELECT count(*) FROM peek.index_peek(NULL::alice_row, 'alice_k')}), '2',
	'alice peeks her index after the restart');

is(sql('SELECT string_agg(who || \' ran \' || what, \', \') FROM public.marker'), '',
	'no superuser ran any of alice\'s look-alikes');
is(sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'"), 'f', 'alice is not a superuser');

# ---- from here on: no runtime restarts, bob's collection keeps publishing

my $runtimes_sql =
  "SELECT string_agg(role || ':' || coalesce(pid::text, 'stopped') || ':' || restarts, ',' ORDER BY role) FROM peek.runtimes";
my $runtimes = sql($runtimes_sql);
my $log_offset = -s $node->logfile;
my $bob_k = 1;

# after an attack: the runtimes did not restart (nor stopped meanwhile) and
# bob's index follows a write
sub still_serving
{
	my ($label) = @_;
	$bob_k++;
	my $t = sql("$as_bob SELECT peek.write('bob_c', ARRAY[ROW($bob_k, 'v$bob_k')]::bob_row[])");
	is(sql("$as_bob SELECT v FROM peek.index_peek(NULL::bob_row, 'bob_k', ROW($bob_k), as_of => $t)"),
		"v$bob_k", "$label: bob's index follows his write");
	is(sql($runtimes_sql), $runtimes, "$label: no runtime restarted");
	# (a runtime's exit; a loader that the drop of its source stopped exits
	# with code 1 by design)
	my ($exit) = slurp_file($node->logfile, $log_offset) =~
	  /^.*(pg_peek (?:maintenance|interactive|solo)".*(?:exited with|terminated by).*)$/m;
	is($exit // '', '', "$label: no runtime exited");
}

still_serving('search_path');

# ---- a temporary row type cannot last

my ($st, $msg) = sql_error($node, qq{
	$as_alice
	CREATE TEMP TABLE tmp_t (k int);
	SELECT peek.create_collection('tmp_c', 'tmp_t');
});
is($st, '0A000', "a temporary table's row type is refused with 0A000 ($msg)");
($st, $msg) = sql_error($node, qq{
	$as_alice
	CREATE TYPE pg_temp.tmp_row AS (k int);
	SELECT peek.create_collection('tmp_c', 'pg_temp.tmp_row');
});
is($st, '0A000', "a temporary composite type is refused with 0A000 ($msg)");
($st, $msg) = sql_error($node, qq{
	$as_alice
	CREATE TYPE pg_temp.tmp_inner AS (k int);
	CREATE TYPE pg_temp.tmp_outer AS (i pg_temp.tmp_inner[]);
	SELECT peek.create_collection('tmp_c', 'pg_temp.tmp_outer');
});
is($st, '0A000', "a type made of a temporary one is refused with 0A000 ($msg)");
is(sql("SELECT count(*) FROM peek.collections WHERE name = 'tmp_c'"), '0', 'no such collection exists');

# ---- DROP TYPE on a collection's row type

($st, $msg) = sql_error($node, "$as_alice DROP TYPE alice_row");
is($st, '2BP01', "DROP TYPE of a collection's row type is refused ($msg)");
sql("$as_alice DROP TYPE alice_row CASCADE");
ok( poll_until($node,
		"SELECT state || '|' || failure FROM peek.collections WHERE name = 'alice_c'",
		'failed|its row type (OID ' . sql("SELECT row_type::oid FROM peek.objects WHERE name = 'alice_c'")
		  . ') was dropped, and its shard with it'),
	'after DROP TYPE ... CASCADE the collection is failed, saying why');
like(sql("SELECT state || '|' || failure FROM peek.indexes WHERE name = 'alice_k'"),
	qr/^failed\|its row type .* was dropped/, 'and so is its index');
still_serving('DROP TYPE ... CASCADE');
sql("$as_alice SELECT peek.drop_collection('alice_c')");
is(sql("SELECT count(*) FROM peek.objects WHERE name IN ('alice_c', 'alice_k')"), '0',
	'the failed collection and its index can be dropped');

# ---- ALTER TABLE ... DROP COLUMN of an index's key column

sql("$as_alice ALTER TABLE alice_t DROP COLUMN v");
sql(qq{$as_alice SELECT peek.write('alice_tc', ARRAY[ROW(2)]::alice_t[])});
ok( poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'alice_tv'", 'failed'),
	'an index whose key column was dropped is failed');
like(sql("SELECT failure FROM peek.indexes WHERE name = 'alice_tv'"), qr/no longer exists/,
	'saying why');
($st, $msg) = sql_error($node, "$as_alice SELECT count(*) FROM peek.index_peek(NULL::alice_t, 'alice_tv')");
is($st, '55000', "a peek of it fails with 55000 ($msg)");
is(sql("$as_alice SELECT count(*) FROM peek.index_peek(NULL::alice_t, 'alice_tk', as_of => 1)"), '2',
	'the index on the remaining column follows the collection');
still_serving('DROP COLUMN');

# ---- bob cannot block alice's drop with a column of her shard's row type

my $shard = sql("SELECT shard FROM peek.collections WHERE name = 'alice_tc'");
($st, $msg) = sql_error($node, "$as_bob CREATE TABLE bob_block (x $shard)");
is($st, '42501', "bob cannot use the shard's row type $shard ($msg)");
($st, $msg) = sql_error($node, "$as_bob CREATE TABLE bob_block (x ${shard}[])");
is($st, '42501', "nor its array type ($msg)");
($st, $msg) = sql_error($node, "$as_bob CREATE FUNCTION bob_f($shard) RETURNS int LANGUAGE sql AS 'SELECT 1'");
is($st, '42501', "nor make a function of it ($msg)");
sql(qq{$as_alice CREATE TABLE alice_src (k int); SELECT peek.create_source('alice_s', 'alice_src')});
my $source_type = sql("SELECT row_type FROM peek.collections WHERE name = 'alice_s'");
($st, $msg) = sql_error($node, "$as_bob CREATE TABLE bob_block (x $source_type)");
is($st, '42501', "nor a source's row type $source_type ($msg)");
sql("$as_alice SELECT peek.drop_source('alice_s')");
is(sql("SELECT count(*) FROM peek.objects WHERE name = 'alice_s'"), '0', 'alice drops her source');

# ---- the views and status functions show bob none of alice's objects

my ($rc, $out, $err) = $node->psql('postgres', qq{
	$as_bob
	CREATE FUNCTION bob_leak(VARIADIC text[]) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS
		\$\$ BEGIN RAISE NOTICE 'leaked %', \$1; RETURN true; END \$\$;
	SELECT count(*) FROM peek.collections WHERE bob_leak(name);
	SELECT count(*) FROM peek.indexes WHERE bob_leak(name, collection);
	SELECT count(*) FROM peek.frontiers WHERE bob_leak(object);
	SELECT count(*) FROM peek.holds WHERE bob_leak(object);
	SELECT count(*) FROM peek.arrangement_sharing WHERE bob_leak(index);
	SELECT count(*) FROM peek.active_peeks WHERE bob_leak(object);
	SELECT count(*) FROM peek.hydration_progress WHERE bob_leak(index, collection);
});
is($rc, 0, 'bob queries every view with his function in the WHERE');
my @leaked = $err =~ /leaked \{[^}]*alice[^}]*\}/g;
is(join(' ', @leaked), '', 'his function saw none of alice\'s names');
like($err, qr/leaked \{bob_c\}/, 'it saw his own');

my $alice_ids = "SELECT id FROM peek.objects WHERE name LIKE 'alice%'";
is(sql("SELECT count(*) FROM peek.registry_status() WHERE id IN ($alice_ids)") > 0 ? 'some' : 'none',
	'some', 'the registry has alice\'s objects');
for my $f ('registry_status() WHERE id', 'runtime_object_status() WHERE id')
{
	my $ids = join(',', split /\n/, sql($alice_ids));
	is(sql("$as_bob SELECT count(*) FROM peek.$f IN ($ids)"), '0', "peek.$f: bob sees none of alice's");
}
isnt(sql("$as_bob SELECT count(*) FROM peek.registry_status()"), '0', 'bob sees his own in registry_status');

my ($st1, $msg1) = sql_error($node, "$as_bob SELECT peek.collection_rows('alice_tc')");
my ($st2, $msg2) = sql_error($node, "$as_bob SELECT peek.collection_rows('nobody_c')");
$msg2 =~ s/nobody_c/alice_tc/;
is("$st1 $msg1", "$st2 $msg2", "collection_rows answers bob alike for alice's and a missing name ($msg1)");
($st1, $msg1) = sql_error($node, "$as_bob SELECT peek.collection_rows('alice_tk')");
is("$st1 $msg1", '42704 collection "alice_tk" does not exist', 'also for alice\'s index');
is(sql("$as_alice SELECT peek.collection_rows('alice_tc')"), '2', 'alice counts her rows');

still_serving('views');

# ---- the failures last over a server restart

$node->restart;
ok( poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'after a restart the runtimes run');
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'bob_k'", 'ready'),
	'bob\'s index is ready');
is(sql("SELECT state FROM peek.indexes WHERE name = 'alice_tv'"), 'failed', 'alice\'s failed index stays failed');
$runtimes = sql($runtimes_sql);
$log_offset = -s $node->logfile;
sleep 2;
still_serving('after the restart');
is(sql('SELECT count(*) FROM public.marker'), '0', 'no superuser ran any of alice\'s look-alikes');
is(sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'"), 'f', 'alice is still no superuser');

# ---- DROP EXTENSION while a peek waits

my $parked = start_bg($node,
	"$as_alice SELECT count(*) FROM peek.persist_peek(NULL::alice_t, 'alice_tc', as_of => 1000)",
	verbose => 1);
ok( poll_until($node, "SELECT count(*) FROM peek.active_peek_status() WHERE state = 'parked'", '1'),
	'alice\'s peek is parked');
is(sql("$as_bob SELECT count(*) FROM peek.active_peek_status()"), '0',
	'active_peek_status does not show it to bob');
my $pids = sql("SELECT string_agg(pid::text, ',' ORDER BY pid) FROM peek.runtimes");
my $drop = start_bg($node, 'DROP EXTENSION pg_peek CASCADE', timeout => 30);
my ($drop_rc, $drop_out, $drop_err) = finish_bg($drop, 20);
is($drop_rc, 0, "DROP EXTENSION completes while a peek is parked ($drop_err)");
my ($peek_rc, $peek_out, $peek_err) = finish_bg($parked, 20);
like($peek_err, qr/55000: extension pg_peek is being dropped/, 'the parked peek fails with 55000');
is( sql("SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity WHERE backend_type LIKE 'pg_peek%'"),
	$pids, 'the runtimes did not restart');
is(sql('SELECT count(*) FROM public.marker'), '0', 'and no superuser ran alice\'s look-alikes');

$node->stop;
done_testing();
