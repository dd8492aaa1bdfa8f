/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  The notices that tell the runtimes about committed catalog changes, so
 *	  that they never poll the whole catalog: collected in the transaction,
 *	  pushed to the runtimes' command queues when it commits.  A committed
 *	  drop is tombstoned in the registry here, a session's sealed uppers
 *	  are remembered for read-your-writes, and the collections its open
 *	  transaction wrote, so that a peek never waits for that transaction.
 *
 *	  Must not touch shared memory beyond pushing commands to runtimes and
 *	  tombstoning the objects a committed transaction dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "ipc/notify.h"
#include "ipc/registry.h"
#include "ipc/runtime_slots.h"

/*
 * A notice waits in the transaction until it commits, tagged with the
 * subtransaction that made it: a subtransaction's abort (ROLLBACK TO
 * SAVEPOINT, a plpgsql EXCEPTION block) discards its notices, its commit
 * hands them to its parent, so a rolled-back call sends nothing.
 */
typedef struct PendingNotice
{
	PeekCommand cmd;
	SubTransactionId subid;
	bool		created;		/* the object was created here */
	int64		sealed_from;	/* the committed upper this transaction
								 * wrote the collection from, or -1 */
} PendingNotice;

static List *pending_notices = NIL; /* PendingNotice *, in TopTransactionContext */

/*
 * Read-your-writes within a session: the uppers this session's committed
 * writes reached, per collection.  A peek with as_of NULL reads at least at
 * the last time the session sealed, waiting for its publication if need be.
 */
static HTAB *session_uppers = NULL;

typedef struct SessionUpper
{
	PeekObjectId id;
	int64		upper;
} SessionUpper;

static PendingNotice *
add_notice(PeekCommandKind kind, PeekObjectId id, int64 value)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	PendingNotice *notice;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, pending_notices)
	{
		notice = lfirst(lc);
		if (notice->cmd.kind == kind && notice->cmd.object == id && notice->subid == subid)
		{
			notice->cmd.value = Max(notice->cmd.value, value);
			return notice;
		}
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	notice = palloc(sizeof(PendingNotice));
	notice->cmd.kind = kind;
	notice->cmd.object = id;
	notice->cmd.value = value;
	notice->subid = subid;
	notice->created = false;
	notice->sealed_from = -1;
	pending_notices = lappend(pending_notices, notice);
	MemoryContextSwitchTo(old);
	return notice;
}

/* The maintenance runtime re-reads this object's row after commit. */
void
notify_catalog_changed(PeekObjectId id)
{
	(void) add_notice(PEEK_CMD_CATALOG_CHANGED, id, 0);
}

/*
 * This transaction wrote a collection (appended to it or sealed it) whose
 * upper was upper: it holds the collection's catalog row until it ends, so
 * no time from upper on can be sealed before then (notify_sealed_here).
 * A later write in the same subtransaction sees the upper an earlier one
 * raised: the notice keeps the least.
 */
void
notify_written(PeekObjectId id, int64 upper)
{
	PendingNotice *notice = add_notice(PEEK_CMD_CATALOG_CHANGED, id, 0);

	if (notice->sealed_from < 0 || upper < notice->sealed_from)
		notice->sealed_from = upper;
}

/*
 * The committed upper from which this open transaction wrote a collection
 * (the least, over its subtransactions that did not abort), or -1: every
 * time from it on becomes complete only when this transaction commits.
 */
int64
notify_sealed_here(PeekObjectId id)
{
	int64		from = -1;
	ListCell   *lc;

	foreach(lc, pending_notices)
	{
		PendingNotice *notice = lfirst(lc);

		if (notice->cmd.object == id && notice->sealed_from >= 0 &&
			(from < 0 || notice->sealed_from < from))
			from = notice->sealed_from;
	}
	return from;
}

/* Whether this open transaction wrote any collection (notify_written). */
bool
notify_wrote_any(void)
{
	ListCell   *lc;

	foreach(lc, pending_notices)
	{
		if (((PendingNotice *) lfirst(lc))->sealed_from >= 0)
			return true;
	}
	return false;
}

/*
 * A new object: the maintenance runtime reads it after commit.  Until then
 * it is this transaction's alone (notify_created_here).
 */
void
notify_created(PeekObjectId id)
{
	add_notice(PEEK_CMD_CATALOG_CHANGED, id, 0)->created = true;
}

/*
 * Was the object created by this transaction, not yet committed?  The
 * runtimes cannot see it: a peek at it would wait for a publication that
 * comes only after the commit.
 */
bool
notify_created_here(PeekObjectId id)
{
	ListCell   *lc;

	foreach(lc, pending_notices)
	{
		PendingNotice *notice = lfirst(lc);

		if (notice->created && notice->cmd.object == id)
			return true;
	}
	return false;
}

/*
 * A dropped object: at commit, this backend tombstones it in the registry
 * itself, so that no peek (not even one with a cached lookup) reads it once
 * the drop returns; the maintenance runtime then lets go of its spine.  The
 * registry is attached now, since a commit callback must not fail.
 */
void
notify_dropped(PeekObjectId id)
{
	registry_attach();
	(void) add_notice(PEEK_CMD_CATALOG_CHANGED, id, PEEK_CMD_DROPPED);
}

/* Broadcast: every runtime raises its standing hold after commit. */
void
notify_standing_hold(PeekObjectId id, int64 since)
{
	(void) add_notice(PEEK_CMD_STANDING_HOLD, id, since);
}

/*
 * This session sealed a collection up to upper: remembered at commit.  The
 * entry is made now, since a commit callback must not allocate.
 */
void
notify_session_upper(PeekObjectId id, int64 upper)
{
	bool		found;
	SessionUpper *su;

	if (session_uppers == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(PeekObjectId);
		ctl.entrysize = sizeof(SessionUpper);
		ctl.hcxt = TopMemoryContext;
		session_uppers = hash_create("pg_peek session uppers", 16, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	su = hash_search(session_uppers, &id, HASH_ENTER, &found);
	if (!found)
		su->upper = 0;
	(void) add_notice(PEEK_CMD_SESSION_UPPER, id, upper);
}

/* The last upper this session committed for a collection, or 0. */
int64
notify_last_session_upper(PeekObjectId collection)
{
	SessionUpper *su = session_uppers ?
		hash_search(session_uppers, &collection, HASH_FIND, NULL) : NULL;

	return su ? su->upper : 0;
}

/* At commit: no allocation, no error (see notify_dropped). */
static void
send_notices(void)
{
	int			wake = 0;
	ListCell   *lc;

	foreach(lc, pending_notices)
	{
		PendingNotice *notice = lfirst(lc);
		PeekCommand *cmd = &notice->cmd;

		if (cmd->kind == PEEK_CMD_SESSION_UPPER)
		{
			SessionUpper *su = hash_search(session_uppers, &cmd->object, HASH_FIND, NULL);

			su->upper = Max(su->upper, cmd->value);
			continue;
		}
		if (cmd->kind == PEEK_CMD_CATALOG_CHANGED && cmd->value == PEEK_CMD_DROPPED)
			registry_tombstone(cmd->object);
		for (int r = 0; r < settings_runtime_count(); r++)
		{
			/*
			 * Only the maintenance runtime reads catalog rows; the others
			 * hear of new objects, so that one that has not yet seen an
			 * extension made anew starts over now, not at its next tick.
			 */
			if (cmd->kind == PEEK_CMD_CATALOG_CHANGED && r != PEEK_RUNTIME_MAINTENANCE &&
				!notice->created)
				continue;
			/* on overflow the runtime re-reads the whole catalog */
			(void) queue_push(runtime_slot(r)->commands, cmd);
			wake |= 1 << r;
		}
	}
	runtime_wake_all(wake);
}

static void
notify_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			/* committed and visible: now the runtimes may read it */
			send_notices();
			pending_notices = NIL;
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* COMMIT PREPARED could not tell the runtimes */
			if (pending_notices != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that changed pg_peek objects")));
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending_notices = NIL;
			break;
		default:
			break;
	}
}

static void
notify_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case SUBXACT_EVENT_COMMIT_SUB:
			foreach(lc, pending_notices)
			{
				PendingNotice *notice = lfirst(lc);

				if (notice->subid == mySubid)
					notice->subid = parentSubid;
			}
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			foreach(lc, pending_notices)
			{
				PendingNotice *notice = lfirst(lc);

				if (notice->subid == mySubid)
					pending_notices = foreach_delete_current(pending_notices, lc);
			}
			break;
		default:
			break;
	}
}

void
notify_init(void)
{
	RegisterXactCallback(notify_xact_callback, NULL);
	RegisterSubXactCallback(notify_subxact_callback, NULL);
}
