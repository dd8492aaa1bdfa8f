/*-------------------------------------------------------------------------
 *
 * loader.c
 *	  Loading a source: a loader (a dynamic background worker per source)
 *	  creates the slot and loads the table's rows in one transaction with
 *	  the snapshot the slot's creation exports; the maintenance runtime
 *	  starts loaders, learns that they stopped and retries after a wait
 *	  that doubles (common/backoff.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "replication/snapbuild.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"

#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "common/spi.h"
#include "common/workers.h"
#include "ipc/runtime_slots.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"

/* A slot's creation waits for the WAL it needs, flushed. */
#define CAPTURE_XL_ROUTINE \
	XL_ROUTINE(.page_read = read_local_xlog_page, \
			   .segment_open = wal_segment_open, \
			   .segment_close = wal_segment_close)

/* The table's rows under the active snapshot, into the shard at time. */
static void
load_rows(CaptureStream *s, int64 time)
{
	Relation	rel = table_open(s->relid, AccessShareLock);
	TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ShardWriter *w = persist_writer_open(s->shard);
	MemoryContext per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek load",
												  ALLOCSET_DEFAULT_SIZES);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		MemoryContext old = MemoryContextSwitchTo(per_row);
		bool		should_free;
		HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
		char	   *failure = NULL;
		Datum		row;

		CHECK_FOR_INTERRUPTS();
		row = decoder_table_row(RelationGetDescr(rel), tuple, NULL, false,
								s->changes.row_desc, s->table, &failure);
		if (failure != NULL)
			elog(ERROR, "%s", failure); /* check_table ran first */
		persist_writer_add(w, time, 1, row);
		MemoryContextSwitchTo(old);
		MemoryContextReset(per_row);
	}
	MemoryContextDelete(per_row);
	persist_writer_close(w);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * A source loaded again (its slot was lost): the shard's old contents were
 * retracted and the table's rows added at time, so it is compacted to time
 * at once, in the load's transaction.  Its history before is gone: the
 * changes between its durable upper and the new slot's start are known only
 * as the difference the load made, so no time before is exact.
 */
static void
compact_to_reload(CaptureStream *s, int64 time)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	(void) persist_fold(s->id, s->shard, time, time, -1, false);
	PopActiveSnapshot();
}

/*
 * Create the slot and load the table's rows, in one transaction run with
 * the snapshot the slot exports: rows committed before the slot's start are
 * in the snapshot, later commits will be decoded.  The rows get the time
 * just before the start, and the start becomes the upper.  In a loader.
 */
static void
load_source(CaptureStream *s)
{
	LogicalDecodingContext *ctx;
	XLogRecPtr	start;
	char	   *failure = NULL;
	bool		exists;
	MemoryContext caller = CurrentMemoryContext;

	/* a slot an earlier version's loader persisted before its load committed */
	drop_slot(s->slot_name);

	StartTransactionCommand();
	if (wal_level < WAL_LEVEL_LOGICAL)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		if (catalog_lock_row(s->id, false))
			fail_source(s, "wal_level is not logical");
		PopActiveSnapshot();
		CommitTransactionCommand();
		return;
	}
	XactIsoLevel = XACT_REPEATABLE_READ;
	trust_own_output_plugin();
	ReplicationSlotCreate(s->slot_name, true, RS_EPHEMERAL, false);
	decoder_collect_into(&s->changes);
	ctx = CreateInitDecodingContext("pg_peek", NIL, true, InvalidXLogRecPtr,
									CAPTURE_XL_ROUTINE, NULL, NULL, NULL);
	DecodingContextFindStartpoint(ctx);
	RestoreTransactionSnapshot(SnapBuildInitialSnapshot(ctx->snapshot_builder), MyProc);
	start = MyReplicationSlot->data.confirmed_flush;
	FreeDecodingContext(ctx);

	PushActiveSnapshot(GetTransactionSnapshot());
	exists = catalog_lock_extension() && catalog_lock_row(s->id, false);
	if (exists)
	{
		failure = check_table(s, true);
		if (failure != NULL)
			fail_source(s, failure);
		else
		{
			if (s->durable_upper > 0)
				persist_retract_all(s->id, s->shard, (int64) start - 1);
			load_rows(s, (int64) start - 1);
			if (s->durable_upper > 0)
				compact_to_reload(s, (int64) start - 1);
			catalog_set_upper(s->id, (int64) start);
		}
	}
	spi_xact_commit(caller);

	/*
	 * The slot stays ephemeral until the load has committed: a loader that
	 * dies before leaves no slot, so a source with an upper always has the
	 * slot its load made, or none (slot_lost).  Releasing an ephemeral slot
	 * drops it.
	 */
	if (exists && failure == NULL)
		ReplicationSlotPersist();
	ReplicationSlotRelease();
	if (!exists || failure != NULL)
		return;
	ereport(LOG,
			(errmsg("pg_peek source " INT64_FORMAT " %s table \"%s\" at %X/%X",
					s->id, s->durable_upper > 0 ? "lost its slot and loaded again" : "loaded",
					s->table, LSN_FORMAT_ARGS(start))));
}

/*
 * A loader: a dynamic background worker that loads one source (its id in
 * bgw_extra, its database in bgw_main_arg), then exits.  An error exits
 * too, leaving a persistent slot at most, which the next loader drops.  One
 * loader per source at a time: one that an earlier maintenance runtime
 * started (and that outlived it) finishes before another looks.
 */
void
capture_loader_main(Datum arg)
{
	PeekObjectId id;
	CaptureStream s;
	LOCKTAG		tag;
	bool		load = false;
	ListCell   *lc;
	MemoryContext caller;

	memcpy(&id, MyBgworkerEntry->bgw_extra, sizeof(PeekObjectId));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	worker_pin_settings();
	capture_skip_own_writes();

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (id >> 32), (uint32) id,
						 PEEK_LOADER_LOCK_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);

	caller = spi_xact_begin();
	if (catalog_lock_extension())
		foreach(lc, catalog_read(&id, 1))
		{
			CatalogObject *obj = lfirst(lc);

			if (obj->id == id && OidIsValid(obj->source) && obj->failure == NULL)
			{
				stream_init(&s, obj);
				s.durable_upper = obj->upper;
				load = obj->upper == 0 || slot_lost(&s);
			}
		}
	spi_xact_commit(caller);
	if (load)
		load_source(&s);
}

/* Start a loader for the stream; without a free background worker, later. */
static void
start_loader(CaptureStream *s)
{
	char		name[BGW_MAXLEN];

	snprintf(name, BGW_MAXLEN, "pg_peek loader for source " INT64_FORMAT, s->id);
	s->loader = worker_start("capture_loader_main", name, "pg_peek loader",
							 &s->id, sizeof(PeekObjectId), s->cxt);
	if (s->loader != NULL)
	{
		s->loader_waits = false;
		return;
	}
	if (!s->loader_waits)
		ereport(LOG,
				(errmsg("pg_peek source " INT64_FORMAT " waits for a background worker to load table \"%s\"",
						s->id, s->table),
				 errhint("Raise max_worker_processes.")));
	s->loader_waits = true;
	backoff_put_off(&s->loader_retry, LOADER_RETRY_MIN_MS, GetCurrentTimestamp());
}

/*
 * A source not loaded yet: start its loader when due.  Returns true once
 * the loader has stopped, so that the source's row is read again: loaded,
 * failed, or (killed, or an error) to be loaded by another loader later.
 */
bool
loader_step(CaptureStream *s)
{
	pid_t		pid;

	if (s->loader == NULL)
	{
		if (backoff_due(&s->loader_retry, GetCurrentTimestamp()))
			start_loader(s);
		return false;
	}
	if (GetBackgroundWorkerPid(s->loader, &pid) != BGWH_STOPPED)
		return false;
	pfree(s->loader);
	s->loader = NULL;
	backoff_failed(&s->loader_retry, GetCurrentTimestamp());
	return true;
}

