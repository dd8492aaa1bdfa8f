/*-------------------------------------------------------------------------
 *
 * hydrate.c
 *	  A grouped or joined view's hydration in one run of PostgreSQL's
 *	  executor over its inputs' contents, as CREATE MATERIALIZED VIEW runs
 *	  its query: each input's rows at the hydration's time read from its
 *	  shard into a tuplestore (a one-input view's through WHERE, input.c),
 *	  the branch's query planned over them as named tuplestores, and its
 *	  rows appended to the view's shard at that time.  No group is built:
 *	  the view is ready sooner, and reduce.c builds its groups from its
 *	  inputs' contents in its next round (as after a restart), learning
 *	  each group's output when an update first touches it by running the
 *	  query over the group's rows in their images' order.  That output must
 *	  be what this run appended, so only a query whose rows do not depend
 *	  on the order its input rows come in is hydrated here (order_free):
 *	  group and DISTINCT keys of types whose equal values are the same
 *	  bytes, aggregates whose result is exact and, for min and max, of such
 *	  types; a join alone gives each pair of rows' output whatever their
 *	  order.  Other queries, and contents with a row in parts (a negative
 *	  count), go through reduce.c.
 *
 *	  Must not touch the catalog (round.c does) nor keep anything past
 *	  the run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "dataflow/dataflow.h"
#include "storage/persist.h"

/* Whether values of the type that are equal are the same bytes. */
static bool
equal_is_same(Oid type, Oid collation)
{
	switch (getBaseType(type))
	{
		case BOOLOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
			return OidIsValid(collation) && get_collation_isdeterministic(collation);
		default:
			return false;
	}
}

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
			return !equal_is_same(arg, agg->inputcollid);
		return true;
	}
	return expression_tree_walker(node, order_bound_aggregate, context);
}

/* Whether each of the clauses' expressions is of a type equal_is_same. */
static bool
keys_same_when_equal(List *clauses, List *targetlist)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		Node	   *key = get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc), targetlist);

		if (!equal_is_same(exprType(key), exprCollation(key)))
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

/* An input's contents read into its tuplestore, or a row in parts found. */
typedef struct InputRows
{
	ViewInput	input;
	Tuplestorestate *rows;
	double		nrows;
	bool		in_parts;		/* a negative count: reduce.c sums its parts */
	MemoryContext per_row;
} InputRows;

static void
store_row(int64 time, int64 diff, Datum stored, void *arg)
{
	InputRows  *in = arg;
	MemoryContext old;
	Datum		row;

	if (diff == 0 || in->in_parts)
		return;					/* a base row's zero part (persist.h) */
	if (diff < 0)
	{
		in->in_parts = true;
		return;
	}
	old = MemoryContextSwitchTo(in->per_row);
	if (view_input_row(&in->input, stored, &row))
	{
		for (int64 i = 0; i < diff; i++)
			tuplestore_puttuple(in->rows, &in->input.tuple);
		in->nrows += diff;
	}
	ExecClearTuple(in->input.slot);
	ResetExprContext(in->input.econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(in->per_row);
}

/* The query's rows appended to the view's shard at the hydration's time. */
typedef struct HydratedRows
{
	DestReceiver pub;
	TupleTableSlot *out;
	ShardWriter *writer;
	int64		since;
} HydratedRows;

static bool
hydrated_receive(TupleTableSlot *slot, DestReceiver *self)
{
	HydratedRows *h = (HydratedRows *) self;
	int			natts = h->out->tts_tupleDescriptor->natts;

	if (slot->tts_tupleDescriptor->natts != natts)
		elog(ERROR, "a view's query gives %d columns for its %d",
			 slot->tts_tupleDescriptor->natts, natts);
	slot_getallattrs(slot);
	ExecClearTuple(h->out);
	memcpy(h->out->tts_values, slot->tts_values, sizeof(Datum) * natts);
	memcpy(h->out->tts_isnull, slot->tts_isnull, sizeof(bool) * natts);
	ExecStoreVirtualTuple(h->out);
	persist_writer_add(h->writer, h->since, 1, ExecFetchSlotHeapTupleDatum(h->out));
	dataflow_count_output(1);
	return true;
}

static void
hydrated_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
hydrated_shutdown(DestReceiver *self)
{
}

static void
hydrated_destroy(DestReceiver *self)
{
}

/* The inputs [0, n) read, let go. */
static void
inputs_end(InputRows *inputs, int n)
{
	for (int i = 0; i < n; i++)
	{
		tuplestore_end(inputs[i].rows);
		MemoryContextDelete(inputs[i].per_row);
		view_input_end(&inputs[i].input);
	}
}

/*
 * The branch's query (text: the view's) run once over its inputs' contents
 * at the since (in: its inputs' objects in its order), its rows appended to
 * the view's shard there.  Returns false, having appended nothing, when an
 * input's contents hold a row in parts (reduce.c then hydrates it).  The
 * caller has checked dataflow_hydrates_at_once; runs as the view's owner
 * in round.c's subtransaction.
 */
bool
dataflow_hydrate_at_once(const char *text, ViewPlan *branch, CatalogObject *v,
						 CatalogObject **in, TupleDesc out_desc, int64 since)
{
	Query	   *query = copyObject(branch->query);
	int			ninputs = list_length(branch->inputs);
	InputRows  *inputs = palloc0(sizeof(InputRows) * ninputs);
	QueryEnvironment *env = create_queryEnv();
	HydratedRows h;
	PlannedStmt *stmt;
	QueryDesc  *qd;
	instr_time	work;
	ListCell   *lc;

	foreach(lc, branch->inputs)
	{
		ViewPlanInput *pin = lfirst(lc);
		InputRows  *rows = &inputs[foreach_current_index(lc)];
		RangeTblEntry *rte = rt_fetch(pin->rtindex, query->rtable);
		EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
		TupleDesc	desc = lookup_rowtype_tupdesc_copy(pin->row_type, -1);

		view_input_begin(&rows->input, branch->qual, desc);
		rows->rows = tuplestore_begin_heap(false, false, maintenance_work_mem);
		rows->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view hydration",
											  ALLOCSET_DEFAULT_SIZES);
		persist_scan_at(in[pin->object]->shard, since, since + 1, store_row, rows);
		if (rows->in_parts)
		{
			inputs_end(inputs, foreach_current_index(lc) + 1);
			return false;
		}

		/* the input's persist_peek becomes a scan of its rows */
		enr->md.name = psprintf("pg_peek_input_%d", foreach_current_index(lc) + 1);
		enr->md.reliddesc = InvalidOid;
		enr->md.tupdesc = desc;
		enr->md.enrtype = ENR_NAMED_TUPLESTORE;
		enr->md.enrtuples = rows->nrows;
		enr->reldata = rows->rows;
		register_ENR(env, enr);
		rte->rtekind = RTE_NAMEDTUPLESTORE;
		rte->enrname = enr->md.name;
		rte->enrtuples = rows->nrows;
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

	dataflow_count_stage(list_length(branch->stages != NIL ? branch->stages : list_make1(branch)) - 1);
	INSTR_TIME_SET_CURRENT(work);
	stmt = pg_plan_query(query, text, 0, NULL);
	h.pub.receiveSlot = hydrated_receive;
	h.pub.rStartup = hydrated_startup;
	h.pub.rShutdown = hydrated_shutdown;
	h.pub.rDestroy = hydrated_destroy;
	h.pub.mydest = DestNone;
	h.out = MakeSingleTupleTableSlot(out_desc, &TTSOpsVirtual);
	h.writer = persist_writer_open(v->shard);
	h.since = since;
	qd = CreateQueryDesc(stmt, text, GetActiveSnapshot(), InvalidSnapshot, &h.pub, NULL, env, 0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, 0, true);
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	persist_writer_close(h.writer);
	ExecDropSingleTupleTableSlot(h.out);
	dataflow_count_work(work);

	inputs_end(inputs, ninputs);
	return true;
}
