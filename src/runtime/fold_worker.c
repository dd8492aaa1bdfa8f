/*-------------------------------------------------------------------------
 *
 * fold_worker.c
 *	  A fold done outside the maintenance runtime: a fold worker (a
 *	  dynamic background worker per fold, which folds.c starts) folds one
 *	  collection's shard in one transaction of its own, then exits: a
 *	  bounded step of its recent updates, the first time after its base
 *	  however many updates it has (a load), or a compaction's since that
 *	  has too many updates past the base to fold in the runtime.  The runtime meanwhile seals, captures and runs
 *	  views' rounds as usual: a write committed during the fold is visible
 *	  as soon as it would be without it.  The fold is persist_fold's, as
 *	  the runtime's own, within the server's maintenance_work_mem however
 *	  big the time: base and catalog change together at its commit,
 *	  so a peek sees the base before the fold or after it, never half of
 *	  it; a worker that dies leaves nothing, and a fold of the same base
 *	  that committed first (a compaction, a worker an earlier runtime
 *	  started) makes it fail with a serialization failure, changing
 *	  nothing (logged, not an error: the runtime looks at the base again
 *	  when the worker stops).  Only one worker runs at a time, so none
 *	  waits long for a lock: a writer's open transaction holding the
 *	  collection's catalog row makes it give way after
 *	  FOLD_WORKER_LOCK_WAIT_MS (55P03, logged), and the runtime does not
 *	  start one while a writer holds the row (fold_worker_row_free).
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
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "capture/capture.h"
#include "common/errors.h"
#include "common/settings.h"
#include "common/spi.h"
#include "common/workers.h"
#include "ipc/notify.h"
#include "runtime/fold_worker.h"
#include "storage/catalog.h"
#include "storage/catalog_locks.h"
#include "storage/persist.h"

/*
 * How long a fold worker waits for a lock (the collection's catalog row
 * that its commit changes, its shard), then gives way: a writer holds the
 * row only briefly unless its transaction stays open, and every other
 * collection's big fold waits for this one.
 */
#define FOLD_WORKER_LOCK_WAIT_MS	"1000"

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
	int64		since;			/* a compaction's (0: the since stays) */
	int64		target;
	int64		max_rows;
	bool		first_alone;	/* the first time after the base, however big */
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
 * The relation of the collection's row type (a view's PostgreSQL view, a
 * composite type's) is locked first, as DDL locks them: a drop_view locks
 * the view, then the row; DROP FUNCTION of a function a view uses, or DROP
 * TYPE, locks the relation, then the shard that depends on it.  The fold
 * keeps the row and the shard, and its first lookup of the row type in this
 * process opens the relation: in that order it would wait for such DDL
 * while the DDL waits for it (a deadlock, one of the two canceled).
 */
static void
lock_row_type_relation(PeekObjectId id)
{
	CatalogObject *obj = catalog_object_in(catalog_read(&id, 1), id);
	Oid			relid = obj != NULL ? get_typ_typrelid(obj->row_type) : InvalidOid;

	if (OidIsValid(relid))
		LockRelationOid(relid, AccessShareLock);
}

/*
 * Start a fold worker for a collection's shard: with since, a compaction
 * to it (target since, max_rows -1); without, whole times after its base
 * within max_rows, towards target (with first_alone, at least the first
 * however many updates it has: a big time).  Returns its handle (allocated
 * in TopMemoryContext), or NULL without a free background worker.
 */
BackgroundWorkerHandle *
fold_worker_start(PeekObjectId id, Oid shard, int64 since, int64 target, int64 max_rows,
				  bool first_alone)
{
	FoldRequest req = {id, shard, since, target, max_rows, first_alone};
	char		name[BGW_MAXLEN];

	snprintf(name, BGW_MAXLEN, "pg_peek fold of object " INT64_FORMAT, id);
	return worker_start("fold_worker_main", name, "pg_peek fold", &req, sizeof(req),
						TopMemoryContext);
}

typedef struct RowProbe
{
	PeekObjectId id;
	bool		free;
	int64		base_time;		/* PG_INT64_MIN: not read */
} RowProbe;

static void
probe_row(void *arg)
{
	RowProbe   *probe = arg;

	spi_xact_no_standby_wait();
	if (!catalog_lock_extension())
		return;
	probe->free = catalog_lock_row(probe->id, true);
	(void) catalog_read_since(probe->id, GetActiveSnapshot(), &probe->base_time);
}

/*
 * Whether no writer's transaction holds a collection's catalog row now
 * (false too if the row is gone): a fold worker started while one does
 * would only wait for it, keeping every other collection's big fold
 * waiting.  Locks the row for a moment, in a transaction of its own.
 */
bool
fold_worker_row_free(PeekObjectId id)
{
	int64		base_time;

	return fold_worker_probe(id, &base_time);
}

/*
 * After a fold worker stopped: whether no writer holds the collection's
 * row now (see fold_worker_row_free), and its base's time (*base_time;
 * PG_INT64_MIN without the row), which tells whether the worker moved it.
 */
bool
fold_worker_probe(PeekObjectId id, int64 *base_time)
{
	RowProbe	probe = {id, false, PG_INT64_MIN};

	spi_run_in_transaction(probe_row, &probe);
	*base_time = probe.base_time;
	return probe.free;
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

/*
 * The maintenance runtime's niceness (pg_peek.maintenance_nice), if it
 * can; not lower: a fold writes WAL and shard pages, and a worker niced
 * further, descheduled holding their locks on a busy machine, would hold
 * up the writers that wait for them.
 */
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
 * A fold worker: folds as a runtime's fold step does (or as its
 * compaction does, with a since), in one transaction, at the maintenance
 * runtime's lowered priority (a fold is housekeeping: backends go first).  A later worker for the same collection (one that an
 * earlier runtime started outlived it) waits for the earlier one, then
 * folds from where it left the base.
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
	worker_pin_settings();
	/* a source's decoding skips the fold's shard rows, as the runtime's */
	capture_skip_own_writes();

	/* the lock first: niced on a loaded machine, a restarted runtime could miss it */
	fold_worker_lock_tag(&tag, req.id);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	lower_priority();
	SetConfigOption("lock_timeout", FOLD_WORKER_LOCK_WAIT_MS, PGC_SUSET, PGC_S_OVERRIDE);

	PG_TRY();
	{
		MemoryContext caller = spi_xact_begin();

		spi_xact_no_standby_wait();
		if (catalog_lock_extension())
		{
			lock_row_type_relation(req.id);
			if (folds_kept(req.id, req.shard))
			{
				(void) persist_fold(req.id, req.shard, req.since, req.target, req.max_rows,
									req.first_alone);
				/* the runtime re-reads the row: its compaction learns the since */
				if (req.since > 0)
					notify_catalog_changed(req.id);
			}
		}
		spi_xact_commit(caller);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (!error_is_transient(edata->sqlerrcode))
			PG_RE_THROW();
		/* (a fold of the same base that committed first, a writer's open transaction) */
		FlushErrorState();
		AbortCurrentTransaction();
		error_log_isolated(edata, psprintf("pg_peek fold of object " INT64_FORMAT " gave way, to be looked at again",
										   req.id));
	}
	PG_END_TRY();
}
