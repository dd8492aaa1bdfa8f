/*-------------------------------------------------------------------------
 *
 * expressions.c
 *	  The expressions of a view's query as the operators take them: every
 *	  function immutable (PostgreSQL's expression executor evaluates them
 *	  at the inputs' times, in any round), the aggregates reduce.c keeps
 *	  exact under deletions (count, sum, avg, min, max, bool_and, bool_or,
 *	  every, peek's exact float sums), over the input's columns (no
 *	  whole-row reference), and no function, operator, collation or type
 *	  of a temporary schema; anything else refused (0A000) naming it.
 *	  plan.c checks the query's, flatten.c a subquery's select list before
 *	  pulling it up (its columns the query does not read too).
 *
 *	  Must not change the expressions nor read tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "dataflow/dataflow.h"

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
		if (dataflow_exact_float_aggregate(agg->aggfnoid))
			known = agg->aggkind == AGGKIND_NORMAL;
		else if (!known || agg->aggkind != AGGKIND_NORMAL ||
				 get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE)
			known = false;
		if (!known)
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

/* Is the object (a type, an operator, a collation) of a temporary schema? */
static bool
temporary_object(Oid classid, Oid objid)
{
	ObjectAddress object;

	ObjectAddressSet(object, classid, objid);
	return isAnyTempNamespace(get_object_namespace(&object));
}

/*
 * Refuse a function, operator, collation or type of a temporary schema
 * anywhere in an expression: the view outlasts the session that made it
 * (whose end drops the view's PostgreSQL view with such an object), and
 * its text names such an object as pg_temp, which the runtime would read
 * as its own temporary schema.
 */
static bool
refuse_temporary_objects(Node *node, void *context)
{
	Oid			func = InvalidOid;
	Oid			op = InvalidOid;

	if (node == NULL)
		return false;
	if (check_functions_in_node(node, temporary_function, &func))
		dataflow_refuse(psprintf("function %s: it is temporary", get_func_name(func)));
	/* (DistinctExpr and NullIfExpr are OpExprs) */
	if (IsA(node, OpExpr) || IsA(node, DistinctExpr) || IsA(node, NullIfExpr))
		op = ((OpExpr *) node)->opno;
	else if (IsA(node, ScalarArrayOpExpr))
		op = ((ScalarArrayOpExpr *) node)->opno;
	if (OidIsValid(op) && temporary_object(OperatorRelationId, op))
		dataflow_refuse(psprintf("operator %s: it is temporary", get_opname(op)));
	if (IsA(node, CollateExpr) &&
		temporary_object(CollationRelationId, ((CollateExpr *) node)->collOid))
		dataflow_refuse(psprintf("collation %s: it is temporary",
								 get_collation_name(((CollateExpr *) node)->collOid)));
	/* (the nodes in an expression that have no type of their own) */
	if (IsA(node, SortGroupClause))
		return false;			/* an aggregate's DISTINCT or ORDER BY */
	if (IsA(node, List) || IsA(node, TargetEntry) || IsA(node, CaseWhen))
		return expression_tree_walker(node, refuse_temporary_objects, context);
	if (temporary_object(TypeRelationId, exprType(node)))
		dataflow_refuse(psprintf("type %s: it is temporary", format_type_be(exprType(node))));
	return expression_tree_walker(node, refuse_temporary_objects, context);
}

/*
 * The expressions of a view (or of a subquery flatten.c pulls up):
 * immutable, over the input's columns only.
 */
void
dataflow_check_expressions(Node *exprs)
{
	Oid			func = InvalidOid;
	ListCell   *lc;

	if (find_mutable_function(exprs, &func))
		dataflow_refuse(psprintf("function %s: it is not immutable",
						format_procedure(func)));
	if (contain_mutable_functions(exprs))
		dataflow_refuse("expressions that are not immutable");
	if (unsupported_aggregate(exprs, &func))
		dataflow_refuse(OidIsValid(func) ?
			   psprintf("aggregate function %s", format_procedure(func)) :
			   "GROUPING");
	(void) refuse_temporary_objects(exprs, NULL);
	foreach(lc, pull_var_clause(exprs, PVC_RECURSE_AGGREGATES))
	{
		Var		   *var = lfirst_node(Var, lc);

		if (var->varattno <= 0)
			dataflow_refuse("whole-row references to the input");
	}
}
