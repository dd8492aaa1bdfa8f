/*-------------------------------------------------------------------------
 *
 * round.c
 *	  One round of one maintained view, in the maintenance runtime's
 *	  transaction (a subtransaction of its own: an error fails the view
 *	  alone).  Reads the view's and its input's frontiers, takes the
 *	  input's updates in [view upper, end) from its shard, evaluates the
 *	  view's WHERE and select list over each with PostgreSQL's expression
 *	  executor, as the view's owner (who must still have the right to read
 *	  the input), and appends each result at the same time with the same
 *	  diff to the view's shard (a view that groups goes through reduce.c
 *	  instead), with the view's upper raised to end, all in the caller's
 *	  transaction.  The first round
 *	  hydrates: it reads the whole shard, the input's history up to its
 *	  since landing at the since, and folds that into the view's base.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "common/rows.h"
#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"

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
		TupleTableSlot *out = ExecProject(e->project);

		persist_writer_add(e->writer, Max(time, e->since), diff,
						   ExecFetchSlotHeapTupleDatum(out));
	}
	ExecClearTuple(e->input.slot);
	ResetExprContext(e->input.econtext);
	MemoryContextSwitchTo(old);
	MemoryContextReset(e->per_row);
}

/*
 * The view's plan, made again from its text, checked against what the
 * view was made with: its input's row type and its own columns.
 */
static ViewPlan *
replan(DataflowView *view, CatalogObject *v, CatalogObject *in, TupleDesc out_desc)
{
	ViewPlan   *plan = dataflow_plan(view->query);
	int			natts = 0;
	ListCell   *lc;

	if (plan->input_type != in->row_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("its query reads \"%s\" as %s, but it holds rows of type %s",
						in->name, format_type_be(plan->input_type), format_type_be(in->row_type))));
	for (int i = 0; i < out_desc->natts; i++)
		if (!TupleDescAttr(out_desc, i)->attisdropped)
			natts++;
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Form_pg_attribute att = tle->resno <= out_desc->natts ?
			TupleDescAttr(out_desc, tle->resno - 1) : NULL;

		if (att == NULL || att->attisdropped ||
			att->atttypid != exprType((Node *) tle->expr))
			natts = -1;
	}
	if (natts != list_length(plan->targetlist))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("its query's columns no longer match its row type %s",
						format_type_be(v->row_type))));
	return plan;
}

/* Take the input's updates in [lower, end) through the plan into the view. */
static void
run_plan(ViewPlan *plan, CatalogObject *v, CatalogObject *in, TupleDesc out_desc,
		 int64 lower, int64 end, int64 since)
{
	RoundEval	e;
	TupleTableSlot *out_slot = MakeSingleTupleTableSlot(out_desc, &TTSOpsVirtual);

	view_input_begin(&e.input, plan, in->row_type);
	e.project = ExecBuildProjectionInfo(plan->targetlist, e.input.econtext, out_slot, NULL,
										e.input.desc);
	e.since = since;
	e.per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view round",
									  ALLOCSET_DEFAULT_SIZES);
	e.writer = persist_writer_open(v->shard);
	persist_scan_range(in->shard, lower, end, eval_update, &e);
	persist_writer_close(e.writer);
	MemoryContextDelete(e.per_row);
	view_input_end(&e.input);
	ExecDropSingleTupleTableSlot(out_slot);
}

/*
 * One round of a view: returns whether its upper rose (it is to be
 * published).  Runs in a subtransaction of the runtime's transaction, so
 * that an error (a division by zero in its expressions) fails the view
 * alone and leaves nothing of the round behind.
 */
bool
dataflow_round(DataflowView *view)
{
	PeekObjectId ids[2] = {view->id, view->input};
	CatalogObject *v;
	CatalogObject *in;
	List	   *objects;
	int64		lower;
	int64		start;
	int64		end;
	bool		hydrating;
	Oid			saved_user;
	int			saved_context;
	int			level;
	ViewPlan   *plan;
	TupleDesc	out_desc;

	/* a drop_view waits for the round, or the round for the drop */
	if (!catalog_lock_row(view->id, false))
		return false;
	objects = catalog_read(ids, 2);
	v = catalog_object_in(objects, view->id);
	in = catalog_object_in(objects, view->input);
	if (v == NULL || v->failure != NULL)
		return false;
	if (in == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("its input (object " INT64_FORMAT ") does not exist", view->input)));
	if (in->failure != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("its input %s \"%s\" is failed: %s",
						catalog_kind_noun(in->kind), in->name, in->failure)));
	view->upper = Max(view->upper, v->upper);
	if (in->upper <= v->upper)
		return false;

	/* the first round reads the input's history from its start */
	hydrating = v->upper == 0;
	lower = hydrating ? 0 : v->upper;
	start = hydrating ? in->since + 1 : v->upper;
	if (!hydrating && in->since >= v->upper)
		ereport(ERROR,
				(errcode(ERRCODE_SNAPSHOT_TOO_OLD),
				 errmsg("its input \"%s\" is compacted to since " INT64_FORMAT ", past the view's upper " INT64_FORMAT,
						in->name, in->since, v->upper)));
	end = in->upper - start > DATAFLOW_ROUND_TIMES ?
		persist_times_end(in->shard, start, in->upper, DATAFLOW_ROUND_TIMES) : in->upper;

	/*
	 * Planned and evaluated as the view's owner, as REFRESH MATERIALIZED
	 * VIEW runs a view's query: the owner's functions run with the owner's
	 * rights, never the runtime's.  The subtransaction's abort restores
	 * the user and settings after an error.
	 */
	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(view->owner, saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	level = NewGUCNestLevel();
	(void) set_config_option("search_path", PEEK_SAFE_SEARCH_PATH, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	/* the owner may read the input still (a revoked right stops the view) */
	catalog_check_reader(in);
	out_desc = row_desc(v->row_type);
	plan = replan(view, v, in, out_desc);
	if (plan->reduces)
		dataflow_reduce(view, plan, v, in, out_desc, start, end, hydrating ? in->since : -1);
	else
		run_plan(plan, v, in, out_desc, lower, end, hydrating ? in->since : -1);
	AtEOXact_GUC(true, level);
	SetUserIdAndSecContext(saved_user, saved_context);

	catalog_set_upper(view->id, end);
	if (hydrating && in->since > 0)
	{
		/*
		 * What landed at the since goes into the base, and the since and
		 * the base's time move to it (persist_fold, in the catalog row
		 * too), as a compaction to it would have put them: a walk reads
		 * the base for times up to the since.  The fold must see the rows
		 * just appended.
		 */
		PushCopiedSnapshot(GetActiveSnapshot());
		UpdateActiveSnapshotCommandId();
		(void) persist_fold(view->id, v->shard, in->since, in->since, -1, false);
		PopActiveSnapshot();
	}
	view->upper = end;
	return true;
}
