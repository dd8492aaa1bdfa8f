/*-------------------------------------------------------------------------
 *
 * reduce.c
 *	  The rounds of a view that groups or joins: GROUP BY with aggregates
 *	  and HAVING, aggregates over the whole input, DISTINCT, or inner and
 *	  left joins (grouped or not).  The inputs' rows are kept by key (a
 *	  grouping's keys; a join's key), in the maintenance runtime's memory
 *	  (an input read from a shared arrangement, arranged.c: only the rows
 *	  of the groups a round touches, for the round; a source's in a stage
 *	  of linear aggregates: none, rowless.c):
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
 *	  time (groups.c keeps the groups' rows, steps.c runs a round's
 *	  steps); groups at different times share
 *	  one run of the executor (waves.c).  So a time costs the size of the groups it touches, never the
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
 *	  A rowless stage's groups are built from one read of its input's
 *	  contents, into their states (rowless.c).
 *	  A view of one stage whose inputs are all read from shared
 *	  arrangements is not built again but starts lazy: its table starts
 *	  empty, and a group it lacks is unknown, not new without rows: the
 *	  round that touches it loads its rows (arranged.c) and learns its
 *	  output from them before its updates (steps.c, accums.c), so a round
 *	  costs the groups it touches from the first on; a stage of linear
 *	  aggregates learns the groups no round touched between rounds
 *	  (learn.c, dataflow_reduce_learn), a step at a time, and is then no
 *	  longer lazy.
 *
 *	  Must not touch the catalog (round.c does) nor publish.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "dataflow/reduce_internal.h"

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
		state->whole->loaded_at = -1;
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

/* An update of the current input read from its shard (the first stage). */
static void
collect_update(int64 time, int64 diff, Datum stored, void *arg)
{
	ReduceRound *r = arg;
	ViewInput  *input = &r->inputs[r->current].input;
	MemoryContext old = MemoryContextSwitchTo(r->per_step);
	Datum		row;

	if (diff != 0 && view_input_row(input, stored, &row))
		groups_add_update(r, time, diff, row);
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->per_step);
}

/* The round's updates so far into the groups, whatever their times (a rebuild). */
static void
absorb_updates(ReduceRound *r)
{
	(void) groups_sort_updates(r, 0, r->nupdates, NULL);
	groups_merge_updates(r, 0, r->nupdates);
	r->nupdates = 0;
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
 * their shards (or as the round already read them, arranged.c); from 0,
 * their contents at to - 1 (a rebuild), read from their bases when they
 * are at or before it.
 */
static void
read_inputs(ReduceRound *r, CatalogObject **in, int64 from, int64 to)
{
	for (r->current = 0; r->current < r->ninputs; r->current++)
	{
		ReduceInput *input = &r->inputs[r->current];
		Oid			shard;

		if (input->object < 0)
			continue;
		shard = in[input->object]->shard;
		if (from == 0)
			persist_scan_at(shard, to - 1, to, collect_update, r);
		else if (input->updates != NULL)
			arranged_replay(input->updates, collect_update, r);
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
	{
		view_input_end(&r->inputs[i].input);
		if (r->inputs[i].updates != NULL)
			MemoryContextDelete(r->inputs[i].updates->cxt);
	}
}

/*
 * Can a stage's groups start lazy instead of built again: the view's only
 * stage, not hydrating, every input read from a shared arrangement?  Its
 * groups then hold no rows between rounds, and a group's rows at its
 * first touch are the arrangements' (arranged_load), so a group the table
 * lacks is learned when touched, not read and run over beforehand.
 */
static bool
starts_lazy(List *stages, uint32 shared, int64 since)
{
	int			ninputs = list_length(((ViewPlan *) linitial(stages))->inputs);

	return since < 0 && list_length(stages) == 1 && ninputs <= 32 &&
		(uint64) shared == ((uint64) 1 << ninputs) - 1;
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
 * stage's are built from what the stage before gives over its own, unless
 * they start lazy (starts_lazy), and then learn their groups between
 * rounds if learn and they can (learn.c).  Runs as the view's owner in
 * round.c's subtransaction and writes the view's shard; round.c raises its
 * upper.
 */
void
dataflow_reduce(ReduceState **groups, const char *text, ViewPlan *plan, CatalogObject *v,
				CatalogObject **in, TupleDesc out_desc, int64 start, int64 end, int64 since,
				bool learn)
{
	List	   *stages = plan->stages != NIL ? plan->stages : list_make1(plan);
	int			nstages = list_length(stages);
	ReduceRound *rounds = palloc0(sizeof(ReduceRound) * nstages);
	ReduceRound *last = &rounds[nstages - 1];
	TupleDesc	desc = NULL;
	int			nfirst = list_length(((ViewPlan *) linitial(stages))->inputs);
	SpineRead **reads = palloc(sizeof(SpineRead *) * nfirst);
	RoundUpdates **updates = palloc(sizeof(RoundUpdates *) * nfirst);
	uint32		shared = arranged_choose(linitial(stages), v, in, start, end, reads, updates);
	bool		rebuild;
	bool		lazy;
	instr_time	work;
	ListCell   *lc;

	/* (a rowless stage's states, which no rows give again, are read again) */
	if (*groups != NULL &&
		(since >= 0 || (*groups)->upper != start || (*groups)->shared != shared ||
		 ((*groups)->rowless && accums_states_full(*groups))))
	{
		dataflow_reduce_free(*groups);
		*groups = NULL;
	}
	lazy = *groups == NULL && starts_lazy(stages, shared, since);
	rebuild = *groups == NULL && !lazy;
	foreach(lc, stages)
	{
		ViewPlan   *stage = lfirst(lc);
		int			i = foreach_current_index(lc);
		ReduceState **state = i == 0 ? groups : &rounds[i - 1].state->next;
		TupleDesc	stage_desc = out_desc;

		if (rebuild || lazy)
		{
			*state = state_create(stage);
			(*state)->lazy = lazy;
		}
		else if (*state == NULL)
			elog(ERROR, "a view's stage %d has no groups", i + 1);
		if (i < nstages - 1)
			stage_desc = BlessTupleDesc(ExecTypeFromTL(stage->targetlist));
		round_begin(&rounds[i], *state, stage, text, desc, stage_desc);
		if (lazy)
			(*state)->learning = learn && learn_possible(&rounds[i]);
		rounds[i].stage = i;
		rounds[i].rows_whole = rebuild;
		if (i == 0)
		{
			(*state)->shared = shared;
			for (int j = 0; j < rounds[i].ninputs; j++)
			{
				rounds[i].inputs[j].read = reads[j];
				rounds[i].inputs[j].updates = updates[j];
				rounds[i].inputs[j].object_in = rounds[i].inputs[j].object >= 0 ?
					in[rounds[i].inputs[j].object] : NULL;
				rounds[i].inputs[j].never_negative = rounds[i].inputs[j].object >= 0 &&
					OidIsValid(in[rounds[i].inputs[j].object]->source);
			}
			if (rebuild)
				(*state)->rowless = nstages == 1 && rowless_possible(&rounds[i], stage);
			else if ((*state)->rowless != (nstages == 1 && rowless_possible(&rounds[i], stage)))
				elog(ERROR, "a view's stage changed whether it keeps its rows");
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
			if (!rounds[i].state->rowless)
				read_inputs(&rounds[i], in, 0, start);
			if (i > 0)
			{
				/* (what the stage before gives is its output) */
				dataflow_count_stage(i - 1);
				INSTR_TIME_SET_CURRENT(work);
				steps_emit_all(&rounds[i - 1], 0);
				dataflow_count_work(work);
			}
			dataflow_count_stage(i);
			INSTR_TIME_SET_CURRENT(work);
			if (rounds[i].state->rowless)
				rowless_build(&rounds[i], start - 1);
			else
				absorb_updates(&rounds[i]);
			dataflow_count_work(work);
		}
	}
	for (int i = 0; i < nstages; i++)
	{
		rounds[i].state->upper = -1;
		/*
		 * (a group new from here on had no rows: its output was none; in a
		 * lazy stage it is unknown)
		 */
		rounds[i].state->new_output = rounds[i].state->lazy ? -1 : 0;
	}
	dataflow_count_stage(nstages - 1);
	INSTR_TIME_SET_CURRENT(work);
	if (since >= 0)
		steps_emit_all(last, since);
	else if (rebuild)
		steps_emit_all(last, -1);		/* (once, not at each group's first time) */
	dataflow_count_work(work);
	for (int i = 0; i < nstages; i++)
		read_inputs(&rounds[i], in, start, end);
	for (int i = 0; i < nstages; i++)
	{
		dataflow_count_stage(i);
		INSTR_TIME_SET_CURRENT(work);
		steps_run(&rounds[i]);
		groups_drop_emptied(&rounds[i]);
		arranged_release(&rounds[i]);
		dataflow_count_work(work);
		/* the groups' memory: their rows, keys, table and kept outputs */
		dataflow_count_state((int64) MemoryContextMemAllocated(rounds[i].state->cxt, true));
		dataflow_count_learning(rounds[i].state->learning);
	}
	for (int i = 0; i < nstages; i++)
		rounds[i].state->upper = end;

	persist_writer_close(last->writer);
	for (int i = 0; i < nstages; i++)
		round_end(&rounds[i]);
}

/* Is the branch's stage learning its groups between rounds (learn.c)? */
bool
dataflow_reduce_learning(ReduceState *groups)
{
	return groups != NULL && groups->learning;
}

/*
 * A step of a lazy stage's learning (learn.c), between rounds (text, plan,
 * v, in and out_desc as for dataflow_reduce): when its shared arrangement
 * holds no update a round has not taken, at or past the groups' upper: it
 * is there, or not past idle_to, before which the inputs have no update
 * past it (the view's idle rounds published it).  A branch of a UNION ALL
 * (not alone) learns at its touches only: its branches count as one
 * operator, whose state a step would not show whole.  The stage stops
 * learning (stays lazy) once its groups take more memory than the
 * arrangement's rows: groups of a few rows each, whose first touches cost
 * little.  Returns whether it has more to learn then.
 */
bool
dataflow_reduce_learn(ReduceState *groups, const char *text, ViewPlan *plan, CatalogObject *v,
					  CatalogObject **in, TupleDesc out_desc, int64 idle_to, bool alone)
{
	ReduceRound r = {0};
	int64		upper;
	SpineRead  *read;
	RoundUpdates *updates;
	MemoryContext old;
	instr_time	work;
	bool		more;

	if (!dataflow_reduce_learning(groups))
		return false;
	if (!alone)
		return groups->learning = false;
	upper = groups->upper;
	if (arranged_choose(plan, v, in, upper, upper, &read, &updates) != groups->shared ||
		read->upper > Max(upper, idle_to))
		return false;
	/* (an error in the step leaves the groups to be built again, not learning) */
	groups->upper = -1;
	groups->learning = false;
	round_begin(&r, groups, plan, text, NULL, out_desc);
	r.inputs[0].read = read;
	r.inputs[0].updates = updates;
	dataflow_count_stage(0);
	INSTR_TIME_SET_CURRENT(work);
	old = MemoryContextSwitchTo(r.per_step);
	more = learn_step(&r, read, upper);
	MemoryContextSwitchTo(old);
	/* (groups of few rows, cheap to learn when touched: not past the rows' bytes) */
	if (MemoryContextMemAllocated(groups->cxt, true) > read->bytes)
		more = groups->learning = false;
	arranged_release(&r);
	dataflow_count_work(work);
	dataflow_count_state((int64) MemoryContextMemAllocated(groups->cxt, true));
	dataflow_count_learning(groups->learning);
	groups->upper = upper;
	round_end(&r);
	return more;
}
