# Standby lag: commit on the primary to visible on a hot standby, idle and
# under the ingest scenario's write load (batched peek.write of 5000 rows
# into an indexed collection, one commit per batch, as test/bench/ingest.sh).
#
# A probe on the standby commits one row on the primary through dblink
# (peek.write returns its time), then times an index peek at that time on
# the standby, which waits until replay brings it and the standby's runtime
# publishes it.  Prints p50/p99 (ms) and the load's updates/s, then the
# aggregate point-lookup throughput of primary + standby against the
# primary alone.
#
# Run with the TAP environment scripts/test sets up (PATH with the server's
# bin, PERL5LIB with the PGXS perl directory and test/perl), as a non-root
# user, e.g.:
#   runuser -u postgres -- env PATH=$PGBIN:$PATH \
#     PERL5LIB=$PGXS_PERL:test/perl PG_PEEK_INTERACTIVE=on \
#     perl test/bench/standby_lag.pl [SECONDS]
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use PgPeekTest;
use IPC::Run;

my $secs = $ARGV[0] // 10;
my $rate = $ARGV[1] // 100_000;    # the load's updates/s (0: unpaced)

my $primary = new_node('primary',
	init => { allows_streaming => 1 },
	conf => [ 'hot_standby_feedback = on' ]);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE EXTENSION dblink;
	CREATE TYPE pt AS (k int, v text);
	SELECT peek.create_collection('ing', 'pt');
	SELECT peek.create_index('ing_by_k', 'ing', ARRAY['k']);
	SELECT peek.create_collection('vis', 'pt');
	SELECT peek.create_index('vis_by_k', 'vis', ARRAY['k']);
	CREATE TABLE bench_runs (updates bigint, secs float8);
	-- paced at rate updates/s (0: as fast as it goes)
	CREATE PROCEDURE bench_ingest(secs float8, batch int, rate int) LANGUAGE plpgsql AS $$
	DECLARE n bigint := 0; t0 timestamptz := clock_timestamp(); ahead float8;
	BEGIN
	  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
	    PERFORM peek.write('ing', array_agg(ROW(k, 'value ' || k)::pt))
	      FROM generate_series(n, n + batch - 1) k;
	    COMMIT;
	    n := n + batch;
	    IF rate > 0 THEN
	      ahead := n::float8 / rate - extract(epoch FROM clock_timestamp() - t0);
	      IF ahead > 0 THEN PERFORM pg_sleep(ahead); END IF;
	    END IF;
	  END LOOP;
	  INSERT INTO bench_runs VALUES (n, extract(epoch FROM clock_timestamp() - t0));
	END $$;
	-- on the standby: write through dblink on the primary, peek here
	CREATE FUNCTION bench_probe(conn text, secs float8, k0 int) RETURNS SETOF float8
	LANGUAGE plpgsql AS $$
	DECLARE t bigint; k int := k0; t0 timestamptz := clock_timestamp(); t1 timestamptz;
	BEGIN
	  WHILE clock_timestamp() < t0 + secs * interval '1 second' LOOP
	    SELECT w INTO t FROM dblink(conn, format(
	      'SELECT peek.write(''vis'', ARRAY[ROW(%s, ''probe'')::pt])', k)) AS r(w bigint);
	    t1 := clock_timestamp();
	    PERFORM count(*) FROM peek.index_peek(NULL::pt, 'vis_by_k', ROW(k), as_of => t);
	    RETURN NEXT extract(epoch FROM clock_timestamp() - t1) * 1000;
	    k := k + 1;
	    PERFORM pg_sleep(0.01);
	  END LOOP;
	END $$;
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby, 'replay');
poll_until($standby, "SELECT count(*) > 0 FROM peek.indexes WHERE name = 'vis_by_k' AND state = 'ready'");

(my $conn = $primary->connstr('postgres')) =~ s/'/''/g;

sub probe
{
	my ($node, $k0) = @_;
	my @ms = sort { $a <=> $b } split /\n/,
	  $node->safe_psql('postgres', "SELECT * FROM bench_probe('$conn', $secs, $k0)",
		timeout => $secs + 120);
	return sprintf('n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms', scalar @ms,
		$ms[ int(@ms * 0.5) ], $ms[ int(@ms * 0.99) ], $ms[-1]);
}

print "mode: ", interactive_mode(), ", load target: $rate updates/s\n";
print "idle, standby:  ", probe($standby, 1), "\n";
print "idle, primary:  ", probe($primary, 1_000_000), "\n";

for my $node ($standby, $primary)
{
	$primary->safe_psql('postgres', 'TRUNCATE bench_runs');
	my $load = start_bg($primary, "CALL bench_ingest($secs + 2, 5000, $rate)",
		timeout => $secs + 120);
	sleep 1;
	my $probe = probe($node, $node == $standby ? 2_000_000 : 3_000_000);
	finish_bg($load);
	my ($n, $s) = split /\|/, $primary->safe_psql('postgres', 'SELECT updates, secs FROM bench_runs');
	printf "load, %-8s %s (load: %.0f updates/s through peek.write)\n", $node->name . ':', $probe,
	  $n / $s;
}

# Aggregate point-lookup throughput: index_peek by a random key of the
# loaded collection through pgbench (-M prepared), on the primary alone and
# then on the primary and the standby at once, the same clients on each.
$primary->wait_for_catchup($standby, 'replay');
my $nkeys = $primary->safe_psql('postgres', 'SELECT updates FROM bench_runs');
my $script = $primary->basedir . '/lookup.sql';
open(my $fh, '>', $script) or die "$script: $!";
print $fh "\\set k random(0, " . ($nkeys - 1) . ")\n"
  . "SELECT k, v FROM peek.index_peek(NULL::pt, 'ing_by_k', ROW(:k::int));\n";
close $fh;
my $clients = $ENV{PG_PEEK_BENCH_CLIENTS} // 4;

# Output goes to files: a harness with scalar outputs only moves while it
# is pumped, so two started together would take turns.
sub start_pgbench
{
	my ($node, $tag) = @_;
	my $out = $primary->basedir . "/pgbench-$tag.out";
	my $run = IPC::Run::start(
		[ 'pgbench', '-n', '-M', 'prepared', '-c', $clients, '-j', $clients,
		  '-T', $secs, '-f', $script, '-d', $node->connstr('postgres') ],
		'>', $out, '2>&1');
	return [ $run, $out ];
}

sub tps
{
	my ($started) = @_;
	IPC::Run::finish($started->[0]);
	return slurp_file($started->[1]) =~ /tps = ([\d.]+)/ ? $1 : 0;
}

my $alone = tps(start_pgbench($primary, 'alone'));
my @both = (start_pgbench($primary, 'primary'), start_pgbench($standby, 'standby'));
my ($on_primary, $on_standby) = map { tps($_) } @both;
printf "point lookups, %d clients per server: primary alone %.0f tps; primary %.0f + standby %.0f = %.0f tps together (%.2fx)\n",
  $clients, $alone, $on_primary, $on_standby, $on_primary + $on_standby,
  ($on_primary + $on_standby) / ($alone || 1);

$standby->stop;
$primary->stop;
