# ALTER EXTENSION pg_peek UPDATE (0.2 -> 0.3) while a writer of the old
# catalog holds an uncommitted seal (UPDATE peek.objects SET upper): the
# update copies the uppers into peek.uppers and drops the column.  The seal
# that commits while the update waits for the table must not be lost: the
# upper after the update is the writer's, and the next write writes after
# it, at a time not written before, and no runtime fails meanwhile.  An
# update to the version installed already can be prepared.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $nruntimes = $mode eq 'on' ? 2 : 1;

my $node = new_node('primary', conf => ['max_prepared_transactions = 2']);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek VERSION '0.2';
	CREATE TYPE item AS (id int, name text);
	SELECT peek.create_collection('c', 'item');
	SELECT peek.write('c', ARRAY[(1, 'a')]::item[]);
});
ok(poll_until($node,
		"SELECT count(*) = $nruntimes AND bool_and(state = 'running') FROM peek.runtimes"),
	'the runtimes are running');
# the 0.3 library on the old catalog, not updated yet, for a few of the
# maintenance runtime's upper prunings (one a second): there is no
# peek.uppers to prune, and it does not fail looking for it
usleep(2_500_000);
unlike(slurp_file($node->logfile), qr/exited with exit code|could not open relation/,
	'the runtimes run on the old catalog');

my $w = bg_session($node);
$w->query_safe('BEGIN');
is($w->query_safe("SELECT peek.write('c', ARRAY[(2, 'b')]::item[])"), '1',
	'an open writer of the old catalog writes at 1');

my $upd = start_bg($node, 'ALTER EXTENSION pg_peek UPDATE');
ok(poll_until($node,
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$upd->{application_name}' "
		  . "AND wait_event_type = 'Lock'"),
	'the update waits for the writer');
$w->query_safe('COMMIT');
$w->quit;
my ($rc, $out, $err) = finish_bg($upd);
is($rc, 0, 'the update finishes') or diag($err);

is($node->safe_psql('postgres',
		"SELECT max(u.upper) FROM peek.uppers u JOIN peek.objects o ON u.object = o.id & 4294967295 WHERE o.name = 'c'"),
	'2', 'the seal that committed during the update is kept');
# and published once the update commits (the runtime read it in the
# catalog the update was replacing: the update has every row read again),
# not only at the next write
ok(poll_until($node, "SELECT upper = 2 FROM peek.collections WHERE name = 'c'"),
	'the seal that committed during the update is published');
is($node->safe_psql('postgres',
		q{SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM peek.persist_peek(NULL::item, 'c')}),
	'1:a,2:b', 'a peek at the latest time reads it');
is($node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(3, 'c')]::item[])"),
	'2', 'the next write writes after it');
ok(poll_until($node,
		q{SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM peek.persist_peek(NULL::item, 'c')},
		'1:a,2:b,3:c'),
	'the contents are right');

# The maintenance runtime that reads the catalog while the update commits
# (the writer's commit wakes it) asks which catalog is installed after
# locking peek.objects as its query does: it does not plan a query for the
# old catalog and run it on the new one ('column "upper" does not exist',
# the runtime exiting and restarted, peeks reading a stale upper meanwhile).
unlike(slurp_file($node->logfile), qr/column "upper" does not exist|exited with exit code/,
	'no runtime fails on a query for the old catalog after the update');

# An update to the version installed already changes nothing (PostgreSQL
# says so in a NOTICE), so it has no row read again: nothing is left to
# tell the runtimes at commit, and its transaction can be prepared (one
# that changed pg_peek objects cannot: COMMIT PREPARED could not tell them).
my ($prc, $pout, $perr) = $node->psql('postgres', q{
	BEGIN;
	ALTER EXTENSION pg_peek UPDATE;
	PREPARE TRANSACTION 'noop_update';
});
is($prc, 0, 'a transaction holding an update to the installed version prepares')
  or diag($perr);
like($perr, qr/already installed/, 'PostgreSQL said the update does nothing');
$node->safe_psql('postgres', "COMMIT PREPARED 'noop_update'");
is($node->safe_psql('postgres', "SELECT peek.write('c', ARRAY[(4, 'd')]::item[])"),
	'3', 'writes go on after it');
ok(poll_until($node, "SELECT upper = 4 FROM peek.collections WHERE name = 'c'"),
	'and are published');

$node->stop;
done_testing();
