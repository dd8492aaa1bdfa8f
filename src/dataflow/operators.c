/*-------------------------------------------------------------------------
 *
 * operators.c
 *	  What a view's round does in each of its operators, counted as the
 *	  round goes and added to the view's counts in the registry when it
 *	  ends (peek.dataflow_operators), and how far a hydrating round has
 *	  read its inputs (peek.views).  A view's first operator is its inputs
 *	  (their updates read from their shards, and those that pass WHERE:
 *	  input.c); then come its stages (a lazy one's learning steps count
 *	  in it, and whether it is learning its groups, learn.c), each of the
 *	  kind plan.c gave it: a map-project appending each at its time
 *	  (round.c), a reduce or distinct keeping groups, a join (also
 *	  grouped or distinct) keeping each input's rows by its key (reduce.c:
 *	  their bytes are its state),
 *	  a join's stage feeding a reduce or distinct stage that groups its
 *	  rows by other keys, or one UNION ALL of such branches.  A stage's
 *	  time is measured around its work; the inputs' is the rest of the
 *	  round's.
 *	  Counts are of work done: a round that does not commit, and the groups
 *	  built again from the input, count too.  One round runs at a time in
 *	  the maintenance runtime: its counts are this file's.
 *
 *	  Must not decide anything: the rounds count, the registry shows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"

#include "dataflow/dataflow.h"
#include "ipc/registry.h"
#include "ipc/registry_progress.h"
#include "storage/persist.h"

/* how many rows a hydrating round reads between two showings of progress */
#define PROGRESS_EVERY	1024

/* ops[0]: the inputs; then the view's stages (one for a UNION ALL) */
#define OP_INPUT	0

/* An operator's kind when it reads a shared arrangement. */
#define SHARED_NOTE	", shared arrangement"

static struct
{
	PeekObjectId view;
	bool		hydrating;
	bool		branches;		/* a UNION ALL's */
	int64		input_rows;		/* the input's estimated rows, hydrating */
	instr_time	started;
	int			nops;
	int			current;		/* the stage working now */
	OperatorStats ops[PEEK_MAX_OPERATORS];
}			round_counts;

/*
 * A round of the view begins: its operators named by the plan's kinds (a
 * stage's each; a UNION ALL's branches count as one), and a hydrating one
 * shows how many of its inputs' rows (estimated from their shards) it has
 * read.
 */
void
dataflow_counts_begin(PeekObjectId view, ViewPlan *plan, List *inputs, bool hydrating)
{
	List	   *stages = plan->stages != NIL ? plan->stages : list_make1(plan);
	ListCell   *lc;

	memset(&round_counts, 0, sizeof(round_counts));
	round_counts.view = view;
	round_counts.hydrating = hydrating;
	round_counts.branches = plan->branches != NIL;
	round_counts.nops = 1 + (plan->branches != NIL ? 1 : list_length(stages));
	round_counts.current = 1;
	if (round_counts.nops > PEEK_MAX_OPERATORS)
		elog(ERROR, "a view has more than %d operators", PEEK_MAX_OPERATORS);
	strlcpy(round_counts.ops[OP_INPUT].kind, "input", sizeof(round_counts.ops[OP_INPUT].kind));
	if (plan->branches != NIL)
		strlcpy(round_counts.ops[1].kind, plan->kind, sizeof(round_counts.ops[1].kind));
	else
		foreach(lc, stages)
			strlcpy(round_counts.ops[1 + foreach_current_index(lc)].kind,
					((ViewPlan *) lfirst(lc))->kind, sizeof(round_counts.ops[0].kind));
	INSTR_TIME_SET_CURRENT(round_counts.started);
	if (hydrating)
	{
		foreach(lc, inputs)
			round_counts.input_rows += persist_estimate_rows(((CatalogObject *) lfirst(lc))->shard);
		registry_hydration_progress(view, 0, round_counts.input_rows);
	}
}

/* The view's stage (from 0) that works from now on, and counts. */
void
dataflow_count_stage(int stage)
{
	round_counts.current = Min(1 + stage, round_counts.nops - 1);
}

/* One of the input's updates read (and whether it passed WHERE). */
void
dataflow_count_input(bool passed)
{
	OperatorStats *op = &round_counts.ops[OP_INPUT];

	op->rows_in++;
	if (passed)
	{
		op->rows_out++;
		round_counts.ops[1].rows_in++;
	}
	if (round_counts.hydrating && op->rows_in % PROGRESS_EVERY == 0)
		registry_hydration_progress(round_counts.view, op->rows_in,
									Max(op->rows_in, round_counts.input_rows));
}

/* Updates the working stage emitted (the last: appended to the view's shard). */
void
dataflow_count_output(int64 n)
{
	round_counts.ops[round_counts.current].rows_out += n;
}

/*
 * The state one of the working stage's groups tables keeps now (a grouped
 * or joined view's rows by key; a UNION ALL's branches each have their
 * own).
 */
void
dataflow_count_state(int64 bytes)
{
	round_counts.ops[round_counts.current].bytes += bytes;
}

/*
 * Whether the working stage learns its groups between rounds (learn.c;
 * a UNION ALL's branches learn at their touches only, reduce.c).
 */
void
dataflow_count_learning(bool learning)
{
	round_counts.ops[round_counts.current].learning = learning && !round_counts.branches;
}

/*
 * The bytes of an arrangement a stage reads its input's rows from, shared
 * with the indexes and views on the same collection and key: counted as
 * its state, its kind saying so.
 */
void
dataflow_count_shared(int64 bytes)
{
	OperatorStats *op = &round_counts.ops[round_counts.current];

	op->bytes += bytes;
	if (strstr(op->kind, SHARED_NOTE) == NULL)
		strlcat(op->kind, SHARED_NOTE, sizeof(op->kind));
}

/* The working stage worked from start until now. */
void
dataflow_count_work(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	round_counts.ops[round_counts.current].time_us += INSTR_TIME_GET_MICROSEC(now);
}

/*
 * The round ended (its work done, not yet committed): its counts go to the
 * view's in the registry.  A stage reads what the one before emitted; the
 * inputs' time is the round's less its stages'.
 */
void
dataflow_counts_end(void)
{
	instr_time	now;
	int64		work = 0;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, round_counts.started);
	for (int i = 1; i < round_counts.nops; i++)
	{
		if (i > 1)
			round_counts.ops[i].rows_in = round_counts.ops[i - 1].rows_out;
		work += round_counts.ops[i].time_us;
	}
	round_counts.ops[OP_INPUT].time_us = Max(INSTR_TIME_GET_MICROSEC(now) - work, 0);
	registry_add_operators(round_counts.view, round_counts.nops, round_counts.ops);
	if (round_counts.hydrating)
		registry_hydration_progress(round_counts.view, round_counts.ops[OP_INPUT].rows_in, -1);
}
