/*-------------------------------------------------------------------------
 *
 * shard_compact.c
 *	  Folds: the recent updates folded into the base row by row (kept as
 *	  history), the history the since passed deleted, and the catalog's
 *	  base time and since changed, in the maintenance runtime's
 *	  transaction, without a lock a writer waits for; a first base written
 *	  whole (a view's hydration); and a captured TRUNCATE's retraction of
 *	  everything.  Each stays within maintenance_work_mem however many
 *	  rows it reads: it sorts them by row (shard_sort.c: a tuplesort, in
 *	  temporary files past the budget) and goes through them a distinct
 *	  row at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "storage/catalog.h"
#include "storage/catalog_write.h"
#include "storage/shard_internal.h"

/*
 * Write a row's count at a time: one row, or, out of bigint's range,
 * bigint-sized parts (readers sum a row's diffs in 128 bits).  Returns the
 * rows written.
 */
static int64
write_count(ShardWriter *w, int64 time, Datum row, int128 count)
{
	int64		n = 1;

	while (count > PG_INT64_MAX || count < PG_INT64_MIN)
	{
		int64		part = count > 0 ? PG_INT64_MAX : PG_INT64_MIN;

		shard_insert(w, time, part, row);
		count -= part;
		n++;
	}
	shard_insert(w, time, (int64) count, row);
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
	if (count == 0)
		return 0;
	if (count < PG_INT64_MIN || count > PG_INT64_MAX)
	{
		shard_insert(w, BASE_TIME, 0, row);
		return 1 + write_count(w, BASE_TIME, row, count);
	}
	return write_count(w, BASE_TIME, row, count);
}

/*
 * Write a row's count straight into the base of a shard that has no base
 * yet (a view's first hydration, in the transaction that then folds at its
 * since, which sets the base's time): each distinct row once, with the
 * pending appends (one multi-insert a batch).  Spares the fold's update
 * rows written, read back and deleted.
 */
void
persist_writer_add_base(ShardWriter *w, Datum row, int64 count)
{
	if (count != 0)
		persist_writer_add(w, BASE_TIME, count, row);
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
delete_history_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	shard_delete_replaced(b->rel, tid, b->snapshot);
	return true;
}

static bool
sort_update(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	ShardSort  *s = arg;

	shard_sort_put(s, tid, diff, 1, time <= s->since ? FOLD_DROP : FOLD_KEEP, row);
	return true;
}

static bool
sort_flag_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	shard_sort_put((ShardSort *) arg, tid, 0, 0, FOLD_FLAG, row);
	return true;
}

/*
 * A fold's row: its base rows, found through the rows index, summed
 * into g and their tids in tids (a flagged row may have several).  Rows of
 * other images with the same hash are passed over, so are the rows this
 * fold wrote (its snapshot does not see its own command's rows).
 */
static void
fold_group_base_rows(ShardSort *s, ShardCursor *probe, SortedGroup *g, TidList *tids)
{
	int64		time;
	int64		diff;
	Datum		row;

	tids->n = 0;
	shard_cursor_probe(probe, g->hash);
	while (shard_cursor_next(probe, &time, &diff, &row))
	{
		MemoryContext old = MemoryContextSwitchTo(s->per_row);
		struct varlena *image = (struct varlena *)
			DatumGetPointer(row_from_shard(s->desc, s->template, row));
		bool		same = time == BASE_TIME &&
			row_image_is(g->row, VARDATA(image), VARSIZE(image) - VARHDRSZ);

		MemoryContextSwitchTo(old);
		MemoryContextReset(s->per_row);
		if (!same)
			continue;
		g->count += diff;
		g->weight += fold_weight(FOLD_BASE);
		shard_tid_list_add(tids, probe->tid);
	}
}

/*
 * Fold the updates after the base's time into the base, up to target:
 * each row with updates there (and each flagged base row) gets its base
 * rows replaced by one with their sum.  A row with a single base row is
 * already so and stays where it is.  The updates folded stay as history,
 * but those at or before the since; the history the since passed (from
 * durable_since on) is deleted.  Touches only those rows, read once:
 * writers, who insert after the upper, never wait for it.  The updates
 * and the flagged rows are sorted by row (within maintenance_work_mem),
 * then each row's base rows looked up by its hash and, if its weight is
 * above 1, replaced.  Returns the base's new time.
 */
static int64
fold(ShardWriter *w, ShardBase *b, int64 since, int64 durable_since, int64 target)
{
	ShardSort	s;
	SortedGroup	g;
	ShardCursor probe;
	TidList		base_rows;

	shard_sort_begin(&s, b, since, "a fold", maintenance_work_mem, "maintenance_work_mem");
	shard_scan_updates(b, b->base_time, target, sort_update, &s);
	shard_scan_flagged(b, sort_flag_row, &s);
	shard_sort_performsort(&s);
	shard_cursor_open_probe(&probe, b);
	shard_tid_list_init(&base_rows);
	while (shard_sort_next_group(&s, &g))
	{
		fold_group_base_rows(&s, &probe, &g, &base_rows);
		if (g.weight <= 1)
			continue;
		for (int64 i = 0; i < base_rows.n; i++)
			shard_delete_replaced(w->rel, &base_rows.tids[i], b->snapshot);
		(void) write_base_row(w, g.row, g.count);
	}
	shard_cursor_close(&probe);
	pfree(base_rows.tids);
	shard_sort_end(&s);
	/* the history the since passed, which the base counted already */
	shard_scan_updates(b, durable_since, Min(since, b->base_time), delete_history_row, NULL);
	return Max(target, b->base_time);
}

/*
 * The shard read whole (see ShardBase): the base moves to new_base_time,
 * at or after the since: every base row and every update at or before the
 * since is replaced by the rows' base rows (write_base_row: one, or parts
 * when the sum leaves bigint's range) with their counts at new_base_time;
 * the updates after the since stay as history.  Sorted by row first.
 */
static void
compact_whole(ShardWriter *w, ShardBase *b, int64 since, int64 new_base_time)
{
	ShardSort	s;
	SortedGroup	g;

	sort_whole(&s, b, since, new_base_time, "a fold of the shard read whole",
			   maintenance_work_mem, "maintenance_work_mem");
	while (shard_sort_next_group(&s, &g))
		(void) write_base_row(w, g.row, g.count);
	shard_sort_end(&s);
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
		/* a raised since needs the base at it; otherwise it may stay */
		target = Max(target, since);
		if (max_rows >= 0)
			target = fold_cut(&b, target, max_rows,
							  since > durable_since ? since : first_alone ? base_time + 1 : base_time);
		new_base_time = fold(&w, &b, since, durable_since, target);
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
 * caller's own earlier appends.  Sorted by row first.
 */
void
persist_retract_all(PeekObjectId id, Oid shard, int64 time)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ShardSort	s;
	SortedGroup	g;
	int64		base_time;

	(void) catalog_read_since(id, snapshot, &base_time);
	shard_writer_open(&w, shard);
	shard_base_open_heap(&b, w.rel, snapshot, base_time);
	sort_whole(&s, &b, PG_INT64_MIN, time, "a retraction of everything",
			   maintenance_work_mem, "maintenance_work_mem");
	while (shard_sort_next_group(&s, &g))
		if (g.count != 0)
			(void) write_count(&w, time, g.row, -g.count);
	shard_sort_end(&s);
	shard_base_close(&b, NoLock);
	UnregisterSnapshot(snapshot);
	shard_writer_close(&w);
}
