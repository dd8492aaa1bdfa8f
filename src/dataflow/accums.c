/*-------------------------------------------------------------------------
 *
 * accums.c
 *	  Linear aggregates kept per group, for a grouped view's stage of one
 *	  input (reduce.c): when every aggregate of its query has PostgreSQL's
 *	  moving-aggregate support (a forward and an inverse transition:
 *	  count(*), count(x), sum and avg of integers, numeric, money and
 *	  interval, bool_and, bool_or and every, which count their trues) or
 *	  keeps the first of its values in an order (min and max of types
 *	  whose equal values are the same bytes), and no DISTINCT or ORDER BY
 *	  (accums_functions.c), each group keeps each aggregate's transition
 *	  state, as a window's moving frame does.  A time's updates of a group
 *	  go through the inverse transition (retractions first; a min's or
 *	  max's keeps its value's copies, and a retraction changes nothing but
 *	  of the last of them) and the forward one, each as many times as its
 *	  diff says, or, for more than a few copies, at once: added through
 *	  the combine function of the aggregate's states by doubling (log2 of
 *	  the copies combines), taken out by computing the states again from
 *	  the rows; an aggregate with no combine function takes at most
 *	  DATAFLOW_MAX_ROW_COPIES copies of a row, more fail the view (55000).
 *	  The group's output row is formed from the states by the aggregates'
 *	  final functions, the select list and HAVING (the aggregates as
 *	  parameters, a grouping key read from the group's first row, as a
 *	  hash aggregation reads it, or from any of its rows where that is the
 *	  same, accums_keys.c), and the difference against the group's kept
 *	  output emitted at that time.  So a time costs its updates, not the
 *	  groups' rows.  A group with no rows gives nothing (without GROUP BY,
 *	  its one row over no input).  A group counts its rows (their positive
 *	  counts) with its states: a round then reads of a group kept in a
 *	  shared arrangement only the rows it updates (a partial group,
 *	  arranged.c), and one that does not know its states learns them from
 *	  the arrangement's rows as they are walked (accums_start,
 *	  accums_add_row), none of them kept; a rowless stage's groups keep
 *	  none at all (rowless.c).
 *
 *	  An inverse transition that cannot (PostgreSQL's NULL result, a min's
 *	  or max's value retracted), and a group built again (a restart, a
 *	  failed round), compute the states forward from the group's rows,
 *	  which reduce.c keeps as for any grouping, or, in a rowless stage
 *	  (rowless.c: over a source, its groups partial for good, keeping no
 *	  rows), from the input's contents at the time.  Internal states (of
 *	  bigint and numeric sums, booleans) live in one context of the
 *	  stage's, which is reset, every group's states to be computed again
 *	  from its rows when next touched (a rowless stage's groups are built
 *	  again), once the states let go in it (dropped groups, states started
 *	  again) outnumber the groups.  Anything else (min and max of other
 *	  types, float sums, DISTINCT) runs the query over the groups
 *	  (reduce.c, waves.c).
 *
 *	  Must not change the groups' rows (reduce.c merges them) nor touch the
 *	  catalog's tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "dataflow/reduce_internal.h"

/* The internal states let go that a reset of their memory waits for at least. */
#define STATES_GARBAGE_MIN	4096

/* The copies of a row that go through the transitions one by one. */
#define COPIES_STEPPED		8

/* One aggregate of the query, by its moving-aggregate functions. */
typedef struct LinearAgg
{
	ExprState **args;			/* its arguments over an input row */
	int			nargs;
	Oid			aggfnoid;
	ExprState  *filter;			/* FILTER (WHERE ...), or NULL */
	FmgrInfo	transfn;
	FmgrInfo	invfn;			/* fn_oid InvalidOid: min or max, by sortfn */
	FmgrInfo	sortfn;			/* min's <, max's >: the value kept comes first */
	Oid			collation;		/* the aggregate's input collation */
	FmgrInfo	finalfn;		/* fn_oid InvalidOid: the state is the value */
	FmgrInfo	combinefn;		/* fn_oid InvalidOid: copies go one by one */
	FunctionCallInfo trans_call;
	FunctionCallInfo inv_call;
	FunctionCallInfo final_call;
	FunctionCallInfo combine_call;
	Datum		initval;		/* in the round's memory */
	bool		initnull;
	int16		statelen;
	bool		statebyval;
	bool		internal;		/* its state is internal, in the stage's states */
} LinearAgg;

struct LinearAggs
{
	int			naggs;
	LinearAgg  *aggs;
	List	   *columns;		/* ExprState: the select list's columns */
	ExprState  *having;			/* or NULL */
	bool		keys_in_any_row;	/* a group's output is the same from any
									 * of its rows (accums_keys.c) */
	ParamExecData *params;		/* the aggregates' values, by their number */
	WindowAggState *context;	/* what AggCheckCallContext finds: the groups' memory */
	Datum	   *values;
	bool	   *nulls;
};

typedef struct AggParams
{
	List	   *aggrefs;		/* each distinct Aggref once */
} AggParams;

static MemoryContext states_memory(ReduceState *state);

/* Each Aggref replaced by a parameter numbered by its place in the list. */
static Node *
aggrefs_to_params(Node *node, AggParams *ap)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		Aggref	   *aggref = (Aggref *) node;
		Param	   *param = makeNode(Param);
		int			n = 0;
		ListCell   *lc;

		foreach(lc, ap->aggrefs)
		{
			if (equal(lfirst(lc), aggref))
				break;
			n++;
		}
		if (lc == NULL)
			ap->aggrefs = lappend(ap->aggrefs, aggref);
		param->paramkind = PARAM_EXEC;
		param->paramid = n;
		param->paramtype = aggref->aggtype;
		param->paramtypmod = -1;
		param->paramcollid = aggref->aggcollid;
		param->location = -1;
		return (Node *) param;
	}
	return expression_tree_mutator(node, aggrefs_to_params, ap);
}

static ExprState *
init_expr(Node *expr)
{
	return ExecInitExpr(expression_planner((Expr *) expr), NULL);
}

static FunctionCallInfo
new_call(FmgrInfo *fn, int nargs, Aggref *aggref, WindowAggState *context)
{
	FunctionCallInfo call = palloc0(SizeForFunctionCallInfo(nargs));

	InitFunctionCallInfoData(*call, fn, nargs, aggref->inputcollid, (Node *) context, NULL);
	return call;
}

static void
agg_begin(LinearAgg *agg, Aggref *aggref, AccumFunctions *fns, WindowAggState *context)
{
	AclResult	acl = pg_proc_aclcheck(aggref->aggfnoid, GetUserId(), ACL_EXECUTE);
	ListCell   *lc;

	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_AGGREGATE, get_func_name(aggref->aggfnoid));
	agg->args = palloc(sizeof(ExprState *) * Max(1, list_length(aggref->args)));
	foreach(lc, aggref->args)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (!tle->resjunk)
			agg->args[agg->nargs++] = init_expr((Node *) tle->expr);
	}
	agg->aggfnoid = aggref->aggfnoid;
	agg->filter = aggref->aggfilter != NULL ? init_expr((Node *) aggref->aggfilter) : NULL;
	fmgr_info(fns->transfn, &agg->transfn);
	agg->invfn.fn_oid = InvalidOid;
	if (OidIsValid(fns->invfn))
		fmgr_info(fns->invfn, &agg->invfn);
	agg->sortfn.fn_oid = InvalidOid;
	if (OidIsValid(fns->sortop))
		fmgr_info(get_opcode(fns->sortop), &agg->sortfn);
	agg->collation = aggref->inputcollid;
	agg->finalfn.fn_oid = InvalidOid;
	if (OidIsValid(fns->finalfn))
		fmgr_info(fns->finalfn, &agg->finalfn);
	agg->combinefn.fn_oid = InvalidOid;
	if (OidIsValid(fns->combinefn))
		fmgr_info(fns->combinefn, &agg->combinefn);
	agg->trans_call = new_call(&agg->transfn, agg->nargs + 1, aggref, context);
	agg->inv_call = new_call(&agg->invfn, agg->nargs + 1, aggref, context);
	agg->final_call = new_call(&agg->finalfn, 1, aggref, context);
	agg->combine_call = new_call(&agg->combinefn, 2, aggref, context);
	get_typlenbyval(fns->transtype, &agg->statelen, &agg->statebyval);
	agg->internal = fns->transtype == INTERNALOID;
	agg->initnull = fns->initnull;
	agg->initval = (Datum) 0;
	if (!fns->initnull)
	{
		Oid			input;
		Oid			ioparam;

		getTypeInputInfo(fns->transtype, &input, &ioparam);
		agg->initval = OidInputFunctionCall(input, fns->initval, ioparam, -1);
	}
}

/*
 * A stage's linear aggregates, or NULL when its query is not a grouping
 * of one input by linear aggregates alone (the query then runs over the
 * groups).
 */
LinearAggs *
accums_begin(ReduceRound *r, ViewPlan *plan)
{
	Query	   *query = plan->query;
	AggParams	ap = {NIL};
	List	   *columns = NIL;
	Node	   *having;
	LinearAggs *la;
	ListCell   *lc;

	if (list_length(plan->inputs) != 1 || (!query->hasAggs && query->groupClause == NIL) ||
		query->distinctClause != NIL || query->groupingSets != NIL ||
		query->hasWindowFuncs || query->hasTargetSRFs ||
		(query->jointree->quals != NULL && plan->qual == NULL))
		return NULL;
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (!tle->resjunk)
			columns = lappend(columns, aggrefs_to_params((Node *) tle->expr, &ap));
	}
	if (list_length(columns) != r->output.out->tts_tupleDescriptor->natts)
		return NULL;
	having = aggrefs_to_params(query->havingQual, &ap);

	la = palloc0(sizeof(LinearAggs));
	la->naggs = list_length(ap.aggrefs);
	la->aggs = palloc0(sizeof(LinearAgg) * Max(1, la->naggs));
	la->context = makeNode(WindowAggState);
	la->context->curaggcontext = r->state->cxt;
	foreach(lc, ap.aggrefs)
	{
		AccumFunctions fns;

		if (!accums_functions(lfirst(lc), &fns))
			return NULL;
		agg_begin(&la->aggs[foreach_current_index(lc)], lfirst(lc), &fns, la->context);
	}
	for (int a = 0; a < la->naggs; a++)
		if (la->aggs[a].internal)
			la->context->curaggcontext = states_memory(r->state);
	foreach(lc, columns)
		la->columns = lappend(la->columns, init_expr(lfirst(lc)));
	la->having = having != NULL ? init_expr(having) : NULL;
	la->keys_in_any_row = accums_keys_in_any_row(plan, columns, having);
	la->params = palloc0(sizeof(ParamExecData) * Max(1, la->naggs));
	la->values = palloc(sizeof(Datum) * list_length(columns));
	la->nulls = palloc(sizeof(bool) * list_length(columns));
	return la;
}

static void
states_forget(ViewGroup *group)
{
	if (group->accums == NULL)
		return;
	for (int i = 0; i < group->naccums; i++)
		if (group->accums[i].owned && !group->accums[i].isnull)
			pfree(DatumGetPointer(group->accums[i].value));
	pfree(group->accums);
	group->accums = NULL;
}

/* A group's states let go; internal ones stay in the stage's states until their reset. */
void
accums_forget(ReduceState *state, ViewGroup *group)
{
	if (group->accums != NULL && state->states != NULL)
		state->states_garbage++;
	states_forget(group);
}

/* Do the internal states let go outnumber the groups (and STATES_GARBAGE_MIN)? */
bool
accums_states_full(ReduceState *state)
{
	int64		ngroups = state->table != NULL ? state->table->hashtab->members : 1;

	return state->states != NULL && state->states_garbage > Max(STATES_GARBAGE_MIN, ngroups);
}

/*
 * The stage's memory for internal states, reset first when full: every
 * group's states are forgotten, to be computed again from its rows when
 * next touched (a rowless stage's groups are built again instead, reduce.c).
 */
static MemoryContext
states_memory(ReduceState *state)
{
	if (state->states == NULL)
		state->states = AllocSetContextCreate(state->cxt, "pg_peek view aggregate states",
											  ALLOCSET_DEFAULT_SIZES);
	else if (!state->rowless && accums_states_full(state))
	{
		if (state->table == NULL)
			states_forget(state->whole);
		else
		{
			TupleHashIterator iter;
			TupleHashEntry entry;

			InitTupleHashIterator(state->table, &iter);
			while ((entry = ScanTupleHashTable(state->table, &iter)) != NULL)
				states_forget(entry->additional);
			TermTupleHashIterator(&iter);
		}
		MemoryContextReset(state->states);
		state->states_garbage = 0;
	}
	return state->states;
}

/* A state's new value from a transition, kept in the groups' memory. */
static void
state_set(LinearAgg *agg, AccumValue *acc, Datum value, bool isnull)
{
	if (!agg->statebyval && DatumGetPointer(value) != DatumGetPointer(acc->value))
	{
		if (!isnull)
			value = datumCopy(value, false, agg->statelen);
		if (acc->owned && !acc->isnull)
			pfree(DatumGetPointer(acc->value));
	}
	acc->value = value;
	acc->isnull = isnull;
	acc->owned = !agg->statebyval;
}

static void
state_init(ReduceRound *r, LinearAgg *agg, AccumValue *acc)
{
	MemoryContext old = MemoryContextSwitchTo(r->state->cxt);

	if (acc->owned && !acc->isnull)
		pfree(DatumGetPointer(acc->value));
	if (agg->internal && !acc->isnull)
		r->state->states_garbage++;
	acc->value = agg->initnull ? (Datum) 0 :
		datumCopy(agg->initval, agg->statebyval, agg->statelen);
	acc->isnull = agg->initnull;
	acc->owned = !agg->statebyval;
	acc->count = 0;
	acc->ties = 0;
	MemoryContextSwitchTo(old);
}

/*
 * Whether the input row (in the input's slot) enters the aggregate: it
 * passes its FILTER, and a strict transition (call's) skips NULL
 * arguments.  Its arguments are then in call's.
 */
static bool
row_enters(ReduceRound *r, LinearAgg *agg, FunctionCallInfo call)
{
	ExprContext *econtext = r->inputs[0].input.econtext;

	if (agg->filter != NULL)
	{
		bool		isnull;
		Datum		pass = ExecEvalExprSwitchContext(agg->filter, econtext, &isnull);

		if (isnull || !DatumGetBool(pass))
			return false;
	}
	for (int i = 0; i < agg->nargs; i++)
	{
		call->args[i + 1].value = ExecEvalExprSwitchContext(agg->args[i], econtext,
															&call->args[i + 1].isnull);
		if (call->args[i + 1].isnull && call->flinfo->fn_strict)
			return false;
	}
	return true;
}

/*
 * One input row (in the input's slot) added to (forward) or removed from
 * an aggregate's state once, as a window's moving aggregate does:
 * a strict transition skips NULL arguments, its first argument is the
 * state when it starts NULL, and removing the last row starts it again.
 * Returns false when the inverse transition cannot remove it.
 */
static bool
state_step(ReduceRound *r, LinearAgg *agg, AccumValue *acc, bool forward)
{
	ExprContext *econtext = r->inputs[0].input.econtext;
	FunctionCallInfo call = forward ? agg->trans_call : agg->inv_call;
	MemoryContext old;
	Datum		value;

	if (!row_enters(r, agg, call))
		return true;
	if (!forward && acc->count == 1)
	{
		state_init(r, agg, acc);
		return true;
	}
	if (forward && acc->isnull && call->flinfo->fn_strict)
	{
		/* (a strict transition's NULL state starts as its first argument) */
		if (agg->nargs != 1)
			elog(ERROR, "a NULL strict moving-aggregate state has %d arguments", agg->nargs);
		old = MemoryContextSwitchTo(r->state->cxt);
		state_set(agg, acc, call->args[1].value, false);
		MemoryContextSwitchTo(old);
		acc->count++;
		return true;
	}
	if (acc->isnull && !forward)
		elog(ERROR, "a moving-aggregate state is NULL before its inverse transition");
	call->args[0].value = acc->value;
	call->args[0].isnull = acc->isnull;
	call->isnull = false;
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	value = FunctionCallInvoke(call);
	MemoryContextSwitchTo(r->state->cxt);
	if (call->isnull && !forward)
	{
		MemoryContextSwitchTo(old);
		return false;
	}
	if (call->isnull)
		elog(ERROR, "a moving-aggregate transition function returned NULL");
	state_set(agg, acc, value, false);
	MemoryContextSwitchTo(old);
	acc->count += forward ? 1 : -1;
	return true;
}

/* Two states combined (the first NULL: none yet), in the current context. */
static Datum
states_combined(LinearAgg *agg, Datum first, bool first_null, Datum second)
{
	FunctionCallInfo call = agg->combine_call;
	Datum		value;

	/* (a strict combine function's NULL state becomes the other) */
	if (first_null && agg->combinefn.fn_strict)
		return second;
	call->args[0].value = first;
	call->args[0].isnull = first_null;
	call->args[1].value = second;
	call->args[1].isnull = false;
	call->isnull = false;
	value = FunctionCallInvoke(call);
	if (call->isnull)
		elog(ERROR, "a combine function of moving-aggregate states returned NULL");
	return value;
}

/* An aggregate's count of rows in a group, plus n more. */
static int64
aggregated_plus(int64 count, int64 n)
{
	if (pg_add_s64_overflow(count, n, &count))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("a group's count of rows in an aggregate is out of range")));
	return count;
}

/*
 * n copies of the input row (in the input's slot) added to an aggregate's
 * state at once: the state of one copy, doubled by the combine function
 * (a state of 2^k copies combined with itself), each doubling whose bit n
 * has combined into the state; log2(n) combines.
 */
static void
state_add_copies(ReduceRound *r, LinearAgg *agg, AccumValue *acc, int64 n)
{
	FunctionCallInfo trans = agg->trans_call;
	MemoryContext old;
	Datum		copies;
	int64		count;

	if (!row_enters(r, agg, trans))
		return;
	count = aggregated_plus(acc->count, n);
	old = MemoryContextSwitchTo(r->inputs[0].input.econtext->ecxt_per_tuple_memory);
	if (agg->initnull && trans->flinfo->fn_strict)
		copies = trans->args[1].value;
	else
	{
		/* (a copy: a transition may change its state in place) */
		trans->args[0].value = agg->initnull ? (Datum) 0 :
			datumCopy(agg->initval, agg->statebyval, agg->statelen);
		trans->args[0].isnull = agg->initnull;
		trans->isnull = false;
		copies = FunctionCallInvoke(trans);
		if (trans->isnull)
			elog(ERROR, "a moving-aggregate transition function returned NULL");
	}
	if (agg->internal)
		r->state->states_garbage++;
	for (;;)
	{
		if (n & 1)
		{
			Datum		value = states_combined(agg, acc->value, acc->isnull, copies);

			MemoryContextSwitchTo(r->state->cxt);
			state_set(agg, acc, value, false);
			MemoryContextSwitchTo(r->inputs[0].input.econtext->ecxt_per_tuple_memory);
		}
		n >>= 1;
		if (n == 0)
			break;
		/* (a by-reference state not internal doubles with a copy of itself) */
		copies = states_combined(agg, copies, false,
								 agg->statebyval || agg->internal ? copies :
								 datumCopy(copies, false, agg->statelen));
	}
	MemoryContextSwitchTo(old);
	acc->count = count;
}

/* Does a come before b in a min's or max's order (the row's value in call's)? */
static bool
extreme_first(ReduceRound *r, LinearAgg *agg, Datum a, Datum b)
{
	MemoryContext old = MemoryContextSwitchTo(r->inputs[0].input.econtext->ecxt_per_tuple_memory);
	bool		first = DatumGetBool(FunctionCall2Coll(&agg->sortfn, agg->collation, a, b));

	MemoryContextSwitchTo(old);
	return first;
}

/*
 * copies of the input row (in the input's slot) added to a min's or max's
 * state at once: its value replaces the kept one when it comes first, or
 * adds to the kept one's copies when equal.
 */
static void
extreme_add(ReduceRound *r, LinearAgg *agg, AccumValue *acc, int64 copies)
{
	FunctionCallInfo call = agg->trans_call;
	Datum		value;
	MemoryContext old;

	if (!row_enters(r, agg, call))
		return;
	acc->count = aggregated_plus(acc->count, copies);
	value = call->args[1].value;
	if (acc->isnull || extreme_first(r, agg, value, acc->value))
	{
		old = MemoryContextSwitchTo(r->state->cxt);
		state_set(agg, acc, value, false);
		MemoryContextSwitchTo(old);
		acc->ties = copies;
	}
	else if (!extreme_first(r, agg, acc->value, value))
		acc->ties += copies;
}

/*
 * copies of the input row (in the input's slot) taken out of a min's or
 * max's state: it stays as it was unless they are the last copies of the
 * value it keeps, which only the group's other rows can replace (false:
 * the states are computed again from them).
 */
static bool
extreme_remove(ReduceRound *r, LinearAgg *agg, AccumValue *acc, int64 copies)
{
	FunctionCallInfo call = agg->trans_call;

	if (!row_enters(r, agg, call))
		return true;
	if (acc->count < copies)
		return false;
	if (acc->count == copies)
	{
		state_init(r, agg, acc);
		return true;
	}
	if (!extreme_first(r, agg, acc->value, call->args[1].value))
	{
		/* (equal: one of the kept value's copies) */
		if (acc->ties <= copies)
			return false;
		acc->ties -= copies;
	}
	acc->count -= copies;
	return true;
}

/*
 * A row (of the group's input) added diff times, or removed -diff times,
 * in every state; false when an inverse transition could not.  Many
 * copies go in at once where the aggregate has a combine function, and
 * are not taken out by inverse transitions: false, the states are
 * computed again from the group's rows.
 */
static bool
states_add(ReduceRound *r, ViewGroup *group, Datum row, int64 diff)
{
	ViewInput  *input = &r->inputs[0].input;
	int64		copies = diff < 0 ? -diff : diff;
	bool		done = true;

	view_input_put(input, row);
	for (int a = 0; a < r->linear->naggs && done; a++)
	{
		LinearAgg  *agg = &r->linear->aggs[a];

		if (OidIsValid(agg->sortfn.fn_oid) && diff < 0)
			done = extreme_remove(r, agg, &group->accums[a], copies);
		else if (OidIsValid(agg->sortfn.fn_oid))
			extreme_add(r, agg, &group->accums[a], copies);
		else if (copies > COPIES_STEPPED && diff < 0)
			done = false;
		else if (copies > COPIES_STEPPED && OidIsValid(agg->combinefn.fn_oid))
			state_add_copies(r, agg, &group->accums[a], copies);
		else if (copies > DATAFLOW_MAX_ROW_COPIES)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("a row has " INT64_FORMAT " copies in a group, more than the %d that aggregate %s takes one by one",
							copies, DATAFLOW_MAX_ROW_COPIES, format_procedure(agg->aggfnoid)),
					 errdetail("Its moving-aggregate states have no combine function to take them at once.")));
		else
			for (int64 c = 0; c < copies && done; c++)
				done = state_step(r, agg, &group->accums[a], diff > 0);
	}
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
	return done;
}

/* The group's count of rows moved by n. */
static void
held_add(ViewGroup *group, int64 n)
{
	if (pg_add_s64_overflow(group->held, n, &group->held))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("a group's count of rows is out of range")));
}

/*
 * A group's states over no rows, its count of rows 0: its rows then come
 * in through accums_add_row.
 */
void
accums_start(ReduceRound *r, ViewGroup *group)
{
	LinearAggs *la = r->linear;

	group->accums = MemoryContextAllocZero(r->state->cxt,
										   sizeof(AccumValue) * Max(1, la->naggs));
	group->naccums = la->naggs;
	for (int a = 0; a < la->naggs; a++)
	{
		group->accums[a].isnull = true; /* (nothing to let go) */
		state_init(r, &la->aggs[a], &group->accums[a]);
	}
	group->held = 0;
}

/*
 * A row of the group's, count times, into its states and its count of
 * rows: a count not above 0 holds none, as in the group's rows.
 */
void
accums_add_row(ReduceRound *r, ViewGroup *group, Datum row, int64 count)
{
	if (count <= 0)
		return;
	(void) states_add(r, group, row, count);
	held_add(group, count);
}

/*
 * A group's states and count of rows computed forward from its rows, if
 * it does not know them.
 */
static void
states_know(ReduceRound *r, ViewGroup *group)
{
	GroupRows  *rows = &group->inputs[0];

	if (group->accums != NULL)
		return;
	if (group->partial)
		elog(ERROR, "a view's group computes its states from some of its rows");
	accums_start(r, group);
	for (int i = 0; i < rows->nrows; i++)
		accums_add_row(r, group, rows->rows[i].row, rows->rows[i].count);
}

/*
 * Can the group's round load only the rows it updates (arranged.c)?  Any
 * of its rows gives its output's columns (accums_keys.c), and it knows its
 * states, its count of rows and its output, or knows no states: its load
 * learns them as it walks its rows (accums_start, accums_add_row).
 */
bool
accums_partial(ReduceRound *r, ViewGroup *group)
{
	return r->linear != NULL && r->linear->keys_in_any_row &&
		(group->accums == NULL || group->noutput >= 0);
}

/*
 * The group's output row now, from its states (computed from its rows if
 * it does not know them), into its fresh list (in the current memory
 * context): none for a group without rows (under GROUP BY) or that HAVING
 * refuses.
 */
void
accums_output(ReduceRound *r, ViewGroup *group)
{
	LinearAggs *la = r->linear;
	ViewInput  *input = &r->inputs[0].input;
	ExprContext *econtext = input->econtext;
	GroupRows  *rows = &group->inputs[0];
	Datum		some_row = group->some_row;
	int			first = 0;
	ListCell   *lc;

	group->fresh = NIL;
	if (!group->partial)
	{
		while (first < rows->nrows && rows->rows[first].count <= 0)
			first++;
		some_row = first < rows->nrows ? rows->rows[first].row : (Datum) 0;
	}
	else if (group->held == 0)
		some_row = (Datum) 0;
	if (group->key != NULL && some_row == (Datum) 0)
		return;
	states_know(r, group);
	if (some_row != (Datum) 0)
		view_input_put(input, some_row);
	else
	{
		ExecStoreAllNullTuple(input->slot);
		econtext->ecxt_scantuple = input->slot;
	}
	econtext->ecxt_param_exec_vals = la->params;
	for (int a = 0; a < la->naggs; a++)
	{
		LinearAgg  *agg = &la->aggs[a];
		AccumValue *acc = &group->accums[a];
		ParamExecData *param = &la->params[a];
		MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

		param->execPlan = NULL;
		param->value = acc->value;
		param->isnull = acc->isnull;
		if (OidIsValid(agg->finalfn.fn_oid) && !(acc->isnull && agg->finalfn.fn_strict))
		{
			agg->final_call->args[0].value = acc->value;
			agg->final_call->args[0].isnull = acc->isnull;
			agg->final_call->isnull = false;
			param->value = FunctionCallInvoke(agg->final_call);
			param->isnull = agg->final_call->isnull;
		}
		else if (OidIsValid(agg->finalfn.fn_oid))
			param->isnull = true;
		MemoryContextSwitchTo(old);
	}
	if (la->having != NULL)
	{
		bool		isnull;
		Datum		pass = ExecEvalExprSwitchContext(la->having, econtext, &isnull);

		if (isnull || !DatumGetBool(pass))
		{
			ExecClearTuple(input->slot);
			ResetExprContext(econtext);
			return;
		}
	}
	foreach(lc, la->columns)
		la->values[foreach_current_index(lc)] =
			ExecEvalExprSwitchContext(lfirst(lc), econtext,
									  &la->nulls[foreach_current_index(lc)]);
	outputs_add(&r->output, group, la->values, la->nulls);
	ExecClearTuple(input->slot);
	ResetExprContext(econtext);
}

/* The end of the updates from u on of one row (they are sorted by row image). */
static int
updates_end(ReduceRound *r, int u, int last)
{
	int			end = u + 1;

	while (end < last && group_row_image_cmp(DatumGetPointer(r->updates[end].row),
									   DatumGetPointer(r->updates[u].row)) == 0)
		end++;
	return end;
}

/*
 * The copies of the row of updates [u, end) that they add to
 * (or remove from) the group's states: a row's count below zero (more
 * copies retracted than inserted) holds none, as when the states are
 * computed from the rows (states_know), so a retraction of a row the group
 * does not hold changes nothing.  A source's rows never count below zero:
 * their diffs' sum is the change, the row's count not needed (a partial
 * group does not load it, arranged.c).
 */
static int64
row_change(ReduceRound *r, ViewGroup *group, int u, int end)
{
	GroupRows  *rows = &group->inputs[0];
	const char *image = DatumGetPointer(r->updates[u].row);
	int64		before = 0;
	int64		after;
	int			lo = 0;
	int			hi = rows->nrows;

	while (!r->inputs[0].never_negative && lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			cmp = group_row_image_cmp(DatumGetPointer(rows->rows[mid].row), image);

		if (cmp == 0)
		{
			before = rows->rows[mid].count;
			break;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	after = before;
	for (; u < end; u++)
		if (pg_add_s64_overflow(after, r->updates[u].diff, &after))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("a row's count in its group is out of range")));
	return r->inputs[0].never_negative ? after : Max(after, 0) - Max(before, 0);
}

/*
 * A group's updates [first, last) of the round at one time through its
 * states (reduce.c then merges them into its rows); a group built again
 * first learns its output from its rows' states.  False when its states
 * are let go, to be computed again from its rows once merged (a partial
 * group's: all of them, arranged_reload; a rowless one's: rowless_rescan).
 */
bool
accums_update(ReduceRound *r, ViewGroup *group, int first, int last)
{
	bool		exact = true;

	r->output.cxt = CurrentMemoryContext;
	if (group->noutput < 0)
	{
		accums_output(r, group);
		outputs_keep(r->state, &group, 1);
	}
	states_know(r, group);
	/* (retractions first: a count never passes its value at the time) */
	for (int sign = -1; sign <= 1; sign += 2)
		for (int u = first, end; u < last && exact; u = end)
		{
			int64		change;

			end = updates_end(r, u, last);
			change = row_change(r, group, u, end);
			if (change * sign > 0)
			{
				exact = states_add(r, group, r->updates[u].row, change);
				held_add(group, change);
			}
		}
	/* (an inverse transition that could not: from the rows, once merged) */
	if (!exact)
		accums_forget(r->state, group);
	return exact;
}
