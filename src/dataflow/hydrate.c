/*-------------------------------------------------------------------------
 *
 * hydrate.c
 *	  A grouped or joined view's hydration in one run of PostgreSQL's
 *	  executor over its inputs' contents, as CREATE MATERIALIZED VIEW runs
 *	  its query: each input's rows at the hydration's time read from its
 *	  shard into a tuplestore (a one-input view's through WHERE, input.c),
 *	  the copies its negative parts retract (rows deleted after the base)
 *	  taken out of the tuplestore after the read, by their fields,
 *	  the branch's query planned over them as named tuplestores, and its
 *	  rows appended to the view's shard at that time (or, at a view's first
 *	  hydration, written as its base), in the order of the shard's rows
 *	  index (row hash, then image).  No group is built:
 *	  the view is ready sooner, and reduce.c builds its groups from its
 *	  inputs' contents in its next round (as after a restart), learning
 *	  every group's output in one run of the query over the groups' rows in
 *	  their images' order.  That output must
 *	  be what this run appended, so only a query whose rows do not depend
 *	  on the order its input rows come in is hydrated here (order_free):
 *	  group and DISTINCT keys of types whose equal values are the same
 *	  bytes, aggregates whose result is exact and, for min and max, of such
 *	  types; a join alone gives each pair of rows' output whatever their
 *	  order.  Other queries go through reduce.c.
 *
 *	  The read of an input whose rows the first stage reads from a shared
 *	  arrangement (arranged.c) also builds that arrangement when the
 *	  runtime has none, from the same rows (spine.c keeps it): the next
 *	  round, a lazy one (reduce.c), finds it up to the hydration's time,
 *	  instead of reading the input's shard once more to build it.
 *
 *	  Must not touch the catalog (round.c does) nor keep anything past
 *	  the run but that arrangement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "common/rows.h"
#include "dataflow/reduce_internal.h"

/*
 * expression_tree_walker's callback: an aggregate whose result depends on
 * the order of its rows (a float's sum, the min of numerics 2.5 and 2.50).
 */
static bool
order_bound_aggregate(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		char	   *name = get_func_name(agg->aggfnoid);
		Oid			arg = agg->args == NIL ? InvalidOid :
			getBaseType(exprType((Node *) linitial_node(TargetEntry, agg->args)->expr));

		if (agg->aggdistinct != NIL || agg->aggorder != NIL)
			return true;
		if (strcmp(name, "count") == 0 || strcmp(name, "bool_and") == 0 ||
			strcmp(name, "bool_or") == 0 || strcmp(name, "every") == 0)
			return false;
		if (strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0)
			return !(arg == INT2OID || arg == INT4OID || arg == INT8OID || arg == NUMERICOID);
		if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
			return !dataflow_equal_is_same(arg, agg->inputcollid);
		return true;
	}
	return expression_tree_walker(node, order_bound_aggregate, context);
}

/* Whether each of the clauses' expressions is of a type dataflow_equal_is_same. */
static bool
keys_same_when_equal(List *clauses, List *targetlist)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		Node	   *key = get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), targetlist);

		if (!dataflow_equal_is_same(exprType(key), exprCollation(key)))
			return false;
	}
	return true;
}

/*
 * Whether the branch's rows do not depend on the order of its input rows,
 * so that a run over its whole inputs gives each group the output reduce.c
 * gives it from the group's rows alone.
 */
static bool
order_free(Query *query)
{
	return keys_same_when_equal(query->groupClause, query->targetList) &&
		keys_same_when_equal(query->distinctClause, query->targetList) &&
		!order_bound_aggregate((Node *) query->targetList, NULL) &&
		!order_bound_aggregate(query->havingQual, NULL);
}

/*
 * Whether the view's branches that group or join can each be hydrated by
 * one run of the executor (dataflow_hydrate_at_once); a plan without
 * such a branch cannot.
 */
bool
dataflow_hydrates_at_once(ViewPlan *plan)
{
	bool		any = false;
	ListCell   *lc;

	foreach(lc, dataflow_plan_branches(plan))
	{
		ViewPlan   *branch = lfirst(lc);

		if (!branch->reduces)
			continue;
		if (!order_free(branch->query))
			return false;
		any = true;
	}
	return any;
}

/*
 * An input's contents read into its tuplestore: the shard's positive parts
 * as they come, its negative parts (a row deleted after the base, a base
 * row's parts) kept aside and taken out of the tuplestore after the read.
 */
typedef struct InputRows
{
	ViewInput	input;
	Tuplestorestate *rows;
	double		nrows;
	HTAB	   *retracted;		/* TupleCopies of the negative parts, or NULL */
	bool		too_many;		/* a row came with too many copies to run over */
	MemoryContext per_row;
	MemoryContext cxt;			/* retracted and its tuples */
	SpineHydration *arranging;	/* the arrangement built from the read, or NULL */
} InputRows;

/*
 * A tuple's fields as the tuplestore holds them: its attribute count,
 * null bitmap and data (not its header's other flags: a retraction
 * captured from a table's tuple keeps that tuple's, the row it retracts
 * may not).
 */
typedef struct TupleBytes
{
	uint16		natts;
	uint8		hoff;
	bool		hasnull;
	const char *bytes;			/* from t_bits on */
	Size		len;
} TupleBytes;

/* Copies of a tuple the negative parts retract. */
typedef struct TupleCopies
{
	TupleBytes	key;
	int64		count;
} TupleCopies;

static uint32
tuple_bytes_hash(const void *key, Size keysize)
{
	const TupleBytes *t = key;

	return hash_bytes((const unsigned char *) t->bytes, t->len) ^
		((uint32) t->natts << 9 | (uint32) t->hoff << 1 | t->hasnull);
}

static int
tuple_bytes_match(const void *key1, const void *key2, Size keysize)
{
	const TupleBytes *a = key1;
	const TupleBytes *b = key2;

	return a->natts != b->natts || a->hoff != b->hoff || a->hasnull != b->hasnull ||
		a->len != b->len || memcmp(a->bytes, b->bytes, a->len) != 0;
}

static TupleBytes
tuple_bytes(uint16 infomask2, uint16 infomask, uint8 hoff, const char *bits, const char *end)
{
	TupleBytes	t;

	t.natts = infomask2 & HEAP_NATTS_MASK;
	t.hoff = hoff;
	t.hasnull = (infomask & HEAP_HASNULL) != 0;
	t.bytes = bits;
	t.len = end - bits;
	return t;
}

static TupleBytes
heap_tuple_bytes(HeapTuple tuple)
{
	HeapTupleHeader t = tuple->t_data;

	return tuple_bytes(t->t_infomask2, t->t_infomask, t->t_hoff, (const char *) t->t_bits,
					   (const char *) t + tuple->t_len);
}

static TupleBytes
minimal_tuple_bytes(MinimalTuple t)
{
	return tuple_bytes(t->t_infomask2, t->t_infomask, t->t_hoff, (const char *) t->t_bits,
					   (const char *) t + t->t_len);
}

/* n copies of the tuple to take out of the tuplestore after the read. */
static void
retract(InputRows *in, HeapTuple tuple, int64 n)
{
	TupleBytes	t = heap_tuple_bytes(tuple);
	TupleCopies *copies;
	bool		found;

	if (in->retracted == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(TupleBytes);
		ctl.entrysize = sizeof(TupleCopies);
		ctl.hash = tuple_bytes_hash;
		ctl.match = tuple_bytes_match;
		ctl.hcxt = in->cxt;
		in->retracted = hash_create("pg_peek view hydration retractions", 64, &ctl,
									HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	}
	copies = hash_search(in->retracted, &t, HASH_ENTER, &found);
	if (!found)
	{
		char	   *bytes = MemoryContextAlloc(in->cxt, t.len);

		memcpy(bytes, t.bytes, t.len);
		copies->key.bytes = bytes;
		copies->count = 0;
	}
	if (pg_add_s64_overflow(copies->count, n, &copies->count) ||
		copies->count > DATAFLOW_MAX_ROW_COPIES)
		in->too_many = true;
}

/*
 * A stored row as a tuple over its bytes where the shard's page holds them,
 * for the tuplestore to copy, when there is no WHERE to evaluate and the
 * row is inline with no dropped attribute: the tuplestore copies a minimal
 * tuple's bytes (from the header's t_infomask2 on), not the datum's length
 * word that a short varlena header replaced, and the query reads its
 * attributes as any row's (an attribute added since it was stored as
 * NULL), so the row needs no image of its own (row_from_shard) first.
 */
static bool
stored_tuple(InputRows *in, Datum stored, HeapTuple tuple)
{
	struct varlena *field = (struct varlena *) DatumGetPointer(stored);

	if (in->input.qual != NULL || in->input.template == NULL ||
		VARATT_IS_EXTERNAL(field) || VARATT_IS_COMPRESSED(field))
		return false;
	tuple->t_len = VARSIZE_ANY_EXHDR(field) + VARHDRSZ;
	tuple->t_data = (HeapTupleHeader) (VARDATA_ANY(field) - VARHDRSZ);
	ItemPointerSetInvalid(&tuple->t_self);
	tuple->t_tableOid = InvalidOid;
	return true;
}

/* n copies of a tuple into the tuplestore, or -n taken out after the read */
static void
put_tuple(InputRows *in, HeapTuple tuple, int64 n)
{
	for (int64 i = 0; i < n; i++)
		tuplestore_puttuple(in->rows, tuple);
	if (n > 0)
		in->nrows += n;
	else
		retract(in, tuple, -n);
}

/*
 * n copies of a stored row into the tuplestore, if it passes WHERE, or -n
 * copies taken out after the read (the same row gives the same tuple).
 */
static void
put_rows(InputRows *in, Datum stored, int64 n)
{
	MemoryContext old;
	Datum		row;
	HeapTupleData tuple;

	/* (the rounds take many copies of a row at once where they can) */
	if (n > DATAFLOW_MAX_ROW_COPIES || n < -DATAFLOW_MAX_ROW_COPIES)
	{
		in->too_many = true;
		return;
	}
	if (stored_tuple(in, stored, &tuple))
	{
		dataflow_count_input(true);
		put_tuple(in, &tuple, n);
		return;
	}
	old = MemoryContextSwitchTo(in->per_row);
	if (view_input_row(&in->input, stored, &row))
		put_tuple(in, &in->input.tuple, n);
	ExecClearTuple(in->input.slot);
	ResetExprContext(in->input.econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(in->per_row);
}

static void
store_row(int64 time, int64 diff, Datum stored, void *arg)
{
	InputRows  *in = arg;

	if (in->arranging != NULL)
		spine_hydration_add(in->arranging, time, diff, stored);
	if (diff != 0)				/* (a base row's zero part: persist.h) */
		put_rows(in, stored, diff);
}

/*
 * The retracted copies taken out of the tuplestore, which is copied
 * without them: false if some row has fewer copies than are retracted.
 */
static bool
take_out_retracted(InputRows *in)
{
	Tuplestorestate *kept = tuplestore_begin_heap(false, false, maintenance_work_mem);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(in->input.desc, &TTSOpsMinimalTuple);
	int64		left = 0;
	HASH_SEQ_STATUS seq;
	TupleCopies *copies;

	hash_seq_init(&seq, in->retracted);
	while ((copies = hash_seq_search(&seq)) != NULL)
		left += copies->count;
	while (tuplestore_gettupleslot(in->rows, true, false, slot))
	{
		bool		should_free;
		TupleBytes	t = minimal_tuple_bytes(ExecFetchSlotMinimalTuple(slot, &should_free));

		copies = left > 0 ? hash_search(in->retracted, &t, HASH_FIND, NULL) : NULL;
		if (copies != NULL && copies->count > 0)
		{
			copies->count--;
			left--;
			in->nrows--;
		}
		else
			tuplestore_puttupleslot(kept, slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(in->rows);
	in->rows = kept;
	return left == 0;
}

/*
 * An input's contents at a time into its tuplestore.  Returns false when a
 * row's count is negative, or more than DATAFLOW_MAX_ROW_COPIES (the
 * rounds hydrate the view then).
 */
static bool
read_input(InputRows *in, Oid shard, int64 at)
{
	persist_scan_at(shard, at, at + 1, store_row, in);
	if (in->arranging != NULL)
		spine_hydration_end(in->arranging);
	in->arranging = NULL;
	if (in->too_many)
		return false;
	return in->retracted == NULL || take_out_retracted(in);
}

/*
 * A row the query gave, canonical (rows.c), with its hash as the shard's
 * rows index has it (peek.row_hash).  The rows are written in the order
 * of (hash, image): equal rows next to each other, and a first
 * hydration's base rows reach that index in its order, each at its right
 * edge, instead of one random descent of the btree per row.
 */
typedef struct HydratedRow
{
	int32		hash;
	void	   *image;
} HydratedRow;

/* The query's rows, as rows of the view's type, in the caller's memory. */
typedef struct QueryRows
{
	DestReceiver pub;
	TupleTableSlot *out;
	MemoryContext cxt;
	HydratedRow *rows;
	int64		nrows;
	int64		size;
} QueryRows;

static bool
query_row(TupleTableSlot *slot, DestReceiver *self)
{
	QueryRows  *q = (QueryRows *) self;
	int			natts = q->out->tts_tupleDescriptor->natts;
	MemoryContext old;
	Datum		formed;
	void	   *image;

	if (slot->tts_tupleDescriptor->natts != natts)
		elog(ERROR, "a view's query gives %d columns for its %d",
			 slot->tts_tupleDescriptor->natts, natts);
	slot_getallattrs(slot);
	ExecClearTuple(q->out);
	memcpy(q->out->tts_values, slot->tts_values, sizeof(Datum) * natts);
	memcpy(q->out->tts_isnull, slot->tts_isnull, sizeof(bool) * natts);
	ExecStoreVirtualTuple(q->out);
	old = MemoryContextSwitchTo(q->cxt);
	if (q->nrows == q->size)
	{
		q->size *= 2;
		q->rows = repalloc_huge(q->rows, sizeof(HydratedRow) * q->size);
	}
	formed = ExecFetchSlotHeapTupleDatum(q->out);
	image = DatumGetPointer(row_normalize(q->out->tts_tupleDescriptor, formed));
	q->rows[q->nrows].hash = (int32) row_hash(q->out->tts_tupleDescriptor, PointerGetDatum(image));
	q->rows[q->nrows++].image = image;
	pfree(DatumGetPointer(formed));
	MemoryContextSwitchTo(old);
	return true;
}

static void
query_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
query_shutdown(DestReceiver *self)
{
}

static void
query_destroy(DestReceiver *self)
{
}

/* The order of hydrated rows: hash (as a signed int4, the index's), length, then bytes. */
static int
hydrated_order(const void *a, const void *b)
{
	const HydratedRow *ra = a;
	const HydratedRow *rb = b;
	Size		la = VARSIZE(ra->image);
	Size		lb = VARSIZE(rb->image);

	if (ra->hash != rb->hash)
		return ra->hash < rb->hash ? -1 : 1;
	if (la != lb)
		return la < lb ? -1 : 1;
	return memcmp(ra->image, rb->image, la);
}

/* The inputs [0, n) read, let go. */
static void
inputs_end(InputRows *inputs, int n)
{
	for (int i = 0; i < n; i++)
	{
		tuplestore_end(inputs[i].rows);
		MemoryContextDelete(inputs[i].cxt);
		MemoryContextDelete(inputs[i].per_row);
		view_input_end(&inputs[i].input);
	}
}

/*
 * The branch's query (text: the view's) run once over its inputs'
 * contents at a time (in: its inputs' objects in its order): *rows gets its
 * *nrows rows, of out_desc, sorted (hydrated_order).  Returns false when an
 * input's contents hold a row a negative number of times.
 */
static bool
rows_at(const char *text, ViewPlan *branch, CatalogObject *v, CatalogObject **in,
		TupleDesc out_desc, int64 at, bool arrange, HydratedRow **rows, int64 *nrows)
{
	Query	   *query = copyObject(branch->query);
	int			ninputs = list_length(branch->inputs);
	InputRows  *inputs = palloc0(sizeof(InputRows) * ninputs);
	QueryEnvironment *env = create_queryEnv();
	QueryRows	q;
	QueryDesc  *qd;
	ListCell   *lc;

	foreach(lc, branch->inputs)
	{
		ViewPlanInput *pin = lfirst(lc);
		InputRows  *input = &inputs[foreach_current_index(lc)];
		RangeTblEntry *rte = rt_fetch(pin->rtindex, query->rtable);
		EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
		TupleDesc	desc = lookup_rowtype_tupdesc_copy(pin->row_type, -1);

		view_input_begin(&input->input, branch->qual, desc);
		input->rows = tuplestore_begin_heap(false, false, maintenance_work_mem);
		input->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view hydration",
											   ALLOCSET_DEFAULT_SIZES);
		input->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view hydration retractions",
										   ALLOCSET_SMALL_SIZES);
		input->arranging = arrange ?
			arranged_hydration_begin(branch, v, in, pin->object, at) : NULL;
		if (!read_input(input, in[pin->object]->shard, at))
		{
			inputs_end(inputs, foreach_current_index(lc) + 1);
			return false;
		}

		/* the input's persist_peek becomes a scan of its rows */
		enr->md.name = psprintf("pg_peek_input_%d", foreach_current_index(lc) + 1);
		enr->md.reliddesc = InvalidOid;
		enr->md.tupdesc = desc;
		enr->md.enrtype = ENR_NAMED_TUPLESTORE;
		enr->md.enrtuples = input->nrows;
		enr->reldata = input->rows;
		register_ENR(env, enr);
		rte->rtekind = RTE_NAMEDTUPLESTORE;
		rte->enrname = enr->md.name;
		rte->enrtuples = input->nrows;
		rte->functions = NIL;
		rte->funcordinality = false;
		rte->coltypes = rte->coltypmods = rte->colcollations = NIL;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			rte->coltypes = lappend_oid(rte->coltypes, att->attisdropped ? InvalidOid : att->atttypid);
			rte->coltypmods = lappend_int(rte->coltypmods, att->attisdropped ? 0 : att->atttypmod);
			rte->colcollations = lappend_oid(rte->colcollations,
											 att->attisdropped ? InvalidOid : att->attcollation);
		}
	}
	/* (the rows read passed WHERE) */
	if (branch->qual != NULL)
		query->jointree->quals = NULL;
	/* (a semi-join or anti-join as EXISTS for the planner: semijoins.c) */
	query = dataflow_semijoins_as_sublinks(query);

	q.pub.receiveSlot = query_row;
	q.pub.rStartup = query_startup;
	q.pub.rShutdown = query_shutdown;
	q.pub.rDestroy = query_destroy;
	q.pub.mydest = DestNone;
	q.out = MakeSingleTupleTableSlot(out_desc, &TTSOpsVirtual);
	q.cxt = CurrentMemoryContext;
	q.size = 1024;
	q.nrows = 0;
	q.rows = palloc(sizeof(HydratedRow) * q.size);
	qd = CreateQueryDesc(pg_plan_query(query, text, 0, NULL), text, GetActiveSnapshot(),
						 InvalidSnapshot, &q.pub, NULL, env, 0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, 0, true);
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	ExecDropSingleTupleTableSlot(q.out);
	inputs_end(inputs, ninputs);
	qsort(q.rows, q.nrows, sizeof(HydratedRow), hydrated_order);
	*rows = q.rows;
	*nrows = q.nrows;
	return true;
}

/*
 * The branch's query (text: the view's) run once over its inputs' contents
 * at the since (in: its inputs' objects in its order), its rows appended to
 * the view's shard there, or with as_base written as its base (the first
 * hydration of a view of one branch, whose caller then folds at the since);
 * and when next >= 0 (the inputs' first time after the since), once more
 * over their contents at next, what changed appended at next.  Returns
 * false, having appended nothing, when an input's contents hold a row a
 * negative number of times (reduce.c then hydrates it, and fails).  The
 * caller has checked dataflow_hydrates_at_once; runs as the view's owner
 * in round.c's subtransaction.
 */
bool
dataflow_hydrate_at_once(const char *text, ViewPlan *branch, CatalogObject *v,
						 CatalogObject **in, TupleDesc out_desc, int64 since, int64 next,
						 bool as_base)
{
	HydratedRow *before;
	HydratedRow *after = NULL;
	int64		nbefore;
	int64		nafter = 0;
	ShardWriter *writer;
	instr_time	work;
	int64		b = 0;
	int64		a = 0;
	void	   *base_row = NULL;
	int64		base_count = 0;

	dataflow_count_stage(list_length(branch->stages != NIL ? branch->stages : list_make1(branch)) - 1);
	INSTR_TIME_SET_CURRENT(work);
	if (!rows_at(text, branch, v, in, out_desc, since, next < 0, &before, &nbefore) ||
		(next >= 0 && !rows_at(text, branch, v, in, out_desc, next, true, &after, &nafter)))
		return false;
	writer = persist_writer_open(v->shard);
	while (b < nbefore || a < nafter)
	{
		int			cmp = next < 0 ? -1 : b == nbefore ? 1 : a == nafter ? -1 :
			hydrated_order(&before[b], &after[a]);

		/* at the since (equal rows counted into one base row); retracted at next unless it stays */
		if (cmp <= 0 && as_base && base_count > 0 &&
			hydrated_order(&before[b - 1], &before[b]) == 0)
			base_count++;
		else if (cmp <= 0 && as_base)
		{
			if (base_count > 0)
				persist_writer_add_base(writer, PointerGetDatum(base_row), base_count);
			base_row = before[b].image;
			base_count = 1;
		}
		else if (cmp <= 0)
			persist_writer_add(writer, since, 1, PointerGetDatum(before[b].image));
		if (cmp < 0 && next >= 0)
			persist_writer_add(writer, next, -1, PointerGetDatum(before[b].image));
		if (cmp > 0)
			persist_writer_add(writer, next, 1, PointerGetDatum(after[a].image));
		dataflow_count_output(cmp == 0 ? 1 : cmp < 0 && next >= 0 ? 2 : 1);
		b += cmp <= 0;
		a += cmp >= 0;
	}
	if (base_count > 0)
		persist_writer_add_base(writer, PointerGetDatum(base_row), base_count);
	persist_writer_close(writer);
	dataflow_count_work(work);
	return true;
}
