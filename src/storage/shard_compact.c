/*-------------------------------------------------------------------------
 *
 * shard_compact.c
 *	  Compaction: the recent rows up to the since folded into the base row
 *	  by row in the maintenance runtime's transaction, without a lock a
 *	  writer waits for, and a captured TRUNCATE's retraction of everything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "storage/catalog.h"
#include "ipc/notify.h"
#include "storage/persist.h"
#include "storage/shard_internal.h"
#include "common/rows.h"
#include "common/spi.h"

/*
 * Append one update per row with a non-zero count, at time, with the count
 * times sign as its diff.  Returns how many were appended.
 */
static int64
append_counts(ShardWriter *w, RowCounts *counts, int64 time, int64 sign)
{
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		n = 0;

	hash_seq_init(&status, counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		if (rc->count == 0)
			continue;
		shard_insert(w, time, sign * (int64) rc->count, row_count_datum(rc));
		n++;
	}
	return n;
}

/*
 * Write a row's base count: one row, or, out of bigint's range,
 * bigint-sized parts and a zero row that flags them.  Returns the rows
 * written.
 */
static int64
write_base_row(ShardWriter *w, Datum row, int128 count)
{
	int64		n = 0;

	if (count == 0)
		return 0;
	if (count < PG_INT64_MIN || count > PG_INT64_MAX)
	{
		shard_insert(w, BASE_TIME, 0, row);
		n++;
	}
	while (count > PG_INT64_MAX || count < PG_INT64_MIN)
	{
		int64		part = count > 0 ? PG_INT64_MAX : PG_INT64_MIN;

		shard_insert(w, BASE_TIME, part, row);
		count -= part;
		n++;
	}
	shard_insert(w, BASE_TIME, (int64) count, row);
	return n + 1;
}

/*
 * A fold's rows: each one's sum, and whether it must be rewritten: its
 * shard rows' weights, 1 for a base row and 2 for a recent one (which must
 * move to the base), above 1 if so.
 */
/* A shard row a fold reads, and its row's weight. */
typedef struct FoldedRow
{
	ItemPointerData tid;
	RowCount   *weight;
} FoldedRow;

typedef struct Fold
{
	RowCounts  *counts;
	RowCounts  *weights;		/* base row 1, recent row 2: > 1 is rewritten */
	FoldedRow  *rows;
	int64		nrows;
	int64		capacity;
} Fold;

static bool
fold_count(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Fold	   *f = arg;

	if (f->nrows == f->capacity)
	{
		f->capacity *= 2;
		f->rows = repalloc_huge(f->rows, sizeof(FoldedRow) * f->capacity);
	}
	row_counts_add(f->counts, row, diff);
	f->rows[f->nrows].tid = *tid;
	f->rows[f->nrows++].weight = row_counts_add(f->weights, row, time > b->since ? 2 : 1);
	return true;
}

/*
 * Delete a shard row a compaction replaces.  Another transaction may have
 * deleted or updated it since the fold's snapshot (a loader folding the
 * same shard, the 0.1 to 0.2 upgrade rewriting its base): the fold then
 * counted a row that is gone, so it gives up with a serialization failure,
 * which its caller treats as transient and retries on a new snapshot.
 */
static void
delete_replaced(Relation rel, ItemPointer tid, Snapshot snapshot)
{
	TM_FailureData tmfd;
	TM_Result	result;

	result = table_tuple_delete(rel, tid, GetCurrentCommandId(true), snapshot,
								InvalidSnapshot, true, &tmfd, false);
	if (result == TM_Updated || result == TM_Deleted)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not compact shard \"%s\" due to a concurrent change of its rows",
						RelationGetRelationName(rel))));
	if (result != TM_Ok)
		elog(ERROR, "unexpected table_tuple_delete status: %u", result);
}

/*
 * Fold the recent rows up to since into the base: each row with updates
 * there (and each flagged base row) gets its shard rows replaced by one base
 * row with their sum.  A row with a single base row is already so and stays
 * where it is.  Touches only those rows, read once: writers, who insert
 * after since, never wait for it.
 */
static int64
fold(ShardWriter *w, ShardBase *b, int64 since)
{
	Fold		f;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		deleted = 0;
	int64		written = 0;

	f.counts = row_counts_create(shard_row_type(w->rel));
	f.weights = row_counts_create(shard_row_type(w->rel));
	f.nrows = 0;
	f.capacity = 64;
	f.rows = palloc(sizeof(FoldedRow) * f.capacity);
	scan_recent(b, since, fold_count, &f);
	collect_flagged(b, f.counts);
	scan_base_rows(b, f.counts, fold_count, &f);
	for (int64 i = 0; i < f.nrows; i++)
		if (f.rows[i].weight->count > 1)
		{
			delete_replaced(w->rel, &f.rows[i].tid, b->snapshot);
			deleted++;
		}
	hash_seq_init(&status, f.counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		if (row_counts_find(f.weights, row_count_datum(rc))->count > 1)
			written += write_base_row(w, row_count_datum(rc), rc->count);
	pfree(f.rows);
	MemoryContextDelete(f.counts->cxt);
	MemoryContextDelete(f.weights->cxt);
	return deleted - written;
}

/* The rows a whole compaction replaces: their sums, and their tids. */
typedef struct Replaced
{
	RowCounts  *counts;
	TidList		tids;
} Replaced;

static bool
replace_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Replaced   *r = arg;

	row_counts_add(r->counts, row, diff);
	tid_list_add(&r->tids, tid);
	return true;
}

/*
 * The shard read whole (see ShardBase): every update at or before since
 * is replaced by its row's base rows (write_base_row: one, or parts when
 * the sum leaves bigint's range), so that no row is left between the base
 * and the since.
 */
static int64
compact_whole(ShardWriter *w, ShardBase *b, int64 since)
{
	Replaced	r;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		written = 0;

	r.counts = row_counts_create(shard_row_type(w->rel));
	tid_list_init(&r.tids);
	scan_heap(b, PG_INT64_MIN, since, replace_row, &r);
	for (int64 i = 0; i < r.tids.n; i++)
		delete_replaced(w->rel, &r.tids.tids[i], b->snapshot);
	hash_seq_init(&status, r.counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		written += write_base_row(w, row_count_datum(rc), rc->count);
	MemoryContextDelete(r.counts->cxt);
	pfree(r.tids.tids);
	return r.tids.n - written;
}

/*
 * Compaction of a shard whose durable since is durable_since to since.  Runs in the
 * maintenance runtime's transaction, after the registry's since was raised
 * (so no peek below it can start); the caller raises the durable since in
 * the same transaction.  Returns how many rows the shard lost.
 */
int64
persist_compact(Oid shard, int64 durable_since, int64 since)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = GetActiveSnapshot();
	int64		lost;

	shard_writer_open(&w, shard);
	if (base_open(&b, w.rel, snapshot, base_since(durable_since), RowExclusiveLock))
		lost = fold(&w, &b, since);
	else
		lost = compact_whole(&w, &b, since);
	base_close(&b, RowExclusiveLock);
	shard_writer_close(&w);
	return lost;
}
/*
 * Retract the shard's whole contents at time (a captured TRUNCATE): every
 * row present at time gets an update cancelling its multiplicity.  Sees the
 * caller's own earlier appends.
 */
void
persist_retract_all(Oid shard, int64 time)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	RowCounts  *counts;

	shard_writer_open(&w, shard);
	counts = row_counts_create(shard_row_type(w.rel));
	base_open_heap(&b, w.rel, snapshot);
	scan_heap(&b, PG_INT64_MIN, time, count_row, counts);
	base_close(&b, NoLock);
	UnregisterSnapshot(snapshot);
	(void) append_counts(&w, counts, time, -1);
	shard_writer_close(&w);
	MemoryContextDelete(counts->cxt);
}

