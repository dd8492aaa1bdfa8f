# What a maintained view computes does not follow the database's settings
# that its kept query and its XML expressions read.  Its kept query's
# string constants are written with standard_conforming_strings on, and
# xmlelement() (which PostgreSQL deems immutable) writes its values by
# DateStyle, IntervalStyle, TimeZone and xmlbinary.  Before, with the
# database's settings changed and the runtimes restarted, the runtime read
# 'y\n' as a newline and wrote other XML text, so the retractions of rows
# made before differed from them: rows at multiplicity -1, every peek at
# the views failing.  Now pg_peek's workers pin these settings too, and
# the views equal their query under them through updates and deletes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('views_kept_settings');

# the test's own sessions read as the workers do
$ENV{PGOPTIONS} = '-c DateStyle=ISO -c IntervalStyle=postgres -c TimeZone=UTC -c xmlbinary=base64 '
  . '-c standard_conforming_strings=on -c array_nulls=on -c xmloption=content -c extra_float_digits=1 -c bytea_output=hex -c statement_timeout=60s';

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{CREATE EXTENSION pg_peek;
	CREATE TABLE g (id int PRIMARY KEY, i interval, ts timestamptz, b bytea, d date, s text);
	INSERT INTO g SELECT n, make_interval(days => -n, hours => -2), '2020-02-01 10:00+00'::timestamptz + n * interval '1 h',
	                     int4send(n), date '2020-02-01' + n, 'x' || n
	                FROM generate_series(1, 40) n;});
sql(q{SELECT peek.create_source('g_src', 'g')});

my %views = (
	xml_rows => q{SELECT id, xmlelement(name x, i)::text AS xi, xmlelement(name y, ts)::text AS xt,
	                     xmlelement(name z, b)::text AS xb, xmlelement(name w, ROW(d, i))::text AS xr FROM g},
	xml_groups => q{SELECT xmlelement(name x, i)::text AS xi, count(*) AS n FROM g GROUP BY 1},
	escaped    => q{SELECT id, replace(s, 'x', 'y\n') AS t FROM g WHERE s <> 'a\b'},
	arrays     => q{SELECT id, '{NULL,"NULL"}'::text[] || s AS a,
	                       xmlconcat(xmlelement(name s, s), '<t/>'::xml)::text AS x FROM g});
sql("SELECT peek.create_view('$_', \$q\$$views{$_}\$q\$)") for sort keys %views;

my $caught_up = caught_up_sql();
ok(poll_until($node, $caught_up, 't', 120), 'the views are ready');

views_equal_queries($node, \%views, 'under the default settings');

# the database's settings against those the workers read
sql(q{ALTER DATABASE postgres SET DateStyle = 'SQL, DMY';
	ALTER DATABASE postgres SET IntervalStyle = 'sql_standard';
	ALTER DATABASE postgres SET TimeZone = 'Asia/Tokyo';
	ALTER DATABASE postgres SET xmlbinary = 'hex';
	ALTER DATABASE postgres SET standard_conforming_strings = off;
	ALTER DATABASE postgres SET array_nulls = off;
	ALTER DATABASE postgres SET xmloption = document});
my (undef, $back) = restart_runtime($node, maintenance_role());
ok($back, 'the runtime that maintains the views started again');

for my $n (1 .. 8)
{
	sql("DELETE FROM g WHERE id = $n");
	sql("UPDATE g SET i = i - interval '1 h', ts = ts + interval '1 day', b = b || '\\x00'::bytea,
	                  s = s || 'x' WHERE id = 10 + $n");
	sql("INSERT INTO g VALUES (100 + $n, interval '-1 day -3 hours', '2021-03-04 05:06+00', '\\xff',
	                           '2021-03-04', 'x' || $n)");
}
ok(poll_until($node, $caught_up, 't', 60), 'the views caught up with the writes');
views_equal_queries($node, \%views, 'after updates and deletes under other database settings');
is(sql(q{SELECT string_agg(name, ' ') FROM peek.views WHERE state <> 'ready'}), '', 'no view failed');
log_is_clean($node, 'the views under the database settings');

done_testing();
