# A lazy view's learning step runs its owner's functions (dataflow/learn.c)
# and is bounded by pg_peek.view_round_timeout as a round is (round.c): a
# role that is no superuser, in its own schema, makes a view whose
# "immutable" function sleeps for an hour once a flag of its own is set,
# for every group but the one its rounds touch.  Before, the maintenance
# runtime slept in the learning step with no limit (pg_cancel_backend is
# ignored by a runtime), and another role's writes were never published.
# Now the step is cancelled, the view stops learning (logged), its rounds
# go on within their limit, not counted as timed out, and the view equals
# its query at every time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('learn_step_timeout', conf => ['pg_peek.view_round_timeout = 3s']);
sub sql { return $node->safe_psql('postgres', $_[0]); }
sub as_alice { return $node->safe_psql('postgres', "SET search_path = alice, public; $_[0]", extra_params => ['-U', 'alice']); }
sub as_bob { return $node->safe_psql('postgres', "SET search_path = bob, public; $_[0]", extra_params => ['-U', 'bob']); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT USAGE ON SCHEMA peek TO alice, bob;
	CREATE SCHEMA alice AUTHORIZATION alice;
	CREATE SCHEMA bob AUTHORIZATION bob;
});
as_alice(q{
	CREATE TYPE gv AS (g int, v int);
	CREATE TABLE flag (slow bool);
	INSERT INTO flag VALUES (false);
	CREATE FUNCTION slow(g int, v int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
	BEGIN
		IF g <> 1 AND (SELECT slow FROM alice.flag) THEN
			PERFORM pg_sleep(3600);
		END IF;
		RETURN v;
	END $$;
	SELECT peek.create_collection('c', 'gv');
	-- 300 groups of 100 rows (learned between rounds)
	SELECT peek.write('c', array_agg((i % 300, i)::gv)) FROM generate_series(1, 30000) i;
	SELECT peek.create_view('s', $$SELECT g, count(*) AS n, sum(slow(g, v)) AS s
	                                 FROM peek.persist_peek(NULL::gv, 'c') GROUP BY g$$);
});
as_bob(q{
	CREATE TYPE kv AS (k int, v int);
	SELECT peek.create_collection('b', 'kv');
	SELECT peek.write('b', ARRAY[(1, 1)]::kv[]);
	SELECT peek.create_view('bs', $$SELECT k, sum(v) AS s FROM peek.persist_peek(NULL::kv, 'b') GROUP BY k$$);
});
my $ready = "SELECT bool_and(state = 'ready' AND lag = 0) FROM peek.views";
ok(poll_until($node, $ready), 'both views are ready');

# the first round after the hydration starts the view lazy, learning the
# groups it did not touch: each calls slow(), now an hour long
my $log_offset = -s $node->logfile;
as_alice(q{
	UPDATE flag SET slow = true;
	SELECT peek.write('c', ARRAY[(1, 1)]::gv[]);
});
ok( poll_until(
		$node, "SELECT count(*) > 0 FROM pg_stat_activity
		         WHERE backend_type IN ('pg_peek maintenance', 'pg_peek solo') AND wait_event = 'PgSleep'"),
	'the runtime runs the slow function in a learning step');
as_bob("SELECT peek.write('b', ARRAY[(2, 2)]::kv[])");
ok(poll_until($node, "SELECT count(*) = 2 FROM bob.bs", 't', 30),
	"another role's write is maintained within a while");
like(substr(slurp_file($node->logfile), $log_offset),
	qr/pg_peek view \d+ stops learning its groups between rounds: a step ran longer than its limit \(3000 ms/,
	'the learning step was cancelled at the limit');

# its rounds go on, learning nothing more, not counted as timed out
as_alice("SELECT peek.write('c', ARRAY[(1, 2)]::gv[])");
ok(poll_until($node, $ready), 'the view takes a write after the cancelled step');
is(sql("SELECT bool_or(learning) FROM peek.dataflow_operators WHERE view = 's'"), 'f',
	'the view learns no more');
is(sql("SELECT count(*) FROM peek.view_round_status() WHERE timeouts > 0"), '0',
	'no round counted as timed out');
is(sql("SELECT state FROM peek.views WHERE name = 's'"), 'ready', 'the view did not fail');

# the view at every time against its query (slow() returns its v)
sub bad_times
{
	return sql(q{
		SELECT count(*) FROM generate_series(0, (SELECT upper - 1 FROM peek.views WHERE name = 's')) t
		 WHERE EXISTS (
		   (SELECT * FROM peek.persist_peek(NULL::alice.s, 's', as_of => t)
		    EXCEPT ALL
		    SELECT g, count(*), sum(v) FROM peek.persist_peek(NULL::alice.gv, 'c', as_of => t) GROUP BY g)
		   UNION ALL
		   (SELECT g, count(*), sum(v) FROM peek.persist_peek(NULL::alice.gv, 'c', as_of => t) GROUP BY g
		    EXCEPT ALL
		    SELECT * FROM peek.persist_peek(NULL::alice.s, 's', as_of => t)))});
}
as_alice(q{
	UPDATE flag SET slow = false;
	SELECT peek.write('c', ARRAY[(7, -1), (8, -2)]::gv[], ARRAY[(7, 7)]::gv[]);
});
ok(poll_until($node, $ready), 'the view takes writes to groups it had not learned');
is(bad_times(), '0', 'the view equals its query at every time');
is(sql("SELECT n FROM alice.s WHERE g = 7"), '100', 'group 7 gained a row and lost one');

done_testing();
