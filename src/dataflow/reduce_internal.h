/*-------------------------------------------------------------------------
 *
 * reduce_internal.h
 *	  What reduce.c (a grouped or joined view's rounds), groups.c (its
 *	  groups as a round changes them), steps.c
 *	  (a round's waves run and their differences emitted), waves.c
 *	  (a round's touches of groups put in waves) and outputs.c (the query
 *	  run over groups, its rows attributed to their groups, each group's
 *	  kept output), accums.c (linear aggregates' states per group),
 *	  arranged.c (shared inputs' rows read from arrangements), learn.c
 *	  (a lazy stage's groups learned between rounds) and rowless.c (a
 *	  stage over a source whose groups keep no rows) share: a
 *	  view's groups, a round's updates and its work in one stage; and
 *	  hydrate.c, which builds those arrangements from its reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_DATAFLOW_REDUCE_INTERNAL_H
#define PEEK_DATAFLOW_REDUCE_INTERNAL_H

#include "executor/executor.h"
#include "tcop/dest.h"

#include "arrange/spine.h"
#include "dataflow/dataflow.h"
#include "storage/persist.h"

/* A distinct row of a group and its count. */
typedef struct GroupRow
{
	Datum		row;			/* of the input's type */
	int64		count;
} GroupRow;

/* A linear aggregate's transition state in a group (accums.c). */
typedef struct AccumValue
{
	Datum		value;
	bool		isnull;
	bool		owned;			/* a by-reference value in the groups' memory */
	int64		count;			/* the rows it aggregates */
	int64		ties;			/* a min's or max's: the copies of its value */
} AccumValue;

/* One input's rows in a group. */
typedef struct GroupRows
{
	GroupRow   *rows;			/* in group_row_image_cmp's order (reduce.c) */
	int			nrows;
} GroupRows;

typedef struct ViewGroup
{
	MinimalTuple key;			/* the table's copy; NULL: the only group */
	bool		emptied;		/* in its round's list of emptied groups */
	bool		running;		/* among the groups the query runs over */
	bool		partial;		/* its shared input's rows are only those its
								 * round updates (arranged.c), or it keeps
								 * none (rowless.c): held counts them all */
	int			nupdates;		/* groups_sort_updates's count, then place */
	int			touches;		/* its touches numbered so far (waves.c) */
	int			noutput;		/* its kept output's rows; -1: not known */
	char	   *output;			/* their images, each MAXALIGNed, or NULL */
	List	   *fresh;			/* a run's rows for it, in the step's memory */
	AccumValue *accums;			/* its linear aggregates' states; NULL: not known */
	int			naccums;
	int64		held;			/* its rows' positive counts summed, known
								 * with its states (accums.c) */
	Datum		some_row;		/* a partial group's: one of its rows, for
								 * its key columns (accums.c); a rowless
								 * stage's copy, in the groups' memory */
	int			loaded_at;		/* its place in the round's loaded groups
								 * (arranged.c), a learning step's (learn.c)
								 * or a read's (rowless.c), or -1 */
	GroupRows	inputs[FLEXIBLE_ARRAY_MEMBER];	/* each input's: a shared
												 * input's in a round only */
} ViewGroup;

struct ReduceState
{
	MemoryContext cxt;			/* all of it */
	int			ninputs;
	int64		upper;			/* holds the updates before it; -1: unknown */
	int			new_output;		/* a new group's noutput: 0, or -1 while
								 * the groups are built again or if lazy */
	bool		lazy;			/* not built: a group absent from the table
								 * is unknown, its rows and output learned
								 * from the shared arrangements when a round
								 * first touches it (reduce.c) */
	bool		learning;		/* lazy, learning its groups between rounds
								 * (learn.c) */
	uint64		learn_from;		/* the least key hash it has not learned
								 * (up to 2^32) */
	bool		learn_passed;	/* a key hash of too many rows passed over:
								 * lazy once learned */
	TupleHashTable table;		/* the groups by key; NULL without GROUP BY */
	ViewGroup  *whole;			/* the only group without GROUP BY */
	TupleTableSlot *key_slot;	/* a row's key, as a round projects it */
	TupleTableSlot *found_slot; /* a group's stored key, to find it again */
	MemoryContext states;		/* linear aggregates' internal states, or NULL */
	int64		states_garbage; /* internal states let go in it since its reset */
	uint32		shared;			/* the inputs whose rows are read from
								 * arrangements (arranged.c), as a mask */
	bool		rowless;		/* its groups keep no rows, their states
								 * computed from the input's contents when
								 * needed (rowless.c) */
	ReduceState *next;			/* the next stage's, or NULL */
};

/* One of a round's updates, its group found. */
typedef struct GroupUpdate
{
	int64		time;
	int64		diff;
	Datum		row;
	ViewGroup  *group;
	int			input;
} GroupUpdate;

/* The query's output rows, as rows of the view's type, with their groups. */
typedef struct OutputRows
{
	DestReceiver pub;
	TupleTableSlot *out;
	ReduceState *state;			/* whose groups the rows go to */
	MemoryContext cxt;
	List	   *rows;
} OutputRows;

/* An update of an input as its shard stores it. */
typedef struct RoundUpdate
{
	int64		time;
	int64		diff;
	Datum		row;
} RoundUpdate;

/*
 * A shared input's updates in a round's range, read from its shard once
 * (arranged.c): they bring its arrangement up to the round's end and are
 * the round's updates of the input alike.  At most maintenance_work_mem.
 */
typedef struct RoundUpdates
{
	MemoryContext cxt;			/* the updates and their rows */
	RoundUpdate *updates;		/* NULL: past the bound, none kept */
	int64		n;
	int64		room;
	Size		bytes;			/* the updates' and rows' bytes so far */
} RoundUpdates;

/* A round's reading of one input. */
typedef struct ReduceInput
{
	ViewInput	input;
	ProjectionInfo *keys;		/* its rows' key; NULL without GROUP BY */
	Oid			row_type;
	int			object;			/* ViewPlanInput's */
	SpineRead  *read;			/* the arrangement its rows are read from
								 * (arranged.c), or NULL: kept in the groups */
	RoundUpdates *updates;		/* its updates in the round's range, read
								 * once (arranged.c), or NULL: from its shard */
	bool		never_negative; /* a source's: no row's count is ever below
								 * 0, so a row's change is its diffs' sum */
	CatalogObject *object_in;	/* a first stage's: its object, whose
								 * contents a rowless stage reads (rowless.c) */
	bool		exists_only;	/* a semi-join's or anti-join's inner input:
								 * only EXISTS reads its rows, so the query
								 * over them takes each row once whatever its
								 * copies (runs.c) */
} ReduceInput;

/* A round's work in one of the view's stages. */
typedef struct ReduceRound
{
	ReduceState *state;
	ReduceInput *inputs;
	int			ninputs;
	int			current;		/* the input being read */
	int			stage;			/* its place in the view's stages */
	const char *text;
	PlannedStmt *stmt;			/* the query over parameters' rows */
	ParamListInfo params;
	OutputRows	output;
	ShardWriter *writer;		/* the last stage's: the view's shard */
	struct LinearAggs *linear;	/* its aggregates kept per group (accums.c), or
								 * NULL: the query runs over the groups */
	bool		delta;			/* a join linear in each input (delta.c) */
	struct ReduceRound *next;	/* the stage its differences feed, or NULL */
	GroupUpdate *updates;
	int			nupdates;
	int			room;
	List	   *emptied;		/* groups some update left without rows */
	bool		rows_whole;		/* every group holds its shared inputs' rows
								 * (built again this round) */
	ViewGroup **loaded;			/* groups whose shared inputs' rows the round
								 * loaded (NULL entries: freed since) */
	int			nloaded;
	MemoryContext rows_cxt;		/* the shared inputs' rows, for the round */
	MemoryContext cxt;			/* the round's */
	MemoryContext per_step;
} ReduceRound;

/* A group's updates at one time: a round's updates [first, last) (waves.c). */
typedef struct Touch
{
	ViewGroup  *group;
	int64		time;
	int			first;
	int			last;
	int			wave;			/* how many of the group's touches come before */
} Touch;

typedef struct LinearAggs LinearAggs;

/* Row images' order (a group's rows, its updates at a time): length, then bytes. */
static inline int
group_row_image_cmp(const char *ra, const char *rb)
{
	Size		la = VARSIZE(ra);
	Size		lb = VARSIZE(rb);

	if (la != lb)
		return la < lb ? -1 : 1;
	return memcmp(ra, rb, la);
}

/* arranged.c */
extern uint32 arranged_choose(ViewPlan *plan, CatalogObject *v, CatalogObject **in,
							  int64 start, int64 end, SpineRead **reads,
							  RoundUpdates **updates);
extern void arranged_replay(RoundUpdates *updates, SpineUpdateFn fn, void *arg);
extern SpineHydration *arranged_hydration_begin(ViewPlan *branch, CatalogObject *v,
												CatalogObject **in, int object, int64 at);
extern void arranged_load(ReduceRound *r, Touch *touches, int ntouches);
extern void arranged_reload(ReduceRound *r, ViewGroup *group, int64 time);
extern void arranged_forget(ReduceRound *r, ViewGroup *group);
extern void arranged_release(ReduceRound *r);

/* learn.c */
extern bool learn_possible(ReduceRound *r);
extern bool learn_step(ReduceRound *r, SpineRead *read, int64 upper);

/* rowless.c */
extern bool rowless_possible(ReduceRound *r, ViewPlan *plan);
extern void rowless_build(ReduceRound *r, int64 at);
extern void rowless_rescan(ReduceRound *r, Touch *touches, int ntouches);

/* groups.c */
extern ViewGroup *groups_find(ReduceRound *r);
extern ViewGroup *groups_lookup(ReduceRound *r);
extern void groups_note_emptied(ReduceRound *r, ViewGroup *group);
extern void groups_add_update(ReduceRound *r, int64 time, int64 diff, Datum row);
extern void groups_merge(ReduceRound *r, ViewGroup *group, GroupUpdate *updates, int n);
extern void groups_take_out_shared(ReduceRound *r, ViewGroup *group, int first, int last);
extern int	groups_sort_updates(ReduceRound *r, int first, int last, ViewGroup **groups);
extern void groups_merge_updates(ReduceRound *r, int first, int last);
extern void groups_emit(ReduceRound *r, int64 time, int64 diff, Datum row);
extern void groups_drop_emptied(ReduceRound *r);
extern bool groups_empty(ReduceState *state, ViewGroup *group);

/* steps.c */
extern void steps_run(ReduceRound *r);
extern void steps_emit_all(ReduceRound *r, int64 since);

/* runs.c */
extern void runs_plan(ReduceRound *r, ViewPlan *plan);
extern List *runs_over(ReduceRound *r, ViewGroup **groups, int ngroups);

/* delta.c */
extern bool delta_linear(ViewPlan *plan);
extern void delta_input_updates(ReduceRound *r, Touch *t, int input, int *from, int *to);
extern int	delta_swap_in(ReduceRound *r, Touch *touches, int ntouches, int input, int sign,
						  ViewGroup **groups, GroupRows *saved);
extern void delta_swap_out(Touch *touches, int ntouches, int input, GroupRows *saved,
						   List **lists);

/* accums.c */
extern LinearAggs *accums_begin(ReduceRound *r, ViewPlan *plan);
extern bool accums_partial(ReduceRound *r, ViewGroup *group);
extern void accums_start(ReduceRound *r, ViewGroup *group);
extern void accums_add_row(ReduceRound *r, ViewGroup *group, Datum row, int64 count);
extern bool accums_update(ReduceRound *r, ViewGroup *group, int first, int last);
extern void accums_output(ReduceRound *r, ViewGroup *group);
extern void accums_forget(ReduceState *state, ViewGroup *group);
extern bool accums_states_full(ReduceState *state);

/* The functions a group keeps an aggregate's states with (accums_functions.c) */
typedef struct AccumFunctions
{
	Oid			transfn;
	Oid			invfn;			/* its moving states' inverse transition, or */
	Oid			sortop;			/* min's <, max's >: it keeps the first value */
	Oid			finalfn;
	Oid			combinefn;		/* InvalidOid: none */
	Oid			transtype;
	bool		initnull;
	char	   *initval;		/* its text, if not initnull */
} AccumFunctions;

/* accums_functions.c */
extern bool accums_functions(Aggref *aggref, AccumFunctions *fns);

/* accums_keys.c */
extern bool accums_keys_in_any_row(ViewPlan *plan, List *columns, Node *having);

/* waves.c */
extern Touch *reduce_touches(ReduceRound *r, int *ntouches);
extern int	reduce_wave_end(ReduceRound *r, Touch *touches, int first, int ntouches);

/* outputs.c */
extern void outputs_key_columns(Query *query, ViewPlan *plan);
extern void outputs_begin(ReduceRound *r, TupleDesc out_desc);
extern void outputs_end(ReduceRound *r);
extern Pointer outputs_add(OutputRows *o, ViewGroup *group, Datum *values, bool *nulls);
extern void outputs_keep(ReduceState *state, ViewGroup **groups, int ngroups);
extern List *outputs_kept(ViewGroup **groups, int ngroups);
extern void outputs_forget(ViewGroup *group);

#endif							/* PEEK_DATAFLOW_REDUCE_INTERNAL_H */
