/*-------------------------------------------------------------------------
 *
 * fold_worker.c
 *	  A big time folded outside the maintenance runtime: a fold worker (a
 *	  dynamic background worker per fold, which folds.c starts) folds the
 *	  first time after one collection's base, however many updates it has
 *	  (a load), in one transaction of its own, then exits.  The runtime
 *	  meanwhile seals, captures and runs views' rounds as usual: a write
 *	  committed during the fold is visible as soon as it would be without
 *	  it.  The fold is persist_fold's, as the runtime's own: base and
 *	  catalog change together at its commit, so a peek sees the base
 *	  before the time or after it, never half of it; a worker that dies
 *	  leaves nothing, and a fold of the same base that committed first
 *	  (a compaction, a worker an earlier runtime started) makes it fail
 *	  with a serialization failure, changing nothing (logged, not an
 *	  error: the runtime looks at the base again when the worker stops).
 *
 *	  Owns the worker's start and its body; when to start one is folds.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "capture/capture.h"
#include "common/errors.h"
#include "common/settings.h"
#include "common/spi.h"
#include "runtime/fold_worker.h"
#include "storage/catalog.h"
#include "storage/persist.h"

/* The advisory lock's fourth field: one fold worker per collection at a time. */
#define FOLD_WORKER_LOCK_FIELD4	0x666f

/* The advisory lock a fold worker holds while it runs. */
static void
fold_worker_lock_tag(LOCKTAG *tag, PeekObjectId id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (id >> 32), (uint32) id,
						 FOLD_WORKER_LOCK_FIELD4);
}

/* What a fold worker folds, in its bgw_extra. */
typedef struct FoldRequest
{
	PeekObjectId id;
	Oid			shard;
	int64		target;
	int64		max_rows;
} FoldRequest;

StaticAssertDecl(sizeof(FoldRequest) <= BGW_EXTRALEN, "a fold request fits in bgw_extra");

/*
 * Before a fold of a collection's shard: the drop of the collection waits
 * for the fold, or the fold is skipped, its row gone or held by a drop
 * (catalog_keep_row); and the shard is still there (a DROP TYPE ...
 * CASCADE or DROP TABLE of a source's table drops it without the row),
 * and stays until the fold's transaction ends.
 */
bool
folds_kept(PeekObjectId id, Oid shard)
{
	return catalog_keep_row(id) && persist_lock_shard(shard);
}

/*
 * Start a fold worker for the first time after a collection's base and
 * whole times after it within max_rows, towards target.  Returns its handle
 * (allocated in TopMemoryContext), or NULL without a free background
 * worker.
 */
BackgroundWorkerHandle *
fold_worker_start(PeekObjectId id, Oid shard, int64 target, int64 max_rows)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	FoldRequest req = {id, shard, target, max_rows};
	MemoryContext old;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_peek");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "fold_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_peek fold of object " INT64_FORMAT, id);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_peek fold");
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	memcpy(worker.bgw_extra, &req, sizeof(req));
	/* its stop sets the runtime's latch */
	worker.bgw_notify_pid = MyProcPid;

	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		handle = NULL;
	MemoryContextSwitchTo(old);
	return handle;
}

/*
 * Whether a fold worker (one that an earlier runtime started: this
 * runtime's own it knows by its handle) folds a collection's base now.
 */
bool
fold_worker_running(PeekObjectId id)
{
	LOCKTAG		tag;

	fold_worker_lock_tag(&tag, id);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, true);
	return false;
}

/* The maintenance runtime's niceness (pg_peek.maintenance_nice), if it can. */
static void
lower_priority(void)
{
	int			nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if (errno == 0)
		(void) setpriority(PRIO_PROCESS, 0, Min(nice + setting_maintenance_nice, 19));
}

/*
 * A fold worker: folds as a runtime's fold step with first_alone does, in
 * one transaction, at the maintenance runtime's lowered priority (a fold
 * is housekeeping: backends go first).  A later worker for the same
 * collection (one that an earlier runtime started outlived it) waits for
 * the earlier one, then folds from where it left the base.
 */
void
fold_worker_main(Datum arg)
{
	FoldRequest req;
	LOCKTAG		tag;
	MemoryContext cxt = CurrentMemoryContext;

	memcpy(&req, MyBgworkerEntry->bgw_extra, sizeof(req));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	SetConfigOption("search_path", PEEK_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_OVERRIDE);
	/* a source's decoding skips the fold's shard rows, as the runtime's */
	capture_skip_own_writes();

	/* the lock first: niced on a loaded machine, a restarted runtime could miss it */
	fold_worker_lock_tag(&tag, req.id);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	lower_priority();

	PG_TRY();
	{
		MemoryContext caller = spi_xact_begin();

		spi_xact_no_standby_wait();
		if (catalog_lock_extension() && folds_kept(req.id, req.shard))
			(void) persist_fold(req.id, req.shard, 0, req.target, req.max_rows, true);
		spi_xact_commit(caller);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (!error_is_transient(edata->sqlerrcode))
			PG_RE_THROW();
		/* (a fold of the same base that committed first) */
		FlushErrorState();
		AbortCurrentTransaction();
		error_log_isolated(edata, psprintf("pg_peek fold of object " INT64_FORMAT " gave way, to be looked at again",
										   req.id));
	}
	PG_END_TRY();
}
