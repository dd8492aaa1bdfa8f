/*-------------------------------------------------------------------------
 *
 * dependencies.c
 *	  What a view's PostgreSQL view depends on: what its query uses, as a
 *	  view of the query would (its query as written: its WITH queries and
 *	  subqueries whole, not as flatten.c pulled them up, so a column of
 *	  theirs that the query does not read counts too, at create_view and
 *	  after a restore alike; its functions, operators and types, a
 *	  source's row type, and each captured table it reads with the columns
 *	  it reads: dataflow_read_tables), so that none of it is dropped or
 *	  changed from under the view's rounds.  They are its rule's, as a
 *	  PostgreSQL view's are: ALTER COLUMN TYPE of such a column is refused
 *	  as under a view (0A000), where a relation's dependency on a column
 *	  would be an internal error.  Recorded at create_view; replacing the
 *	  body drops them, and neither pg_restore (which restores the body after
 *	  the catalog's rows) nor pg_upgrade (which restores it with no
 *	  catalog rows at all) records them, so they are recorded again from
 *	  the kept query whenever the body is replaced by itself and when the
 *	  maintenance runtime adopts upgraded objects: the same as at
 *	  create_view.
 *
 *	  Writes pg_depend alone; must not touch the peek catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_rewrite.h"
#include "rewrite/rewriteSupport.h"
#include "utils/guc.h"
#include "utils/resowner.h"

#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "storage/catalog_views.h"

void
dataflow_record_dependencies(Oid relid, ViewPlan *plan)
{
	ObjectAddress rule;
	Query	   *tables = dataflow_read_tables(plan->written);

	ObjectAddressSet(rule, RewriteRelationId, get_rewrite_oid(relid, ViewSelectRuleName, false));

	/*
	 * The body reads the view's own row type through a function, so its rule
	 * was made to depend on the view's own columns.  A DROP TYPE ...
	 * CASCADE of a column's type then deleted the view, and the column
	 * after it ("could not open relation"): the whole DROP failed.  The rule
	 * is the view's part already.
	 */
	deleteDependencyRecordsForSpecific(RewriteRelationId, rule.objectId, DEPENDENCY_NORMAL,
									   RelationRelationId, relid);
	/* (one call, so that what both use is recorded once) */
	recordDependencyOnExpr(&rule, (Node *) list_make2(plan->written, tables), NIL,
						   DEPENDENCY_NORMAL);
}

/*
 * Again from the kept query, planned as the current user (the one replacing
 * the body: during a restore, the view's owner has its rights only once the
 * restore's privileges are) in the search_path and settings the rounds
 * plan it in.  A query that no longer plans (a function it calls was not
 * restored) leaves it depending on nothing with a WARNING, so that a
 * restore goes on; its rows stay, and its next round (once an input moves
 * on) fails it with that reason.
 */
void
dataflow_record_dependencies_again(CatalogObject *view, Oid relid)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner resowner = CurrentResourceOwner;
	char	   *query;
	List	   *inputs;

	if (!catalog_view_definition(view->id, &query, &inputs))
		return;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		int			level = dataflow_kept_text_settings(PEEK_SAFE_SEARCH_PATH);

		dataflow_record_dependencies(relid, dataflow_plan(query));
		AtEOXact_GUC(true, level);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(caller);
		error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("the query of maintained view \"%s\" no longer plans: %s",
						view->name, error->message),
				 errdetail("Its PostgreSQL view depends on nothing its query uses; its rows are kept, and its next round fails it with this reason."),
				 errhint("Drop it with peek.drop_view and create it again.")));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(caller);
	CurrentResourceOwner = resowner;
}
