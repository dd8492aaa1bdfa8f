# A round that ran out of time while the maintenance runtime was not
# scheduled (here: stopped, as a loaded machine can leave it) is cancelled
# when the runtime runs again, and retried: it did not go on when
# cancelled, and the view is not failed for it.  Before, the round's kill
# was due at twice its limit from the round's start whether or not the
# cancel had been acted on: a runtime late past both deadlines could end,
# and the view was failed for good ("went on when cancelled") although its
# round never saw the cancel (seen under load with view_round_timeout =
# 20ms and a view over a 29000-row insert; this stop catches it in some
# runs only, as when the alarm is taken depends on the scheduler).  A round
# that does go on after taking the cancel still ends the runtime (regress
# views_attack).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $node = new_node('round_kill_late_cancel', conf => ['pg_peek.view_round_timeout = 1s']);
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE gv AS (g int, v int);
	CREATE TABLE flag (slow bool);
	INSERT INTO flag VALUES (false);
	-- 20 ms a row once the flag is set: a round over 20 new rows takes
	-- about 0.4 s, within its limit
	CREATE FUNCTION slow(v int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT slow FROM public.flag) THEN
			PERFORM pg_sleep(0.02);
		END IF;
		RETURN v;
	END $$;
	SELECT peek.create_collection('c', 'gv');
	SELECT peek.write('c', ARRAY[(1, 1)]::gv[]);
	SELECT peek.create_view('s', $$SELECT g, count(*) AS n, sum(slow(v)) AS s
	                                 FROM peek.persist_peek(NULL::gv, 'c') GROUP BY g$$);
});
my $ready = "SELECT bool_and(state = 'ready' AND lag = 0) FROM peek.views";
ok(poll_until($node, $ready), 'the view is ready');
my $pid = runtime_pid($node, maintenance_role());

sql(q{UPDATE flag SET slow = true});
sql(q{SELECT peek.write('c', array_agg((i % 3, i)::gv)) FROM generate_series(1, 20) i});
# stopped in the round (in slow()'s sleep, holding no lightweight lock)
# past both its limit and twice its limit
ok(poll_until($node, "SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid", 't', 30),
	'the runtime is in the view\'s round');
kill 'STOP', $pid;
sleep 3;
kill 'CONT', $pid;

ok(poll_until($node, $ready, 't', 60), 'the view catches up, retried');
is(sql(q{SELECT state FROM peek.views WHERE name = 's'}), 'ready', 'the view is not failed');
is(runtime_pid($node, maintenance_role()), $pid, 'the runtime was not ended');
is(sql(q{SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT (s.*)::text AS r FROM s) a)
	IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM
	  (SELECT g, count(*) AS n, sum(v) AS s FROM peek.persist_peek(NULL::gv, 'c') GROUP BY g) q) b)}),
	't', 'the view equals its query');

done_testing();
