/*-------------------------------------------------------------------------
 *
 * steps.c
 *	  A stage's round run over its groups (reduce.c keeps them): the
 *	  round's updates in time order put in waves (waves.c), each wave's
 *	  updates merged into their groups and the groups' output now formed
 *	  (the query run over their rows, runs.c; their linear aggregates'
 *	  states, accums.c; an inner join's differences, delta.c), and its
 *	  difference against what they kept emitted at each group's time; and
 *	  every group's output at once, for a hydration or after a rebuild.
 *	  The rows of groups read from a shared arrangement (arranged.c) come
 *	  in as they are after their first touch, which is taken out again; a
 *	  rowless stage's groups keep none (rowless.c).
 *
 *	  Must not build or drop groups (reduce.c does), nor touch the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "dataflow/reduce_internal.h"

/* The rows of groups one run of the query takes when all groups give theirs. */
#define EMIT_ALL_ROWS	(1 << 15)

static int
update_time_cmp(const void *a, const void *b)
{
	int64		ta = ((const GroupUpdate *) a)->time;
	int64		tb = ((const GroupUpdate *) b)->time;

	return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/* qsort's comparison of a list of row images */
static int
row_cell_cmp(const void *a, const void *b)
{
	return group_row_image_cmp(lfirst((const ListCell *) a), lfirst((const ListCell *) b));
}

/* What the groups gave before a step retracted, what they give after added. */
static void
emit_difference(ReduceRound *r, int64 time, List *before, List *after)
{
	int			nb = list_length(before);
	int			na = list_length(after);
	int			b = 0;
	int			a = 0;

	if (nb > 1)
		qsort(before->elements, nb, sizeof(ListCell), row_cell_cmp);
	if (na > 1)
		qsort(after->elements, na, sizeof(ListCell), row_cell_cmp);
	while (b < nb || a < na)
	{
		int			cmp = b == nb ? 1 : a == na ? -1 :
			row_cell_cmp(&before->elements[b], &after->elements[a]);

		if (cmp < 0)
			groups_emit(r, time, -1, PointerGetDatum(list_nth(before, b++)));
		else if (cmp > 0)
			groups_emit(r, time, 1, PointerGetDatum(list_nth(after, a++)));
		else
			b++, a++;
	}
}

/*
 * The groups' output now, each's in its fresh list, all returned: formed
 * from their linear aggregates' states (accums.c, which take a row's many
 * copies at once), or the query run over their rows.
 */
static List *
outputs_now(ReduceRound *r, ViewGroup **groups, int ngroups)
{
	List	   *rows = NIL;

	if (r->linear == NULL)
		return runs_over(r, groups, ngroups);
	r->output.cxt = CurrentMemoryContext;
	for (int g = 0; g < ngroups; g++)
	{
		accums_output(r, groups[g]);
		rows = list_concat(rows, groups[g]->fresh);
	}
	return rows;
}

/*
 * The query run once over the groups, a step's updates applied: the
 * difference against their output before emitted at the step's time, and
 * kept as their output.
 */
static void
emit_outputs(ReduceRound *r, int64 time, ViewGroup **groups, int ngroups, List *before)
{
	emit_difference(r, time, before, outputs_now(r, groups, ngroups));
	if (!r->delta)
		outputs_keep(r->state, groups, ngroups);
}

/*
 * The groups that know no output (built again since they last emitted, or
 * first touched in a lazy stage) run over before a step's updates apply to
 * them, and their output kept.  A keyed group without rows gives none: a
 * lazy stage's new group needs no run.
 */
static void
learn_outputs(ReduceRound *r, ViewGroup **groups, int ngroups)
{
	ViewGroup **unknown = palloc(sizeof(ViewGroup *) * Max(1, ngroups));
	int			nunknown = 0;

	for (int g = 0; g < ngroups; g++)
		if (groups[g]->noutput >= 0)
			continue;
		else if (groups[g]->key != NULL && groups_empty(r->state, groups[g]))
			outputs_forget(groups[g]);
		else
			unknown[nunknown++] = groups[g];
	if (nunknown > 0)
	{
		(void) outputs_now(r, unknown, nunknown);
		outputs_keep(r->state, unknown, nunknown);
	}
}

/*
 * Every group's output, added at the since and kept: the view's hydration
 * (the last stage), the next stage's rebuild, or (since < 0) kept alone.
 * The query runs over EMIT_ALL_ROWS rows of groups at a time: its arrays
 * stay in the step's memory, not the whole input spilled to disk.
 */
void
steps_emit_all(ReduceRound *r, int64 since)
{
	ReduceState *state = r->state;
	ViewGroup **groups;
	int			n = 0;

	if (state->table == NULL)
		groups = &state->whole, n = 1;
	else
	{
		TupleHashIterator iter;
		TupleHashEntry entry;

		groups = palloc(sizeof(ViewGroup *) * Max(1, state->table->hashtab->members));
		InitTupleHashIterator(state->table, &iter);
		while ((entry = ScanTupleHashTable(state->table, &iter)) != NULL)
			groups[n++] = entry->additional;
		TermTupleHashIterator(&iter);
	}
	for (int first = 0, last; first < n; first = last)
	{
		int64		rows = 0;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		for (last = first; last < n && (last == first || rows < EMIT_ALL_ROWS); last++)
		{
			/* (a rowless stage's group gives one row from none) */
			rows += groups[last]->partial;
			for (int i = 0; i < r->ninputs; i++)
				rows += groups[last]->inputs[i].nrows;
		}
		old = MemoryContextSwitchTo(r->per_step);
		if (since >= 0)
			emit_outputs(r, since, groups + first, last - first, NIL);
		else
			learn_outputs(r, groups + first, last - first);
		MemoryContextSwitchTo(old);
		MemoryContextReset(r->per_step);
	}
}

/*
 * One run of a wave over the touches [first, last), each of another group,
 * in time order: their updates applied, the query run once over their
 * groups, each time's groups' output against what they kept emitted at
 * that time, and kept.
 */
static void
run_wave(ReduceRound *r, Touch *touches, int first, int last)
{
	int			n = last - first;
	ViewGroup **groups = palloc(sizeof(ViewGroup *) * n);

	for (int i = 0; i < n; i++)
		groups[i] = touches[first + i].group;
	learn_outputs(r, groups, n);
	for (int i = first; i < last; i++)
		groups_merge_updates(r, touches[i].first, touches[i].last);
	(void) runs_over(r, groups, n);
	for (int from = 0, to; from < n; from = to)
	{
		int64		time = touches[first + from].time;
		List	   *after = NIL;

		for (to = from; to < n && touches[first + to].time == time; to++)
			after = list_concat(after, groups[to]->fresh);
		emit_difference(r, time, outputs_kept(groups + from, to - from), after);
		outputs_keep(r->state, groups + from, to - from);
	}
}

/*
 * A wave of linear aggregates (accums.c): each touched group's updates
 * through its states and into its rows, its row formed again from the
 * states against what it kept, at its time.  A group whose inverse
 * transition could not computes its states again from its rows: a
 * partial group's loaded whole (arranged.c), a rowless stage's groups'
 * from the input's contents (rowless.c, one read for the wave's groups
 * of a time).
 */
static void
run_wave_linear(ReduceRound *r, Touch *touches, int first, int last)
{
	bool		rescan = false;

	for (int i = first; i < last; i++)
	{
		ViewGroup  *group = touches[i].group;

		if (accums_update(r, group, touches[i].first, touches[i].last))
			;
		else if (r->state->rowless)
			rescan = true;
		else if (group->partial)
		{
			/* (its states are computed again from all its rows) */
			arranged_reload(r, group, touches[i].time);
			groups_take_out_shared(r, group, touches[i].first, touches[i].last);
		}
		groups_merge_updates(r, touches[i].first, touches[i].last);
	}
	if (rescan)
		rowless_rescan(r, touches + first, last - first);
	for (int i = first; i < last; i++)
	{
		ViewGroup  *group = touches[i].group;

		accums_output(r, group);
		emit_difference(r, touches[i].time, outputs_kept(&group, 1), group->fresh);
		outputs_keep(r->state, &group, 1);
	}
}

/*
 * A wave of a join linear in each input (delta.c), input by input: the
 * query over the touched groups with the input's additions, then its
 * retractions, in place of its rows (the inputs before it merged, those
 * after it not yet), then the input's updates merged; each group's
 * differences emitted at its time.  Groups keep no output.
 */
static void
run_wave_delta(ReduceRound *r, Touch *touches, int first, int last)
{
	int			n = last - first;
	ViewGroup **groups = palloc(sizeof(ViewGroup *) * n);
	GroupRows  *saved = palloc(sizeof(GroupRows) * n);
	List	  **added = palloc0(sizeof(List *) * n);
	List	  **removed = palloc0(sizeof(List *) * n);

	for (int in = 0; in < r->ninputs; in++)
	{
		for (int sign = 1; sign >= -1; sign -= 2)
		{
			int			ngroups = delta_swap_in(r, touches + first, n, in, sign,
												groups, saved);

			if (ngroups > 0)
				(void) runs_over(r, groups, ngroups);
			delta_swap_out(touches + first, n, in, saved, sign > 0 ? added : removed);
		}
		for (int i = first; i < last; i++)
		{
			int			from;
			int			to;

			delta_input_updates(r, &touches[i], in, &from, &to);
			groups_merge_updates(r, from, to);
		}
	}
	for (int i = 0; i < n; i++)
		emit_difference(r, touches[first + i].time, removed[i], added[i]);
}

/*
 * The groups' rows of the shared inputs loaded at their first touches
 * (arranged.c) are those after them: each such touch's updates of those
 * inputs are taken out again, to leave the rows before it.
 */
static void
undo_first_touches(ReduceRound *r, Touch *touches, int ntouches)
{
	for (int t = 0; t < ntouches; t++)
		if (touches[t].wave == 0)
			groups_take_out_shared(r, touches[t].group, touches[t].first, touches[t].last);
}

/*
 * The round's updates, in time order, into the groups, and the touched
 * groups' output at each time against what they kept: in waves (waves.c),
 * each group's updates at a time put together.
 */
void
steps_run(ReduceRound *r)
{
	ViewGroup **touched = palloc(sizeof(ViewGroup *) * Max(1, r->nupdates));
	Touch	   *touches;
	int			ntouches;

	qsort(r->updates, r->nupdates, sizeof(GroupUpdate), update_time_cmp);
	for (int first = 0, last; first < r->nupdates; first = last)
	{
		for (last = first; last < r->nupdates &&
			 r->updates[last].time == r->updates[first].time; last++)
			;
		(void) groups_sort_updates(r, first, last, touched);
	}
	pfree(touched);
	touches = reduce_touches(r, &ntouches);
	arranged_load(r, touches, ntouches);
	if (r->nloaded > 0)
		undo_first_touches(r, touches, ntouches);
	for (int first = 0, last; first < ntouches; first = last)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		last = reduce_wave_end(r, touches, first, ntouches);
		old = MemoryContextSwitchTo(r->per_step);
		if (r->linear != NULL)
			run_wave_linear(r, touches, first, last);
		else if (r->delta)
			run_wave_delta(r, touches, first, last);
		else
			run_wave(r, touches, first, last);
		MemoryContextSwitchTo(old);
		MemoryContextReset(r->per_step);
	}
	pfree(touches);
}
