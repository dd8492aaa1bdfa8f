# PgPeekTest: small helpers for pg_peek's TAP tests (test/t/*.pl), built on
# PostgreSQL::Test::Cluster. scripts/test puts this directory and the PGXS
# perl directory on PERL5LIB and sets PG_PEEK_INTERACTIVE to on or off.
#
#   use PgPeekTest;
#   my $node = new_node('main');                 # pg_peek preloaded, started
#   ok(poll_until($node, 'SELECT count(*) FROM peek.runtimes', '2'));
#   my $pid = runtime_pid($node, serving_role());
#   my $h = start_bg($node, "SELECT * FROM peek.persist_peek(NULL::t, 'c', as_of => 5)");
#   ...                                          # make time 5 complete
#   my ($rc, $out, $err) = finish_bg($h);

package PgPeekTest;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);

our @EXPORT = qw(
  new_node poll_until runtime_pid serving_role interactive_mode
  start_bg finish_bg bg_done bg_backend_pid bg_session
  sql_error stop_runtime item_setup base_reaches commit_to_visible_ms
  steady_procedure maintenance_role new_standby standby_publisher_pid
  log_is_clean sorted_in_temp_files caught_up_sql restart_runtime
  views_equal_queries sources_caught_up source_off source_at source_off_at
  sources_exact
  pgbench_start pgbench_finish
);

# 'on' or 'off': the pg_peek.interactive mode this run tests.
sub interactive_mode
{
	my $mode = $ENV{PG_PEEK_INTERACTIVE};
	$mode = 'on' if !defined $mode || $mode eq '';
	die "PG_PEEK_INTERACTIVE must be 'on' or 'off', not '$mode'\n"
	  unless $mode eq 'on' || $mode eq 'off';
	return $mode;
}

# The role of the runtime that serves peeks in this mode.
sub serving_role
{
	return interactive_mode() eq 'on' ? 'interactive' : 'solo';
}

# The role of the runtime that maintains (and, on a standby, publishes what
# replay changed) in this mode.
sub maintenance_role
{
	return interactive_mode() eq 'on' ? 'maintenance' : 'solo';
}

# new_standby($primary, $name): a streaming standby of $primary (made with
# init => { allows_streaming => 1 }) from a new backup, started and caught
# up with replay.
sub new_standby
{
	my ($primary, $name) = @_;
	$primary->backup("${name}_backup");
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, "${name}_backup", has_streaming => 1);
	$standby->start;
	$primary->wait_for_catchup($standby, 'replay');
	return $standby;
}

# standby_publisher_pid($primary, $standby): the pid of the standby's
# runtime that publishes what replay changed (checked to run), once the
# standby caught up with replay; stop_runtime stops it.
sub standby_publisher_pid
{
	my ($primary, $standby) = @_;
	my $role = maintenance_role();
	my $pid = runtime_pid($standby, $role);
	ok($pid, "the standby's $role runtime runs");
	$primary->wait_for_catchup($standby, 'replay');
	return $pid;
}

# new_node($name, %opts): init a node (UTF8, C locale), configure pg_peek and
# start it. Options:
#   conf     => extra postgresql.conf text (string, or ref to a list of lines)
#   no_start => 1: return the node without starting it
#   no_peek  => 1: do not preload pg_peek (nor set pg_peek.interactive)
#   init     => { ... }: extra arguments for $node->init
#   initdb_extra => [ ... ]: extra initdb arguments
sub new_node
{
	my ($name, %opts) = @_;

	my $node = PostgreSQL::Test::Cluster->new($name);
	my %init = %{ $opts{init} // {} };
	$init{extra} = [
		'--encoding=UTF8', '--locale=C',
		@{ $init{extra} // [] },
		@{ $opts{initdb_extra} // [] }
	];
	$node->init(%init);

	my @conf;
	if (!$opts{no_peek})
	{
		push @conf, "shared_preload_libraries = 'pg_peek'";
		push @conf, 'pg_peek.interactive = ' . interactive_mode();
		# scripts/test's pass with every peek routed through the runtime
		push @conf, "pg_peek.fast_path = $ENV{PG_PEEK_FAST_PATH}"
		  if ($ENV{PG_PEEK_FAST_PATH} // '') ne '';
		# sources decode the WAL (a conf line given below may override)
		push @conf, 'wal_level = logical', 'max_replication_slots = 10';
	}
	if (defined $opts{conf})
	{
		push @conf,
		  ref $opts{conf} eq 'ARRAY' ? @{ $opts{conf} } : ($opts{conf});
	}
	$node->append_conf('postgresql.conf', join('', map { "$_\n" } @conf))
	  if @conf;

	$node->start unless $opts{no_start};
	return $node;
}

# poll_until($node, $sql, $expected = 't', $timeout_s = 30): run $sql in
# database postgres until its output equals $expected. True on success,
# false (with a diag) on timeout.
sub poll_until
{
	my ($node, $sql, $expected, $timeout_s) = @_;
	$expected = 't' unless defined $expected;
	$timeout_s //= 30;

	# Not poll_query_until: it writes the query to psql's stdin, and a psql
	# that exits before reading it (the server still recovering from a crash
	# restart) makes that write fail with EPIPE, which kills the test. With
	# -c psql has no stdin to write.
	local %ENV = $node->_get_env();
	my $cmd = [
		$node->installed_command('psql'), '-XAt',
		'-d', $node->connstr('postgres'), '-c', $sql
	];
	my ($stdout, $stderr) = ('', '');
	my $deadline = time() + $timeout_s;
	while (1)
	{
		IPC::Run::run($cmd, '<', \undef, '>', \$stdout, '2>', \$stderr);
		chomp($stdout);
		return 1 if $stdout eq $expected;
		last if time() >= $deadline;
		usleep(100_000);
	}
	chomp($stderr);
	diag("poll_until timed out after ${timeout_s}s:\n$sql\n"
		  . "expected: $expected\ngot: $stdout\nstderr: $stderr");
	return 0;
}

# runtime_pid($node, $role): pid of the runtime with that role
# ('maintenance', 'interactive' or 'solo'; default: the serving role), or
# undef if there is none.
sub runtime_pid
{
	my ($node, $role) = @_;
	$role //= serving_role();
	die "unknown runtime role '$role'\n"
	  unless $role =~ /^(maintenance|interactive|solo)$/;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM peek.runtimes WHERE role = '$role'");
	return $pid eq '' ? undef : $pid + 0;
}

# restart_runtime($node, $role): SIGTERM the runtime with that role and wait
# until another one runs; returns the old pid and whether a new one came.
sub restart_runtime
{
	my ($node, $role) = @_;
	my $old_pid = runtime_pid($node, $role);
	kill 'TERM', $old_pid;
	my $back = poll_until($node,
		"SELECT count(*) FROM peek.runtimes WHERE role = '$role' AND pid <> $old_pid", '1');
	return ($old_pid, $back);
}

# stop_runtime($node, $pid): SIGSTOP a runtime while it waits on its latch
# (wait_event_type Extension), so that it is stopped holding no lock: one
# stopped inside a WAL insertion would hang every writer of the test.  A
# runtime caught elsewhere is let go again and caught later.  The caller
# sends SIGCONT.
sub stop_runtime
{
	my ($node, $pid) = @_;
	for (1 .. 2000)
	{
		kill 'STOP', $pid;
		return
		  if $node->safe_psql('postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid") eq
		  'Extension';
		kill 'CONT', $pid;
		select(undef, undef, undef, 0.01);
	}
	die "runtime $pid was never caught waiting on its latch\n";
}

# start_bg($node, $sql, %opts): run $sql in database postgres with a psql of
# its own, in the background; collect the outcome later with finish_bg.
# psql runs with -X -A -t -v ON_ERROR_STOP=1, so rows come back as
# 'a|b' lines. Options: timeout (seconds the statement may run, default
# timeout_default), application_name (default a unique pg_peek_bg_*; used by
# bg_backend_pid), verbose (1: psql VERBOSITY=verbose, so errors on stderr
# carry their SQLSTATE, e.g. "ERROR:  57014: canceling statement ...").
#
# (PostgreSQL::Test::BackgroundPsql sessions, see bg_session, only return
# after a query completes; a peek that must wait needs its own process.)
my $bg_seq = 0;

sub start_bg
{
	my ($node, $sql, %opts) = @_;
	my $appname = $opts{application_name}
	  // sprintf('pg_peek_bg_%d_%d', $$, ++$bg_seq);
	my $psql =
	  $node->can('installed_command') ? $node->installed_command('psql') : 'psql';

	my $h = {
		sql => $sql,
		application_name => $appname,
		stdout => '',
		stderr => '',
	};
	$h->{timer} =
	  IPC::Run::timeout($opts{timeout} // $PostgreSQL::Test::Utils::timeout_default);
	my @cmd = (
		$psql, '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
		($opts{verbose} ? ('-v', 'VERBOSITY=verbose') : ()),
		'-d', $node->connstr('postgres') . " application_name=$appname",
		'-c', $sql);
	$h->{run} = IPC::Run::start(\@cmd, '<', \undef, '>', \$h->{stdout},
		'2>', \$h->{stderr}, $h->{timer});
	return $h;
}

# bg_done($h): true once the background psql has exited (does not block).
sub bg_done
{
	my ($h) = @_;
	return 1 if $h->{finished};
	my $alive = eval {
		$h->{run}->pump_nb if $h->{run}->pumpable;
		$h->{run}->pumpable;
	};
	return defined $alive ? !$alive : 1;    # died: the timer expired
}

# finish_bg($h, $timeout_s): wait (default timeout_default seconds) for the
# background psql and return (exit code, stdout, stderr), trailing newlines
# removed. psql exits 0 on success, 1 or 3 on an SQL error, 2 on a lost
# connection. On timeout psql is killed and the exit code is -1.
sub finish_bg
{
	my ($h, $timeout_s) = @_;
	if (!$h->{finished})
	{
		$h->{timer}->start($timeout_s // $PostgreSQL::Test::Utils::timeout_default);
		my $ok = eval { $h->{run}->finish; 1 };
		if ($ok)
		{
			my $status = $h->{run}->full_result(0);
			$h->{rc} = ($status & 127) ? 128 + ($status & 127) : $status >> 8;
		}
		else
		{
			my $why = $@;
			$h->{run}->kill_kill;
			$h->{rc} = -1;
			$h->{stderr} .= "finish_bg: psql did not finish: $why";
		}
		$h->{finished} = 1;
	}
	my ($out, $err) = ($h->{stdout}, $h->{stderr});
	chomp $out;
	chomp $err;
	return ($h->{rc}, $out, $err);
}

# bg_backend_pid($node, $h, $timeout_s = 30): pid of the backend running the
# background statement, once it shows up as active in pg_stat_activity
# (undef if it does not within the timeout). Use it to check wait events or to
# cancel the statement with pg_cancel_backend.
sub bg_backend_pid
{
	my ($node, $h, $timeout_s) = @_;
	my $sql = "SELECT pid FROM pg_stat_activity"
	  . " WHERE application_name = '$h->{application_name}' AND state = 'active'";
	my $deadline = time + ($timeout_s // 30);
	while (time <= $deadline)
	{
		my $pid = $node->safe_psql('postgres', $sql);
		return $pid + 0 if $pid =~ /^\d+$/;
		last if bg_done($h);
		usleep(50_000);
	}
	return undef;
}

# bg_session($node, %params): an interactive session in database postgres
# (PostgreSQL::Test::BackgroundPsql: ->query, ->query_safe, ->quit), for
# tests that need several statements on one connection.
sub bg_session
{
	my ($node, %params) = @_;
	die "this PostgreSQL::Test::Cluster has no background_psql\n"
	  unless $node->can('background_psql');
	return $node->background_psql('postgres', %params);
}

# sql_error($node, $sql, $db = 'postgres'): run $sql (psql, VERBOSITY
# verbose) and return the SQLSTATE and message of its first error, or
# ('', '') if it succeeded. NOTICEs are ignored.
sub sql_error
{
	my ($node, $sql, $db) = @_;
	my ($rc, $out, $err) =
	  $node->psql($db // 'postgres', "\\set VERBOSITY verbose\n$sql");
	return ('', '') if $rc == 0;
	return ($1, $2) if $err =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):\s+([^\n]*)/;
	return ('?????', $err);
}

# item_setup($node, @names): the extension, the row type item (id int,
# v text) and a collection of it for each name.
sub item_setup
{
	my ($node, @names) = @_;
	$node->safe_psql('postgres',
		join("\n", 'CREATE EXTENSION pg_peek;', 'CREATE TYPE item AS (id int, v text);',
			map { "SELECT peek.create_collection('$_', 'item');" } @names));
	return;
}

# steady_procedure($node, $body, $pause_s): CREATE PROCEDURE steady(seconds
# int), a steady load: until that many seconds passed, it runs $body
# (PL/pgSQL statements; i counts the runs from 1) in a transaction of its
# own, then sleeps $pause_s.  Run it with start_bg($node, 'CALL steady(N)').
sub steady_procedure
{
	my ($node, $body, $pause_s) = @_;
	$node->safe_psql('postgres', qq{
CREATE PROCEDURE steady(seconds int) LANGUAGE plpgsql AS \$\$
DECLARE
	t_end timestamptz := clock_timestamp() + seconds * interval '1 s';
	i int := 0;
BEGIN
	WHILE clock_timestamp() < t_end LOOP
		i := i + 1;
		$body
		COMMIT;
		PERFORM pg_sleep($pause_s);
	END LOOP;
END \$\$});
	return;
}

# base_reaches($node, $name, $time, $timeout_s = 60): poll until the
# collection's base has taken $time in. True on success.
sub base_reaches
{
	my ($node, $name, $time, $timeout_s) = @_;
	return poll_until($node,
		"SELECT base_time >= $time FROM peek.objects WHERE name = '$name'",
		't', $timeout_s // 60);
}

# sorted_in_temp_files($node, $name, $what, $budget): how many times the
# server log (log_min_messages = debug1) says the rows of collection $name's
# shard were sorted for $what (a fold, a peek) in temporary files, past
# $budget (a pattern: 'work_mem \(64 kB\)').
sub sorted_in_temp_files
{
	my ($node, $name, $what, $budget) = @_;
	(my $rel = $node->safe_psql('postgres',
			"SELECT shard FROM peek.collections WHERE name = '$name'")) =~ s/^peek\.//;
	return scalar grep {
		/pg_peek sorted the rows of shard "$rel" for $what in temporary files \(\d+ kB\): they pass $budget/
	} split /\n/, slurp_file($node->logfile);
}

# caught_up_sql(): SQL that is true once every view is ready with no lag
# and every source's upper has passed the WAL written before it.
sub caught_up_sql
{
	return q{SELECT NOT EXISTS (SELECT 1 FROM peek.views WHERE state <> 'ready' OR lag > 0)
	   AND NOT EXISTS (SELECT 1 FROM peek.collections
	                    WHERE source IS NOT NULL AND upper < pg_current_wal_insert_lsn() - '0/0')};
}

# views_equal_queries($node, \%views, $what): a test per view (name =>
# query) that its latest contents, as text, are its query's in a session
# of the test (one that reads as pg_peek's workers do).
# Wait until every source decoded what is committed now (or failed).
sub sources_caught_up
{
	my ($node) = @_;
	my $lsn = $node->safe_psql('postgres', "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint");
	return poll_until($node, qq{
		SELECT bool_and(upper > $lsn OR state = 'failed') FROM peek.collections
		 WHERE source IS NOT NULL}, 't', 120);
}

# A source's rows against its table's, both ways: the rows that differ (0:
# equal).  $only: the table's own rows, not its inheritance children's
# (a source captures only its table's).
sub source_off
{
	my ($node, $table, $source, $only) = @_;
	my $rel = ($only ? 'ONLY ' : '') . $table;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM ((TABLE $rel EXCEPT ALL SELECT * FROM peek.persist_peek(NULL::$table, '$source'))
		  UNION ALL (SELECT * FROM peek.persist_peek(NULL::$table, '$source') EXCEPT ALL TABLE $rel)) d});
}

# A digest of a multiset of rows: sorted as text, duplicates kept.
sub rows_digest
{
	my ($node, $from) = @_;
	return $node->safe_psql('postgres',
		"SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r::text), '')) || ' ' || count(*) FROM $from r");
}

# source_at($node, $table, $source, $only): once the sources caught up
# (nothing committing meanwhile), the source's latest complete time and a
# digest of its table's rows now: what source_off_at compares the source
# at that time with later.
sub source_at
{
	my ($node, $table, $source, $only) = @_;
	return {
		table => $table,
		source => $source,
		time => $node->safe_psql('postgres',
			"SELECT upper - 1 FROM peek.collections WHERE name = '$source'"),
		rows => rows_digest($node, ($only ? 'ONLY ' : '') . $table),
	};
}

# source_off_at($node, $at): a test that the source, read at the time
# source_at recorded, holds the rows its table had then.
# Once every source has decoded the WAL so far, each source of @sources
# ([table, source, only]) holds exactly its table's rows (its own with
# only), and its rows now are pushed on @$at, [what, source_at], for
# source_off_at to read back at that time later.
sub sources_exact
{
	my ($node, $at, $what, @sources) = @_;
	ok(sources_caught_up($node), "$what: decoded");
	for my $s (@sources)
	{
		my ($table, $source, $only) = @$s;
		is(source_off($node, $table, $source, $only), '0',
			"$what: $source holds exactly " . ($only ? 'ONLY ' : '') . "$table\'s rows");
		push @$at, [ $what, source_at($node, $table, $source, $only) ];
	}
	return;
}

sub source_off_at
{
	my ($node, $at, $what) = @_;
	is(rows_digest($node, "peek.persist_peek(NULL::$at->{table}, '$at->{source}', as_of => $at->{time})"),
		$at->{rows}, "$what: $at->{source} at time $at->{time} holds $at->{table}'s rows then");
	return;
}

sub views_equal_queries
{
	my ($node, $views, $what) = @_;
	for my $view (sort keys %$views)
	{
		my ($rc, $out, $err) = $node->psql('postgres',
			"SELECT (SELECT array_agg(r ORDER BY r) FROM (SELECT ($view.*)::text AS r FROM $view) a)
			 IS NOT DISTINCT FROM (SELECT array_agg(r ORDER BY r) FROM (SELECT (q.*)::text AS r FROM ($views->{$view}) q) b)");
		is("$rc $out $err", '0 t ', "$view equals its query, $what");
	}
	return;
}

# log_is_clean($node, $what): a test that the node's server log has no
# ERROR, WARNING or PANIC but PostgreSQL's own cancel of an autovacuum
# worker that held a lock another session asked for (an ERROR of that
# worker, not of pg_peek).
sub log_is_clean
{
	my ($node, $what) = @_;
	my @bad = grep { /\b(ERROR|WARNING|PANIC):/ && !/ERROR:  canceling autovacuum task$/ }
	  split /\n/, slurp_file($node->logfile);
	is(join("\n", @bad), '', "$what: no ERROR or WARNING in the server log");
	return;
}

# commit_to_visible_ms($session, $name, $i): in a bg_session, write the row
# ($i, 'p') to the item collection $name, then return the ms until a peek
# at its time answers (it waits until the time is sealed and published).
sub commit_to_visible_ms
{
	my ($s, $name, $i) = @_;
	my $t = $s->query_safe("SELECT peek.write('$name', ARRAY[($i, 'p')]::item[])");
	my $at = [gettimeofday];
	$s->query_safe("SELECT count(*) FROM peek.persist_peek(NULL::item, '$name', as_of => $t)");
	return tv_interval($at) * 1000;
}

# pgbench_start($node, $secs, \@args): pgbench with two clients for $secs
# seconds in the background on $node's database postgres, with more
# arguments (its scripts: '-f', 'file@weight', ...); pgbench_finish($h)
# waits for it (or kills it) and returns the transactions it committed.
sub pgbench_start
{
	my ($node, $secs, $args) = @_;
	my $h = { out => '', err => '' };
	$h->{run} = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-T', $secs, @$args, $node->connstr('postgres') ],
		'<', \undef, '>', \$h->{out}, '2>', \$h->{err},
		IPC::Run::timeout($secs + 120));
	return $h;
}

sub pgbench_finish
{
	my ($h) = @_;
	eval { $h->{run}->finish; 1 } or $h->{run}->kill_kill;
	my ($tx) = $h->{out} =~ /number of transactions actually processed: (\d+)/;
	return $tx // 0;
}

1;
