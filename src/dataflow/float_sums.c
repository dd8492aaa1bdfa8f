/*-------------------------------------------------------------------------
 *
 * float_sums.c
 *	  A maintained view's sums and averages of floats made independent of
 *	  the order of its rows.  PostgreSQL's sum(float8), sum(float4),
 *	  avg(float8) and avg(float4) add the rows in the order they come, so
 *	  their rounding (and whether an Infinity met a -Infinity first) would
 *	  depend on the order a round sees a group's rows in; a view computes
 *	  peek.exact_sum, exact_sum4 and exact_avg instead (sql/exact_sums.c:
 *	  the exact sum rounded once, the special values counted apart), of the
 *	  same result types.  The analyzed query's aggregates are swapped before
 *	  it is checked and written out, so the catalog keeps the query with
 *	  them, and planning it again swaps nothing.
 *
 *	  Must not change anything else in the query.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "dataflow/dataflow.h"

/* peek's aggregate of float8 named name */
static Oid
exact_aggregate(const char *name)
{
	Oid			argtype = FLOAT8OID;

	return LookupFuncName(list_make2(makeString("peek"), makeString((char *) name)),
						  1, &argtype, false);
}

/* Whether an aggregate is one of peek's exact float sums or averages. */
bool
dataflow_exact_float_aggregate(Oid aggfnoid)
{
	char	   *name = get_func_name(aggfnoid);

	return get_func_namespace(aggfnoid) == get_namespace_oid("peek", false) &&
		(strcmp(name, "exact_sum") == 0 || strcmp(name, "exact_sum4") == 0 ||
		 strcmp(name, "exact_avg") == 0);
}

static bool
swap_float_aggregates(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, swap_float_aggregates, context, 0);
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		const char *exact = NULL;

		switch (agg->aggfnoid)
		{
			case F_SUM_FLOAT8:
				exact = "exact_sum";
				break;
			case F_SUM_FLOAT4:
				exact = "exact_sum4";
				break;
			case F_AVG_FLOAT8:
			case F_AVG_FLOAT4:
				exact = "exact_avg";
				break;
			default:
				break;
		}
		if (exact != NULL)
		{
			TargetEntry *arg = linitial_node(TargetEntry, agg->args);

			/* a float4 is a float8 exactly */
			if (exprType((Node *) arg->expr) == FLOAT4OID)
				arg->expr = (Expr *) coerce_type(NULL, (Node *) arg->expr, FLOAT4OID,
												 FLOAT8OID, -1, COERCION_IMPLICIT,
												 COERCE_IMPLICIT_CAST, -1);
			agg->aggfnoid = exact_aggregate(exact);
			agg->aggargtypes = list_make1_oid(FLOAT8OID);
		}
	}
	return expression_tree_walker(node, swap_float_aggregates, context);
}

/* Swap, in place, the query's float sums and averages for the exact ones. */
void
dataflow_exact_float_sums(Query *query)
{
	(void) query_tree_walker(query, swap_float_aggregates, NULL, 0);
}
