/*-------------------------------------------------------------------------
 *
 * views.c
 *	  The views the maintenance runtime keeps current: learned from the
 *	  catalog rows it reads (dataflow_note_view), forgotten when dropped or
 *	  failed, due for a round once each of their inputs' published uppers
 *	  passes their published upper (or one of them failed: the round fails
 *	  the view) and no retry puts them off (with when the first is due, for
 *	  the runtime's sleep: dataflow_wait_ms), the durable uppers of their inputs seen at publications
 *	  (whether a round can be idle, round.c), and the hold they put on
 *	  their inputs' compaction: never to or past the least durable upper of
 *	  the views reading an input (a failed view holds nothing: it never
 *	  resumes); and those that learn their groups between rounds when not
 *	  due (dataflow_next_learning_view, learn.c).  Local to the
 *	  maintenance runtime; rebuilt from the catalog when it restarts, where
 *	  each view's upper is durable, so the hold survives the restart.
 *	  Each view's plan is kept between its rounds until an invalidation
 *	  could change what its text means (dataflow_view_plan).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "arrange/spine.h"
#include "dataflow/dataflow.h"
#include "ipc/registry.h"
#include "ipc/registry_progress.h"
#include "storage/catalog_views.h"

static HTAB *views = NULL;
static MemoryContext views_cxt = NULL;	/* the table and the queries */

/*
 * Counts the invalidations that may change what a view's text plans to:
 * any relation's (its columns, its name), and the catalog rows of the
 * functions, aggregates, operators, operator classes, types, enum labels,
 * casts, collations, schemas and text search configurations and
 * dictionaries (what a constant of a reg* type names) that parse analysis
 * looks up; and the
 * roles' (a role's superuser, its memberships), whose rights parse analysis
 * checks too (USAGE on a schema named) as does inlining a SQL function
 * (EXECUTE, not checked again once inlined).  A kept plan made at another
 * count is made again.
 */
static uint64 plan_generation = 1;

static void
plan_syscache_invalidated(Datum arg, int cacheid, uint32 hashvalue)
{
	plan_generation++;
}

static void
plan_relcache_invalidated(Datum arg, Oid relid)
{
	plan_generation++;
}

static void
watch_plan_invalidations(void)
{
	static bool watching = false;
	static const int caches[] = {
		PROCOID, AGGFNOID, OPEROID, AMOPOPID, CLAOID, TYPEOID, ENUMOID,
		CASTSOURCETARGET, COLLOID, NAMESPACEOID, TSCONFIGOID, TSDICTOID, AUTHOID,
		AUTHMEMROLEMEM
	};

	if (watching)
		return;
	for (int i = 0; i < lengthof(caches); i++)
		CacheRegisterSyscacheCallback(caches[i], plan_syscache_invalidated, (Datum) 0);
	CacheRegisterRelcacheCallback(plan_relcache_invalidated, (Datum) 0);
	watching = true;
}

static void
drop_plan(DataflowView *view)
{
	if (view->plan_cxt != NULL)
		MemoryContextDelete(view->plan_cxt);
	view->plan_cxt = NULL;
	view->plan = NULL;
}

/* A view's rows by key, each branch's. */
static void
free_groups(DataflowView *view)
{
	for (int b = 0; b < view->nbranches; b++)
		dataflow_reduce_free(view->groups[b]);
	if (view->groups != NULL)
		pfree(view->groups);
	view->groups = NULL;
	view->nbranches = 0;
}

void
dataflow_reset(void)
{
	HASHCTL		ctl;

	if (views != NULL)
	{
		HASH_SEQ_STATUS status;
		DataflowView *view;

		hash_seq_init(&status, views);
		while ((view = hash_seq_search(&status)) != NULL)
			free_groups(view);
	}
	if (views_cxt == NULL)
		views_cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek views",
										  ALLOCSET_SMALL_SIZES);
	MemoryContextReset(views_cxt);
	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(DataflowView);
	ctl.hcxt = views_cxt;
	views = hash_create("pg_peek views", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * A view's catalog row, read in the runtime's transaction: kept current
 * from now on, or forgotten if it failed.  Its inputs are found by name
 * (none can be dropped while the view reads it).  Returns the upper to
 * publish: the greater of the row's and what idle rounds reached.
 */
int64
dataflow_note_view(CatalogObject *obj)
{
	DataflowView *view;
	char	   *query;
	List	   *input_names;
	PeekObjectId *inputs;
	int64	   *input_uppers;
	ListCell   *lc;
	bool		failed_input = false;

	if (obj->failure != NULL)
	{
		dataflow_forget(obj->id);
		return obj->upper;
	}
	view = hash_search(views, &obj->id, HASH_FIND, NULL);
	if (view != NULL)
	{
		view->upper = Max(view->upper, obj->upper);
		view->published = Max(view->published, view->upper);
		return view->published;
	}
	if (!catalog_view_definition(obj->id, &query, &input_names))
		return obj->upper;
	inputs = MemoryContextAlloc(views_cxt, sizeof(PeekObjectId) * Max(1, list_length(input_names)));
	foreach(lc, input_names)
	{
		CatalogObject *input = catalog_find(lfirst(lc));

		if (input == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("its input \"%s\" does not exist", (char *) lfirst(lc))));
		inputs[foreach_current_index(lc)] = input->id;
		failed_input |= input->failure != NULL;
	}
	input_uppers = MemoryContextAllocZero(views_cxt,
										  sizeof(int64) * Max(1, list_length(input_names)));
	query = MemoryContextStrdup(views_cxt, query);
	/* entered once nothing more can fail: a retry finds none half made */
	view = hash_search(views, &obj->id, HASH_ENTER, NULL);
	view->inputs = inputs;
	view->input_uppers = input_uppers;
	view->ninputs = list_length(input_names);
	view->upper = obj->upper;
	view->published = obj->upper;
	view->written_at = GetCurrentTimestamp();
	view->timeouts = 0;
	backoff_init(&view->retry, DATAFLOW_RETRY_FIRST_MS, DATAFLOW_RETRY_LAST_MS);
	view->learn_at = 0;
	view->learn_timed_out = false;
	registry_round_timeouts(obj->id, 0, 0);
	view->query = query;
	view->groups = NULL;
	view->nbranches = 0;
	view->input_failed = failed_input;
	view->plan = NULL;
	view->plan_cxt = NULL;
	return view->published;
}

/* Whether the view reads the object. */
static bool
reads_input(DataflowView *view, PeekObjectId id)
{
	for (int i = 0; i < view->ninputs; i++)
		if (view->inputs[i] == id)
			return true;
	return false;
}

/*
 * A view, or an input of views, failed or dropped: a view is forgotten; the
 * views reading an input are due, so that their next round fails them
 * naming it (a failed input publishes no more times to make them due).  A
 * view is an input too: the views that read a failed view by name are due
 * as those over a failed source are, or they stayed ready at the upper it
 * stopped at until the runtime restarted.
 */
void
dataflow_forget(PeekObjectId id)
{
	DataflowView *view = views ? hash_search(views, &id, HASH_FIND, NULL) : NULL;
	HASH_SEQ_STATUS readers;
	DataflowView *reader;

	if (views != NULL)
	{
		hash_seq_init(&readers, views);
		while ((reader = hash_seq_search(&readers)) != NULL)
			reader->input_failed |= reads_input(reader, id);
	}
	if (view == NULL)
		return;
	pfree(view->query);
	pfree(view->inputs);
	pfree(view->input_uppers);
	free_groups(view);
	drop_plan(view);
	spine_unshare(id);
	hash_search(views, &id, HASH_REMOVE, NULL);
}

/*
 * An object's durable upper, from its catalog row read at a publication:
 * the views reading it know that it has updates up to there (idle_round).
 */
void
dataflow_note_input_upper(PeekObjectId id, int64 upper)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;

	if (views == NULL)
		return;
	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
		for (int i = 0; i < view->ninputs; i++)
			if (view->inputs[i] == id)
				view->input_uppers[i] = Max(view->input_uppers[i], upper);
}

/* A view kept current, by id, or NULL. */
DataflowView *
dataflow_view(PeekObjectId id)
{
	return views != NULL ? hash_search(views, &id, HASH_FIND, NULL) : NULL;
}

/*
 * The view's text planned as owner, its expressions planned for the
 * executor: kept from an earlier round while no invalidation came since
 * (plan_generation), else made again.  Parsing and analysing the text was
 * a round's largest fixed cost.  Made in the caller's context and kept
 * only once made, so that an error leaves the kept one as it was.
 */
ViewPlan *
dataflow_view_plan(DataflowView *view, Oid owner)
{
	MemoryContext cxt;
	MemoryContext old;
	uint64		generation;
	ListCell   *lb;
	ViewPlan   *plan;

	watch_plan_invalidations();
	if (view->plan != NULL && view->plan_owner == owner &&
		view->plan_generation == plan_generation)
		return view->plan;
	generation = plan_generation;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view plan",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	plan = dataflow_plan(view->query);
	foreach(lb, dataflow_plan_branches(plan))
		dataflow_plan_expressions(lfirst(lb));
	MemoryContextSwitchTo(old);
	drop_plan(view);
	MemoryContextSetParent(cxt, views_cxt);
	view->plan = plan;
	view->plan_cxt = cxt;
	view->plan_owner = owner;
	view->plan_generation = generation;
	return plan;
}

/*
 * The due view with the least id above after, or NULL: one whose inputs
 * have all published times it has not taken yet, or with an input failed;
 * not one put off, before its retry is due (a round that ran out of time,
 * met a transient error or found its row held: round.c).  Ids grow with creation, so a view over
 * views comes after its inputs, and a caller that asks again after each
 * round finds it due once they published in the same step.
 */
DataflowView *
dataflow_next_due_view(PeekObjectId after)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;
	DataflowView *next = NULL;
	TimestampTz now = GetCurrentTimestamp();

	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
	{
		bool		ready = true;

		if (view->id <= after || (next != NULL && view->id > next->id) ||
			!backoff_due(&view->retry, now))
			continue;
		for (int i = 0; i < view->ninputs; i++)
			ready &= registry_published_upper(view->inputs[i]) > view->published;
		if (ready || view->input_failed)
			next = view;
	}
	return next;
}

/*
 * How long until the first put-off view's retry is due (-1: none is), for
 * the runtime to wake then instead of at its tick when nothing else does.
 */
long
dataflow_wait_ms(void)
{
	return backoff_table_wait_ms(views, offsetof(DataflowView, retry));
}

/*
 * A view that is learning its groups between rounds (reduce.c), not due
 * (its round comes first) nor passed over a while (its row held,
 * dataflow_learn), or NULL.
 */
DataflowView *
dataflow_next_learning_view(void)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;
	TimestampTz now = GetCurrentTimestamp();

	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
	{
		bool		due = view->input_failed;

		for (int i = 0; i < view->ninputs; i++)
			due |= registry_published_upper(view->inputs[i]) > view->published;
		for (int b = 0; b < view->nbranches && !due && view->learn_at <= now; b++)
			if (dataflow_reduce_learning(view->groups[b]))
			{
				hash_seq_term(&status);
				return view;
			}
	}
	return NULL;
}

/*
 * How far an input may compact: below the least durable upper of the views
 * that read it (PG_INT64_MAX if none does), as registry_advance_since takes
 * a bound.  Not the published one: a restart resumes at the durable upper,
 * and the input's history from there must still be there to read.
 */
int64
dataflow_input_hold(PeekObjectId input)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;
	int64		hold = PG_INT64_MAX;

	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
		for (int i = 0; i < view->ninputs; i++)
			if (view->inputs[i] == input)
				hold = Min(hold, view->upper);
	return hold;
}
