/*-------------------------------------------------------------------------
 *
 * delta.c
 *	  A join's differences, for a stage whose query is linear in each of
 *	  its inputs (inner joins alone: no grouping, aggregate, DISTINCT or
 *	  outer join), as differential dataflow's delta joins compute them:
 *	  d(A join B) = dA join B + A' join dB, B before the time's updates and
 *	  A' after them.  reduce.c runs the stage's query (runs.c), input by
 *	  input, over the touched groups with that input's rows replaced by
 *	  the time's additions to it (then by its retractions, each with its
 *	  count), the inputs before it as they are after the time and those
 *	  after it as before, and merges that input's updates before the next
 *	  one's run; the rows each run gives a group are its differences at
 *	  its time, multiplicities multiplied.  So a time costs its updates
 *	  joined with the rows of their key, never a group's whole join, and
 *	  no group keeps its output.  Left joins (whose NULL-extended rows
 *	  depend on whether a side is empty) re-run the group's query.
 *
 *	  Only swaps an input's rows of the touched groups for a time's
 *	  differences and back; must not merge updates, run the query nor
 *	  emit (reduce.c does), nor touch the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"

#include "dataflow/reduce_internal.h"

/* Whether a FROM item joins its inputs by inner joins alone. */
static bool
inner_joins(Node *node)
{
	if (IsA(node, RangeTblRef))
		return true;
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		return join->jointype == JOIN_INNER && inner_joins(join->larg) &&
			inner_joins(join->rarg);
	}
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			if (!inner_joins(lfirst(lc)))
				return false;
		return true;
	}
	return false;
}

/* Whether a stage's query is a join linear in each of its inputs. */
bool
delta_linear(ViewPlan *plan)
{
	Query	   *query = plan->query;

	return list_length(plan->inputs) >= 2 && !query->hasAggs &&
		query->groupClause == NIL && query->distinctClause == NIL &&
		query->havingQual == NULL && !query->hasWindowFuncs &&
		!query->hasTargetSRFs && query->setOperations == NULL &&
		inner_joins((Node *) query->jointree);
}

/* A touch's updates of one input: [*from, *to) of the round's (input, row) order. */
void
delta_input_updates(ReduceRound *r, Touch *t, int input, int *from, int *to)
{
	int			u = t->first;

	while (u < t->last && r->updates[u].input < input)
		u++;
	*from = u;
	while (u < t->last && r->updates[u].input == input)
		u++;
	*to = u;
}

/*
 * The touches' additions to an input (sign 1) or retractions from it
 * (sign -1) at their times, consolidated (the same row's updates summed),
 * put in place of the input's rows of their groups, its rows kept in
 * saved (nrows -1: a touch without any); the groups that have some in
 * groups.  Returns how many.
 */
int
delta_swap_in(ReduceRound *r, Touch *touches, int ntouches, int input, int sign,
			  ViewGroup **groups, GroupRows *saved)
{
	int			ngroups = 0;

	for (int i = 0; i < ntouches; i++)
	{
		GroupRows	diffs = {NULL, 0};
		int			from;
		int			to;

		saved[i].nrows = -1;
		delta_input_updates(r, &touches[i], input, &from, &to);
		for (int u = from, end; u < to; u = end)
		{
			int64		count = 0;

			/* (updates of one row are next to each other: sorted by image) */
			for (end = u; end < to && VARSIZE(DatumGetPointer(r->updates[end].row)) ==
				 VARSIZE(DatumGetPointer(r->updates[u].row)) &&
				 memcmp(DatumGetPointer(r->updates[end].row), DatumGetPointer(r->updates[u].row),
						VARSIZE(DatumGetPointer(r->updates[u].row))) == 0; end++)
				count += r->updates[end].diff;
			if (count * sign <= 0)
				continue;
			if (diffs.rows == NULL)
				diffs.rows = palloc(sizeof(GroupRow) * (to - from));
			diffs.rows[diffs.nrows].row = r->updates[u].row;
			diffs.rows[diffs.nrows++].count = count * sign;
		}
		if (diffs.nrows == 0)
			continue;
		saved[i] = touches[i].group->inputs[input];
		touches[i].group->inputs[input] = diffs;
		groups[ngroups++] = touches[i].group;
	}
	return ngroups;
}

/*
 * The input's rows back in place of the differences in the touched groups,
 * and the rows the run gave each group added to its touch's list.
 */
void
delta_swap_out(Touch *touches, int ntouches, int input, GroupRows *saved, List **lists)
{
	for (int i = 0; i < ntouches; i++)
	{
		ViewGroup  *group = touches[i].group;

		if (saved[i].nrows < 0)
			continue;
		pfree(group->inputs[input].rows);
		group->inputs[input] = saved[i];
		lists[i] = list_concat(lists[i], group->fresh);
		group->fresh = NIL;
	}
}
