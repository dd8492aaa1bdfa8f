/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  A maintained view's query, analyzed by PostgreSQL and checked against
 *	  what the operators support: one input, peek.persist_peek(NULL::t,
 *	  'name') in FROM (a collection or a view, its columns under its row
 *	  type's attribute names) or a captured table (read as its source:
 *	  sources.c), filtered by WHERE, mapped
 *	  and projected by the select list, and either grouped (GROUP BY, the
 *	  aggregates count, sum, avg, min, max, bool_and, bool_or and every,
 *	  HAVING) or made DISTINCT, with immutable expressions only and no
 *	  function or type of a temporary schema.  The grouping keys are found
 *	  here with the operators that tell groups apart (reduce.c keeps the
 *	  groups).  Anything else is refused with 0A000 naming the construct.  The
 *	  backend plans the user's text at create_view (in the user's
 *	  search_path and privileges) and keeps it written out schema-qualified
 *	  (dataflow_plan_text); the maintenance runtime plans that text again
 *	  for each round, under the view owner's privileges, and plans its
 *	  expressions for the executor (dataflow_plan_expressions).
 *
 *	  Must not read or write tables: round.c runs the plan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "dataflow/dataflow.h"

static void
refuse(const char *construct)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("maintained views do not support %s", construct),
			 errdetail("A maintained view reads one input, peek.persist_peek(NULL::t, 'name') in FROM, "
					   "filters (WHERE), maps and projects its rows with immutable expressions, "
					   "and may group them (GROUP BY, count, sum, avg, min, max, bool_and, bool_or, every, HAVING) "
					   "or make them DISTINCT.")));
}

/* peek.persist_peek(anyelement, text, bigint, bigint), or InvalidOid */
static Oid
persist_peek_oid(void)
{
	Oid			argtypes[4] = {ANYELEMENTOID, TEXTOID, INT8OID, INT8OID};

	return LookupFuncName(list_make2(makeString(PEEK_SCHEMA), makeString("persist_peek")),
						  4, argtypes, true);
}

/* check_functions_in_node's callback: a function that is not immutable */
static bool
mutable_function(Oid func_id, void *context)
{
	if (func_volatile(func_id) == PROVOLATILE_IMMUTABLE)
		return false;
	*(Oid *) context = func_id;
	return true;
}

/* The first function in an expression that is not immutable, or InvalidOid. */
static bool
find_mutable_function(Node *node, Oid *func)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, mutable_function, func))
		return true;
	return expression_tree_walker(node, find_mutable_function, func);
}

/* The aggregates a view may compute: exact under deletions (reduce.c). */
static bool
unsupported_aggregate(Node *node, void *context)
{
	static const char *const supported[] = {
		"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every"
	};

	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		char	   *name = get_func_name(agg->aggfnoid);
		bool		known = false;

		for (int i = 0; i < lengthof(supported); i++)
			known |= strcmp(name, supported[i]) == 0;
		if (!known || agg->aggkind != AGGKIND_NORMAL ||
			get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE)
		{
			*(Oid *) context = agg->aggfnoid;
			return true;
		}
	}
	if (IsA(node, GroupingFunc))
	{
		*(Oid *) context = InvalidOid;
		return true;
	}
	return expression_tree_walker(node, unsupported_aggregate, context);
}

/* check_functions_in_node's callback: a function of a temporary schema */
static bool
temporary_function(Oid func_id, void *context)
{
	if (!isAnyTempNamespace(get_func_namespace(func_id)))
		return false;
	*(Oid *) context = func_id;
	return true;
}

static bool
temporary_type(Oid type)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	bool		temporary;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	temporary = isAnyTempNamespace(((Form_pg_type) GETSTRUCT(tup))->typnamespace);
	ReleaseSysCache(tup);
	return temporary;
}

/*
 * Refuse a function or type of a temporary schema anywhere in an
 * expression: the view outlasts the session that made it, and its text
 * names such an object as pg_temp, which the runtime would read as its own
 * temporary schema.
 */
static bool
refuse_temporary_objects(Node *node, void *context)
{
	Oid			func = InvalidOid;

	if (node == NULL)
		return false;
	if (check_functions_in_node(node, temporary_function, &func))
		refuse(psprintf("function %s: it is temporary", get_func_name(func)));
	/* (the nodes in an expression that have no type of their own) */
	if (IsA(node, SortGroupClause))
		return false;			/* an aggregate's DISTINCT or ORDER BY */
	if (IsA(node, List) || IsA(node, TargetEntry) || IsA(node, CaseWhen))
		return expression_tree_walker(node, refuse_temporary_objects, context);
	if (temporary_type(exprType(node)))
		refuse(psprintf("type %s: it is temporary", format_type_be(exprType(node))));
	return expression_tree_walker(node, refuse_temporary_objects, context);
}

/* The expressions of a view: immutable, over the input's columns only. */
static void
check_expressions(Node *exprs)
{
	Oid			func = InvalidOid;
	ListCell   *lc;

	if (find_mutable_function(exprs, &func))
		refuse(psprintf("function %s: it is not immutable",
						format_procedure(func)));
	if (contain_mutable_functions(exprs))
		refuse("expressions that are not immutable");
	if (unsupported_aggregate(exprs, &func))
		refuse(OidIsValid(func) ?
			   psprintf("aggregate function %s", format_procedure(func)) :
			   "GROUPING");
	(void) refuse_temporary_objects(exprs, NULL);
	foreach(lc, pull_var_clause(exprs, PVC_RECURSE_AGGREGATES))
	{
		Var		   *var = lfirst_node(Var, lc);

		if (var->varattno <= 0)
			refuse("whole-row references to the input");
	}
}

/*
 * The input's columns go by the names of its row type's attributes.  The
 * text kept for a view lists them as column aliases (as ruleutils writes
 * any function in FROM), by position: were an attribute renamed since
 * (one the view reads cannot be dropped: its PostgreSQL view depends on
 * it), a name would stand for another attribute or none.  So a name that is not its attribute's fails the
 * view; at create_view, aliases that rename the input's columns are
 * refused.
 */
static void
check_input_columns(RangeTblEntry *rte, Oid row_type)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(row_type, -1);
	List	   *names = rte->eref->colnames;

	for (int i = 0; i < desc->natts && i < list_length(names); i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(strVal(list_nth(names, i)), NameStr(att->attname)) != 0)
		{
			ReleaseTupleDesc(desc);
			refuse(psprintf("input column aliases other than the input's attribute names (\"%s\" names attribute \"%s\" of %s: the type was changed, or the column renamed)",
							strVal(list_nth(names, i)), NameStr(att->attname),
							format_type_be(row_type)));
		}
	}
	ReleaseTupleDesc(desc);
}

/* The input call in FROM: peek.persist_peek(NULL::t, 'name'). */
static void
check_input(Query *query, ViewPlan *plan)
{
	RangeTblEntry *rte;
	RangeTblFunction *rtfunc;
	FuncExpr   *call;
	Const	   *args[2] = {NULL, NULL};
	ListCell   *lc;

	if (query->rtable == NIL || query->jointree->fromlist == NIL)
		refuse("a query without an input in FROM");
	if (list_length(query->rtable) != 1 || list_length(query->jointree->fromlist) != 1)
		refuse("joins (a view reads one input)");
	rte = linitial_node(RangeTblEntry, query->rtable);
	switch (rte->rtekind)
	{
		case RTE_FUNCTION:
			break;
		case RTE_RELATION:
			refuse("reading a table or view directly (read a collection or view with peek.persist_peek(NULL::t, 'name'))");
			break;
		case RTE_SUBQUERY:
			refuse("subqueries in FROM");
			break;
		default:
			refuse("this kind of FROM item");
			break;
	}
	if (list_length(rte->functions) != 1)
		refuse("ROWS FROM");
	if (rte->funcordinality)
		refuse("WITH ORDINALITY");
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr) ||
		((FuncExpr *) rtfunc->funcexpr)->funcid != persist_peek_oid())
		refuse("functions in FROM other than peek.persist_peek");
	call = (FuncExpr *) rtfunc->funcexpr;
	foreach(lc, call->args)
	{
		Node	   *arg = lfirst(lc);
		int			n = foreach_current_index(lc);

		if (IsA(arg, NamedArgExpr))
		{
			n = ((NamedArgExpr *) arg)->argnumber;
			arg = (Node *) ((NamedArgExpr *) arg)->arg;
		}
		if (n >= 2)
			refuse("as_of or limit in the input's peek.persist_peek");
		if (!IsA(arg, Const))
			refuse("an input named by an expression (name it with constants: peek.persist_peek(NULL::t, 'name'))");
		args[n] = (Const *) arg;
	}
	if (args[0] == NULL || args[1] == NULL || args[1]->constisnull ||
		args[1]->consttype != TEXTOID)
		refuse("an input named by an expression (name it with constants: peek.persist_peek(NULL::t, 'name'))");
	plan->input = TextDatumGetCString(args[1]->constvalue);
	plan->input_type = args[0]->consttype;
	check_input_columns(rte, plan->input_type);
}

/*
 * Parse and analyze a view's query in the current search_path and
 * privileges, and check it; raises 0A000 naming what is not supported.
 */
ViewPlan *
dataflow_plan(const char *text)
{
	List	   *raw = raw_parser(text, RAW_PARSE_DEFAULT);
	RawStmt    *stmt;
	Query	   *query;
	ViewPlan   *plan = palloc0(sizeof(ViewPlan));
	ListCell   *lc;

	if (list_length(raw) != 1)
		refuse("more than one statement");
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt))
		refuse("statements other than SELECT");
	if (((SelectStmt *) stmt->stmt)->intoClause != NULL)
		refuse("SELECT INTO");
	/* (analysis keeps no row mark for a function in FROM) */
	if (((SelectStmt *) stmt->stmt)->lockingClause != NIL)
		refuse("FOR UPDATE or FOR SHARE");
	query = parse_analyze_fixedparams(stmt, text, NULL, 0, NULL);
	plan->written = query;
	query = dataflow_read_sources(query);

	{
		/* what the query has that no operator supports yet, in order */
		const struct
		{
			bool		has;
			const char *construct;
		}			refused[] = {
			{query->commandType != CMD_SELECT || query->utilityStmt != NULL,
			"statements other than SELECT"},
			{query->hasRecursive, "WITH RECURSIVE"},
			{query->cteList != NIL, "WITH (common table expressions)"},
			{query->setOperations != NULL, "UNION, INTERSECT or EXCEPT"},
			{query->groupingSets != NIL, "GROUPING SETS, ROLLUP or CUBE"},
			{query->hasWindowFuncs, "window functions"},
			{query->hasTargetSRFs, "set-returning functions in the select list"},
			{query->hasSubLinks, "subqueries"},
			{query->hasDistinctOn, "DISTINCT ON"},
			{query->distinctClause != NIL &&
				(query->groupClause != NIL || query->hasAggs),
			"DISTINCT over GROUP BY or aggregates"},
			{query->sortClause != NIL, "ORDER BY"},
			{query->limitCount != NULL || query->limitOffset != NULL, "LIMIT, OFFSET or FETCH"},
		};

		for (int i = 0; i < lengthof(refused); i++)
			if (refused[i].has)
				refuse(refused[i].construct);
	}
	check_input(query, plan);

	/* (junk columns: GROUP BY keys that are not selected) */
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (!tle->resjunk)
			plan->targetlist = lappend(plan->targetlist, tle);
	}
	if (plan->targetlist == NIL)
		refuse("a select list without columns");
	plan->qual = query->jointree->quals;
	check_expressions((Node *) query->targetList);
	check_expressions(plan->qual);
	check_expressions(query->havingQual);
	plan->reduces = query->hasAggs || query->groupClause != NIL ||
		query->distinctClause != NIL || query->havingQual != NULL;
	foreach(lc, query->groupClause != NIL ? query->groupClause : query->distinctClause)
	{
		SortGroupClause *key = lfirst_node(SortGroupClause, lc);

		if (!key->hashable)
			refuse(psprintf("grouping by type %s, which has no hash operator class",
							format_type_be(exprType((Node *) get_sortgroupclause_expr(key, query->targetList)))));
		plan->group_keys = lappend(plan->group_keys,
								   get_sortgroupclause_expr(key, query->targetList));
		plan->group_eqops = lappend_oid(plan->group_eqops, key->eqop);
	}
	plan->query = query;
	return plan;
}

/*
 * The plan's expressions (WHERE, the select list, the groups' keys) made
 * ready for the expression executor, as the planner makes a query's: a
 * function's named arguments put in order and its defaults filled in, a
 * COLLATE clause made a relabeling, constants folded.  The query itself is
 * left as analyzed (reduce.c plans it whole).  Errors of constant folding
 * are the view's, as its expressions' are: called by the rounds only.
 */
void
dataflow_plan_expressions(ViewPlan *plan)
{
	List	   *targetlist = NIL;
	List	   *keys = NIL;
	ListCell   *lc;

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst_node(TargetEntry, lc));

		tle->expr = expression_planner(tle->expr);
		targetlist = lappend(targetlist, tle);
	}
	plan->targetlist = targetlist;
	if (plan->qual != NULL)
		plan->qual = (Node *) expression_planner((Expr *) plan->qual);
	foreach(lc, plan->group_keys)
		keys = lappend(keys, expression_planner(lfirst(lc)));
	plan->group_keys = keys;
}

/*
 * The plan's query written out with every name qualified that is not in
 * pg_catalog: it reads the same under any search_path (the runtime's, a
 * restored database's).
 */
char *
dataflow_plan_text(ViewPlan *plan)
{
	int			level = NewGUCNestLevel();
	char	   *text;

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	text = pg_get_querydef(plan->query, false);
	AtEOXact_GUC(true, level);
	return text;
}
