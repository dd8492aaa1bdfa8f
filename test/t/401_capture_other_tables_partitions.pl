# A source's rounds skip, unread, the heap changes of relfilenodes a replay
# showed are another table's (record_filters.c).  Partitions and
# inheritance make every write through a parent a write of some other
# table next to the source's: sources on two partitions and a default one
# written through their parent (rows moved between partitions by UPDATE,
# MERGE, COPY, TRUNCATE of the parent), a partition detached (and
# concurrently, from a table without a default one), written alone, attached again; a table written (noted as
# another's) then attached, and captured by a source of its own; an
# inheritance parent captured (its own rows only) and a child, written
# through the parent, a child's inheritance taken away and given back.
# Each source must hold exactly its table's rows at the latest time and at
# every time recorded (as_of).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgPeekTest;

my $node = new_node('capture_other_tables_partitions',
	conf => ['autovacuum = off', 'logical_decoding_work_mem = 64kB']);

sub sql { return $node->safe_psql('postgres', $_[0]); }

my @at;
my @sources = ([ 'p1', 'p1_src' ], [ 'p2', 'p2_src' ], [ 'pd', 'pd_src' ], [ 'pp1', 'pp1_src' ],
	[ 'ip', 'ip_src', 1 ], [ 'ic1', 'ic1_src' ]);

# every source exact now, and recorded for a read at this time later
sub exact
{
	my ($what) = @_;
	sources_exact($node, \@at, $what, @sources);
}

sql(q{
	CREATE EXTENSION pg_peek;
	SET client_min_messages = warning;
	CREATE TABLE p (k int, v int, t text) PARTITION BY RANGE (k);
	CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (1000);
	CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (1000) TO (2000);
	CREATE TABLE p3 PARTITION OF p FOR VALUES FROM (2000) TO (3000);
	CREATE TABLE pd PARTITION OF p DEFAULT;
	CREATE TABLE pp (k int, v int, t text) PARTITION BY RANGE (k);
	CREATE TABLE pp1 PARTITION OF pp FOR VALUES FROM (0) TO (1000);
	CREATE TABLE pp2 PARTITION OF pp FOR VALUES FROM (1000) TO (2000);
	CREATE TABLE ip (k int, v int);
	CREATE TABLE ic1 (c text) INHERITS (ip);
	CREATE TABLE ic2 () INHERITS (ip);
	CREATE TABLE q (k int, v int, t text);
	SELECT peek.create_source('p1_src', 'p1');
	SELECT peek.create_source('p2_src', 'p2');
	SELECT peek.create_source('pd_src', 'pd');
	SELECT peek.create_source('pp1_src', 'pp1');
	SELECT peek.create_source('ip_src', 'ip');
	SELECT peek.create_source('ic1_src', 'ic1');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'the sources are loaded');

# every table's first changes replayed: each one's relfilenode noted by the others
sql(q{
	INSERT INTO p SELECT i, i, 'p' FROM generate_series(0, 3999, 7) i;
	INSERT INTO pp SELECT i, i, 'pp' FROM generate_series(0, 1999, 7) i;
	INSERT INTO ip SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO ic1 SELECT i, i, 'c' FROM generate_series(1, 100) i;
	INSERT INTO ic2 SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO q SELECT i, i, 'q' FROM generate_series(2000, 2999, 3) i;
});
exact('first writes');

# rows moved between the partitions by updates of the parent, in one
# transaction with writes of each
sql(q{
	BEGIN;
	UPDATE p SET k = k + 1000 WHERE k < 300;
	INSERT INTO p VALUES (5, 5, 'p1'), (1005, 5, 'p2'), (2005, 5, 'p3'), (9005, 5, 'pd');
	UPDATE p SET k = k - 1000 WHERE k BETWEEN 1500 AND 1700;
	UPDATE p SET k = k + 7000 WHERE k BETWEEN 2000 AND 2100;
	UPDATE p SET v = -v WHERE k % 2 = 0;
	DELETE FROM p WHERE k % 5 = 0;
	UPDATE p SET k = k - 8000 WHERE k BETWEEN 9000 AND 9100;
	COMMIT;
});
exact('rows moved between the partitions');

# MERGE into the parent, COPY into it, a subtransaction rolled back
sql(q{
	CREATE TABLE changes (k int, v int);
	INSERT INTO changes SELECT i, i FROM generate_series(0, 3999, 11) i;
});
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/rows.csv") or die;
print $fh "$_,$_,copied\n" for map { $_ * 13 } (0 .. 400);
close($fh);
chmod 0644, "$dir/rows.csv";
chmod 0755, $dir;
sql(qq{
	BEGIN;
	MERGE INTO p USING changes c ON p.k = c.k
	  WHEN MATCHED AND c.k % 2 = 0 THEN UPDATE SET k = p.k + 1000
	  WHEN MATCHED THEN DELETE
	  WHEN NOT MATCHED THEN INSERT VALUES (c.k, c.v, 'merged');
	COPY p FROM '$dir/rows.csv' WITH (FORMAT csv);
	SAVEPOINT a;
	UPDATE p SET k = k + 1 WHERE k < 2000;
	INSERT INTO ic1 VALUES (999, 999, 'rolled back');
	ROLLBACK TO a;
	UPDATE p SET v = 0 WHERE k BETWEEN 990 AND 1010;
	COMMIT;
});
exact('MERGE and COPY into the parent');

# a partition detached, written alone (rows out of its range too), then
# attached again after those rows went; and one detached concurrently
# (two transactions)
sql(q{
	BEGIN;
	INSERT INTO p VALUES (1999, 1, 'before the detach');
	ALTER TABLE p DETACH PARTITION p2;
	INSERT INTO p2 VALUES (5000, 1, 'out of range');
	INSERT INTO p VALUES (1998, 1, 'to the default');
	UPDATE p2 SET v = v + 1;
	COMMIT;
	INSERT INTO p2 VALUES (1001, 1, 'alone');
	INSERT INTO p VALUES (10, 1, 'p1 meanwhile');
});
exact('a partition detached');
sql(q{
	BEGIN;
	DELETE FROM p2 WHERE k >= 2000;
	DELETE FROM pd WHERE k BETWEEN 1000 AND 1999;
	ALTER TABLE p ATTACH PARTITION p2 FOR VALUES FROM (1000) TO (2000);
	INSERT INTO p VALUES (1002, 2, 'attached again');
	UPDATE p SET k = k - 1000 WHERE k BETWEEN 1100 AND 1200;
	COMMIT;
});
exact('the partition attached again');
sql("ALTER TABLE pp DETACH PARTITION pp1 CONCURRENTLY");
sql(q{
	BEGIN;
	INSERT INTO pp1 VALUES (10, 1, 'alone');
	ALTER TABLE pp1 DROP CONSTRAINT pp1_k_check;
	INSERT INTO pp1 VALUES (11, 1, 'alone'), (5000, 1, 'out of range');
	INSERT INTO pp VALUES (1012, 1, 'pp2 meanwhile');
	UPDATE pp1 SET v = v * 2 WHERE k < 100;
	COMMIT;
});
sql("DELETE FROM pp1 WHERE k >= 1000");
sql("ALTER TABLE pp ATTACH PARTITION pp1 FOR VALUES FROM (0) TO (1000)");
sql("INSERT INTO pp VALUES (13, 1, 'pp1 back'), (1013, 1, 'pp2')");
exact('a partition detached concurrently and attached again');

# q, written while on its own (every source noted it), becomes a partition
# in a transaction writing through the parent, then gets a source of its own
sql(q{
	BEGIN;
	ALTER TABLE p DETACH PARTITION p3;
	DELETE FROM pd WHERE k BETWEEN 2000 AND 2999;
	ALTER TABLE p ATTACH PARTITION q FOR VALUES FROM (2000) TO (3000);
	INSERT INTO p SELECT i, i, 'to q' FROM generate_series(2001, 2999, 10) i;
	UPDATE p SET k = k + 1000 WHERE k BETWEEN 500 AND 600;
	UPDATE p SET k = k + 1000 WHERE k BETWEEN 1500 AND 1600;
	COMMIT;
	SELECT peek.create_source('q_src', 'q');
});
ok(poll_until($node, "SELECT bool_and(state = 'ready') FROM peek.collections WHERE source IS NOT NULL",
		't', 120), 'q\'s source is loaded');
push @sources, [ 'q', 'q_src' ];
sql(q{
	BEGIN;
	UPDATE p SET k = k + 1000 WHERE k BETWEEN 1000 AND 1100;
	UPDATE p SET k = k - 2000 WHERE k BETWEEN 2000 AND 2200;
	INSERT INTO p VALUES (2222, 2, 'q'), (22, 2, 'p1');
	COMMIT;
});
exact('a noted table attached and captured');

# TRUNCATE of the parent in a transaction writing it before and after
sql(q{
	BEGIN;
	INSERT INTO p VALUES (30, 3, 'gone'), (1030, 3, 'gone'), (2030, 3, 'gone');
	TRUNCATE p;
	INSERT INTO p SELECT i, i, 'after the truncate' FROM generate_series(0, 3999, 17) i;
	UPDATE p SET k = k + 1000 WHERE k < 200;
	COMMIT;
});
exact('the parent truncated');

# inheritance: the captured parent and child written through the parent,
# a child's inheritance taken away and given back in transactions writing all
sql(q{
	BEGIN;
	UPDATE ip SET v = -v WHERE k <= 50;
	DELETE FROM ip WHERE k BETWEEN 51 AND 60;
	INSERT INTO ip VALUES (1000, 1);
	ALTER TABLE ic2 NO INHERIT ip;
	UPDATE ip SET v = v + 1 WHERE k <= 70;
	INSERT INTO ic2 VALUES (1001, 1);
	INSERT INTO ic1 VALUES (1002, 1, 'c');
	COMMIT;
	INSERT INTO ic1 VALUES (1003, 1, 'c');
	UPDATE ip SET v = 0 WHERE k = 1;
});
exact('a child\'s inheritance taken away');
sql(q{
	BEGIN;
	INSERT INTO ic2 VALUES (1004, 1);
	ALTER TABLE ic2 INHERIT ip;
	UPDATE ip SET k = k + 1 WHERE k > 999;
	DELETE FROM ip WHERE k BETWEEN 90 AND 95;
	ALTER TABLE ic1 NO INHERIT ip;
	UPDATE ip SET v = 7 WHERE k BETWEEN 80 AND 89;
	UPDATE ic1 SET v = 8 WHERE k BETWEEN 80 AND 89;
	ALTER TABLE ic1 INHERIT ip;
	DELETE FROM ip WHERE k = 100;
	COMMIT;
});
exact('inheritance given back');

source_off_at($node, $_->[1], $_->[0]) for @at;

is(sql("SELECT count(*) FROM peek.collections WHERE source IS NOT NULL AND state <> 'ready'"),
	'0', 'no source failed');
log_is_clean($node, 'capture next to partitions');

done_testing();
