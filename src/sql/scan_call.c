/*-------------------------------------------------------------------------
 *
 * scan_call.c
 *	  What the peek scan nodes (scan.c for persist_peek, index_scan.c for
 *	  index_peek) share: when a node may stand in for a peek function's
 *	  function scan, the plan's scan tuple (the function's columns), and at
 *	  execution the checks a function scan makes of the call (EXECUTE, the
 *	  row type as planned) and the evaluation of its arguments into a call
 *	  of the function's own C code.
 *
 *	  A node stands in exactly where it returns what the function scan
 *	  would: a lone call of the function, as declared (no SET clause, not
 *	  SECURITY DEFINER), returning a composite type without dropped
 *	  attributes, without ORDINALITY or a column definition list, and with
 *	  no whole-row reference to its rows (row marks take one).
 *
 *	  Must not peek, walk or look up pg_peek's objects: the nodes do that
 *	  through the functions' own code.
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
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "sql/scan_call.h"

/* ---- planning ---- */

/*
 * Is the function this library's C function of that symbol, called as
 * declared?  Only a C function with the symbol's name is looked up in its
 * library, so no other library is loaded for the question.
 */
static bool
is_peek_function(Oid funcid, PGFunction function, const char *symbol)
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

		if (!isnull && strcmp(TextDatumGetCString(prosrc), symbol) == 0)
		{
			FmgrInfo	flinfo;

			fmgr_info(funcid, &flinfo);
			ours = flinfo.fn_addr == function;
		}
	}
	ReleaseSysCache(tuple);
	return ours;
}

/*
 * The call of the function (of that symbol) a function RTE is, if a node
 * can scan it in place of a function scan (see the file's header); else
 * NULL.
 */
FuncExpr *
scan_call_standin(RelOptInfo *rel, Index rti, RangeTblEntry *rte, PGFunction function,
				  const char *symbol)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *call;
	TupleDesc	desc;
	Bitmapset  *attrs = NULL;
	bool		fits;
	ListCell   *lc;

	if (rel->reloptkind != RELOPT_BASEREL || rel->pathlist == NIL ||
		rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 ||
		rte->funcordinality)
		return NULL;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr) || rtfunc->funccolnames != NIL)
		return NULL;
	call = (FuncExpr *) rtfunc->funcexpr;
	/* a composite type itself: not record, nor a domain over one */
	if (get_typtype(call->funcresulttype) != TYPTYPE_COMPOSITE ||
		!is_peek_function(call->funcid, function, symbol))
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
 * The node's path, which takes the function scan's place: the same rows at
 * the same total cost, but the first one at once (the function scan's
 * startup cost is its whole result).
 */
CustomPath *
scan_call_path(RelOptInfo *rel, const CustomPathMethods *methods)
{
	Path	   *function_scan = linitial(rel->pathlist);
	CustomPath *path = makeNode(CustomPath);

	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = function_scan->param_info;
	path->path.rows = function_scan->rows;
	path->path.startup_cost = 0;
	path->path.total_cost = function_scan->total_cost;
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->methods = methods;
	return path;
}

/*
 * The plan of the call of RTE rti: scanrelid 0 (a function RTE has no
 * relation to open), with the function's columns as the scan tuple
 * (custom_scan_tlist) and the call in custom_exprs, so that the planner
 * fixes its arguments (outer Vars as nestloop parameters) as it fixes a
 * function scan's.  *types are the columns' types, for scan_call_begin.
 */
CustomScan *
scan_call_plan(PlannerInfo *root, Index rti, List *tlist, List *clauses,
			   CustomPath *best_path, List **types)
{
	RangeTblEntry *rte = planner_rt_fetch(rti, root);
	FuncExpr   *call = (FuncExpr *) linitial_node(RangeTblFunction, rte->functions)->funcexpr;
	TupleDesc	desc = lookup_rowtype_tupdesc(call->funcresulttype, -1);
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;

	*types = NIL;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		*types = lappend_oid(*types, att->atttypid);
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(rti, i + 1, att->atttypid,
															  att->atttypmod, att->attcollation, 0),
											 i + 1, pstrdup(NameStr(att->attname)), false));
	}
	ReleaseTupleDesc(desc);
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_exprs = list_make1(copyObject(call));
	cscan->custom_scan_tlist = scan_tlist;
	return cscan;
}

/* ---- execution ---- */

/*
 * The executor parameters whose change changes an argument's value, as
 * the planner finds a function scan's (finalize_primnode): those it reads,
 * and those a subplan in it reads and is not passed.  A subplan's own
 * query may read an outer query's parameter that no argument names (in a
 * correlated subquery around the call), and its answer change with it.
 */
typedef struct ArgParams
{
	List	   *subplans;		/* the statement's, by plan_id */
	Bitmapset  *ids;
} ArgParams;

static bool
arg_params_walker(Node *node, ArgParams *ap)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		ap->ids = bms_add_member(ap->ids, ((Param *) node)->paramid);
	else if (IsA(node, SubPlan))
	{
		SubPlan    *subplan = (SubPlan *) node;
		Plan	   *plan = list_nth(ap->subplans, subplan->plan_id - 1);
		Bitmapset  *read = bms_copy(plan->extParam);
		ListCell   *lc;

		foreach(lc, subplan->parParam)
			read = bms_del_member(read, lfirst_int(lc));
		ap->ids = bms_join(ap->ids, read);
	}
	return expression_tree_walker(node, arg_params_walker, (void *) ap);
}

static Bitmapset *
arg_params(Node *args, List *subplans)
{
	ArgParams	ap = {subplans, NULL};

	arg_params_walker(args, &ap);
	return ap.ids;
}

/*
 * The call at the node's start, checked as a function scan checks the
 * function it calls (EXECUTE), its arguments ready to evaluate.  The
 * function is only ever called through its C code, with the call as its
 * expression (for the arguments' types), so flinfo is not looked up.
 */
void
scan_call_begin(ScanCall *sc, CustomScanState *node, List *planned_types)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	AclResult	aclresult;
	ListCell   *lc;

	sc->call = linitial_node(FuncExpr, cscan->custom_exprs);
	sc->planned_types = planned_types;
	aclresult = pg_proc_aclcheck(sc->call->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(sc->call->funcid));
	InvokeFunctionExecuteHook(sc->call->funcid);
	/* a constant argument (most are) is passed as planned, with no ExprState */
	sc->args = NIL;
	foreach(lc, sc->call->args)
		sc->args = lappend(sc->args,
						   IsA(lfirst(lc), Const) ||
						   bms_is_member(foreach_current_index(lc), sc->own_args) ? NULL :
						   ExecInitExpr(lfirst(lc), &node->ss.ps));
	sc->arg_params_known = false;
	MemSet(&sc->flinfo, 0, sizeof(FmgrInfo));
	sc->flinfo.fn_oid = sc->call->funcid;
	sc->flinfo.fn_nargs = list_length(sc->call->args);
	sc->flinfo.fn_retset = true;
	sc->flinfo.fn_mcxt = CurrentMemoryContext;
	fmgr_info_set_expr((Node *) sc->call, &sc->flinfo);
}

/*
 * PostgreSQL 15 gives a custom scan a virtual scan slot, which would have
 * every row deformed whatever the plan reads.  The node's rows go up in a
 * slot of their own kind (ops), deformed only as far as they are read: the
 * slot is made again, and with it the projection and the qual (and their
 * subplans), before any node above compiles an expression against this
 * one's slots, and before the node makes its arguments' expressions: the
 * node's list of subplans is made again, and a rescan tells only the
 * subplans on it that their outer parameters changed.
 */
void
scan_call_use_slots(CustomScanState *node, const TupleTableSlotOps *ops)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;

	node->ss.ps.subPlan = NIL;
	ExecInitScanTupleSlot(estate, &node->ss, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
						  ops);
	ExecAssignScanProjectionInfoWithVarno(&node->ss, INDEX_VAR);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
}

/*
 * The rows a peek returns are of the row type as it is now; the plan's
 * columns are of the type as it was planned (a generic plan outlives an
 * ALTER TYPE).  As a function scan does, the scan reads the planned
 * columns and ignores attributes added since; a planned column dropped or
 * retyped since fails the scan.
 */
static void
check_scan_rowtype(ScanCall *sc)
{
	/* read at once, with no catalog access between: no pin on it needed */
	TupleDesc	now = lookup_type_cache(sc->call->funcresulttype, TYPECACHE_TUPDESC)->tupDesc;
	bool		match = now != NULL && now->natts >= list_length(sc->planned_types);

	for (int i = 0; i < list_length(sc->planned_types) && match; i++)
		match = !TupleDescAttr(now, i)->attisdropped &&
			TupleDescAttr(now, i)->atttypid == list_nth_oid(sc->planned_types, i);
	if (!match)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("function return row and query-specified return row do not match"),
				 errdetail("Row type %s changed since the query was planned.",
						   format_type_be(sc->call->funcresulttype))));
}

/*
 * The function's call info for its C code, its arguments evaluated in the
 * node's per-tuple memory; fcinfo has room for FUNC_MAX_ARGS arguments.
 */
void
scan_call_args(ScanCall *sc, CustomScanState *node, FunctionCallInfo fcinfo)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	int			i = 0;
	ListCell   *arg;
	ListCell   *state;

	check_scan_rowtype(sc);
	InitFunctionCallInfoData(*fcinfo, &sc->flinfo, list_length(sc->args), sc->call->inputcollid,
							 NULL, NULL);
	forboth(arg, sc->call->args, state, sc->args)
	{
		if (bms_is_member(i, sc->own_args))
		{
			fcinfo->args[i].value = (Datum) 0;
			fcinfo->args[i].isnull = false;
		}
		else if (lfirst(state) == NULL)
		{
			fcinfo->args[i].value = lfirst_node(Const, arg)->constvalue;
			fcinfo->args[i].isnull = lfirst_node(Const, arg)->constisnull;
		}
		else
			fcinfo->args[i].value = ExecEvalExprSwitchContext(lfirst(state), econtext,
															  &fcinfo->args[i].isnull);
		i++;
	}
}

/*
 * Rescanned with other arguments (a lateral call's)?  The parameters the
 * arguments use are found at the first rescan: most executions have none.
 */
bool
scan_call_args_changed(ScanCall *sc, CustomScanState *node)
{
	if (!sc->arg_params_known)
	{
		sc->arg_params = arg_params((Node *) sc->call->args,
									node->ss.ps.state->es_plannedstmt->subplans);
		sc->arg_params_known = true;
	}
	return bms_overlap(node->ss.ps.chgParam, sc->arg_params);
}

void
scan_call_explain(ScanCall *sc, CustomScanState *node, List *ancestors, ExplainState *es)
{
	List	   *context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);

	ExplainPropertyText("Function Call",
						deparse_expression((Node *) sc->call, context, es->verbose, false), es);
}
