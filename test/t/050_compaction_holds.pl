# allow_compaction must take effect (the effective since is
# min(user's since, pending peeks, standing holds)) even when it commits while
# the runtime that serves peeks has not adopted the extension yet: (a) right
# after CREATE EXTENSION, before that runtime's next tick; (b) while it is
# restarting.  Its standing hold is then raised from the catalog when it
# (re)starts, and maintenance must still get to compact.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $serve = serving_role();
my $nruntimes = interactive_mode() eq 'on' ? 2 : 1;
my $running_sql =
  "SELECT count(*) = $nruntimes AND bool_and(state = 'running' AND pid IS NOT NULL) FROM peek.runtimes";

my $node = new_node('holds');

sub since_of
{
	my ($coll) = @_;
	return "SELECT since FROM peek.collections WHERE name = '$coll'";
}

# ---- (a) allow_compaction right after CREATE EXTENSION --------------------

# one session, a few milliseconds: the runtimes notice a new extension on
# their next quiet tick (up to 1 s later)
my $out = $node->safe_psql('postgres', qq{
CREATE EXTENSION pg_peek;
CREATE TYPE item AS (id int, name text);
SELECT peek.create_collection('early', 'item');
SELECT peek.write('early', ARRAY[(1, 'a'), (2, 'b')]::item[]);
SELECT peek.write('early', ARRAY[(3, 'c')]::item[], ARRAY[(1, 'a')]::item[]);
SELECT peek.write('early', '{}'::item[], ARRAY[(2, 'b')]::item[]);
SELECT state FROM peek.runtimes WHERE role = '$serve';
SELECT peek.allow_compaction('early', 2);
});
my @out = split /\n/, $out;
# (lines: create_collection's empty result, three times, the state)
note("the $serve runtime was '$out[4]' when allow_compaction committed");
is(join(',', @out[1 .. 3]), '0,1,2', 'three writes at times 0, 1, 2');

ok(poll_until($node, $running_sql), 'the runtimes are running');
ok(poll_until($node, since_of('early'), '2', 5),
	'early: since reaches 2 although allow_compaction came before the runtimes adopted the extension');
ok(poll_until($node, "SELECT since FROM peek.objects WHERE name = 'early'", '2', 2),
	'early: the shard is compacted to 2');
is($node->safe_psql('postgres',
		"SELECT id, name FROM peek.persist_peek(NULL::item, 'early', as_of => 2) ORDER BY 1"),
	'3|c', 'early: contents at 2');

# ---- (b) allow_compaction while the serving runtime restarts --------------

$node->safe_psql('postgres', q{
SELECT peek.create_collection('late', 'item');
SELECT peek.write('late', ARRAY[(1, 'a'), (2, 'b')]::item[]);
SELECT peek.write('late', ARRAY[(3, 'c')]::item[], ARRAY[(1, 'a')]::item[]);
SELECT peek.write('late', '{}'::item[], ARRAY[(2, 'b')]::item[]);
SELECT peek.write('late', ARRAY[(4, 'd')]::item[]);
});
ok(poll_until($node, "SELECT upper FROM peek.frontiers WHERE runtime IN ('maintenance', 'solo') AND object = 'late'", '4'),
	'late: upper 4 is published');
my ($old_pid, $old_restarts) = split /\|/, $node->safe_psql('postgres',
	"SELECT pid, restarts FROM peek.runtimes WHERE role = '$serve'");

# terminate, wait for the exit, and commit allow_compaction before the
# runtime comes back (it restarts 1 s after exiting)
$out = $node->safe_psql('postgres', qq{
SELECT pg_terminate_backend($old_pid, 10000);
SELECT peek.allow_compaction('late', 3);
SELECT pid IS NULL FROM peek.runtimes WHERE role = '$serve';
});
@out = split /\n/, $out;    # terminate, allow_compaction (empty), pid IS NULL
is($out[0], 't', "terminate the $serve runtime (pid $old_pid)");
note("the $serve runtime was " . ($out[2] eq 't' ? '' : 'already back, not ') . 'down when allow_compaction committed');

ok( poll_until($node,
		"SELECT pid IS NOT NULL AND pid <> $old_pid AND state = 'running' AND restarts > $old_restarts"
		  . " FROM peek.runtimes WHERE role = '$serve'"),
	"the $serve runtime comes back");
ok(poll_until($node, since_of('late'), '3', 5),
	'late: since reaches 3 although allow_compaction came while the runtime restarted');
ok(poll_until($node, "SELECT since FROM peek.objects WHERE name = 'late'", '3', 2),
	'late: the shard is compacted to 3');
is($node->safe_psql('postgres',
		"SELECT id, name FROM peek.persist_peek(NULL::item, 'late', as_of => 3) ORDER BY 1"),
	"3|c\n4|d", 'late: contents at 3');

is($node->safe_psql('postgres',
		"SELECT string_agg(name || ':' || since || ':' || allowed_since, ',' ORDER BY name) FROM peek.collections"),
	'early:2:2,late:3:3', 'peek.collections: since = allowed_since for both');

$node->stop;
done_testing();
