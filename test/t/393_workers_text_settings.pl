# A view's text of a float or a bytea (immutable casts whose output depends
# on extra_float_digits and bytea_output) does not follow the database's
# settings: a view's rows are retracted as the runtime makes them anew, so a
# setting changed between two starts of the maintenance runtime made the
# retraction of a row made before differ from it.  Before, with the
# database's extra_float_digits set to 0 and the runtimes restarted, a
# delete left the old text at multiplicity -1 ("More copies of the row were
# retracted than were inserted") and every peek at the view failed.  Now
# the views equal their query under the settings the workers pin, through
# updates and deletes, with database and role settings against them.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('workers_text_settings');

# the test's own sessions read the text as the workers make it
$ENV{PGOPTIONS} = '-c extra_float_digits=1 -c bytea_output=hex -c statement_timeout=60s';

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TABLE g (id int PRIMARY KEY, f float8, b bytea);
	INSERT INTO g SELECT i, i * 0.1::float8, convert_to('é' || i, 'UTF8') FROM generate_series(1, 40) i;});
sql(q{SELECT peek.create_source('g_src', 'g')});

my %views = (
	float_rows   => 'SELECT id, f::text AS t, b::text AS bt FROM g',
	float_groups => 'SELECT f::text AS t, count(*) AS n FROM g GROUP BY 1',
	bytea_groups => 'SELECT b::text AS bt, sum(id) AS s FROM g GROUP BY 1');
sql("SELECT peek.create_view('$_', \$q\$$views{$_}\$q\$)") for sort keys %views;

my $caught_up = caught_up_sql();
ok(poll_until($node, $caught_up, 't', 120), 'the views are ready');

views_equal_queries($node, \%views, 'under the default settings');

# the database's and the workers' role's settings against the defaults
sql(q{ALTER DATABASE postgres SET extra_float_digits = 0;
	ALTER DATABASE postgres SET bytea_output = 'escape'});
# the superuser the workers run as, in this database
sql('ALTER ROLE CURRENT_USER IN DATABASE postgres SET extra_float_digits = -5');
my $restarts = sql('SELECT sum(restarts) FROM peek.runtimes');
sql('SELECT pg_terminate_backend(pid) FROM peek.runtimes WHERE pid IS NOT NULL');
ok(poll_until($node, "SELECT sum(restarts) > $restarts AND count(pid) = count(*) FROM peek.runtimes", 't', 60),
	'the runtimes started again');

for my $i (1 .. 8)
{
	sql("DELETE FROM g WHERE id = $i");
	sql("UPDATE g SET f = f + 1, b = b || '\\x00'::bytea WHERE id = 10 + $i");
	sql("INSERT INTO g VALUES (100 + $i, $i * 0.7::float8, '\\xff'::bytea)");
}
ok(poll_until($node, $caught_up, 't', 60), 'the views caught up with the writes');
views_equal_queries($node, \%views, 'after updates and deletes under other database settings');
log_is_clean($node, 'the views under the database settings');

done_testing();
