/*-------------------------------------------------------------------------
 *
 * stages.c
 *	  The stages of a join that is grouped (GROUP BY, aggregates, HAVING,
 *	  DISTINCT) by other keys than its join key, or by none, planned from
 *	  its analyzed query once plan.c has checked it: the join's stage
 *	  (keeping its inputs' rows by the join key; or chain.c's stages, of
 *	  inputs joined on different keys) projecting the inputs' columns the
 *	  rest of the query reads, and the grouping's stage over the join's
 *	  rows, kept by the query's keys.  reduce.c runs them in turn, a
 *	  stage's differences at a time the next's updates at that time.  Also
 *	  how a later stage reads the rows of the stage before, the keys any
 *	  grouping's stage keeps its one input's rows by (a view of one input
 *	  is one such stage), a query's selected columns, and the 0A000 error
 *	  that plan.c and chain.c raise for what views do not support.
 *
 *	  Must not read or write tables, nor check the query (plan.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"

#include "dataflow/dataflow.h"

/* What a view's query has that maintained views do not support: 0A000. */
void
dataflow_refuse(const char *construct)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("maintained views do not support %s", construct),
			 errdetail("A maintained view reads inputs in FROM (tables that sources capture, maintained views, "
					   "collections as peek.persist_peek(NULL::t, 'name')), "
					   "joined by inner joins and left joins of one input on equalities (each input to the inputs before it in FROM), "
					   "filters (WHERE, with EXISTS, NOT EXISTS and IN (SELECT ...) over one input ANDed in it), "
					   "maps and projects its rows with immutable expressions, "
					   "and may group them (GROUP BY, count, sum, avg, min, max, bool_and, bool_or, every, HAVING) "
					   "or make them DISTINCT; or is a UNION ALL of such queries; "
					   "WITH queries and subqueries in FROM are read as part of the query when they are plain SELECTs.")));
}

/*
 * The keys a query over one input keeps that input's rows by: its GROUP
 * BY's or DISTINCT's, with the operators that tell them apart.  Returns
 * the type of the first that no hash operator class compares (plan.c
 * refuses it), or InvalidOid.
 */
Oid
dataflow_plan_group_keys(Query *query, ViewPlan *plan)
{
	ViewPlanInput *input = linitial(plan->inputs);
	ListCell   *lc;

	foreach(lc, query->groupClause != NIL ? query->groupClause : query->distinctClause)
	{
		SortGroupClause *key = lfirst_node(SortGroupClause, lc);
		Node	   *expr = (Node *) get_sortgroupclause_expr(key, query->targetList);

		if (!key->hashable)
			return exprType(expr);
		input->keys = lappend(input->keys, expr);
		plan->key_eqops = lappend_oid(plan->key_eqops, key->eqop);
		plan->key_collations = lappend_oid(plan->key_collations, exprCollation(expr));
	}
	return InvalidOid;
}

/* A query's non-junk columns. */
List *
dataflow_plan_columns(List *targetlist)
{
	List	   *columns = NIL;
	ListCell   *lc;

	foreach(lc, targetlist)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			columns = lappend(columns, lfirst(lc));
	return columns;
}

/* dataflow_plan_grouping's mutator: a column of the join's rows for each Var it projects */
static Node *
join_column(Node *node, List *projected)
{
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		foreach(lc, projected)
			if (equal(node, lfirst(lc)))
				return (Node *) makeVar(1, foreach_current_index(lc) + 1, exprType(node),
										exprTypmod(node), exprCollation(node), 0);
		elog(ERROR, "a column of a view's join is not projected");
	}
	return expression_tree_mutator(node, join_column, projected);
}

/*
 * The range table entry a later stage reads the stage before's rows as:
 * unnest of an array of an anonymous record of the projected expressions
 * (reduce.c puts in the array; the round blesses the record: nothing of it
 * outlives the round), its columns c1, c2...  *columns: the stage
 * before's select list projecting them.  Nothing projected (count(*) reads
 * no column): the rows are then one constant's.
 */
RangeTblEntry *
dataflow_stage_rows(List *projected, List **columns)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	RangeTblFunction *rtfunc = makeNode(RangeTblFunction);
	List	   *names = NIL;
	ListCell   *lc;

	if (projected == NIL)
		projected = list_make1(makeBoolConst(true, false));
	*columns = NIL;
	foreach(lc, projected)
	{
		Node	   *expr = lfirst(lc);
		char	   *name = psprintf("c%d", foreach_current_index(lc) + 1);

		*columns = lappend(*columns, makeTargetEntry((Expr *) expr,
													 foreach_current_index(lc) + 1, name, false));
		names = lappend(names, makeString(name));
		rtfunc->funccoltypes = lappend_oid(rtfunc->funccoltypes, exprType(expr));
		rtfunc->funccoltypmods = lappend_int(rtfunc->funccoltypmods, exprTypmod(expr));
		rtfunc->funccolcollations = lappend_oid(rtfunc->funccolcollations,
												exprCollation(expr));
	}
	rtfunc->funccolcount = list_length(projected);
	rtfunc->funccolnames = names;
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtfunc);
	rte->eref = makeAlias("join", names);
	rte->inFromCl = true;
	return rte;
}

/* The stage before's rows as a later stage's input (its first: rtindex 1). */
ViewPlanInput *
dataflow_stage_rows_input(void)
{
	ViewPlanInput *rows = palloc0(sizeof(ViewPlanInput));

	rows->row_type = RECORDOID;
	rows->rtindex = 1;
	rows->object = -1;
	return rows;
}

/*
 * A grouped or DISTINCT join that its join's stage cannot group runs as
 * its join (one stage by the join key, WHERE applied: dataflow_plan_join;
 * or, of inputs on different keys, a chain of them: chain.c) projecting
 * the inputs' columns the rest of the query reads, then a stage reading
 * its rows (dataflow_stage_rows) that groups them by the query's keys
 * (none: one group), computing the query's select list and HAVING over
 * them (dataflow_plan_grouping).  The join's select list: those columns.
 */
List *
dataflow_plan_join_columns(Query *query)
{
	List	   *projected = NIL;
	List	   *columns;
	ListCell   *lc;

	foreach(lc, pull_var_clause(flatten_join_alias_vars(query,
														(Node *) list_make2(query->targetList,
																			query->havingQual)),
								PVC_RECURSE_AGGREGATES))
		projected = list_append_unique(projected, lfirst(lc));
	(void) dataflow_stage_rows(projected, &columns);
	return columns;
}

/* A join's stage by its one key (plan.c found it), selecting columns. */
ViewPlan *
dataflow_plan_join(Query *query, ViewPlan *plan, List *columns)
{
	ViewPlan   *join = palloc0(sizeof(ViewPlan));
	Query	   *jq = copyObject(query);

	jq->targetList = columns;
	jq->groupClause = NIL;
	jq->groupDistinct = false;
	jq->distinctClause = NIL;
	jq->havingQual = NULL;
	jq->hasAggs = false;
	join->inputs = plan->inputs;
	join->targetlist = columns;
	join->reduces = true;
	join->kind = "join";
	join->key_eqops = plan->key_eqops;
	join->key_collations = plan->key_collations;
	join->query = jq;
	return join;
}

/*
 * The grouping's stage after the join's (columns: their select list),
 * added to plan->stages.  Returns what dataflow_plan_group_keys does.
 */
Oid
dataflow_plan_grouping(Query *query, ViewPlan *plan, List *columns)
{
	List	   *exprs = (List *) flatten_join_alias_vars(query,
														 (Node *) list_make2(query->targetList,
																			 query->havingQual));
	List	   *projected = NIL;
	ViewPlan   *group = palloc0(sizeof(ViewPlan));
	Query	   *gq = copyObject(query);
	RangeTblRef *ref = makeNode(RangeTblRef);
	ListCell   *lc;

	foreach(lc, columns)
		projected = lappend(projected, lfirst_node(TargetEntry, lc)->expr);
	gq->rtable = list_make1(dataflow_stage_rows(projected, &columns));
	ref->rtindex = 1;
	gq->jointree = makeFromExpr(list_make1(ref), NULL);
	gq->targetList = (List *) join_column(linitial(exprs), projected);
	gq->havingQual = join_column(lsecond(exprs), projected);
	group->inputs = list_make1(dataflow_stage_rows_input());
	group->targetlist = dataflow_plan_columns(gq->targetList);
	group->reduces = true;
	group->kind = gq->groupClause != NIL || gq->hasAggs || gq->havingQual != NULL ?
		"reduce" : "distinct";
	group->query = gq;
	plan->stages = lappend(plan->stages, group);
	return dataflow_plan_group_keys(gq, group);
}
