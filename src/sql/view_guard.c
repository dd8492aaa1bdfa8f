/*-------------------------------------------------------------------------
 *
 * view_guard.c
 *	  What PostgreSQL's own DDL may do to the PostgreSQL view beside a
 *	  maintained view (view_ddl.c), through a ProcessUtility hook:
 *	  * its owner may change (ALTER VIEW or ALTER TABLE ... OWNER TO,
 *	    REASSIGN OWNED): the view and its indexes follow in the catalog,
 *	    once the new owner is found to read every input of the view (and
 *	    the owners of the views that read it, to read it), else 42501;
 *	    its lock taken so as not to queue the view's round behind it
 *	    while a peek of the view waits (view_guard_lock_pg_view, which
 *	    drop_view takes too, and so do REASSIGN OWNED and DROP OWNED of
 *	    its owner, DROP VIEW or DROP SCHEMA ... CASCADE, a DROP ...
 *	    CASCADE of what it uses (views_dropped_with; a cascade locks the
 *	    views reading the view first), LOCK TABLE ... IN
 *	    ACCESS EXCLUSIVE MODE, CREATE OR REPLACE VIEW, CREATE RULE and
 *	    DROP RULE of it; 40P01 when the peeks it waits for may wait for
 *	    a pg_peek worker that waits for its transaction);
 *	  * its body may be replaced by itself (pg_restore does, after the
 *	    catalog's rows): its dependencies are recorded again from the kept
 *	    query (dataflow_record_dependencies_again);
 *	  * anything else that would change it (RENAME, SET SCHEMA, another
 *	    ALTER, another body by CREATE OR REPLACE VIEW or by its ON SELECT
 *	    rule, CREATE OR REPLACE RULE "_RETURN") is refused with 0A000, and
 *	    DROP VIEW without CASCADE with 2BP01, pointing to peek.drop_view.
 *	  DDL on what a maintained view uses is view_uses_guard.c's, and
 *	  ALTER TABLE ... DROP COLUMN of a column a source captures
 *	  source_guard.c's.  Both
 *	  guard another extension's script too (ALTER EXTENSION ... UPDATE),
 *	  not pg_peek's own.  The same hook takes the locks of DROP EXTENSION
 *	  pg_peek (and of DROP OWNED BY its owner) in the runtimes' order, and
 *	  has the maintenance runtime read every object's row again after an
 *	  ALTER EXTENSION pg_peek UPDATE that changed the version, and records
 *	  a captured table's new name in its sources' rows after a rename.
 *	  Writes nothing but the catalog rows of views given to another owner
 *	  and those names.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/wait_event.h"

#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "ipc/notify.h"
#include "peek/peek.h"
#include "peek/slots.h"
#include "sql/source_guard.h"
#include "sql/view_guard.h"
#include "sql/view_uses_guard.h"
#include "storage/catalog.h"
#include "storage/catalog_sources.h"
#include "storage/catalog_views.h"
#include "storage/persist.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

static CatalogObject *
maintained_view_named(RangeVar *name, Oid *relid)
{
	*relid = RangeVarGetRelid(name, NoLock, true);
	return maintained_view_of(*relid);
}

static char *
qualified_relation_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
refuse_change(CatalogObject *view, Oid relid, const char *change)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s view %s: it is the PostgreSQL view of maintained view \"%s\"",
					change, qualified_relation_name(relid), view->name),
			 errdetail("Its name, schema, columns and body are the maintained view's; only its owner can be changed (ALTER VIEW ... OWNER TO)."),
			 errhint("Drop it with peek.drop_view(%s) and create it again with peek.create_view.",
					 quote_literal_cstr(view->name))));
}

/*
 * Whether a view's body is its own persist peek, as create_view makes it:
 * SELECT * FROM peek.persist_peek(NULL::<its row type>, '<its name>').
 */
static bool
body_is_own_peek(Query *body, CatalogObject *view)
{
	RangeTblEntry *rte;
	FuncExpr   *call;
	Const	   *type;
	Const	   *name;
	ListCell   *lc;
	int			varno;

	/* (PostgreSQL 15 keeps a view's OLD and NEW entries first) */
	varno = list_length(body->rtable);
	if (varno == 0 || list_length(body->jointree->fromlist) != 1 ||
		!IsA(linitial(body->jointree->fromlist), RangeTblRef) ||
		((RangeTblRef *) linitial(body->jointree->fromlist))->rtindex != varno ||
		body->jointree->quals != NULL || body->setOperations != NULL || body->cteList != NIL ||
		body->hasAggs || body->hasWindowFuncs || body->hasTargetSRFs || body->hasSubLinks ||
		body->groupClause != NIL || body->havingQual != NULL || body->distinctClause != NIL ||
		body->sortClause != NIL || body->limitCount != NULL || body->limitOffset != NULL ||
		body->rowMarks != NIL)
		return false;
	rte = rt_fetch(varno, body->rtable);
	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 || rte->funcordinality)
		return false;
	call = (FuncExpr *) linitial_node(RangeTblFunction, rte->functions)->funcexpr;
	if (!IsA(call, FuncExpr) || call->funcid != dataflow_persist_peek_oid() ||
		list_length(call->args) != 2 || !IsA(linitial(call->args), Const) ||
		!IsA(lsecond(call->args), Const))
		return false;
	type = linitial(call->args);
	name = lsecond(call->args);
	if (type->consttype != view->row_type || name->consttype != TEXTOID || name->constisnull ||
		strcmp(TextDatumGetCString(name->constvalue), view->name) != 0)
		return false;
	foreach(lc, body->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (tle->resjunk || !IsA(var, Var) || var->varno != varno || var->varlevelsup != 0 ||
			var->varattno != foreach_current_index(lc) + 1)
			return false;
	}
	return true;
}

/*
 * A view's PostgreSQL view replaced: by itself, its dependencies are
 * recorded again; by anything else, refused.
 */
static void
view_replaced(CatalogObject *view, Oid relid)
{
	Relation	rel;
	bool		own;

	CommandCounterIncrement();
	rel = table_open(relid, AccessShareLock);
	own = RelationGetDescr(rel)->natts == list_length(get_view_query(rel)->targetList) &&
		body_is_own_peek(get_view_query(rel), view);
	table_close(rel, AccessShareLock);
	if (!own)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot replace the body of view %s: it is the PostgreSQL view of maintained view \"%s\"",
						qualified_relation_name(relid), view->name),
				 errdetail("Its body is the maintained view's persist peek: SELECT * FROM peek.persist_peek(NULL::%s, %s).",
						   qualified_relation_name(relid), quote_literal_cstr(view->name)),
				 errhint("Drop it with peek.drop_view(%s) and create it again with peek.create_view.",
						 quote_literal_cstr(view->name))));
	dataflow_record_dependencies_again(view, relid);
}

/* ---- owners ---- */

typedef struct OwnerCheck
{
	const char *view;
	Oid			owner;
} OwnerCheck;

static void
owner_check_context(void *arg)
{
	OwnerCheck *check = arg;

	errcontext("maintained view \"%s\", owned by role \"%s\"",
			   check->view, GetUserNameFromId(check->owner, false));
}

/* Raise 42501 unless the owner of view may read input (as its rounds do). */
static void
check_owner_reads(CatalogObject *view, CatalogObject *input)
{
	OwnerCheck	check = {view->name, view->owner};
	ErrorContextCallback context = {error_context_stack, owner_check_context, &check};
	Oid			saved_user;
	int			saved_context;

	error_context_stack = &context;
	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(view->owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
	catalog_check_reader(input);
	SetUserIdAndSecContext(saved_user, saved_context);
	error_context_stack = context.previous;
}

/*
 * After ALTER ... OWNER TO or REASSIGN OWNED: each view whose PostgreSQL
 * view changed owner is given, with its indexes, to the new owner, whose
 * rights its rounds take from now on (each round reads its catalog row);
 * refused (42501) if the new owner may not read one of its
 * inputs, or the owner of a view reading it may not read it.  Sessions
 * forget what they cached of the catalog (its owners).
 */
static void
follow_owners(void)
{
	List	   *given;
	ListCell   *lc;

	if (!OidIsValid(get_extension_oid("pg_peek", true)))
		return;
	CommandCounterIncrement();
	given = catalog_views_given_away();
	foreach(lc, given)
	{
		CatalogObject *view = lfirst(lc);
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(get_typ_typrelid(view->row_type)));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for the PostgreSQL view of \"%s\"", view->name);
		catalog_set_view_owner(view->id, ((Form_pg_class) GETSTRUCT(tup))->relowner);
		ReleaseSysCache(tup);
	}
	/* the checks read the catalog as given */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	foreach(lc, given)
	{
		CatalogObject *view = catalog_find(((CatalogObject *) lfirst(lc))->name);
		char	   *query;
		List	   *inputs;
		ListCell   *li;

		if (catalog_view_definition(view->id, &query, &inputs))
			foreach(li, inputs)
				check_owner_reads(view, catalog_find(lfirst(li)));
		foreach(li, catalog_views_reading(view->name))
			check_owner_reads(lfirst(li), view);
	}
	PopActiveSnapshot();
	if (given != NIL)
		CacheInvalidateRelcacheByRelid(catalog_relid());
}

/*
 * pg_peek's row in pg_extension with this command's changes: its version
 * (NULL if not installed) and, if owner is not NULL, its owner.
 */
static char *
installed_version(Oid *owner)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;
	bool		isnull;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("pg_peek"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, GetLatestSnapshot(), 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (owner != NULL)
			*owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * A drop of pg_peek by a role with its owner's rights locks the extension,
 * then its tables (persist_lock_tables_for_drop), before PostgreSQL's
 * deletion walks them in its own order: DROP EXTENSION pg_peek, and DROP
 * OWNED BY its owner, which drops it with its tables (the shards are the
 * extension owner's too) and locks the role's objects as it finds them.
 */
static void
lock_for_extension_drop(Node *stmt)
{
	Oid			extension = get_extension_oid("pg_peek", true);
	Oid			owner = InvalidOid;
	ListCell   *lc;

	if (!OidIsValid(extension) || !pg_extension_ownercheck(extension, GetUserId()))
		return;
	if (IsA(stmt, DropStmt))
	{
		foreach(lc, ((DropStmt *) stmt)->objects)
			if (strcmp(strVal(lfirst(lc)), "pg_peek") == 0)
				break;
	}
	else
	{
		(void) installed_version(&owner);
		foreach(lc, ((DropOwnedStmt *) stmt)->roles)
			if (get_rolespec_oid(lfirst(lc), true) == owner)
				break;
	}
	if (lc == NULL)
		return;
	LockDatabaseObject(ExtensionRelationId, extension, 0, AccessExclusiveLock);
	persist_lock_tables_for_drop(get_namespace_oid("peek", true));
}

/*
 * After ALTER EXTENSION pg_peek UPDATE, the maintenance runtime reads every
 * object's row again once it commits: a seal that committed while the
 * update waited for its writer was read by the runtime in the catalog the
 * update was replacing, and would stay unpublished until the next write.
 * An update to the version installed already (before, a NOTICE from
 * PostgreSQL) changed nothing, and leaves nothing to tell at commit: a
 * transaction holding it can still be prepared (ipc/notify.c).
 */
static void
reread_after_update(const char *before)
{
	char	   *after;
	ListCell   *lc;

	CommandCounterIncrement();
	after = installed_version(NULL);
	if (before != NULL && after != NULL && strcmp(before, after) == 0)
		return;
	foreach(lc, catalog_read(NULL, -1))
		notify_catalog_changed(((CatalogObject *) lfirst(lc))->id);
}

/* ---- the hook ---- */

/*
 * pg_peek's own script (CREATE EXTENSION, ALTER EXTENSION ... UPDATE) and
 * pg_upgrade's schema restore change no maintained view, and may run
 * before the catalog is whole.  Another extension's script is guarded as
 * its statements are outside one: an update that would give a view's
 * function a new body is refused, naming the view.
 */
static bool
skips_guard(void)
{
	Oid			peek;

	if (IsBinaryUpgrade)
		return true;
	if (!creating_extension)
		return false;
	peek = get_extension_oid("pg_peek", true);
	return !OidIsValid(peek) || CurrentExtensionObject == peek;
}

/*
 * How long view_guard_lock_pg_view stays queued for a view's lock before it
 * looks at the view's peeks again: longer than deadlock_timeout, so that a
 * deadlock of locks alone is still found while it waits.
 */
#define QUEUED_LOCK_MARGIN_MS	100

/*
 * Queue for AccessExclusiveLock on relid for at most wait_ms, in an
 * internal subtransaction whose lock_timeout that is: true once it has the
 * lock (held by the caller's resource owner), false if it left the queue on
 * that timeout.  Any other error (a deadlock, a cancel, the user's own
 * lock_timeout when user_bound) is raised, and so is a statement_timeout
 * that came due with that timeout.
 */
static bool
lock_pg_view_within(Oid relid, int wait_ms, bool user_bound)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		statement_timed = get_timeout_active(STATEMENT_TIMEOUT);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		int			nest = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", psprintf("%d", Max(wait_ms, 1)),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

		/*
		 * Held by the caller's owner, as a lock taken there directly is, so
		 * that it may let go of it (lock_pg_view_taken); the
		 * subtransaction's would pass it to the transaction's.
		 */
		CurrentResourceOwner = owner;
		LockRelationOid(relid, AccessExclusiveLock);
		CurrentResourceOwner = CurTransactionResourceOwner;
		/* the lock goes on with the caller's transaction, lock_timeout not */
		AtEOXact_GUC(true, nest);
	}
	PG_CATCH();
	{
		ErrorData  *edata = spi_subxact_rollback_caught(cxt, owner);

		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || user_bound)
			ReThrowError(edata);

		/*
		 * The statement's timeout, due by the time the wait was ended, was
		 * reported as this one (the earlier of the two): it is raised here.
		 */
		if (statement_timed && !get_timeout_active(STATEMENT_TIMEOUT))
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling statement due to statement timeout")));
		FreeErrorData(edata);
		return false;
	}
	PG_END_TRY();
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return true;
}

/*
 * Take AccessExclusiveLock on a maintained view's PostgreSQL view (relid),
 * as a drop_view (before the view's catalog row) or an ALTER ... OWNER TO
 * does.  A reader of it (SELECT * FROM name while the view hydrates, or a
 * transaction that read it and peeks a later time) holds it while it waits
 * for the view's next round, which locks the view's catalog row, and may
 * open the PostgreSQL view too (the first lookup of its row type in the
 * runtime's process does, as after a restart).  A statement holding the
 * row, or queued for the PostgreSQL view ahead of the round, would wait for
 * that reader forever, and the reader for the round.  So while a peek of
 * the view waits, this only tries the lock, every 10 ms; once none does it
 * queues for it, but for a while only, then looks again: a peek that
 * started waiting just after the look would otherwise wait for ever, its
 * round's lock queued behind this one (the runtime gives up its own wait
 * soon and tries again later).  The user's lock_timeout bounds the whole.
 * The peeks may wait for a source's load that waits for this transaction
 * (it holds an xid: a loader waits for it), which would never end: about
 * once a second (100 waits of 10 ms) a pg_peek worker that waits for it
 * is reported as a deadlock, as it is to a peek of this transaction's own.
 */
void
view_guard_lock_pg_view(PeekObjectId id, Oid relid)
{
	TimestampTz start = GetCurrentTimestamp();
	int			peek_waits = 0;

	for (;;)
	{
		long		waited = TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
		int			wait_ms = (int) Min((int64) DeadlockTimeout + QUEUED_LOCK_MARGIN_MS, INT_MAX);
		bool		user_bound = LockTimeout > 0 && LockTimeout - waited <= wait_ms;

		if (ConditionalLockRelationOid(relid, AccessExclusiveLock))
			return;
		if (LockTimeout > 0 && waited >= LockTimeout)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not obtain lock on view \"%s\"", get_rel_name(relid)),
					 errdetail("A peek of the view waits for it.")));
		if (!peek_slots_waiting_on(id))
		{
			if (lock_pg_view_within(relid, user_bound ? LockTimeout - waited : wait_ms, user_bound))
				return;
		}
		else if (++peek_waits % 100 == 0)
			peek_check_deadlock("view", get_rel_name(relid));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Whether stmt takes relid, a maintained view's PostgreSQL view, for itself
 * by its owner, its schema or its name (those it may: PostgreSQL refuses
 * the others): REASSIGN OWNED and DROP OWNED of its owner, DROP SCHEMA
 * ... CASCADE of its schema, DROP VIEW ... CASCADE of it.
 */
static bool
takes_pg_view(Node *stmt, Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class rel;
	List	   *roles = NIL;
	bool		takes = false;
	ListCell   *lc;

	if (!HeapTupleIsValid(tup))
		return false;
	rel = (Form_pg_class) GETSTRUCT(tup);
	if (IsA(stmt, ReassignOwnedStmt))
		roles = ((ReassignOwnedStmt *) stmt)->roles;
	else if (IsA(stmt, DropOwnedStmt))
		roles = ((DropOwnedStmt *) stmt)->roles;
	foreach(lc, roles)
		takes |= get_rolespec_oid(lfirst(lc), true) == rel->relowner &&
			has_privs_of_role(GetUserId(), rel->relowner);
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_SCHEMA)
		foreach(lc, ((DropStmt *) stmt)->objects)
			takes |= get_namespace_oid(strVal(lfirst(lc)), true) == rel->relnamespace &&
				pg_namespace_ownercheck(rel->relnamespace, GetUserId());
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_VIEW)
		foreach(lc, ((DropStmt *) stmt)->objects)
			takes |= RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)), NoLock, true) == relid &&
				pg_class_ownercheck(relid, GetUserId());
	ReleaseSysCache(tup);
	return takes;
}

/* Whether each of the views reading a view has its PostgreSQL view in locked. */
static bool
readers_locked(CatalogObject *view, List *locked)
{
	ListCell   *lc;

	foreach(lc, catalog_views_reading(view->name))
		if (!list_member_oid(locked, get_typ_typrelid(((CatalogObject *) lfirst(lc))->row_type)))
			return false;
	return true;
}

/*
 * Lock a view's PostgreSQL view as drop_view does; with cascade, those of
 * the views that read it first, which a DROP ... CASCADE of it drops too
 * (their rules depend on its row type), and theirs before them, however
 * deep: the round a reader of one of them waits for opens the PostgreSQL
 * views of what that view reads (after a restart), which must not be
 * locked yet.  A view made over it while this waited (its create_view
 * locks the PostgreSQL view in share mode, so none can be after) is seen
 * once the lock is had: the lock is let go of, and taken again after the
 * new view's.  locked: the PostgreSQL views this statement has locked
 * (each is visited once, a diamond's too); returned with relid's.
 */
static List *
lock_pg_view_taken(CatalogObject *view, bool cascade, List *locked)
{
	Oid			relid = get_typ_typrelid(view->row_type);
	ListCell   *lc;

	if (list_member_oid(locked, relid))
		return locked;
	locked = lappend_oid(locked, relid);
	for (;;)
	{
		if (cascade)
			foreach(lc, catalog_views_reading(view->name))
				locked = lock_pg_view_taken(lfirst(lc), true, locked);
		if (!OidIsValid(relid))
			return locked;
		view_guard_lock_pg_view(view->id, relid);
		if (!cascade || readers_locked(view, locked))
			return locked;
		UnlockRelationOid(relid, AccessExclusiveLock);
	}
}

/*
 * The PostgreSQL views of maintained views a statement will take
 * AccessExclusiveLock on by their owner, schema or name (takes_pg_view),
 * locked first as drop_view does (view_guard_lock_pg_view): queued behind
 * a reader waiting for the view's round, the statement would queue the
 * round behind it, and hang with the reader.  Returns those locked, as
 * lock_pg_view_taken.
 */
static List *
lock_pg_views_taken(Node *stmt, bool cascade)
{
	List	   *locked = NIL;
	ListCell   *lc;

	if (!OidIsValid(get_extension_oid("pg_peek", true)))
		return NIL;
	foreach(lc, catalog_read(NULL, -1))
	{
		CatalogObject *obj = lfirst(lc);
		Oid			relid = obj->kind == PEEK_KIND_VIEW ? get_typ_typrelid(obj->row_type) : InvalidOid;

		if (OidIsValid(relid) && takes_pg_view(stmt, relid))
			locked = lock_pg_view_taken(obj, cascade, locked);
	}
	return locked;
}

static void
view_guard(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		   ProcessUtilityContext context, ParamListInfo params,
		   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	CatalogObject *replaced = NULL;
	bool		owners = false;
	List	   *functions = NIL;
	List	   *captured_drops = NIL;
	Oid			relid = InvalidOid;
	Oid			renamed = InvalidOid;
	CatalogObject *view;
	bool		updates_peek = IsA(stmt, AlterExtensionStmt) && !creating_extension &&
		!IsBinaryUpgrade && strcmp(((AlterExtensionStmt *) stmt)->extname, "pg_peek") == 0;
	char	   *version_before = updates_peek ? installed_version(NULL) : NULL;
	ListCell   *lc;

	if (skips_guard())
		;
	else if (IsA(stmt, AlterTableStmt) &&
		(view = maintained_view_named(((AlterTableStmt *) stmt)->relation, &relid)) != NULL)
	{
		foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			if (lfirst_node(AlterTableCmd, lc)->subtype != AT_ChangeOwner)
				refuse_change(view, relid, "alter");
		if (pg_class_ownercheck(relid, GetUserId()))
			view_guard_lock_pg_view(view->id, relid);
		owners = true;
	}
	else if (IsA(stmt, RuleStmt) &&
			 (view = maintained_view_named(((RuleStmt *) stmt)->relation, &relid)) != NULL)
	{
		/* (an ON SELECT rule is its body: CREATE OR REPLACE RULE "_RETURN") */
		if (((RuleStmt *) stmt)->event == CMD_SELECT)
			replaced = view;
		if (pg_class_ownercheck(relid, GetUserId()))
			view_guard_lock_pg_view(view->id, relid);
	}
	else if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_RULE)
	{
		/* (each a list of the relation's name, then the rule's) */
		foreach(lc, ((DropStmt *) stmt)->objects)
		{
			List	   *rule = lfirst(lc);
			List	   *relation = list_truncate(list_copy(rule), list_length(rule) - 1);

			if ((view = maintained_view_named(makeRangeVarFromNameList(relation), &relid)) != NULL &&
				pg_class_ownercheck(relid, GetUserId()))
				view_guard_lock_pg_view(view->id, relid);
		}
	}
	else if (IsA(stmt, LockStmt) && ((LockStmt *) stmt)->mode == AccessExclusiveLock &&
			 !((LockStmt *) stmt)->nowait)
	{
		/* (LOCK's right to this mode, as PostgreSQL checks it) */
		foreach(lc, ((LockStmt *) stmt)->relations)
			if ((view = maintained_view_named(lfirst(lc), &relid)) != NULL &&
				pg_class_aclcheck(relid, GetUserId(), ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE) == ACLCHECK_OK)
				view_guard_lock_pg_view(view->id, relid);
	}
	else if (IsA(stmt, ReassignOwnedStmt))
	{
		(void) lock_pg_views_taken(stmt, false);
		owners = true;
	}
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->relation != NULL &&
			 (view = maintained_view_named(((RenameStmt *) stmt)->relation, &relid)) != NULL)
		refuse_change(view, relid, "rename");
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->relation != NULL &&
			 (((RenameStmt *) stmt)->renameType == OBJECT_TABLE ||
			  ((RenameStmt *) stmt)->renameType == OBJECT_INDEX))
		/* (ALTER INDEX ... RENAME renames a table too) */
		renamed = RangeVarGetRelid(((RenameStmt *) stmt)->relation, NoLock, true);
	else if (IsA(stmt, AlterObjectSchemaStmt) && ((AlterObjectSchemaStmt *) stmt)->relation != NULL &&
			 (view = maintained_view_named(((AlterObjectSchemaStmt *) stmt)->relation, &relid)) != NULL)
		refuse_change(view, relid, "move");
	else if (IsA(stmt, ViewStmt) && ((ViewStmt *) stmt)->replace)
	{
		RangeVar   *name = ((ViewStmt *) stmt)->view;

		relid = get_relname_relid(name->relname, RangeVarGetCreationNamespace(name));
		replaced = maintained_view_of(relid);
		if (replaced != NULL && pg_class_ownercheck(relid, GetUserId()))
			view_guard_lock_pg_view(replaced->id, relid);
	}
	else if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->behavior == DROP_CASCADE &&
			 ((DropStmt *) stmt)->removeType != OBJECT_EXTENSION)
	{
		List	   *locked = NIL;

		if (((DropStmt *) stmt)->removeType == OBJECT_VIEW ||
			((DropStmt *) stmt)->removeType == OBJECT_SCHEMA)
			locked = lock_pg_views_taken(stmt, true);
		foreach(lc, views_dropped_with((DropStmt *) stmt))
			locked = lock_pg_view_taken(lfirst(lc), true, locked);
	}
	else if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_VIEW)
	{
		foreach(lc, ((DropStmt *) stmt)->objects)
			if ((view = maintained_view_named(makeRangeVarFromNameList(lfirst(lc)), &relid)) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("cannot drop view %s because maintained view \"%s\" is kept in it",
								qualified_relation_name(relid), view->name),
						 errhint("Drop the maintained view, with its PostgreSQL view, with peek.drop_view(%s).",
								 quote_literal_cstr(view->name))));
	}
	else if ((IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION) ||
			 IsA(stmt, DropOwnedStmt))
	{
		lock_for_extension_drop(stmt);
		if (IsA(stmt, DropOwnedStmt))
			(void) lock_pg_views_taken(stmt, ((DropOwnedStmt *) stmt)->behavior == DROP_CASCADE);
	}
	if (!skips_guard())
		functions = view_uses_guard_before(stmt);
	if (!skips_guard() && IsA(stmt, AlterTableStmt))
		captured_drops = source_guard_before((AlterTableStmt *) stmt);

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);

	view_uses_guard_after(functions);
	source_guard_after(captured_drops);
	if (updates_peek)
		reread_after_update(version_before);
	if (owners)
		follow_owners();
	if (replaced != NULL)
		view_replaced(replaced, relid);
	if (OidIsValid(renamed))
		catalog_name_source_table(renamed);
}

void
view_guard_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = view_guard;
}
