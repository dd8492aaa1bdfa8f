/*-------------------------------------------------------------------------
 *
 * reduce.c
 *	  The rounds of a view that groups or joins: GROUP BY with aggregates
 *	  and HAVING, aggregates over the whole input, DISTINCT, or inner and
 *	  left joins (grouped or not).  The inputs' rows are kept by key (a
 *	  grouping's keys; a join's key), in the maintenance runtime's memory
 *	  (an input read from a shared arrangement, arranged.c: only the rows
 *	  of the groups a round touches, for the round):
 *	  each group under its key as the key's own equality and hash tell keys
 *	  apart (PostgreSQL's hash aggregation's table), holding each input's
 *	  distinct rows with that key with their counts, in the order of the
 *	  rows' images (what the query gives for a group depends on its rows
 *	  alone, not on their order).  A group's output rows depend on its rows
 *	  only (plan.c sees to it).  At each of a round's times the view's query
 *	  runs in PostgreSQL's executor over the rows of the groups the time's
 *	  updates touch (each input as unnest of an array of its rows), once
 *	  they apply: what those groups last gave (their kept output,
 *	  outputs.c) is retracted and what they give now is added, at that
 *	  time; groups at different times share one run of the executor
 *	  (waves.c).  So a time costs the size of the groups it touches, never the
 *	  inputs', and every aggregate, min and max included, stays exact
 *	  under deletions.  A view of one input keeps only the rows that pass
 *	  WHERE.  Stages (stages.c, chain.c) feed each
 *	  its differences at a time to the next, its updates at that time.
 *
 *	  The groups hold the inputs' updates before their upper.  They are
 *	  built again from the inputs' contents when they are not known to be
 *	  those at the view's upper (a restart, a failed round, a hydration at
 *	  once), each stage's from what the stage before gives over its rebuilt
 *	  groups (kept as their output); the last's learn theirs in one run.
 *
 *	  Must not touch the catalog (round.c does) nor publish.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "common/int.h"
#include "dataflow/reduce_internal.h"

/* The groups' distinct rows one run of a hydration's query takes at most. */
#define EMIT_ALL_ROWS	(1 << 15)

static ReduceState *
state_create(ViewPlan *plan)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek view groups",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ReduceState *state = palloc0(sizeof(ReduceState));
	List	   *keys = linitial_node(ViewPlanInput, plan->inputs)->keys;
	int			nkeys = list_length(keys);

	state->cxt = cxt;
	state->ninputs = list_length(plan->inputs);
	state->upper = -1;
	state->new_output = -1;
	if (nkeys == 0)
	{
		state->whole = palloc0(offsetof(ViewGroup, inputs) + sizeof(GroupRows) * state->ninputs);
		state->whole->noutput = -1;
	}
	else
	{
		TupleDesc	desc = CreateTemplateTupleDesc(nkeys);
		AttrNumber *columns = palloc(sizeof(AttrNumber) * nkeys);
		Oid		   *eqops = palloc(sizeof(Oid) * nkeys);
		Oid		   *collations = palloc(sizeof(Oid) * nkeys);
		Oid		   *eqfuncs;
		FmgrInfo   *hashfuncs;
		ListCell   *lc;

		foreach(lc, keys)
		{
			Node	   *key = lfirst(lc);
			int			i = foreach_current_index(lc);

			collations[i] = list_nth_oid(plan->key_collations, i);
			TupleDescInitEntry(desc, i + 1, NULL, exprType(key), -1, 0);
			TupleDescInitEntryCollation(desc, i + 1, collations[i]);
			columns[i] = i + 1;
			eqops[i] = list_nth_oid(plan->key_eqops, i);
		}
		execTuplesHashPrepare(nkeys, eqops, &eqfuncs, &hashfuncs);
		state->table = BuildTupleHashTableExt(NULL, desc, nkeys, columns, eqfuncs,
											  hashfuncs, collations, 256, 0, cxt, cxt,
											  AllocSetContextCreate(cxt, "pg_peek view group keys",
																	ALLOCSET_SMALL_SIZES),
											  false);
		state->key_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
		state->found_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	}
	MemoryContextSwitchTo(old);
	return state;
}

/* A view's groups, each of its stages'. */
void
dataflow_reduce_free(ReduceState *state)
{
	while (state != NULL)
	{
		ReduceState *next = state->next;

		MemoryContextDelete(state->cxt);
		state = next;
	}
}

/* The group of the row in the current input's slot, made if it is new. */
static ViewGroup *
group_of(ReduceRound *r)
{
	ReduceState *state = r->state;
	TupleHashEntry entry;
	bool		isnew;

	if (state->table == NULL)
		return state->whole;
	ExecProject(r->inputs[r->current].keys);
	entry = LookupTupleHashEntry(state->table, state->key_slot, &isnew, NULL);
	if (isnew)
	{
		ViewGroup  *group = MemoryContextAllocZero(state->cxt,
												   offsetof(ViewGroup, inputs) +
												   sizeof(GroupRows) * state->ninputs);

		group->key = entry->firstTuple;
		group->noutput = state->new_output;
		group->loaded_at = -1;
		entry->additional = group;
	}
	return entry->additional;
}

/* Whether a group has no rows of any input. */
static bool
group_empty(ReduceState *state, ViewGroup *group)
{
	for (int i = 0; i < state->ninputs; i++)
		if (group->inputs[i].nrows > 0)
			return false;
	return true;
}

/*
 * A group's rows of one input changed by its updates, sorted by row image: merged in
 * one pass, so a step costs the group's size however many updates it has,
 * and the rows stay in the order of their images, whatever the order they
 * came in.  The executor sees a group's rows in that order, so its output
 * for the group is the same for the same rows (the value a group's key
 * takes among keys equal but not binary-equal, a max among equal values,
 * a float sum's rounding) after the groups are built again.
 */
static void
group_merge(ReduceRound *r, ViewGroup *group, GroupUpdate *updates, int n)
{
	GroupRows  *rows = &group->inputs[updates[0].input];
	/* (a shared input's rows live for the round only: arranged.c) */
	MemoryContext cxt = r->inputs[updates[0].input].read != NULL ? r->rows_cxt : r->state->cxt;
	GroupRow   *merged = MemoryContextAlloc(cxt, sizeof(GroupRow) * (rows->nrows + n));
	int			m = 0;
	int			i = 0;
	int			u = 0;

	while (i < rows->nrows || u < n)
	{
		int			cmp = i == rows->nrows ? 1 : u == n ? -1 :
			group_row_image_cmp(DatumGetPointer(rows->rows[i].row),
						  DatumGetPointer(updates[u].row));
		GroupRow	row;
		Datum		image;

		if (cmp < 0)
		{
			merged[m++] = rows->rows[i++];
			continue;
		}
		image = updates[u].row;
		row.row = image;
		row.count = 0;
		if (cmp == 0)
			row = rows->rows[i++];
		for (; u < n && group_row_image_cmp(DatumGetPointer(updates[u].row),
									  DatumGetPointer(image)) == 0; u++)
			if (pg_add_s64_overflow(row.count, updates[u].diff, &row.count))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("a row's count in its group is out of range")));
		if (row.count != 0 && cmp > 0)
		{
			Size		len = VARSIZE(DatumGetPointer(image));

			row.row = PointerGetDatum(MemoryContextAlloc(cxt, len));
			memcpy(DatumGetPointer(row.row), DatumGetPointer(image), len);
		}
		if (row.count != 0)
			merged[m++] = row;
		else if (cmp == 0)
			pfree(DatumGetPointer(row.row));
	}
	if (rows->rows != NULL)
		pfree(rows->rows);
	rows->rows = merged;
	rows->nrows = m;
	if (group->key != NULL && !group->emptied && group_empty(r->state, group))
	{
		MemoryContext old = MemoryContextSwitchTo(r->cxt);

		group->emptied = true;
		r->emptied = lappend(r->emptied, group);
		MemoryContextSwitchTo(old);
	}
}

/* The groups still without rows at the round's end are forgotten. */
static void
drop_emptied(ReduceRound *r)
{
	ReduceState *state = r->state;
	ListCell   *lc;

	foreach(lc, r->emptied)
	{
		ViewGroup  *group = lfirst(lc);
		TupleHashEntry entry;

		group->emptied = false;
		if (!group_empty(state, group))
			continue;
		ExecStoreMinimalTuple(group->key, state->found_slot, false);
		entry = LookupTupleHashEntry(state->table, state->found_slot, NULL, NULL);
		if (entry == NULL || entry->additional != group)
			elog(ERROR, "a view's group is missing from its table");
		tuplehash_delete_item(state->table->hashtab, entry);
		ExecClearTuple(state->found_slot);
		arranged_forget(r, group);
		pfree(group->key);
		outputs_forget(group);
		accums_forget(state, group);
		for (int i = 0; i < state->ninputs; i++)
			if (group->inputs[i].rows != NULL)
				pfree(group->inputs[i].rows);
		pfree(group);
	}
	list_free(r->emptied);
	r->emptied = NIL;
}

/*
 * An update of the current input of the round, its row in the input's
 * slot, kept (a copy in the round's memory) with its group.
 */
static void
add_update(ReduceRound *r, int64 time, int64 diff, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(r->cxt);
	GroupUpdate *u;

	if (r->nupdates == r->room)
	{
		r->room = Max(64, r->room * 2);
		r->updates = r->updates == NULL ? palloc(sizeof(GroupUpdate) * r->room) :
			repalloc(r->updates, sizeof(GroupUpdate) * r->room);
	}
	u = &r->updates[r->nupdates++];
	u->time = time;
	u->diff = diff;
	u->row = datumCopy(row, false, -1);
	u->group = group_of(r);
	u->input = r->current;
	MemoryContextSwitchTo(old);
}

/* An update of the current input read from its shard (the first stage). */
static void
collect_update(int64 time, int64 diff, Datum stored, void *arg)
{
	ReduceRound *r = arg;
	ViewInput  *input = &r->inputs[r->current].input;
	MemoryContext old = MemoryContextSwitchTo(r->per_step);
	Datum		row;

	if (diff != 0 && view_input_row(input, stored, &row))
		add_update(r, time, diff, row);
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->per_step);
}

/*
 * One of a stage's differences: appended to the view's shard (the last
 * stage), or an update of the next stage's one input at the same time.
 */
static void
emit(ReduceRound *r, int64 time, int64 diff, Datum row)
{
	ReduceRound *next = r->next;
	ViewInput  *input;

	dataflow_count_output(1);
	if (next == NULL)
	{
		persist_writer_add(r->writer, time, diff, row);
		return;
	}
	input = &next->inputs[next->current = 0].input;
	view_input_put(input, row);
	add_update(next, time, diff, row);
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
}

static int
update_time_cmp(const void *a, const void *b)
{
	int64		ta = ((const GroupUpdate *) a)->time;
	int64		tb = ((const GroupUpdate *) b)->time;

	return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/* A group's updates by input, then by row image (group_merge's order). */
static inline int
update_row_cmp(const GroupUpdate *ua, const GroupUpdate *ub)
{
	if (ua->input != ub->input)
		return ua->input < ub->input ? -1 : 1;
	return group_row_image_cmp(DatumGetPointer(ua->row), DatumGetPointer(ub->row));
}

/* sort_updates_by_row: by update_row_cmp, inlined (a rebuild sorts every row) */
#define ST_SORT sort_updates_by_row
#define ST_ELEMENT_TYPE GroupUpdate
#define ST_COMPARE(a, b) update_row_cmp(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The updates [first, last) put together by group in the order the groups
 * first come in (a pass counts each group's, one places them), each group's
 * sorted by update_row_cmp: a hydration sorts its groups, not all updates.
 * Their groups, each once, in groups (when not NULL): returns how many.
 */
static int
updates_by_group(ReduceRound *r, int first, int last, ViewGroup **groups)
{
	int			n = last - first;
	ViewGroup **order;
	GroupUpdate *placed;
	int			ngroups = 0;
	int			at = 0;

	order = groups != NULL ? groups : palloc(sizeof(ViewGroup *) * n);
	for (int i = first; i < last; i++)
		if (r->updates[i].group->nupdates++ == 0)
			order[ngroups++] = r->updates[i].group;
	/* each group's count becomes where its updates start */
	for (int g = 0; g < ngroups; g++)
	{
		int			count = order[g]->nupdates;

		order[g]->nupdates = at;
		at += count;
	}
	placed = palloc(sizeof(GroupUpdate) * n);
	for (int i = first; i < last; i++)
		placed[r->updates[i].group->nupdates++] = r->updates[i];
	memcpy(r->updates + first, placed, sizeof(GroupUpdate) * n);
	pfree(placed);
	/* each group's place is now where its updates end */
	at = 0;
	for (int g = 0; g < ngroups; g++)
	{
		int			end = order[g]->nupdates;

		if (end - at > 1)
			sort_updates_by_row(r->updates + first + at, end - at);
		at = end;
		order[g]->nupdates = 0;
	}
	if (groups == NULL)
		pfree(order);
	return ngroups;
}

/* The updates [first, last), put together by group, into their groups. */
static void
merge_updates(ReduceRound *r, int first, int last)
{
	for (int i = first, end; i < last; i = end)
	{
		for (end = i; end < last && r->updates[end].group == r->updates[i].group &&
			 r->updates[end].input == r->updates[i].input; end++)
			;
		group_merge(r, r->updates[i].group, r->updates + i, end - i);
	}
}

/* The round's updates so far into the groups, whatever their times (a rebuild). */
static void
absorb_updates(ReduceRound *r)
{
	(void) updates_by_group(r, 0, r->nupdates, NULL);
	merge_updates(r, 0, r->nupdates);
	r->nupdates = 0;
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
			emit(r, time, -1, PointerGetDatum(list_nth(before, b++)));
		else if (cmp > 0)
			emit(r, time, 1, PointerGetDatum(list_nth(after, a++)));
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
 * The groups built again since they last emitted (which know no output)
 * run over before a step's updates apply to them, and their output kept.
 */
static void
learn_outputs(ReduceRound *r, ViewGroup **groups, int ngroups)
{
	ViewGroup **unknown = palloc(sizeof(ViewGroup *) * Max(1, ngroups));
	int			nunknown = 0;

	for (int g = 0; g < ngroups; g++)
		if (groups[g]->noutput < 0)
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
static void
emit_all(ReduceRound *r, int64 since)
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
			for (int i = 0; i < r->ninputs; i++)
				rows += groups[last]->inputs[i].nrows;
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
		merge_updates(r, touches[i].first, touches[i].last);
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
 * states against what it kept, at its time.
 */
static void
run_wave_linear(ReduceRound *r, Touch *touches, int first, int last)
{
	for (int i = first; i < last; i++)
	{
		ViewGroup  *group = touches[i].group;

		accums_update(r, group, touches[i].first, touches[i].last);
		merge_updates(r, touches[i].first, touches[i].last);
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
			merge_updates(r, from, to);
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
	{
		if (touches[t].wave != 0)
			continue;
		for (int first = touches[t].first, last; first < touches[t].last; first = last)
		{
			int			input = r->updates[first].input;

			for (last = first; last < touches[t].last && r->updates[last].input == input; last++)
				;
			if (r->inputs[input].read != NULL)
			{
				GroupUpdate *undo = palloc(sizeof(GroupUpdate) * (last - first));

				for (int u = first; u < last; u++)
				{
					undo[u - first] = r->updates[u];
					undo[u - first].diff = -r->updates[u].diff;
				}
				group_merge(r, touches[t].group, undo, last - first);
				pfree(undo);
			}
		}
	}
}

/*
 * The round's updates, in time order, into the groups, and the touched
 * groups' output at each time against what they kept: in waves (waves.c),
 * each group's updates at a time put together.
 */
static void
run_steps(ReduceRound *r)
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
		(void) updates_by_group(r, first, last, touched);
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

/*
 * A stage's round begins: its inputs read as desc (NULL: each as its row
 * type; the stage before's anonymous record), its query planned over
 * their rows, its output rows of out_desc.
 */
static void
round_begin(ReduceRound *r, ReduceState *state, ViewPlan *plan, const char *text,
			TupleDesc desc, TupleDesc out_desc)
{
	ListCell   *lc;

	r->state = state;
	r->text = text;
	r->ninputs = list_length(plan->inputs);
	r->inputs = palloc0(sizeof(ReduceInput) * r->ninputs);
	foreach(lc, plan->inputs)
	{
		ViewPlanInput *pin = lfirst(lc);
		ReduceInput *input = &r->inputs[foreach_current_index(lc)];
		List	   *keys = NIL;
		ListCell   *lk;

		view_input_begin(&input->input, plan->qual,
						 pin->name != NULL ? lookup_rowtype_tupdesc_copy(pin->row_type, -1) : desc);
		input->row_type = pin->row_type;
		input->object = pin->object;
		foreach(lk, pin->keys)
			keys = lappend(keys, makeTargetEntry(lfirst(lk), foreach_current_index(lk) + 1,
												 NULL, false));
		if (keys != NIL)
			input->keys = ExecBuildProjectionInfo(keys, input->input.econtext,
												  state->key_slot, NULL, input->input.desc);
	}
	runs_plan(r, plan);
	outputs_begin(r, out_desc);
	r->linear = accums_begin(r, plan);
	r->delta = delta_linear(plan);
	r->cxt = CurrentMemoryContext;
	r->per_step = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view step",
										ALLOCSET_DEFAULT_SIZES);
	r->rows_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view shared rows",
										ALLOCSET_DEFAULT_SIZES);
}

/*
 * A stage's inputs that are objects: their updates in [from, to), from
 * their shards; from 0, their contents at to - 1 (a rebuild), read from
 * their bases when they are at or before it.
 */
static void
read_inputs(ReduceRound *r, CatalogObject **in, int64 from, int64 to)
{
	for (r->current = 0; r->current < r->ninputs; r->current++)
	{
		Oid			shard;

		if (r->inputs[r->current].object < 0)
			continue;
		shard = in[r->inputs[r->current].object]->shard;
		if (from == 0)
			persist_scan_at(shard, to - 1, to, collect_update, r);
		else
			persist_scan_range(shard, from, to, collect_update, r);
	}
}

static void
round_end(ReduceRound *r)
{
	MemoryContextDelete(r->per_step);
	MemoryContextDelete(r->rows_cxt);
	outputs_end(r);
	for (int i = 0; i < r->ninputs; i++)
		view_input_end(&r->inputs[i].input);
}

/*
 * A round of a view that groups or joins (text: its query's; plan: the
 * branch it runs, in: its inputs' objects in its order): the inputs'
 * updates in [start, end) into the view at their times, through each of
 * the branch's stages in turn (a stage's differences at a time are the
 * next's updates at that time; the last's go to the view's shard).
 * since >= 0: the view hydrates, its groups built from the inputs'
 * contents at the since and their output added there.  *groups keeps the
 * stages' rows by key from one round to the next; built again, each
 * stage's are built from what the stage before gives over its own.  Runs
 * as the view's owner in round.c's subtransaction and writes the view's
 * shard; round.c raises its upper.
 */
void
dataflow_reduce(ReduceState **groups, const char *text, ViewPlan *plan, CatalogObject *v,
				CatalogObject **in, TupleDesc out_desc, int64 start, int64 end, int64 since)
{
	List	   *stages = plan->stages != NIL ? plan->stages : list_make1(plan);
	int			nstages = list_length(stages);
	ReduceRound *rounds = palloc0(sizeof(ReduceRound) * nstages);
	ReduceRound *last = &rounds[nstages - 1];
	TupleDesc	desc = NULL;
	SpineRead **reads = palloc(sizeof(SpineRead *) *
							   list_length(((ViewPlan *) linitial(stages))->inputs));
	uint32		shared = arranged_choose(linitial(stages), v, in, start, end, reads);
	bool		rebuild;
	instr_time	work;
	ListCell   *lc;

	if (*groups != NULL &&
		(since >= 0 || (*groups)->upper != start || (*groups)->shared != shared))
	{
		dataflow_reduce_free(*groups);
		*groups = NULL;
	}
	rebuild = *groups == NULL;
	foreach(lc, stages)
	{
		ViewPlan   *stage = lfirst(lc);
		int			i = foreach_current_index(lc);
		ReduceState **state = i == 0 ? groups : &rounds[i - 1].state->next;
		TupleDesc	stage_desc = out_desc;

		if (rebuild)
			*state = state_create(stage);
		else if (*state == NULL)
			elog(ERROR, "a view's stage %d has no groups", i + 1);
		if (i < nstages - 1)
			stage_desc = BlessTupleDesc(ExecTypeFromTL(stage->targetlist));
		round_begin(&rounds[i], *state, stage, text, desc, stage_desc);
		rounds[i].stage = i;
		rounds[i].rows_whole = rebuild;
		if (i == 0)
		{
			(*state)->shared = shared;
			for (int j = 0; j < rounds[i].ninputs; j++)
				rounds[i].inputs[j].read = reads[j];
		}
		if (i > 0)
			rounds[i - 1].next = &rounds[i];
		desc = stage_desc;
	}
	last->writer = persist_writer_open(v->shard);

	/* from here until the round's end the groups match no upper */
	if (rebuild)
	{
		for (int i = 0; i < nstages; i++)
		{
			read_inputs(&rounds[i], in, 0, start);
			if (i > 0)
			{
				/* (what the stage before gives is its output) */
				dataflow_count_stage(i - 1);
				INSTR_TIME_SET_CURRENT(work);
				emit_all(&rounds[i - 1], 0);
				dataflow_count_work(work);
			}
			dataflow_count_stage(i);
			INSTR_TIME_SET_CURRENT(work);
			absorb_updates(&rounds[i]);
			dataflow_count_work(work);
		}
	}
	for (int i = 0; i < nstages; i++)
	{
		rounds[i].state->upper = -1;
		/* (a group new from here on had no rows: its output was none) */
		rounds[i].state->new_output = 0;
	}
	dataflow_count_stage(nstages - 1);
	INSTR_TIME_SET_CURRENT(work);
	if (since >= 0)
		emit_all(last, since);
	else if (rebuild)
		emit_all(last, -1);		/* (once, not at each group's first time) */
	dataflow_count_work(work);
	for (int i = 0; i < nstages; i++)
		read_inputs(&rounds[i], in, start, end);
	for (int i = 0; i < nstages; i++)
	{
		dataflow_count_stage(i);
		INSTR_TIME_SET_CURRENT(work);
		run_steps(&rounds[i]);
		drop_emptied(&rounds[i]);
		arranged_release(&rounds[i]);
		dataflow_count_work(work);
		/* the groups' memory: their rows, keys, table and kept outputs */
		dataflow_count_state((int64) MemoryContextMemAllocated(rounds[i].state->cxt, true));
	}
	for (int i = 0; i < nstages; i++)
		rounds[i].state->upper = end;

	persist_writer_close(last->writer);
	for (int i = 0; i < nstages; i++)
		round_end(&rounds[i]);
}
