/*-------------------------------------------------------------------------
 *
 * shard_walk.c
 *	  The walk of a persist peek: the updates between the base's time and
 *	  its own summed (added after the base, taken out before it), the rows
 *	  that may be negative resolved, then the base streamed with those rows
 *	  adjusted, stopping at the limit.  The sums are a hash table within
 *	  work_mem (times hash_mem_multiplier, as a query's hash aggregate);
 *	  past it the updates are sorted by row within work_mem (shard_sort.c,
 *	  in temporary files past it) and merged with the base in the rows
 *	  index's order, so that no walk's memory grows with the history.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "storage/catalog.h"
#include "storage/shard_internal.h"

#define TOUCHED_BY_HASH_ROWS	16

/* The base rows a walk must adjust, and their rows' sums. */
typedef struct Touched
{
	RowCounts  *recent;			/* sums of the recent rows up to the time */
	RowCounts  *flagged;		/* whole counts of the flagged rows */
	HTAB	   *hashes;			/* the rows' hashes, or NULL: */
	TidList		tids;			/* their base rows, sorted */
	int64		next;			/* the first of them past the last base row read */
} Touched;

static bool
touch_base_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Touched    *t = arg;
	RowCount   *whole = row_counts_find(t->flagged, row);

	if (whole != NULL)
		whole->count += diff;
	if (t->hashes == NULL)
		shard_tid_list_add(&t->tids, tid);
	return true;
}

static int
shard_tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * Find the base rows to adjust: for a flagged row, add its base rows to
 * its whole count; with hashes, note the rows' hashes, else the base rows'
 * tids.
 */
static void
touch_base(ShardBase *b, Touched *t, int64 limit)
{
	int64		nrecent = hash_get_num_entries(t->recent->table);
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	t->hashes = NULL;
	shard_tid_list_init(&t->tids);
	t->next = 0;
	if (nrecent == 0)
		return;
	if (limit < 0 || limit >= TOUCHED_BY_HASH_ROWS * nrecent)
	{
		shard_scan_base_rows(b, t->recent, touch_base_row, t);
		qsort(t->tids.tids, t->tids.n, sizeof(ItemPointerData), shard_tid_cmp);
		return;
	}

	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint32);
		ctl.entrysize = sizeof(uint32);
		ctl.hcxt = t->recent->cxt;
		t->hashes = hash_create("pg_peek recent row hashes", nrecent, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	hash_seq_init(&status, t->recent->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		uint32		h = row_hash(b->desc, row_count_datum(rc));

		(void) hash_search(t->hashes, &h, HASH_ENTER, NULL);
	}
	shard_scan_base_rows(b, t->flagged, touch_base_row, t);
}

/*
 * Is tid one of the touched base rows?  The base is read in tid order (a
 * heap scan, or the time index's entries at one time), so the sorted tids
 * are merged with it; a tid at or before the last one passed (another
 * order) is searched for.
 */
static bool
touched_tid(Touched *t, ItemPointer tid)
{
	TidList    *l = &t->tids;

	if (l->n == 0)
		return false;
	if (t->next > 0 && ItemPointerCompare(tid, &l->tids[t->next - 1]) <= 0)
		return bsearch(tid, l->tids, l->n, sizeof(ItemPointerData), shard_tid_cmp) != NULL;
	while (t->next < l->n && ItemPointerCompare(&l->tids[t->next], tid) < 0)
		t->next++;
	return t->next < l->n && ItemPointerEquals(&l->tids[t->next], tid);
}

/*
 * Might a base row of this heap block need adjusting?  The touched tids are
 * sorted: the first at or past the block's is searched for.
 */
static bool
block_touched(Touched *t, BlockNumber block)
{
	TidList    *l = &t->tids;
	int64		lo = 0;
	int64		hi = l->n;

	if (t->hashes != NULL)
		return hash_get_num_entries(t->hashes) > 0;
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (ItemPointerGetBlockNumberNoCheck(&l->tids[mid]) < block)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && ItemPointerGetBlockNumberNoCheck(&l->tids[lo]) == block;
}

/* Might this base row need adjusting? */
static bool
touched(ShardBase *b, Touched *t, ItemPointer tid, Datum row)
{
	if (t->hashes != NULL)
	{
		uint32		h;

		if (hash_get_num_entries(t->hashes) == 0)
			return false;
		h = row_hash(b->desc, row);
		return hash_search(t->hashes, &h, HASH_FIND, NULL) != NULL;
	}
	return touched_tid(t, tid);
}

/*
 * A persist walk in progress: the shard's contents at a time, read row by
 * row (persist_walk_next) in one of three ways.  Over the base (the usual
 * one, walk_base_begin): the updates between the base's time and the
 * walk's summed first, then the base streamed with those rows adjusted,
 * then the rows only those updates have.  Sorted (walk_sorted_begin),
 * when those sums pass work_mem: the updates sorted by row and merged
 * with the base rows in hash order.  Whole (a shard without its base
 * indexes, or whose row type lost attributes): every row summed as it
 * counts at the time (shard_sign_at), then those sums; past work_mem
 * sorted, then read a distinct row at a time.
 * It keeps its snapshot and its scans open between rows, and nothing else:
 * no peek hold, so a walk streamed by an executor node (scan.c) holds
 * neither compaction nor the backend's peek slot.
 */
struct PersistWalk
{
	MemoryContext cxt;			/* everything below */
	Relation	rel;
	Snapshot	snapshot;
	ShardBase	b;
	Touched		t;				/* a walk over the base */
	bool		streaming;		/* the base cursor is open: */
	ShardCursor base;
	MemoryContext per_row;		/* a base row's comparisons */
	Datum	   *rows;			/* the rows persist_walk_next_rows returned */
	int64	   *counts;			/* last, with their counts, */
	int			nrows;
	int			next_row;		/* and the next of them persist_walk_next
								 * returns */
	Datum		one_row;		/* a batch of one (next_row_alone) */
	int64		one_count;
	RowCounts  *rest;			/* the sums emitted last */
	bool		rest_open;		/* rest_seq is under way */
	HASH_SEQ_STATUS rest_seq;
	bool		sorted;			/* a sorted walk (walk_sorted_begin): */
	ShardSort	sort;
	SortedGroup group;			/* the next distinct row sorted, */
	bool		more_groups;	/* if any */
	Datum		base_row;		/* the next base row, if streaming, */
	int32		base_hash;		/* and its hash */
	int64		base_diff;
	MemoryContext per_hash;		/* the rows of one hash: */
	Datum	   *hash_rows;
	int128	   *hash_counts;
	int			nhash;
	int			hash_capacity;
};

/*
 * What sum_row sums shard rows into: each diff as it counts at time at
 * (shard_sign_at: a base row as it is, a history row after at, which the
 * base counts and the walk not, taken out, a recent one up to at put in),
 * or only noted, as long as the memory of the sums stays within budget
 * bytes: looked at after each row (two contexts' counters), as a row may
 * be a megabyte and more.
 */
typedef struct RowSums
{
	RowCounts  *counts;
	int64		at;
	bool		note_only;
	Size		budget;
	bool		fit;
} RowSums;

static bool
sum_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	RowSums    *s = arg;
	int			sign = s->note_only ? 0 : shard_sign_at(b, time, s->at);

	if (sign != 0 || s->note_only)
		row_counts_add(s->counts, row, 0)->count += sign * (int128) diff;
	if (MemoryContextMemAllocated(s->counts->cxt, true) > s->budget)
		s->fit = false;
	return s->fit;
}

/*
 * Sum what changed between the base's time and the walk's (recent): the
 * recent rows up to time, or, at a time before the base's, the history
 * rows after it taken out; and note the flagged rows (see walk_base_begin)
 * -- in memory, as a hash aggregate is, within work_mem times
 * hash_mem_multiplier.  False, the sums let go of, if they pass it: the
 * walk is then a sorted one.
 */
static bool
sum_changes(PersistWalk *w, Oid row_type, int64 time)
{
	ShardBase  *b = &w->b;
	Touched    *t = &w->t;
	Size		budget = get_hash_memory_limit();
	RowSums		recent = {NULL, time, false, budget, true};

	t->recent = recent.counts = row_counts_create(row_type);
	t->flagged = row_counts_create(row_type);
	if (time >= b->base_time)
		shard_scan_updates(b, b->base_time, time, sum_row, &recent);
	else
		shard_scan_updates(b, time, b->base_time, sum_row, &recent);
	if (recent.fit)
	{
		Size		used = MemoryContextMemAllocated(t->recent->cxt, true);
		RowSums		flagged = {t->flagged, time, true, budget - Min(used, budget), true};

		shard_scan_flagged(b, sum_row, &flagged);
		recent.fit = flagged.fit;
	}
	if (!recent.fit)
	{
		MemoryContextDelete(t->recent->cxt);
		MemoryContextDelete(t->flagged->cxt);
		t->recent = t->flagged = NULL;
	}
	return recent.fit;
}

/*
 * Sum every row of a shard read whole as it counts at time (rest), in
 * memory while the sums fit, as sum_changes does; false, the sums let go
 * of, past it: the shard is then sorted whole.
 */
static bool
sum_whole(PersistWalk *w, Oid row_type, int64 time)
{
	RowSums		s = {row_counts_create(row_type), time, false, get_hash_memory_limit(), true};

	shard_scan_heap(&w->b, PG_INT64_MIN, PG_INT64_MAX, sum_row, &s);
	if (s.fit)
		w->rest = s.counts;
	else
		MemoryContextDelete(s.counts->cxt);
	return s.fit;
}

/*
 * Prepare a walk over the base, what changed between the base's time and
 * the walk's summed (recent, sum_changes): a row with flagged base rows --
 * a negative count or one out of bigint's range, stored in parts -- gets
 * its whole count from the base now (flagged).  Then the base is streamed
 * (a limited walk through the time index, a full one through the heap):
 * a row with recent updates is emitted with its count at time, a flagged
 * one once with its whole count, any other -- nearly all -- as its base
 * row says (see touch_base for how they are told apart).
 */
static void
walk_base_begin(PersistWalk *w, int64 limit)
{
	ShardBase  *b = &w->b;
	Touched    *t = &w->t;
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	/* a flagged row's whole count: its recent part, and its base rows' */
	hash_seq_init(&status, t->flagged->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		row_counts_add(t->recent, row_count_datum(rc), 0);
	hash_seq_init(&status, t->recent->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		RowCount   *whole = row_counts_find(t->flagged, row_count_datum(rc));

		if (whole != NULL)
			whole->count += rc->count;
	}
	touch_base(b, t, limit);

	w->rest = t->recent;
	w->per_row = AllocSetContextCreate(w->cxt, "pg_peek base row", ALLOCSET_SMALL_SIZES);
	w->streaming = limit != 0;
	if (limit > 0)
	{
		/*
		 * Through the time index, which has the base rows first: a heap
		 * scan would read whatever precedes them (the space a fold freed)
		 * before its first row.
		 */
		StrategyNumber strategy = BTLessEqualStrategyNumber;
		int64		bound = BASE_TIME;

		shard_cursor_open_times(&w->base, b, b->time_index, 1, &strategy, &bound);
	}
	else if (limit < 0)
		shard_cursor_open_base_heap(&w->base, b);
}

/* A base row's count at the walk's time: as stored, or adjusted. */
static int64
adjust_base_row(PersistWalk *w, ItemPointer tid, int64 diff, Datum row)
{
	Touched    *t = &w->t;
	MemoryContext old;

	/* nothing changed since the base (nor flagged): every row as stored */
	if (t->hashes == NULL && t->tids.n == 0)
		return diff;
	MemoryContextReset(w->per_row);
	old = MemoryContextSwitchTo(w->per_row);
	if (touched(&w->b, t, tid, row))
	{
		RowCount   *whole = row_counts_find(t->flagged, row);
		RowCount   *part = row_counts_find(t->recent, row);

		if (whole != NULL)
		{
			/* emitted once, at its first base row */
			diff = row_count_value(whole->count);
			whole->count = 0;
		}
		else if (part != NULL)	/* NULL: a hash's false match */
			diff = row_count_value((int128) diff + part->count);
		if (part != NULL)
			part->count = 0;
	}
	MemoryContextSwitchTo(old);
	return diff;
}

/*
 * Read the next base row of a sorted walk, in the rows index's order, and
 * its hash; false at the end, the cursor closed.  In the walk's context:
 * the index scan keeps what it allocates as it goes (its killed items)
 * until its end.
 */
static bool
next_base_row(PersistWalk *w)
{
	int64		time;
	int64		diff;
	Datum		row;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
	bool		found;

	while ((found = shard_cursor_next(&w->base, &time, &diff, &row)) && time != BASE_TIME)
		;
	if (!found)
	{
		shard_cursor_close(&w->base);
		w->streaming = false;
	}
	else
	{
		MemoryContextReset(w->per_row);
		MemoryContextSwitchTo(w->per_row);
		w->base_row = row_from_shard(w->sort.desc, w->sort.template, row);
		w->base_hash = (int32) row_hash(w->sort.desc, w->base_row);
		w->base_diff = diff;
	}
	MemoryContextSwitchTo(old);
	return found;
}

/* Read a sorted walk's next distinct row sorted (in the walk's context). */
static void
next_group(PersistWalk *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	w->more_groups = shard_sort_next_group(&w->sort, &w->group);
	MemoryContextSwitchTo(old);
}

/*
 * Begin a sorted walk, for when what changed since the base passes
 * work_mem (sum_changes) or the shard is read whole: the changes sorted
 * by row (shard_sort.c, within work_mem, in temporary files past it, as a
 * query's sort is), then merged with the base rows read through the rows
 * index, which has them in the same order of hashes, one hash's rows at a
 * time in memory (sorted_next_rows).  Nothing else is held: no touched
 * tids, no flagged rows (a flagged row's base rows have its hash too).  A
 * shard read whole is sorted whole, base rows and all, each row counted as
 * it counts at time (sort_whole).
 */
static void
walk_sorted_begin(PersistWalk *w, int64 time, bool whole)
{
	ShardBase  *b = &w->b;

	w->sorted = true;
	w->per_row = AllocSetContextCreate(w->cxt, "pg_peek base row", ALLOCSET_SMALL_SIZES);
	w->per_hash = AllocSetContextCreate(w->cxt, "pg_peek rows of a hash", ALLOCSET_SMALL_SIZES);
	if (whole)
		sort_whole(&w->sort, b, PG_INT64_MIN, time, "a peek of the shard read whole",
				   work_mem, "work_mem");
	else
	{
		shard_sort_begin(&w->sort, b, PG_INT64_MIN, "a peek", work_mem, "work_mem");
		if (time >= b->base_time)
			sort_updates_at(&w->sort, b, b->base_time, time, time);
		else
			sort_updates_at(&w->sort, b, time, b->base_time, time);
		shard_sort_performsort(&w->sort);
		shard_cursor_open_rows(&w->base, b);
		w->streaming = true;
		(void) next_base_row(w);
	}
	next_group(w);
}

/* Add a row's count to the rows of the hash being merged. */
static void
add_hash_row(PersistWalk *w, Datum row, int128 count)
{
	struct varlena *image = (struct varlena *) DatumGetPointer(row);
	Size		len = VARSIZE(image) - VARHDRSZ;

	for (int i = 0; i < w->nhash; i++)
		if (row_image_is(w->hash_rows[i], VARDATA(image), len))
		{
			w->hash_counts[i] += count;
			return;
		}
	if (w->nhash == w->hash_capacity)
	{
		w->hash_capacity = Max(8, w->hash_capacity * 2);
		w->hash_rows = w->nhash == 0 ?
			MemoryContextAlloc(w->per_hash, sizeof(Datum) * w->hash_capacity) :
			repalloc(w->hash_rows, sizeof(Datum) * w->hash_capacity);
		w->hash_counts = w->nhash == 0 ?
			MemoryContextAlloc(w->per_hash, sizeof(int128) * w->hash_capacity) :
			repalloc(w->hash_counts, sizeof(int128) * w->hash_capacity);
	}
	w->hash_rows[w->nhash] = PointerGetDatum(memcpy(MemoryContextAlloc(w->per_hash, VARSIZE(image)),
													image, VARSIZE(image)));
	w->hash_counts[w->nhash] = count;
	w->nhash++;
}

/*
 * A sorted walk's next rows: those of the next hash the base rows or the
 * sorted changes have, each row's base rows and changes summed, the rows
 * that count none left out; 0 at the end.  Valid until the next call.
 */
static int
sorted_next_rows(PersistWalk *w)
{
	while (w->streaming || w->more_groups)
	{
		int32		hash = !w->streaming ? w->group.hash :
			!w->more_groups ? w->base_hash : Min(w->group.hash, w->base_hash);
		int			n = 0;

		MemoryContextReset(w->per_hash);
		w->nhash = 0;
		w->hash_capacity = 0;
		while (w->streaming && w->base_hash == hash)
		{
			add_hash_row(w, w->base_row, w->base_diff);
			(void) next_base_row(w);
		}
		while (w->more_groups && w->group.hash == hash)
		{
			add_hash_row(w, w->group.row, w->group.count);
			next_group(w);
		}
		w->rows = MemoryContextAlloc(w->per_hash, sizeof(Datum) * w->nhash);
		w->counts = MemoryContextAlloc(w->per_hash, sizeof(int64) * w->nhash);
		for (int i = 0; i < w->nhash; i++)
			if (w->hash_counts[i] != 0)
			{
				w->rows[n] = w->hash_rows[i];
				w->counts[n] = row_count_value(w->hash_counts[i]);
				n++;
			}
		if (n > 0)
			return n;
	}
	return 0;
}

/*
 * Begin the persist walk of a shard at time, in snapshot (the caller's,
 * taken after the peek's gate, so that every update the runtime saw sealed
 * is visible; walks in one snapshot at one time give the same rows); the
 * durable since and the base's time are read in it, before the shard is
 * locked (DROP EXTENSION locks peek.objects, then the shards), so that the
 * base read is the one that time says.  limit, the most rows the caller
 * will read (< 0: all), chooses how the base is read (a positive one still
 * reads it whole if asked; 0 reads none of it).
 */
PersistWalk *
persist_walk_begin(PeekObjectId id, Oid shard, Oid row_type, const char *collection,
				   Snapshot snapshot, int64 time, int64 limit)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek persist walk",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	PersistWalk *w = palloc0(sizeof(PersistWalk));
	int64		durable_since;
	int64		base_time;

	w->cxt = cxt;
	w->snapshot = snapshot;
	durable_since = catalog_read_since(id, w->snapshot, &base_time);

	/*
	 * The gate admitted time against the registry's since, which a source
	 * loaded again (compact_to_reload) raises in the catalog first: its
	 * history before is gone.
	 */
	if (durable_since > time)
		catalog_raise_compacted("collection", collection, time, durable_since);
	shard_load_row_type(shard);
	w->rel = try_table_open(shard, AccessShareLock);
	/* dropped after the gate (no lock held since the name lookup) */
	if (w->rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("collection \"%s\" was dropped while it was peeked", collection)));
	if (shard_base_open(&w->b, w->rel, w->snapshot, base_time, AccessShareLock))
	{
		if (sum_changes(w, row_type, time))
			walk_base_begin(w, limit);
		else
			walk_sorted_begin(w, time, false);
	}
	else if (!sum_whole(w, row_type, time))
		walk_sorted_begin(w, time, true);
	MemoryContextSwitchTo(old);
	return w;
}

/*
 * A base page's rows' counts at the walk's time in place of their diffs,
 * the rows that count none left out: how many are left.  A page without a
 * touched row (nearly all) takes its rows as stored.
 */
static int
adjust_base_page(PersistWalk *w, ShardPage *p)
{
	bool		touched = block_touched(&w->t, p->block);
	int			n = 0;

	for (int i = 0; i < p->n; i++)
	{
		int64		count = p->diffs[i];

		if (touched)
		{
			ItemPointerData tid;

			ItemPointerSet(&tid, p->block, p->offsets[i]);
			count = adjust_base_row(w, &tid, count, p->rows[i]);
		}
		if (count != 0)
		{
			p->rows[n] = p->rows[i];
			p->diffs[n] = count;
			n++;
		}
	}
	return n;
}

/*
 * The walk's next row not read a page at a time: a limited walk's base
 * row (through the time index), then the sums emitted last; false at the
 * end.
 */
static bool
next_row_alone(PersistWalk *w, Datum *row, int64 *count)
{
	RowCount   *rc;

	while (w->streaming)
	{
		int64		time;
		int64		diff;

		if (!shard_cursor_next(&w->base, &time, &diff, row))
		{
			shard_cursor_close(&w->base);
			w->streaming = false;
			break;
		}
		*count = adjust_base_row(w, w->base.tid, diff, *row);
		if (*count != 0)
			return true;
	}
	if (!w->rest_open && w->rest != NULL)
	{
		/*
		 * Frozen, the table's scan is not registered: a registered one
		 * belongs to the subtransaction that began it and may not outlive
		 * it, nor may a backend have more than a few; a walk streamed by a
		 * cursor lives across both.  Only lookups follow.
		 */
		hash_freeze(w->rest->table);
		hash_seq_init(&w->rest_seq, w->rest->table);
		w->rest_open = true;
	}
	while (w->rest_open)
	{
		if ((rc = hash_seq_search(&w->rest_seq)) == NULL)
		{
			w->rest_open = false;
			w->rest = NULL;		/* read */
			break;
		}
		*row = row_count_datum(rc);
		*count = row_count_value(rc->count);
		if (*count != 0)
			return true;
	}
	return false;
}

/*
 * The walk's next rows and their counts (none 0; a negative one is the
 * caller's to report), from where persist_walk_next left off: the base's
 * a heap page at a time when the base is read whole, else one; 0 at the
 * end.  They stay valid until the next call.
 */
int
persist_walk_next_rows(PersistWalk *w, Datum **rows, int64 **counts)
{
	int			n = 0;

	if (w->next_row < w->nrows)
	{
		/* what is left of the last ones */
		n = w->nrows - w->next_row;
		w->rows += w->next_row;
		w->counts += w->next_row;
	}
	else if (w->sorted)
		n = sorted_next_rows(w);
	while (n == 0 && w->streaming && w->base.heap != NULL)
	{
		ShardPage  *p = shard_cursor_next_page(&w->base);

		if (p == NULL)
		{
			shard_cursor_close(&w->base);
			w->streaming = false;
			break;
		}
		n = adjust_base_page(w, p);
		w->rows = p->rows;
		w->counts = p->diffs;
	}
	if (n == 0 && !w->sorted && next_row_alone(w, &w->one_row, &w->one_count))
	{
		n = 1;
		w->rows = &w->one_row;
		w->counts = &w->one_count;
	}
	w->nrows = n;
	w->next_row = n;
	*rows = w->rows;
	*counts = w->counts;
	return n;
}

/*
 * The walk's next row and its count (not 0; a negative one is the caller's
 * to report); false at the end.  The row stays valid until the next call.
 */
bool
persist_walk_next(PersistWalk *w, Datum *row, int64 *count)
{
	if (w->next_row >= w->nrows)
	{
		Datum	   *rows;
		int64	   *counts;

		if (persist_walk_next_rows(w, &rows, &counts) == 0)
			return false;
		w->next_row = 0;
	}
	*row = w->rows[w->next_row];
	*count = w->counts[w->next_row];
	w->next_row++;
	return true;
}

/* End a walk, read through or not. */
void
persist_walk_end(PersistWalk *w)
{
	if (w->streaming)
		shard_cursor_close(&w->base);
	if (w->rest_open)
		hash_seq_term(&w->rest_seq);
	if (w->sorted)
		shard_sort_end(&w->sort);
	shard_base_close(&w->b, AccessShareLock);
	table_close(w->rel, AccessShareLock);
	MemoryContextDelete(w->cxt);
}

