/*-------------------------------------------------------------------------
 *
 * operators.c
 *	  What a view's round does in each of its operators, counted as the
 *	  round goes and added to the view's counts in the registry when it
 *	  ends (peek.dataflow_operators), and how far a hydrating round has
 *	  read its inputs (peek.views).  A view has two operators: its inputs
 *	  (their updates read from their shards, and those that pass WHERE:
 *	  input.c) and what it makes of them, a map-project appending each at
 *	  its time (round.c), a reduce or distinct keeping groups, a join (also
 *	  grouped or distinct) keeping each input's rows by its key (reduce.c:
 *	  their bytes are its state), or a UNION ALL of such branches.  The time of the second
 *	  is measured around its work; the input's is the rest of the round's.
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
#include "storage/persist.h"

/* how many rows a hydrating round reads between two showings of progress */
#define PROGRESS_EVERY	1024

enum
{
	OP_INPUT,
	OP_WORK,
	NUM_OPS
};

static struct
{
	PeekObjectId view;
	bool		hydrating;
	int64		input_rows;		/* the input's estimated rows, hydrating */
	instr_time	started;
	OperatorStats ops[NUM_OPS];
}			round_counts;

/*
 * A round of the view begins: a hydrating one shows how many of its
 * inputs' rows (estimated from their shards) it has read.
 */
void
dataflow_counts_begin(PeekObjectId view, List *inputs, bool hydrating)
{
	ListCell   *lc;

	memset(&round_counts, 0, sizeof(round_counts));
	round_counts.view = view;
	round_counts.hydrating = hydrating;
	INSTR_TIME_SET_CURRENT(round_counts.started);
	if (hydrating)
	{
		foreach(lc, inputs)
			round_counts.input_rows += persist_estimate_rows(((CatalogObject *) lfirst(lc))->shard);
		registry_hydration_progress(view, 0, round_counts.input_rows);
	}
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
		round_counts.ops[OP_WORK].rows_in++;
	}
	if (round_counts.hydrating && op->rows_in % PROGRESS_EVERY == 0)
		registry_hydration_progress(round_counts.view, op->rows_in,
									Max(op->rows_in, round_counts.input_rows));
}

/* Updates the view's operator appended to its shard. */
void
dataflow_count_output(int64 n)
{
	round_counts.ops[OP_WORK].rows_out += n;
}

/*
 * The state one of the view's groups tables keeps now (a grouped or
 * joined view's rows by key; a UNION ALL's branches each have their own).
 */
void
dataflow_count_state(int64 bytes)
{
	round_counts.ops[OP_WORK].bytes += bytes;
}

/* The view's operator worked from start until now. */
void
dataflow_count_work(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	round_counts.ops[OP_WORK].time_us += INSTR_TIME_GET_MICROSEC(now);
}

/*
 * The round ended (its work done, not yet committed): its counts go to the
 * view's in the registry, with its operator's kind (from the plan).
 */
void
dataflow_counts_end(ViewPlan *plan)
{
	Query	   *query = plan->query;
	bool		grouped = query->groupClause != NIL || query->hasAggs ||
		query->havingQual != NULL;
	const char *kind = plan->branches != NIL ? "union-all" :
		list_length(plan->inputs) > 1 ? (grouped ? "join-reduce" :
										 query->distinctClause != NIL ? "join-distinct" : "join") :
		!plan->reduces ? "map-project" : grouped ? "reduce" : "distinct";
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, round_counts.started);
	strlcpy(round_counts.ops[OP_INPUT].kind, "input", sizeof(round_counts.ops[OP_INPUT].kind));
	round_counts.ops[OP_INPUT].time_us =
		Max(INSTR_TIME_GET_MICROSEC(now) - round_counts.ops[OP_WORK].time_us, 0);
	strlcpy(round_counts.ops[OP_WORK].kind, kind, sizeof(round_counts.ops[OP_WORK].kind));
	registry_add_operators(round_counts.view, NUM_OPS, round_counts.ops);
	if (round_counts.hydrating)
		registry_hydration_progress(round_counts.view, round_counts.ops[OP_INPUT].rows_in, -1);
}
