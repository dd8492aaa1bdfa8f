# A fold sorts its rows in temporary files past maintenance_work_mem, and
# so does a captured TRUNCATE's retraction: past temp_file_limit (100kB
# here, a few thousand rows) the sort fails.  That is the server's limit,
# not the collection's fault: the fold or the retraction is retried (as
# for a conflict), and nothing fails or is lost.  Before, such a fold in
# the runtime failed its collection for good, and the retraction its
# source.  With the limit raised, every one goes through:
#  * a time the runtime folds itself (9,000 rows, within a step), and
#    compacts to;
#  * a time a fold worker folds (30,000 rows);
#  * a source's load folded, then a TRUNCATE of its table captured.
# Each is tried again a second later: an error that lasts is not met as
# fast as the runtime goes round.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use PgPeekTest;

my $node = new_node('fold_temp_limit',
	conf => ["maintenance_work_mem = '1MB'", "temp_file_limit = '100kB'"]);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TYPE kv AS (k int, v text);
	CREATE TABLE t (k int PRIMARY KEY, v text);
	INSERT INTO t SELECT g, repeat('x', 200) || g FROM generate_series(1, 9000) g;});

sub rows { return "ARRAY(SELECT (g, repeat('x', 200) || g)::kv FROM generate_series(1, $_[0]) g)"; }

# (with work_mem enough for a peek to sum the 30,000 rows no fold took in
# in memory: past it, it would sort them in temporary files, which the
# limit refuses)
sub digest
{
	my ($type, $name, $t) = @_;
	return sql("SET statement_timeout = '60s'; SET work_mem = '64MB'; "
		  . "SELECT count(*) || ' ' || coalesce(sum(k), 0) "
		  . "FROM peek.persist_peek(NULL::$type, '$name', as_of => $t)");
}

sub none_failed
{
	my ($what) = @_;
	is(sql("SELECT string_agg(name || ': ' || failure, ', ') FROM peek.objects WHERE failure IS NOT NULL"),
		'', "$what: nothing failed");
	return;
}

sub limit_hits
{
	my ($what) = @_;
	return scalar grep { /$what.*temporary file size exceeds temp_file_limit \(100kB\)/ }
	  split /\n/, slurp_file($node->logfile);
}

# a process's CPU time (user and system), from /proc
sub cpu_seconds
{
	my ($pid) = @_;
	my @stat = split / /, (slurp_file("/proc/$pid/stat") =~ s/^.*\) //sr);
	return ($stat[11] + $stat[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK);
}

sql("SELECT peek.create_collection('r', 'kv'); SELECT peek.create_collection('w', 'kv')");
sql("SELECT peek.append('r', " . rows(9000) . ", 1, 1); SELECT peek.append('w', " . rows(30000) . ", 1, 1)");
sql("SELECT peek.advance('r', 2); SELECT peek.advance('w', 2); SELECT peek.allow_compaction('r', 1)");
sql("SELECT peek.create_source('src', 't')");
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 'src'", 't', 120),
	'the source is loaded');
my $loaded = sql("SELECT upper - 1 FROM peek.collections WHERE name = 'src'");
sql('TRUNCATE t');

# the folds and the retraction meet the limit, and are retried
for my $what ('will be retried', 'gave way', 'could not decode')
{
	my $deadline = time() + 120;
	sleep 1 while limit_hits($what) == 0 && time() < $deadline;
	cmp_ok(limit_hits($what), '>', 0, "limited: '$what' at temp_file_limit");
}
none_failed('limited');
# retried a second or so later, not as fast as the runtime goes round (it
# was hundreds of times a second): at most one try a second each (r's
# fold and compaction, w's, the source's), doubled
# and the runtime sleeps meanwhile: r's fold, alone in the runtime (its
# workers gave way), waited its second awake, going round with a wait of
# 0 (half a core or more of CPU, 80,000 rounds a second on an idle
# machine); now a few hundredths of a second over the 3 s
my $runtime = sql("SELECT pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo')");
my $hits = limit_hits('');
my $cpu = cpu_seconds($runtime);
my $start = time();
sleep 3;
cmp_ok(limit_hits('') - $hits, '<=', 2 * 4 * (time() - $start + 1),
	'limited: the four are retried at most about once a second');
cmp_ok(cpu_seconds($runtime) - $cpu, '<', 0.2 * (time() - $start),
	'limited: the runtime does not go round while they wait');
is(sql("SELECT count(*) FROM peek.objects WHERE base_time >= 1 AND name IN ('r', 'w')"), '0',
	'limited: no base took the time in');
is(digest('kv', 'r', 1), '9000 ' . (9000 * 9001 / 2), 'limited: r at 1');
is(digest('kv', 'w', 1), '30000 ' . (30000 * 30001 / 2), 'limited: w at 1');
is(digest('t', 'src', $loaded), '9000 ' . (9000 * 9001 / 2), 'limited: the source as loaded');

sql("ALTER SYSTEM SET temp_file_limit = -1; SELECT pg_reload_conf()");
ok(base_reaches($node, 'r', 1, 120), 'unlimited: r\'s base takes the time in');
ok(poll_until($node, "SELECT since = 1 FROM peek.objects WHERE name = 'r'", 't', 120),
	'unlimited: r is compacted');
ok(base_reaches($node, 'w', 1, 120), 'unlimited: w\'s base takes the time in');
ok(poll_until($node, "SELECT rows = 0 FROM peek.collections WHERE name = 'src'", 't', 120),
	'unlimited: the TRUNCATE is captured');
none_failed('unlimited');
is(digest('kv', 'r', 1), '9000 ' . (9000 * 9001 / 2), 'unlimited: r at 1');
is(digest('kv', 'w', 1), '30000 ' . (30000 * 30001 / 2), 'unlimited: w at 1');
is(digest('t', 'src', $loaded), '9000 ' . (9000 * 9001 / 2), 'unlimited: the source as loaded');
is(digest('t', 'src', 'NULL'), '0 0', 'unlimited: the source truncated');

$node->stop('fast');
done_testing();
