/*-------------------------------------------------------------------------
 *
 * catalog_uppers.c
 *	  Objects' uppers in peek.uppers.  An object's upper is not in its row:
 *	  a seal would update the row and leave a dead version of it, which a
 *	  long snapshot keeps and every later lookup of the row walks.  Seals
 *	  insert into peek.uppers instead (catalog_write.c); the upper is the
 *	  greatest there, and the maintenance runtime deletes the ones below it
 *	  now and then (catalog_prune_uppers).  Rows there name an object by its
 *	  id's sequence part (UPPER_KEY), which pg_restore and pg_upgrade keep.
 *	  Read here through the primary key's index, never by a query: a
 *	  subquery's generic plan, made while the table held a few rows,
 *	  scanned all of it for each object (a third of the maintenance
 *	  runtime's CPU under single-row writes).  A catalog from before 0.3
 *	  keeps the upper in the row.  Also opens peek's tables for a read by
 *	  index, as catalog.c reads rows, and tells the maintenance runtime
 *	  when no snapshot can still see the uppers a pruning would delete.
 *
 *	  Must not write (catalog_write.c seals and prunes).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "lib/stringinfo.h"
#include "storage/procarray.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "storage/catalog_internal.h"
#include "storage/catalog_uppers.h"

/*
 * Whether the installed catalog keeps uppers in peek.uppers (0.3): a
 * library of 0.3 runs an extension made at 0.1 or 0.2, not updated yet,
 * whose objects' rows still have their upper.
 */
bool
catalog_has_uppers(void)
{
	return OidIsValid(catalog_uppers_relid());
}

/* The table peek.uppers, or InvalidOid in a catalog before 0.3. */
Oid
catalog_uppers_relid(void)
{
	Oid			peek = get_namespace_oid("peek", true);

	return OidIsValid(peek) ? get_relname_relid("uppers", peek) : InvalidOid;
}

/* A query of OBJECT_COLUMNS for a catalog before 0.3, kept as the query is. */
const char *
catalog_query_before_uppers(const char *query)
{
	static HTAB *queries = NULL;
	typedef struct
	{
		const char *query;
		char	   *old;
	}			OldQuery;
	OldQuery   *entry;
	bool		found;

	if (queries == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(const char *);
		ctl.entrysize = sizeof(OldQuery);
		ctl.hcxt = TopMemoryContext;
		queries = hash_create("pg_peek catalog queries before 0.3", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(queries, &query, HASH_ENTER, &found);
	if (!found)
	{
		const char *at = strstr(query, OBJECT_UPPER);
		StringInfoData buf;

		if (at == NULL)
			elog(ERROR, "catalog query without an upper: %s", query);
		initStringInfo(&buf);
		appendBinaryStringInfo(&buf, query, at - query);
		appendStringInfoString(&buf, "upper");
		appendStringInfoString(&buf, at + strlen(OBJECT_UPPER));
		entry->old = MemoryContextStrdup(TopMemoryContext, buf.data);
		pfree(buf.data);
	}
	return entry->old;
}

/*
 * Open one of peek's tables to read it through one of its indexes
 * (*index), as catalog.c reads peek.objects and this file peek.uppers; the
 * caller closes it with AccessShareLock, letting the lock go.  The
 * extension dropped by now (its schema, table or index gone) is 55000, as
 * for a peek that waited through the drop.
 */
Relation
catalog_table_open(const char *table, const char *index_name, Oid *index)
{
	Oid			peek = get_namespace_oid("peek", true);
	Relation	rel = NULL;

	if (OidIsValid(peek))
		rel = try_table_open(get_relname_relid(table, peek), AccessShareLock);
	/* looked up under the table's lock, which DROP EXTENSION must wait for */
	*index = rel != NULL ? get_relname_relid(index_name, peek) : InvalidOid;
	if (!OidIsValid(*index))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension pg_peek is being dropped")));
	return rel;
}

/*
 * The uppers of n objects as the snapshot sees them: each the last of its
 * rows in peek.uppers' primary key (the rows deleted below it are not
 * visited), or 0.  Read without SPI, an index scan each however many rows
 * the table holds, the lock let go at once, as a lookup by name does.
 */
void
catalog_read_uppers(int n, const PeekObjectId *ids, int64 *uppers, Snapshot snapshot)
{
	Oid			index_oid;
	Relation	rel;
	Relation	index;
	AttrNumber	upper_attnum;

	if (n == 0)
		return;
	rel = catalog_table_open("uppers", "uppers_pkey", &index_oid);
	index = index_open(index_oid, AccessShareLock);
	upper_attnum = get_attnum(RelationGetRelid(rel), "upper");
	for (int i = 0; i < n; i++)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tuple;
		bool		isnull;

		/* an ordered scan's keys name the index's columns */
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(ids[i] & UPPER_KEY_MASK));
		scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
		tuple = systable_getnext_ordered(scan, BackwardScanDirection);
		uppers[i] = HeapTupleIsValid(tuple) ?
			DatumGetInt64(heap_getattr(tuple, upper_attnum, RelationGetDescr(rel), &isnull)) : 0;
		systable_endscan_ordered(scan);
	}
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/* An object's upper as the snapshot sees it (catalog_read_uppers). */
int64
catalog_read_upper(PeekObjectId id, Snapshot snapshot)
{
	int64		upper;

	catalog_read_uppers(1, &id, &upper, snapshot);
	return upper;
}

/*
 * The upper of an object whose row the transaction has just locked, for a
 * writer to write at.  The lock query's snapshot may predate the seal of a
 * writer it waited for (which updates no row, so the lock neither returns
 * the row's later version nor fails as it would after an update): read it
 * again with the latest snapshot, which has every seal that preceded the
 * lock.  A transaction that must see what it writes after (REPEATABLE
 * READ, SERIALIZABLE) fails instead, as its lock failed when seals updated
 * the row.
 */
int64
catalog_locked_upper(PeekObjectId id, int64 upper)
{
	Snapshot	latest;
	int64		latest_upper;

	/* before 0.3, the lock returned the row's latest version, upper and all */
	if (!catalog_has_uppers())
		return upper;
	latest = RegisterSnapshot(GetLatestSnapshot());
	latest_upper = catalog_read_upper(id, latest);
	UnregisterSnapshot(latest);
	if (latest_upper != upper && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
	return latest_upper;
}

/*
 * Whether no snapshot open now is older than the maintenance runtime's
 * previous look at the uppers, an interval ago (since: the next
 * transaction id then, or after the pruning it let through committed;
 * invalid: none yet).  While no xid is taken a snapshot's xmin is the next
 * xid, so the horizon stays at the mark whether or not an older snapshot
 * has ended: the look then takes an xid, which becomes the next mark
 * (*mark), and the next look tells the two apart, or the uppers would keep
 * their rows until some other transaction took one.  Rows a pruning
 * deletes stay dead while an older snapshot lasts, so pruning waits for
 * it, and meanwhile the uppers only grow by live rows, whose latest a
 * backward scan still finds at once.  The horizon is peek.uppers', as
 * VACUUM's: this database's snapshots and prepared transactions, and what
 * a standby's feedback holds, not other databases' snapshots nor logical
 * slots' catalog horizon (a source's own slot lags behind).
 */
bool
catalog_uppers_no_snapshot_before(TransactionId since, TransactionId *mark)
{
	Oid			uppers = catalog_uppers_relid();
	Relation	rel;
	TransactionId horizon;

	/* (a catalog before 0.3, or one an ALTER EXTENSION UPDATE is making) */
	if (!TransactionIdIsValid(since) || !OidIsValid(uppers))
		return false;
	rel = table_open(uppers, AccessShareLock);
	horizon = GetOldestNonRemovableTransactionId(rel);
	table_close(rel, AccessShareLock);
	if (TransactionIdPrecedes(since, horizon))
		return true;
	if (TransactionIdEquals(horizon, ReadNextTransactionId()))
		*mark = GetTopTransactionId();
	return false;
}
