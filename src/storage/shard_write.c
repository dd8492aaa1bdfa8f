/*-------------------------------------------------------------------------
 *
 * shard_write.c
 *	  Appends to a shard, through the table AM in the caller's transaction,
 *	  each row as its canonical image (common/rows.c), so that a hydration
 *	  can take rows as stored (row_from_shard); and what every opener of a
 *	  shard does first (shard_load_row_type).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "storage/shard_internal.h"

/* The row type of a shard's data column. */
Oid
shard_row_type(Relation rel)
{
	return TupleDescAttr(RelationGetDescr(rel), SHARD_DATA - 1)->atttypid;
}

/*
 * Load a shard's row type before the shard is locked.  Loading it (into
 * the type cache) opens its relation, a view's for a view's shard, and a
 * DDL that a view refuses through its dependencies (DROP FUNCTION of a
 * function it calls) locks the view, then the shard: a process new to
 * the type (a fold worker) that loaded it holding the shard waited for
 * the DDL while the DDL waited for it, and one failed with "deadlock
 * detected".  Loaded first, it waits for the DDL holding nothing.
 */
void
shard_load_row_type(Oid shard)
{
	Oid			type = get_atttype(shard, SHARD_DATA);

	if (OidIsValid(type))
		DecrTupleDescRefCount(lookup_rowtype_tupdesc(type, -1));
}

void
shard_writer_open(ShardWriter *w, Oid shard)
{
	shard_load_row_type(shard);
	w->rel = table_open(shard, RowExclusiveLock);
	w->estate = CreateExecutorState();
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
	ExecOpenIndices(w->rri, false);
	w->slot = table_slot_create(w->rel, NULL);
	w->bis = GetBulkInsertState();
	w->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek shard writer",
									   ALLOCSET_DEFAULT_SIZES);
	w->row_desc = row_desc(shard_row_type(w->rel));
}

void
shard_insert(ShardWriter *w, int64 time, int64 diff, Datum row)
{
	TupleTableSlot *slot = w->slot;

	ExecClearTuple(slot);
	slot->tts_values[SHARD_TIME - 1] = Int64GetDatum(time);
	slot->tts_values[SHARD_DIFF - 1] = Int64GetDatum(diff);
	slot->tts_values[SHARD_DATA - 1] = row;
	memset(slot->tts_isnull, 0, sizeof(bool) * 3);
	ExecStoreVirtualTuple(slot);
	table_tuple_insert(w->rel, slot, GetCurrentCommandId(true), 0, w->bis);
	if (w->rri->ri_NumIndices > 0)
		list_free(ExecInsertIndexTuples(w->rri, slot, w->estate, false, false, NULL, NIL));
}

void
shard_writer_close(ShardWriter *w)
{
	MemoryContextDelete(w->per_row);
	FreeTupleDesc(w->row_desc);
	FreeBulkInsertState(w->bis);
	ExecDropSingleTupleTableSlot(w->slot);
	ExecCloseIndices(w->rri);
	FreeExecutorState(w->estate);
	table_close(w->rel, NoLock);
	CommandCounterIncrement();
}

/* A writer for a series of appends in the caller's transaction. */
ShardWriter *
persist_writer_open(Oid shard)
{
	ShardWriter *w = palloc(sizeof(ShardWriter));

	shard_writer_open(w, shard);
	return w;
}

/* Append one update; the row is normalized (see rows.c) on the way. */
void
persist_writer_add(ShardWriter *w, int64 time, int64 diff, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(w->per_row);

	shard_insert(w, time, diff, row_normalize(w->row_desc, row));
	MemoryContextSwitchTo(old);
	MemoryContextReset(w->per_row);
}

/* Finish the appends; later commands of the transaction see them. */
void
persist_writer_close(ShardWriter *w)
{
	shard_writer_close(w);
	pfree(w);
}

/* Append each row of the array at (time, diff), in the caller's transaction. */
void
persist_append(Oid shard, ArrayType *rows, int64 time, int64 diff)
{
	ShardWriter *w = persist_writer_open(shard);
	ArrayIterator it = array_create_iterator(rows, 0, NULL);
	Datum		value;
	bool		isnull;

	while (array_iterate(it, &value, &isnull))
	{
		Assert(!isnull);		/* callers reject arrays with NULLs */
		persist_writer_add(w, time, diff, value);
	}
	array_free_iterator(it);
	persist_writer_close(w);
}

