# Maintenance in bounded steps:
#  * merges are amortized: while a background writer keeps appending
#    batches (so merges are always in progress), every index peek at many
#    times equals an oracle table holding the same updates;
#  * a seal is published while a big merge is pending: a probe's write is
#    visible long before the merge of two big batches completes (the merge
#    is still pending when the probe's peek returns), and completing a big
#    merge holds no seal back either (probes throughout a merge of 2M
#    updates are all visible promptly), and the memory consolidation
#    frees is given back;
#  * the maintenance runtime of split mode runs at a lower CPU priority
#    (pg_peek.maintenance_nice, applied again on reload); the solo runtime
#    and the interactive runtime keep the server's.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $mode = interactive_mode();
my $node = new_node('bounded');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# ---- CPU priority --------------------------------------------------------------

# a process's niceness: field 19 of /proc/<pid>/stat (after the command)
sub niceness
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or die "no /proc/$pid/stat: $!";
	my $stat = <$fh>;
	close $fh;
	$stat =~ s/^.*\)\s+//;
	return (split /\s+/, $stat)[16];
}

sql('CREATE EXTENSION pg_peek');
my $postmaster = niceness((split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0]);
if ($mode eq 'on')
{
	is(niceness(runtime_pid($node, 'maintenance')), $postmaster + 5,
		'the maintenance runtime runs 5 nicer than the server by default');
	is(niceness(runtime_pid($node, 'interactive')), $postmaster,
		'the interactive runtime keeps the server priority');
	$node->append_conf('postgresql.conf', 'pg_peek.maintenance_nice = 9');
	$node->reload;
	my $maint = runtime_pid($node, 'maintenance');
	my $seen;
	for (1 .. 100)
	{
		$seen = niceness($maint);
		last if $seen == $postmaster + 9;
		usleep(100_000);
	}
	is($seen, $postmaster + 9, 'a reload applies a new pg_peek.maintenance_nice');
}
else
{
	is(niceness(runtime_pid($node, 'solo')), $postmaster,
		'the solo runtime serves peeks too: it keeps the server priority');
}

# ---- answers equal an oracle while merges are in progress ----------------------

sql(q{
	CREATE TYPE kv AS (k int, v int);
	SELECT peek.create_collection('churn', 'kv');
	SELECT peek.create_index('churn_by_k', 'churn', ARRAY['k']);
	CREATE TABLE oracle (k int, v int, t bigint, d int);

	-- batch i inserts 400 rows (v unique) and deletes the even rows of
	-- batch i - 3, so no count ever goes below zero
	CREATE PROCEDURE churn(first int, last int) LANGUAGE plpgsql AS $$
	DECLARE
		t bigint;
		ins kv[];
		del kv[];
	BEGIN
		FOR i IN first .. last LOOP
			SELECT array_agg(((i * 7919 + j * 104729) % 997, i * 1000 + j)::kv)
			  INTO ins FROM generate_series(0, 399) j;
			SELECT coalesce(array_agg(((b * 7919 + j * 104729) % 997, b * 1000 + j)::kv),
			                '{}')
			  INTO del FROM (SELECT i - 3 AS b) x, generate_series(0, 399, 2) j
			 WHERE b >= first;
			t := peek.write('churn', ins, del);
			INSERT INTO oracle SELECT (r).k, (r).v, t, 1 FROM unnest(ins) r;
			INSERT INTO oracle SELECT (r).k, (r).v, t, -1 FROM unnest(del) r;
			COMMIT;
		END LOOP;
	END $$;

	-- the contents at t, and for one key, as text from the index and the oracle
	CREATE FUNCTION peek_text(t bigint, key int) RETURNS text LANGUAGE sql AS $$
		SELECT coalesce(string_agg(k || ':' || v, ';' ORDER BY k, v), '')
		  FROM peek.index_peek(NULL::kv, 'churn_by_k',
		                       CASE WHEN key IS NULL THEN NULL ELSE ROW(key) END,
		                       as_of => t)
	$$;
	CREATE FUNCTION oracle_text(at bigint, key int) RETURNS text LANGUAGE sql AS $$
		SELECT coalesce(string_agg(k || ':' || v, ';' ORDER BY k, v), '')
		  FROM (SELECT k, v FROM oracle
		         WHERE t <= at AND (key IS NULL OR k = key)
		         GROUP BY k, v HAVING sum(d) > 0) c
	$$;
});
sql('CALL churn(0, 199)');    # a history to merge: 200 batches
my $writer = start_bg($node, 'CALL churn(200, 799)', timeout => 600);

my ($checks, $bad, $seen_batches) = (0, 0, 0);
for my $round (1 .. 12)
{
	my $upper = sql("SELECT upper FROM peek.indexes WHERE name = 'churn_by_k'");
	$seen_batches = sql("SELECT greatest($seen_batches, batches) FROM peek.indexes WHERE name = 'churn_by_k'");
	for my $i (0 .. 5)
	{
		my $t = int($upper * ($i + 1) / 7);
		my $key = ($round * 31 + $i * 17) % 997;
		for my $k ('NULL', $key)
		{
			my $r = sql("SELECT peek_text($t, $k) = oracle_text($t, $k)");
			$checks++;
			if ($r ne 't')
			{
				$bad++;
				diag("index and oracle differ at t = $t, key $k");
			}
		}
	}
	usleep(200_000);
}
my ($rc, $out, $err) = finish_bg($writer, 600);
is($rc, 0, 'the background writer appended 600 batches') or diag($err);
is($bad, 0, "$checks peeks while merges ran equal the oracle");
ok($seen_batches >= 2, "the index was published with several batches ($seen_batches)");
my $final = sql("SELECT upper - 1 FROM peek.indexes WHERE name = 'churn_by_k'");
is(sql("SELECT peek_text($final, NULL) = oracle_text($final, NULL)"), 't',
	'the final contents equal the oracle');
# A batch joins the next one up once the merge costs at most 8 times its
# entries (or 64k entries in all).  Two that stay apart hold more than 64k
# together, the upper more than 8 times the lower (so above 57k); a third
# above them would hold more than 8 times that: of 480k updates, two
# batches at most stay apart.
ok(poll_until($node, "SELECT batches <= 2 FROM peek.indexes WHERE name = 'churn_by_k'"),
	'quiet rounds merge the index down to the batches no merge pays for');

# ---- a seal is published while a big merge is pending ---------------------------

sql(q{
	SELECT peek.create_collection('big', 'kv');
	SELECT peek.create_index('big_by_k', 'big', ARRAY['k']);
	SELECT peek.write('big', (SELECT array_agg((g, g)::kv) FROM generate_series(1, 500000) g));
	CREATE TABLE probe_log (probe_start timestamptz, probe_ms float8, batches int);

	-- a second big batch (its merge with the first starts as it is
	-- placed, before it is visible), then at once a probe's write, timed
	-- until its peek returns: a merge of 1M updates running flat out (as
	-- the solo runtime does between its peeks) takes some tens of ms
	CREATE PROCEDURE big_then_probe() LANGUAGE plpgsql AS $$
	DECLARE
		t bigint;
		t1 timestamptz;
	BEGIN
		t := peek.write('big', (SELECT array_agg((g, -g)::kv) FROM generate_series(1, 500000) g));
		COMMIT;
		PERFORM count(*) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(1), as_of => t);
		t1 := clock_timestamp();
		t := peek.write('big', ARRAY[(-1, 0)]::kv[]);
		COMMIT;
		PERFORM count(*) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(-1), as_of => t);
		INSERT INTO probe_log
		SELECT t1, extract(epoch FROM clock_timestamp() - t1) * 1000, batches
		  FROM peek.indexes WHERE name = 'big_by_k';
		COMMIT;
	END $$;
});
ok(poll_until($node, "SELECT batches = 1 FROM peek.indexes WHERE name = 'big_by_k'"),
	'the first big batch is arranged');
sql('CALL big_then_probe()');
# (the probe's batch stays beside the merged one: one update does not pay
# for rewriting 1M, spine_start_tidy_merge)
ok(poll_until($node, "SELECT batches = 2 AND updates = 1000001 FROM peek.indexes WHERE name = 'big_by_k'", 't', 120),
	'the big merge completes');
my ($probe_ms, $batches, $merge_ms) = split /\|/,
  sql('SELECT probe_ms, batches, extract(epoch FROM clock_timestamp() - probe_start) * 1000 FROM probe_log');
note sprintf('probe visible after %.1f ms; the merges took %.0f ms in all', $probe_ms, $merge_ms);
ok($batches >= 3, "the big merge was still pending when the probe's write was visible ($batches batches)");
ok($probe_ms < $merge_ms / 3,
	sprintf('the probe was visible (%.1f ms) long before the merges finished (%.0f ms)',
		$probe_ms, $merge_ms));
is(sql("SELECT count(*) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(7))"), '2',
	'the merged index has both big batches');

# ---- completing a big merge is bounded steps too --------------------------------

# A third big batch starts a merge of 2M updates.  Probes every 10 ms from
# its seal until the merge is complete show that no round, the one that
# completes it included, holds a seal back for long: the merge writes its
# output batch (counted in dsa_bytes while unpublished) a step at a time.
sql(q{
	CREATE TABLE probes (ms float8);
	CREATE TABLE merge_seen (pending bool);
	CREATE FUNCTION unpublished_bytes() RETURNS bigint LANGUAGE sql AS $$
		SELECT (SELECT dsa_bytes FROM peek.runtimes LIMIT 1) - (SELECT sum(bytes) FROM peek.indexes)
	$$;
	CREATE PROCEDURE probe_until_merged() LANGUAGE plpgsql AS $$
	DECLARE
		t bigint;
		t0 timestamptz := clock_timestamp();
		t1 timestamptz;
		k int := -100;
		pending bool := false;
	BEGIN
		t := peek.write('big', (SELECT array_agg((g, 2 * g)::kv) FROM generate_series(1, 1000000) g));
		COMMIT;
		-- arranging the batch itself is not a merge: wait for it
		PERFORM count(*) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(1), as_of => t);
		LOOP
			k := k - 1;
			t1 := clock_timestamp();
			t := peek.write('big', ARRAY[(k, 0)]::kv[]);
			COMMIT;
			PERFORM count(*) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(k), as_of => t);
			INSERT INTO probes VALUES (extract(epoch FROM clock_timestamp() - t1) * 1000);
			COMMIT;
			-- the merge's output is 2M updates: 100 MB while it is pending
			IF unpublished_bytes() > 50000000 THEN
				pending := true;
			ELSIF pending OR clock_timestamp() > t0 + interval '60 s' THEN
				EXIT;
			END IF;
			PERFORM pg_sleep(0.01);
		END LOOP;
		INSERT INTO merge_seen VALUES (pending);
	END $$;
});
sql('CALL probe_until_merged()');
is(sql('SELECT pending FROM merge_seen'), 't',
	'the probes ran from the pending merge to its completion');
my ($nprobes, $max_ms, $p50_ms) = split /\|/, sql(
	'SELECT count(*), max(ms), percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FROM probes');
note sprintf('%d probes until the merge of 2M updates completed: p50 %.1f ms, max %.1f ms',
	$nprobes, $p50_ms, $max_ms);
# (a loaded machine slows every probe: the bound follows their median)
my $bound_ms = 10 * $p50_ms > 250 ? 10 * $p50_ms : 250;
ok($max_ms < $bound_ms,
	sprintf('every probe was visible promptly, the merge completion included (max %.1f ms, bound %.0f ms)',
		$max_ms, $bound_ms));
is(sql("SELECT string_agg(v::text, ',' ORDER BY v) FROM peek.index_peek(NULL::kv, 'big_by_k', ROW(7))"),
	'-7,7,14', 'the merged index has the three big batches');

# ---- memory consolidation frees is given back -----------------------------------

# A merge's output is allocated for its inputs' sizes; one that
# consolidation shrank is rewritten.  Half of 100k rows are retracted with
# the since past it, so the next merge consolidates 150k updates to 50k.
sql(q{
	SELECT peek.create_collection('shrink', 'kv');
	SELECT peek.create_index('shrink_by_k', 'shrink', ARRAY['k']);
	SELECT peek.write('shrink', (SELECT array_agg((g, g)::kv) FROM generate_series(1, 100000) g));
});
ok(poll_until($node, "SELECT updates = 100000 FROM peek.indexes WHERE name = 'shrink_by_k'"),
	'the rows are arranged');
my $bytes_per_update = sql("SELECT bytes::float8 / updates FROM peek.indexes WHERE name = 'shrink_by_k'");
sql(q{
	BEGIN;
	SELECT peek.allow_compaction('shrink_by_k',
		peek.write('shrink', '{}'::kv[],
		           (SELECT array_agg((g, g)::kv) FROM generate_series(1, 100000, 2) g)));
	COMMIT;
});
ok(poll_until($node, "SELECT updates = 50000 AND bytes::float8 / updates < 1.25 * $bytes_per_update
                        FROM peek.indexes WHERE name = 'shrink_by_k'"),
	'the consolidated batch keeps no slack');
is(sql("SELECT count(*) FROM peek.index_peek(NULL::kv, 'shrink_by_k')"), '50000',
	'the shrunk index has the rows left');

# ---- a runtime stopped mid-merge leaves no memory behind -----------------------
# SIGTERM takes effect at a merge step's interrupt check: the unfinished
# output, a new batch not placed yet and merge results not published yet are
# the stopped runtime's to free; the published lists' pins are its
# successor's.  Rounds of 150k inserts with deletes of the round before, so
# consolidation shrinks the merges, each cut short at a random point.
my $role = interactive_mode() eq 'on' ? 'maintenance' : 'solo';
ok(poll_until($node, "SELECT count(*) = 1 FROM peek.runtimes WHERE role = '$role' AND state = 'running' AND pid IS NOT NULL"),
	'the runtime doing maintenance runs');
sql(q{
	SELECT peek.create_collection('cut', 'kv');
	SELECT peek.create_index('cut_by_k', 'cut', ARRAY['k']);
	SELECT peek.create_index('cut_by_v', 'cut', ARRAY['v']);
});
srand(245);
for my $r (1 .. 6)
{
	my $lo = $r * 1_000_000;
	my $deletes = $r > 1
	  ? "(SELECT array_agg((g, g)::kv) FROM generate_series($lo - 1000000, $lo - 1000000 + 99999) g)"
	  : "'{}'::kv[]";
	sql("SELECT peek.write('cut', (SELECT array_agg((g, g)::kv) FROM generate_series($lo, $lo + 149999) g), $deletes)");
	my $pid = runtime_pid($node, $role);
	die "no $role runtime is running\n" unless $pid;
	usleep(int(rand(400_000)));
	kill 'TERM', $pid;
	ok(poll_until($node, "SELECT count(*) = 1 FROM peek.runtimes WHERE role = '$role' AND state = 'running' AND pid <> $pid"),
		"round $r: the runtime stopped mid-work is back");
}
# the last runtime re-hydrates the indexes: until it publishes, they show
# what a stopped runtime published last (an earlier time)
ok(poll_until($node, "SELECT bool_and(state = 'ready' AND batches = 1 AND upper = "
		  . "(SELECT upper FROM peek.collections WHERE name = 'cut')) FROM peek.indexes WHERE name LIKE 'cut_by_%'",
		't', 120),
	'the indexes settle to one batch each, at the collection\'s upper');
ok(poll_until($node, "SELECT dsa_bytes = (SELECT sum(bytes) FROM peek.indexes) FROM peek.runtimes WHERE role = '$role'"),
	'the area holds exactly the published arrangements: nothing leaked by the stopped runtimes')
  or diag(sql("SELECT dsa_bytes, (SELECT sum(bytes) FROM peek.indexes) FROM peek.runtimes WHERE role = '$role'"));
my $last = sql("SELECT upper - 1 FROM peek.collections WHERE name = 'cut'");
is(sql("SELECT count(*) FROM peek.index_peek(NULL::kv, 'cut_by_k', as_of => $last)"), 6 * 50000 + 100000,
	'cut_by_k has the rows left');

$node->stop;
done_testing();
