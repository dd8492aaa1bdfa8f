/*-------------------------------------------------------------------------
 *
 * round.c
 *	  One round of one maintained view, in the maintenance runtime's
 *	  transaction (a subtransaction of its own: an error fails the view
 *	  alone).  Reads the view's and its inputs' frontiers (end: the least
 *	  of the inputs' uppers, each the greater of its catalog row's and the
 *	  one this runtime published: a source's upper moves on in the catalog
 *	  only with its changes), takes an input's updates in [view upper,
 *	  end) from its shard, evaluates the view's WHERE and select list over
 *	  each with PostgreSQL's expression executor, as the view's owner (who
 *	  must still have the right to read every input), and appends each
 *	  result at the same time with the same diff to the view's shard (a
 *	  view that groups or joins goes through reduce.c instead; each branch
 *	  of a UNION ALL goes its own way into the same shard), with the view's
 *	  upper raised to end, all in the caller's transaction; a round whose
 *	  inputs have no updates past the view's upper raises it in memory
 *	  alone, to be published (idle_round).  The first
 *	  round hydrates: it reads the inputs' contents at the time it
 *	  hydrates at (hydration_time: their bases' when their sinces allow),
 *	  which lands there, and folds that into the view's base, its since.
 *	  A view whose input's since passed its upper (a source loaded again)
 *	  hydrates again the same way, its old contents retracted there.
 *	  Each round's work is counted by operator
 *	  (operators.c); a round that runs past its limit
 *	  (pg_peek.view_round_timeout, doubled after each timeout) is
 *	  cancelled and the view retried later (dataflow_round_timed_out); one
 *	  that goes on when cancelled ends the runtime, and the view fails when
 *	  it starts again.  One whose row a user's transaction holds is put off
 *	  a little, not waited for, and one that met a transient error retried
 *	  after a wait that doubles (dataflow_round, the view's Backoff:
 *	  common/backoff.c).  A step of a lazy view's learning of its groups
 *	  between rounds (dataflow_learn, learn.c) runs as a round would, as
 *	  its owner, when its groups are at its upper, within the same limit:
 *	  one that runs past it is cancelled and the view learns no more.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#include "common/rows.h"
#include "common/settings.h"
#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "ipc/registry.h"
#include "ipc/registry_progress.h"
#include "ipc/runtime_slots.h"
#include "storage/catalog.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

/* A round's evaluation of the view's operators over its input's rows. */
typedef struct RoundEval
{
	ViewInput	input;
	ProjectionInfo *project;
	ShardWriter *writer;
	int64		since;			/* earlier times land here (hydration) */
	MemoryContext per_row;
} RoundEval;

/* One of the input's updates through the view's filter and map. */
static void
eval_update(int64 time, int64 diff, Datum stored, void *arg)
{
	RoundEval  *e = arg;
	MemoryContext old;
	Datum		row;

	if (diff == 0)
		return;					/* a base row's zero part (persist.h) */
	old = MemoryContextSwitchTo(e->per_row);
	if (view_input_row(&e->input, stored, &row))
	{
		instr_time	start;
		TupleTableSlot *out;

		INSTR_TIME_SET_CURRENT(start);
		out = ExecProject(e->project);
		persist_writer_add(e->writer, Max(time, e->since), diff,
						   ExecFetchSlotHeapTupleDatum(out));
		dataflow_count_output(1);
		dataflow_count_work(start);
	}
	ExecClearTuple(e->input.slot);
	ResetExprContext(e->input.econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(e->per_row);
}

/*
 * A round's time limit, pg_peek.view_round_timeout: the maintenance
 * runtime's other objects wait while a view's round runs (a slow function
 * in its query, a huge hydration or rebuild), so one that runs longer is
 * cancelled as a statement is (dataflow_round_timer_stop tells object_work
 * it was the limit, not a cancel to retry at once).  Running out of time is
 * a resource condition, not a wrong query: the view is retried once the
 * limit has passed again (the others run meanwhile), with the limit doubled
 * (dataflow_round_timed_out), so that a round that needs longer under load
 * gets it.  A round that goes on when cancelled (a function that catches
 * query_canceled and loops) is ended as the runtime is by SIGTERM once the
 * limit has passed again (looked at again each limit while the cancel is
 * not yet acted on: a runtime not scheduled meanwhile takes it late, and
 * the round ends then), and the view named in the runtime's slot, so
 * that the runtime started again fails it (round_outlived_cancel) rather
 * than run it again: that is the query's doing.  A step of a view's
 * learning (dataflow_learn) runs under the same limit, as its owner's
 * functions could make it as long as a round (one whose cost depends on
 * what they read, or on the clock); one that runs out stops the view's
 * learning, not its rounds (its groups are learned when first touched).
 */
static TimeoutId round_timeout = MAX_TIMEOUTS;
static TimeoutId round_kill = MAX_TIMEOUTS;
static volatile sig_atomic_t round_timed_out = false;
static PeekObjectId round_view = 0;
static bool round_learning = false;	/* the timer is a learning step's */
static int	round_limit_ms = 0;

/* A view's round's limit: the setting, doubled for each timeout in a row. */
static int
round_limit(DataflowView *view)
{
	int64		limit = (int64) setting_view_round_timeout_ms <<
		Min(view->timeouts, DATAFLOW_TIMEOUT_DOUBLINGS);

	return (int) Min(limit, INT_MAX);
}

static void
round_timeout_handler(void)
{
	round_timed_out = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

static void
round_kill_handler(void)
{
	/*
	 * The cancel not yet acted on (the runtime was not scheduled, or is in
	 * code that checks for no interrupt): its next check ends the round, so
	 * it did not go on when cancelled.  Looked at again a limit later.
	 */
	if (!round_timed_out || QueryCancelPending)
		return;
	pg_atomic_write_u64(&runtime_slot(PEEK_RUNTIME_MAINTENANCE)->stuck_view, (uint64) round_view);
	ProcDiePending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

static void
round_timer_start(DataflowView *view, bool learning)
{
	if (setting_view_round_timeout_ms <= 0)
		return;
	if (round_timeout == MAX_TIMEOUTS)
	{
		round_timeout = RegisterTimeout(USER_TIMEOUT, round_timeout_handler);
		round_kill = RegisterTimeout(USER_TIMEOUT, round_kill_handler);
	}
	round_timed_out = false;
	round_view = view->id;
	round_learning = learning;
	round_limit_ms = round_limit(view);
	enable_timeout_after(round_timeout, round_limit_ms);
	enable_timeout_every(round_kill,
						 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													 (int64) round_limit_ms * 2),
						 round_limit_ms);
}

/*
 * Whether a view's round outlived its cancel before the runtime's last
 * exit (the slot forgets it: were failing the view to fail, its next
 * round would be ended again).
 */
static bool
round_outlived_cancel(PeekObjectId view)
{
	uint64		expected = (uint64) view;

	return pg_atomic_compare_exchange_u64(&runtime_slot(PEEK_RUNTIME_MAINTENANCE)->stuck_view,
										  &expected, 0);
}

/* The round's timer stopped; whether it ran out. */
bool
dataflow_round_timer_stop(void)
{
	bool		timed_out = round_timed_out;

	if (round_timeout != MAX_TIMEOUTS)
	{
		disable_timeout(round_timeout, false);
		disable_timeout(round_kill, false);
	}
	if (timed_out)
		QueryCancelPending = false; /* (ours: not acted on if the round ended) */
	round_timed_out = false;
	return timed_out;
}

/*
 * A view's round ran out of time (its subtransaction rolled back): it is
 * due again once as long has passed (the runtime's other work runs
 * meanwhile, and a view whose rounds keep running out takes at most about
 * half of the runtime's time), with its limit doubled.  A learning step
 * that ran out stops the view's learning instead (its rounds, within
 * their limit, learn its groups when they touch them), its rounds left as
 * they were.  Returns false if the runtime keeps no such view (dropped
 * meanwhile).
 */
bool
dataflow_round_timed_out(PeekObjectId id)
{
	DataflowView *view = dataflow_view(id);

	if (view == NULL)
		return false;
	if (round_learning)
	{
		view->learn_timed_out = true;
		ereport(LOG,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("pg_peek view " INT64_FORMAT " stops learning its groups between rounds: a step ran longer than its limit (%d ms, from pg_peek.view_round_timeout)",
						id, round_limit_ms),
				 errdetail("Its rounds learn its groups when they first touch them.")));
		return true;
	}
	view->timeouts = Min(view->timeouts + 1, DATAFLOW_TIMEOUT_DOUBLINGS);
	backoff_put_off(&view->retry, round_limit_ms, GetCurrentTimestamp());
	registry_round_timeouts(id, view->timeouts, round_limit(view));
	ereport(LOG,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("pg_peek view " INT64_FORMAT " will be retried: its round ran longer than its limit (%d ms, from pg_peek.view_round_timeout)",
					id, round_limit_ms),
			 errdetail("It runs again in %d ms with a limit of %d ms.",
					   round_limit_ms, round_limit(view))));
	return true;
}

/*
 * The view's plan, as the owner the round runs as (kept from an earlier
 * round if nothing changed since, dataflow_view_plan), checked against
 * what the view was made with: its inputs' row types and its own columns.
 * branch_inputs gets, for each branch, its inputs' objects in its order.
 */
static ViewPlan *
replan(DataflowView *view, CatalogObject *v, List *inputs, TupleDesc out_desc,
	   List **branch_inputs)
{
	ViewPlan   *plan = dataflow_view_plan(view, GetUserId());
	ListCell   *lb;

	*branch_inputs = NIL;
	foreach(lb, dataflow_plan_branches(plan))
	{
		ViewPlan   *branch = lfirst(lb);
		CatalogObject **objects = palloc(sizeof(CatalogObject *) * list_length(branch->inputs));
		int			natts = 0;
		ListCell   *lc;

		foreach(lc, branch->inputs)
		{
			ViewPlanInput *input = lfirst(lc);
			CatalogObject *in = NULL;
			ListCell   *lo;

			foreach(lo, inputs)
				if (strcmp(((CatalogObject *) lfirst(lo))->name, input->name) == 0)
					in = lfirst(lo);
			if (in == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("its query reads \"%s\", which is not one of its inputs", input->name)));
			if (input->row_type != in->row_type)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("its query reads \"%s\" as %s, but it holds rows of type %s",
								in->name, format_type_be(input->row_type),
								format_type_be(in->row_type))));
			objects[foreach_current_index(lc)] = in;
		}
		*branch_inputs = lappend(*branch_inputs, objects);
		for (int i = 0; i < out_desc->natts; i++)
			if (!TupleDescAttr(out_desc, i)->attisdropped)
				natts++;
		foreach(lc, branch->targetlist)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			Form_pg_attribute att = tle->resno <= out_desc->natts ?
				TupleDescAttr(out_desc, tle->resno - 1) : NULL;

			if (att == NULL || att->attisdropped ||
				att->atttypid != exprType((Node *) tle->expr))
				natts = -1;
		}
		if (natts != list_length(branch->targetlist))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("its query's columns no longer match its row type %s",
							format_type_be(v->row_type))));
	}
	return plan;
}

/*
 * Take the input's updates in [lower, end) through the plan into the view;
 * hydrating (since >= 0), its contents at the since there and its updates
 * after it.
 */
static void
run_plan(ViewPlan *plan, CatalogObject *v, CatalogObject *in, TupleDesc out_desc,
		 int64 lower, int64 end, int64 since)
{
	RoundEval	e;
	TupleTableSlot *out_slot = MakeSingleTupleTableSlot(out_desc, &TTSOpsVirtual);

	view_input_begin(&e.input, plan->qual, row_desc(in->row_type));
	e.project = ExecBuildProjectionInfo(plan->targetlist, e.input.econtext, out_slot, NULL,
										e.input.desc);
	e.since = since;
	e.per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view round",
									  ALLOCSET_DEFAULT_SIZES);
	e.writer = persist_writer_open(v->shard);
	if (since >= 0)
		persist_scan_at(in->shard, since, end, eval_update, &e);
	else
		persist_scan_range(in->shard, lower, end, eval_update, &e);
	persist_writer_close(e.writer);
	MemoryContextDelete(e.per_row);
	view_input_end(&e.input);
	ExecDropSingleTupleTableSlot(out_slot);
}

/*
 * The time a view hydrates at, which becomes its since: at or after its
 * inputs' greatest since, as late as their bases go (below upper, the
 * least of their uppers).  A base holds the contents at its time, so the
 * history before it is neither read nor run through the query time by
 * time (an hour of it at the default retention; a big load, which its
 * source's history and base both hold until the since passes it).
 */
static int64
hydration_time(List *inputs, int64 since, int64 upper)
{
	int64		base = since;
	ListCell   *lc;

	foreach(lc, inputs)
		base = Max(base, catalog_read_shard_base(((CatalogObject *) lfirst(lc))->shard,
												 GetActiveSnapshot()));
	return Max(since, Min(base, upper - 1));
}

/*
 * Whether an input's since passed the view's upper: its history from there
 * is gone, and the view cannot resume, only hydrate again.
 */
static bool
lost_history(List *inputs, CatalogObject *v)
{
	ListCell   *lc;

	foreach(lc, inputs)
	{
		CatalogObject *in = lfirst(lc);

		if (in->since >= v->upper)
		{
			ereport(LOG,
					(errmsg("pg_peek view \"%s\" hydrates again: its input \"%s\" is compacted to since " INT64_FORMAT ", past the view's upper " INT64_FORMAT,
							v->name, in->name, in->since, v->upper)));
			return true;
		}
	}
	return false;
}

/*
 * A view that hydrates again retracts its contents at the new since, where
 * the hydration adds them anew (the fold at the since then counts both),
 * and drops the groups it kept (the next round builds them, as after a
 * restart).
 */
static void
forget_contents(DataflowView *view, CatalogObject *v, int64 since)
{
	persist_retract_all(view->id, v->shard, since);
	for (int b = 0; b < view->nbranches; b++)
	{
		dataflow_reduce_free(view->groups[b]);
		view->groups[b] = NULL;
	}
}

/*
 * A round whose inputs have no updates past the view's published upper
 * (each input's durable upper, which its updates commit with, is not past
 * it): the view's upper rises to the least of its inputs' published ones
 * in the runtime's memory alone, to be published, with no catalog write
 * and so no WAL (DATAFLOW_IDLE_WRITE_MS; nor a row lock: that is WAL too).
 * Returns false when the round must run after all: a hydration, a failed
 * view or input, a round that outlived its cancel, or an upper due to be
 * written; without reading the catalog when an input's durable upper seen
 * already (at a publication or a round: input_uppers; it only rises) is
 * past the view's, as under a steady write load.  The inputs' published
 * uppers are read before the snapshot the catalog is read in, so that it
 * sees every update below them.
 */
static bool
idle_round(DataflowView *view, PeekObjectId *ids, bool *rose)
{
	int64	   *published = palloc(sizeof(int64) * view->ninputs);
	int64		end = PG_INT64_MAX;
	List	   *now;
	CatalogObject *v;
	Oid			saved_user;
	int			saved_context;
	List	   *inputs = NIL;
	ListCell   *lc;

	if (view->input_failed ||
		pg_atomic_read_u64(&runtime_slot(PEEK_RUNTIME_MAINTENANCE)->stuck_view) == (uint64) view->id ||
		TimestampDifferenceExceeds(view->written_at, GetCurrentTimestamp(),
								   standby_streaming() ? DATAFLOW_IDLE_WRITE_STANDBY_MS :
								   DATAFLOW_IDLE_WRITE_MS))
		return false;
	for (int i = 0; i < view->ninputs; i++)
		if (view->input_uppers[i] > view->published)
			return false;
	for (int i = 0; i < view->ninputs; i++)
		published[i] = registry_published_upper(view->inputs[i]);
	PushActiveSnapshot(GetLatestSnapshot());
	now = catalog_read(ids, view->ninputs + 1);
	PopActiveSnapshot();
	v = catalog_object_in(now, view->id);
	if (v == NULL || v->failure != NULL || v->upper == 0)
		return false;
	for (int i = 0; i < view->ninputs; i++)
	{
		CatalogObject *in = catalog_object_in(now, view->inputs[i]);

		if (in == NULL || in->failure != NULL || in->upper > view->published)
			return false;
		inputs = lappend(inputs, in);
		end = Min(end, Max(in->upper, published[i]));
	}

	/* the owner may read the inputs still (a revoked right stops the view) */
	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(v->owner, saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	foreach(lc, inputs)
		catalog_check_reader(lfirst(lc));
	SetUserIdAndSecContext(saved_user, saved_context);

	*rose = end > view->published;
	view->published = Max(view->published, end);
	return true;
}

/* The runtime's user, context and settings while a view's owner runs its query. */
typedef struct AsOwner
{
	Oid			user;
	int			context;
	int			level;
} AsOwner;

/*
 * Plan and evaluate as the view's owner (its catalog row's: ALTER VIEW
 * ... OWNER TO gives it away), as REFRESH MATERIALIZED VIEW runs a view's
 * query: the owner's functions run with the owner's rights, never the
 * runtime's.  The subtransaction's abort restores the user and settings
 * after an error.
 */
static void
as_owner(CatalogObject *v, List *inputs, AsOwner *saved)
{
	ListCell   *lc;

	GetUserIdAndSecContext(&saved->user, &saved->context);
	SetUserIdAndSecContext(v->owner, saved->context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	saved->level = NewGUCNestLevel();
	(void) set_config_option("search_path", PEEK_SAFE_SEARCH_PATH, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	/* the owner may read the inputs still (a revoked right stops the view) */
	foreach(lc, inputs)
		catalog_check_reader(lfirst(lc));
}

static void
as_runtime(AsOwner *saved)
{
	/* undo every setting the owner's functions changed, not only ours */
	AtEOXact_GUC(false, saved->level);
	SetUserIdAndSecContext(saved->user, saved->context);
}

/*
 * A round of a view whose catalog row it holds (dataflow_round), all in the
 * one snapshot taken after the lock.
 */
static bool
locked_round(DataflowView *view, PeekObjectId *ids)
{
	CatalogObject *v;
	List	   *inputs = NIL;
	List	   *objects;
	List	   *branch_inputs;
	int64		upper = PG_INT64_MAX;
	int64		since = 0;
	int64		lower;
	int64		start;
	int64		end;
	bool		hydrating;
	AsOwner		saved;
	ViewPlan   *plan;
	TupleDesc	out_desc;
	bool		at_once;
	bool		as_base;
	int64		next;
	ListCell   *lc;

	objects = catalog_read(ids, view->ninputs + 1);
	v = catalog_object_in(objects, view->id);
	if (v == NULL || v->failure != NULL)
		return false;
	if (round_outlived_cancel(view->id))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("its round ran longer than pg_peek.view_round_timeout (%d ms) and went on when cancelled",
						setting_view_round_timeout_ms)));
	for (int i = 0; i < view->ninputs; i++)
	{
		CatalogObject *in = catalog_object_in(objects, view->inputs[i]);

		if (in == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("its input (object " INT64_FORMAT ") does not exist", view->inputs[i])));
		if (in->failure != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("its input %s \"%s\" is failed: %s",
							catalog_kind_noun(in->kind), in->name, in->failure)));
		inputs = lappend(inputs, in);
		/* (a source idle since its last change is published past it) */
		upper = Min(upper, Max(in->upper, registry_published_upper(in->id)));
		since = Max(since, in->since);
		view->input_uppers[i] = Max(view->input_uppers[i], in->upper);
	}
	view->upper = Max(view->upper, v->upper);
	if (upper <= v->upper)
		return false;

	/*
	 * The first round reads the inputs' contents at its since; so does a
	 * round whose input lost its history past the view's upper (the
	 * view's hold kept it otherwise): a source loaded again at a new slot's
	 * start, after pg_upgrade or a promotion.
	 */
	hydrating = v->upper == 0 || lost_history(inputs, v);
	if (hydrating)
		since = hydration_time(inputs, since, upper);
	if (hydrating && v->upper > 0)
		forget_contents(view, v, since);
	lower = hydrating ? 0 : v->upper;
	start = hydrating ? since + 1 : v->upper;
	end = upper;
	foreach(lc, inputs)
	{
		CatalogObject *in = lfirst(lc);

		if (end - start > DATAFLOW_ROUND_TIMES)
			end = persist_times_end(in->shard, start, end, DATAFLOW_ROUND_TIMES);
	}

	/* planned and evaluated as the view's owner */
	round_timer_start(view, false);
	as_owner(v, inputs, &saved);
	out_desc = row_desc(v->row_type);
	plan = replan(view, v, inputs, out_desc, &branch_inputs);

	/*
	 * A hydration whose branches that group or join each run at once
	 * (hydrate.c) runs them at its since and at next, the inputs' first
	 * time after it (a load not yet in their bases), and ends at their
	 * time after that: its updates need the groups, which the next round
	 * builds (as after a restart).
	 */
	at_once = hydrating && dataflow_hydrates_at_once(plan);
	/* an empty shard's base written at once, for the fold below to place */
	as_base = at_once && v->upper == 0 && since > 0 &&
		list_length(dataflow_plan_branches(plan)) == 1;
	next = -1;
	if (at_once)
	{
		int64		first = end;

		foreach(lc, inputs)
			first = persist_times_end(((CatalogObject *) lfirst(lc))->shard, since + 1, first, 0);
		if (first < end)
		{
			next = first;
			foreach(lc, inputs)
				end = persist_times_end(((CatalogObject *) lfirst(lc))->shard, next + 1, end, 0);
		}
	}
	dataflow_counts_begin(view->id, plan, inputs, hydrating);
	if (view->groups == NULL)
	{
		view->nbranches = list_length(branch_inputs);
		view->groups = MemoryContextAllocZero(TopMemoryContext,
											  sizeof(ReduceState *) * view->nbranches);
	}
	foreach(lc, dataflow_plan_branches(plan))
	{
		ViewPlan   *branch = lfirst(lc);
		CatalogObject **in = list_nth(branch_inputs, foreach_current_index(lc));

		ReduceState **groups = &view->groups[foreach_current_index(lc)];

		if (!branch->reduces)
			run_plan(branch, v, in[0], out_desc, lower, end, hydrating ? since : -1);
		else if (at_once &&
				 dataflow_hydrate_at_once(view->query, branch, v, in, out_desc, since, next,
										  as_base))
		{
			dataflow_reduce_free(*groups);
			*groups = NULL;
		}
		else
			dataflow_reduce(groups, view->query, branch, v, in, out_desc, start, end,
							hydrating ? since : -1, !view->learn_timed_out);
	}
	dataflow_counts_end();
	as_runtime(&saved);
	(void) dataflow_round_timer_stop();

	catalog_set_upper(view->id, end);
	if (hydrating && since > 0)
	{
		/*
		 * What landed at the since goes into the base (written there
		 * already with as_base), and the since and the base's time move to
		 * it (persist_fold, in the catalog row too), as a compaction to it
		 * would have put them: a walk reads the base for times up to the
		 * since.  The fold must see the rows just appended.
		 */
		PushCopiedSnapshot(GetActiveSnapshot());
		UpdateActiveSnapshotCommandId();
		(void) persist_fold(view->id, v->shard, since, since, -1, false);
		PopActiveSnapshot();
	}
	view->upper = end;
	view->published = Max(view->published, end);
	view->written_at = GetCurrentTimestamp();
	if (view->timeouts > 0)
		registry_round_timeouts(view->id, 0, 0);
	view->timeouts = 0;
	return true;
}

/*
 * A step of a view's learning of its groups between rounds (reduce.c's
 * dataflow_reduce_learn), as its owner, as a round would run, in the
 * snapshot taken after its row lock, with its operators' counts, within a
 * round's limit; when its groups are at its upper (no round ran since,
 * failed or timed out).
 * Returns whether it has more to learn.  One whose row a user's
 * transaction holds is passed over a while, not waited for: the others
 * learn meanwhile, and an idle runtime does not wait on it step after step.
 */
bool
dataflow_learn(DataflowView *view)
{
	PeekObjectId *ids = palloc(sizeof(PeekObjectId) * (view->ninputs + 1));
	List	   *objects;
	CatalogObject *v;
	List	   *inputs = NIL;
	List	   *branch_inputs;
	AsOwner		saved;
	TupleDesc	out_desc;
	ViewPlan   *plan;
	bool		more = false;
	ListCell   *lc;

	ids[0] = view->id;
	memcpy(ids + 1, view->inputs, sizeof(PeekObjectId) * view->ninputs);
	if (!catalog_lock_row(view->id, true))
	{
		view->learn_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													 DATAFLOW_LEARN_HELD_MS);
		return true;
	}
	PushActiveSnapshot(GetLatestSnapshot());
	objects = catalog_read(ids, view->ninputs + 1);
	v = catalog_object_in(objects, view->id);
	for (int i = 0; i < view->ninputs; i++)
		if (catalog_object_in(objects, view->inputs[i]) != NULL)
			inputs = lappend(inputs, catalog_object_in(objects, view->inputs[i]));
	if (v != NULL && v->failure == NULL && v->upper == view->upper &&
		list_length(inputs) == view->ninputs)
	{
		round_timer_start(view, true);
		as_owner(v, inputs, &saved);
		out_desc = row_desc(v->row_type);
		plan = replan(view, v, inputs, out_desc, &branch_inputs);
		/* (a UNION ALL's branches stop learning: their rounds count them) */
		if (plan->branches == NIL)
			dataflow_counts_begin(view->id, plan, inputs, false);
		foreach(lc, dataflow_plan_branches(plan))
			if (foreach_current_index(lc) < view->nbranches)
				more |= dataflow_reduce_learn(view->groups[foreach_current_index(lc)],
											  view->query, lfirst(lc), v,
											  list_nth(branch_inputs, foreach_current_index(lc)),
											  out_desc, view->published,
											  plan->branches == NIL);
		if (plan->branches == NIL)
			dataflow_counts_end();
		as_runtime(&saved);
		(void) dataflow_round_timer_stop();
	}
	PopActiveSnapshot();
	return more;
}

/*
 * One round of a view: returns whether its upper rose (it is to be
 * published).  Runs in a subtransaction of the runtime's transaction, so
 * that an error (a division by zero in its expressions) fails the view
 * alone and leaves nothing of the round behind.  Its and its inputs'
 * catalog rows are read once, after its row lock, in a snapshot taken then
 * that the whole round reads in (its inputs' shards too, so that they hold
 * every update below the uppers read): the lock is had only once an
 * ALTER VIEW ... OWNER TO or a REASSIGN OWNED that held it ended, and the table privileges
 * checked (through the caches) are the latest, so the owners must be too,
 * and all of one snapshot, or a round right after a change of owners would
 * run as the old owner, or as the new one against an input's old owner.
 */
bool
dataflow_round(DataflowView *view)
{
	PeekObjectId *ids = palloc(sizeof(PeekObjectId) * (view->ninputs + 1));
	TimestampTz now = GetCurrentTimestamp();
	bool		rose = false;

	ids[0] = view->id;
	memcpy(ids + 1, view->inputs, sizeof(PeekObjectId) * view->ninputs);

	/*
	 * Put off before the work, for a transient error to leave it so (the
	 * runtime logs it and goes on): the wait doubles while rounds keep
	 * failing, and a round that ends without an error sets it back.
	 */
	backoff_failed(&view->retry, now);

	/*
	 * A drop_view waits for the round; a row a user's transaction holds
	 * (set_retention, a drop not yet committed) puts the round off a little,
	 * not as an error, while the other views go on.
	 */
	if (idle_round(view, ids, &rose))
		backoff_clear(&view->retry);
	else if (!catalog_lock_row(view->id, true))
	{
		backoff_clear(&view->retry);
		backoff_put_off(&view->retry, DATAFLOW_ROUND_HELD_MS, now);
	}
	else
	{
		PushActiveSnapshot(GetLatestSnapshot());
		rose = locked_round(view, ids);
		PopActiveSnapshot();
		backoff_clear(&view->retry);
	}
	return rose;
}
