/*-------------------------------------------------------------------------
 *
 * shard_sort.c
 *	  Shard rows sorted by their row (its hash, then its image), in a
 *	  tuplesort within a budget of memory (in temporary files past it),
 *	  and read back a distinct row at a time with its count summed: what a
 *	  fold goes through (within maintenance_work_mem) and a persist peek
 *	  whose changed rows pass work_mem (shard_walk.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

#include "storage/shard_internal.h"

/* The columns of a ShardSort's shard rows, sorted by hash, then image. */
#define SORTED_HASH		1
#define SORTED_IMAGE	2
#define SORTED_DIFF		3
#define SORTED_SIGN		4		/* what the diff counts for: 1, -1 or 0 */
#define SORTED_FATE		5
#define SORTED_TID		6

/*
 * Delete a shard row a fold replaces or compaction lets go of.  Another
 * transaction may have deleted or updated it since the fold's snapshot (a
 * loader folding the same shard, the 0.1 to 0.2 upgrade rewriting its
 * base): the fold then counted a row that is gone, so it gives up with a
 * serialization failure, which its caller treats as transient and retries
 * on a new snapshot.
 */
void
shard_delete_replaced(Relation rel, ItemPointer tid, Snapshot snapshot)
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
 * Begin a sort of shard rows for what (a fold, a peek, for the log) within
 * sort_mem kB, the setting named budget; the updates it is given at or
 * before since (FOLD_DROP) are deleted as they are read.
 */
void
shard_sort_begin(ShardSort *s, ShardBase *b, int64 since, const char *what,
				 int sort_mem, const char *budget)
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
	s->sort_mem = sort_mem;
	s->budget = budget;
	s->desc = row_desc(shard_row_type(b->rel));
	s->template = row_header_template(s->desc);
	s->sort = tuplesort_begin_heap(sorted, 2, keys, operators, collations, nulls_first,
								   sort_mem, NULL, TUPLESORT_NONE);
	s->in = MakeSingleTupleTableSlot(sorted, &TTSOpsVirtual);
	s->out = MakeSingleTupleTableSlot(sorted, &TTSOpsMinimalTuple);
	s->more = false;
	s->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek sorted row",
									   ALLOCSET_SMALL_SIZES);
	s->group = AllocSetContextCreate(CurrentMemoryContext, "pg_peek sorted group",
									 ALLOCSET_SMALL_SIZES);
}

/* Sort a shard row, whose diff counts sign times in its row's count. */
void
shard_sort_put(ShardSort *s, ItemPointer tid, int64 diff, int sign, FoldedFate fate, Datum row)
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
void
shard_sort_performsort(ShardSort *s)
{
	TuplesortInstrumentation stats;

	tuplesort_performsort(s->sort);
	tuplesort_get_stats(s->sort, &stats);
	if (stats.spaceType == SORT_SPACE_TYPE_DISK)
		ereport(DEBUG1,
				(errmsg_internal("pg_peek sorted the rows of shard \"%s\" for %s in temporary files (%ld kB): "
								 "they pass %s (%d kB)",
								 RelationGetRelationName(s->b->rel), s->what,
								 (long) stats.spaceUsed, s->budget, s->sort_mem)));
	s->more = tuplesort_gettupleslot(s->sort, true, false, s->out, NULL);
}

static Datum
sorted_field(ShardSort *s, AttrNumber field)
{
	bool		isnull;

	return slot_getattr(s->out, field, &isnull);
}

/* Is a row datum's image the len bytes at image? */
bool
row_image_is(Datum row, const char *image, Size len)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(row);

	return VARSIZE(v) - VARHDRSZ == len && memcmp(VARDATA(v), image, len) == 0;
}

static bool
sorted_row_is(ShardSort *s, SortedGroup *g)
{
	struct varlena *image = (struct varlena *) DatumGetPointer(sorted_field(s, SORTED_IMAGE));

	return DatumGetInt32(sorted_field(s, SORTED_HASH)) == g->hash &&
		row_image_is(g->row, VARDATA_ANY(image), VARSIZE_ANY_EXHDR(image));
}

/*
 * The next distinct row of the sorted shard rows: its image (valid until
 * the next call), count and weight summed, its FOLD_DROP shard rows
 * deleted on the way; false after the last.
 */
bool
shard_sort_next_group(ShardSort *s, SortedGroup *g)
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
			shard_delete_replaced(s->b->rel, (ItemPointer) DatumGetPointer(sorted_field(s, SORTED_TID)),
							s->b->snapshot);
		s->more = tuplesort_gettupleslot(s->sort, true, false, s->out, NULL);
	} while (s->more && sorted_row_is(s, g));
	return true;
}

void
shard_sort_end(ShardSort *s)
{
	tuplesort_end(s->sort);
	ExecDropSingleTupleTableSlot(s->in);
	ExecDropSingleTupleTableSlot(s->out);
	MemoryContextDelete(s->per_row);
	MemoryContextDelete(s->group);
	FreeTupleDesc(s->desc);
}

/* What sort_row_at sorts a shard row into: its count at a time. */
typedef struct SortAt
{
	ShardSort  *sort;
	int64		at;
} SortAt;

static bool
sort_row_at(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	SortAt	   *sa = arg;
	int			sign = shard_sign_at(b, time, sa->at);
	FoldedFate	fate = time <= sa->sort->since ? FOLD_DROP : FOLD_KEEP;

	if (sign != 0 || fate == FOLD_DROP)
		shard_sort_put(sa->sort, tid, diff, sign, fate, row);
	return true;
}

/*
 * Sort every row of the shard, read whole, for its count at time at (a
 * base row as it is, a history row after at taken out, a recent one up to
 * at put in: shard_sign_at), those at or before since to be deleted.
 */
void
sort_whole(ShardSort *s, ShardBase *b, int64 since, int64 at, const char *what,
		   int sort_mem, const char *budget)
{
	SortAt		sa = {s, at};

	shard_sort_begin(s, b, since, what, sort_mem, budget);
	shard_scan_heap(b, PG_INT64_MIN, PG_INT64_MAX, sort_row_at, &sa);
	shard_sort_performsort(s);
}

/*
 * Sort the updates with after < time <= upto for their part in the count
 * at time at (shard_sign_at), as sort_whole does the whole shard's.
 */
void
sort_updates_at(ShardSort *s, ShardBase *b, int64 after, int64 upto, int64 at)
{
	SortAt		sa = {s, at};

	shard_scan_updates(b, after, upto, sort_row_at, &sa);
}
