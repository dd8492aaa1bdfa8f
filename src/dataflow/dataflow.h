/*-------------------------------------------------------------------------
 *
 * dataflow.h
 *	  Maintained views: a query's plan (plan.c) with the tables in it read
 *	  as their sources (sources.c), the views the maintenance
 *	  runtime keeps current (views.c), one round of one view (round.c), the
 *	  input's rows as rounds read them (input.c), the rounds of a view
 *	  that groups (reduce.c) and what each of a view's operators did
 *	  (operators.c).
 *
 *	  A view is a collection of kind PEEK_KIND_VIEW: its rows live in its
 *	  own shard, appended by the maintenance runtime at its input's times,
 *	  so that its upper, since, indexes, peeks and holds are a collection's.
 *	  Each round takes the input's updates in [view upper, input upper)
 *	  (at most DATAFLOW_ROUND_TIMES times of them), runs each through the
 *	  view's filter and map with the same time and diff (or, grouped,
 *	  through its groups: what each time changes in them), and appends the
 *	  results with the view's new upper in one transaction; a restart
 *	  resumes at the durable upper.  The first round hydrates the view from
 *	  the input's contents at its since (its base and its recent updates up
 *	  to it, appended at the since, which becomes the view's since).  The
 *	  input never compacts to the view's upper or past it
 *	  (dataflow_input_hold), so that a round always finds what it reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_DATAFLOW_H
#define PEEK_DATAFLOW_H

#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "portability/instr_time.h"

#include "storage/catalog.h"

/* How many of the input's distinct times one round takes at most. */
#define DATAFLOW_ROUND_TIMES	1024

/* A view's query, analyzed and checked (plan.c). */
typedef struct ViewPlan
{
	char	   *input;			/* the collection or view it reads */
	Oid			input_type;		/* the row type it reads the input as */
	List	   *targetlist;		/* TargetEntry: the view's columns */
	Node	   *qual;			/* WHERE, or NULL */
	bool		reduces;		/* grouped or DISTINCT: reduce.c runs it */
	List	   *group_keys;		/* Expr over the input: the groups' keys */
	List	   *group_eqops;	/* OID: the equality telling keys apart */
	Query	   *query;
	Query	   *written;		/* as written: tables, not their sources */
} ViewPlan;

typedef struct ReduceState ReduceState;

/* A round's reading of its input's rows (input.c). */
typedef struct ViewInput
{
	TupleDesc	desc;
	HeapTupleHeader template;
	HeapTupleData tuple;		/* the current row */
	TupleTableSlot *slot;		/* holding it */
	ExprContext *econtext;		/* its scan tuple is the slot */
	ExprState  *qual;			/* WHERE */
} ViewInput;

/* A view the maintenance runtime keeps current (views.c). */
typedef struct DataflowView
{
	PeekObjectId id;			/* key */
	PeekObjectId input;
	Oid			owner;
	int64		upper;			/* durable: as last read or written */
	char	   *query;			/* its plan's text */
	ReduceState *groups;		/* a grouped view's groups, or NULL */
} DataflowView;

/* plan.c */
extern ViewPlan *dataflow_plan(const char *text);
extern char *dataflow_plan_text(ViewPlan *plan);
extern void dataflow_plan_expressions(ViewPlan *plan);

/* sources.c */
extern Query *dataflow_read_sources(Query *query);

/* views.c: the maintenance runtime's views */
extern void dataflow_reset(void);
extern void dataflow_note_view(CatalogObject *obj);
extern void dataflow_forget(PeekObjectId id);
extern List *dataflow_due_views(void);
extern int64 dataflow_input_hold(PeekObjectId input);

/* input.c */
extern void view_input_begin(ViewInput *input, ViewPlan *plan, Oid row_type);
extern bool view_input_row(ViewInput *input, Datum stored, Datum *row);
extern void view_input_end(ViewInput *input);

/* round.c */
extern bool dataflow_round(DataflowView *view);

/* operators.c: a round's counts by operator, and a hydration's progress */
extern void dataflow_counts_begin(PeekObjectId view, CatalogObject *in, bool hydrating);
extern void dataflow_count_input(bool passed);
extern void dataflow_count_output(int64 n);
extern void dataflow_count_work(instr_time start);
extern void dataflow_count_state(int64 bytes);
extern void dataflow_counts_end(ViewPlan *plan);

/* reduce.c */
extern void dataflow_reduce(DataflowView *view, ViewPlan *plan, CatalogObject *v,
							CatalogObject *in, TupleDesc out_desc,
							int64 start, int64 end, int64 since);
extern void dataflow_reduce_free(ReduceState *state);

#endif							/* PEEK_DATAFLOW_H */
