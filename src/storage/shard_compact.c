/*-------------------------------------------------------------------------
 *
 * shard_compact.c
 *	  Folds: the recent updates folded into the base row by row (kept as
 *	  history), the history the since passed deleted, and the catalog's
 *	  base time and since changed, in the maintenance runtime's
 *	  transaction, without a lock a writer waits for; a first base written
 *	  whole (a view's hydration); and a captured TRUNCATE's retraction of
 *	  everything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"

#include "storage/catalog.h"
#include "storage/catalog_write.h"
#include "storage/shard_internal.h"

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
 * Write a row's count straight into the base of a shard that has no base
 * yet (a view's first hydration, in the transaction that then folds at its
 * since, which sets the base's time): the row normalized, each distinct row
 * once.  Spares the fold's update rows written, read back and deleted.
 */
void
persist_writer_add_base(ShardWriter *w, Datum row, int64 count)
{
	MemoryContext old = MemoryContextSwitchTo(w->per_row);

	(void) write_base_row(w, row_normalize(w->row_desc, row), count);
	MemoryContextSwitchTo(old);
	MemoryContextReset(w->per_row);
}

/*
 * A shard row a fold reads: its tid, its row's weight (see Fold) and what
 * becomes of it.
 */
typedef enum FoldedFate
{
	FOLD_BASE,					/* a base row: replaced if its row is rewritten */
	FOLD_KEEP,					/* an update after the since: kept as history */
	FOLD_DROP					/* an update at or before the since: deleted */
} FoldedFate;

typedef struct FoldedRow
{
	ItemPointerData tid;
	RowCount   *weight;
	FoldedFate	fate;
} FoldedRow;

/*
 * A fold: each row's sum, and whether its base must be rewritten: its
 * shard rows' weights, 1 for a base row and 2 for an update folded in, above
 * 1 if so.
 */
typedef struct Fold
{
	RowCounts  *counts;
	RowCounts  *weights;
	FoldedRow  *rows;
	int64		nrows;
	int64		capacity;
	int64		since;			/* the updates at or before it are deleted */
} Fold;

static void
fold_add(Fold *f, ItemPointer tid, Datum row, int64 diff, int64 weight, FoldedFate fate)
{
	if (f->nrows == f->capacity)
	{
		f->capacity *= 2;
		f->rows = repalloc_huge(f->rows, sizeof(FoldedRow) * f->capacity);
	}
	row_counts_add(f->counts, row, diff);
	f->rows[f->nrows].tid = *tid;
	f->rows[f->nrows].fate = fate;
	f->rows[f->nrows++].weight = row_counts_add(f->weights, row, weight);
}

static bool
fold_update(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Fold	   *f = arg;

	fold_add(f, tid, row, diff, 2, time <= f->since ? FOLD_DROP : FOLD_KEEP);
	return true;
}

/*
 * Where a bounded fold stops (see fold_cut): the updates are counted in
 * time order; cut is the last time read whole within max_rows updates, or
 * the first time's end at or after least_time if that needs more.
 */
typedef struct FoldCut
{
	int64		max_rows;
	int64		least_time;
	int64		rows;
	int64		last;			/* the time of the last update counted */
	int64		cut;
} FoldCut;

static bool
cut_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	FoldCut    *c = arg;

	if (time != c->last)
	{
		/* the updates up to last were counted whole */
		if (c->rows <= c->max_rows || c->cut < c->least_time)
			c->cut = c->last;
		c->last = time;
	}
	c->rows++;
	/* the time being counted does not fit: stop at the cut */
	return c->rows <= c->max_rows || c->cut < c->least_time;
}

/*
 * The time a fold of the updates after the base's time, up to target, may
 * go to with at most max_rows updates, whole times only (a base is the
 * contents at a time's end): target if they fit, else the last time that
 * fits, but at least least_time.  A time with more than max_rows updates
 * of its own stops a bounded fold before it, unless least_time is past it
 * (compaction's, or a first time folded alone).
 */
static int64
fold_cut(ShardBase *b, int64 target, int64 max_rows, int64 least_time)
{
	FoldCut		c = {max_rows, least_time, 0, b->base_time, b->base_time};

	shard_scan_updates(b, b->base_time, target, cut_row, &c);
	return c.rows <= c.max_rows || c.cut < c.least_time ? target : c.cut;
}

static bool
fold_base_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	fold_add((Fold *) arg, tid, row, diff, 1, FOLD_BASE);
	return true;
}

/*
 * Delete a shard row a fold replaces or compaction lets go of.  Another
 * transaction may have deleted or updated it since the fold's snapshot (a
 * loader folding the same shard, the 0.1 to 0.2 upgrade rewriting its
 * base): the fold then counted a row that is gone, so it gives up with a
 * serialization failure, which its caller treats as transient and retries
 * on a new snapshot.
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

static bool
delete_history_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	delete_replaced(b->rel, tid, b->snapshot);
	return true;
}

/*
 * Fold the updates after the base's time into the base, up to target:
 * each row with updates there (and each flagged base row) gets its base
 * rows replaced by one with their sum.  A row with
 * a single base row is already so and stays where it is.  The updates
 * folded stay as history, but those at or before the since; the history
 * the since passed (from durable_since on) is deleted.  Touches only those
 * rows, read once: writers, who insert after the upper, never wait for
 * it.  Returns the base's new time.
 */
static int64
fold(ShardWriter *w, ShardBase *b, Fold *f, int64 durable_since, int64 target)
{
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	f->counts = row_counts_create(shard_row_type(w->rel));
	f->weights = row_counts_create(shard_row_type(w->rel));
	f->nrows = 0;
	f->capacity = 64;
	f->rows = palloc(sizeof(FoldedRow) * f->capacity);
	shard_scan_updates(b, b->base_time, target, fold_update, f);
	shard_collect_flagged(b, f->counts);
	shard_scan_base_rows(b, f->counts, fold_base_row, f);
	/* (a fold of a load's millions of rows: a fast stop must not wait for it) */
	for (int64 i = 0; i < f->nrows; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (f->rows[i].fate == FOLD_DROP ||
			(f->rows[i].fate == FOLD_BASE && f->rows[i].weight->count > 1))
			delete_replaced(w->rel, &f->rows[i].tid, b->snapshot);
	}
	hash_seq_init(&status, f->counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		if (row_counts_find(f->weights, row_count_datum(rc))->count > 1)
			(void) write_base_row(w, row_count_datum(rc), rc->count);
	}
	/* the history the since passed, which the base counted already */
	shard_scan_updates(b, durable_since, Min(f->since, b->base_time), delete_history_row, NULL);
	pfree(f->rows);
	MemoryContextDelete(f->counts->cxt);
	MemoryContextDelete(f->weights->cxt);
	return Max(target, b->base_time);
}

/*
 * The shard read whole (see ShardBase): the base moves to new_base_time,
 * at or after the since: every base row and every update at or before the
 * since is replaced by the rows' base rows (write_base_row: one, or parts
 * when the sum leaves bigint's range) with their counts at new_base_time;
 * the updates after the since stay as history.
 */
static void
compact_whole(ShardWriter *w, ShardBase *b, int64 since, int64 new_base_time)
{
	RowCounts  *counts = row_counts_create(shard_row_type(w->rel));
	TidList		tids;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	ShardCursor c;
	int64		time;
	int64		diff;
	Datum		row;

	shard_count_at(b, new_base_time, counts);
	shard_tid_list_init(&tids);
	shard_cursor_open_heap(&c, b, PG_INT64_MIN, since);
	while (shard_cursor_next(&c, &time, &diff, &row))
		shard_tid_list_add(&tids, c.tid);
	shard_cursor_close(&c);
	for (int64 i = 0; i < tids.n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		delete_replaced(w->rel, &tids.tids[i], b->snapshot);
	}
	hash_seq_init(&status, counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();
		(void) write_base_row(w, row_count_datum(rc), rc->count);
	}
	MemoryContextDelete(counts->cxt);
	pfree(tids.tids);
}

/*
 * Fold a collection's shard: raise its since to since (0: keep it),
 * deleting the history at or before it, and move its base on towards
 * target (a time below the upper): at least to the since, and, with
 * max_rows >= 0, only as far as whole times of at most max_rows updates
 * in all go (fold_cut), but with first_alone at least over the first time
 * after the base however many updates it has (a big write).  Runs in the maintenance runtime's transaction (or
 * a loader's), after the registry's since was raised (so no peek below it
 * can start), and changes the catalog row in it, so that a peek sees base
 * and catalog of one fold or of none.  A shard read whole, or one whose catalog is from before 0.3,
 * moves its base only as far as the since.  Returns the base's new time.
 */
int64
persist_fold(PeekObjectId id, Oid shard, int64 since, int64 target, int64 max_rows,
			 bool first_alone)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = GetActiveSnapshot();
	int64		base_time;
	int64		durable_since = catalog_read_since(id, snapshot, &base_time);
	int64		new_base_time;

	since = Max(since, durable_since);
	/* a catalog from before 0.3 keeps the base at the since */
	if (!catalog_keeps_base_time())
		target = since;
	shard_writer_open(&w, shard);
	if (shard_base_open(&b, w.rel, snapshot, base_time, RowExclusiveLock))
	{
		Fold		f;

		/* a raised since needs the base at it; otherwise it may stay */
		target = Max(target, since);
		if (max_rows >= 0)
			target = fold_cut(&b, target, max_rows,
							  since > durable_since ? since : first_alone ? base_time + 1 : base_time);
		f.since = since;
		new_base_time = fold(&w, &b, &f, durable_since, target);
	}
	else
	{
		new_base_time = Max(base_time, since);
		if (new_base_time > base_time || since > durable_since)
			compact_whole(&w, &b, since, new_base_time);
	}
	shard_base_close(&b, RowExclusiveLock);
	shard_writer_close(&w);
	if (new_base_time != base_time || since != durable_since)
		catalog_set_base(id, since, base_time, new_base_time);
	return new_base_time;
}

/*
 * How many updates a compaction of a collection's shard to since touches
 * (persist_fold with since as target): those after its durable since
 * (*durable_since) up to since, which it folds into the base or deletes as
 * history the base has counted; counted up to limit + 1, under the active
 * snapshot.  A shard read whole is folded whole: PG_INT64_MAX.
 */
int64
persist_fold_rows(PeekObjectId id, Oid shard, int64 since, int64 limit, int64 *durable_since)
{
	Snapshot	snapshot = GetActiveSnapshot();
	int64		base_time;
	Relation	rel;
	ShardBase	b;
	FoldCut		c = {limit, PG_INT64_MIN, 0, PG_INT64_MIN, PG_INT64_MIN};

	shard_load_row_type(shard);
	rel = table_open(shard, AccessShareLock);

	*durable_since = catalog_read_since(id, snapshot, &base_time);
	/* (cut_row counts them, stopping past limit with no least time) */
	if (shard_base_open(&b, rel, snapshot, base_time, AccessShareLock))
		shard_scan_updates(&b, *durable_since, since, cut_row, &c);
	else
		c.rows = PG_INT64_MAX;
	shard_base_close(&b, AccessShareLock);
	table_close(rel, AccessShareLock);
	return c.rows;
}

/*
 * Retract the shard's whole contents at time (a captured TRUNCATE): every
 * row present at time gets an update cancelling its multiplicity.  Sees the
 * caller's own earlier appends.
 */
void
persist_retract_all(PeekObjectId id, Oid shard, int64 time)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	RowCounts  *counts;

	int64		base_time;

	(void) catalog_read_since(id, snapshot, &base_time);
	shard_writer_open(&w, shard);
	counts = row_counts_create(shard_row_type(w.rel));
	shard_base_open_heap(&b, w.rel, snapshot, base_time);
	shard_count_at(&b, time, counts);
	shard_base_close(&b, NoLock);
	UnregisterSnapshot(snapshot);
	(void) append_counts(&w, counts, time, -1);
	shard_writer_close(&w);
	MemoryContextDelete(counts->cxt);
}

