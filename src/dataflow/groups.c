/*-------------------------------------------------------------------------
 *
 * groups.c
 *	  A grouped or joined view's groups as a round changes them: a row's
 *	  group found by its key (or made), a round's updates kept with their
 *	  groups, put together by group and merged into each group's rows in
 *	  their images' order (a rowless stage's groups keep none, only one
 *	  row for their key columns: rowless.c), a stage's differences
 *	  emitted (to the view's shard, or to the next stage's updates), and
 *	  the groups a round left without rows forgotten.
 *
 *	  Must not run the query (runs.c, steps.c do) nor touch the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "executor/executor.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "dataflow/reduce_internal.h"

/*
 * The group of the row in the current input's slot, made if it is new
 * (make) or NULL.  A rowless stage's new group is partial, its states
 * those of no rows (rowless.c).
 */
static ViewGroup *
find_group(ReduceRound *r, bool make)
{
	ReduceState *state = r->state;
	TupleHashEntry entry;
	bool		isnew;

	if (state->table == NULL)
		return state->whole;
	ExecProject(r->inputs[r->current].keys);
	entry = LookupTupleHashEntry(state->table, state->key_slot, make ? &isnew : NULL, NULL);
	if (entry == NULL)
		return NULL;
	if (make && isnew)
	{
		ViewGroup  *group = MemoryContextAllocZero(state->cxt,
												   offsetof(ViewGroup, inputs) +
												   sizeof(GroupRows) * state->ninputs);

		group->key = entry->firstTuple;
		group->noutput = state->new_output;
		group->loaded_at = -1;
		entry->additional = group;
		if (state->rowless)
		{
			group->partial = true;
			accums_start(r, group);
		}
	}
	return entry->additional;
}

/* The group of the row in the current input's slot, made if it is new. */
ViewGroup *
groups_find(ReduceRound *r)
{
	return find_group(r, true);
}

/* The group of the row in the current input's slot, or NULL: none has its key. */
ViewGroup *
groups_lookup(ReduceRound *r)
{
	return find_group(r, false);
}

/*
 * Whether a group has no rows of any input (a partial group's rows are
 * only those its round updates, or none: its count of rows tells).
 */
bool
groups_empty(ReduceState *state, ViewGroup *group)
{
	if (group->partial)
		return group->held == 0;
	for (int i = 0; i < state->ninputs; i++)
		if (group->inputs[i].nrows > 0)
			return false;
	return true;
}

/*
 * The first of a group's rows from from on that does not come before the
 * image: galloping from from (1, 2, 4... rows on), then bisecting, so that
 * skipping g rows takes about 2 log2(g) comparisons.
 */
static int
rows_first_not_before(GroupRows *rows, int from, const char *image)
{
	int			lo = from;
	int			hi = from;
	int			step = 1;

	while (hi < rows->nrows &&
		   group_row_image_cmp(DatumGetPointer(rows->rows[hi].row), image) < 0)
	{
		lo = hi + 1;
		hi += step;
		step <<= 1;
	}
	hi = Min(hi, rows->nrows);
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (group_row_image_cmp(DatumGetPointer(rows->rows[mid].row), image) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A group's rows of one input changed by its updates, sorted by row image:
 * merged in one pass, the rows between two updates' places copied at once
 * (found by rows_first_not_before), so a step compares about log2 of the
 * group's size per update and copies the group's row pointers once (a
 * whole input's group of a million rows: 16 MB), and the rows stay in the
 * order of their images, whatever the order they came in.  The executor
 * sees a group's rows in that order, so its output
 * for the group is the same for the same rows (the value a group's key
 * takes among keys equal but not binary-equal, a max among equal values,
 * a float sum's rounding) after the groups are built again.
 */
void
groups_merge(ReduceRound *r, ViewGroup *group, GroupUpdate *updates, int n)
{
	GroupRows  *rows = &group->inputs[updates[0].input];
	/* (a shared input's rows live for the round only: arranged.c) */
	MemoryContext cxt = r->inputs[updates[0].input].read != NULL ? r->rows_cxt : r->state->cxt;
	GroupRow   *merged;
	int			m = 0;
	int			i = 0;
	int			u = 0;

	/* (a rowless stage's group keeps none: its states took them, accums.c) */
	if (r->state->rowless)
	{
		groups_note_emptied(r, group);
		return;
	}
	merged = MemoryContextAlloc(cxt, sizeof(GroupRow) * (rows->nrows + n));
	while (u < n)
	{
		int			skip = rows_first_not_before(rows, i, DatumGetPointer(updates[u].row));
		int			cmp;
		GroupRow	row;
		Datum		image;

		if (skip > i)
			memcpy(merged + m, rows->rows + i, sizeof(GroupRow) * (skip - i));
		m += skip - i;
		i = skip;
		cmp = i == rows->nrows ? 1 :
			group_row_image_cmp(DatumGetPointer(rows->rows[i].row),
								DatumGetPointer(updates[u].row));
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
	if (rows->nrows > i)
		memcpy(merged + m, rows->rows + i, sizeof(GroupRow) * (rows->nrows - i));
	m += rows->nrows - i;
	if (rows->rows != NULL)
		pfree(rows->rows);
	rows->rows = merged;
	rows->nrows = m;
	groups_note_emptied(r, group);
}

/* A keyed group left without rows, in the round's list of emptied groups. */
void
groups_note_emptied(ReduceRound *r, ViewGroup *group)
{
	if (group->key != NULL && !group->emptied && groups_empty(r->state, group))
	{
		MemoryContext old = MemoryContextSwitchTo(r->cxt);

		group->emptied = true;
		r->emptied = lappend(r->emptied, group);
		MemoryContextSwitchTo(old);
	}
}

/*
 * A touch's updates [first, last) of the shared inputs (arranged.c) taken
 * out of its group's rows: loaded at the touch's time, they are then the
 * rows before it.
 */
void
groups_take_out_shared(ReduceRound *r, ViewGroup *group, int first, int last)
{
	for (int from = first, to; from < last; from = to)
	{
		int			input = r->updates[from].input;

		for (to = from; to < last && r->updates[to].input == input; to++)
			;
		if (r->inputs[input].read != NULL)
		{
			GroupUpdate *undo = palloc(sizeof(GroupUpdate) * (to - from));

			for (int u = from; u < to; u++)
			{
				undo[u - from] = r->updates[u];
				undo[u - from].diff = -r->updates[u].diff;
			}
			groups_merge(r, group, undo, to - from);
			pfree(undo);
		}
	}
}

/* The groups still without rows at the round's end are forgotten. */
void
groups_drop_emptied(ReduceRound *r)
{
	ReduceState *state = r->state;
	ListCell   *lc;

	foreach(lc, r->emptied)
	{
		ViewGroup  *group = lfirst(lc);
		TupleHashEntry entry;

		group->emptied = false;
		if (!groups_empty(state, group))
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
		if (state->rowless && group->some_row != (Datum) 0)
			pfree(DatumGetPointer(group->some_row));
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
void
groups_add_update(ReduceRound *r, int64 time, int64 diff, Datum row)
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
	u->group = groups_find(r);
	u->input = r->current;
	/* (a rowless stage's group keeps one of its rows, for its key columns) */
	if (r->state->rowless && u->group->some_row == (Datum) 0)
	{
		MemoryContextSwitchTo(r->state->cxt);
		u->group->some_row = datumCopy(row, false, -1);
	}
	MemoryContextSwitchTo(old);
}

/*
 * One of a stage's differences: appended to the view's shard (the last
 * stage), or an update of the next stage's one input at the same time.
 */
void
groups_emit(ReduceRound *r, int64 time, int64 diff, Datum row)
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
	groups_add_update(next, time, diff, row);
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
}

/* A group's updates by input, then by row image (groups_merge's order). */
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
int
groups_sort_updates(ReduceRound *r, int first, int last, ViewGroup **groups)
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
void
groups_merge_updates(ReduceRound *r, int first, int last)
{
	for (int i = first, end; i < last; i = end)
	{
		for (end = i; end < last && r->updates[end].group == r->updates[i].group &&
			 r->updates[end].input == r->updates[i].input; end++)
			;
		groups_merge(r, r->updates[i].group, r->updates + i, end - i);
	}
}
