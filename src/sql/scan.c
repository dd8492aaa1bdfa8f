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
 *	  can stand in for it exactly: a lone call of persist_peek, as declared
 *	  (no SET clause, not SECURITY DEFINER), returning a composite type
 *	  without dropped attributes, without ORDINALITY or a column definition
 *	  list, and with no whole-row reference to its rows (row marks take
 *	  one).  Everything else keeps the function scan.  The node checks
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

#include "catalog/objectaccess.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "sql/persist_peek.h"
#include "sql/scan.h"

#define PERSIST_SCAN_NAME	"PersistPeekScan"

typedef struct PersistScanState
{
	CustomScanState css;
	FuncExpr   *call;			/* the planned call, its arguments fixed */
	List	   *args;			/* their ExprStates */
	FmgrInfo	flinfo;
	int64		rows_wanted;	/* at most, or -1 (planned: see rows_wanted) */
	List	   *planned_types;	/* the row type's columns' types as planned */
	bool		reads_columns;	/* the qual or the projection reads a column */
	bool		counts_rows;	/* one row, the count of the peek's (see
								 * persist_count_upper_paths): */
	bool		count_known;	/* count is the peek's */
	bool		count_returned; /* the row was returned since the last rescan */
	int64		count;
	Bitmapset  *arg_params;		/* the executor parameters the arguments use */
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
 * Is the function peek.persist_peek, called as declared?  Only a C
 * function with its symbol's name is looked up in its library, so no
 * other library is loaded for the question.
 */
static bool
is_persist_peek(Oid funcid)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Form_pg_proc proc;
	bool		ours = false;

	if (!HeapTupleIsValid(tuple))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->prolang == ClanguageId && proc->proretset && !proc->prosecdef &&
		heap_attisnull(tuple, Anum_pg_proc_proconfig, NULL))
	{
		bool		isnull;
		Datum		prosrc = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);

		if (!isnull && strcmp(TextDatumGetCString(prosrc), "peek_persist_peek") == 0)
		{
			FmgrInfo	flinfo;

			fmgr_info(funcid, &flinfo);
			ours = flinfo.fn_addr == peek_persist_peek;
		}
	}
	ReleaseSysCache(tuple);
	return ours;
}

/*
 * The persist_peek call a function RTE is, if the node can scan it in
 * place of a function scan (see the file's header); else NULL.
 */
static FuncExpr *
streamable_call(RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *call;
	TupleDesc	desc;
	Bitmapset  *attrs = NULL;
	bool		fits;
	ListCell   *lc;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 ||
		rte->funcordinality)
		return NULL;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr) || rtfunc->funccolnames != NIL)
		return NULL;
	call = (FuncExpr *) rtfunc->funcexpr;
	/* a composite type itself: not record, nor a domain over one */
	if (get_typtype(call->funcresulttype) != TYPTYPE_COMPOSITE ||
		!is_persist_peek(call->funcid))
		return NULL;

	desc = lookup_rowtype_tupdesc(call->funcresulttype, -1);
	fits = desc->natts == rtfunc->funccolcount;
	for (int i = 0; i < desc->natts && fits; i++)
		fits = !TupleDescAttr(desc, i)->attisdropped;
	ReleaseTupleDesc(desc);
	if (!fits)
		return NULL;

	/* whole-row (and system) references: the scan's tuples are its columns */
	pull_varattnos((Node *) rel->reltarget->exprs, rti, &attrs);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause, rti, &attrs);
	if (attrs != NULL && bms_first_member(attrs) <= 0 - FirstLowInvalidHeapAttributeNumber)
		return NULL;
	return call;
}

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
	Path	   *function_scan;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (rel->reloptkind != RELOPT_BASEREL || rel->pathlist == NIL ||
		streamable_call(rel, rti, rte) == NULL)
		return;

	/*
	 * The same rows at the same total cost, but the first one at once: the
	 * function scan's startup cost is its whole result.
	 */
	function_scan = linitial(rel->pathlist);
	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = function_scan->param_info;
	path->path.rows = function_scan->rows;
	path->path.startup_cost = 0;
	path->path.total_cost = function_scan->total_cost;
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_private = list_make2(makeInteger((int) rows_wanted(root, rel)), makeInteger(0));
	path->methods = &persist_scan_path_methods;
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

/*
 * The plan: scanrelid 0 (a function RTE has no relation to open), with the
 * function's columns as the scan tuple (custom_scan_tlist) and the call in
 * custom_exprs, so that the planner fixes its arguments (outer Vars as
 * nestloop parameters) as it fixes a function scan's.
 */
static Plan *
plan_persist_scan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				  List *clauses, List *custom_plans)
{
	Index		counted_rti = intVal(lsecond(best_path->custom_private));
	Index		rti = counted_rti != 0 ? counted_rti : rel->relid;
	RangeTblEntry *rte = planner_rt_fetch(rti, root);
	FuncExpr   *call = (FuncExpr *) linitial_node(RangeTblFunction, rte->functions)->funcexpr;
	TupleDesc	desc = lookup_rowtype_tupdesc(call->funcresulttype, -1);
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *types = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		types = lappend_oid(types, att->atttypid);
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(rti, i + 1, att->atttypid,
															  att->atttypmod, att->attcollation, 0),
											 i + 1, pstrdup(NameStr(att->attname)), false));
	}
	ReleaseTupleDesc(desc);
	/* counting: the scan tuple is the counts the plan above reads */
	if (counted_rti != 0)
	{
		List	   *aggrefs = NIL;
		ListCell   *lc;

		collect_aggrefs((Node *) tlist, &aggrefs);
		scan_tlist = NIL;
		foreach(lc, aggrefs)
			scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), list_length(scan_tlist) + 1,
															 NULL, false));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_exprs = list_make1(copyObject(call));
	cscan->custom_scan_tlist = scan_tlist;
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
	AclResult	aclresult;

	s->call = linitial_node(FuncExpr, cscan->custom_exprs);
	s->rows_wanted = intVal(linitial(cscan->custom_private));
	s->counts_rows = intVal(lsecond(cscan->custom_private)) != 0;
	s->planned_types = lthird(cscan->custom_private);
	/* as a function scan checks the function it calls */
	aclresult = pg_proc_aclcheck(s->call->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(s->call->funcid));
	InvokeFunctionExecuteHook(s->call->funcid);
	s->args = ExecInitExprList(s->call->args, &node->ss.ps);
	s->arg_params = pull_paramids((Expr *) s->call->args);
	fmgr_info(s->call->funcid, &s->flinfo);
	fmgr_info_set_expr((Node *) s->call, &s->flinfo);
	/* counting: the counts go up in the virtual slot made for them */
	if (s->counts_rows)
		return;

	/*
	 * PostgreSQL 15 gives a custom scan a virtual scan slot, which would
	 * have every row deformed whatever the plan reads.  The rows go up as
	 * the tuples the walk found (persist_peek_tuple), not copied, deformed
	 * only as far as they are read: the slot is made again for them, and
	 * with it the projection and the qual (and their subplans), before any
	 * node above compiles an expression against this one's slots.  Rows
	 * read back from the replay store go up as copies in the same slot.
	 */
	node->ss.ps.subPlan = NIL;
	ExecInitScanTupleSlot(estate, &node->ss, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
						  &TTSOpsHeapTuple);
	s->replay_slot = ExecInitExtraTupleSlot(estate, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
											&TTSOpsMinimalTuple);
	ExecAssignScanProjectionInfoWithVarno(&node->ss, INDEX_VAR);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);

	/*
	 * A scan's Vars are its scan tuple's columns (a subplan's are in its
	 * arguments): with none, as in count(*), a row is never made, only
	 * counted, and goes up as a row of NULLs nothing reads.
	 */
	s->reads_columns = contain_var_clause((Node *) cscan->scan.plan.targetlist) ||
		contain_var_clause((Node *) cscan->scan.plan.qual);
}

/*
 * The rows walked are of the row type as it is now; the plan's columns
 * are of the type as it was planned (a generic plan outlives an ALTER
 * TYPE).  As a function scan does, the scan reads the planned columns and
 * ignores attributes added since; a planned column dropped or retyped
 * since fails the scan.
 */
static void
check_scan_rowtype(PersistScanState *s)
{
	TupleDesc	now = lookup_rowtype_tupdesc(s->call->funcresulttype, -1);
	bool		match = now->natts >= list_length(s->planned_types);

	for (int i = 0; i < list_length(s->planned_types) && match; i++)
		match = !TupleDescAttr(now, i)->attisdropped &&
			TupleDescAttr(now, i)->atttypid == list_nth_oid(s->planned_types, i);
	ReleaseTupleDesc(now);
	if (!match)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("function return row and query-specified return row do not match"),
				 errdetail("Row type %s changed since the query was planned.",
						   format_type_be(s->call->funcresulttype))));
}

/* Evaluate the call's arguments and open the peek, as the function would. */
static void
open_scan_peek(PersistScanState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	MemoryContext old;
	int			i = 0;
	ListCell   *lc;

	check_scan_rowtype(s);
	InitFunctionCallInfoData(*fcinfo, &s->flinfo, list_length(s->args), s->call->inputcollid,
							 NULL, NULL);
	foreach(lc, s->args)
	{
		fcinfo->args[i].value = ExecEvalExprSwitchContext(lfirst(lc), econtext,
														  &fcinfo->args[i].isnull);
		i++;
	}
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

	if (s->peek != NULL && !bms_overlap(node->ss.ps.chgParam, s->arg_params))
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
	List	   *context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);

	ExplainPropertyText("Function Call",
						deparse_expression((Node *) s->call, context, es->verbose, false), es);
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
}
