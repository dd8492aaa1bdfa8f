/*-------------------------------------------------------------------------
 *
 * shard_scan.c
 *	  The reading machinery every shard read shares: the base and its
 *	  indexes opened, cursors over heap and index scans, the scans the walk
 *	  and compaction are built of, and the plain reads (a range of times
 *	  for hydration, row estimates, the sum of diffs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/nbtree.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "storage/catalog.h"
#include "storage/shard_internal.h"

/* How many rows of a page ahead of the one read the heap cursor prefetches. */
#define ROW_PREFETCH_AHEAD	8

static inline void
prefetch_row(const void *row)
{
#ifdef __GNUC__
	__builtin_prefetch(row);
#endif
}

void
shard_tid_list_init(TidList *l)
{
	l->n = 0;
	l->capacity = 64;
	l->tids = palloc(sizeof(ItemPointerData) * l->capacity);
}

void
shard_tid_list_add(TidList *l, ItemPointer tid)
{
	if (l->n == l->capacity)
	{
		l->capacity *= 2;
		l->tids = repalloc_huge(l->tids, sizeof(ItemPointerData) * l->capacity);
	}
	l->tids[l->n++] = *tid;
}

/* A shard table, to read (a shard dropped under a stale reader: 42P01). */
static Relation
open_shard_table(Oid shard)
{
	Relation	rel;

	shard_load_row_type(shard);
	rel = try_table_open(shard, AccessShareLock);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("shard table with OID %u does not exist", shard)));
	return rel;
}

static Relation
open_shard_index(Relation rel, const char *suffix, LOCKMODE lock)
{
	Oid			index = get_relname_relid(psprintf("%s_%s", RelationGetRelationName(rel), suffix),
										  RelationGetNamespace(rel));

	return OidIsValid(index) ? index_open(index, lock) : NULL;
}

/* The shard alone, to be read straight through (shard_scan_heap). */
void
shard_base_open_heap(ShardBase *b, Relation rel, Snapshot snapshot, int64 base_time)
{
	memset(b, 0, sizeof(ShardBase));
	b->rel = rel;
	b->snapshot = snapshot;
	b->base_time = base_time;
	b->slot = table_slot_create(rel, NULL);
}

/* Open the base's indexes; false if the shard must be read whole. */
bool
shard_base_open(ShardBase *b, Relation rel, Snapshot snapshot, int64 base_time, LOCKMODE lock)
{
	shard_base_open_heap(b, rel, snapshot, base_time);
	b->desc = row_desc(shard_row_type(rel));
	b->time_index = open_shard_index(rel, "time_idx", lock);
	b->rows_index = open_shard_index(rel, "rows", lock);
	b->flagged_index = open_shard_index(rel, "flagged", lock);
	return b->time_index != NULL && b->rows_index != NULL && b->flagged_index != NULL &&
		!row_desc_has_dropped(b->desc);
}

void
shard_base_close(ShardBase *b, LOCKMODE lock)
{
	Relation	indexes[3] = {b->time_index, b->rows_index, b->flagged_index};

	for (int i = 0; i < 3; i++)
		if (indexes[i] != NULL)
			index_close(indexes[i], lock);
	ExecDropSingleTupleTableSlot(b->slot);
	if (b->desc != NULL)
		FreeTupleDesc(b->desc);
}

/*
 * The rows of a heap scan with lower <= time <= upto, in heap order: the
 * pages from 0 to the last the scan counted when it began, which hold
 * every row its snapshot sees (not synchronized with other scans, which
 * would start it anywhere).
 */
void
shard_cursor_open_heap(ShardCursor *c, ShardBase *b, int64 lower, int64 upto)
{
	memset(c, 0, sizeof(ShardCursor));
	c->b = b;
	c->heap = table_beginscan_strat(b->rel, b->snapshot, 0, NULL, true, false);
	c->lower = lower;
	c->upto = upto;
	c->end_block = ((HeapScanDesc) c->heap)->rs_nblocks;
	c->page = palloc(sizeof(ShardPage));
	c->page->n = 0;
	/* heapgetpage's visible rows are an MVCC snapshot's, as every reader's */
	Assert(c->heap->rs_flags & SO_ALLOW_PAGEMODE);
}

/*
 * Add the heap blocks of a time index entry (a posting list's lowest to
 * highest tid) to the cursor's runs, which it finds in heap order.
 */
static void
add_block_run(ShardCursor *c, int *capacity, BlockNumber first, BlockNumber last)
{
	BlockRun   *run = c->nruns > 0 ? &c->runs[c->nruns - 1] : NULL;

	if (run != NULL && first <= run->last + 1)
	{
		run->last = Max(run->last, last);
		return;
	}
	if (c->nruns == *capacity)
	{
		*capacity *= 2;
		c->runs = repalloc(c->runs, sizeof(BlockRun) * *capacity);
	}
	c->runs[c->nruns].first = first;
	c->runs[c->nruns].last = last;
	c->nruns++;
}

/*
 * Add the heap blocks of a time index entry's tids to the cursor's runs:
 * a posting list (deduplicated equal times) at its ends, unless it spans
 * more blocks than it has tids, which leaves blocks between them without
 * a base row (the space a compaction freed may lie inside one).
 */
static void
add_entry_blocks(ShardCursor *c, int *capacity, IndexTuple entry)
{
	int			ntids = BTreeTupleIsPosting(entry) ? BTreeTupleGetNPosting(entry) : 1;
	BlockNumber first = ItemPointerGetBlockNumber(BTreeTupleGetHeapTID(entry));
	BlockNumber last = ItemPointerGetBlockNumber(BTreeTupleGetMaxHeapTID(entry));

	if (last - first < ntids)
		add_block_run(c, capacity, first, last);
	else
		for (int i = 0; i < ntids; i++)
		{
			BlockNumber block = ItemPointerGetBlockNumber(BTreeTupleGetPostingN(entry, i));

			add_block_run(c, capacity, block, block);
		}
}

/*
 * The runs of heap blocks that hold base rows (time BASE_TIME): the time
 * index's entries at BASE_TIME, read off its leaf pages left to right as a
 * forward scan reads them.  A btree with heap keys (as every index
 * PostgreSQL 12 or later builds) orders a time's entries by heap tid, and
 * every row the snapshot sees has an entry (a dead row's only widens a
 * run), so the blocks between runs hold no base row: the history before
 * the base, the space a fold or compaction freed.  A page's entries at
 * BASE_TIME are a few posting lists (add_entry_blocks).
 */
static void
find_base_block_runs(ShardCursor *c, ShardBase *b)
{
	Relation	index = b->time_index;
	TupleDesc	desc = RelationGetDescr(index);
	Buffer		buf = _bt_get_endpoint(index, 0, false, b->snapshot);
	int			capacity = 16;
	bool		past = false;

	c->runs = palloc(sizeof(BlockRun) * capacity);
	while (BufferIsValid(buf))
	{
		Page		page = BufferGetPage(buf);
		BTPageOpaque opaque = BTPageGetOpaque(page);

		if (!P_IGNORE(opaque))
		{
			for (OffsetNumber off = P_FIRSTDATAKEY(opaque);
				 off <= PageGetMaxOffsetNumber(page) && !past; off++)
			{
				IndexTuple	entry = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
				bool		isnull;
				int64		time = DatumGetInt64(index_getattr(entry, 1, desc, &isnull));

				past = time > BASE_TIME;
				if (time == BASE_TIME)
					add_entry_blocks(c, &capacity, entry);
			}
		}
		if (past || P_RIGHTMOST(opaque))
		{
			_bt_relbuf(index, buf);
			break;
		}
		buf = _bt_relandgetbuf(index, buf, opaque->btpo_next, BT_READ);
	}
}

/*
 * A heap scan of the base rows (time BASE_TIME), in heap order, of the
 * blocks that hold them (find_base_block_runs): after a big write folded
 * alone, the history that the base counts (as many rows) lies before
 * them; after compaction, the space it freed lies between them.  Each row
 * read is still checked for its time.  An index without heap keys: the
 * whole heap.
 */
void
shard_cursor_open_base_heap(ShardCursor *c, ShardBase *b)
{
	bool		heapkeyspace;
	bool		allequalimage;

	shard_cursor_open_heap(c, b, PG_INT64_MIN, BASE_TIME);
	_bt_metaversion(b->time_index, &heapkeyspace, &allequalimage);
	if (!heapkeyspace)
		return;
	find_base_block_runs(c, b);
	c->end_block = 0;			/* the runs instead */
}

/*
 * The next page of a heap scan that has rows within its time bounds, those
 * rows read (NULL at the end): a page's visible rows are found at once
 * (heapgetpage, as a sequential scan in page mode does), and their fields
 * then read where they lie in one pass, so that their cache misses overlap
 * (each row's header misses: the time and diff follow it).  The page is the
 * cursor's, and its rows valid, until the next page is read.
 */
ShardPage *
shard_cursor_next_page(ShardCursor *c)
{
	HeapScanDesc scan = (HeapScanDesc) c->heap;
	TupleDesc	desc = RelationGetDescr(c->b->rel);
	ShardPage  *p = c->page;

	c->next_item = 0;
	for (;;)
	{
		Page		page;
		int			ntuples;

		if (c->next_block >= c->end_block)
		{
			/*
			 * The next run, within the blocks the scan counted when it
			 * began, which hold the rows its snapshot sees (a fold's later
			 * rows may be past them: their entries are found all the same)
			 */
			if (c->next_run >= c->nruns)
				return NULL;
			c->next_block = c->runs[c->next_run].first;
			c->end_block = Min(c->runs[c->next_run].last + 1, scan->rs_nblocks);
			c->next_run++;
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		heapgetpage(c->heap, c->next_block++);
		page = BufferGetPage(scan->rs_cbuf);
		ntuples = scan->rs_ntuples;
		p->block = scan->rs_cblock;
		p->n = 0;
		for (int i = 0; i < ntuples; i++)
		{
			OffsetNumber off = scan->rs_vistuples[i];
			ItemId		item = PageGetItemId(page, off);
			HeapTupleData tuple;
			bool		isnull;
			int64		time;

			if (i + ROW_PREFETCH_AHEAD < ntuples)
				prefetch_row(PageGetItem(page, PageGetItemId(page,
															 scan->rs_vistuples[i + ROW_PREFETCH_AHEAD])));
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tuple.t_len = ItemIdGetLength(item);
			time = DatumGetInt64(heap_getattr(&tuple, SHARD_TIME, desc, &isnull));
			if (time < c->lower || time > c->upto)
				continue;
			p->offsets[p->n] = off;
			p->times[p->n] = time;
			p->diffs[p->n] = DatumGetInt64(heap_getattr(&tuple, SHARD_DIFF, desc, &isnull));
			p->rows[p->n] = heap_getattr(&tuple, SHARD_DATA, desc, &isnull);
			p->n++;
		}
		if (p->n > 0)
			return p;
	}
}

/* The rows an index scan with these keys finds, in index order. */
static void
shard_cursor_open_index(ShardCursor *c, ShardBase *b, Relation index, ScanKey keys, int nkeys)
{
	memset(c, 0, sizeof(ShardCursor));
	c->b = b;
	c->index = index_beginscan(b->rel, index, b->snapshot, nkeys, 0);
	index_rescan(c->index, keys, nkeys, NULL, 0);
}

/*
 * An index scan of the time index (or the flagged one) with these time
 * bounds (strategy and bound per key).
 */
void
shard_cursor_open_times(ShardCursor *c, ShardBase *b, Relation index, int nkeys,
				  StrategyNumber *strategies, int64 *bounds)
{
	static const RegProcedure procs[] = {
		[BTLessStrategyNumber] = F_INT8LT,
		[BTLessEqualStrategyNumber] = F_INT8LE,
		[BTGreaterEqualStrategyNumber] = F_INT8GE,
		[BTGreaterStrategyNumber] = F_INT8GT,
	};
	ScanKeyData keys[2];

	for (int i = 0; i < nkeys; i++)
		ScanKeyInit(&keys[i], 1, strategies[i], procs[strategies[i]], Int64GetDatum(bounds[i]));
	shard_cursor_open_index(c, b, index, keys, nkeys);
}

/*
 * The next row's fields (its tid is c->tid); false at the end.  A heap
 * scan's row is the next of its page's (shard_cursor_next_page), as the
 * pinned page holds it, without a slot; an index scan's in b->slot.
 */
bool
shard_cursor_next(ShardCursor *c, int64 *time, int64 *diff, Datum *row)
{
	if (c->heap != NULL)
	{
		ShardPage  *p = c->page;
		int			i;

		if (c->next_item >= p->n && shard_cursor_next_page(c) == NULL)
			return false;
		i = c->next_item++;
		*time = p->times[i];
		*diff = p->diffs[i];
		*row = p->rows[i];
		ItemPointerSet(&c->heap_tid, p->block, p->offsets[i]);
		c->tid = &c->heap_tid;
		return true;
	}
	else
	{
		TupleTableSlot *slot = c->b->slot;

		CHECK_FOR_INTERRUPTS();
		if (!index_getnext_slot(c->index, ForwardScanDirection, slot))
			return false;
		slot_getsomeattrs(slot, SHARD_DATA);
		*time = DatumGetInt64(slot->tts_values[SHARD_TIME - 1]);
		*diff = DatumGetInt64(slot->tts_values[SHARD_DIFF - 1]);
		*row = slot->tts_values[SHARD_DATA - 1];
		c->tid = &slot->tts_tid;
		return true;
	}
}

void
shard_cursor_close(ShardCursor *c)
{
	if (c->heap != NULL)
	{
		table_endscan(c->heap);
		pfree(c->page);
	}
	else
		index_endscan(c->index);
}

/* Feed fn the cursor's rows until it returns false, then close it. */
static void
shard_scan_cursor(ShardCursor *c, ShardRowFn fn, void *arg)
{
	int64		time;
	int64		diff;
	Datum		row;

	while (shard_cursor_next(c, &time, &diff, &row))
		if (!fn(c->b, c->tid, time, diff, row, arg))
			break;
	shard_cursor_close(c);
}

static void
shard_scan_times(ShardBase *b, Relation index, int nkeys, StrategyNumber *strategies, int64 *bounds,
		   ShardRowFn fn, void *arg)
{
	ShardCursor c;

	shard_cursor_open_times(&c, b, index, nkeys, strategies, bounds);
	shard_scan_cursor(&c, fn, arg);
}

/* Feed fn every shard row with lower <= time <= upto, in heap order. */
void
shard_scan_heap(ShardBase *b, int64 lower, int64 upto, ShardRowFn fn, void *arg)
{
	ShardCursor c;

	shard_cursor_open_heap(&c, b, lower, upto);
	shard_scan_cursor(&c, fn, arg);
}

/*
 * How a shard row counts in the contents at time at: a base row as it is,
 * a history row (which the base counts) taken out if it came after at, a
 * recent row put in if it came at or before.
 */
int
shard_sign_at(ShardBase *b, int64 time, int64 at)
{
	if (time == BASE_TIME)
		return 1;
	if (time <= b->base_time)
		return time > at ? -1 : 0;
	return time <= at ? 1 : 0;
}

/* The updates with after < time <= upto, in time order. */
void
shard_scan_updates(ShardBase *b, int64 after, int64 upto, ShardRowFn fn, void *arg)
{
	StrategyNumber strategies[2] = {BTGreaterStrategyNumber, BTLessEqualStrategyNumber};
	int64		bounds[2] = {after, upto};

	if (upto > after)
		shard_scan_times(b, b->time_index, 2, strategies, bounds, fn, arg);
}

/*
 * Feed fn the base rows that flag a row whose base rows cannot be read
 * alone (diff <= 0).
 */
void
shard_scan_flagged(ShardBase *b, ShardRowFn fn, void *arg)
{
	StrategyNumber strategy = BTLessEqualStrategyNumber;
	int64		bound = BASE_TIME;

	shard_scan_times(b, b->flagged_index, 1, &strategy, &bound, fn, arg);
}

/*
 * The base rows of the rows in rows (one each, but a flagged row may have
 * several), found in one scan of the rows index for all of their hashes.
 */
void
shard_scan_base_rows(ShardBase *b, RowCounts *rows, ShardRowFn fn, void *arg)
{
	int			n = hash_get_num_entries(rows->table);
	Datum	   *hashes;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	ScanKeyData key;
	ShardCursor c;
	int64		time;
	int64		diff;
	Datum		row;
	int			i = 0;

	if (n == 0)
		return;
	hashes = palloc(sizeof(Datum) * n);
	hash_seq_init(&status, rows->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		hashes[i++] = Int32GetDatum((int32) row_hash(b->desc, row_count_datum(rc)));
	ScanKeyEntryInitialize(&key, SK_SEARCHARRAY, 1, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT4EQ,
						   PointerGetDatum(construct_array(hashes, n, INT4OID, sizeof(int32),
														   true, TYPALIGN_INT)));
	shard_cursor_open_index(&c, b, b->rows_index, &key, 1);
	while (shard_cursor_next(&c, &time, &diff, &row))
		if (time == BASE_TIME && row_counts_find(rows, row) != NULL &&
			!fn(b, c.tid, time, diff, row, arg))
			break;
	shard_cursor_close(&c);
	pfree(hashes);
}

/*
 * A scan of the rows index that finds the base rows of one row hash at a
 * time (shard_cursor_probe), read with shard_cursor_next: it also finds
 * rows of other images with that hash.
 */
void
shard_cursor_open_probe(ShardCursor *c, ShardBase *b)
{
	memset(c, 0, sizeof(ShardCursor));
	c->b = b;
	c->index = index_beginscan(b->rel, b->rows_index, b->snapshot, 1, 0);
}

void
shard_cursor_probe(ShardCursor *c, int32 hash)
{
	ScanKeyData key;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(hash));
	index_rescan(c->index, &key, 1, NULL, 0);
}

/*
 * Every base row in the rows index's order, by row hash (a hash's rows in
 * tid order, whatever their images), read with shard_cursor_next.
 */
void
shard_cursor_open_rows(ShardCursor *c, ShardBase *b)
{
	shard_cursor_open_index(c, b, b->rows_index, NULL, 0);
}

/*
 * Keep a shard from being dropped until the end of the transaction; false
 * if it is gone already (a drop that committed, or that we waited for).
 */
bool
persist_lock_shard(Oid shard)
{
	Relation	rel;

	shard_load_row_type(shard);
	rel = try_relation_open(shard, AccessShareLock);

	if (rel == NULL)
		return false;
	relation_close(rel, NoLock);
	return true;
}

/* What persist_scan_range and persist_scan_at feed their rows to. */
typedef struct RangeFeed
{
	void		(*fn) (int64 time, int64 diff, Datum row, void *arg);
	void	   *arg;
	int64		at;				/* a hydration's: the contents at it */
	int64		upper;			/* a hydration's */
} RangeFeed;

static bool
feed_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	RangeFeed  *feed = arg;

	feed->fn(time, diff, row, feed->arg);
	return true;
}

/*
 * A hydration's row: its part in the contents at feed->at fed at BASE_TIME
 * (shard_sign_at: a base row as it is, a history row the base counts taken
 * out if it came after at, a recent row put in if it came at or before),
 * and a row that came after at put in at its time, so that the updates fed
 * are the contents at at and every update after it at its time.
 */
static bool
hydrate_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	RangeFeed  *feed = arg;
	int			sign = shard_sign_at(b, time, feed->at);

	if (sign > 0)
		feed->fn(BASE_TIME, diff, row, feed->arg);
	else if (sign < 0 && diff == PG_INT64_MIN)
	{
		/* -diff, in two parts where it leaves bigint's range */
		feed->fn(BASE_TIME, PG_INT64_MAX, row, feed->arg);
		feed->fn(BASE_TIME, 1, row, feed->arg);
	}
	else if (sign < 0)
		feed->fn(BASE_TIME, -diff, row, feed->arg);
	if (time > feed->at && time < feed->upper)
		feed->fn(time, diff, row, feed->arg);
	return true;
}

/*
 * Feed every update with lower <= time < upper to fn, in no particular
 * order, each row as the shard stores it (see row_from_shard): the rows an
 * index needs to hydrate (lower 0: the heap read straight through, the
 * base at BASE_TIME with its history taken out, see hydrate_row) or to
 * follow a seal (through the time index).  Runs in the caller's
 * transaction and snapshot, in which a hydration reads the base's time
 * first (before the shard's lock, as DROP EXTENSION takes them).
 */
void
persist_scan_range(Oid shard, int64 lower, int64 upper,
				   void (*fn) (int64 time, int64 diff, Datum row, void *arg), void *arg)
{
	RangeFeed	feed = {fn, arg, BASE_TIME, upper};
	int64		base_time = lower > 0 ? BASE_TIME :
		catalog_read_shard_base(shard, GetActiveSnapshot());
	Relation	rel = open_shard_table(shard);
	ShardBase	b;

	shard_base_open_heap(&b, rel, GetActiveSnapshot(), base_time);
	b.time_index = lower > 0 ? open_shard_index(rel, "time_idx", AccessShareLock) : NULL;
	if (b.time_index != NULL)
	{
		StrategyNumber strategies[2] = {BTGreaterEqualStrategyNumber, BTLessStrategyNumber};
		int64		bounds[2] = {lower, upper};

		shard_scan_times(&b, b.time_index, 2, strategies, bounds, feed_row, &feed);
	}
	else if (upper > lower && lower > 0)
		shard_scan_heap(&b, lower, upper - 1, feed_row, &feed);
	else if (upper > lower)
		shard_scan_heap(&b, PG_INT64_MIN, PG_INT64_MAX, hydrate_row, &feed);
	shard_base_close(&b, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * A time's updates that count_time passes one by one: past them it stops,
 * for a scan from after that time (persist_times_end), so that a time with
 * many (a load, a big transaction) costs an index descent, not a heap fetch
 * for each.
 */
#define TIME_ENTRIES_WALKED	64

/* What count_time counts: the distinct times left to pass. */
typedef struct TimeCount
{
	int			left;
	int64		last;
	int64		end;
	int			walked;			/* entries of last passed so far */
	bool		skip;			/* stopped to skip last's other entries */
} TimeCount;

static bool
count_time(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	TimeCount  *count = arg;

	if (time == count->last)
	{
		count->skip = ++count->walked >= TIME_ENTRIES_WALKED;
		return !count->skip;
	}
	if (count->left-- == 0)
	{
		count->end = time;
		return false;
	}
	count->last = time;
	count->walked = 1;
	return true;
}

/* Does the shard hold an update before time bound?  (b's time index opened for it.) */
static bool
any_time_below(ShardBase *b, Relation rel, int64 bound)
{
	StrategyNumber strategy = BTLessStrategyNumber;
	TimeCount	count = {0, PG_INT64_MIN, bound, 0, false};

	b->time_index = open_shard_index(rel, "time_idx", AccessShareLock);
	shard_scan_times(b, b->time_index, 1, &strategy, &bound, count_time, &count);
	return count.end < bound;
}

/*
 * Feed fn the contents at time at, each row's part at BASE_TIME (not summed
 * by row), and every update with at < time < upper at its time, in no
 * particular order, each row as the shard stores it: what a view's groups
 * are built from.  At or after the base's time (a view hydrating there)
 * the base rows alone are read, from the first one's block on, and the
 * recent updates through the time index: not the history before the base,
 * which the base counts already (after a big write folded alone, as many
 * rows again).  Before it, the shard is read whole, the history after at
 * taken out of the base; so is a shard with no base yet (a load not yet
 * folded), all of whose rows are recent: in heap order, not one index
 * fetch a row, unless the time index finds none that comes before upper
 * or at at (a view hydrating before a load: it has nothing to feed).  In
 * the caller's transaction and snapshot.
 */
void
persist_scan_at(Oid shard, int64 at, int64 upper,
				void (*fn) (int64 time, int64 diff, Datum row, void *arg), void *arg)
{
	RangeFeed	feed = {fn, arg, at, upper};
	int64		base_time = catalog_read_shard_base(shard, GetActiveSnapshot());
	Relation	rel = open_shard_table(shard);
	ShardBase	b;

	shard_base_open_heap(&b, rel, GetActiveSnapshot(), base_time);
	b.time_index = at >= base_time && base_time != BASE_TIME ?
		open_shard_index(rel, "time_idx", AccessShareLock) : NULL;
	if (b.time_index != NULL)
	{
		StrategyNumber strategies[2] = {BTGreaterStrategyNumber, BTLessStrategyNumber};
		int64		bounds[2] = {base_time, Max(upper, at + 1)};
		ShardCursor c;

		shard_cursor_open_base_heap(&c, &b);
		shard_scan_cursor(&c, hydrate_row, &feed);
		shard_scan_times(&b, b.time_index, 2, strategies, bounds, hydrate_row, &feed);
	}
	else if (base_time != BASE_TIME || any_time_below(&b, rel, Max(upper, at + 1)))
		shard_scan_heap(&b, PG_INT64_MIN, PG_INT64_MAX, hydrate_row, &feed);
	shard_base_close(&b, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * The end of the first n distinct times of the shard's updates in
 * [lower, upper): the next time after them, or upper if there are no more
 * than n.  A round that takes n times takes them however far apart they
 * are (a source's times are WAL positions).  Runs in the caller's
 * transaction and snapshot.
 */
int64
persist_times_end(Oid shard, int64 lower, int64 upper, int n)
{
	Relation	rel = open_shard_table(shard);
	StrategyNumber strategies[2] = {BTGreaterEqualStrategyNumber, BTLessStrategyNumber};
	int64		bounds[2] = {lower, upper};
	TimeCount	count = {n, -1, upper, 0, false};
	ShardBase	b;

	shard_base_open_heap(&b, rel, GetActiveSnapshot(), BASE_TIME);
	b.time_index = open_shard_index(rel, "time_idx", AccessShareLock);
	do
	{
		count.skip = false;
		shard_scan_times(&b, b.time_index, 2, strategies, bounds, count_time, &count);
		/* (on past the time whose entries it stopped in) */
		strategies[0] = BTGreaterStrategyNumber;
		bounds[0] = count.last;
	} while (count.skip);
	shard_base_close(&b, AccessShareLock);
	table_close(rel, AccessShareLock);
	return count.end;
}

/*
 * About how many updates the shard holds, from its size: a hydration's
 * total before it has read them.
 */
int64
persist_estimate_rows(Oid shard)
{
	Relation	rel = table_open(shard, AccessShareLock);
	BlockNumber pages;
	double		tuples;
	double		allvisfrac;

	table_relation_estimate_size(rel, NULL, &pages, &tuples, &allvisfrac);
	table_close(rel, AccessShareLock);
	return (int64) tuples;
}

/* The contents' count at a time, summed (an int128: no overflow). */
typedef struct CountAt
{
	int64		at;
	int128		sum;
} CountAt;

static bool
add_diff(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	CountAt    *c = arg;

	c->sum += shard_sign_at(b, time, c->at) * (int128) diff;
	return true;
}

/* The sum of the diffs before upper: the row count at the latest time. */
int64
persist_sum_diffs(Oid shard, int64 upper)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	int64		base_time = catalog_read_shard_base(shard, snapshot);
	Relation	rel;
	ShardBase	b;
	CountAt		c = {upper - 1, 0};

	shard_load_row_type(shard);
	rel = table_open(shard, AccessShareLock);

	shard_base_open_heap(&b, rel, snapshot, base_time);
	shard_scan_heap(&b, PG_INT64_MIN, PG_INT64_MAX, add_diff, &c);
	shard_base_close(&b, AccessShareLock);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return c.sum > PG_INT64_MAX ? PG_INT64_MAX : c.sum < PG_INT64_MIN ? PG_INT64_MIN : (int64) c.sum;
}
