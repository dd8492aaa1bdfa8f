/*-------------------------------------------------------------------------
 *
 * outputs.c
 *	  Each group's kept output, for a grouped or joined view's rounds
 *	  (reduce.c): the rows the group last gave, as the images appended
 *	  (numeric 2.5 and 2.50, strings equal under a collation, stay what
 *	  the view holds), against which a step's one run of the query over
 *	  the groups its updates touched is diffed, and which that run's rows
 *	  then replace.  Groups built again (after a restart or a failed
 *	  round) know no output until reduce.c runs the query over them all
 *	  once built (their output being a function of their rows); a
 *	  hydration, and a stage's output that
 *	  rebuilds the next stage's groups, keep every group's.  The kept rows
 *	  are in the groups' memory, counted as their operator's state bytes.
 *
 *	  A row finds its group by key: the query's select list is given its
 *	  first input's key expressions as extra columns (a grouping's keys; a
 *	  join's key of its first input, which no left join NULL-extends),
 *	  looked up in the groups' table; without GROUP BY there is one group.
 *
 *	  Must not change the groups' rows nor run the query (reduce.c does),
 *	  nor touch the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/memutils.h"

#include "dataflow/reduce_internal.h"

/*
 * The query's select list given its first input's keys, to find a row's
 * group: a grouping's keys; a join's key of its first input, which no
 * left join NULL-extends (the first input, or a stage's rows before it,
 * is on the preserved side of every join).  Not the first key of the
 * inputs that is not NULL: a NULL-extended input's key expression need
 * not be NULL (ON a.k = coalesce(b.k, -1)), and a row of the NULL key
 * would be sent to another group.
 */
void
outputs_key_columns(Query *query, ViewPlan *plan)
{
	List	   *keys = linitial_node(ViewPlanInput, plan->inputs)->keys;
	ListCell   *lc;

	foreach(lc, keys)
		query->targetList = lappend(query->targetList,
									makeTargetEntry((Expr *) copyObject(lfirst(lc)),
													list_length(query->targetList) + 1,
													NULL, false));
}

static bool
output_receive(TupleTableSlot *slot, DestReceiver *self)
{
	OutputRows *o = (OutputRows *) self;
	ReduceState *state = o->state;
	int			natts = o->out->tts_tupleDescriptor->natts;
	int			nkeys = state->table == NULL ? 0 : state->key_slot->tts_tupleDescriptor->natts;
	ViewGroup  *group = state->whole;
	MemoryContext old;
	Pointer		row;

	if (slot->tts_tupleDescriptor->natts != natts + nkeys)
		elog(ERROR, "a view's query gives %d columns for its %d and %d keys",
			 slot->tts_tupleDescriptor->natts, natts, nkeys);
	slot_getallattrs(slot);
	if (nkeys > 0)
	{
		TupleTableSlot *key = state->key_slot;
		TupleHashEntry entry;

		ExecClearTuple(key);
		memcpy(key->tts_values, slot->tts_values + natts, sizeof(Datum) * nkeys);
		memcpy(key->tts_isnull, slot->tts_isnull + natts, sizeof(bool) * nkeys);
		ExecStoreVirtualTuple(key);
		entry = LookupTupleHashEntry(state->table, key, NULL, NULL);
		ExecClearTuple(key);
		group = entry != NULL ? entry->additional : NULL;
	}
	if (group == NULL || !group->running)
		elog(ERROR, "a view's output row is of no group its query ran over");
	row = outputs_add(o, group, slot->tts_values, slot->tts_isnull);
	old = MemoryContextSwitchTo(o->cxt);
	o->rows = lappend(o->rows, row);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * An output row of the group, its columns' values given (a run's, or
 * accums.c's), formed as a row of the view's type in o->cxt and added to
 * the group's fresh list.
 */
Pointer
outputs_add(OutputRows *o, ViewGroup *group, Datum *values, bool *nulls)
{
	TupleTableSlot *out = o->out;
	int			natts = out->tts_tupleDescriptor->natts;
	MemoryContext old;
	Pointer		row;

	ExecClearTuple(out);
	memcpy(out->tts_values, values, sizeof(Datum) * natts);
	memcpy(out->tts_isnull, nulls, sizeof(bool) * natts);
	ExecStoreVirtualTuple(out);
	old = MemoryContextSwitchTo(o->cxt);
	row = DatumGetPointer(ExecFetchSlotHeapTupleDatum(out));
	group->fresh = lappend(group->fresh, row);
	MemoryContextSwitchTo(old);
	return row;
}

static void
output_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
output_shutdown(DestReceiver *self)
{
}

static void
output_destroy(DestReceiver *self)
{
}

/* A stage's round receives its query's rows as rows of out_desc. */
void
outputs_begin(ReduceRound *r, TupleDesc out_desc)
{
	r->output.pub.receiveSlot = output_receive;
	r->output.pub.rStartup = output_startup;
	r->output.pub.rShutdown = output_shutdown;
	r->output.pub.rDestroy = output_destroy;
	r->output.pub.mydest = DestNone;
	r->output.out = MakeSingleTupleTableSlot(out_desc, &TTSOpsVirtual);
	r->output.state = r->state;
}

void
outputs_end(ReduceRound *r)
{
	ExecDropSingleTupleTableSlot(r->output.out);
}

/* A group's rows of its last run kept as its output, in place of what it kept. */
static void
output_keep(ReduceState *state, ViewGroup *group)
{
	Size		len = 0;
	char	   *at;
	ListCell   *lc;

	foreach(lc, group->fresh)
		len += MAXALIGN(VARSIZE(lfirst(lc)));
	outputs_forget(group);
	group->noutput = list_length(group->fresh);
	if (len > 0)
	{
		group->output = MemoryContextAllocHuge(state->cxt, len);
		at = group->output;
		foreach(lc, group->fresh)
		{
			memcpy(at, lfirst(lc), VARSIZE(lfirst(lc)));
			at += MAXALIGN(VARSIZE(lfirst(lc)));
		}
	}
	group->fresh = NIL;
}

/* A group's kept output let go (the group is dropped, or its output replaced). */
void
outputs_forget(ViewGroup *group)
{
	if (group->output != NULL)
		pfree(group->output);
	group->output = NULL;
	group->noutput = 0;
}

/* The groups' rows of their last run kept as their output. */
void
outputs_keep(ReduceState *state, ViewGroup **groups, int ngroups)
{
	for (int g = 0; g < ngroups; g++)
		output_keep(state, groups[g]);
}

/*
 * The groups' kept output rows (pointing into what they keep), in the
 * current memory context; each must know its output.
 */
List *
outputs_kept(ViewGroup **groups, int ngroups)
{
	List	   *rows = NIL;

	for (int g = 0; g < ngroups; g++)
	{
		char	   *at = groups[g]->output;

		if (groups[g]->noutput < 0)
			elog(ERROR, "a view's group does not know its output");
		for (int i = 0; i < groups[g]->noutput; i++)
		{
			rows = lappend(rows, at);
			at += MAXALIGN(VARSIZE(at));
		}
	}
	return rows;
}
