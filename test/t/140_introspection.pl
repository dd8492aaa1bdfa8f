# Introspection reflects what both runtimes really do (issue: introspection):
# active peeks with what they wait on, holds, sharing counters, duration
# histograms, per-runtime counters and frontiers, hydration progress, the
# collections and indexes views, wait events, and the visibility rules.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $mode  = interactive_mode();
my $serve = serving_role();
my $maint = $mode eq 'on' ? 'maintenance' : 'solo';
my $node  = new_node('introspection');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	SELECT peek.create_collection('kvs', 'kv');
	SELECT peek.create_index('kvs_by_k', 'kvs', ARRAY['k']);
	SELECT peek.write('kvs', ARRAY[(1, 'a'), (2, 'b'), (2, 'b'), (3, 'c')]::kv[]);
});
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'kvs_by_k'", 'ready'),
	'index is ready');

# ---- collections and indexes ------------------------------------------------
is(sql("SELECT state, rows, since, upper, shard_bytes > 0 FROM peek.collections WHERE name = 'kvs'"),
	'ready|4|0|1|t', 'peek.collections: state, current rows, frontiers, shard size');
is(sql("SELECT collection, key, state, rows, updates, batches, bytes > 0, since, upper FROM peek.indexes"),
	'kvs|{k}|ready|4|3|1|t|0|1', 'peek.indexes: rows, updates, batches, bytes, frontiers');
ok(sql("SELECT dsa_bytes > 0 AND dsa_limit = 1073741824 FROM peek.runtimes LIMIT 1") eq 't',
	'peek.runtimes shows the DSA bytes in use and the limit');

# ---- frontiers: one row per object and runtime, following advances ----------
my $nrt = $mode eq 'on' ? 2 : 1;
is(sql("SELECT count(*) FROM peek.frontiers WHERE object = 'kvs_by_k'"), $nrt,
	'one frontier row per runtime for the index');
sql("SELECT peek.advance('kvs', 5)");
ok(poll_until($node,
		"SELECT string_agg(runtime || ':' || upper, ',' ORDER BY runtime) FROM peek.frontiers WHERE object = 'kvs_by_k'",
		$mode eq 'on' ? 'interactive:5,maintenance:5' : 'solo:5'),
	'frontiers follow the advance for every runtime');

# ---- a parked peek: active_peeks, holds, waiters, wait event ----------------
my $counters0 = sql("SELECT peeks_served || ':' || peeks_parked FROM peek.runtimes WHERE role = '$serve'");
my $durations0 = sql("SELECT coalesce(sum(count), 0) FROM peek.peek_durations WHERE kind = 'index'");
my $h = start_bg($node, "SELECT k, v FROM peek.index_peek(NULL::kv, 'kvs_by_k', ROW(2), as_of => 7)");
ok(poll_until($node,
		"SELECT state || ':' || waiting_on || ':' || time || ':' || runtime || ':' || since FROM peek.active_peeks WHERE object = 'kvs_by_k'",
		"waiting:upper:7:$serve:0"),
	'a parked peek is in active_peeks: waiting on the upper, with its time, runtime and since');
is(sql("SELECT string_agg(kind || ':' || coalesce(runtime, '-') || ':' || time, ',' ORDER BY kind, runtime) FROM peek.holds WHERE object = 'kvs_by_k'"),
	$mode eq 'on' ? "peek:interactive:7,standing:interactive:0,standing:maintenance:0,user:-:0"
	              : "peek:solo:7,standing:solo:0,user:-:0",
	'peek.holds shows the user allowance, the standing holds and the peek hold');
is(sql("SELECT sum(waiters) FROM peek.frontiers WHERE object = 'kvs_by_k'"), '1',
	'the frontier counts one waiter');
my $pid = bg_backend_pid($node, $h);
is(sql("SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = $pid"),
	'Extension:Extension', 'the waiting backend shows an Extension wait event');

sql("SELECT peek.advance('kvs', 8)");
my ($rc, $out) = finish_bg($h);
is($out, "2|b\n2|b", 'the peek was answered after the advance');
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks", '0'), 'and left active_peeks');
is(sql("SELECT count(*) FROM peek.holds WHERE kind = 'peek'"), '0', 'and its hold is gone');
is(sql("SELECT coalesce(sum(waiters), 0) FROM peek.frontiers"), '0', 'and no waiter is left');
my ($served0, $parked0) = split /:/, $counters0;
is(sql("SELECT (peeks_served - $served0) || ':' || (peeks_parked - $parked0) FROM peek.runtimes WHERE role = '$serve'"),
	'1:1', "the $serve runtime counted it parked and served");

# ---- a canceled peek disappears ---------------------------------------------
my $h2 = start_bg($node, "SELECT * FROM peek.index_peek(NULL::kv, 'kvs_by_k', as_of => 100)");
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks WHERE waiting_on = 'upper'", '1'),
	'a second peek is parked');
my $pid2 = bg_backend_pid($node, $h2);
sql("SELECT pg_cancel_backend($pid2)");
finish_bg($h2);
ok(poll_until($node, "SELECT count(*) FROM peek.active_peeks", '0'), 'the canceled peek left active_peeks');
is(sql("SELECT count(*) FROM peek.holds WHERE kind = 'peek'"), '0', 'and its hold is gone');

# ---- durations and sharing: N index peeks -----------------------------------
# 25 routed through the serving runtime (pg_peek.fast_path off), then 25
# gated by the backend itself, which resolves no runtime's shared handle
my $before_sharing = sql("SELECT sum(handle_pins) FROM peek.arrangement_sharing WHERE index = 'kvs_by_k'");
my $fast0 = sql("SELECT peeks_fast FROM peek.runtimes WHERE role = '$serve'");
sql("SET pg_peek.fast_path = off; SELECT count(*) FROM generate_series(1, 25) g, LATERAL peek.index_peek(NULL::kv, 'kvs_by_k', ROW(g % 4)) p");
my $routed_pins = sql("SELECT sum(handle_pins) - $before_sharing FROM peek.arrangement_sharing WHERE index = 'kvs_by_k'");
sql("SELECT count(*) FROM generate_series(1, 25) g, LATERAL peek.index_peek(NULL::kv, 'kvs_by_k', ROW(g % 4)) p");
is(sql("SELECT sum(count) - $durations0 FROM peek.peek_durations WHERE kind = 'index'"), '51',
	'peek_durations counted every answered index peek of both routes (25 + 25 + 1; not the canceled one)');
is(sql("SELECT peeks_fast - $fast0 FROM peek.runtimes WHERE role = '$serve'"), '25',
	'peeks_fast counted the 25 the backend gated itself');
ok(sql("SELECT bool_and(duration_ns > 0 AND duration_ns & (duration_ns - 1) = 0) FROM peek.peek_durations") eq 't',
	'duration buckets are powers of two');
is(sql("SELECT sum(live_handles) FROM peek.arrangement_sharing"), '0',
	'no live handle once the peeks are over');
is(sql("SELECT bool_and(handle_pins = handle_releases) FROM peek.arrangement_sharing"), 't',
	'every pin was released');
is(sql("SELECT sum(handle_pins) - $before_sharing FROM peek.arrangement_sharing WHERE index = 'kvs_by_k'"),
	$routed_pins, 'the fast-path peeks resolved no runtime handle');
if ($mode eq 'on')
{
	is($routed_pins, '25', 'the interactive runtime resolved one shared handle per routed peek');
}
else
{
	is($routed_pins, '0', 'solo peeks use local handles: no sharing events');
}

# ---- hydration progress of a large index ------------------------------------
sql(q{
	SELECT peek.create_collection('big', 'kv');
	SELECT peek.write('big', array_agg((g, repeat('x', 20))::kv)) FROM generate_series(1, 400000) g
	 GROUP BY g / 100000;
});
# A hydration takes a fraction of a second: a watcher polls the view every
# millisecond from before create_index, and reports the progress it saw
# last (the total is the shard's estimated size until the count is known).
sql(q{
	CREATE FUNCTION watch_hydration(idx text) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE
	  r record;
	  seen text;
	  deadline timestamptz := clock_timestamp() + interval '60 s';
	BEGIN
	  LOOP
	    SELECT rows_loaded, rows_total INTO r FROM peek.hydration_progress WHERE index = idx;
	    IF FOUND THEN
	      IF r.rows_total <= 0 OR r.rows_loaded > r.rows_total THEN
	        RETURN format('bad progress %s of %s', r.rows_loaded, r.rows_total);
	      END IF;
	      seen := 'hydrating';
	    END IF;
	    IF (SELECT state FROM peek.indexes WHERE name = idx) = 'ready' THEN
	      RETURN coalesce(seen, 'ready, never seen hydrating');
	    END IF;
	    IF clock_timestamp() > deadline THEN
	      RETURN 'timed out';
	    END IF;
	    PERFORM pg_sleep(0.001);
	  END LOOP;
	END $$;
});
my $watcher = start_bg($node, "SELECT watch_hydration('big_by_k')");
sql("SELECT peek.create_index('big_by_k', 'big', ARRAY['k'])");
my (undef, $watched) = finish_bg($watcher, 90);
is($watched, 'hydrating', 'hydration_progress shows the large index hydrating');
ok(poll_until($node, "SELECT state FROM peek.indexes WHERE name = 'big_by_k'", 'ready', 120),
	'the large index becomes ready');
is(sql("SELECT count(*) FROM peek.hydration_progress"), '0', 'and hydration_progress is empty after');

# ---- visibility ---------------------------------------------------------------
sql(q{
	CREATE ROLE intro_stranger LOGIN;
	CREATE ROLE intro_monitor LOGIN IN ROLE pg_read_all_stats;
	GRANT USAGE ON SCHEMA peek TO intro_stranger, intro_monitor;
});
my $views = "SELECT (SELECT count(*) FROM peek.collections) || ':' || (SELECT count(*) FROM peek.indexes)"
  . " || ':' || (SELECT count(*) FROM peek.frontiers) || ':' || (SELECT count(*) > 0 FROM peek.holds)";
is($node->safe_psql('postgres', $views, extra_params => [ '-U', 'intro_stranger' ]),
	'0:0:0:false', 'a role that may not peek the objects sees no rows about them');
is($node->safe_psql('postgres', $views, extra_params => [ '-U', 'intro_monitor' ]),
	'2:2:' . (4 * $nrt) . ':true', 'a member of pg_read_all_stats sees them all');

$node->stop;
done_testing();
