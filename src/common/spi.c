/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  Small helpers used by every layer: SPI connected as the extension's
 *	  owner (with search_path pinned and the operation security-restricted),
 *	  a transaction of its own with a snapshot, for the runtimes, and the
 *	  end of an internal subtransaction that caught an error.
 *
 *	  Must not call any other file of pg_peek.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/spi.h"

/*
 * The extension's statements run as its owner (a superuser), so nothing the
 * caller controls may reach them: search_path is pinned, as PostgreSQL does
 * for maintenance commands, and the operation is security-restricted.
 */
static void
become_extension_owner(SavedUser *saved)
{
	Oid			nsp = get_namespace_oid("peek", false);
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);

	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(owner, saved->sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	saved->guc_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", PEEK_SAFE_SEARCH_PATH, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

static void
restore_user(SavedUser *saved)
{
	AtEOXact_GUC(false, saved->guc_nestlevel);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/* Connect SPI as the extension's owner; spi_finish_as_owner undoes it. */
void
spi_connect_as_owner(SavedUser *saved)
{
	become_extension_owner(saved);
	SPI_connect();
}

void
spi_finish_as_owner(SavedUser *saved)
{
	SPI_finish();
	restore_user(saved);
}

/* An SPI call that did not return what it must: a can't-happen error. */
void
spi_check(int ret, int expected, const char *what)
{
	if (ret != expected)
		elog(ERROR, "%s failed: %s", what, SPI_result_code_string(ret));
}

/* Start a transaction of its own with a snapshot (a runtime's, a loader's). */
MemoryContext
spi_xact_begin(void)
{
	MemoryContext caller = CurrentMemoryContext;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	return caller;
}

/*
 * Commit leaves TopMemoryContext current: the caller's context (a runtime
 * loop's round context) is restored, so that what the round allocates
 * afterwards is freed with the round.
 */
void
spi_xact_commit(MemoryContext caller)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(caller);
}

/* Run fn in a transaction of its own. */
void
spi_run_in_transaction(void (*fn) (void *arg), void *arg)
{
	MemoryContext caller = spi_xact_begin();

	fn(arg);
	spi_xact_commit(caller);
	pgstat_report_stat(false);
}

/*
 * The current transaction's commit is flushed locally but waits for no
 * synchronous standby (synchronous_commit = local): for a runtime's
 * housekeeping (compaction, pruning), which must not stop the runtime
 * while a standby is slow or absent, and which a failover may lose
 * without harm (it is done again).
 */
void
spi_xact_no_standby_wait(void)
{
	(void) set_config_option("synchronous_commit", "local", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * In the PG_CATCH of an internal subtransaction begun in cxt under owner:
 * the error copied into cxt, the subtransaction rolled back, and cxt and
 * owner current again.
 */
ErrorData *
spi_subxact_rollback_caught(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}
