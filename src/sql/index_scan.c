/*-------------------------------------------------------------------------
 *
 * index_scan.c
 *	  The index peek scan: a custom scan node in place of the function scan
 *	  of a peek.index_peek call in FROM (where scan_call.c says a node may
 *	  stand in for it).  A function scan sets a set-returning function up
 *	  for each execution (its result type resolved again, a call context,
 *	  a ReturnSetInfo, an expected tuple descriptor, a result store), which
 *	  cost a point lookup as much as the lookup itself.  The node evaluates
 *	  the call's arguments and answers the peek through index_peek.c, the
 *	  function's own code (gate, privileges, argument checks, errors, rows),
 *	  into a store of its own that its rows go up from.
 *
 *	  The whole answer is read before the first row goes up, as the
 *	  function's is: the walk holds the index's batches, and a backend has
 *	  one peek at a time.
 *
 *	  Must not gate peeks, walk batches or look up indexes itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/execExpr.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"

#include "sql/index_peek.h"
#include "sql/index_scan.h"
#include "sql/scan_call.h"

#define INDEX_SCAN_NAME	"IndexPeekScan"

typedef struct IndexPeekScanState
{
	CustomScanState css;
	ScanCall	call;
	bool		own_key;		/* the key is ROW(...), evaluated by field */
	List	   *key_fields;		/* its fields: Const, Param or ExprState */
	KeyFields	key;			/* their values at each peek */
	Tuplestorestate *rows;		/* the answer, or NULL: not read yet */
	bool		backward;		/* may be read backward (a cursor's) */
	bool		answered;		/* rows holds the answer to the arguments */
} IndexPeekScanState;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

static Plan *plan_index_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							 List *tlist, List *clauses, List *custom_plans);
static Node *create_index_scan_state(CustomScan *cscan);
static void begin_index_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_index_scan(CustomScanState *node);
static void end_index_scan(CustomScanState *node);
static void rescan_index_scan(CustomScanState *node);
static void explain_index_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods index_scan_path_methods = {
	.CustomName = INDEX_SCAN_NAME,
	.PlanCustomPath = plan_index_scan,
};

static const CustomScanMethods index_scan_plan_methods = {
	.CustomName = INDEX_SCAN_NAME,
	.CreateCustomScanState = create_index_scan_state,
};

static const CustomExecMethods index_scan_exec_methods = {
	.CustomName = INDEX_SCAN_NAME,
	.BeginCustomScan = begin_index_scan,
	.ExecCustomScan = exec_index_scan,
	.EndCustomScan = end_index_scan,
	.ReScanCustomScan = rescan_index_scan,
	.ExplainCustomScan = explain_index_scan,
};

/* ---- planning ---- */

/* Offer the scan in place of an index_peek call's function scan. */
static void
index_scan_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	CustomPath *path;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (scan_call_standin(rel, rti, rte, peek_index_peek, "peek_index_peek") == NULL)
		return;
	path = scan_call_path(rel, &index_scan_path_methods);
	/* a cursor over a function scan may fetch backward without SCROLL */
	path->flags |= CUSTOMPATH_SUPPORT_BACKWARD_SCAN;
	rel->pathlist = NIL;
	add_path(rel, &path->path);
}

static Plan *
plan_index_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				List *clauses, List *custom_plans)
{
	List	   *types;
	CustomScan *cscan = scan_call_plan(root, rel->relid, tlist, clauses, best_path, &types);

	cscan->custom_private = list_make1(types);
	cscan->methods = &index_scan_plan_methods;
	return &cscan->scan.plan;
}

/* ---- execution ---- */

static Node *
create_index_scan_state(CustomScan *cscan)
{
	IndexPeekScanState *s = palloc0(sizeof(IndexPeekScanState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &index_scan_exec_methods;
	return (Node *) s;
}

/*
 * A key field's expression as the node evaluates it: a constant or a
 * statement's parameter (most are) as itself, read at each peek without
 * an ExprState made at each execution; else its ExprState.  A parameter
 * whose list compiles its own steps (PL/pgSQL's) is left to ExecInitExpr.
 */
static Node *
begin_key_field(Expr *field, PlanState *ps)
{
	ParamListInfo params = ps->state->es_param_list_info;

	if (IsA(field, Const))
		return (Node *) field;
	if (IsA(field, Param) && ((Param *) field)->paramkind == PARAM_EXTERN &&
		(params == NULL || params->paramCompile == NULL))
		return (Node *) field;
	return (Node *) ExecInitExpr(field, ps);
}

/*
 * A key field's value at a peek.  A parameter is read by the executor's
 * own step for one (its checks and errors), run outside an ExprState.
 */
static Datum
key_field_value(Node *field, ExprContext *econtext, bool *isnull)
{
	if (IsA(field, Const))
	{
		*isnull = ((Const *) field)->constisnull;
		return ((Const *) field)->constvalue;
	}
	if (IsA(field, Param))
	{
		ExprEvalStep step = {0};
		Datum		value;

		step.resvalue = &value;
		step.resnull = isnull;
		step.d.param.paramid = ((Param *) field)->paramid;
		step.d.param.paramtype = ((Param *) field)->paramtype;
		ExecEvalParamExtern(NULL, &step, econtext);
		return value;
	}
	return ExecEvalExprSwitchContext((ExprState *) field, econtext, isnull);
}

/*
 * A key written ROW(v1, ...) is evaluated field by field and passed so
 * (index_peek_collect): a row expression's state would make and register
 * a row type at every execution, and the record formed at every peek be
 * taken apart again.
 */
static void
begin_key_fields(IndexPeekScanState *s, FuncExpr *call)
{
	RowExpr    *row;
	int			i = 0;
	ListCell   *lc;

	if (list_length(call->args) <= INDEX_PEEK_KEY_ARG ||
		!IsA(list_nth(call->args, INDEX_PEEK_KEY_ARG), RowExpr))
		return;
	row = list_nth_node(RowExpr, call->args, INDEX_PEEK_KEY_ARG);
	if (row->row_typeid != RECORDOID)
		return;
	s->own_key = true;
	s->call.own_args = bms_make_singleton(INDEX_PEEK_KEY_ARG);
	foreach(lc, row->args)
		s->key_fields = lappend(s->key_fields, begin_key_field(lfirst(lc), &s->css.ss.ps));
	s->key.nfields = list_length(row->args);
	s->key.values = palloc(sizeof(Datum) * Max(s->key.nfields, 1));
	s->key.nulls = palloc(sizeof(bool) * Max(s->key.nfields, 1));
	s->key.types = palloc(sizeof(Oid) * Max(s->key.nfields, 1));
	foreach(lc, row->args)
		s->key.types[i++] = exprType(lfirst(lc));
}

/* The rows go up as the store keeps them, deformed as far as they are read. */
static void
begin_index_scan(CustomScanState *node, EState *estate, int eflags)
{
	IndexPeekScanState *s = (IndexPeekScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	scan_call_use_slots(node, &TTSOpsMinimalTuple);
	begin_key_fields(s, linitial_node(FuncExpr, cscan->custom_exprs));
	scan_call_begin(&s->call, node, linitial(cscan->custom_private));
	s->backward = (eflags & EXEC_FLAG_BACKWARD) != 0;
}

/*
 * Read the answer into the store, as the function does, in the node's
 * per-tuple memory (the function's is its call's).
 */
static void
answer_index_peek(IndexPeekScanState *s)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	int			i = 0;
	ListCell   *lc;

	scan_call_args(&s->call, &s->css, fcinfo);
	foreach(lc, s->key_fields)
	{
		s->key.values[i] = key_field_value(lfirst(lc), econtext, &s->key.nulls[i]);
		i++;
	}
	if (s->rows == NULL)
	{
		old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);
		s->rows = tuplestore_begin_heap(s->backward, false, work_mem);
		MemoryContextSwitchTo(old);
	}
	else
		tuplestore_clear(s->rows);
	old = MemoryContextSwitchTo(s->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
	index_peek_collect(fcinfo, s->own_key ? &s->key : NULL, s->rows);
	MemoryContextSwitchTo(old);
	s->answered = true;
}

static TupleTableSlot *
index_scan_next(ScanState *ss)
{
	IndexPeekScanState *s = (IndexPeekScanState *) ss;

	if (!s->answered)
		answer_index_peek(s);
	if (!tuplestore_gettupleslot(s->rows, ScanDirectionIsForward(ss->ps.state->es_direction),
								 false, ss->ss_ScanTupleSlot))
		return ExecClearTuple(ss->ss_ScanTupleSlot);
	return ss->ss_ScanTupleSlot;
}

/* Nothing to recheck: the rows are not a table's (and row marks copy them). */
static bool
index_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_index_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, index_scan_next, index_scan_recheck);
}

static void
end_index_scan(CustomScanState *node)
{
	IndexPeekScanState *s = (IndexPeekScanState *) node;

	if (s->rows != NULL)
		tuplestore_end(s->rows);
}

/*
 * Rescanned: with arguments changed (a lateral call's), peek again; with
 * the same ones, the same answer again, as a function scan does.
 */
static void
rescan_index_scan(CustomScanState *node)
{
	IndexPeekScanState *s = (IndexPeekScanState *) node;

	if (s->answered && !scan_call_args_changed(&s->call, node))
		tuplestore_rescan(s->rows);
	else
		s->answered = false;
	ExecScanReScan(&node->ss);
}

static void
explain_index_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	scan_call_explain(&((IndexPeekScanState *) node)->call, node, ancestors, es);
}

void
index_scan_init(void)
{
	RegisterCustomScanMethods(&index_scan_plan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = index_scan_pathlist;
}
