/*-------------------------------------------------------------------------
 *
 * standby_replay.c
 *	  Hot standbys: the catalog and the shards are WAL-logged
 *	  tables, so a standby has them as replay brings them.  Its runtimes run
 *	  read-only and learn of changes from replay instead of commit notices
 *	  (no backend commits there): each round, the maintenance runtime
 *	  compares the replay position with the one it last read, and only when
 *	  replay moved reads the objects' frontiers (a small query) and reports
 *	  the rows that changed, appeared or went.  On a standby an object's
 *	  allowance is the since replayed: a standby keeps no more history than
 *	  its primary, and its peeks cannot hold the primary's compaction.
 *
 *	  Whether this server is a standby is decided once per runtime round
 *	  (standby_round_begin), so that a promotion never turns a round's
 *	  read-only work into writes halfway; a promotion is reported so that
 *	  the runtimes reconcile and take up the primary's duties.
 *
 *	  On a primary, tells capture whether a standby may be following (a
 *	  source's idle upper is then written, so that standbys see it).
 *
 *	  Also the backends' side: writes and DDL are refused before they do
 *	  anything, and a persist peek checks that the shard it read was not
 *	  compacted past its time by replay.
 *
 *	  Must not write durable state (a standby cannot) nor touch shared
 *	  memory beyond telling the other runtimes of replayed sinces.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogrecovery.h"
#include "executor/spi.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "common/spi.h"
#include "ipc/runtime_slots.h"
#include "storage/catalog.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_internal.h"
#include "storage/standby_replay.h"

/* An object's frontiers as last read from the replayed catalog. */
typedef struct FollowedRow
{
	PeekObjectId id;			/* key */
	int64		upper;
	int64		since;
	bool		failed;
	bool		seen;			/* in the latest read */
} FollowedRow;

static bool in_recovery = false;	/* this round's decision */
static XLogRecPtr followed_lsn = InvalidXLogRecPtr;
static HTAB *followed = NULL;

/*
 * Decide for this round whether the server is a standby.  Returns true when
 * it was one and has been promoted since the last round.
 */
bool
standby_round_begin(void)
{
	bool		was = in_recovery;

	in_recovery = RecoveryInProgress();
	return was && !in_recovery;
}

/* Whether this round runs on a standby (read-only, following replay). */
bool
standby_active(void)
{
	return in_recovery;
}

/* How long a runtime may sleep: on a standby, maintenance polls replay. */
long
standby_wait_ms(long timeout, bool maintains)
{
	return maintains && in_recovery ? Min(timeout, STANDBY_POLL_MS) : timeout;
}

/* Reconciliation: the next poll reports every object. */
void
standby_reset(void)
{
	if (followed != NULL)
		hash_destroy(followed);
	followed = id_table_create("pg_peek followed rows", sizeof(FollowedRow));
	followed_lsn = InvalidXLogRecPtr;
}

/* On a standby, each object's allowance is its replayed since. */
void
standby_as_replayed(List *objects)
{
	ListCell   *lc;

	if (!in_recovery)
		return;
	foreach(lc, objects)
	{
		CatalogObject *obj = lfirst(lc);

		obj->allowed_since = obj->since;
	}
}

/* The other runtimes accept a replayed since as a committed allowance. */
static void
broadcast_since(PeekObjectId id, int64 since)
{
	PeekCommand cmd = {PEEK_CMD_STANDING_HOLD, id, since};

	for (int r = 0; r < settings_runtime_count(); r++)
	{
		if (r == PEEK_RUNTIME_MAINTENANCE)
			continue;
		(void) runtime_send(r, &cmd);
	}
}

/* The ids of changed rows, in the caller's memory context. */
typedef struct Changes
{
	List	   *ids;
	MemoryContext cxt;
} Changes;

static void
add_change(Changes *changes, PeekObjectId id)
{
	MemoryContext old = MemoryContextSwitchTo(changes->cxt);
	PeekObjectId *copy = palloc(sizeof(PeekObjectId));

	*copy = id;
	changes->ids = lappend(changes->ids, copy);
	MemoryContextSwitchTo(old);
}

static void
note_row(Changes *changes, PeekObjectId id, int64 upper, int64 since, bool failed)
{
	bool		found;
	FollowedRow *row = hash_search(followed, &id, HASH_ENTER, &found);

	row->seen = true;
	if (found && row->upper == upper && row->since == since && row->failed == failed)
		return;
	if (!found || row->since != since)
		broadcast_since(id, since);
	row->upper = upper;
	row->since = since;
	row->failed = failed;
	add_change(changes, id);
}

/* Read every object's frontiers; note the ids of rows changed or gone. */
static void
read_replayed_frontiers(void *arg)
{
	/* the uppers in peek.uppers (0.3: read from its index), or in the rows (before) */
	static SPIPlanPtr plans[2] = {NULL, NULL};
	static const char *const queries[2] = {
		"SELECT id, upper, since, failure IS NOT NULL FROM peek.objects",
		"SELECT id, NULL::pg_catalog.int8, since, failure IS NOT NULL FROM peek.objects"
	};
	SPIPlanPtr	plan;
	int			which;
	PeekObjectId *ids;
	int64	   *uppers;
	Changes    *changes = arg;
	SavedUser	saved;
	HASH_SEQ_STATUS status;
	FollowedRow *row;

	if (!catalog_lock_extension())
		return;					/* dropped: the runtime's next check resets */
	spi_connect_as_owner(&saved);
	which = catalog_has_uppers() ? 1 : 0;
	if (plans[which] == NULL)
	{
		plan = SPI_prepare(queries[which], 0, NULL);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the replayed frontiers' query: %s",
				 SPI_result_code_string(SPI_result));
		plans[which] = plan;
	}
	plan = plans[which];
	spi_check(SPI_execute_plan(plan, NULL, NULL, true, 0), SPI_OK_SELECT,
			  "replayed frontiers");
	ids = palloc(sizeof(PeekObjectId) * Max(1, SPI_processed));
	uppers = palloc(sizeof(int64) * Max(1, SPI_processed));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
											 &isnull));
		uppers[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2,
												&isnull));
	}
	if (which == 1)
		catalog_read_uppers(SPI_processed, ids, uppers, GetActiveSnapshot());
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		note_row(changes, ids[i], uppers[i],
				 DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull)),
				 DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull)));
	}
	spi_finish_as_owner(&saved);

	/* rows gone from the catalog: dropped on the primary */
	hash_seq_init(&status, followed);
	while ((row = hash_seq_search(&status)) != NULL)
	{
		if (!row->seen)
		{
			add_change(changes, row->id);
			hash_search(followed, &row->id, HASH_REMOVE, NULL);
		}
		else
			row->seen = false;
	}
}

/*
 * The maintenance runtime's round on a standby: the ids whose catalog rows
 * replay changed since the last call (NIL at once if replay has not moved).
 * The position is read before the rows, so that a change replayed during
 * the read is reported again next round.
 */
List *
standby_replayed_changes(void)
{
	XLogRecPtr	lsn;
	Changes		changes = {NIL, CurrentMemoryContext};

	if (!in_recovery)
		return NIL;
	if (followed == NULL)
		standby_reset();
	lsn = GetXLogReplayRecPtr(NULL);
	if (lsn == followed_lsn)
		return NIL;
	spi_run_in_transaction(read_replayed_frontiers, &changes);
	followed_lsn = lsn;
	return changes.ids;
}

/* Writes and DDL: refused on a standby before they do anything. */
void
standby_refuse_writes(const char *function)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute peek.%s() during recovery", function),
				 errhint("Run it on the primary: a hot standby follows the primary's pg_peek objects through replication.")));
}

/*
 * A persist peek at time on a standby, after reading its shard: replay
 * may have compacted the shard past time meanwhile (the standby's hold
 * does not hold the primary).  The since is read in a snapshot taken after
 * the shard's, so a compaction the read saw is seen here too.
 */
void
standby_check_shard_since(PeekObjectId collection, const char *name, int64 time)
{
	int64		since;

	if (!RecoveryInProgress())
		return;
	since = catalog_read_since(collection, GetLatestSnapshot(), NULL);
	if (since > time)
		catalog_raise_compacted("collection", name, time, since);
}

/*
 * Whether a standby may be following this server: a WAL sender is running.
 * (A logical subscriber's counts too: it only costs an idle source's upper
 * a write now and then.)
 */
bool
standby_streaming(void)
{
	for (int i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		SpinLockRelease(&walsnd->mutex);
		if (pid != 0)
			return true;
	}
	return false;
}
