# Smoke test of the TAP harness itself (scripts/test + test/perl/PgPeekTest.pm).
# It runs without the pg_peek library, so it passes before the extension exists.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

like(interactive_mode(), qr/^(on|off)$/, 'PG_PEEK_INTERACTIVE is on or off');
is(serving_role(), interactive_mode() eq 'on' ? 'interactive' : 'solo',
	'serving_role follows the mode');

my $node = new_node('harness', no_peek => 1);
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'node without pg_peek answers SELECT 1');

# A statement in the background, collected later (running long enough to be
# seen by a poll that starts its own psql on a loaded machine).
my $h = start_bg($node, 'SELECT pg_sleep(3), 42');
ok(defined bg_backend_pid($node, $h), 'background statement shows up in pg_stat_activity');
my ($rc, $out, $err) = finish_bg($h, 30);
is($rc, 0, 'background psql exits 0');
is($out, '|42', 'background psql returns its row');
is($err, '', 'background psql writes nothing to stderr');

# Errors come back as a non-zero exit code and the message on stderr.
($rc, $out, $err) = finish_bg(start_bg($node, 'SELECT 1/0'), 30);
isnt($rc, 0, 'failing background statement exits non-zero');
like($err, qr/division by zero/, 'failing background statement reports its error');

ok(poll_until($node, 'SELECT 6 * 7', '42'), 'poll_until sees the expected value');

# Several statements on one connection.
my $s = bg_session($node);
$s->query_safe('CREATE TEMP TABLE harness_t AS SELECT 5 AS v');
is($s->query_safe('SELECT v FROM harness_t'), '5', 'bg_session keeps its connection');
$s->quit;

$node->stop;
done_testing();
