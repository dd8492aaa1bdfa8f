/*-------------------------------------------------------------------------
 *
 * view_ddl.c
 *	  peek.create_view and peek.drop_view.  A view is a collection of kind
 *	  view: its catalog row keeps its query (dataflow/plan.c's
 *	  schema-qualified text) and its inputs' names, its shard its rows, and
 *	  the maintenance runtime fills the shard (dataflow/round.c).  Beside it
 *	  stands a PostgreSQL view of the same name in the creator's current
 *	  schema, owned by the view's owner (view_guard.c keeps the two in
 *	  step and guards it against other DDL), whose body is the view's own persist
 *	  peek: SELECT * FROM name reads the latest contents, and NULL::name is
 *	  its row type (the shard's too, so that the PostgreSQL view cannot be
 *	  dropped or changed behind the view's back); it depends on what the
 *	  query uses, so that none of it is dropped from under the view.
 *	  Its inputs share one time line (sources' commit LSNs, or logical
 *	  times).  Checks first, then the changes in the caller's transaction,
 *	  then what the query uses locked against the changes the guard refuses
 *	  (view_uses_guard.c) and the query planned again under the locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_rewrite.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "rewrite/rewriteSupport.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"

#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "ipc/notify.h"
#include "sql/arguments.h"
#include "sql/ddl.h"
#include "sql/view_guard.h"
#include "sql/view_uses_guard.h"
#include "storage/catalog_views.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

PEEK_SQL_FUNCTION(peek_create_view);
PEEK_SQL_FUNCTION(peek_drop_view);

/* Run a statement as the current user (the view's creator or owner). */
static void
run_as_user(const char *statement)
{
	SPI_connect();
	spi_check(SPI_execute(statement, false, 0), SPI_OK_UTILITY, statement);
	SPI_finish();
}

/*
 * The PostgreSQL view beside a view, in the creator's current schema, made
 * first from the query as the user wrote it (its columns are the query's;
 * a captured table in it, not the source's row type, which the user may
 * not use) and then replaced by the view's persist peek of its own row
 * type, with its dependencies.  Returns its row type.
 */
static Oid
create_pg_view(const char *name, const char *query, ViewPlan *plan)
{
	Oid			nsp = RangeVarGetCreationNamespace(makeRangeVar(NULL, pstrdup(name), -1));
	char	   *qualified;
	Oid			relid;

	if (isAnyTempNamespace(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create view \"%s\" in a temporary schema", name),
				 errdetail("A view outlasts the session; its PostgreSQL view would not.")));
	qualified = quote_qualified_identifier(get_namespace_name(nsp), name);
	run_as_user(psprintf("CREATE VIEW %s AS %s", qualified, query));
	run_as_user(psprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM " PEEK_SCHEMA ".persist_peek(NULL::%s, %s)",
						 qualified, qualified, quote_literal_cstr(name)));
	relid = get_relname_relid(name, nsp);
	if (!OidIsValid(relid))
		elog(ERROR, "view \"%s\" was not created", qualified);
	dataflow_record_dependencies(relid, plan);
	return get_rel_type_id(relid);
}

/*
 * A view's inputs, each checked (it exists, the user may read it, the
 * query reads it as its row type) and row-locked against drops (a drop of
 * it waits for this transaction, or it for the drop), not against writers:
 * a transaction that made a view and is still open holds up neither the
 * inputs' writers nor a source's capture; they share one time line.  An
 * input view's PostgreSQL view is locked in share mode too: a DROP ...
 * CASCADE that has locked it sees every view over it (view_guard.c).
 */
static void
check_inputs(ViewPlan *plan, List *names)
{
	CatalogObject *first = NULL;
	ListCell   *lb;
	ListCell   *lc;

	foreach(lc, names)
	{
		CatalogObject *input = catalog_find(lfirst(lc));

		/* (before the row, in drop_view's order) */
		if (input != NULL && input->kind == PEEK_KIND_VIEW &&
			OidIsValid(get_typ_typrelid(input->row_type)))
			LockRelationOid(get_typ_typrelid(input->row_type), AccessShareLock);
		input = catalog_lookup(lfirst(lc), PEEK_KIND_COLLECTION, CATALOG_KEEP);
		catalog_check_reader(input);
		if (first == NULL)
			first = input;
		else if (catalog_times_are_lsns(first) != catalog_times_are_lsns(input))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("maintained views do not support inputs on different time lines: \"%s\" (%s) and \"%s\" (%s)",
							first->name, catalog_times_are_lsns(first) ? "commit LSNs" : "logical times",
							input->name, catalog_times_are_lsns(input) ? "commit LSNs" : "logical times"),
					 errdetail("A view's inputs are all sources (and views of sources), or all collections (and views of collections).")));
		foreach(lb, dataflow_plan_branches(plan))
		{
			ListCell   *li;

			foreach(li, ((ViewPlan *) lfirst(lb))->inputs)
			{
				ViewPlanInput *pin = lfirst(li);

				if (strcmp(pin->name, input->name) == 0 && pin->row_type != input->row_type)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("%s \"%s\" holds rows of type %s, not %s",
									catalog_kind_noun(input->kind), input->name,
									format_type_be(input->row_type), format_type_be(pin->row_type)),
							 errhint("Read it as peek.persist_peek(NULL::%s, %s).",
									 format_type_be(input->row_type), quote_literal_cstr(input->name))));
			}
		}
	}
}

/* create_view(name, query) */
Datum
peek_create_view(PG_FUNCTION_ARGS)
{
	char	   *name = arg_new_name(fcinfo, 0, "view name");
	char	   *text = arg_text(fcinfo, 1, "query");
	ViewPlan   *plan;
	List	   *inputs;
	CatalogObject obj = {0};
	char	   *query;
	int32		seq;

	standby_refuse_writes("create_view");
	arg_refuse_extension_script("create_view");
	/* analyzed in the user's search_path, with the user's privileges */
	plan = dataflow_plan(text);
	inputs = dataflow_plan_input_names(plan);
	check_inputs(plan, inputs);
	arg_check_name_free(name);

	query = dataflow_plan_text(plan);
	obj.id = catalog_new_id(&seq);
	obj.name = name;
	obj.kind = PEEK_KIND_VIEW;
	obj.row_type = create_pg_view(name, text, plan);

	/*
	 * A change to a function, operator or type the query uses that committed
	 * before the locks is seen by planning it again (refused if the query no
	 * longer plans); one after them waits for this transaction and is then
	 * refused by the guard.
	 */
	view_uses_lock(get_typ_typrelid(obj.row_type));
	if (strcmp(dataflow_plan_text(dataflow_plan(text)), query) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not create view \"%s\": what its query uses changed meanwhile", name),
				 errhint("Create the view again.")));
	obj.owner = GetUserId();
	obj.shard = persist_create_shard(seq, obj.row_type);
	catalog_insert(&obj, (Datum) 0);
	catalog_set_view(obj.id, query, inputs);
	notify_created(obj.id);
	PG_RETURN_VOID();
}

/*
 * The view named, its row locked for its drop, its PostgreSQL view (*relid)
 * locked before it (see view_guard_lock_pg_view).  The name may give
 * another view once the row is locked than when the view was (dropped and
 * made anew while either lock waited): its row is let go of again, in the
 * subtransaction that took it, and its view locked first.  The view found
 * with the row gives the next view to lock, not a lookup again in the
 * statement's snapshot, which would give the dropped view again (forever).
 */
static CatalogObject *
lock_view_for_drop(const char *name, Oid *relid)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	CatalogObject *view = arg_owned_object("drop_view", name, PEEK_KIND_VIEW, CATALOG_READ);
	Oid			locked = get_typ_typrelid(view->row_type);

	for (;;)
	{
		bool		same;

		if (OidIsValid(locked))
			view_guard_lock_pg_view(view->id, locked);
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			view = arg_owned_object("drop_view", name, PEEK_KIND_VIEW, CATALOG_DROP);
		}
		PG_CATCH();
		{
			/* (gone meanwhile, a cancel): the error is raised outside it */
			ReThrowError(spi_subxact_rollback_caught(cxt, owner));
		}
		PG_END_TRY();
		*relid = get_typ_typrelid(view->row_type);
		same = *relid == locked || !OidIsValid(*relid);
		if (same)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (same)
			return view;
		locked = *relid;
	}
}

/* drop_view(name): the view, its indexes, its shard and its PostgreSQL view */
Datum
peek_drop_view(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "view name");
	Oid			relid;
	CatalogObject *view = lock_view_for_drop(name, &relid);

	/*
	 * A create_view of the name waits for this transaction: the PostgreSQL
	 * view's drop may be visible before its invalidations are sent, and a
	 * creator not waiting could find the row gone but the PostgreSQL view
	 * still in its caches (42P07).
	 */
	catalog_lock_name(view->name);
	ddl_drop_collection_and_indexes(view);
	/* gone already if its row type was dropped (DROP VIEW ... CASCADE) */
	if (OidIsValid(relid))
		run_as_user(psprintf("DROP VIEW %s",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														get_rel_name(relid))));
	PG_RETURN_VOID();
}
