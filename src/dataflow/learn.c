/*-------------------------------------------------------------------------
 *
 * learn.c
 *	  A lazy stage's groups learned in the maintenance runtime's idle time.
 *	  A stage that starts lazy (reduce.c: after a hydration, a restart, a
 *	  failed round) learns a group when a round first touches it, walking
 *	  the group's rows in the shared arrangement (arranged.c): a round
 *	  then costs the rows of the groups it first touches, not only its
 *	  updates.  A stage of linear aggregates whose output any of a group's
 *	  rows gives (accums.c) learns, between rounds, the groups it does not
 *	  know yet: a step walks the next range of the arrangement's key
 *	  hashes (about LEARN_STEP_ROWS rows, from where the last stopped) at
 *	  the groups' upper, past which the arrangement has no update, and
 *	  gives each group met that knows no states its states, its count of
 *	  rows and its output (what the view holds for it there) from the rows
 *	  the walk passes; the groups a round knows are passed over.  The rounds keep
 *	  them current from there.  Steps run only when no round is due
 *	  (runtime/maintenance.c) and each is short, so an input's new updates
 *	  wait for one step at most; a view whose catalog row a user's
 *	  transaction holds is passed over a while, never waited for (round.c's
 *	  dataflow_learn).  A step walks at most LEARN_STEP_MAX_ROWS rows: a
 *	  key hash of more (a NULL key, a huge group) is passed over, its
 *	  groups learned when first touched.  Once every hash is learned (none
 *	  passed over) the stage is no longer lazy (a group it lacks has no
 *	  rows): a round costs its updates.  A stage whose groups come to take more memory than its
 *	  arrangement (groups of a few rows, cheap to learn when touched) stops
 *	  learning and stays lazy (reduce.c).  A restart or a rebuild starts
 *	  lazy and learns again.
 *
 *	  Must not write (a group learned emits nothing: its output is in the
 *	  view already) nor touch the catalog (round.c, reduce.c set it up).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"

#include "arrange/walk.h"
#include "dataflow/reduce_internal.h"

/* The rows of the input a learning step walks, about, and at most. */
#define LEARN_STEP_ROWS		4096
#define LEARN_STEP_MAX_ROWS	(4 * LEARN_STEP_ROWS)

/* A learning step's walk: the groups it learns. */
typedef struct Learning
{
	ReduceRound *r;
	ViewGroup **groups;			/* each's loaded_at its place here */
	int			ngroups;
	int			room;
} Learning;

/*
 * A row of the walk with its count: into its group's states if the step
 * learns the group (one that knew no states when the walk met it).
 */
static bool
learn_row(Datum row, int64 count, void *arg)
{
	Learning   *l = arg;
	ReduceRound *r = l->r;
	ViewInput  *input = &r->inputs[0].input;
	ViewGroup  *group = NULL;

	if (view_input_passes(input, row))
		group = groups_find(r);
	if (group != NULL && group->accums == NULL)
	{
		if (l->ngroups == l->room)
		{
			l->room = Max(64, l->room * 2);
			l->groups = l->groups == NULL ? palloc(sizeof(ViewGroup *) * l->room) :
				repalloc(l->groups, sizeof(ViewGroup *) * l->room);
		}
		group->loaded_at = l->ngroups;
		l->groups[l->ngroups++] = group;
		accums_start(r, group);
	}
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
	if (group == NULL || group->loaded_at < 0)
		return true;
	/* (the batches' row stays pinned for the step: its output's key columns) */
	if (count > 0 && group->some_row == (Datum) 0)
		group->some_row = row;
	accums_add_row(r, group, row, count);
	return true;
}

/*
 * Can the lazy stage learn its groups between rounds: would a group it
 * does not know learn its states from its rows as a walk passes them
 * (accums_partial: linear aggregates whose output any of a group's rows
 * gives)?
 */
bool
learn_possible(ReduceRound *r)
{
	ViewGroup	unknown = {0};

	return r->state->lazy && accums_partial(r, &unknown);
}

/*
 * A learning step of the round's stage (begun, its input read from read,
 * which holds every update below upper, the groups', and none at or past
 * it): the groups of the next range of key hashes at upper, in the
 * current memory context (the step's).  Returns whether hashes are left.
 */
bool
learn_step(ReduceRound *r, SpineRead *read, int64 upper)
{
	ReduceState *state = r->state;
	Learning	l = {r, NULL, 0, 0};
	int64		entries = 0;
	uint64		to;

	for (int b = 0; b < read->nbatches; b++)
		entries += batch_get(read->batches[b])->nentries;
	to = Min(state->learn_from +
			 Max(((uint64) 1 << 32) * LEARN_STEP_ROWS / Max(entries, 1), 1),
			 (uint64) 1 << 32);

	/*
	 * Keys are not spread evenly (a NULL key, a big group): a range of too
	 * many rows is halved, and a hash of too many passed over, its groups
	 * learned when a round first touches them, so that no step holds up a
	 * round for long.
	 */
	while ((entries = walk_hash_range_entries(read->batches, read->nbatches,
											  (uint32) state->learn_from, to)) > LEARN_STEP_MAX_ROWS &&
		   to - state->learn_from > 1)
		to = state->learn_from + (to - state->learn_from) / 2;
	if (entries > LEARN_STEP_MAX_ROWS)
	{
		ereport(DEBUG1,
				(errmsg_internal("pg_peek view stage passes over key hash %u in its learning: " INT64_FORMAT " rows",
								 (uint32) state->learn_from, entries)));
		state->learn_passed = true;
	}
	else
	{
		r->current = 0;
		walk_hash_range(read->batches, read->nbatches, (uint32) state->learn_from, to, upper,
						learn_row, &l);
	}
	r->output.cxt = CurrentMemoryContext;
	for (int g = 0; g < l.ngroups; g++)
	{
		ViewGroup  *group = l.groups[g];

		/* (a partial group: its rows are counted with its states) */
		group->partial = true;
		if (group->noutput < 0)
		{
			accums_output(r, group);
			outputs_keep(state, &group, 1);
		}
		group->partial = false;
		group->some_row = (Datum) 0;
		group->loaded_at = -1;
	}
	state->learn_from = to;
	state->learning = (to >> 32) == 0;
	if (!state->learning)
		state->lazy = state->learn_passed;
	return state->learning;
}
