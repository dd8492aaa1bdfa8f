# A peek finds its object by name through peek.objects' name index, with
# the index's collation: in a database whose default collation is not C
# (ICU here), a search in C order would miss most names.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('icu', initdb_extra => [ '--locale-provider=icu', '--icu-locale=en' ]);
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_peek;
	CREATE TYPE item AS (id int, name text);
});
is($node->safe_psql('postgres', "SELECT datlocprovider FROM pg_database WHERE datname = 'postgres'"),
	'i', 'the database collates with ICU');

# names whose C order and English order differ
my @names = qw(a B c D e F g H i J k L m N aa AB ac Ad _x x_ -y y- Ab aB);
$node->safe_psql('postgres', join('; ', map {
	"SELECT peek.create_collection('$_', 'item'); SELECT peek.write('$_', ARRAY[(1, '$_')]::item[]); "
	  . "SELECT peek.create_index('${_}_i', '$_', ARRAY['id'])" } @names));
ok(poll_until($node, "SELECT count(*) = " . scalar(@names) . " FROM peek.indexes WHERE state = 'ready'"),
	'every index is ready');

my @missed;
for my $n (@names)
{
	# a fresh session each: no cached name
	my ($rc, $out) = $node->psql('postgres',
		"SELECT name FROM peek.persist_peek(NULL::item, '$n') UNION ALL "
		  . "SELECT name FROM peek.index_peek(NULL::item, '${n}_i', ROW(1))");
	push @missed, $n if $rc != 0 || $out ne "$n\n$n";
}
is("@missed", '', 'every collection and index is found by name');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM peek.persist_peek(NULL::item, 'A')");
like($err, qr/collection "A" does not exist/, 'a name differing only in case is another name');

done_testing();
