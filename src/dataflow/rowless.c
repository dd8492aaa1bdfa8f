/*-------------------------------------------------------------------------
 *
 * rowless.c
 *	  A rowless stage: a grouping of linear aggregates (accums.c) of one
 *	  input that is a source (its rows never count below zero), whose rows
 *	  are kept in the groups (not read from a shared arrangement,
 *	  arranged.c: GROUP BY of nothing, of expressions), whose output any of
 *	  a group's rows gives (accums_keys.c), with no min or max, keeps no
 *	  rows at all.  Each group is partial for good, as a round's partial
 *	  group of arranged.c is for the round: it holds its states, its count
 *	  of rows (held) and one of its rows, for its key columns (some_row);
 *	  a round's updates go through its states alone (accums_update: a
 *	  source's diffs are its rows' changes), and are merged into no rows
 *	  (groups.c).  So a whole-table count(*) and sum over a source keep a
 *	  few hundred bytes, not the table's rows.
 *
 *	  Where a group's states would be computed from its rows, they are
 *	  computed by one read of the input's contents at the time (a persist
 *	  walk, storage/shard_walk.c, which gives each distinct row once with
 *	  its count, as a peek reads them), each row that passes WHERE fed
 *	  into its group's states (accums_start, accums_add_row) and let go:
 *	  at a build (rowless_build: a hydration that runs its rounds, the
 *	  round after one at once, a restart, a failed round, internal states'
 *	  memory full, accums_states_full), and for the groups of a round's
 *	  wave whose inverse transition could not (rowless_rescan: a numeric
 *	  sum's when the last value of its greatest scale goes, many copies of
 *	  a row retracted at once), one read for all of them at a time.  Such a
 *	  read costs the whole input, not the group: min and max, whose kept
 *	  value's retraction is routine (the oldest rows deleted, the greatest
 *	  updated), keep their rows instead (accums.c).
 *
 *	  Must not write nor touch the catalog (reduce.c, round.c do).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "dataflow/reduce_internal.h"

/*
 * expression_tree_walker's callback: an aggregate that keeps the first of
 * its values (min, max: accums_functions' sort operator), or not kept as
 * states at all?
 */
static bool
keeps_extreme(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		AccumFunctions fns;

		return !accums_functions((Aggref *) node, &fns) || OidIsValid(fns.sortop);
	}
	return expression_tree_walker(node, keeps_extreme, context);
}

/*
 * Can the stage (begun: its input's object and whether it is a source
 * known) keep its groups without rows?  One input, a source's, not read
 * from a shared arrangement; linear aggregates, none a min or max, whose
 * output any of a group's rows gives (accums_partial of a group that
 * knows nothing).
 */
bool
rowless_possible(ReduceRound *r, ViewPlan *plan)
{
	ViewGroup	unknown = {0};

	return r->ninputs == 1 && r->inputs[0].read == NULL && r->inputs[0].never_negative &&
		r->inputs[0].object_in != NULL && accums_partial(r, &unknown) &&
		!keeps_extreme((Node *) plan->query->targetList, NULL) &&
		!keeps_extreme(plan->query->havingQual, NULL);
}

/*
 * The input's contents at the time, read once: each distinct row that
 * passes WHERE, with its count, into its group's states and count of rows
 * (a build's: every group, made when new, each keeping the first of its
 * rows; else only the groups a rescan marked, loaded_at >= 0).  None kept.
 */
static void
read_contents(ReduceRound *r, int64 at, bool build)
{
	ReduceInput *input = &r->inputs[0];
	CatalogObject *in = input->object_in;
	MemoryContext per_row = AllocSetContextCreate(CurrentMemoryContext,
												  "pg_peek view rowless read",
												  ALLOCSET_DEFAULT_SIZES);
	PersistWalk *walk = persist_walk_begin(in->id, in->shard, in->row_type, in->name,
										   GetActiveSnapshot(), at, -1);
	Datum		stored;
	int64		count;

	r->current = 0;
	while (persist_walk_next(walk, &stored, &count))
	{
		MemoryContext old = MemoryContextSwitchTo(per_row);
		ViewGroup  *group = NULL;
		Datum		row;

		CHECK_FOR_INTERRUPTS();
		/* (a source's rows never count below zero: a count of 0 holds none) */
		if (count > 0 && view_input_row(&input->input, stored, &row))
			group = build ? groups_find(r) : groups_lookup(r);
		ExecClearTuple(input->input.slot);
		ResetExprContext(input->input.econtext);
		if (group != NULL && (build || group->loaded_at >= 0))
		{
			if (build && group->some_row == (Datum) 0)
			{
				MemoryContextSwitchTo(r->state->cxt);
				group->some_row = datumCopy(row, false, -1);
				MemoryContextSwitchTo(per_row);
			}
			accums_add_row(r, group, row, count);
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(per_row);
	}
	persist_walk_end(walk);
	MemoryContextDelete(per_row);
}

/*
 * A rowless stage's groups built (the stage's state new, its input begun):
 * their states, counts of rows and rows for their key columns from the
 * input's contents at at, in one read.  Their outputs are then learned
 * from their states (steps_emit_all).
 */
void
rowless_build(ReduceRound *r, int64 at)
{
	ReduceState *state = r->state;

	if (state->table == NULL)
	{
		state->whole->partial = true;
		accums_start(r, state->whole);
	}
	read_contents(r, at, true);
}

/*
 * The states of the wave's groups whose inverse transition could not
 * (accums_update let them go) computed again from the input's contents at
 * their touches' times, after their updates: one read for the groups of a
 * time (a wave's touches come in time order).  Their count of rows too: a
 * group left with none is noted emptied.
 */
void
rowless_rescan(ReduceRound *r, Touch *touches, int ntouches)
{
	for (int first = 0, last; first < ntouches; first = last)
	{
		int			n = 0;

		for (last = first; last < ntouches && touches[last].time == touches[first].time; last++)
			if (touches[last].group->accums == NULL)
			{
				accums_start(r, touches[last].group);
				touches[last].group->loaded_at = n++;
			}
		if (n == 0)
			continue;
		ereport(DEBUG1,
				(errmsg_internal("pg_peek view stage reads its input at " INT64_FORMAT " for the states of %d groups",
								 touches[first].time, n)));
		read_contents(r, touches[first].time, false);
		for (int t = first; t < last; t++)
			if (touches[t].group->loaded_at >= 0)
			{
				touches[t].group->loaded_at = -1;
				groups_note_emptied(r, touches[t].group);
			}
	}
}
