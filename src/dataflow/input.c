/*-------------------------------------------------------------------------
 *
 * input.c
 *	  A view's input rows as a round reads them: each update as its shard
 *	  stores it, unpacked into the input's row type and put through the
 *	  view's WHERE (a view of one input) by PostgreSQL's expression
 *	  executor, and counted as its input operator's (operators.c).  Both
 *	  kinds of round (round.c's filter and map, reduce.c's rows by key)
 *	  read each input through it, and a later stage of reduce.c the rows
 *	  of the stage before it.
 *
 *	  Must not write: the rounds decide what the rows become.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/makefuncs.h"

#include "common/rows.h"
#include "dataflow/dataflow.h"

void
view_input_begin(ViewInput *input, Node *qual, TupleDesc desc)
{
	input->desc = desc;
	input->template = row_header_template(input->desc);
	input->slot = MakeSingleTupleTableSlot(input->desc, &TTSOpsHeapTuple);
	input->econtext = CreateStandaloneExprContext();
	input->qual = ExecInitQual(qual ? make_ands_implicit((Expr *) qual) : NIL, NULL);
}

/*
 * The stored row in the input slot (and the econtext's scan tuple) as a
 * row of the input's type, in the current memory context: returns whether
 * it passes WHERE.  The caller clears the slot and resets the econtext's
 * per-row memory.
 */
bool
view_input_row(ViewInput *input, Datum stored, Datum *row)
{
	bool		passed;

	*row = row_from_shard(input->desc, input->template, stored);
	passed = view_input_passes(input, *row);
	dataflow_count_input(passed);
	return passed;
}

/*
 * A row of the input's type in the input slot (view_input_put): whether it
 * passes WHERE (a row read back from an arrangement, arranged.c: not
 * counted as an input row).
 */
bool
view_input_passes(ViewInput *input, Datum row)
{
	view_input_put(input, row);
	return ExecQual(input->qual, input->econtext);
}

/*
 * A row of the input's type (a stage's row, reduce.c) in the input slot
 * and as the econtext's scan tuple, as view_input_row leaves it.
 */
void
view_input_put(ViewInput *input, Datum row)
{
	row_tuple(DatumGetHeapTupleHeader(row), &input->tuple);
	ExecStoreHeapTuple(&input->tuple, input->slot, false);
	input->econtext->ecxt_scantuple = input->slot;
}

void
view_input_end(ViewInput *input)
{
	FreeExprContext(input->econtext, true);
	ExecDropSingleTupleTableSlot(input->slot);
}
