/*-------------------------------------------------------------------------
 *
 * stages.c
 *	  The stages of a join that is grouped (GROUP BY, aggregates, HAVING,
 *	  DISTINCT) by other keys than its join key, or by none, planned from
 *	  its analyzed query once plan.c has checked it and found the join's
 *	  key: the join's stage, keeping its inputs' rows by the join key and
 *	  projecting the inputs' columns the rest of the query reads, and the
 *	  grouping's stage over the join's rows, kept by the query's keys.
 *	  reduce.c runs them in turn, the first's differences at a time the
 *	  second's updates at that time.  Also the keys any grouping's stage
 *	  keeps its one input's rows by (a view of one input is one such
 *	  stage), and a query's selected columns.
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

/* dataflow_plan_stages's mutator: a column of the join's rows for each Var it projects */
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
 * A grouped or DISTINCT join that its join's stage cannot group: two
 * stages.  The first joins (by the join key, WHERE applied) and projects
 * the inputs' columns the rest of the query reads; the second reads the
 * first's rows (as unnest of an array of an anonymous record of those
 * columns, blessed by the round: nothing of it outlives the round) and
 * groups them by the query's keys (none: one group), computing the
 * query's select list and HAVING over them.  Returns what
 * dataflow_plan_group_keys does.
 */
Oid
dataflow_plan_stages(Query *query, ViewPlan *plan)
{
	List	   *exprs = (List *) flatten_join_alias_vars(query,
														 (Node *) list_make2(query->targetList,
																			 query->havingQual));
	List	   *projected = NIL;
	List	   *columns = NIL;
	List	   *names = NIL;
	ViewPlan   *join = palloc0(sizeof(ViewPlan));
	ViewPlan   *group = palloc0(sizeof(ViewPlan));
	ViewPlanInput *rows = palloc0(sizeof(ViewPlanInput));
	Query	   *jq = copyObject(query);
	Query	   *gq = copyObject(query);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	RangeTblFunction *rtfunc = makeNode(RangeTblFunction);
	RangeTblRef *ref = makeNode(RangeTblRef);
	ListCell   *lc;

	foreach(lc, pull_var_clause((Node *) exprs, PVC_RECURSE_AGGREGATES))
		projected = list_append_unique(projected, lfirst(lc));
	/* (count(*) reads no column: the join's rows are then one constant's) */
	if (projected == NIL)
		projected = list_make1(makeBoolConst(true, false));
	foreach(lc, projected)
	{
		Node	   *expr = lfirst(lc);
		char	   *name = psprintf("c%d", foreach_current_index(lc) + 1);

		columns = lappend(columns, makeTargetEntry((Expr *) expr,
												   foreach_current_index(lc) + 1, name, false));
		names = lappend(names, makeString(name));
		rtfunc->funccoltypes = lappend_oid(rtfunc->funccoltypes, exprType(expr));
		rtfunc->funccoltypmods = lappend_int(rtfunc->funccoltypmods, exprTypmod(expr));
		rtfunc->funccolcollations = lappend_oid(rtfunc->funccolcollations,
												exprCollation(expr));
	}

	/* the join, by its key */
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

	/* the grouping, over the join's rows */
	rtfunc->funccolcount = list_length(projected);
	rtfunc->funccolnames = names;
	rte->rtekind = RTE_FUNCTION;
	rte->functions = list_make1(rtfunc);
	rte->eref = makeAlias("join", names);
	rte->inFromCl = true;
	gq->rtable = list_make1(rte);
	ref->rtindex = 1;
	gq->jointree = makeFromExpr(list_make1(ref), NULL);
	gq->targetList = (List *) join_column(linitial(exprs), projected);
	gq->havingQual = join_column(lsecond(exprs), projected);
	rows->row_type = RECORDOID;
	rows->rtindex = 1;
	group->inputs = list_make1(rows);
	group->targetlist = dataflow_plan_columns(gq->targetList);
	group->reduces = true;
	group->kind = gq->groupClause != NIL || gq->hasAggs || gq->havingQual != NULL ?
		"reduce" : "distinct";
	group->query = gq;
	plan->stages = list_make2(join, group);
	return dataflow_plan_group_keys(gq, group);
}
