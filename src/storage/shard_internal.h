/*-------------------------------------------------------------------------
 *
 * shard_internal.h
 *	  What the shard files of storage/ share and nothing above them sees:
 *	  the shard's columns, the base's time, the writer, the base's reading
 *	  machinery and its cursors, the sort by row (shard_ddl.c,
 *	  shard_write.c, shard_scan.c, shard_sort.c, shard_walk.c,
 *	  shard_compact.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_SHARD_INTERNAL_H
#define PEEK_STORAGE_SHARD_INTERNAL_H

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/tuplesort.h"
#include "utils/rel.h"

#include "common/rows.h"
#include "storage/persist.h"

#define SHARD_TIME		1
#define SHARD_DIFF		2
#define SHARD_DATA		3

/* Where base rows are stored: below every time, and so below every since. */
#define BASE_TIME		PEEK_BASE_TIME

/*
 * Inserting into a shard: through the table AM, keeping the shard's indexes
 * (its time index) current, in the caller's transaction.  shard_insert
 * writes a row at once; persist_writer_add's appends wait in pending and
 * go in as one multi-insert each SHARD_PENDING_ROWS rows or
 * SHARD_PENDING_BYTES bytes and at the close.
 */
struct ShardWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	BulkInsertState bis;
	MemoryContext per_row;
	TupleDesc	row_desc;		/* rows are normalized with it */
	HeapTupleHeader row_template;	/* row_header_template(row_desc) */
	MemoryContext cxt;			/* the writer's own: its pending slots */
	MemoryContext pending_cxt;	/* the pending rows' tuples */
	TupleTableSlot **pending;	/* SHARD_PENDING_ROWS slots, made as needed */
	TupleDesc	pending_desc;	/* theirs: a copy, so no slot pins the shard's */
	int			npending;
	int			nslots;
	Size		pending_bytes;
};

#define SHARD_PENDING_ROWS	1000
#define SHARD_PENDING_BYTES	65536

/*
 * The base's reading machinery: the shard, the snapshot, the base's time
 * and the indexes the walk and compaction look rows up through.  The rows
 * at BASE_TIME are the base: the contents at base_time, each distinct row
 * once with its count (but flagged ones, see persist.h).  Every other row
 * is an update at its time: after base_time a *recent* one, at or before
 * it *history* that the base already counts, kept for the peeks between
 * the since and the base.  Without the indexes (a shard whose indexes were
 * dropped) or with a row type that lost attributes (its rows' stored
 * hashes may be stale), the shard is read whole instead.
 */
typedef struct ShardBase
{
	Relation	rel;
	Snapshot	snapshot;
	int64		base_time;		/* the base's rows are the contents at it */
	TupleDesc	desc;			/* row_desc of the row type */
	Relation	time_index;
	Relation	rows_index;
	Relation	flagged_index;
	TupleTableSlot *slot;
} ShardBase;

/*
 * What is done with each shard row a scan finds (its tid and fields);
 * false stops the scan.
 */
typedef bool (*ShardRowFn) (ShardBase *b, ItemPointer tid, int64 time, int64 diff,
							Datum row, void *arg);

/* Shard rows' tids, in the order found (or sorted). */
typedef struct TidList
{
	ItemPointerData *tids;
	int64		n;
	int64		capacity;
} TidList;

/* A run of heap blocks, first to last. */
typedef struct BlockRun
{
	BlockNumber first;
	BlockNumber last;
} BlockRun;

/*
 * The rows of one heap page that a heap scan passes (its time bounds), in
 * offset order, as the pinned page holds them (valid until the scan reads
 * its next page).  A cursor is read by rows (shard_cursor_next) or by
 * pages (shard_cursor_next_page), whose reader may write over them (a walk
 * leaves its counts in place of the diffs).
 */
typedef struct ShardPage
{
	int			n;
	BlockNumber block;
	OffsetNumber offsets[MaxHeapTuplesPerPage];
	int64		times[MaxHeapTuplesPerPage];
	int64		diffs[MaxHeapTuplesPerPage];
	Datum		rows[MaxHeapTuplesPerPage];
} ShardPage;

/*
 * A stream of shard rows, each with its tid: a heap scan (its rows read a
 * page at a time, shard_cursor_next_page) or an index scan (its rows in
 * b->slot).  One loop reads every scan's rows (shard_cursor_next).
 */
typedef struct ShardCursor
{
	ShardBase  *b;
	TableScanDesc heap;			/* or: */
	IndexScanDesc index;
	int64		lower;			/* a heap scan's rows: lower <= time <= upto */
	int64		upto;
	BlockNumber next_block;		/* a heap scan's next page to read, */
	BlockNumber end_block;		/* and the one past its run's last */
	BlockRun   *runs;			/* the runs read after it, or NULL */
	int			nruns;
	int			next_run;
	ShardPage  *page;			/* a heap scan's current page, */
	int			next_item;		/* and the next of its rows */
	ItemPointerData heap_tid;	/* a heap scan's current row's */
	ItemPointer tid;			/* the current row's */
} ShardCursor;

/* What becomes of a shard row a fold reads (a peek's rows are kept). */
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
static inline int
fold_weight(FoldedFate fate)
{
	return fate == FOLD_BASE ? 1 : fate == FOLD_FLAG ? 0 : 2;
}

/*
 * Shard rows sorted by their row's hash and image, within sort_mem kB (in
 * temporary files past it), to be read a distinct row at a time
 * (shard_sort_next_group).  The hash is the rows index's (row_hash), which
 * a fold's probes look base rows up by and a peek's walk merges with.
 */
typedef struct ShardSort
{
	ShardBase  *b;				/* FOLD_DROP rows are deleted in its snapshot */
	int64		since;			/* the updates at or before it are dropped */
	const char *what;			/* what the rows are sorted for, for the log */
	int			sort_mem;		/* its budget in kB, */
	const char *budget;			/* and the setting that gives it */
	TupleDesc	desc;			/* rows are normalized with it */
	HeapTupleHeader template;	/* row_header_template(desc) */
	Tuplesortstate *sort;
	TupleTableSlot *in;
	TupleTableSlot *out;		/* the next row's first shard row, if more */
	bool		more;
	MemoryContext per_row;
	MemoryContext group;		/* a distinct row's, until the next */
} ShardSort;

/* A distinct row of a ShardSort, its sums in 128 bits (no overflow). */
typedef struct SortedGroup
{
	int32		hash;
	Datum		row;			/* its image, in the ShardSort's group context */
	int128		count;
	int64		weight;
} SortedGroup;

extern Oid shard_row_type(Relation rel);
extern void shard_load_row_type(Oid shard);
extern void shard_writer_open(ShardWriter *w, Oid shard);
extern void shard_insert(ShardWriter *w, int64 time, int64 diff, Datum row);
extern void shard_writer_close(ShardWriter *w);
extern void shard_tid_list_init(TidList *l);
extern void shard_tid_list_add(TidList *l, ItemPointer tid);
extern void shard_base_open_heap(ShardBase *b, Relation rel, Snapshot snapshot, int64 base_time);
extern bool shard_base_open(ShardBase *b, Relation rel, Snapshot snapshot, int64 base_time, LOCKMODE lock);
extern void shard_base_close(ShardBase *b, LOCKMODE lock);
extern void shard_cursor_open_heap(ShardCursor *c, ShardBase *b, int64 lower, int64 upto);
extern void shard_cursor_open_base_heap(ShardCursor *c, ShardBase *b);
extern void shard_cursor_open_times(ShardCursor *c, ShardBase *b, Relation index, int nkeys, StrategyNumber *strategies, int64 *bounds);
extern ShardPage *shard_cursor_next_page(ShardCursor *c);
extern bool shard_cursor_next(ShardCursor *c, int64 *time, int64 *diff, Datum *row);
extern void shard_cursor_close(ShardCursor *c);
extern void shard_scan_heap(ShardBase *b, int64 lower, int64 upto, ShardRowFn fn, void *arg);
extern int	shard_sign_at(ShardBase *b, int64 time, int64 at);
extern void shard_scan_updates(ShardBase *b, int64 after, int64 upto, ShardRowFn fn, void *arg);
extern void shard_scan_flagged(ShardBase *b, ShardRowFn fn, void *arg);
extern void shard_cursor_open_probe(ShardCursor *c, ShardBase *b);
extern void shard_cursor_probe(ShardCursor *c, int32 hash);
extern void shard_scan_base_rows(ShardBase *b, RowCounts *rows, ShardRowFn fn, void *arg);
extern void shard_cursor_open_rows(ShardCursor *c, ShardBase *b);
extern void shard_delete_replaced(Relation rel, ItemPointer tid, Snapshot snapshot);
extern void shard_sort_begin(ShardSort *s, ShardBase *b, int64 since, const char *what,
							 int sort_mem, const char *budget);
extern void shard_sort_put(ShardSort *s, ItemPointer tid, int64 diff, int sign, FoldedFate fate,
						   Datum row);
extern void shard_sort_performsort(ShardSort *s);
extern bool shard_sort_next_group(ShardSort *s, SortedGroup *g);
extern void shard_sort_end(ShardSort *s);
extern void sort_whole(ShardSort *s, ShardBase *b, int64 since, int64 at, const char *what,
					   int sort_mem, const char *budget);
extern void sort_updates_at(ShardSort *s, ShardBase *b, int64 after, int64 upto, int64 at);
extern bool row_image_is(Datum row, const char *image, Size len);

#endif							/* PEEK_STORAGE_SHARD_INTERNAL_H */
