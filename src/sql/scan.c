/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  The persist peek scan: a custom scan node that streams the rows of a
 *	  peek.persist_peek call in FROM to the plan above it as the walk finds
 *	  them.  A function scan materializes a set-returning function's whole
 *	  result in a tuplestore (spilled to a temporary file past work_mem)
 *	  before its first row goes up, which cost a full peek of a big
 *	  collection more than the walk itself.
 *
 *	  The planner hook puts the node in place of the function scan where it
 *	  can stand in for it exactly (scan_call.c says where).  The node checks
 *	  EXECUTE on the function as a function scan does, evaluates the call's
 *	  arguments and reads the peek through persist_peek.c, so argument checks,
 *	  privileges, the gate and the walk are the function's own.
 *
 *	  Rows are made only for a plan that reads their columns: for one that
 *	  reads none (EXISTS, a constant select list) the walk's rows are only
 *	  counted, and a query that is nothing but their count (count(*),
 *	  count(1)) is this node alone, which returns it, each row's copies
 *	  counted at once (persist_count_upper_paths).
 *
 *	  Must not read shards, gate peeks or look up collections itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "utils/fmgroids.h"

#include "sql/index_scan.h"
#include "sql/persist_peek.h"
#include "sql/scan.h"
#include "sql/scan_call.h"

#define PERSIST_SCAN_NAME	"PersistPeekScan"

typedef struct PersistScanState
{
	CustomScanState css;
	ScanCall	call;
	int64		rows_wanted;	/* at most, or -1 (planned: see rows_wanted) */
	bool		reads_columns;	/* the qual or the projection reads a column */
	bool		counts_rows;	/* one row, the count of the peek's (see
								 * persist_count_upper_paths): */
	bool		count_known;	/* count is the peek's */
	bool		count_returned; /* the row was returned since the last rescan */
	int64		count;
	PersistPeek *peek;			/* open, or NULL */
	bool		rewind;			/* rescanned with the same arguments */
	Tuplestorestate *replay;	/* the answer as far as read, once rewound */
	TupleTableSlot *replay_slot;	/* a row read back from it */
	bool		replay_done;	/* it holds the whole answer */
} PersistScanState;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_persist_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							   List *tlist, List *clauses, List *custom_plans);
static Node *create_persist_scan_state(CustomScan *cscan);
static void begin_persist_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_persist_scan(CustomScanState *node);
static void end_persist_scan(CustomScanState *node);
static void rescan_persist_scan(CustomScanState *node);
static void explain_persist_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods persist_scan_path_methods = {
	.CustomName = PERSIST_SCAN_NAME,
	.PlanCustomPath = plan_persist_scan,
};

static const CustomScanMethods persist_scan_plan_methods = {
	.CustomName = PERSIST_SCAN_NAME,
	.CreateCustomScanState = create_persist_scan_state,
};

static const CustomExecMethods persist_scan_exec_methods = {
	.CustomName = PERSIST_SCAN_NAME,
	.BeginCustomScan = begin_persist_scan,
	.ExecCustomScan = exec_persist_scan,
	.EndCustomScan = end_persist_scan,
	.ReScanCustomScan = rescan_persist_scan,
	.ExplainCustomScan = explain_persist_scan,
};

/* ---- planning ---- */

/*
 * How many of the scan's rows the query reads at most, when its LIMIT says
 * so directly: the scan is its only relation, unfiltered, and nothing
 * between them (sort, grouping, DISTINCT, window) reads more; else -1.  A
 * walk told so reads the base the way a limited peek does (through the
 * time index, which has the base rows first), so `LIMIT 10` costs what
 * `"limit" => 10` does.
 */
static int64
rows_wanted(PlannerInfo *root, RelOptInfo *rel)
{
	Query	   *parse = root->parse;

	if (root->limit_tuples < 1 || rel->baserestrictinfo != NIL ||
		bms_membership(root->all_baserels) != BMS_SINGLETON ||
		parse->sortClause != NIL || parse->distinctClause != NIL || parse->hasWindowFuncs ||
		parse->hasTargetSRFs)
		return -1;
	return (int64) Min(root->limit_tuples, (double) PG_INT32_MAX);
}

/* Offer the scan in place of a persist_peek call's function scan. */
static void
persist_scan_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	CustomPath *path;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (scan_call_standin(rel, rti, rte, peek_persist_peek, "peek_persist_peek") == NULL)
		return;
	path = scan_call_path(rel, &persist_scan_path_methods);
	path->custom_private = list_make2(makeInteger((int) rows_wanted(root, rel)), makeInteger(0));
	rel->pathlist = NIL;
	add_path(rel, &path->path);
}

/*
 * Is the aggregate the count of the rows: count(*), or count() of a
 * constant that is not null (count(1)), unfiltered, unordered, not
 * distinct, of this query's rows?
 */
static bool
is_row_count(Aggref *agg)
{
	if (agg->agglevelsup != 0 || agg->aggfilter != NULL || agg->aggorder != NIL ||
		agg->aggdistinct != NIL)
		return false;
	if (agg->aggfnoid == F_COUNT_)
		return agg->aggstar;
	if (agg->aggfnoid == F_COUNT_ANY && list_length(agg->args) == 1)
	{
		Expr	   *arg = linitial_node(TargetEntry, agg->args)->expr;

		return IsA(arg, Const) && !((Const *) arg)->constisnull;
	}
	return false;
}

/*
 * Does the expression read anything but the count of the rows (an
 * aggregate of another kind, a filtered, ordered or distinct count, a
 * column, a subquery)?  Constants, parameters and functions of them and of
 * the count read nothing else.
 */
static bool
reads_more_than_count(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
		return !is_row_count((Aggref *) node);
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) || IsA(node, GroupingFunc) ||
		IsA(node, WindowFunc) || IsA(node, SubLink) || IsA(node, SubPlan) ||
		IsA(node, AlternativeSubPlan))
		return true;
	return expression_tree_walker(node, reads_more_than_count, context);
}

/*
 * A query that only counts the rows of a streamed persist_peek call
 * (`SELECT count(*) FROM peek.persist_peek(...)`, or count(1): no WHERE,
 * GROUP BY, HAVING or other aggregate, see is_row_count) is offered the
 * scan as its aggregate too: it walks the peek's answer, counting each
 * row's copies at once, and returns that one row, so that no row goes up
 * through the executor to be counted there.  The count is the rows' steps
 * (persist_peek_count): the limit, pg_peek.max_result_bytes and a
 * negative multiplicity count and fail as they do when the rows go up.
 */
static void
persist_count_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
						  RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	CustomPath *scan;
	CustomPath *path;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || input_rel->reloptkind != RELOPT_BASEREL ||
		!parse->hasAggs || parse->groupClause != NIL || parse->groupingSets != NIL ||
		parse->havingQual != NULL || parse->hasTargetSRFs ||
		input_rel->baserestrictinfo != NIL || list_length(input_rel->pathlist) != 1)
		return;
	scan = linitial(input_rel->pathlist);
	if (!IsA(scan, CustomPath) || scan->methods != &persist_scan_path_methods ||
		scan->path.param_info != NULL ||
		reads_more_than_count((Node *) output_rel->reltarget->exprs, NULL))
		return;

	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = output_rel;
	path->path.pathtarget = output_rel->reltarget;
	path->path.rows = 1;
	path->path.startup_cost = scan->path.total_cost;
	path->path.total_cost = scan->path.total_cost;
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_private = list_make2(makeInteger(-1), makeInteger((int) input_rel->relid));
	path->methods = &persist_scan_path_methods;
	add_path(output_rel, &path->path);
}

/* Collect the distinct Aggrefs of an expression (all counts here). */
static bool
collect_aggrefs(Node *node, List **aggrefs)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		*aggrefs = list_append_unique(*aggrefs, node);
		return false;
	}
	return expression_tree_walker(node, collect_aggrefs, aggrefs);
}

/* The plan (scan_call_plan); counting, its scan tuple is the counts. */
static Plan *
plan_persist_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				  List *clauses, List *custom_plans)
{
	Index		counted_rti = intVal(lsecond(best_path->custom_private));
	List	   *types;
	CustomScan *cscan = scan_call_plan(root, counted_rti != 0 ? counted_rti : rel->relid,
									   tlist, clauses, best_path, &types);

	/* counting: the scan tuple is the counts the plan above reads */
	if (counted_rti != 0)
	{
		List	   *aggrefs = NIL;
		ListCell   *lc;

		collect_aggrefs((Node *) tlist, &aggrefs);
		cscan->custom_scan_tlist = NIL;
		foreach(lc, aggrefs)
			cscan->custom_scan_tlist = lappend(cscan->custom_scan_tlist,
											   makeTargetEntry(lfirst(lc),
															   list_length(cscan->custom_scan_tlist) + 1,
															   NULL, false));
	}
	cscan->custom_private = lappend(list_copy(best_path->custom_private), types);
	cscan->methods = &persist_scan_plan_methods;
	return &cscan->scan.plan;
}

/* ---- execution ---- */

static Node *
create_persist_scan_state(CustomScan *cscan)
{
	PersistScanState *s = palloc0(sizeof(PersistScanState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &persist_scan_exec_methods;
	return (Node *) s;
}

static void
begin_persist_scan(CustomScanState *node, EState *estate, int eflags)
{
	PersistScanState *s = (PersistScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	s->rows_wanted = intVal(linitial(cscan->custom_private));
	s->counts_rows = intVal(lsecond(cscan->custom_private)) != 0;
	/* counting: the counts go up in the virtual slot made for them */
	if (s->counts_rows)
	{
		scan_call_begin(&s->call, node, lthird(cscan->custom_private));
		return;
	}

	/*
	 * The rows go up as the tuples the walk found (persist_peek_tuple), not
	 * copied; rows read back from the replay store go up as copies in the
	 * same slot.
	 */
	scan_call_use_slots(node, &TTSOpsHeapTuple);
	s->replay_slot = ExecInitExtraTupleSlot(estate, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
											&TTSOpsMinimalTuple);

	/*
	 * A scan's Vars are its scan tuple's columns (a subplan's are in its
	 * arguments): with none, as in count(*), a row is never made, only
	 * counted, and goes up as a row of NULLs nothing reads.
	 */
	s->reads_columns = contain_var_clause((Node *) cscan->scan.plan.targetlist) ||
		contain_var_clause((Node *) cscan->scan.plan.qual);
	/* after the slots: scan_call_use_slots makes the node's subplans again */
	scan_call_begin(&s->call, node, lthird(cscan->custom_private));
}

/* Evaluate the call's arguments and open the peek, as the function would. */
static void
open_scan_peek(PersistScanState *s)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	MemoryContext old;

	scan_call_args(&s->call, &s->css, fcinfo);
	old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);
	s->peek = persist_peek_open(fcinfo, s->rows_wanted);
	MemoryContextSwitchTo(old);
}

static void
close_scan_peek(PersistScanState *s)
{
	if (s->peek != NULL)
		persist_peek_close(s->peek);
	s->peek = NULL;
	if (s->replay != NULL)
		tuplestore_end(s->replay);
	s->replay = NULL;
	s->replay_done = false;
	s->rewind = false;
	s->count_known = false;
}

/*
 * A scan rescanned with the same arguments (the inner side of a join, a
 * subquery run again for each outer row) returns the same answer, as a
 * function scan does: the first time it is walked again in the peek's
 * snapshot at its time, and the rows read are kept as they are read (as a
 * Material node keeps its input's); later times they are replayed, and the
 * walk goes on past them only if a reader wants more.  So the store holds
 * no more than the readers read (a LIMIT, a subquery's first match), and
 * pg_peek.max_result_bytes counts no more either.
 */
static void
rewind_scan_peek(PersistScanState *s)
{
	s->rewind = false;
	if (s->replay == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);

		s->replay = tuplestore_begin_heap(false, false, work_mem);
		MemoryContextSwitchTo(old);
		persist_peek_rewind(s->peek);
	}
	else
		tuplestore_rescan(s->replay);
}

/*
 * The one row of a count: each of the scan tuple's columns (a count of the
 * plan) the peek's rows, each row's copies counted at once as
 * persist_peek_advance would step to them one by one.  Rescanned with the
 * same arguments, the same count.
 */
static TupleTableSlot *
persist_count_next(PersistScanState *s)
{
	TupleTableSlot *slot = s->css.ss.ss_ScanTupleSlot;

	ExecClearTuple(slot);
	if (s->count_returned)
		return slot;
	if (!s->count_known)
	{
		if (s->peek == NULL)
			open_scan_peek(s);
		s->count = persist_peek_count(s->peek);
		s->count_known = true;
	}
	for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		slot->tts_values[i] = Int64GetDatum(s->count);
		slot->tts_isnull[i] = false;
	}
	s->count_returned = true;
	return ExecStoreVirtualTuple(slot);
}

static TupleTableSlot *
persist_scan_next(ScanState *ss)
{
	PersistScanState *s = (PersistScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	bool		again;

	if (s->counts_rows)
		return persist_count_next(s);
	if (s->rewind)
		rewind_scan_peek(s);
	if (s->replay != NULL &&
		tuplestore_gettupleslot(s->replay, true, false, s->replay_slot))
		return ExecCopySlot(slot, s->replay_slot);
	if (s->replay_done)
		return ExecClearTuple(slot);
	if (s->peek == NULL)
		open_scan_peek(s);
	if (!persist_peek_advance(s->peek, &again))
	{
		s->replay_done = s->replay != NULL;
		return ExecClearTuple(slot);
	}
	if (!s->reads_columns)
	{
		if (TTS_EMPTY(slot))
			ExecStoreAllNullTuple(slot);
	}
	/* another copy of the row the slot holds: it is still there */
	else if (!again || TTS_EMPTY(slot))
	{
		/*
		 * As found, valid until the next row: a composite datum's header
		 * in place of a table row's, which only system columns (that this
		 * scan has none of) would read.
		 */
		ExecStoreHeapTuple(persist_peek_tuple(s->peek), slot, false);
	}
	/* past the rows kept: the store is at its end, so its position follows */
	if (s->replay != NULL)
		tuplestore_puttupleslot(s->replay, slot);
	return slot;
}

/* Nothing to recheck: the rows are not a table's (and row marks copy them). */
static bool
persist_scan_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_persist_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, persist_scan_next, persist_scan_recheck);
}

static void
end_persist_scan(CustomScanState *node)
{
	close_scan_peek((PersistScanState *) node);
}

/*
 * Rescanned: with arguments changed (a lateral call's), peek again; with
 * the same ones, the same answer again.
 */
static void
rescan_persist_scan(CustomScanState *node)
{
	PersistScanState *s = (PersistScanState *) node;

	if (s->peek != NULL && !scan_call_args_changed(&s->call, node))
		s->rewind = !s->counts_rows;
	else
		close_scan_peek(s);
	s->count_returned = false;
	ExecScanReScan(&node->ss);
}

static void
explain_persist_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	PersistScanState *s = (PersistScanState *) node;

	scan_call_explain(&s->call, node, ancestors, es);
	if (s->counts_rows)
		ExplainPropertyText("Counts", "its rows", es);
}

void
scan_init(void)
{
	RegisterCustomScanMethods(&persist_scan_plan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = persist_scan_pathlist;
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = persist_count_upper_paths;
	index_scan_init();
}
