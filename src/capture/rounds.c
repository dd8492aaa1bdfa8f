/*-------------------------------------------------------------------------
 *
 * rounds.c
 *	  Capture rounds in the maintenance runtime: the WAL written so far is
 *	  decoded per source, its updates appended to the shard at their commit
 *	  LSNs with the decoded upper in one transaction, kept for the indexes
 *	  to arrange (capture_feed), and confirmed to the slot once flushed.  A
 *	  failing round fails its source alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog_internal.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "replication/decode.h"
#include "storage/procarray.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "common/errors.h"
#include "common/spi.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

static int	read_written_wal(XLogReaderState *state, XLogRecPtr page, int length,
							 XLogRecPtr record, char *buffer);

/* A round reads what is written, and stops where the writing is. */
#define ROUND_XL_ROUTINE \
	XL_ROUTINE(.page_read = read_written_wal, \
			   .segment_open = wal_segment_open, \
			   .segment_close = wal_segment_close)

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
	if (capture_streams == NULL || hash_get_num_entries(capture_streams) == 0)
		return -1;
	if (rounds_bounded)
		return 0;
	return rounds_read_wal ? CAPTURE_POLL_MS : CAPTURE_IDLE_POLL_MS;
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
XLogRecPtr
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
			persist_retract_all(s->id, s->shard, u->time);
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
	CaptureStream *s = capture_streams != NULL ?
		hash_search(capture_streams, &source, HASH_FIND, NULL) : NULL;

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

	if (capture_streams == NULL)
		return;
	hash_seq_init(&status, capture_streams);
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
	historic_caches_enter(capture_oldest_replay(s, start));
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
			capture_note_catalog_xact(s, s->ctx->reader);
		if (record != NULL && !capture_other_tables_change(s, s->ctx->reader))
		{
			capture_note_own_record(s, s->ctx->reader);
			LogicalDecodingProcessRecord(s->ctx, s->ctx->reader);
			if (hold_if_invisible(s))
				break;
		}
		CHECK_FOR_INTERRUPTS();
	}
	historic_caches_leave();
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
			fail_stream(s, "its replication slot was dropped", false);
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
		fail_stream(s, unreadable, false);
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
	/*
	 * A round that wrote nothing still waits for the last one that did: its
	 * commit may not be flushed yet (asynchronous commit), and confirming
	 * past its changes then could lose them to a crash.
	 */
	if (wrote)
		s->confirm_after = XactLastCommitEnd;
	confirm_if_flushed(s);

	if (upper <= s->upper)
		return false;
	keep_round(s, s->upper, upper);
	s->upper = upper;
	return true;
}

/*
 * A round whose error fails only its source.  The error may come from
 * anywhere in the round (the slot, the WAL, the plugin, the shard), inside
 * the round's transaction, one the reorder buffer started, or none: undo
 * what it left as a top-level error handler would, then fail the source.
 * After a transient error (a lock timeout, a slot someone else took for a
 * moment, a captured TRUNCATE's sort past temp_file_limit) the source
 * decodes again from its slot CAPTURE_RETRY_MS later, not at once (an
 * error that lasts would be met again as fast as rounds go): the durable
 * upper tells the changes the shard has.  A cancel is the runtime's
 * business.
 */
#define CAPTURE_RETRY_MS	1000

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
		historic_caches_leave();
		error_log_isolated(edata, psprintf("pg_peek source " INT64_FORMAT " could not decode", s->id));
		slot = slot_state(s->slot_name, &active_pid);
		if (slot == SLOT_GONE)
		{
			fail_stream(s, "its replication slot was dropped", false);
			raised = true;
		}
		else if (slot == SLOT_IN_USE || error_is_transient(edata->sqlerrcode))
		{
			discard_decoding(s, false);
			s->read_upto = InvalidXLogRecPtr;
			s->confirm_upto = InvalidXLogRecPtr;
			s->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), CAPTURE_RETRY_MS);
		}
		else
		{
			fail_stream(s, psprintf("decoding its changes failed: %s", edata->message), true);
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
	if (capture_streams == NULL)
		return NIL;
	/* collect first: rounds end transactions, which a hash scan must not span */
	hash_seq_init(&status, capture_streams);
	while ((s = hash_seq_search(&status)) != NULL)
		if (!s->failed)
			ids = lappend(ids, &s->id);
	foreach(lc, ids)
	{
		PeekObjectId id = *(PeekObjectId *) lfirst(lc);
		bool		raised;

		s = hash_search(capture_streams, &id, HASH_FIND, NULL);
		if (s->loaded && GetCurrentTimestamp() < s->retry_at)
			continue;
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

