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
#include "miscadmin.h"
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
	Datum		row;			/* the current row as walked */
	int64		copies;			/* copies of it still to return */
	Size		row_bytes;		/* its tuple's length */
	MemoryContext row_cxt;		/* its tuples: */
	HeapTupleData tuple;		/* as walked */
	HeapTuple	out;			/* as returned, or NULL: not made yet */
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
	p->out = NULL;
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
 * Make the walk's next row the current one, unless copies of the current
 * one are left; false at the end or once the limit is met.
 */
static bool
persist_peek_next_row(PersistPeek *p)
{
	while (p->copies == 0)
	{
		if (p->walk == NULL || row_emitter_full(&p->e))
			return false;
		if (!persist_walk_next(p->walk, &p->row, &p->copies))
		{
			/* read through: let go of its scans now */
			persist_walk_end(p->walk);
			p->walk = NULL;
			return false;
		}
		row_emit_check(&p->e, p->row, p->copies);
		p->row_bytes = row_emit_bytes(p->row);
		p->out = NULL;
	}
	return true;
}

/*
 * Step to the next row of the result, or to another copy of the current
 * one (*again), up to the limit; false at the end.  The row itself is not
 * read: a reader that needs it asks persist_peek_tuple, and one that reads
 * no column never does.  It counts against pg_peek.max_result_bytes with
 * its tuple's length all the same.
 */
bool
persist_peek_advance(PersistPeek *p, bool *again)
{
	*again = p->copies > 0;
	if (!persist_peek_next_row(p) || !row_emit_admit(&p->e, p->row_bytes))
		return false;
	p->copies--;
	return true;
}

/*
 * The number of steps persist_peek_advance would take from here to the
 * end, taken: a row's copies at once, as many as the limit lets in, each
 * counted against pg_peek.max_result_bytes, failing where the steps would
 * (a negative multiplicity, the bytes), the walk's rows counted as it
 * reads them (a base page's at a time).  Cancellable between pages.
 */
int64
persist_peek_count(PersistPeek *p)
{
	int64		count = 0;

	/* the current row's copies left */
	if (p->copies > 0)
	{
		int64		admitted = row_emit_admit_copies(&p->e, p->row_bytes, p->copies);

		count += admitted;
		p->copies -= admitted;
		if (p->copies > 0)
			return count;		/* the limit */
	}
	while (p->walk != NULL && !row_emitter_full(&p->e))
	{
		Datum	   *rows;
		int64	   *counts;
		int			n;

		CHECK_FOR_INTERRUPTS();
		n = persist_walk_next_rows(p->walk, &rows, &counts);
		if (n == 0)
		{
			/* read through: let go of its scans now */
			persist_walk_end(p->walk);
			p->walk = NULL;
			break;
		}
		/* at most max_result_bytes / a row's bytes in all: no overflow */
		count += row_emit_count(&p->e, rows, counts, n);
	}
	return count;
}

/*
 * The tuple of the row persist_peek_advance stepped to, the peek's own
 * (not a versioned datum: see below), valid until the next step.
 */
HeapTuple
persist_peek_tuple(PersistPeek *p)
{
	MemoryContext old;

	if (p->out != NULL)
		return p->out;
	MemoryContextReset(p->row_cxt);
	old = MemoryContextSwitchTo(p->row_cxt);
	row_emit_tuple(&p->e, p->row, p->copies, &p->buf, &p->tuple);
	/* in the shard's page: a copy of our own, for the mark below */
	if ((Pointer) p->tuple.t_data == DatumGetPointer(p->row))
		p->tuple.t_data = memcpy(palloc(p->tuple.t_len), p->tuple.t_data, p->tuple.t_len);

	/*
	 * Not a versioned datum any more (its version is in t_ctid, which a
	 * table row has its own in): a slot storing the tuple would look its
	 * type up for each row to check it, and the scan checked the row type
	 * once (scan.c).
	 */
	ItemPointerSetInvalid(&p->tuple.t_data->t_ctid);
	p->out = p->map != NULL ? execute_attr_map_tuple(&p->tuple, p->map) : &p->tuple;
	MemoryContextSwitchTo(old);
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
	bool		again;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	p = persist_peek_open(fcinfo, -1);
	while (persist_peek_advance(p, &again))
		tuplestore_puttuple(rsinfo->setResult, persist_peek_tuple(p));
	persist_peek_close(p);
	return (Datum) 0;
}

