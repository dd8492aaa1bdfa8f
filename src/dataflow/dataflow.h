/*-------------------------------------------------------------------------
 *
 * dataflow.h
 *	  Maintained views: a query's plan (plan.c) with the tables in it read
 *	  as their sources (sources.c), the views the maintenance runtime keeps
 *	  current (views.c), one round of one view (round.c), an input's rows
 *	  as rounds read them (input.c), the rounds of a view that groups or
 *	  joins (reduce.c) and what each of a view's operators did
 *	  (operators.c).
 *
 *	  A view is a collection of kind PEEK_KIND_VIEW: its rows live in its
 *	  own shard, appended by the maintenance runtime at its inputs' times,
 *	  so that its upper, since, indexes, peeks and holds are a collection's.
 *	  Each round takes the inputs' updates in [view upper, least input
 *	  upper) (at most DATAFLOW_ROUND_TIMES times of each), runs each
 *	  through the view's filter and map with the same time and diff (or,
 *	  grouped or joined, through its rows by key: what each time changes in
 *	  them), and appends the results with the view's new upper in one
 *	  transaction (a round that finds no updates publishes its upper
 *	  alone: DATAFLOW_IDLE_WRITE_MS); a restart resumes at the durable
 *	  upper.  The first round hydrates the view from its inputs' contents
 *	  at the greatest of their sinces (their bases and their recent updates
 *	  up to it, appended at it, which becomes the view's since).  No input
 *	  compacts to the view's durable upper or past it
 *	  (dataflow_input_hold), so that a round always finds what it reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_DATAFLOW_H
#define PEEK_DATAFLOW_H

#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "portability/instr_time.h"
#include "utils/timestamp.h"

#include "common/backoff.h"
#include "storage/catalog.h"

/* How many of the input's distinct times one round takes at most. */
#define DATAFLOW_ROUND_TIMES	1024

/*
 * The most copies of one row (its count in a group) that a round puts
 * through a path that takes them one by one: the query over a group's
 * rows, a hydration in one run, an aggregate with no combine function.
 * More fail the view at once (55000) rather than run for its round's
 * timeout; linear aggregates with a combine function take any count.
 */
#define DATAFLOW_MAX_ROW_COPIES	1000000

/*
 * A round whose inputs have no updates past the view's upper raises its
 * upper in the registry alone, as an idle source's is: a catalog write
 * would be WAL, which capture publishes as the source's next upper, which
 * makes the view due again, for ever.  The upper is written with the next
 * round that has updates, or by a round at most this often: while a
 * standby streams (it learns uppers by replay only) as often as an idle
 * source's, and otherwise so that the durable upper, where a restart
 * resumes and which holds the inputs' compaction, stays near.
 */
#define DATAFLOW_IDLE_WRITE_MS			1000
#define DATAFLOW_IDLE_WRITE_STANDBY_MS	100

/*
 * A view whose catalog row a user's transaction holds (set_retention,
 * drop_view not yet committed) is passed over by the learning this long,
 * never waited for (round.c's dataflow_learn).
 */
#define DATAFLOW_LEARN_HELD_MS			1000

/*
 * A view's round whose catalog row a user's transaction holds is put off
 * this long, not waited for: the other views' rounds go on meanwhile, and
 * the runtime looks again soon after the transaction ends (round.c's
 * dataflow_round).
 */
#define DATAFLOW_ROUND_HELD_MS			50

/*
 * A round that meets a transient error (a lock not had in time, a full
 * disk, a serialization failure) is retried after a wait that doubles from
 * the first to the last while its rounds keep failing, so that a lasting
 * cause neither spins the runtime nor fills the log.
 */
#define DATAFLOW_RETRY_FIRST_MS			100
#define DATAFLOW_RETRY_LAST_MS			10000

/*
 * A round that runs past its time limit (pg_peek.view_round_timeout) is a
 * resource condition, not a wrong query (a rebuild over a big input under
 * load, a slow function): the view is not failed but retried once as long
 * as that limit has passed again, with the limit doubled, up to this many
 * doublings (16 times the setting), and from then on at that limit.
 */
#define DATAFLOW_TIMEOUT_DOUBLINGS		4

/* One input of a view's query: a peek.persist_peek in its FROM (plan.c). */
typedef struct ViewPlanInput
{
	char	   *name;			/* the collection or view it reads; NULL: the
								 * stage before's rows */
	Oid			row_type;		/* the row type it reads it as (RECORDOID: the
								 * stage before's anonymous record) */
	Index		rtindex;		/* its entry in the query's range table */
	int			object;			/* its place in the branch's inputs (the
								 * objects a round reads); -1: the stage
								 * before's rows */
	List	   *keys;			/* Expr over it: its rows' key (reduce.c) */
} ViewPlanInput;

/*
 * A view's query, analyzed and checked (plan.c): one SELECT over its
 * inputs, or a UNION ALL of such SELECTs (branches).
 */
typedef struct ViewPlan
{
	List	   *inputs;			/* ViewPlanInput, in range table order */
	List	   *targetlist;		/* TargetEntry: the view's columns */
	Node	   *qual;			/* one input's WHERE, as it is read, or NULL */
	bool		reduces;		/* grouped, DISTINCT or a join: reduce.c runs it */
	const char *kind;			/* its operator's (peek.dataflow_operators) */
	List	   *stages;			/* ViewPlan: its stages, each fed by the one
								 * before's differences (the first reads its
								 * inputs, the last's select list is its); NIL:
								 * it is one */
	List	   *key_eqops;		/* OID: the equality telling keys apart */
	List	   *key_collations; /* OID: the collation it compares them under */
	List	   *branches;		/* ViewPlan: a UNION ALL's branches, else NIL */
	Query	   *query;			/* a captured table read as its source;
								 * WITH queries and subqueries pulled up */
	Query	   *written;		/* the view's: its query before they were
								 * (its text, its dependencies) */
	struct PlannedStmt *runs_stmt;	/* query over its groups' rows (runs.c),
									 * planned at the first round, kept */
} ViewPlan;

typedef struct ReduceState ReduceState;

/* A round's reading of one input's rows (input.c). */
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
	PeekObjectId *inputs;		/* the objects it reads, each once */
	int			ninputs;
	int64		upper;			/* durable: as last read or written */
	int64		published;		/* >= upper: idle rounds raise it alone */
	TimestampTz written_at;		/* when a round last wrote its upper */
	int			timeouts;		/* its rounds that ran out of time in a row */
	Backoff		retry;			/* not due before then (put off, or retried) */
	TimestampTz learn_at;		/* not learning before then (its row held) */
	bool		learn_timed_out;	/* a learning step ran out of time: no more */
	char	   *query;			/* its plan's text */
	ReduceState **groups;		/* per branch: its rows by key, or NULL */
	int			nbranches;
	bool		input_failed;	/* due: its round fails it, naming the input */
	int64	   *input_uppers;	/* per input: its durable upper, as last seen */
	ViewPlan   *plan;			/* its text planned, kept (views.c), or NULL */
	MemoryContext plan_cxt;		/* the kept plan's */
	Oid			plan_owner;		/* whom it was planned as */
	uint64		plan_generation;	/* the invalidations it saw */
} DataflowView;

/* plan.c */
extern ViewPlan *dataflow_plan(const char *text);
extern int	dataflow_kept_text_settings(const char *search_path);
extern char *dataflow_plan_text(ViewPlan *plan);
extern List *dataflow_plan_branches(ViewPlan *plan);
extern List *dataflow_plan_input_names(ViewPlan *plan);
extern void dataflow_plan_expressions(ViewPlan *plan);

/* expressions.c */
extern void dataflow_check_expressions(Node *exprs);

/* flatten.c */
extern Query *dataflow_flatten(Query *query);
extern const char *dataflow_subquery_not_plain(Query *sub);

/* semijoins.c */
extern Query *dataflow_semijoins(Query *query);
extern Query *dataflow_semijoins_as_sublinks(Query *query);
extern bool dataflow_semijoin_inner(Node *jointree, Index rtindex);

/* stages.c */
extern List *dataflow_plan_columns(List *targetlist);
extern Oid	dataflow_plan_group_keys(Query *query, ViewPlan *plan);
extern void dataflow_refuse(const char *construct) pg_attribute_noreturn();
extern List *dataflow_plan_join_columns(Query *query);
extern ViewPlan *dataflow_plan_join(Query *query, ViewPlan *plan, List *columns);
extern Oid	dataflow_plan_grouping(Query *query, ViewPlan *plan, List *columns);
extern RangeTblEntry *dataflow_stage_rows(List *projected, List **columns);
extern ViewPlanInput *dataflow_stage_rows_input(void);

/* chain.c */
extern List *dataflow_plan_chain(Query *query, ViewPlan *plan, List *outputs);

/* dependencies.c */
extern void dataflow_record_dependencies(Oid relid, ViewPlan *plan);
extern void dataflow_record_dependencies_again(CatalogObject *view, Oid relid);

/* sources.c */
extern Query *dataflow_read_sources(Query *query);

/* float_sums.c */
extern void dataflow_exact_float_sums(Query *query);
extern bool dataflow_exact_float_aggregate(Oid aggfnoid);
extern Query *dataflow_read_tables(Query *query);
extern Oid	dataflow_persist_peek_oid(void);

/* views.c: the maintenance runtime's views */
extern void dataflow_reset(void);
extern int64 dataflow_note_view(CatalogObject *obj);
extern void dataflow_forget(PeekObjectId id);
extern DataflowView *dataflow_view(PeekObjectId id);
extern void dataflow_note_input_upper(PeekObjectId id, int64 upper);
extern ViewPlan *dataflow_view_plan(DataflowView *view, Oid owner);
extern DataflowView *dataflow_next_due_view(PeekObjectId after);
extern long dataflow_wait_ms(void);
extern DataflowView *dataflow_next_learning_view(void);
extern int64 dataflow_input_hold(PeekObjectId input);

/* input.c */
extern void view_input_begin(ViewInput *input, Node *qual, TupleDesc desc);
extern bool view_input_row(ViewInput *input, Datum stored, Datum *row);
extern void view_input_put(ViewInput *input, Datum row);
extern bool view_input_passes(ViewInput *input, Datum row);
extern void view_input_end(ViewInput *input);

/* round.c */
extern bool dataflow_round(DataflowView *view);
extern bool dataflow_round_timer_stop(void);
extern bool dataflow_round_timed_out(PeekObjectId id);
extern bool dataflow_learn(DataflowView *view);

/* operators.c: a round's counts by operator, and a hydration's progress */
extern void dataflow_counts_begin(PeekObjectId view, ViewPlan *plan, List *inputs,
								  bool hydrating);
extern void dataflow_count_stage(int stage);
extern void dataflow_count_input(bool passed);
extern void dataflow_count_output(int64 n);
extern void dataflow_count_work(instr_time start);
extern void dataflow_count_state(int64 bytes);
extern void dataflow_count_shared(int64 bytes);
extern void dataflow_count_learning(bool learning);
extern void dataflow_counts_end(void);

/* hydrate.c */
extern bool dataflow_equal_is_same(Oid type, Oid collation);
extern bool dataflow_hydrates_at_once(ViewPlan *plan);
extern bool dataflow_hydrate_at_once(const char *text, ViewPlan *branch, CatalogObject *v,
									 CatalogObject **in, TupleDesc out_desc, int64 since,
									 int64 next, bool as_base);

/* reduce.c */
extern void dataflow_reduce(ReduceState **groups, const char *text, ViewPlan *plan,
							CatalogObject *v, CatalogObject **in, TupleDesc out_desc,
							int64 start, int64 end, int64 since, bool learn);
extern void dataflow_reduce_free(ReduceState *state);
extern bool dataflow_reduce_learning(ReduceState *groups);
extern bool dataflow_reduce_learn(ReduceState *groups, const char *text, ViewPlan *plan,
								  CatalogObject *v, CatalogObject **in, TupleDesc out_desc,
								  int64 idle_to, bool alone);

#endif							/* PEEK_DATAFLOW_H */
