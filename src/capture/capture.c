/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Sources: collections fed from a table's committed changes through
 *	  logical decoding, inside the maintenance runtime.
 *
 *	  Each source owns a logical replication slot (plugin "pg_peek", see
 *	  decoder.c).  The slot is created and the table's existing rows loaded
 *	  in one transaction, with the snapshot the slot's creation exports, at
 *	  the time just before the slot's first decodable commit.  That is done
 *	  by a loader, a dynamic background worker per source being loaded
 *	  (creating a slot waits for every running transaction with an xid, so
 *	  the maintenance loop must not); the maintenance runtime starts it,
 *	  learns that it stopped, re-reads the source's row and either decodes
 *	  from the loaded position, or starts another loader.  From then on
 *	  every round decodes the WAL written so far (see write_inserted_wal),
 *	  appends the updates to the shard at their commit LSNs and records the
 *	  decoded position as the source's upper, in one transaction, and keeps
 *	  the updates for the indexes over the source to arrange (capture_feed)
 *	  until the maintenance round is over; only once that commit is flushed
 *	  is the slot told it may forget the WAL (the commit itself does not
 *	  wait).  A crash in between makes the slot replay
 *	  changes the shard already has, which the upper tells apart, so none is
 *	  lost or applied twice.  The upper also rises while the table is idle:
 *	  it is published (not written, which would make WAL to decode) up to
 *	  what has been decoded.
 *
 *	  A table that is dropped, altered to another row type, loses REPLICA
 *	  IDENTITY FULL or gets row-level security fails its source (durably,
 *	  with the reason); so does a slot that someone else dropped or
 *	  advanced, or any error while decoding for it: the slot is dropped, the
 *	  runtime carries on with the other sources.  A slot already missing
 *	  when the runtime takes a loaded source on (a promotion: slots are not
 *	  replicated; a restore) is not a failure: the source is loaded again
 *	  and compacted to the new load, as its history in between is lost.
 *
 *	  Backends use only the strict serializable read time and the nudge.
 *	  Must not publish (maintenance.c does, after a round) nor arrange
 *	  (spine.c does, from the updates a round kept).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "access/xlogutils.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/wait_event.h"

#include "capture/capture.h"
#include "capture/decoder.h"
#include "storage/persist.h"
#include "ipc/registry.h"
#include "common/rows.h"
#include "ipc/shmem.h"
#include "common/spi.h"
#include "arrange/spine.h"
#include "storage/standby_replay.h"

/* A round stops decoding at a commit once it holds this much ... */
#define CAPTURE_ROUND_BYTES		(64 * 1024 * 1024)
/*
 * ... or once it has read this much WAL: catching up (after a restart,
 * through other tables' WAL) goes in steps, between which the other sources
 * and objects go on.
 */
#define CAPTURE_ROUND_WAL		(16 * 1024 * 1024)

/*
 * How often the maintenance runtime looks for new WAL while it has
 * sources: every CAPTURE_POLL_MS while rounds find WAL to decode, every
 * CAPTURE_IDLE_POLL_MS once they found none.
 */
#define CAPTURE_POLL_MS			3L
#define CAPTURE_IDLE_POLL_MS	10L

/* A loader that stopped without loading is started again after this, doubling. */
#define LOADER_RETRY_MIN_MS		1000
#define LOADER_RETRY_MAX_MS		30000

/*
 * While a standby streams, an idle source's decoded upper is written too, at
 * most this often: a standby knows only the durable upper, and would wait
 * for the table's next change to see a later time.  (The write makes WAL,
 * which the next round decodes: hence the bound.)
 */
#define IDLE_UPPER_WRITE_MS		100

typedef struct CaptureStream
{
	PeekObjectId id;			/* key */
	Oid			relid;
	Oid			shard;
	char		slot_name[NAMEDATALEN];
	char		table[NAMEDATALEN]; /* for messages once the table is gone */
	bool		loaded;			/* the initial load committed */
	bool		failed;
	BackgroundWorkerHandle *loader; /* loading it now */
	TimestampTz loader_retry_at;	/* when to start a loader (again) */
	int			loader_retry_ms;
	bool		loader_waits;	/* no background worker was free (logged) */
	int64		durable_upper;	/* the catalog's: the shard has what is before */
	int64		upper;			/* decoded: every commit before it is known */
	TimestampTz idle_written_at;	/* the upper last written without changes */
	XLogRecPtr	read_upto;		/* where the reader stopped */
	XLogRecPtr	confirm_upto;	/* to confirm to the slot once ... */
	XLogRecPtr	confirm_after;	/* ... the WAL is flushed to here */
	XLogRecPtr	confirmed;		/* the slot's confirmed position, as we left it */
	LogicalDecodingContext *ctx;	/* kept across rounds, like a walsender's */
	DecodedChanges changes;		/* the last round's, kept for capture_feed */
	TransactionId held_xid;		/* a decoded commit not visible yet, or invalid */
	int64		held_at;		/* ... its commit LSN, where the upper stays */
	int64		held_from;		/* ... its first update in changes */
	int64		feed_lower;		/* they are all the shard got in [lower, */
	int64		feed_upper;		/* upper); none if equal */
	MemoryContext cxt;
} CaptureStream;

static HTAB *streams = NULL;

/* field4 of the advisory lock a loader holds on its source's id (SQL uses 1, 2) */
#define PEEK_LOADER_LOCK_FIELD4	0x7065

/* A slot's creation waits for the WAL it needs, flushed. */
#define CAPTURE_XL_ROUTINE \
	XL_ROUTINE(.page_read = read_local_xlog_page, \
			   .segment_open = wal_segment_open, \
			   .segment_close = wal_segment_close)

static int	read_written_wal(XLogReaderState *state, XLogRecPtr page, int length,
							 XLogRecPtr record, char *buffer);

/* A round reads what is written, and stops where the writing is. */
#define ROUND_XL_ROUTINE \
	XL_ROUTINE(.page_read = read_written_wal, \
			   .segment_open = wal_segment_open, \
			   .segment_close = wal_segment_close)

static void
slot_name_for(PeekObjectId id, char *name)
{
	snprintf(name, NAMEDATALEN, "pg_peek_%u_" INT64_FORMAT, MyDatabaseId, id);
}

/*
 * Some builds list the libraries trusted as output plugins in
 * output_plugin_libraries (superuser-settable).  The runtime trusts its own
 * library in its own process only: no REPLICATION user gains anything, and
 * the plugin refuses to serve anyone else (decoder.c).
 */
static void
trust_own_output_plugin(void)
{
	const char *trusted = GetConfigOption("output_plugin_libraries", true, false);

	if (trusted == NULL || strstr(trusted, "pg_peek") != NULL)
		return;
	SetConfigOption("output_plugin_libraries",
					trusted[0] ? psprintf("%s, pg_peek", trusted) : "pg_peek",
					PGC_SUSET, PGC_S_OVERRIDE);
}

typedef enum SlotState
{
	SLOT_FREE,
	SLOT_IN_USE,				/* by another process */
	SLOT_GONE
} SlotState;

static SlotState
slot_state(const char *name, pid_t *active_pid)
{
	ReplicationSlot *slot = SearchNamedReplicationSlot(name, true);

	if (slot == NULL)
		return SLOT_GONE;
	SpinLockAcquire(&slot->mutex);
	*active_pid = slot->active_pid;
	SpinLockRelease(&slot->mutex);
	return *active_pid != 0 && *active_pid != MyProcPid ? SLOT_IN_USE : SLOT_FREE;
}

/* Drop a slot unless it is gone or someone else has it in use. */
static void
drop_slot(const char *name)
{
	pid_t		active_pid;

	switch (slot_state(name, &active_pid))
	{
		case SLOT_GONE:
			return;
		case SLOT_IN_USE:
			ereport(LOG,
					(errmsg("pg_peek could not drop replication slot \"%s\": it is in use by PID %d",
							name, (int) active_pid)));
			return;
		case SLOT_FREE:
			break;
	}
	ReplicationSlotDrop(name, true);
}

/*
 * A loaded source's slot is missing when its stream is taken on: the
 * server was promoted (PostgreSQL 15 does not replicate slots) or restored
 * from a backup, or the slot was dropped while no runtime ran.  The
 * changes since the durable upper can no longer be decoded, so the source
 * is loaded again at a new slot's start (load_source).
 */
static bool
slot_lost(CaptureStream *s)
{
	pid_t		active_pid;

	return slot_state(s->slot_name, &active_pid) == SLOT_GONE;
}

/*
 * Let go of a stream's decoding (not of its row type and memory).  Freeing
 * a decoding context cleans up the reorder buffer's spill files under the
 * acquired slot's name; a slot someone else dropped or holds, or a context
 * an error left half-way (whole = false), leaves only the context's memory
 * and its open WAL segment to close (the spill files go with the slot, or
 * when the next context starts).
 */
static void
discard_decoding(CaptureStream *s, bool whole)
{
	pid_t		active_pid;

	if (s->ctx == NULL)
		return;
	if (whole && slot_state(s->slot_name, &active_pid) == SLOT_FREE)
	{
		ReplicationSlotAcquire(s->slot_name, true);
		FreeDecodingContext(s->ctx);
		ReplicationSlotRelease();
	}
	else
	{
		if (s->ctx->reader->seg.ws_file >= 0)
			wal_segment_close(s->ctx->reader);
		/* the reader and the reorder buffer live in it */
		MemoryContextDelete(s->ctx->context);
	}
	s->ctx = NULL;
	/* a new context decodes a held commit again: the slot was not told past it */
	s->held_xid = InvalidTransactionId;
}

/* Stop the stream's loader, if any, and wait until it has let go of the slot. */
static void
stop_loader(CaptureStream *s)
{
	if (s->loader == NULL)
		return;
	TerminateBackgroundWorker(s->loader);
	(void) WaitForBackgroundWorkerShutdown(s->loader);
	pfree(s->loader);
	s->loader = NULL;
}

static void
free_stream(CaptureStream *s)
{
	stop_loader(s);
	discard_decoding(s, true);
	if (s->cxt != NULL)
		MemoryContextDelete(s->cxt);
	s->cxt = NULL;
}

void
capture_reset(void)
{
	HASHCTL		ctl;

	if (streams != NULL)
	{
		HASH_SEQ_STATUS status;
		CaptureStream *s;

		hash_seq_init(&status, streams);
		while ((s = hash_seq_search(&status)) != NULL)
			free_stream(s);
		hash_destroy(streams);
	}
	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(CaptureStream);
	ctl.hcxt = TopMemoryContext;
	streams = hash_create("pg_peek capture streams", 16, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* A stream for a source's catalog row (in a transaction), not loaded yet. */
static void
stream_init(CaptureStream *s, CatalogObject *source)
{
	TupleDesc	desc;
	MemoryContext old;
	char	   *table;

	s->id = source->id;
	s->relid = source->source;
	s->shard = source->shard;
	slot_name_for(source->id, s->slot_name);
	table = get_rel_name(source->source);
	if (table != NULL)
		strlcpy(s->table, table, NAMEDATALEN);
	else
		snprintf(s->table, NAMEDATALEN, "%u", source->source);
	s->loaded = false;
	s->failed = false;
	s->loader = NULL;
	s->loader_retry_at = 0;
	s->loader_retry_ms = LOADER_RETRY_MIN_MS;
	s->loader_waits = false;
	s->durable_upper = s->upper = 0;
	s->idle_written_at = 0;
	s->read_upto = InvalidXLogRecPtr;
	s->confirm_upto = InvalidXLogRecPtr;
	s->confirmed = InvalidXLogRecPtr;
	s->feed_lower = s->feed_upper = 0;
	s->held_xid = InvalidTransactionId;
	s->ctx = NULL;
	s->cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek capture stream",
								   ALLOCSET_DEFAULT_SIZES);
	memset(&s->changes, 0, sizeof(DecodedChanges));
	s->changes.relid = source->source;
	s->changes.cxt = AllocSetContextCreate(s->cxt, "pg_peek decoded changes",
										   ALLOCSET_DEFAULT_SIZES);
	desc = lookup_rowtype_tupdesc(source->row_type, -1);
	old = MemoryContextSwitchTo(s->cxt);
	s->changes.row_desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
	ReleaseTupleDesc(desc);
	decoder_reset(&s->changes);
}

/* The load committed: decode from its position (the slot's start). */
static void
stream_loaded(CaptureStream *s, int64 upper)
{
	s->loaded = true;
	s->durable_upper = s->upper = upper;
}

/*
 * Take on a source from its catalog row (in a transaction).  Returns the
 * upper to publish: what is durable, or further, what has been decoded.
 * A row re-read once its loader stopped tells whether the load committed.
 */
int64
capture_adopt(CatalogObject *source)
{
	CaptureStream *s;
	bool		found;

	if (source->failure != NULL)
	{
		capture_forget(source->id);
		return source->upper;
	}
	s = hash_search(streams, &source->id, HASH_ENTER, &found);
	if (!found)
		stream_init(s, source);
	/* a slot lost (see slot_lost) leaves the source to a loader: loaded again */
	if (!s->loaded && s->loader == NULL && source->upper > 0 && !slot_lost(s))
		stream_loaded(s, source->upper);
	return Max(source->upper, s->upper);
}

/* A dropped or failed source: let go of its loader, its decoding and its slot. */
void
capture_forget(PeekObjectId id)
{
	CaptureStream *s = hash_search(streams, &id, HASH_FIND, NULL);
	char		name[NAMEDATALEN];

	if (s != NULL)
	{
		free_stream(s);
		hash_search(streams, &id, HASH_REMOVE, NULL);
	}
	slot_name_for(id, name);
	drop_slot(name);
}

/*
 * Reconciliation: drop this database's pg_peek slots that belong to no live
 * source (a drop, a failure or a load whose transaction did not commit).
 */
void
capture_drop_orphan_slots(List *live_sources)
{
	char		prefix[NAMEDATALEN];
	List	   *orphans = NIL;
	ListCell   *lc;

	snprintf(prefix, NAMEDATALEN, "pg_peek_%u_", MyDatabaseId);
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *slot = &ReplicationSlotCtl->replication_slots[i];
		bool		live = false;

		if (!slot->in_use || strncmp(NameStr(slot->data.name), prefix, strlen(prefix)) != 0)
			continue;
		foreach(lc, live_sources)
		{
			char		name[NAMEDATALEN];

			slot_name_for(*(PeekObjectId *) lfirst(lc), name);
			if (strcmp(name, NameStr(slot->data.name)) == 0)
				live = true;
		}
		if (!live)
			orphans = lappend(orphans, pstrdup(NameStr(slot->data.name)));
	}
	LWLockRelease(ReplicationSlotControlLock);
	foreach(lc, orphans)
		drop_slot(lfirst(lc));
}

/* Whether the last step's rounds read WAL, and whether one stopped at a bound. */
static bool rounds_read_wal = false;
static bool rounds_bounded = false;

/*
 * How long the maintenance runtime may sleep before the next capture step:
 * -1 without sources, 0 if a round stopped at a bound with WAL left.
 */
long
capture_wait_ms(void)
{
	if (streams == NULL || hash_get_num_entries(streams) == 0)
		return -1;
	if (rounds_bounded)
		return 0;
	return rounds_read_wal ? CAPTURE_POLL_MS : CAPTURE_IDLE_POLL_MS;
}

/*
 * Why the table can no longer be captured, or NULL.  In a transaction.  The
 * table is locked first, so that a DROP or ALTER TABLE is either complete
 * or waits; a decoding round does not wait for one in progress (wait =
 * false) and looks again on the next round, which its commit brings.
 */
static char *
check_table(CaptureStream *s, bool wait)
{
	HeapTuple	tup;
	Form_pg_class rel;
	char	   *failure = NULL;
	TupleDesc	desc;

	if (wait)
		LockRelationOid(s->relid, AccessShareLock);
	else if (!ConditionalLockRelationOid(s->relid, AccessShareLock))
		return NULL;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(s->relid));
	if (!HeapTupleIsValid(tup))
		return psprintf("table \"%s\" was dropped", s->table);
	rel = (Form_pg_class) GETSTRUCT(tup);
	strlcpy(s->table, NameStr(rel->relname), NAMEDATALEN);
	if (rel->relreplident != REPLICA_IDENTITY_FULL)
		failure = psprintf("table \"%s\" no longer has REPLICA IDENTITY FULL", s->table);
	else if (rel->relrowsecurity)
		failure = psprintf(ROW_SECURITY_FAILURE, s->table);
	else if ((failure = decoder_undecodable(rel)) == NULL)
	{
		desc = lookup_rowtype_tupdesc(rel->reltype, -1);
		if (!rows_match_table(desc, s->changes.row_desc))
			failure = psprintf("the row type of table \"%s\" changed: it no longer matches the source's row type %s",
							   s->table, format_type_be(s->changes.row_desc->tdtypeid));
		ReleaseTupleDesc(desc);
	}
	ReleaseSysCache(tup);
	return failure;
}

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

/* Record a failure durably; the caller commits. */
static void
fail_source(CaptureStream *s, const char *failure)
{
	ereport(LOG,
			(errmsg("pg_peek source " INT64_FORMAT " failed: %s", s->id, failure)));
	catalog_set_failure(s->id, failure);
	s->failed = true;
}

/*
 * Fail a loaded source outside a round: record why (durably: the slot goes
 * next) and let go of its decoding and its slot.
 */
static void
fail_stream(CaptureStream *s, const char *failure)
{
	MemoryContext caller = spi_xact_begin();

	(void) set_config_option("synchronous_commit", "on",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	/* dropped meanwhile: the catalog notice forgets it */
	if (catalog_lock_extension() && catalog_lock_row(s->id, false))
		fail_source(s, failure);
	s->failed = true;
	spi_xact_commit(caller);
	discard_decoding(s, false);
	drop_slot(s->slot_name);
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
	int64		durable_since;

	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	durable_since = catalog_read_since(s->id, GetActiveSnapshot());
	(void) persist_compact(s->shard, durable_since, time);
	PopActiveSnapshot();
	catalog_set_since(s->id, time);
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
				persist_retract_all(s->shard, (int64) start - 1);
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
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
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
	BackgroundWorker worker;
	MemoryContext old;
	bool		started;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_peek");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "capture_loader_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_peek loader for source " INT64_FORMAT, s->id);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_peek loader");
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	memcpy(worker.bgw_extra, &s->id, sizeof(PeekObjectId));
	worker.bgw_notify_pid = MyProcPid;

	old = MemoryContextSwitchTo(s->cxt);
	started = RegisterDynamicBackgroundWorker(&worker, &s->loader);
	MemoryContextSwitchTo(old);
	if (started)
	{
		s->loader_waits = false;
		return;
	}
	s->loader = NULL;
	if (!s->loader_waits)
		ereport(LOG,
				(errmsg("pg_peek source " INT64_FORMAT " waits for a background worker to load table \"%s\"",
						s->id, s->table),
				 errhint("Raise max_worker_processes.")));
	s->loader_waits = true;
	s->loader_retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), LOADER_RETRY_MIN_MS);
}

/*
 * A source not loaded yet: start its loader when due.  Returns true once
 * the loader has stopped, so that the source's row is read again: loaded,
 * failed, or (killed, or an error) to be loaded by another loader later.
 */
static bool
loader_step(CaptureStream *s)
{
	pid_t		pid;

	if (s->loader == NULL)
	{
		if (GetCurrentTimestamp() >= s->loader_retry_at)
			start_loader(s);
		return false;
	}
	if (GetBackgroundWorkerPid(s->loader, &pid) != BGWH_STOPPED)
		return false;
	pfree(s->loader);
	s->loader = NULL;
	s->loader_retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), s->loader_retry_ms);
	s->loader_retry_ms = Min(s->loader_retry_ms * 2, LOADER_RETRY_MAX_MS);
	return true;
}

/*
 * No record starts inside a page header, so the first byte of a page and
 * the first byte after its header are the same position for times:
 * GetXLogInsertRecPtr points after the header, a decoded end at the page.
 */
static Size
page_header_at(XLogRecPtr ptr)
{
	if (ptr % XLOG_BLCKSZ != 0)
		return 0;
	return XLogSegmentOffset(ptr, wal_segment_size) == 0 ? SizeOfXLogLongPHD : SizeOfXLogShortPHD;
}

/*
 * A round decodes the WAL the server has written -- handed to the
 * operating system, not necessarily fsynced -- as PostgreSQL shows an
 * asynchronous commit to other sessions before its WAL is on disk: a
 * PostgreSQL crash loses nothing written, and an operating system crash
 * loses such a commit together with the shard rows decoded from it, which
 * follow it in the WAL.  Sessions with synchronous_commit on write their
 * commits themselves; the WAL writer writes pages as they fill.  What is
 * left unwritten -- the tail of a moderately busy server's last page,
 * which the WAL writer leaves for up to wal_writer_delay -- is written here
 * (XLogFlush: there is no write without the flush) once it has stayed
 * unwritten for CAPTURE_TAIL_MS.  A busy server, whose pages fill and are
 * written before that, pays no fsync for capture at all, and a round never
 * waits on the disk while the WAL writer keeps up.
 */
#define CAPTURE_TAIL_MS		10

static XLogRecPtr unwritten_tail = InvalidXLogRecPtr;	/* a round saw it unwritten */
static TimestampTz unwritten_since;
static bool written_end_reached;

/*
 * Write (and flush) the WAL inserted so far if it is not written yet and
 * either its tail has waited CAPTURE_TAIL_MS or the caller cannot wait.
 * Returns the insert position: a round decodes up to it, or to where the
 * written WAL ends if that is before.
 */
static XLogRecPtr
write_inserted_wal(bool at_once)
{
	XLogRecPtr	now = GetXLogInsertRecPtr();
	XLogRecPtr	page = now - now % XLOG_BLCKSZ;
	/* what was inserted ends at the page's start if now is past its header */
	XLogRecPtr	end = now - page_header_at(page) == page ? page : now;
	XLogRecPtr	written = GetXLogWriteRecPtr();
	TimestampTz at = GetCurrentTimestamp();

	if (written >= end)
		unwritten_tail = InvalidXLogRecPtr;
	else if (at_once ||
			 (!XLogRecPtrIsInvalid(unwritten_tail) && written < unwritten_tail &&
			  TimestampDifferenceExceeds(unwritten_since, at, CAPTURE_TAIL_MS)))
	{
		XLogFlush(end);
		unwritten_tail = InvalidXLogRecPtr;
	}
	else if (XLogRecPtrIsInvalid(unwritten_tail) || written >= unwritten_tail)
	{
		/* a new tail: the last one was written meanwhile */
		unwritten_tail = end;
		unwritten_since = at;
	}
	return now;
}

/*
 * The page reader of a round: a page as far as the WAL is written; none
 * past that (the reader then stops with written_end_reached, and the round
 * ends before the record it could not finish).  On a timeline that ended
 * (a source older than a promotion), up to where it ended.
 */
static int
read_written_wal(XLogReaderState *state, XLogRecPtr page, int length, XLogRecPtr record,
				 char *buffer)
{
	TimeLineID	tli = GetWALInsertionTimeLine();
	XLogRecPtr	written = GetXLogWriteRecPtr();
	WALReadError errinfo;

	XLogReadDetermineTimeline(state, page, length, tli);
	if (state->currTLI != tli)
	{
		written = state->currTLIValidUntil;
		tli = state->currTLI;
	}
	if (page + length > written)
	{
		written_end_reached = true;
		return -1;
	}
	if (!WALRead(state, buffer, page, XLOG_BLCKSZ, tli, &errinfo))
		WALReadRaiseError(&errinfo);
	return page + XLOG_BLCKSZ <= written ? XLOG_BLCKSZ : (int) (written - page);
}

/* The time bound a decoded end gives: every commit before it is known. */
static int64
decoded_upper(XLogRecPtr end)
{
	return (int64) (end + page_header_at(end));
}

/* How many of the round's updates are for the shard: none of a held commit. */
static int64
round_updates(CaptureStream *s)
{
	return TransactionIdIsValid(s->held_xid) ? s->held_from : s->changes.n;
}

/* Append a round's updates not yet in the shard. */
static void
write_updates(CaptureStream *s)
{
	ShardWriter *w = persist_writer_open(s->shard);
	int64		n = round_updates(s);

	for (int64 i = 0; i < n; i++)
	{
		DecodedUpdate *u = &s->changes.updates[i];

		/* replayed after a crash: the shard has it */
		if (u->time < s->durable_upper)
			continue;
		if (u->truncate)
		{
			persist_writer_close(w);
			persist_retract_all(s->shard, u->time);
			w = persist_writer_open(s->shard);
		}
		else
			persist_writer_add(w, u->time, u->diff, u->row);
	}
	persist_writer_close(w);
}

/*
 * Tell the slot it may forget the WAL before confirm_upto, once the round
 * that wrote those changes to the shard is durable.
 */
static void
confirm_if_flushed(CaptureStream *s)
{
	if (XLogRecPtrIsInvalid(s->confirm_upto) || GetFlushRecPtr(NULL) < s->confirm_after)
		return;
	ReplicationSlotAcquire(s->slot_name, true);
	LogicalConfirmReceivedLocation(s->confirm_upto);
	ReplicationSlotMarkDirty();
	s->confirmed = MyReplicationSlot->data.confirmed_flush;
	ReplicationSlotRelease();
	s->confirm_upto = InvalidXLogRecPtr;
}

/*
 * Let go of the last round's updates, but for a held commit's
 * (hold_if_invisible): they are decoded, and the slot is not told past them.
 */
static void
drop_changes(CaptureStream *s)
{
	if (!TransactionIdIsValid(s->held_xid))
		decoder_reset(&s->changes);
	else if (s->held_from > 0)
	{
		decoder_keep_from(&s->changes, s->held_from);
		s->held_from = 0;
	}
	s->feed_lower = s->feed_upper = 0;
}

/*
 * A commit the round has just replayed with updates for the source whose
 * transaction is still in progress -- in the proc array, its session
 * waiting for the commit's flush or for a synchronous standby -- is not
 * visible to other sessions yet, and a failover before the standby has it
 * loses it: the round stops after it and holds the source's upper at it,
 * keeping its updates.  Later rounds look again (decode_round) and go on
 * once it is visible; the peeks wait for it as SQL does.  One proc array
 * look-up per commit that touched the table: the rounds' only cost.
 */
static bool
hold_if_invisible(CaptureStream *s)
{
	DecodedChanges *c = &s->changes;
	TransactionId xid = c->commit_xid;

	if (!TransactionIdIsValid(xid))
		return false;
	c->commit_xid = InvalidTransactionId;
	if (!TransactionIdIsInProgress(xid))
		return false;
	s->held_xid = xid;
	s->held_at = c->commit_at;
	s->held_from = c->commit_from;
	return true;
}

/*
 * Keep a round's updates, all the shard got in [lower, upper), for the
 * indexes over the source -- unless a TRUNCATE among them was written as
 * retractions of the shard's rows (persist_retract_all), which the updates
 * do not show.
 */
static void
keep_round(CaptureStream *s, int64 lower, int64 upper)
{
	for (int64 i = 0; i < s->changes.n; i++)
		if (s->changes.updates[i].truncate)
			return;
	s->feed_lower = lower;
	s->feed_upper = upper;
}

/* A SpineFeed's scan: the kept updates with lower <= time < upper. */
static void
scan_kept_round(void *state, int64 lower, int64 upper, SpineUpdateFn fn, void *arg)
{
	CaptureStream *s = state;

	for (int64 i = 0; i < s->changes.n; i++)
	{
		DecodedUpdate *u = &s->changes.updates[i];

		/* replayed ones before lower are in the shard from an earlier round */
		if (u->time >= lower && u->time < upper)
			fn(u->time, u->diff, u->row, arg);
	}
}

/*
 * The updates the source's last round appended to its shard, for an index
 * to arrange instead of reading them back (spine.c).  False if none are
 * kept: the index reads the shard.
 */
bool
capture_feed(PeekObjectId source, SpineFeed *feed)
{
	CaptureStream *s = streams != NULL ?
		hash_search(streams, &source, HASH_FIND, NULL) : NULL;

	if (s == NULL || s->feed_upper <= s->feed_lower)
		return false;
	feed->lower = s->feed_lower;
	feed->upper = s->feed_upper;
	feed->scan = scan_kept_round;
	feed->state = s;
	return true;
}

/*
 * After the maintenance round's publications: the indexes have followed
 * the rounds' updates (one that did not, after an error, reads the shard),
 * so their memory is given back.
 */
void
capture_release_rounds(void)
{
	HASH_SEQ_STATUS status;
	CaptureStream *s;

	if (streams == NULL)
		return;
	hash_seq_init(&status, streams);
	while ((s = hash_seq_search(&status)) != NULL)
		if (s->changes.n > 0 || s->feed_upper > s->feed_lower)
			drop_changes(s);
}

/*
 * Decode the slot's WAL up to end_of_wal (or a round's worth) into the
 * stream's changes.  Returns why the slot cannot be read, or NULL.
 */
static const char *
decode_changes(CaptureStream *s, XLogRecPtr end_of_wal)
{
	const char *failure = NULL;
	MemoryContext old;
	XLogRecPtr	start;

	/*
	 * The reader keeps what it allocates across rounds (it frees an
	 * oversized record on the next read), so it runs in the stream's memory.
	 */
	old = MemoryContextSwitchTo(s->cxt);
	ReplicationSlotAcquire(s->slot_name, true);
	/* invalidated: neither the WAL nor the catalog rows it needs are kept */
	if (XLogRecPtrIsInvalid(MyReplicationSlot->data.restart_lsn))
		failure = "the WAL its replication slot needs was removed (max_slot_wal_keep_size)";
	else if (s->ctx != NULL && MyReplicationSlot->data.confirmed_flush != s->confirmed)
		failure = "its replication slot was advanced by another process";
	if (failure != NULL)
	{
		ReplicationSlotRelease();
		MemoryContextSwitchTo(old);
		return failure;
	}
	if (s->ctx == NULL)
	{
		decoder_collect_into(&s->changes);
		trust_own_output_plugin();
		s->ctx = CreateDecodingContext(InvalidXLogRecPtr, NIL, false, ROUND_XL_ROUTINE,
									   NULL, NULL, NULL);
		XLogBeginRead(s->ctx->reader, MyReplicationSlot->data.restart_lsn);
		s->confirmed = MyReplicationSlot->data.confirmed_flush;
	}
	drop_changes(s);
	/* a held commit that is visible now (decode_round): its updates lead */
	s->held_xid = InvalidTransactionId;
	written_end_reached = false;
	start = s->ctx->reader->EndRecPtr;
	while (decoded_upper(s->ctx->reader->EndRecPtr) < (int64) end_of_wal &&
		   s->changes.bytes < CAPTURE_ROUND_BYTES && s->changes.failure == NULL &&
		   s->ctx->reader->EndRecPtr - start < CAPTURE_ROUND_WAL)
	{
		char	   *errm = NULL;
		XLogRecord *record = XLogReadRecord(s->ctx->reader, &errm);

		if (record == NULL && written_end_reached)
		{
			/* the next round reads that record again, from its start */
			XLogBeginRead(s->ctx->reader, s->ctx->reader->EndRecPtr);
			break;
		}
		if (errm != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not read WAL for the source of table \"%s\": %s",
							s->table, errm)));
		if (record != NULL)
		{
			LogicalDecodingProcessRecord(s->ctx, s->ctx->reader);
			if (hold_if_invisible(s))
				break;
		}
		CHECK_FOR_INTERRUPTS();
	}
	s->read_upto = s->ctx->reader->EndRecPtr;
	if (!written_end_reached && s->changes.failure == NULL &&
		!TransactionIdIsValid(s->held_xid) &&
		decoded_upper(s->read_upto) < (int64) end_of_wal)
		rounds_bounded = true;
	/* the flag it set would hide our transactions' xmin from vacuum */
	ReplicationSlotRelease();
	MemoryContextSwitchTo(old);
	return NULL;
}

/*
 * Append the round's updates and the new upper in one transaction, and
 * record a failure (*failure: the decoder's, or the table's as checked
 * now).  Returns false if the source is gone.
 */
static bool
write_round(CaptureStream *s, int64 upper, char **failure)
{
	bool		exists;
	bool		idle_due = round_updates(s) == 0 && upper > s->durable_upper &&
		TimestampDifferenceExceeds(s->idle_written_at, GetCurrentTimestamp(),
								   IDLE_UPPER_WRITE_MS) &&
		standby_streaming();

	MemoryContext caller = spi_xact_begin();

	catalog_bound_lock_waits();
	/* dropped with the extension: the runtime's next check resets capture */
	exists = catalog_lock_extension();
	if (exists && *failure == NULL)
		*failure = check_table(s, false);
	if (exists && (round_updates(s) > 0 || *failure != NULL || idle_due))
	{
		/* a failure must be durable before the slot goes: that commit waits */
		(void) set_config_option("synchronous_commit", *failure == NULL ? "off" : "on",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
		exists = catalog_lock_row(s->id, false);
		if (exists)
		{
			write_updates(s);
			catalog_set_upper(s->id, Max(upper, s->durable_upper));
			if (*failure != NULL)
				fail_source(s, *failure);
		}
	}
	spi_xact_commit(caller);
	if (exists && idle_due)
	{
		s->durable_upper = upper;
		s->idle_written_at = GetCurrentTimestamp();
	}
	return exists;
}

/*
 * One round: decode the WAL inserted so far (or a round's worth), then
 * append the updates and the new upper in one transaction.  That commit
 * does not wait for its flush: the slot is told only once it is flushed
 * (at the latest by the next round's flush), so a crash before that replays
 * the changes.  Returns whether the upper rose.
 */
static bool
decode_round(CaptureStream *s)
{
	XLogRecPtr	end_of_wal;
	XLogRecPtr	read_from;
	pid_t		active_pid;
	bool		wrote;
	int64		upper;
	const char *unreadable;
	char	   *failure;
	bool		exists;
	bool		released = false;

	/*
	 * The slot is the source's, but a superuser or a REPLICATION role can
	 * drop it, use it for a while (the plugin refuses to decode for them:
	 * wait) or advance it past changes the shard does not have.
	 */
	switch (slot_state(s->slot_name, &active_pid))
	{
		case SLOT_GONE:
			fail_stream(s, "its replication slot was dropped");
			return true;
		case SLOT_IN_USE:
			return false;
		case SLOT_FREE:
			break;
	}
	/* a held commit: nothing after it is decoded until it is visible */
	if (TransactionIdIsValid(s->held_xid))
	{
		if (TransactionIdIsInProgress(s->held_xid))
		{
			confirm_if_flushed(s);
			/* most are a flush away: look again at the busy pace */
			rounds_read_wal = true;
			return false;
		}
		released = true;
	}
	else if (GetXLogInsertRecPtr() <= s->read_upto + page_header_at(s->read_upto))
		return false;
	/* a record boundary: records before it are whole (and most written) */
	end_of_wal = write_inserted_wal(false);
	confirm_if_flushed(s);
	read_from = s->read_upto;

	unreadable = decode_changes(s, end_of_wal);
	if (unreadable != NULL)
	{
		fail_stream(s, unreadable);
		return true;
	}

	/* the written WAL ends where the last round stopped */
	if (s->read_upto == read_from && s->changes.failure == NULL && !released)
		return false;
	rounds_read_wal = true;

	failure = s->changes.failure;
	if (failure != NULL)
		upper = s->changes.failed_at;
	else if (TransactionIdIsValid(s->held_xid))
		upper = s->held_at;
	else
		upper = decoded_upper(s->read_upto);

	exists = write_round(s, upper, &failure);
	if (!exists)
		return false;			/* dropped: the catalog notice forgets it */
	wrote = round_updates(s) > 0;
	if (wrote || failure != NULL)
		s->durable_upper = Max(upper, s->durable_upper);
	if (failure != NULL)
	{
		discard_decoding(s, true);
		drop_slot(s->slot_name);
		return true;
	}

	/* a held commit is decoded again after a restart */
	s->confirm_upto = TransactionIdIsValid(s->held_xid) ? (XLogRecPtr) s->held_at : s->read_upto;
	s->confirm_after = wrote ? XactLastCommitEnd : InvalidXLogRecPtr;
	confirm_if_flushed(s);

	if (upper <= s->upper)
		return false;
	keep_round(s, s->upper, upper);
	s->upper = upper;
	return true;
}

/* An error the same round may not meet again: a lock or a slot busy for now. */
static bool
error_is_transient(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_TRANSACTION_ROLLBACK ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		sqlerrcode == ERRCODE_OBJECT_IN_USE;
}

/*
 * A round whose error fails only its source.  The error may come from
 * anywhere in the round (the slot, the WAL, the plugin, the shard), inside
 * the round's transaction, one the reorder buffer started, or none: undo
 * what it left as a top-level error handler would, then fail the source.
 * After a transient error (a lock timeout, a slot someone else took for a
 * moment) the source decodes again from its slot on the next round: the
 * durable upper tells the changes the shard has.  A cancel is the
 * runtime's business.
 */
static bool
guarded_round(CaptureStream *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *edata;
	SlotState	slot;
	pid_t		active_pid;
	volatile bool raised = false;

	PG_TRY();
	{
		raised = decode_round(s);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			PG_RE_THROW();
		FlushErrorState();
		AbortCurrentTransaction();
		LWLockReleaseAll();
		ConditionVariableCancelSleep();
		pgstat_report_wait_end();
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		CurrentResourceOwner = owner;
		MemoryContextSwitchTo(cxt);
		ereport(LOG,
				(errmsg("pg_peek source " INT64_FORMAT " could not decode: %s", s->id, edata->message)));
		slot = slot_state(s->slot_name, &active_pid);
		if (slot == SLOT_GONE)
		{
			fail_stream(s, "its replication slot was dropped");
			raised = true;
		}
		else if (slot == SLOT_IN_USE || error_is_transient(edata->sqlerrcode))
		{
			discard_decoding(s, false);
			s->read_upto = InvalidXLogRecPtr;
			s->confirm_upto = InvalidXLogRecPtr;
		}
		else
		{
			fail_stream(s, psprintf("decoding its changes failed: %s", edata->message));
			raised = true;
		}
	}
	PG_END_TRY();
	return raised;
}

/*
 * Load new sources and decode for the loaded ones.  Returns the ids (a
 * List of PeekObjectId *) whose catalog row or upper changed, to publish.
 */
List *
capture_step(void)
{
	HASH_SEQ_STATUS status;
	CaptureStream *s;
	List	   *ids = NIL;
	List	   *changed = NIL;
	ListCell   *lc;

	rounds_read_wal = false;
	rounds_bounded = false;
	if (streams == NULL)
		return NIL;
	/* collect first: rounds end transactions, which a hash scan must not span */
	hash_seq_init(&status, streams);
	while ((s = hash_seq_search(&status)) != NULL)
		if (!s->failed)
			ids = lappend(ids, &s->id);
	foreach(lc, ids)
	{
		PeekObjectId id = *(PeekObjectId *) lfirst(lc);
		bool		raised;

		s = hash_search(streams, &id, HASH_FIND, NULL);
		raised = s->loaded ? guarded_round(s) : loader_step(s);
		if (raised)
		{
			PeekObjectId *copy = palloc(sizeof(PeekObjectId));

			*copy = id;
			changed = lappend(changed, copy);
		}
	}
	return changed;
}

/* ---- backends ---- */

/* create_source's check: logical decoding must be possible. */
void
capture_check_requirements(const char *source)
{
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create source \"%s\": pg_peek sources require wal_level = logical",
						source),
				 errdetail("wal_level is \"%s\".", GetConfigOption("wal_level", false, false)),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
	if (max_replication_slots == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create source \"%s\": pg_peek sources require max_replication_slots > 0",
						source),
				 errhint("Each source uses one replication slot.")));
}

/*
 * Strict serializable: read at the current WAL position, so every
 * transaction committed before the peek (commit LSN below it) is included.
 * Decoding reads only written WAL: the peek writes it, not to wait for the
 * maintenance runtime's next flush.
 */
int64
capture_strict_time(void)
{
	/* on a standby: every transaction replayed so far */
	if (RecoveryInProgress())
		return (int64) GetXLogReplayRecPtr(NULL) - 1;
	return (int64) write_inserted_wal(true) - 1;
}

/* A peek that will wait for ingestion wakes the maintenance runtime now. */
void
capture_nudge(PeekObjectId source, int64 time)
{
	if (registry_published_upper(source) <= time)
		shmem_wake_runtime(PEEK_RUNTIME_MAINTENANCE);
}

/*
 * Mark the WAL of this process's transactions as pg_peek's own (origin
 * DoNotReplicateId, which no user session can set), so that decoding
 * skips it at once (decoder.c): the maintenance runtime's shard appends
 * and a loader's initial load.  Physical replication and recovery ignore
 * the mark.
 */
void
capture_skip_own_writes(void)
{
	replorigin_session_origin = DoNotReplicateId;
}
