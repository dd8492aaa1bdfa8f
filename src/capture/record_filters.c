/*-------------------------------------------------------------------------
 *
 * record_filters.c
 *	  What a capture round notes of each WAL record before it hands it to
 *	  logical decoding, and the records it need not hand over: the
 *	  transactions that are pg_peek's own (their origin), which never
 *	  replay and so do not bound the historic caches' replay position
 *	  (capture_oldest_replay); the transactions changing the catalog, while
 *	  which nothing is skipped; the transactions whose last record was a
 *	  TOAST table's insertion, whose next change carries it; and the heap
 *	  changes of tables a replay showed are not the source's (decoder.c
 *	  notes them), skipped unread.
 *
 *	  Per stream, in its decoding context's memory (streams.c forgets them
 *	  with it).  Must not decode (rounds.c does) nor write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam_xlog.h"
#include "access/xact.h"
#include "access/xlogreader.h"
#include "replication/origin.h"
#include "replication/reorderbuffer.h"
#include "storage/standby.h"
#include "utils/hsearch.h"

#include "capture/capture_internal.h"

/*
 * Note a record's transaction as pg_peek's own (origin DoNotReplicateId,
 * capture_skip_own_writes): decoding skips its changes and forgets it at
 * its commit, so it never replays.
 */
static void
xid_set_add(CaptureStream *s, HTAB **set, const char *name, TransactionId xid)
{
	if (*set == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = ctl.entrysize = sizeof(TransactionId);
		ctl.hcxt = s->ctx->context;
		*set = hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	(void) hash_search(*set, &xid, HASH_ENTER, NULL);
}

static void
note_own(CaptureStream *s, TransactionId xid)
{
	xid_set_add(s, &s->own_xids, "pg_peek own transactions decoded", xid);
}

void
capture_note_own_record(CaptureStream *s, XLogReaderState *reader)
{
	TransactionId xid = XLogRecGetXid(reader);

	if (XLogRecGetOrigin(reader) != DoNotReplicateId || !TransactionIdIsValid(xid) ||
		xid == s->own_last)
		return;
	note_own(s, xid);
	s->own_last = xid;
}

static bool
is_own(CaptureStream *s, TransactionId xid)
{
	return s->own_xids != NULL && hash_search(s->own_xids, &xid, HASH_FIND, NULL) != NULL;
}

/* Forget the transactions of the set that a running-transactions record says ended. */
static void
forget_ended(HTAB *set, TransactionId oldest)
{
	HASH_SEQ_STATUS status;
	TransactionId *known;

	if (set == NULL || hash_get_num_entries(set) == 0)
		return;
	hash_seq_init(&status, set);
	while ((known = hash_seq_search(&status)) != NULL)
		if (TransactionIdPrecedes(*known, oldest))
			(void) hash_search(set, known, HASH_REMOVE, NULL);
}

/*
 * Note, or forget, a transaction the reader met changing the catalog (a
 * catalog tuple's command id, or its invalidations), until its commit or
 * abort record (its subtransactions' too), or a running-transactions
 * record saying it is gone (it crashed): capture_other_tables_change skips
 * nothing meanwhile.  Such a transaction's invalidations are executed only at its
 * commit, but its own later records already write the files it gave
 * another table (the source's files swapped with another table's, then
 * the source written, in one transaction): a relfilenode noted as another
 * table's may be the source's in them.
 */
void
capture_note_catalog_xact(CaptureStream *s, XLogReaderState *reader)
{
	uint8		rmid = XLogRecGetRmid(reader);
	uint8		info = XLogRecGetInfo(reader);
	TransactionId xid = InvalidTransactionId;
	bool		ends = false;

	if (rmid == RM_HEAP2_ID && (info & XLOG_HEAP_OPMASK) == XLOG_HEAP2_NEW_CID)
		xid = ((xl_heap_new_cid *) XLogRecGetData(reader))->top_xid;
	else if (rmid == RM_XACT_ID && (info & XLOG_XACT_OPMASK) == XLOG_XACT_INVALIDATIONS)
		xid = XLogRecGetXid(reader);
	else if (rmid == RM_XACT_ID && s->catalog_xids != NULL &&
			 hash_get_num_entries(s->catalog_xids) > 0)
	{
		uint8		op = info & XLOG_XACT_OPMASK;

		ends = true;
		if (op == XLOG_XACT_COMMIT || op == XLOG_XACT_COMMIT_PREPARED)
		{
			xl_xact_parsed_commit parsed;

			ParseCommitRecord(info, (xl_xact_commit *) XLogRecGetData(reader), &parsed);
			xid = op == XLOG_XACT_COMMIT ? XLogRecGetXid(reader) : parsed.twophase_xid;
			for (int i = 0; i < parsed.nsubxacts; i++)
				(void) hash_search(s->catalog_xids, &parsed.subxacts[i], HASH_REMOVE, NULL);
		}
		else if (op == XLOG_XACT_ABORT || op == XLOG_XACT_ABORT_PREPARED)
		{
			xl_xact_parsed_abort parsed;

			ParseAbortRecord(info, (xl_xact_abort *) XLogRecGetData(reader), &parsed);
			xid = op == XLOG_XACT_ABORT ? XLogRecGetXid(reader) : parsed.twophase_xid;
			for (int i = 0; i < parsed.nsubxacts; i++)
				(void) hash_search(s->catalog_xids, &parsed.subxacts[i], HASH_REMOVE, NULL);
		}
	}
	else if (rmid == RM_STANDBY_ID && (info & ~XLR_INFO_MASK) == XLOG_RUNNING_XACTS)
	{
		TransactionId oldest = ((xl_running_xacts *) XLogRecGetData(reader))->oldestRunningXid;

		forget_ended(s->catalog_xids, oldest);
		/* one whose TOASTed change never came (an error in between) */
		forget_ended(s->toast_xids, oldest);
		return;
	}
	if (!TransactionIdIsValid(xid))
		return;
	if (ends)
	{
		(void) hash_search(s->catalog_xids, &xid, HASH_REMOVE, NULL);
		return;
	}
	xid_set_add(s, &s->catalog_xids, "pg_peek catalog-changing transactions decoded", xid);
}

/*
 * Is the record a change of a table that a replay showed is not the
 * source's (decoder.c notes their relfilenodes): a heap insert, update,
 * delete or multi-insert of one?  The stream then skips it unread: the
 * reorder buffer would queue it (spilled to disk past
 * logical_decoding_work_mem) and replay it at its commit for the plugin to
 * drop, and every source reads every table's WAL.  Not a speculative
 * insertion's records (its insert, confirmation or abort): the reorder
 * buffer replays them as a pair, and one of them skipped without the
 * other (the table noted, or forgotten, in between) would fail the
 * replay.  Not the new row that follows a TOAST table's insertion in its
 * transaction either (nor the rest of its multi-insert): the chunks of a
 * TOASTed value come right before the row that carries it (but for the
 * deletes of the old value's chunks), and decoding keeps them until the
 * transaction's next change, as that one's, or a multi-insert's last row
 * (a DELETE of the source next crashed the runtime; a change of a table
 * without a TOAST table failed the source).
 * A relcache invalidation forgets them all first: a relfilenode
 * changes tables only through the catalog (a table's files swapped with
 * another's), whose invalidation this process executes when decoding
 * reaches that commit; until then nothing is skipped
 * (capture_note_catalog_xact: that transaction writes the new files
 * before it).  Its other records (locks, TOAST, its transaction's commit)
 * are decoded as before; a transaction left with no change of the source
 * replays nothing.
 */
bool
capture_other_tables_change(CaptureStream *s, XLogReaderState *reader)
{
	DecodedChanges *changes = &s->changes;
	uint8		info = XLogRecGetInfo(reader) & XLOG_HEAP_OPMASK;
	TransactionId xid = XLogRecGetXid(reader);
	RelFileNode node;

	if (XLogRecGetRmid(reader) == RM_HEAP_ID)
	{
		if (info == XLOG_HEAP_INSERT &&
			(((xl_heap_insert *) XLogRecGetData(reader))->flags & XLH_INSERT_ON_TOAST_RELATION))
		{
			xid_set_add(s, &s->toast_xids, "pg_peek transactions with TOAST chunks decoded", xid);
			return false;
		}
		if (info != XLOG_HEAP_INSERT && info != XLOG_HEAP_DELETE && info != XLOG_HEAP_UPDATE &&
			info != XLOG_HEAP_HOT_UPDATE)
			return false;
	}
	else if (XLogRecGetRmid(reader) != RM_HEAP2_ID || info != XLOG_HEAP2_MULTI_INSERT)
		return false;
	/*
	 * The new rows that carry the chunks just decoded (the deletes of the
	 * old value's chunks, an update's, come between them): one record, or
	 * a multi-insert's records up to its last page's
	 */
	if (!(XLogRecGetRmid(reader) == RM_HEAP_ID && info == XLOG_HEAP_DELETE) &&
		s->toast_xids != NULL && hash_get_num_entries(s->toast_xids) > 0 &&
		hash_search(s->toast_xids, &xid, HASH_FIND, NULL) != NULL)
	{
		if (XLogRecGetRmid(reader) != RM_HEAP2_ID ||
			(((xl_heap_multi_insert *) XLogRecGetData(reader))->flags & XLH_INSERT_LAST_IN_MULTI))
			(void) hash_search(s->toast_xids, &xid, HASH_REMOVE, NULL);
		return false;
	}
	if (info == XLOG_HEAP_INSERT &&
		(((xl_heap_insert *) XLogRecGetData(reader))->flags & XLH_INSERT_IS_SPECULATIVE))
		return false;
	if (info == XLOG_HEAP_DELETE &&
		(((xl_heap_delete *) XLogRecGetData(reader))->flags & XLH_DELETE_IS_SUPER))
		return false;
	if (s->catalog_xids != NULL && hash_get_num_entries(s->catalog_xids) > 0)
		return false;
	if (changes->other_tables_generation != capture_relcache_generation)
	{
		HASH_SEQ_STATUS status;
		RelFileNode *known;

		hash_seq_init(&status, changes->other_tables);
		while ((known = hash_seq_search(&status)) != NULL)
			(void) hash_search(changes->other_tables, known, HASH_REMOVE, NULL);
		changes->other_tables_generation = capture_relcache_generation;
		return false;
	}
	if (hash_get_num_entries(changes->other_tables) == 0 ||
		!XLogRecGetBlockTagExtended(reader, 0, &node, NULL, NULL, NULL))
		return false;
	return hash_search(changes->other_tables, &node, HASH_FIND, NULL) != NULL;
}

/*
 * The oldest position the round may replay a transaction from: the first
 * record of the oldest transaction in the reorder buffer that is not
 * pg_peek's own, or the round's start.  pg_peek's own transactions never
 * replay (decoder.c filters their origin; a commit forgets them), so a
 * long one (a fold, a view's hydration) does not hold it back: the
 * invalidations learned meanwhile (an autovacuum's of the shards, a view's
 * creation) are not executed again around every round until it ends.
 * The own transactions that ended are let go of.
 */
XLogRecPtr
capture_oldest_replay(CaptureStream *s, XLogRecPtr start)
{
	ReorderBuffer *rb = s->ctx->reorder;
	XLogRecPtr	from = start;
	long		nown = s->own_xids != NULL ? hash_get_num_entries(s->own_xids) : 0;
	TransactionId *running = palloc(sizeof(TransactionId) * Max(nown, 1));
	long		nrunning = 0;
	dlist_iter	iter;

	dlist_foreach(iter, &rb->toplevel_by_lsn)
	{
		ReorderBufferTXN *txn = dlist_container(ReorderBufferTXN, node, iter.cur);
		dlist_iter	sub;

		if (is_own(s, txn->xid))
			running[nrunning++] = txn->xid;
		else if (txn->first_lsn < from)
			from = txn->first_lsn;
		dlist_foreach(sub, &txn->subtxns)
		{
			TransactionId xid = dlist_container(ReorderBufferTXN, node, sub.cur)->xid;

			if (is_own(s, xid))
				running[nrunning++] = xid;
		}
	}
	if (nrunning < nown)
	{
		hash_destroy(s->own_xids);
		s->own_xids = NULL;
		s->own_last = InvalidTransactionId;
		for (long i = 0; i < nrunning; i++)
			note_own(s, running[i]);
	}
	pfree(running);
	return from;
}
