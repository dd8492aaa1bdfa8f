/*-------------------------------------------------------------------------
 *
 * views.c
 *	  The views the maintenance runtime keeps current: learned from the
 *	  catalog rows it reads (dataflow_note_view), forgotten when dropped or
 *	  failed, due for a round once their input's published upper passes
 *	  theirs, and the hold they put on their inputs' compaction: never to
 *	  or past the least upper of the views reading an input (a failed view
 *	  holds nothing: it never resumes).  Local to the maintenance runtime;
 *	  rebuilt from the catalog when it restarts, where each view's upper is
 *	  durable, so the hold survives the restart.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "dataflow/dataflow.h"
#include "ipc/registry.h"
#include "storage/catalog_views.h"

static HTAB *views = NULL;
static MemoryContext views_cxt = NULL;	/* the table and the queries */

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
			dataflow_reduce_free(view->groups);
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
 * from now on, or forgotten if it failed.  Its input is found by name (it
 * cannot be dropped while the view reads it).
 */
void
dataflow_note_view(CatalogObject *obj)
{
	DataflowView *view;
	char	   *query;
	char	   *input_name;
	CatalogObject *input;
	bool		found;

	if (obj->failure != NULL)
	{
		dataflow_forget(obj->id);
		return;
	}
	view = hash_search(views, &obj->id, HASH_FIND, NULL);
	if (view != NULL)
	{
		view->upper = Max(view->upper, obj->upper);
		return;
	}
	if (!catalog_view_definition(obj->id, &query, &input_name))
		return;
	input = catalog_find(input_name);
	if (input == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("its input \"%s\" does not exist", input_name)));
	view = hash_search(views, &obj->id, HASH_ENTER, &found);
	view->input = input->id;
	view->owner = obj->owner;
	view->upper = obj->upper;
	view->query = MemoryContextStrdup(views_cxt, query);
	view->groups = NULL;
}

void
dataflow_forget(PeekObjectId id)
{
	DataflowView *view = views ? hash_search(views, &id, HASH_FIND, NULL) : NULL;

	if (view == NULL)
		return;
	pfree(view->query);
	dataflow_reduce_free(view->groups);
	hash_search(views, &id, HASH_REMOVE, NULL);
}

/* The views whose input has published times they have not taken yet. */
List *
dataflow_due_views(void)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;
	List	   *due = NIL;

	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
		if (registry_published_upper(view->input) > view->upper)
			due = lappend(due, view);
	return due;
}

/*
 * How far an input may compact: below the least upper of the views that
 * read it (PG_INT64_MAX if none does), as registry_advance_since takes a
 * bound.
 */
int64
dataflow_input_hold(PeekObjectId input)
{
	HASH_SEQ_STATUS status;
	DataflowView *view;
	int64		hold = PG_INT64_MAX;

	hash_seq_init(&status, views);
	while ((view = hash_seq_search(&status)) != NULL)
		if (view->input == input)
			hold = Min(hold, view->upper);
	return hold;
}
