/*-------------------------------------------------------------------------
 *
 * shard_write.c
 *	  Appends to a shard, through the table AM in the caller's transaction,
 *	  each row as its canonical image (common/rows.c), so that a hydration
 *	  can take rows as stored (row_from_shard); and what every opener of a
 *	  shard does first (shard_load_row_type).  A writer's appends go in as
 *	  multi-inserts (one WAL record and one buffer lock per page, not per
 *	  row) with their index entries after, all before its close: until then
 *	  no read of the transaction may expect them.
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
	w->row_template = row_header_template(w->row_desc);
	w->cxt = CurrentMemoryContext;
	w->pending_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek shard appends",
										   ALLOCSET_DEFAULT_SIZES);
	w->pending = palloc(sizeof(TupleTableSlot *) * SHARD_PENDING_ROWS);
	w->pending_desc = CreateTupleDescCopy(RelationGetDescr(w->rel));
	w->npending = 0;
	w->nslots = 0;
	w->pending_bytes = 0;
}

/* Index a row the table holds now (its tid in the slot). */
static void
shard_index_row(ShardWriter *w, TupleTableSlot *slot)
{
	if (w->rri->ri_NumIndices > 0)
		list_free(ExecInsertIndexTuples(w->rri, slot, w->estate, false, false, NULL, NIL));
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
	shard_index_row(w, slot);
	/* (the index entry's expression: a fold writes millions of rows) */
	ResetPerTupleExprContext(w->estate);
}

/* Write the pending appends: one multi-insert, then their index entries. */
static void
shard_writer_flush(ShardWriter *w)
{
	if (w->npending == 0)
		return;
	table_multi_insert(w->rel, w->pending, w->npending, GetCurrentCommandId(true), 0, w->bis);
	for (int i = 0; i < w->npending; i++)
	{
		shard_index_row(w, w->pending[i]);
		ExecClearTuple(w->pending[i]);
	}
	ResetPerTupleExprContext(w->estate);
	w->npending = 0;
	w->pending_bytes = 0;
}

void
shard_writer_close(ShardWriter *w)
{
	shard_writer_flush(w);
	for (int i = 0; i < w->nslots; i++)
		ExecDropSingleTupleTableSlot(w->pending[i]);
	pfree(w->pending);
	FreeTupleDesc(w->pending_desc);
	MemoryContextDelete(w->pending_cxt);
	MemoryContextDelete(w->per_row);
	if (w->row_template != NULL)
		pfree(w->row_template);
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

/*
 * Append one update; the row is normalized (see rows.c) on the way unless
 * it is canonical already.  It waits with the other pending appends.
 */
void
persist_writer_add(ShardWriter *w, int64 time, int64 diff, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(w->per_row);
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	HeapTuple	tuple;
	TupleTableSlot *slot;

	values[SHARD_TIME - 1] = Int64GetDatum(time);
	values[SHARD_DIFF - 1] = Int64GetDatum(diff);
	values[SHARD_DATA - 1] = row_canonical(w->row_desc, w->row_template, row);
	MemoryContextSwitchTo(w->pending_cxt);
	tuple = heap_form_tuple(RelationGetDescr(w->rel), values, nulls);
	MemoryContextSwitchTo(w->cxt);
	if (w->npending == w->nslots)
		w->pending[w->nslots++] = MakeSingleTupleTableSlot(w->pending_desc, &TTSOpsHeapTuple);
	MemoryContextSwitchTo(old);
	MemoryContextReset(w->per_row);
	slot = w->pending[w->npending++];
	ExecStoreHeapTuple(tuple, slot, true);
	w->pending_bytes += tuple->t_len;
	if (w->npending == SHARD_PENDING_ROWS || w->pending_bytes >= SHARD_PENDING_BYTES)
		shard_writer_flush(w);
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

