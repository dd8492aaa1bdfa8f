# A role with only what the README asks for (its own schema, USAGE on
# schema peek) holds, in one open transaction, everything of its own that
# the maintenance runtime reads when it adopts her objects: her source's
# table, her collection's row type (ALTER TYPE ... RENAME ATTRIBUTE) and her
# maintained view's relation (LOCK TABLE).  The runtime is restarted
# meanwhile, so each adoption (a source, a collection, their indexes, a
# view) looks its types up afresh and times out on the runtime's bounded
# lock waits.  It is retried; once the transaction rolls back every object
# is adopted whole: the writes made after are peeked once each (persist,
# index and the view against SQL), nothing failed and no process crashed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $maint = maintenance_role();
my $node = new_node('adopt_user_locks');

$node->safe_psql('postgres', q{
CREATE EXTENSION pg_peek;
CREATE ROLE alice LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
GRANT USAGE ON SCHEMA peek TO alice;
});
my $as_alice = "SET ROLE alice; SET client_min_messages = warning;";
$node->safe_psql('postgres', qq{$as_alice
CREATE TABLE alice.t(id int PRIMARY KEY, g int);
INSERT INTO alice.t SELECT i, i % 3 FROM generate_series(1, 30) i;
SELECT peek.create_source('ts', 'alice.t');
SELECT peek.create_index('tsi', 'ts', ARRAY['id']);
CREATE TYPE alice.ct AS (id int, v text);
SELECT peek.create_collection('c', 'alice.ct');
SELECT peek.write('c', ARRAY[(1, 'a'), (2, 'b')]::alice.ct[]);
SELECT peek.create_index('ci', 'c', ARRAY['id']);
SET search_path = alice;
SELECT peek.create_view('tv', 'SELECT g, count(*) AS n, sum(id) AS s FROM alice.t GROUP BY g');
});
ok( poll_until($node,
		"SELECT count(*) FILTER (WHERE state = 'ready') FROM"
		  . " (SELECT state FROM peek.collections UNION ALL SELECT state FROM peek.indexes"
		  . "  UNION ALL SELECT state FROM peek.views) s", '5'),
	'her source, collection, indexes and view are ready');
my %id = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT name, id FROM peek.objects');

# ---- all of it held across a restart of the runtime ----------------------

my $holder = bg_session($node);
$holder->query_safe(qq{SET ROLE alice; BEGIN;
LOCK TABLE alice.t IN ACCESS EXCLUSIVE MODE;
ALTER TYPE alice.ct RENAME ATTRIBUTE v TO w;
LOCK TABLE alice.tv IN ACCESS EXCLUSIVE MODE;});

my $offset = -s $node->logfile;
my ($old_pid, $back) = restart_runtime($node, $maint);
ok($back, 'the runtime is started again');
my %retried;
for (1 .. 300)
{
	my $log = slurp_file($node->logfile, $offset);
	$retried{$_} = 1
	  for grep { $log =~ /pg_peek object $id{$_} will be retried(?: in \d+ ms[^:]*)?: canceling statement due to lock timeout/ }
	  qw(c ci tv);
	last if keys %retried == 3;
	select(undef, undef, undef, 0.1);
}
is(join(',', sort keys %retried), 'c,ci,tv',
	"the collection's, its index's and the view's adoptions time out and are retried");
$holder->query_safe('ROLLBACK');
$holder->quit;

# ---- everything adopted whole: writes peeked once each --------------------

$node->safe_psql('postgres', qq{$as_alice
INSERT INTO alice.t SELECT i, i % 3 FROM generate_series(31, 40) i;
UPDATE alice.t SET g = 7 WHERE id = 2;
DELETE FROM alice.t WHERE id = 3;
SELECT peek.write('c', ARRAY[(3, 'c')]::alice.ct[]);
});
my $strict = "SET ROLE alice; SET pg_peek.isolation = 'strict serializable';";
my %want = (
	ts => $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || g, ',' ORDER BY id) FROM alice.t"),
	c => '1:a,2:b,3:c',
	tv => $node->safe_psql('postgres',
		"SELECT string_agg(g || ':' || n || ':' || s, ',' ORDER BY g) FROM"
		  . " (SELECT g, count(*) AS n, sum(id) AS s FROM alice.t GROUP BY g) x"));
my %sql = (
	ts => "SELECT string_agg(id || ':' || g, ',' ORDER BY id) FROM peek.persist_peek(NULL::alice.t, 'ts')",
	tsi => "SELECT string_agg(id || ':' || g, ',' ORDER BY id) FROM peek.index_peek(NULL::alice.t, 'tsi',"
	  . " keys => (SELECT array_agg(ROW(i)) FROM generate_series(1, 50) i))",
	c => "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM peek.persist_peek(NULL::alice.ct, 'c')",
	ci => "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM peek.index_peek(NULL::alice.ct, 'ci',"
	  . " keys => ARRAY[ROW(1), ROW(2), ROW(3)])",
	tv => "SELECT string_agg(g || ':' || n || ':' || s, ',' ORDER BY g) FROM peek.persist_peek(NULL::alice.tv, 'tv')");
$want{tsi} = $want{ts};
$want{ci} = $want{c};
for my $name (qw(ts tsi c ci tv))
{
	# (the view follows its input: polled until its round took the writes)
	ok(poll_until($node, "$strict $sql{$name}", "SET\nSET\n$want{$name}", 60),
		"$name peeks the writes made after, once each");
}
is($node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT failure FROM peek.collections UNION ALL"
		  . " SELECT failure FROM peek.indexes) f WHERE failure IS NOT NULL"),
	'0', 'nothing failed');

unlike(slurp_file($node->logfile, $offset), qr/terminated by signal|server process .* was terminated/,
	'no process crashed');

$node->stop;
done_testing();
