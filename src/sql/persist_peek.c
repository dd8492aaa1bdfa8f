/*-------------------------------------------------------------------------
 *
 * persist_peek.c
 *	  peek.persist_peek: a persist peek opened from its arguments and read
 *	  a row at a time, by the set-returning function and by the scan node
 *	  that streams it (scan.c).  The walk over the shard is
 *	  storage/shard_walk.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/snapmgr.h"

#include "common/rows.h"
#include "sql/peek_call.h"
#include "sql/persist_peek.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

PEEK_SQL_FUNCTION(peek_persist_peek);

/* ---- persist peeks ---- */

/*
 * An open persist peek, read a row at a time: by persist_peek as a
 * set-returning function and by the scan node that streams it (scan.c).
 * Its hold ends once its snapshot is taken: walks in that snapshot at the
 * peek's time give the answer (again, if the scan is rescanned), so rows
 * streamed to a slow reader hold back neither compaction nor this
 * backend's next peek.
 */
struct PersistPeek
{
	MemoryContext cxt;			/* everything below */
	PeekObjectId id;
	Oid			shard;
	Snapshot	snapshot;		/* registered until the peek is closed */
	int64		walk_limit;		/* the walk's limit, or rows wanted */
	PersistWalk *walk;			/* NULL once read through */
	RowEmitter	e;
	TupleConversionMap *map;	/* to the caller's row type, or NULL */
	MemoryContext row_cxt;		/* the current row's tuples */
	HeapTupleData tuple;		/* the current row as walked */
	HeapTuple	out;			/* the same, as returned */
	int64		copies;			/* copies of it still to return */
	RowImageBuffer buf;			/* last: a header's bits are a flexible array */
};

static const PeekCallKind persist_peek_kind = {
	PEEK_KIND_COLLECTION, "collection name", 2, 3, NULL, NULL
};

/* Walk the peek's answer from its start. */
static void
begin_persist_walk(PersistPeek *p)
{
	MemoryContext old = MemoryContextSwitchTo(p->cxt);

	if (p->walk != NULL)
		persist_walk_end(p->walk);
	p->walk = persist_walk_begin(p->id, p->shard, p->e.row_type, p->e.name, p->snapshot,
								 p->e.time, p->walk_limit);
	p->e.emitted = 0;
	p->e.bytes = 0;
	p->copies = 0;
	MemoryContextSwitchTo(old);
}

/*
 * persist_peek's arguments in fcinfo (its flinfo has the call's
 * expression); rows_wanted (or -1) is how many rows the caller will read at
 * most, for a walk without a limit of its own to read the base as a
 * limited one does.
 */
PersistPeek *
persist_peek_open(FunctionCallInfo fcinfo, int64 rows_wanted)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek persist peek",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	PersistPeek *p = palloc0(sizeof(PersistPeek));
	OpenedPeek	op;
	CatalogObject *coll;

	p->cxt = cxt;
	peek_call_open(fcinfo, &persist_peek_kind, NULL, &op);
	coll = op.obj;
	p->id = coll->id;
	p->shard = coll->shard;
	p->e.name = pstrdup(coll->name);
	p->e.row_type = coll->row_type;
	p->e.time = op.ticket.time;
	p->e.limit = op.limit;
	p->walk_limit = op.limit >= 0 ? op.limit : rows_wanted;
	p->map = op.map;
	p->row_cxt = AllocSetContextCreate(cxt, "pg_peek persist peek row", ALLOCSET_SMALL_SIZES);
	p->snapshot = RegisterSnapshot(GetLatestSnapshot());
	begin_persist_walk(p);
	standby_check_shard_since(coll->id, coll->name, op.ticket.time);
	backend_peek_end();
	MemoryContextSwitchTo(old);
	return p;
}

/* Read the same answer again from its start (a rescan). */
void
persist_peek_rewind(PersistPeek *p)
{
	begin_persist_walk(p);
}

/*
 * The next row of the result, as many times as it counts, up to the limit;
 * NULL at the end.  The tuple, the peek's own (not a versioned datum: see
 * below), stays valid until the next call; *again says it is another copy
 * of the last call's.
 */
HeapTuple
persist_peek_next(PersistPeek *p, bool *again)
{
	*again = p->copies > 0;
	while (p->copies == 0)
	{
		Datum		row;
		int64		count;
		MemoryContext old;

		if (p->walk == NULL || row_emitter_full(&p->e))
			return NULL;
		if (!persist_walk_next(p->walk, &row, &count))
		{
			/* read through: let go of its scans now */
			persist_walk_end(p->walk);
			p->walk = NULL;
			return NULL;
		}
		MemoryContextReset(p->row_cxt);
		old = MemoryContextSwitchTo(p->row_cxt);
		row_emit_tuple(&p->e, row, count, &p->buf, &p->tuple);
		/* in the shard's page: a copy of our own, for the mark below */
		if ((Pointer) p->tuple.t_data == DatumGetPointer(row))
			p->tuple.t_data = memcpy(palloc(p->tuple.t_len), p->tuple.t_data, p->tuple.t_len);

		/*
		 * Not a versioned datum any more (its version is in t_ctid, which a
		 * table row has its own in): a slot storing the tuple would look
		 * its type up for each row to check it, and the scan checked the
		 * row type once (scan.c).
		 */
		ItemPointerSetInvalid(&p->tuple.t_data->t_ctid);
		p->out = p->map != NULL ? execute_attr_map_tuple(&p->tuple, p->map) : &p->tuple;
		MemoryContextSwitchTo(old);
		p->copies = count;
	}
	if (!row_emit_admit(&p->e, &p->tuple))
		return NULL;
	p->copies--;
	return p->out;
}

void
persist_peek_close(PersistPeek *p)
{
	if (p->walk != NULL)
		persist_walk_end(p->walk);
	UnregisterSnapshot(p->snapshot);
	MemoryContextDelete(p->cxt);
}

/* persist_peek(rowtype anyelement, collection, as_of, limit) */
Datum
peek_persist_peek(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PersistPeek *p;
	HeapTuple	tuple;
	bool		again;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	p = persist_peek_open(fcinfo, -1);
	while ((tuple = persist_peek_next(p, &again)) != NULL)
		tuplestore_puttuple(rsinfo->setResult, tuple);
	persist_peek_close(p);
	return (Datum) 0;
}

