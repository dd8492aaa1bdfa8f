# Rowless stages (src/dataflow/rowless.c) whose reads of the source take a
# while (a key and a WHERE of an immutable function that sleeps), over a
# source kept only a second (peek.set_retention): the source's since stays
# below the views' uppers, so each read of its contents at a time the view
# needs (a build after a restart, the states of a group whose numeric's
# last value of its greatest scale goes) is still possible; the maintenance
# runtime's statements cancelled mid-read (pg_cancel_backend) and the
# runtime terminated do not leave the groups wrong.  After each step each
# view equals PostgreSQL's evaluation of its query over the source's
# persist peek at the least of the views' uppers before it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgPeekTest;

my $node = new_node('rowless_cancel');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TABLE src (id int PRIMARY KEY, g int, a numeric);
	INSERT INTO src SELECT i, i % 5, round(i / 3.0, i % 3) FROM generate_series(1, 2000) i;
	CREATE FUNCTION slow_key(int) RETURNS int IMMUTABLE LANGUAGE plpgsql
	  AS $$BEGIN PERFORM pg_sleep(0.0002); RETURN $1 % 3; END$$;
	SELECT peek.create_source('src_s', 'src');
});
$node->safe_psql('postgres', slurp_file('../sql/00_helpers.sql'));
ok(poll_until($node, "SELECT state = 'ready' FROM peek.collections WHERE name = 'src_s'", 't', 120),
	'the source is ready');
$node->safe_psql('postgres', q{
	SELECT peek.set_retention('src_s', '1 s');
	SELECT peek.create_view('v_key', $$SELECT slow_key(g) AS k, count(*) AS n, sum(a) AS s, avg(a) AS av
	                                     FROM src GROUP BY slow_key(g)$$);
	SELECT peek.create_view('v_whole', $$SELECT count(*) AS n, sum(a) AS s, avg(a) AS av
	                                       FROM src WHERE slow_key(g) >= 0$$);
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.views", 't', 120), 'the views are ready');

# each view against its query over the source at the least of the views'
# uppers (the source's since is below it: the views hold it)
sub bad_now
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(name || ': ' || view_mismatches(
		           format('SELECT * FROM peek.persist_peek(NULL::%I, %L, as_of => @T@)', name, name),
		           regexp_replace(query, '(''src_s''::text)', '\1, as_of => @T@', 'g'),
		           ARRAY[(SELECT min(upper) - 1 FROM peek.views)]), '; ' ORDER BY name)
		  FROM peek.views});
}

# the views past the WAL written so far (their reads are slow: a while)
sub settle
{
	my $wal = $node->safe_psql('postgres', 'SELECT wal_time()');
	return poll_until($node, "SELECT bool_and(upper > $wal) FROM peek.views", 't', 300) ? 't' : 'f';
}

is(settle(), 't', 'the views pass the WAL');
is(bad_now(), 'v_key: ; v_whole: ', 'the views are their query after the hydration');

my $maint = q{SELECT pid FROM peek.runtimes WHERE role IN ('maintenance', 'solo')};
for my $i (1 .. 6)
{
	my $id = 100000 + $i;
	# a value of a new greatest scale in, then out: its groups read the source again
	$node->safe_psql('postgres', "INSERT INTO src VALUES ($id, $i, 7.1234567)");
	$node->safe_psql('postgres', "DELETE FROM src WHERE id = $id");
	$node->safe_psql('postgres', "UPDATE src SET a = a + 0.5 WHERE id % 97 = $i");
	usleep(300_000 + 150_000 * $i);
	$node->safe_psql('postgres', "SELECT pg_cancel_backend(($maint))");
	$node->safe_psql('postgres', 'SELECT restart_maintenance()') if $i == 3;
	usleep(1_100_000) if $i == 5;
}
is(settle(), 't', 'the views pass the WAL after the cancels');
is($node->safe_psql('postgres', q{SELECT string_agg(name || ' ' || state, ', ' ORDER BY name) FROM peek.views}),
	'v_key ready, v_whole ready', 'the views are ready');
is(bad_now(), 'v_key: ; v_whole: ', 'the views are their query after reads cancelled and a restart');
cmp_ok($node->safe_psql('postgres',
		q{SELECT since FROM peek.collections WHERE name = 'src_s'}), '>', 0,
	'the source compacted');
is($node->safe_psql('postgres', q{
	SELECT (SELECT n FROM v_whole) = (SELECT count(*) FROM src)
	   AND (SELECT s FROM v_whole) = (SELECT sum(a) FROM src)}), 't', 'the whole-table view is the table now');
done_testing();
