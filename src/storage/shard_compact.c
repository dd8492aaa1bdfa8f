/*-------------------------------------------------------------------------
 *
 * shard_compact.c
 *	  Folds: the recent updates folded into the base row by row (kept as
 *	  history), the history the since passed deleted, and the catalog's
 *	  base time and since changed, in the maintenance runtime's
 *	  transaction, without a lock a writer waits for; a first base written
 *	  whole (a view's hydration); and a captured TRUNCATE's retraction of
 *	  everything.  Each stays within maintenance_work_mem however many
 *	  rows it reads: it sorts them by row (a tuplesort, in temporary files
 *	  past the budget) and goes through them a distinct row at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

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

/* What becomes of a shard row a fold reads. */
typedef enum FoldedFate
{
	FOLD_BASE,					/* a base row: replaced if its row is rewritten */
	FOLD_KEEP,					/* an update after the since: kept as history */
	FOLD_DROP,					/* an update at or before the since: deleted */
	FOLD_FLAG					/* a flagged row's mark: its base rows are read */
} FoldedFate;

/*
 * A shard row's part in its row's weight: a row whose weight is above 1
 * (an update folded in, or more than one base row) gets its base
 * rewritten.
 */
static int
fold_weight(FoldedFate fate)
{
	return fate == FOLD_BASE ? 1 : fate == FOLD_FLAG ? 0 : 2;
}

/*
 * Shard rows sorted by their row's hash and image, in maintenance_work_mem
 * (in temporary files past it), to be read a distinct row at a time
 * (fold_sort_next_group).  The hash is the rows index's (row_hash), which
 * a fold's probes look base rows up by.
 */
typedef struct FoldSort
{
	ShardBase  *b;				/* FOLD_DROP rows are deleted in its snapshot */
	int64		since;			/* the updates at or before it are dropped */
	const char *what;			/* what the rows are sorted for, for the log */
	TupleDesc	desc;			/* rows are normalized with it */
	HeapTupleHeader template;	/* row_header_template(desc) */
	Tuplesortstate *sort;
	TupleTableSlot *in;
	TupleTableSlot *out;		/* the next row's first shard row, if more */
	bool		more;
	MemoryContext per_row;
	MemoryContext group;		/* a distinct row's, until the next */
} FoldSort;

/* The columns of a FoldSort's shard rows, sorted by hash, then image. */
#define SORTED_HASH		1
#define SORTED_IMAGE	2
#define SORTED_DIFF		3
#define SORTED_SIGN		4		/* what the diff counts for: 1, -1 or 0 */
#define SORTED_FATE		5
#define SORTED_TID		6

/* A distinct row of a FoldSort, its sums in 128 bits (no overflow). */
typedef struct FoldGroup
{
	int32		hash;
	Datum		row;			/* its image, in the FoldSort's group context */
	int128		count;
	int64		weight;
} FoldGroup;

static void
fold_sort_begin(FoldSort *s, ShardBase *b, int64 since, const char *what)
{
	TupleDesc	sorted = CreateTemplateTupleDesc(SORTED_TID);
	AttrNumber	keys[2] = {SORTED_HASH, SORTED_IMAGE};
	Oid			operators[2] = {Int4LessOperator, ByteaLessOperator};
	Oid			collations[2] = {InvalidOid, InvalidOid};
	bool		nulls_first[2] = {false, false};

	TupleDescInitEntry(sorted, SORTED_HASH, "hash", INT4OID, -1, 0);
	TupleDescInitEntry(sorted, SORTED_IMAGE, "image", BYTEAOID, -1, 0);
	TupleDescInitEntry(sorted, SORTED_DIFF, "diff", INT8OID, -1, 0);
	TupleDescInitEntry(sorted, SORTED_SIGN, "sign", INT2OID, -1, 0);
	TupleDescInitEntry(sorted, SORTED_FATE, "fate", INT2OID, -1, 0);
	TupleDescInitEntry(sorted, SORTED_TID, "tid", TIDOID, -1, 0);
	s->b = b;
	s->since = since;
	s->what = what;
	s->desc = row_desc(shard_row_type(b->rel));
	s->template = row_header_template(s->desc);
	s->sort = tuplesort_begin_heap(sorted, 2, keys, operators, collations, nulls_first,
								   maintenance_work_mem, NULL, TUPLESORT_NONE);
	s->in = MakeSingleTupleTableSlot(sorted, &TTSOpsVirtual);
	s->out = MakeSingleTupleTableSlot(sorted, &TTSOpsMinimalTuple);
	s->more = false;
	s->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek sorted row",
									   ALLOCSET_SMALL_SIZES);
	s->group = AllocSetContextCreate(CurrentMemoryContext, "pg_peek sorted group",
									 ALLOCSET_SMALL_SIZES);
}

/* Sort a shard row, whose diff counts sign times in its row's count. */
static void
fold_sort_put(FoldSort *s, ItemPointer tid, int64 diff, int sign, FoldedFate fate, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(s->per_row);
	Datum		image = row_from_shard(s->desc, s->template, row);
	TupleTableSlot *in = s->in;

	ExecClearTuple(in);
	in->tts_values[SORTED_HASH - 1] = Int32GetDatum((int32) row_hash(s->desc, image));
	in->tts_values[SORTED_IMAGE - 1] = image;
	in->tts_values[SORTED_DIFF - 1] = Int64GetDatum(diff);
	in->tts_values[SORTED_SIGN - 1] = Int16GetDatum(sign);
	in->tts_values[SORTED_FATE - 1] = Int16GetDatum(fate);
	in->tts_values[SORTED_TID - 1] = PointerGetDatum(tid);
	memset(in->tts_isnull, 0, sizeof(bool) * SORTED_TID);
	ExecStoreVirtualTuple(in);
	tuplesort_puttupleslot(s->sort, in);
	MemoryContextSwitchTo(old);
	MemoryContextReset(s->per_row);
}

/* Sort the rows put, and read the first. */
static void
fold_sort_performsort(FoldSort *s)
{
	TuplesortInstrumentation stats;

	tuplesort_performsort(s->sort);
	tuplesort_get_stats(s->sort, &stats);
	if (stats.spaceType == SORT_SPACE_TYPE_DISK)
		ereport(DEBUG1,
				(errmsg_internal("pg_peek sorted the rows of shard \"%s\" for %s in temporary files (%ld kB): "
								 "they pass maintenance_work_mem (%d kB)",
								 RelationGetRelationName(s->b->rel), s->what,
								 (long) stats.spaceUsed, maintenance_work_mem)));
	s->more = tuplesort_gettupleslot(s->sort, true, false, s->out, NULL);
}

static Datum
sorted_field(FoldSort *s, AttrNumber field)
{
	bool		isnull;

	return slot_getattr(s->out, field, &isnull);
}

/* Is a row datum's image the len bytes at image? */
static bool
image_is(Datum row, const char *image, Size len)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(row);

	return VARSIZE(v) - VARHDRSZ == len && memcmp(VARDATA(v), image, len) == 0;
}

static bool
sorted_row_is(FoldSort *s, FoldGroup *g)
{
	struct varlena *image = (struct varlena *) DatumGetPointer(sorted_field(s, SORTED_IMAGE));

	return DatumGetInt32(sorted_field(s, SORTED_HASH)) == g->hash &&
		image_is(g->row, VARDATA_ANY(image), VARSIZE_ANY_EXHDR(image));
}

/*
 * The next distinct row of the sorted shard rows: its image (valid until
 * the next call), count and weight summed, its FOLD_DROP shard rows
 * deleted on the way; false after the last.
 */
static bool
fold_sort_next_group(FoldSort *s, FoldGroup *g)
{
	struct varlena *image;
	Size		len;
	char	   *row;

	MemoryContextReset(s->group);
	if (!s->more)
		return false;
	image = (struct varlena *) DatumGetPointer(sorted_field(s, SORTED_IMAGE));
	len = VARSIZE_ANY_EXHDR(image);
	row = MemoryContextAlloc(s->group, len + VARHDRSZ);
	SET_VARSIZE(row, len + VARHDRSZ);
	memcpy(VARDATA(row), VARDATA_ANY(image), len);
	g->row = PointerGetDatum(row);
	g->hash = DatumGetInt32(sorted_field(s, SORTED_HASH));
	g->count = 0;
	g->weight = 0;
	do
	{
		FoldedFate	fate = DatumGetInt16(sorted_field(s, SORTED_FATE));

		CHECK_FOR_INTERRUPTS();
		g->count += DatumGetInt16(sorted_field(s, SORTED_SIGN)) *
			(int128) DatumGetInt64(sorted_field(s, SORTED_DIFF));
		g->weight += fold_weight(fate);
		if (fate == FOLD_DROP)
			delete_replaced(s->b->rel, (ItemPointer) DatumGetPointer(sorted_field(s, SORTED_TID)),
							s->b->snapshot);
		s->more = tuplesort_gettupleslot(s->sort, true, false, s->out, NULL);
	} while (s->more && sorted_row_is(s, g));
	return true;
}

static void
fold_sort_end(FoldSort *s)
{
	tuplesort_end(s->sort);
	ExecDropSingleTupleTableSlot(s->in);
	ExecDropSingleTupleTableSlot(s->out);
	MemoryContextDelete(s->per_row);
	MemoryContextDelete(s->group);
	FreeTupleDesc(s->desc);
}

/* What sort_whole_row sorts a shard read whole for: the counts at a time. */
typedef struct WholeSort
{
	FoldSort   *sort;
	int64		at;
} WholeSort;

static bool
sort_whole_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	WholeSort  *ws = arg;
	int			sign = shard_sign_at(b, time, ws->at);
	FoldedFate	fate = time <= ws->sort->since ? FOLD_DROP : FOLD_KEEP;

	if (sign != 0 || fate == FOLD_DROP)
		fold_sort_put(ws->sort, tid, diff, sign, fate, row);
	return true;
}

/*
 * Sort every row of the shard, read whole, for its count at time at (see
 * shard_count_at), those at or before since to be deleted.
 */
static void
sort_whole(FoldSort *s, ShardBase *b, int64 since, int64 at, const char *what)
{
	WholeSort	ws = {s, at};

	fold_sort_begin(s, b, since, what);
	shard_scan_heap(b, PG_INT64_MIN, PG_INT64_MAX, sort_whole_row, &ws);
	fold_sort_performsort(s);
}

static bool
sort_update(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	FoldSort   *s = arg;

	fold_sort_put(s, tid, diff, 1, time <= s->since ? FOLD_DROP : FOLD_KEEP, row);
	return true;
}

static bool
sort_flag_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	fold_sort_put((FoldSort *) arg, tid, 0, 0, FOLD_FLAG, row);
	return true;
}

/*
 * A fold's row: its base rows, found through the rows index, summed
 * into g and their tids in tids (a flagged row may have several).  Rows of
 * other images with the same hash are passed over, so are the rows this
 * fold wrote (its snapshot does not see its own command's rows).
 */
static void
fold_group_base_rows(FoldSort *s, ShardCursor *probe, FoldGroup *g, TidList *tids)
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
			image_is(g->row, VARDATA(image), VARSIZE(image) - VARHDRSZ);

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
	FoldSort	s;
	FoldGroup	g;
	ShardCursor probe;
	TidList		base_rows;

	fold_sort_begin(&s, b, since, "a fold");
	shard_scan_updates(b, b->base_time, target, sort_update, &s);
	shard_scan_flagged(b, sort_flag_row, &s);
	fold_sort_performsort(&s);
	shard_cursor_open_probe(&probe, b);
	shard_tid_list_init(&base_rows);
	while (fold_sort_next_group(&s, &g))
	{
		fold_group_base_rows(&s, &probe, &g, &base_rows);
		if (g.weight <= 1)
			continue;
		for (int64 i = 0; i < base_rows.n; i++)
			delete_replaced(w->rel, &base_rows.tids[i], b->snapshot);
		(void) write_base_row(w, g.row, g.count);
	}
	shard_cursor_close(&probe);
	pfree(base_rows.tids);
	fold_sort_end(&s);
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
	FoldSort	s;
	FoldGroup	g;

	sort_whole(&s, b, since, new_base_time, "a fold of the shard read whole");
	while (fold_sort_next_group(&s, &g))
		(void) write_base_row(w, g.row, g.count);
	fold_sort_end(&s);
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
	FoldSort	s;
	FoldGroup	g;
	int64		base_time;

	(void) catalog_read_since(id, snapshot, &base_time);
	shard_writer_open(&w, shard);
	shard_base_open_heap(&b, w.rel, snapshot, base_time);
	sort_whole(&s, &b, PG_INT64_MIN, time, "a retraction of everything");
	while (fold_sort_next_group(&s, &g))
		if (g.count != 0)
			(void) write_count(&w, time, g.row, -g.count);
	fold_sort_end(&s);
	shard_base_close(&b, NoLock);
	UnregisterSnapshot(snapshot);
	shard_writer_close(&w);
}
