/*-------------------------------------------------------------------------
 *
 * folds.c
 *	  When the maintenance runtime moves each collection's base on
 *	  (storage/persist.h): its base's time is below its latest complete
 *	  time, and its writes paused for FOLD_QUIET_MS, or under a steady load
 *	  a fold is FOLD_BUSY_MS ago, so that a peek at a recent time sums at
 *	  most about a second's updates past the base.  At most FOLD_STEP_ROWS
 *	  updates a step, whole times only, each step its own transaction (the
 *	  caller's FoldFn), one base's step per step of the runtime (the due
 *	  base folded least recently first), so that no step holds the
 *	  runtime's other work (its seals, captures and views' rounds) back
 *	  for long.  A time with more updates of its own (a big write, a load)
 *	  stops the base before it while anything the runtime maintains is
 *	  written; once every write paused for FOLD_BIG_QUIET_MS (the end of a
 *	  load), or under a steady load once the base stopped there
 *	  FOLD_STOPPED_MS ago (else it never moves again, and every peek sums
 *	  all updates since the load), a fold worker (fold_worker.c) folds it
 *	  outside the runtime, one at a time: a fold that long (one to two
 *	  seconds per 100,000 updates) in the runtime would hold every seal
 *	  due meanwhile.  The worker's stop sets the runtime's latch; its base
 *	  is then looked at again at once.  A worker an earlier runtime started (a restart
 *	  mid-fold) is left to finish, looked at every FOLD_ELSEWHERE_MS, not
 *	  joined by another: restarts pile up no workers.  Only when no background worker can be had, or
 *	  FOLD_OUTSIDE_TRIES workers stopped without moving the base (an error,
 *	  which the runtime's own fold then reports as the collection's
 *	  failure), the runtime folds the time alone, once the writes paused
 *	  and it has no other work left (a merge's steps, a view's round).
 *	  Only what the runtime learns from the catalog notices (the durable
 *	  uppers), the folds' own results and the workers' stops: nothing is
 *	  polled but an earlier runtime's worker.
 *
 *	  Runs in the maintenance (or solo) runtime's loop; a standby's bases
 *	  follow the primary's by replay.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "common/ids.h"
#include "runtime/fold_worker.h"
#include "runtime/folds.h"
#include "storage/standby_replay.h"

#define FOLD_QUIET_MS	50
#define FOLD_BIG_QUIET_MS	500
#define FOLD_STOPPED_MS	2000
#define FOLD_BUSY_MS	1000
#define FOLD_STEP_ROWS	INT64CONST(10000)
#define FOLD_OUTSIDE_TRIES	2
#define FOLD_ELSEWHERE_MS	1000

typedef struct BaseFold
{
	PeekObjectId id;
	Oid			shard;
	int64		upper;			/* the durable upper read last */
	int64		base_time;		/* after the last fold (PG_INT64_MIN: not yet) */
	int64		folded_upper;	/* the last fold went as far as it could below it */
	bool		stepping;		/* the last step was bounded: go on */
	bool		stopped;		/* at a big time (see the top) */
	TimestampTz stopped_at;		/* when it stopped there */
	int			outside_tries;	/* workers that stopped with it there */
	TimestampTz elsewhere_at;	/* an earlier runtime's worker was folding it */
	TimestampTz changed_at;		/* when the upper last rose */
	TimestampTz folded_at;
} BaseFold;

static HTAB *base_folds = NULL;

/* When any upper last rose: a big time waits for a pause of them all. */
static TimestampTz written_at = 0;

/*
 * The fold worker started last, while it runs, and its collection's id
 * (kept across a reconciliation: the worker runs on).
 */
static BackgroundWorkerHandle *outside = NULL;
static PeekObjectId outside_id;

/* Reconciliation: every base is looked at again. */
void
folds_reset(void)
{
	if (base_folds != NULL)
		hash_destroy(base_folds);
	base_folds = id_table_create("pg_peek base folds", sizeof(BaseFold));
}

/* Note a collection's durable upper: its base may move on to below it. */
void
folds_note(CatalogObject *obj)
{
	BaseFold   *bf;
	bool		found;

	if (standby_active() || obj->upper == 0)
		return;
	bf = hash_search(base_folds, &obj->id, HASH_ENTER, &found);
	if (!found)
	{
		bf->upper = 0;
		bf->base_time = PG_INT64_MIN;
		bf->folded_upper = 0;
		bf->stepping = false;
		bf->stopped = false;
		bf->stopped_at = 0;
		bf->outside_tries = 0;
		bf->elsewhere_at = 0;
		bf->folded_at = 0;
	}
	bf->shard = obj->shard;
	if (obj->upper > bf->upper)
	{
		bf->changed_at = GetCurrentTimestamp();
		written_at = bf->changed_at;
	}
	bf->upper = Max(bf->upper, obj->upper);
}

/* A collection dropped or failed. */
void
folds_forget(PeekObjectId id)
{
	hash_search(base_folds, &id, HASH_REMOVE, NULL);
}

/*
 * Whether every write paused (see the top): for FOLD_BIG_QUIET_MS, the end
 * of a load rather than the gap between a client's statements.
 */
static bool
writes_paused(TimestampTz now)
{
	return TimestampDifferenceExceeds(written_at, now, FOLD_BIG_QUIET_MS);
}

/*
 * Whether a collection's base is due to move on, by now: updates came after
 * the last fold went as far as it could (a shard read whole moves its base
 * only with its since), and they paused, or a fold is a while ago, or the
 * last step was bounded, or it stopped at a big time that no worker could
 * fold and may now fold it alone (first_alone).
 */
static bool
fold_due(BaseFold *bf, TimestampTz now, bool first_alone)
{
	if (bf->stepping || (bf->stopped && first_alone && bf->outside_tries >= FOLD_OUTSIDE_TRIES))
		return true;
	return bf->upper > bf->folded_upper &&
		(TimestampDifferenceExceeds(bf->changed_at, now, FOLD_QUIET_MS) ||
		 TimestampDifferenceExceeds(bf->folded_at, now, FOLD_BUSY_MS));
}

/*
 * The fold worker stopped (folded, or failed): its base is looked at again
 * at once.  Returns whether a worker still runs.
 */
static bool
outside_running(void)
{
	pid_t		pid;
	BaseFold   *bf;

	if (outside == NULL)
		return false;
	if (GetBackgroundWorkerPid(outside, &pid) != BGWH_STOPPED)
		return true;
	pfree(outside);
	outside = NULL;
	bf = hash_search(base_folds, &outside_id, HASH_FIND, NULL);
	if (bf != NULL)
	{
		bf->stepping = true;
		bf->stopped = false;
		bf->outside_tries++;
	}
	return false;
}

/*
 * When a base stopped at a big time is due for a worker: once the writes
 * paused, or it stopped there a while ago (a steady load); not while an
 * earlier runtime's worker folds it (a restart during a long fold), looked
 * at again every FOLD_ELSEWHERE_MS, so that restarts pile up no workers.
 */
static TimestampTz
outside_due_at(BaseFold *bf)
{
	TimestampTz at = Min(TimestampTzPlusMilliseconds(written_at, FOLD_BIG_QUIET_MS),
						 TimestampTzPlusMilliseconds(bf->stopped_at, FOLD_STOPPED_MS));

	return bf->elsewhere_at == 0 ? at :
		Max(at, TimestampTzPlusMilliseconds(bf->elsewhere_at, FOLD_ELSEWHERE_MS));
}

/*
 * A base stopped at a big time: a fold worker folds it.  Without a free
 * background worker the runtime folds it itself (fold_due).
 */
static void
outside_start(BaseFold *bf)
{
	if (fold_worker_running(bf->id))
	{
		bf->elsewhere_at = GetCurrentTimestamp();
		return;
	}
	bf->elsewhere_at = 0;
	outside = fold_worker_start(bf->id, bf->shard, bf->upper - 1, FOLD_STEP_ROWS);
	if (outside != NULL)
	{
		outside_id = bf->id;
		return;
	}
	ereport(LOG,
			(errmsg("pg_peek folds the base of object " INT64_FORMAT " in the maintenance runtime: no background worker is free",
					bf->id),
			 errhint("Raise max_worker_processes.")));
	bf->outside_tries = FOLD_OUTSIDE_TRIES;
}

/*
 * Move on one of the bases that are due, a step: the one that moved on
 * least recently, so that a step of the runtime holds at most one fold's
 * work (its captures and views' rounds wait for no more) and every base
 * comes in turn.  busy: the runtime has other work left this round, so no
 * big time is folded alone in the runtime.  Returns whether a base is left
 * due (a bounded step left it behind its upper under a big load, or
 * another waits its turn: go on without waiting).
 */
bool
folds_run(FoldFn fold, bool busy)
{
	HASH_SEQ_STATUS status;
	BaseFold   *bf;
	BaseFold   *next = NULL;
	TimestampTz now = GetCurrentTimestamp();
	PeekObjectId id;
	bool		first_alone = !busy && writes_paused(now);
	int64		base_time;
	bool		folded;
	bool		alone;
	bool		stopped;
	int			due = 0;
	bool		running = outside_running();

	if (hash_get_num_entries(base_folds) == 0)
		return false;
	hash_seq_init(&status, base_folds);
	while ((bf = hash_seq_search(&status)) != NULL)
	{
		if (running && bf->id == outside_id)
			continue;			/* its worker folds it */
		if (!running && bf->stopped && bf->outside_tries < FOLD_OUTSIDE_TRIES &&
			now >= outside_due_at(bf))
		{
			outside_start(bf);
			running = outside != NULL;
			if (running)
				continue;
		}
		if (fold_due(bf, now, first_alone))
		{
			due++;
			if (next == NULL || bf->folded_at < next->folded_at)
				next = bf;
		}
	}
	if (next == NULL)
		return false;
	id = next->id;
	/* a big time alone only where no worker could fold it */
	alone = first_alone && next->outside_tries >= FOLD_OUTSIDE_TRIES;
	folded = fold(next->id, next->shard, next->upper - 1, FOLD_STEP_ROWS, alone, &base_time);
	/* failed by its work: forgotten */
	bf = hash_search(base_folds, &id, HASH_FIND, NULL);
	if (bf == NULL)
		return due > 1;
	bf->folded_at = GetCurrentTimestamp();
	if (!folded)
		return due > 1;			/* a transient error: again in a while */
	bf->stepping = base_time > bf->base_time && base_time < bf->upper - 1;

	/*
	 * Could not move: a big time first, with writes going on (a shard read
	 * whole, which moves its base only with its since, cannot move alone
	 * either).
	 */
	stopped = !alone && base_time == bf->base_time && base_time < bf->upper - 1;
	if (stopped && !bf->stopped)
		bf->stopped_at = bf->folded_at;
	bf->stopped = stopped;
	if (base_time > bf->base_time)
		bf->outside_tries = 0;
	bf->base_time = base_time;
	if (!bf->stepping)
		bf->folded_upper = bf->upper;
	return bf->stepping || due > 1;
}

/*
 * How long the runtime may sleep before a base is due to move on (-1: none
 * is behind its upper).
 */
long
folds_wait_ms(void)
{
	HASH_SEQ_STATUS status;
	BaseFold   *bf;
	TimestampTz now = GetCurrentTimestamp();
	long		wait = -1;

	if (base_folds == NULL)
		return -1;
	hash_seq_init(&status, base_folds);
	while ((bf = hash_seq_search(&status)) != NULL)
	{
		long		ms;

		if (outside != NULL && bf->id == outside_id)
			continue;			/* its worker's stop sets the latch */
		/* (another base's worker: its stop sets the latch) */
		if (bf->stopped && (outside == NULL || bf->outside_tries >= FOLD_OUTSIDE_TRIES))
		{
			ms = TimestampDifferenceMilliseconds(now, outside_due_at(bf));
			wait = wait < 0 ? ms : Min(wait, ms);
		}
		if (bf->upper <= bf->folded_upper)
			continue;
		ms = Min(TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->changed_at, FOLD_QUIET_MS)),
				 TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->folded_at, FOLD_BUSY_MS)));
		wait = wait < 0 ? ms : Min(wait, ms);
	}
	return wait;
}
