/*-------------------------------------------------------------------------
 *
 * semijoins.c
 *	  EXISTS, NOT EXISTS and IN (SELECT ...) in a view's WHERE as semi-joins
 *	  and anti-joins of one more input, so that what plans and runs joins
 *	  (plan.c's keys, chain.c's stages, reduce.c's groups) keeps them too.
 *
 *	  dataflow_semijoins: each condition ANDed at the top of a flattened
 *	  query's WHERE that is EXISTS (subquery), NOT EXISTS (subquery) or
 *	  expr IN (SELECT ...) (= ANY) over a subquery of one input, not grouped
 *	  nor limited, becomes a JoinExpr of type JOIN_SEMI (JOIN_ANTI for NOT
 *	  EXISTS) between the query's FROM and that input, whose entry is
 *	  appended to the query's range table, its ON the subquery's WHERE (and
 *	  IN's equalities) with the subquery's references to the query moved to
 *	  its level, as PostgreSQL's planner pulls sublinks up.  Its inner input
 *	  is then keyed by its equalities with the outer inputs like a left
 *	  join's nullable input: a key's output depends only on the rows of that
 *	  key on both sides, whose query reduce.c runs again when a time touches
 *	  them (not linear: delta.c leaves them alone).  IN at the top of WHERE
 *	  drops a row whose test is false or NULL alike, as the semi-join does;
 *	  NOT IN does not (a NULL in the subquery's column makes it NULL for
 *	  every row) and is refused, as is any other subquery in an expression,
 *	  naming it (0A000).
 *
 *	  dataflow_semijoins_as_sublinks: PostgreSQL's planner takes no
 *	  semi-join in a parse tree, so the query a round or a hydration plans
 *	  (runs.c, hydrate.c: its inputs' entries already replaced by their
 *	  rows) has each one written back as EXISTS (or NOT EXISTS) over a copy
 *	  of its input's entry, in WHERE; the planner pulls it up again.
 *	  dataflow_semijoin_inner: whether an input is such an inner input, whose
 *	  rows runs.c passes once each, whatever their copies.
 *
 *	  The catalog keeps the query as written (plan.c), sublinks in place.
 *	  Must not read tables nor check expressions (plan.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"

#include "dataflow/dataflow.h"

/* What a sublink is called in errors. */
static const char *
sublink_noun(SubLink *sublink)
{
	switch (sublink->subLinkType)
	{
		case EXISTS_SUBLINK:
			return "EXISTS (SELECT ...)";
		case ANY_SUBLINK:
			return "IN (SELECT ...)";
		case ALL_SUBLINK:
			return "ALL (SELECT ...)";
		case EXPR_SUBLINK:
			return "scalar subqueries";
		case ARRAY_SUBLINK:
			return "ARRAY (SELECT ...)";
		case ROWCOMPARE_SUBLINK:
			return "row comparisons with subqueries";
		default:
			return "subqueries in expressions";
	}
}

/* The subquery of a sublink the views take, or refused naming what it has. */
static void
check_subquery(SubLink *sublink, Query *sub)
{
	const char *noun = sublink_noun(sublink);
	const struct
	{
		bool		has;
		const char *construct;
	}			refused[] = {
		{dataflow_subquery_not_plain(sub) != NULL, dataflow_subquery_not_plain(sub)},
		{sub->hasForUpdate || sub->rowMarks != NIL, "with FOR UPDATE or FOR SHARE"},
		{sub->cteList != NIL, "with WITH queries of their own"},
		{sub->hasSubLinks, "with subqueries in them"},
		{sub->jointree->fromlist == NIL, "without FROM"},
	};
	RangeTblEntry *rte;

	for (int i = 0; i < lengthof(refused); i++)
		if (refused[i].has)
			dataflow_refuse(psprintf("%s %s", noun, refused[i].construct));
	if (list_length(sub->jointree->fromlist) > 1 ||
		!IsA(linitial(sub->jointree->fromlist), RangeTblRef))
		dataflow_refuse(psprintf("%s reading more than one input (make the join a maintained view of its own and read it by name)",
								 noun));
	rte = rt_fetch(linitial_node(RangeTblRef, sub->jointree->fromlist)->rtindex, sub->rtable);
	if (rte->rtekind == RTE_SUBQUERY || rte->rtekind == RTE_CTE)
		dataflow_refuse(psprintf("%s reading a subquery or a WITH query (read an input: a table, a maintained view or a collection)",
								 noun));
	if (rte->lateral)
		dataflow_refuse(psprintf("%s with LATERAL", noun));
}

/* replace_params's context: IN's subquery's select list */
typedef struct SublinkColumns
{
	List	   *targetlist;
} SublinkColumns;

/* IN's test with the subquery's columns in place of its Params. */
static Node *
replace_params(Node *node, SublinkColumns *columns)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_SUBLINK)
	{
		int			column = ((Param *) node)->paramid;

		if (column < 1 || column > list_length(columns->targetlist))
			elog(ERROR, "IN (SELECT ...) tests column %d of its subquery", column);
		return copyObject((Node *) list_nth_node(TargetEntry, columns->targetlist,
												 column - 1)->expr);
	}
	return expression_tree_mutator(node, replace_params, columns);
}

/*
 * The sublink's subquery's input appended to the query's range table, and
 * *from made the semi-join (or anti-join) of *from and that input, ON the
 * subquery's WHERE (and IN's test) read at the query's level.
 */
static void
pull_up_sublink(Query *query, SubLink *sublink, JoinType jointype, Node **from)
{
	Query	   *sub = copyObject(castNode(Query, sublink->subselect));
	int			offset = list_length(query->rtable);
	JoinExpr   *join = makeNode(JoinExpr);
	RangeTblRef *ref;
	List	   *conditions = NIL;

	check_subquery(sublink, sub);
	OffsetVarNodes((Node *) sub, offset, 0);
	IncrementVarSublevelsUp((Node *) sub, -1, 1);
	ref = linitial_node(RangeTblRef, sub->jointree->fromlist);
	query->rtable = lappend(query->rtable, linitial(sub->rtable));
	if (sublink->subLinkType == ANY_SUBLINK)
	{
		SublinkColumns columns = {dataflow_plan_columns(sub->targetList)};

		conditions = make_ands_implicit((Expr *) replace_params(copyObject(sublink->testexpr),
																&columns));
	}
	conditions = list_concat(conditions, make_ands_implicit((Expr *) sub->jointree->quals));
	join->jointype = jointype;
	join->larg = *from;
	join->rarg = (Node *) ref;
	join->quals = conditions == NIL ? NULL : (Node *) make_ands_explicit(conditions);
	join->rtindex = 0;
	query->hasRowSecurity |= sub->hasRowSecurity;
	*from = (Node *) join;
}

/* The first sublink under a node, or NULL. */
static bool
find_sublink(Node *node, SubLink **found)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubLink))
	{
		*found = (SubLink *) node;
		return true;
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, find_sublink, found);
}

/*
 * The query (flattened: flatten.c) with its EXISTS, NOT EXISTS and IN
 * (SELECT ...) conditions ANDed at the top of WHERE made semi-joins and
 * anti-joins (a copy), any other subquery in an expression refused; the
 * query itself when it has none.
 */
Query *
dataflow_semijoins(Query *query)
{
	List	   *where = NIL;
	Node	   *from;
	SubLink    *other = NULL;
	ListCell   *lc;

	if (!query->hasSubLinks || query->setOperations != NULL ||
		query->jointree->fromlist == NIL)
		return query;
	query = copyObject(query);
	from = list_length(query->jointree->fromlist) == 1 ?
		linitial(query->jointree->fromlist) :
		(Node *) makeFromExpr(query->jointree->fromlist, NULL);
	foreach(lc, make_ands_implicit((Expr *) query->jointree->quals))
	{
		Node	   *condition = lfirst(lc);
		bool		not = false;
		SubLink    *sublink;

		if (is_notclause(condition))
		{
			condition = (Node *) get_notclausearg((Expr *) condition);
			not = true;
		}
		if (!IsA(condition, SubLink) ||
			(((SubLink *) condition)->subLinkType != EXISTS_SUBLINK &&
			 ((SubLink *) condition)->subLinkType != ANY_SUBLINK))
		{
			where = lappend(where, lfirst(lc));
			continue;
		}
		sublink = (SubLink *) condition;
		if (not && sublink->subLinkType == ANY_SUBLINK)
			dataflow_refuse("NOT IN (SELECT ...) (a NULL in the subquery's column makes it NULL, not true, for every row: write NOT EXISTS (SELECT ... WHERE column = expression))");
		pull_up_sublink(query, sublink, not ? JOIN_ANTI : JOIN_SEMI, &from);
	}
	query->jointree->fromlist = list_make1(from);
	query->jointree->quals = where == NIL ? NULL : (Node *) make_ands_explicit(where);
	if (find_sublink((Node *) list_make3(query->targetList, query->jointree,
										 query->havingQual), &other))
		dataflow_refuse(other->subLinkType == EXISTS_SUBLINK || other->subLinkType == ANY_SUBLINK ?
						psprintf("%s other than as a condition ANDed at the top of WHERE (in the select list, ON, HAVING, or under OR, CASE or a function)",
								 sublink_noun(other)) :
						sublink_noun(other));
	query->hasSubLinks = false;
	return query;
}

/* as_exists's mutator: the semi-join's input's Vars, one level up, at level 0 */
static Node *
inner_vars_down(Node *node, int *rtindex)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == *rtindex &&
		((Var *) node)->varlevelsup == 1)
	{
		Var		   *var = copyObject((Var *) node);

		var->varno = 1;
		var->varnosyn = 1;
		var->varlevelsup = 0;
		return (Node *) var;
	}
	return expression_tree_mutator(node, inner_vars_down, rtindex);
}

/* A semi-join (or anti-join) of the query as EXISTS (or NOT EXISTS). */
static Node *
as_exists(Query *query, JoinExpr *join)
{
	int			rtindex = castNode(RangeTblRef, join->rarg)->rtindex;
	Query	   *sub = makeNode(Query);
	SubLink    *sublink = makeNode(SubLink);
	Node	   *quals = copyObject(join->quals);

	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->rtable = list_make1(copyObject(rt_fetch(rtindex, query->rtable)));
	IncrementVarSublevelsUp(quals, 1, 0);
	sub->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
								 inner_vars_down(quals, &rtindex));
	linitial_node(RangeTblRef, sub->jointree->fromlist)->rtindex = 1;
	sublink->subLinkType = EXISTS_SUBLINK;
	sublink->subLinkId = 0;
	sublink->subselect = (Node *) sub;
	sublink->location = -1;
	query->hasSubLinks = true;
	return join->jointype == JOIN_ANTI ?
		(Node *) makeBoolExpr(NOT_EXPR, list_make1(sublink), -1) : (Node *) sublink;
}

/*
 * The query (the caller's copy, changed) with each semi-join and anti-join
 * at the top of its FROM (dataflow_semijoins, chain.c's stages) written
 * back as EXISTS or NOT EXISTS in its WHERE, for PostgreSQL's planner.
 */
Query *
dataflow_semijoins_as_sublinks(Query *query)
{
	List	   *fromlist = NIL;
	List	   *where = make_ands_implicit((Expr *) query->jointree->quals);
	bool		any = false;
	ListCell   *lc;

	foreach(lc, query->jointree->fromlist)
	{
		Node	   *node = lfirst(lc);
		List	   *exists = NIL;

		while (IsA(node, JoinExpr) &&
			   (((JoinExpr *) node)->jointype == JOIN_SEMI ||
				((JoinExpr *) node)->jointype == JOIN_ANTI))
		{
			exists = lcons(as_exists(query, (JoinExpr *) node), exists);
			node = ((JoinExpr *) node)->larg;
			any = true;
		}
		if (IsA(node, FromExpr) && ((FromExpr *) node)->quals == NULL)
			fromlist = list_concat(fromlist, ((FromExpr *) node)->fromlist);
		else
			fromlist = lappend(fromlist, node);
		where = list_concat(where, exists);
	}
	if (!any)
		return query;
	query->jointree->fromlist = fromlist;
	query->jointree->quals = where == NIL ? NULL : (Node *) make_ands_explicit(where);
	return query;
}

/*
 * Whether the input at rtindex is the inner input of a semi-join or
 * anti-join under a query's FROM (dataflow_semijoins, chain.c's stages):
 * only EXISTS reads its rows, which holds whatever their copies.
 */
bool
dataflow_semijoin_inner(Node *jointree, Index rtindex)
{
	ListCell   *lc;

	if (IsA(jointree, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) jointree;

		if ((join->jointype == JOIN_SEMI || join->jointype == JOIN_ANTI) &&
			IsA(join->rarg, RangeTblRef) &&
			((RangeTblRef *) join->rarg)->rtindex == rtindex)
			return true;
		return dataflow_semijoin_inner(join->larg, rtindex) ||
			dataflow_semijoin_inner(join->rarg, rtindex);
	}
	if (IsA(jointree, FromExpr))
		foreach(lc, ((FromExpr *) jointree)->fromlist)
			if (dataflow_semijoin_inner(lfirst(lc), rtindex))
				return true;
	return false;
}
