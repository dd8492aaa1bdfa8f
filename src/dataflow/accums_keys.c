/*-------------------------------------------------------------------------
 *
 * accums_keys.c
 *	  Whether a grouping of linear aggregates (accums.c) forms a group's
 *	  output row alike from any of the group's rows: its select list and
 *	  HAVING read, besides the aggregates, only grouping keys whose equal
 *	  values are the same bytes (columns, or expressions: GROUP BY
 *	  date_trunc('day', ts)).  Then a round loads only the rows it updates
 *	  of a group that knows its states (arranged.c), and reads the keys
 *	  from any of them; a rowless stage keeps one (rowless.c).  Decided once per round's plan.  And which
 *	  types' equal values are the same bytes (hydrate.c asks too).
 *
 *	  Must not read rows or groups (accums.c, arranged.c do).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "dataflow/reduce_internal.h"

/* Whether values of the type that are equal are the same bytes (hydrate.c too). */
bool
dataflow_equal_is_same(Oid type, Oid collation)
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

/* What reads_other_columns looks for. */
typedef struct KeyReads
{
	ViewPlan   *plan;
	List	   *key_exprs;		/* GROUP BY expressions other than columns,
								 * of the type's default equality, under
								 * which equal values are the same bytes */
} KeyReads;

/*
 * Does the expression read a column (of the input's rows) that is not a
 * grouping key compared by its type's default equality, under which equal
 * values are the same bytes (dataflow_equal_is_same), nor within such a
 * grouping expression (GROUP BY lower(v): every row of a group gives the
 * same lower(v))?  The aggregates are parameters by now.
 */
static bool
reads_other_columns(Node *node, KeyReads *kr)
{
	List	   *keys = linitial_node(ViewPlanInput, kr->plan->inputs)->keys;
	ListCell   *lc;

	if (node == NULL)
		return false;
	if (IsA(node, Query) || IsA(node, SubLink) || IsA(node, SubPlan))
		return true;
	foreach(lc, kr->key_exprs)
		if (equal(node, lfirst(lc)))
			return false;
	if (!IsA(node, Var))
		return expression_tree_walker(node, reads_other_columns, kr);
	foreach(lc, keys)
	{
		Var		   *key = lfirst(lc);
		Var		   *var = (Var *) node;
		int			k = foreach_current_index(lc);

		if (IsA(key, Var) && var->varlevelsup == 0 && key->varno == var->varno &&
			key->varattno == var->varattno && key->vartype == var->vartype &&
			dataflow_equal_is_same(key->vartype, list_nth_oid(kr->plan->key_collations, k)) &&
			list_nth_oid(kr->plan->key_eqops, k) ==
			lookup_type_cache(key->vartype, TYPECACHE_EQ_OPR)->eq_opr)
			return false;
	}
	return true;
}

/*
 * Is a group's output row the same whichever of its rows the select list
 * and HAVING read their columns from?  When they read, besides the
 * aggregates, only grouping keys whose equal values are the same bytes.
 * Then a round needs only the rows it updates of a group that knows its
 * states (accums_partial), and a rowless stage keeps none (rowless.c);
 * else (2.5 and 2.50 are equal numerics) a group's first row, as a hash
 * aggregation reads it, needs all of them.
 */
bool
accums_keys_in_any_row(ViewPlan *plan, List *columns, Node *having)
{
	KeyReads	kr = {plan, NIL};
	Query	   *query = plan->query;
	ListCell   *lc;

	foreach(lc, query->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *expr = get_sortgroupclause_expr(sgc, query->targetList);

		if (!IsA(expr, Var) &&
			sgc->eqop == lookup_type_cache(exprType(expr), TYPECACHE_EQ_OPR)->eq_opr &&
			dataflow_equal_is_same(exprType(expr), exprCollation(expr)))
			kr.key_exprs = lappend(kr.key_exprs, expr);
	}
	if (reads_other_columns(having, &kr))
		return false;
	foreach(lc, columns)
		if (reads_other_columns(lfirst(lc), &kr))
			return false;
	return true;
}
