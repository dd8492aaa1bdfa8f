/*-------------------------------------------------------------------------
 *
 * streams.c
 *	  The maintenance runtime's sources: a stream per source, its slot
 *	  (named, found, dropped; orphans dropped), taken on, forgotten and
 *	  reset, and the table checks that fail a source durably; and the mark
 *	  that keeps a runtime's or loader's own writes from being decoded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogutils.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "common/rows.h"
#include "common/spi.h"
#include "storage/catalog_sources.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"

HTAB	   *capture_streams = NULL;

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
void
trust_own_output_plugin(void)
{
	const char *trusted = GetConfigOption("output_plugin_libraries", true, false);

	if (trusted == NULL || strstr(trusted, "pg_peek") != NULL)
		return;
	SetConfigOption("output_plugin_libraries",
					trusted[0] ? psprintf("%s, pg_peek", trusted) : "pg_peek",
					PGC_SUSET, PGC_S_OVERRIDE);
}

SlotState
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
void
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
bool
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
void
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
	s->own_xids = NULL;			/* (in its memory) */
	s->own_last = InvalidTransactionId;
	s->catalog_xids = NULL;
	s->toast_xids = NULL;
	/* the next one reads from the slot's restart point: older records */
	if (s->changes.other_tables != NULL)
		s->changes.other_tables_generation = capture_relcache_generation - 1;
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

	if (capture_streams != NULL)
	{
		HASH_SEQ_STATUS status;
		CaptureStream *s;

		hash_seq_init(&status, capture_streams);
		while ((s = hash_seq_search(&status)) != NULL)
			free_stream(s);
		hash_destroy(capture_streams);
	}
	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(CaptureStream);
	ctl.hcxt = TopMemoryContext;
	capture_streams = hash_create("pg_peek capture capture_streams", 16, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * A dropped table's name, for messages: as the catalog kept it (the name
 * of its last rename, which this runtime may not have seen, or may have
 * started after), else its OID.
 */
static void
name_dropped_table(CaptureStream *s)
{
	char	   *kept = catalog_source_table_name(s->id);

	if (kept != NULL)
		strlcpy(s->table, kept, NAMEDATALEN);
	else
		snprintf(s->table, NAMEDATALEN, "%u", s->relid);
}

/*
 * A stream for a source's catalog row (in a transaction), not loaded yet.
 * The row type is looked up first: that may fail (a lock timeout on its
 * relation) before anything is allocated.
 */
void
stream_init(CaptureStream *s, CatalogObject *source)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(source->row_type, -1);
	MemoryContext old;
	char	   *table;
	HASHCTL		ctl;

	s->id = source->id;
	s->relid = source->source;
	s->shard = source->shard;
	slot_name_for(source->id, s->slot_name);
	table = get_rel_name(source->source);
	if (table != NULL)
		strlcpy(s->table, table, NAMEDATALEN);
	else
		name_dropped_table(s);
	s->loaded = false;
	s->failed = false;
	s->loader = NULL;
	backoff_init(&s->loader_retry, LOADER_RETRY_MIN_MS, LOADER_RETRY_MAX_MS);
	s->loader_waits = false;
	s->durable_upper = s->upper = 0;
	s->idle_written_at = 0;
	s->retry_at = 0;
	s->read_upto = InvalidXLogRecPtr;
	s->confirm_upto = InvalidXLogRecPtr;
	s->confirmed = InvalidXLogRecPtr;
	s->feed_lower = s->feed_upper = 0;
	s->held_xid = InvalidTransactionId;
	s->ctx = NULL;
	s->own_xids = NULL;
	s->own_last = InvalidTransactionId;
	s->catalog_xids = NULL;
	s->toast_xids = NULL;
	s->cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek capture stream",
								   ALLOCSET_DEFAULT_SIZES);
	memset(&s->changes, 0, sizeof(DecodedChanges));
	s->changes.relid = source->source;
	s->changes.cxt = AllocSetContextCreate(s->cxt, "pg_peek decoded changes",
										   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(s->cxt);
	s->changes.row_desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
	ctl.keysize = ctl.entrysize = sizeof(RelFileNode);
	ctl.hcxt = s->cxt;
	s->changes.other_tables = hash_create("pg_peek other tables' relfilenodes", 64, &ctl,
										  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	s->changes.other_tables_generation = capture_relcache_generation;
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

	if (source->failure != NULL)
	{
		capture_forget(source->id);
		return source->upper;
	}
	s = hash_search(capture_streams, &source->id, HASH_FIND, NULL);
	if (s == NULL)
	{
		CaptureStream fresh;

		/*
		 * Made whole before it is entered: an error on the way (the adoption
		 * retried) leaves no stream half made, which a later round would
		 * decode with no row type.
		 */
		stream_init(&fresh, source);
		s = hash_search(capture_streams, &source->id, HASH_ENTER, NULL);
		memcpy(s, &fresh, sizeof(CaptureStream));
	}
	/* a slot lost (see slot_lost) leaves the source to a loader: loaded again */
	if (!s->loaded && s->loader == NULL && source->upper > 0 && !slot_lost(s))
		stream_loaded(s, source->upper);
	return Max(source->upper, s->upper);
}

/* A dropped or failed source: let go of its loader, its decoding and its slot. */
void
capture_forget(PeekObjectId id)
{
	CaptureStream *s = hash_search(capture_streams, &id, HASH_FIND, NULL);
	char		name[NAMEDATALEN];

	if (s != NULL)
	{
		free_stream(s);
		hash_search(capture_streams, &id, HASH_REMOVE, NULL);
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

/* Why a source whose table was dropped failed (the name as the catalog kept it). */
static char *
dropped_table_failure(CaptureStream *s)
{
	name_dropped_table(s);
	return psprintf("table \"%s\" was dropped", s->table);
}

/* Lock the table (!wait: try to) so that a DROP or ALTER is complete or not begun. */
static bool
lock_table(CaptureStream *s, bool wait)
{
	if (wait)
		LockRelationOid(s->relid, AccessShareLock);
	else if (!ConditionalLockRelationOid(s->relid, AccessShareLock))
		return false;
	return true;
}

/*
 * Why the table can no longer be captured, or NULL.  In a transaction.  The
 * table is locked first, so that a DROP or ALTER TABLE is either complete
 * or waits; a decoding round does not wait for one in progress (wait =
 * false) and looks again on the next round, which its commit brings.
 */
char *
check_table(CaptureStream *s, bool wait)
{
	HeapTuple	tup;
	Form_pg_class rel;
	char	   *failure = NULL;
	TupleDesc	desc;

	if (!lock_table(s, wait))
		return NULL;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(s->relid));
	if (!HeapTupleIsValid(tup))
		return dropped_table_failure(s);
	rel = (Form_pg_class) GETSTRUCT(tup);
	strlcpy(s->table, NameStr(rel->relname), NAMEDATALEN);
	if (rel->relreplident != REPLICA_IDENTITY_FULL)
		failure = psprintf("table \"%s\" no longer has REPLICA IDENTITY FULL", s->table);
	else if (rel->relrowsecurity)
		failure = psprintf(ROW_SECURITY_FAILURE, s->table);
	else if ((failure = decoder_undecodable(rel)) == NULL)
	{
		desc = lookup_rowtype_tupdesc(rel->reltype, -1);
		if (!rows_match_table(desc, s->changes.row_desc, NULL))
			failure = psprintf("the row type of table \"%s\" changed: it no longer matches the source's row type %s",
							   s->table, format_type_be(s->changes.row_desc->tdtypeid));
		ReleaseTupleDesc(desc);
	}
	ReleaseSysCache(tup);
	return failure;
}

/* Record a failure durably; the caller commits. */
void
fail_source(CaptureStream *s, const char *failure)
{
	ereport(LOG,
			(errmsg("pg_peek source " INT64_FORMAT " failed: %s", s->id, failure)));
	catalog_set_failure(s->id, failure);
	s->failed = true;
}

/*
 * Fail a loaded source outside a round: record why (durably: the slot goes
 * next) and let go of its decoding and its slot.  With table_first, a
 * dropped table is the reason if it was: a decoding error can be only how
 * a drop shows (a type it looks up gone with the table).
 */
void
fail_stream(CaptureStream *s, const char *failure, bool table_first)
{
	MemoryContext caller = spi_xact_begin();

	(void) set_config_option("synchronous_commit", "on",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
	/* dropped meanwhile: the catalog notice forgets it */
	if (catalog_lock_extension() && catalog_lock_row(s->id, false))
	{
		if (table_first && lock_table(s, false) &&
			!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(s->relid)))
			failure = dropped_table_failure(s);
		fail_source(s, failure);
	}
	s->failed = true;
	spi_xact_commit(caller);
	discard_decoding(s, false);
	drop_slot(s->slot_name);
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
