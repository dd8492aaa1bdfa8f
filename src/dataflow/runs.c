/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  The query of a grouped or joined view's stage run by PostgreSQL's
 *	  executor over rows its groups hold: planned once a round with each
 *	  input replaced by unnest of an array parameter of its row type, and
 *	  run over the rows of given groups, each copy of a row once (a
 *	  semi-join's or anti-join's inner row once whatever its copies), its output
 *	  rows attributed to their groups (outputs.c).  reduce.c runs it over
 *	  the groups' rows (hydration, a rebuild's next stage, a wave of the
 *	  queries that are not linear), and over a join's differences with
 *	  delta.c's rows in place of an input's.
 *
 *	  Must not change the groups nor emit (reduce.c does), nor touch the
 *	  catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "dataflow/reduce_internal.h"

/*
 * The view's query planned over the rows of parameters, one an array of
 * each input's type, instead of its inputs: FROM unnest($1) (, unnest($2)
 * ...), without WHERE over one input (the groups hold only the rows that
 * pass it); a semi-join's input, unnest($n) too, read by EXISTS
 * (semijoins.c).
 */
static PlannedStmt *
plan_over_params(ViewPlan *plan, const char *text, ParamListInfo params)
{
	Query	   *query = copyObject(plan->query);
	PlannedStmt *stmt;
	int			level;
	ListCell   *lc;

	foreach(lc, plan->inputs)
	{
		ViewPlanInput *input = lfirst(lc);
		RangeTblEntry *rte = rt_fetch(input->rtindex, query->rtable);
		RangeTblFunction *rtfunc = linitial_node(RangeTblFunction, rte->functions);
		Param	   *rows = makeNode(Param);
		FuncExpr   *unnest;

		rows->paramkind = PARAM_EXTERN;
		rows->paramid = foreach_current_index(lc) + 1;
		rows->paramtype = params->params[foreach_current_index(lc)].ptype;
		rows->paramtypmod = -1;
		rows->paramcollid = InvalidOid;
		rows->location = -1;
		unnest = makeFuncExpr(F_UNNEST_ANYARRAY, input->row_type, list_make1(rows),
							  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		unnest->funcretset = true;
		rtfunc->funcexpr = (Node *) unnest;
	}
	if (plan->qual != NULL)
		query->jointree->quals = NULL;
	outputs_key_columns(query, plan);
	query = dataflow_semijoins_as_sublinks(query);

	/*
	 * Hashed, not sorted, grouping and DISTINCT where the planner can: a
	 * hash table's group takes its key from the first of its rows, which
	 * the groups hold in the order of their images, whatever other groups
	 * the run reads; a sort of keys equal but not binary-equal (numeric
	 * 2.5 and 2.50) may put either first depending on the rows around
	 * them, so that what a view held and what it retracts could differ.
	 */
	level = NewGUCNestLevel();
	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	stmt = pg_plan_query(query, text, 0, NULL);
	AtEOXact_GUC(true, level);
	return stmt;
}

/*
 * The round's parameters, and its statement: planned once for the plan
 * and kept with it (views.c keeps a view's plan until an invalidation):
 * planning at every round took 2% of the maintenance runtime under
 * steady writes to a joined input.
 */
void
runs_plan(ReduceRound *r, ViewPlan *plan)
{
	int			ninputs = list_length(plan->inputs);
	ListCell   *lc;

	r->params = makeParamList(ninputs);
	r->params->numParams = ninputs;
	foreach(lc, plan->inputs)
	{
		ViewPlanInput *input = lfirst(lc);
		ParamExternData *param = &r->params->params[foreach_current_index(lc)];

		r->inputs[foreach_current_index(lc)].exists_only =
			dataflow_semijoin_inner((Node *) plan->query->jointree, input->rtindex);
		param->ptype = get_array_type(input->row_type);
		param->pflags = PARAM_FLAG_CONST;
		if (!OidIsValid(param->ptype))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("type %s has no array type", format_type_be(input->row_type))));
	}
	if (plan->runs_stmt == NULL)
	{
		PlannedStmt *stmt = plan_over_params(plan, r->text, r->params);
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(plan));

		plan->runs_stmt = copyObject(stmt);
		MemoryContextSwitchTo(old);
	}
	r->stmt = plan->runs_stmt;
}

/*
 * How many copies of a row of count copies the query reads: one of a
 * semi-join's or anti-join's inner input's rows, whose copies EXISTS does
 * not count (a row of more copies than a run takes, too).
 */
static inline int64
row_copies(ReduceRound *r, int in, int64 copies)
{
	return r->inputs[in].exists_only ? (copies > 0 ? 1 : 0) : copies;
}

/*
 * The query's rows over the groups' rows, in the step's memory; each
 * group's also in its fresh list (outputs.c).
 */
List *
runs_over(ReduceRound *r, ViewGroup **groups, int ngroups)
{
	QueryDesc  *qd;

	for (int in = 0; in < r->ninputs; in++)
	{
		int64		nrows = 0;
		int			n = 0;
		Datum	   *elems;

		for (int g = 0; g < ngroups; g++)
			for (int i = 0; i < groups[g]->inputs[in].nrows; i++)
			{
				int64		copies = row_copies(r, in, groups[g]->inputs[in].rows[i].count);

				if (copies > DATAFLOW_MAX_ROW_COPIES)
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("a row has " INT64_FORMAT " copies in a group, more than the %d that the query over a group's rows takes",
									copies, DATAFLOW_MAX_ROW_COPIES)));
				nrows += Max(copies, 0);
			}
		if (nrows > MaxArraySize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the groups to aggregate hold more than %d rows",
							(int) MaxArraySize)));
		elems = palloc(sizeof(Datum) * Max(nrows, 1));
		for (int g = 0; g < ngroups; g++)
			for (int i = 0; i < groups[g]->inputs[in].nrows; i++)
				for (int64 c = 0; c < row_copies(r, in, groups[g]->inputs[in].rows[i].count); c++)
					elems[n++] = groups[g]->inputs[in].rows[i].row;
		r->params->params[in].value =
			PointerGetDatum(construct_array(elems, n, r->inputs[in].row_type, -1, false,
											TYPALIGN_DOUBLE));
		r->params->params[in].isnull = false;
	}

	for (int g = 0; g < ngroups; g++)
	{
		groups[g]->fresh = NIL;
		groups[g]->running = true;
	}
	r->output.rows = NIL;
	r->output.cxt = CurrentMemoryContext;
	qd = CreateQueryDesc(r->stmt, r->text, GetActiveSnapshot(), InvalidSnapshot,
						 &r->output.pub, r->params, NULL, 0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, 0, true);
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	for (int g = 0; g < ngroups; g++)
		groups[g]->running = false;
	return r->output.rows;
}
