# Views put off (their catalog rows held, round.c's dataflow_round) among
# 21 views over one source, each checked against PostgreSQL's evaluation
# of its query once caught up:
#  * a view over a view whose inner view is held, one write, no write
#    after: both catch up once the holder commits;
#  * ALTER VIEW ... OWNER TO and the old owner's rights revoked in one open
#    transaction while writes land: no round runs as the old owner (the
#    view is not failed);
#  * one of 20 views held for 30 s while the others stay current (their
#    commit-to-visible and the maintenance runtime's CPU are shown);
#  * a view held, then a division by zero: failed at once, not retried;
#  * pg_peek.view_round_timeout = 20ms with one view held and a big
#    write: views time out, are retried, none fails (the round's kill
#    waits for its cancel to be acted on, TAP 307), and all catch up;
#  * a drop_view open while a write lands; the runtime ended (SIGTERM)
#    while a view is put off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use PgPeekTest;

my $node = new_node('put_off_attacks');
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TABLE t (id int PRIMARY KEY, g int, v int);
	INSERT INTO t SELECT i, i % 5, i FROM generate_series(1, 100) i;
	CREATE ROLE alice; CREATE ROLE bob;
	GRANT USAGE ON SCHEMA peek TO alice, bob;
	GRANT SELECT ON t TO alice, bob;
	CREATE SCHEMA sa AUTHORIZATION alice;
	GRANT USAGE ON SCHEMA sa TO bob;});
sql(q{SELECT peek.create_source('t_src', 't')});
sql(q{SELECT peek.create_view('inner_v', 'SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g')});
sql(q{SELECT peek.create_view('outer_v', 'SELECT g, n FROM peek.persist_peek(NULL::inner_v, ''inner_v'') WHERE s > 0')});
for my $i (1 .. 18)
{
	sql("SELECT peek.create_view('m$i', 'SELECT g, sum(v + $i) AS s FROM t GROUP BY g')");
}
sql(q{SET ROLE alice; SET search_path = sa, public;
	SELECT peek.create_view('owned', 'SELECT g, sum(v) AS s FROM public.t GROUP BY g')});

my $caught_up = q{
	SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
	   AND NOT EXISTS (SELECT 1 FROM peek.collections
	                    WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - '0/0')};
ok(poll_until($node, $caught_up, 't', 120), 'the views are ready');

sub exact
{
	my ($view, $query) = @_;
	return sql("SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT ($view.*)::text AS r FROM $view) a)
	        IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM ($query) q) b)");
}
my %dropped;
sub all_exact
{
	my $ok = exact('inner_v', 'SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g') eq 't';
	$ok &&= exact('outer_v', 'SELECT g, count(*) AS n FROM t GROUP BY g HAVING sum(v) > 0') eq 't';
	$ok &&= exact("m$_", "SELECT g, sum(v + $_) AS s FROM t GROUP BY g") eq 't'
	  for grep { !$dropped{"m$_"} } 1 .. 18;
	$ok &&= exact('sa.owned', 'SELECT g, sum(v) AS s FROM t GROUP BY g') eq 't';
	return $ok;
}
ok(all_exact(), 'exact at start');

# 1. inner held; one write; no writes after; both catch up
my $h = start_bg($node, "BEGIN; SELECT peek.set_retention('inner_v', interval '1 hour'); SELECT pg_sleep(3); COMMIT;");
ok(poll_until($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$h->{application_name}' AND wait_event = 'PgSleep'", 't', 30), 'held');
sql(q{INSERT INTO t VALUES (101, 1, 1000)});
ok(poll_until($node, "SELECT lag = 0 FROM peek.views WHERE name = 'm18'", 't', 5), 'others current');
is(sql("SELECT lag > 0 FROM peek.views WHERE name = 'inner_v'"), 't', 'inner behind');
finish_bg($h);
my $t0 = time();
ok(poll_until($node, $caught_up, 't', 30), 'caught up after holder, no writes');
diag(sprintf "catch up after holder: %.2fs", time() - $t0);
ok(all_exact(), 'exact 1');

# 2. owner change held open while writes land; old owner loses rights in the same txn
my $o = start_bg($node, "BEGIN; ALTER VIEW sa.owned OWNER TO bob; REVOKE SELECT ON t FROM alice; SELECT pg_sleep(2); COMMIT;");
ok(poll_until($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$o->{application_name}' AND wait_event = 'PgSleep'", 't', 30), 'owner change open');
sql(q{INSERT INTO t VALUES (102, 2, 5)});
usleep(500_000);
finish_bg($o);
sql(q{INSERT INTO t VALUES (103, 3, 5)});
ok(poll_until($node, $caught_up, 't', 30), 'caught up after owner change');
is(sql(q{SELECT count(*) FROM peek.views WHERE state = 'failed'}), '0', 'nothing failed after owner change');
ok(all_exact(), 'exact 2');

# 3. 20 views, one held for 30 s; runtime CPU; commit-to-visible of others
my $rpid = runtime_pid($node, maintenance_role());
sub cpu { open my $f, '<', "/proc/$_[0]/stat" or return 0; my @s = split ' ', <$f>; return $s[13] + $s[14]; }
my $c0 = cpu($rpid);
my $h2 = start_bg($node, "BEGIN; SELECT peek.set_retention('m5', interval '1 hour'); SELECT pg_sleep(30); COMMIT;", timeout => 60);
ok(poll_until($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$h2->{application_name}' AND wait_event = 'PgSleep'", 't', 30), 'm5 held');
my $c1 = cpu($rpid);
sql(q{INSERT INTO t VALUES (104, 4, 5)});
my @vis;
for my $k (1 .. 5)
{
	sql("UPDATE t SET v = v + 1 WHERE id = $k");
	my $s = time();
	poll_until($node, "SELECT bool_and(lag = 0) FROM peek.views WHERE name <> 'm5'", 't', 10);
	push @vis, sprintf "%.0f", (time() - $s) * 1000;
}
diag("others visible after (ms): @vis");
sleep 20;
my $c2 = cpu($rpid);
finish_bg($h2);
diag("runtime cpu ticks during hold: " . ($c2 - $c1) . " (setup " . ($c1 - $c0) . ")");
ok(poll_until($node, $caught_up, 't', 30), 'caught up after 30 s hold');
ok(all_exact(), 'exact 3');

# 4. division by zero fails promptly even when put off before
sql(q{SELECT peek.create_view('dz', 'SELECT id, 100 / (v - 777) AS q FROM t')});
ok(poll_until($node, $caught_up, 't', 60), 'dz ready');
my $h3 = start_bg($node, "BEGIN; SELECT peek.set_retention('dz', interval '1 hour'); SELECT pg_sleep(1); COMMIT;");
ok(poll_until($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$h3->{application_name}' AND wait_event = 'PgSleep'", 't', 30), 'dz held');
sql(q{INSERT INTO t VALUES (105, 1, 777)});
finish_bg($h3);
$t0 = time();
ok(poll_until($node, "SELECT state = 'failed' FROM peek.views WHERE name = 'dz'", 't', 10), 'dz failed');
diag(sprintf "dz failed after %.2fs", time() - $t0);
sql(q{SELECT peek.drop_view('dz')});

# 5. small round timeout + held + drop racing
sql(q{ALTER SYSTEM SET pg_peek.view_round_timeout = '20ms'; SELECT pg_reload_conf()});
usleep(300_000);
my $h4 = start_bg($node, "BEGIN; SELECT peek.set_retention('m7', interval '1 hour'); SELECT pg_sleep(2); COMMIT;");
sql(q{INSERT INTO t SELECT i, i % 5, i FROM generate_series(1000, 30000) i});
finish_bg($h4);
sql(q{ALTER SYSTEM RESET pg_peek.view_round_timeout; SELECT pg_reload_conf()});
ok(poll_until($node, $caught_up, 't', 120), 'caught up after timeouts');
ok(all_exact(), 'exact 5');
my $d = start_bg($node, "BEGIN; SELECT peek.drop_view('m9'); SELECT pg_sleep(1); COMMIT;");
sql(q{INSERT INTO t VALUES (106, 1, 1)});
finish_bg($d);
$dropped{m9} = 1;
ok(poll_until($node, $caught_up, 't', 30), 'caught up after drop');
is(sql(q{SELECT count(*) FROM peek.views WHERE state = 'failed'}), '0', 'nothing failed');
is(sql(q{SELECT count(*) FROM peek.objects WHERE name = 'm9'}), '0', 'm9 gone');

# 6. the runtime ended while a view is put off
my $h5 = start_bg($node, "BEGIN; SELECT peek.set_retention('m3', interval '1 hour'); SELECT pg_sleep(3); COMMIT;");
ok(poll_until($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$h5->{application_name}' AND wait_event = 'PgSleep'", 't', 30), 'm3 held');
sql(q{INSERT INTO t VALUES (107, 1, 1)});
usleep(300_000);
$rpid = runtime_pid($node, maintenance_role());
kill 'TERM', $rpid;
finish_bg($h5);
sql(q{INSERT INTO t VALUES (108, 1, 1)});
ok(poll_until($node, $caught_up, 't', 60), 'caught up after the runtime\'s restart');
ok(all_exact(), 'exact after the restart');
done_testing();
