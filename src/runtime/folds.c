/*-------------------------------------------------------------------------
 *
 * folds.c
 *	  When each collection's base moves on (storage/persist.h): its base's
 *	  time is below its latest complete time, and its writes paused for
 *	  FOLD_QUIET_MS, or under a steady load a fold is FOLD_BUSY_MS ago, so
 *	  that a peek at a recent time sums at most about a second's updates
 *	  past the base.  At most FOLD_STEP_ROWS updates a step, whole times
 *	  only, each step a fold worker's (fold_worker.c), one at a time, the
 *	  due base folded least recently first: a fold in the runtime, tens to
 *	  hundreds of milliseconds a step on a loaded machine, would hold every
 *	  seal, capture and view's round due meanwhile, and that was the
 *	  views' commit-to-visible tail.  A time with more updates of its own
 *	  (a big write, a load) stops the base before it while anything the
 *	  runtime maintains is written; once every write paused for
 *	  FOLD_BIG_QUIET_MS (the end of a load), or under a steady load once
 *	  the base stopped there FOLD_STOPPED_MS ago (else it never moves
 *	  again, and every peek sums all updates since the load), a fold
 *	  worker folds it whole, in turn with the steps.  A compaction
 *	  (maintenance.c) that would fold or delete more than FOLD_STEP_ROWS
 *	  updates is a worker's too, at once (folds_compact_outside).  The
 *	  worker's stop sets the runtime's latch; its base is then looked at
 *	  again at once, from the base time the worker left in the catalog.
 *	  No worker is started for a base whose catalog row a writer's open
 *	  transaction holds (the worker's commit would wait for it, and every
 *	  other base's worker for that one), nor while a worker an earlier
 *	  runtime started (a restart mid-fold) folds it, and one that gave
 *	  way to such a writer is not counted as a try: looked at again every
 *	  FOLD_ELSEWHERE_MS, the next due base's worker going first; restarts
 *	  pile up no workers.  Only when no background worker can be had
 *	  (logged), or FOLD_OUTSIDE_TRIES workers stopped without moving the
 *	  base with its row free (an error, which the runtime's own fold then
 *	  reports as the collection's failure), the runtime folds alone: a step
 *	  at once, a big time once the writes paused and it has no other work
 *	  left (a merge's steps, a view's round), a compaction at once.  Only
 *	  what the runtime learns from the catalog notices (the durable
 *	  uppers), the folds' own results and the workers' stops: nothing is
 *	  polled but an earlier runtime's worker and a held row.
 *
 *	  Runs in the maintenance (or solo) runtime's loop; a standby's bases
 *	  follow the primary's by replay.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/settings.h"
#include "runtime/fold_worker.h"
#include "runtime/folds.h"
#include "storage/standby_replay.h"

#define FOLD_QUIET_MS	50
#define FOLD_BIG_QUIET_MS	500
#define FOLD_STOPPED_MS	2000
#define FOLD_BUSY_MS	1000
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
	int64		compact_since;	/* a big compaction's, for a worker (0: none) */
	int64		compact_asked;	/* the last compaction worker's (0: none) */
	TimestampTz blocked_at;		/* a worker could not start: see outside_start */
	TimestampTz changed_at;		/* when the upper last rose */
	TimestampTz folded_at;
	TimestampTz failed_at;		/* the last fold met a transient error (0: no) */
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

/* What the running worker folds, and its base's upper when it started. */
typedef enum OutsideFold
{
	OUTSIDE_STEP,				/* a bounded step, as the runtime's own */
	OUTSIDE_BIG_TIME,			/* the first time after the base, whole */
	OUTSIDE_COMPACTION			/* a big compaction */
} OutsideFold;

static OutsideFold outside_fold;
static int64 outside_upper;

/* The runtime folded a step itself for want of a worker: logged once. */
static bool step_alone_logged = false;

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
		bf->compact_since = 0;
		bf->compact_asked = 0;
		bf->blocked_at = 0;
		bf->folded_at = 0;
		bf->failed_at = 0;
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
 * fold and may now fold it alone (first_alone).  A fold that met a
 * transient error is tried again FOLD_BUSY_MS later, not at once: one
 * past temp_file_limit meets it again until the limit is raised.
 */
static bool
fold_due(BaseFold *bf, TimestampTz now, bool first_alone)
{
	if (bf->failed_at != 0 && !TimestampDifferenceExceeds(bf->failed_at, now, FOLD_BUSY_MS))
		return false;
	if (bf->stepping || (bf->stopped && first_alone && bf->outside_tries >= FOLD_OUTSIDE_TRIES))
		return true;
	return bf->upper > bf->folded_upper &&
		(TimestampDifferenceExceeds(bf->changed_at, now, FOLD_QUIET_MS) ||
		 TimestampDifferenceExceeds(bf->folded_at, now, FOLD_BUSY_MS));
}

/*
 * A fold of a base towards below upper (its upper then) left it at
 * base_time: go on at once if a bounded step left it behind, and note
 * whether it could not move (a big time first, with writes going on; a
 * shard read whole moves its base only with its since).  alone: the fold
 * took the first time however big.
 */
static void
fold_done(BaseFold *bf, int64 upper, int64 base_time, bool alone)
{
	bool		stopped = !alone && base_time == bf->base_time && base_time < upper - 1;

	bf->folded_at = GetCurrentTimestamp();
	bf->failed_at = 0;
	bf->stepping = base_time > bf->base_time && base_time < upper - 1;
	if (stopped && !bf->stopped)
		bf->stopped_at = bf->folded_at;
	bf->stopped = stopped;
	if (base_time > bf->base_time)
		bf->outside_tries = 0;
	bf->base_time = base_time;
	if (!bf->stepping)
		bf->folded_upper = upper;
}

/*
 * The fold worker stopped (folded, gave way, or failed): its base is
 * looked at again at once, from where the worker left it.  One that did
 * not move it while a writer holds the row gave way: looked at again in
 * FOLD_ELSEWHERE_MS, in a worker again (no try counted).  Returns whether
 * a worker still runs.
 */
static bool
outside_running(void)
{
	pid_t		pid;
	BaseFold   *bf;
	int64		base_time;
	bool		row_free;

	if (outside == NULL)
		return false;
	if (GetBackgroundWorkerPid(outside, &pid) != BGWH_STOPPED)
		return true;
	pfree(outside);
	outside = NULL;
	bf = hash_search(base_folds, &outside_id, HASH_FIND, NULL);
	if (bf == NULL)
		return false;
	if (outside_fold == OUTSIDE_COMPACTION)
	{
		/* whether it committed, its next request tells */
		bf->compact_asked = bf->compact_since;
		bf->compact_since = 0;
		bf->stepping = true;
		return false;
	}
	row_free = fold_worker_probe(bf->id, &base_time);
	if (base_time > bf->base_time || (row_free && outside_fold == OUTSIDE_STEP))
		fold_done(bf, outside_upper, base_time, outside_fold == OUTSIDE_BIG_TIME);
	else if (!row_free)
		bf->blocked_at = GetCurrentTimestamp();
	else
		bf->outside_tries++;	/* a big time's worker failed */
	return false;
}

/* Whether a base has a fold for a worker: a big compaction or a big time. */
static bool
outside_wanted(BaseFold *bf)
{
	return bf->compact_since > 0 ||
		(bf->stopped && bf->outside_tries < FOLD_OUTSIDE_TRIES);
}

/*
 * When a base's fold is due for a worker: a big compaction at once; a base
 * stopped at a big time once the writes paused, or it stopped there a
 * while ago (a steady load).  Not while an earlier runtime's worker folds
 * it (a restart during a long fold) nor while a writer's open transaction
 * holds its catalog row: looked at again every FOLD_ELSEWHERE_MS, so that
 * restarts pile up no workers and no worker waits for a writer.
 */
static TimestampTz
outside_due_at(BaseFold *bf)
{
	TimestampTz at = bf->compact_since > 0 ? 0 :
		Min(TimestampTzPlusMilliseconds(written_at, FOLD_BIG_QUIET_MS),
			TimestampTzPlusMilliseconds(bf->stopped_at, FOLD_STOPPED_MS));

	return bf->blocked_at == 0 ? at :
		Max(at, TimestampTzPlusMilliseconds(bf->blocked_at, FOLD_ELSEWHERE_MS));
}

/*
 * When a base stopped at a big time that no worker could fold is due to be
 * folded alone (fold_due): once every write paused, not while a writer
 * holds its row (row_held), nor before a second after a transient error.
 */
static TimestampTz
alone_due_at(BaseFold *bf)
{
	TimestampTz at = TimestampTzPlusMilliseconds(written_at, FOLD_BIG_QUIET_MS);

	if (bf->blocked_at != 0)
		at = Max(at, TimestampTzPlusMilliseconds(bf->blocked_at, FOLD_ELSEWHERE_MS));
	if (bf->failed_at != 0)
		at = Max(at, TimestampTzPlusMilliseconds(bf->failed_at, FOLD_BUSY_MS));
	return at;
}

/*
 * A base's fold for a worker (fold): a fold worker folds it, unless another
 * holds it (outside_due_at: then the next due base's turn comes); returns
 * true.  Without a free background worker the runtime folds it itself
 * (returns false): a step at once (folds_run), a big time once every write
 * paused and it has no other work left (fold_due), a compaction at once
 * (folds_compact_outside says no).
 */
static bool
outside_start(BaseFold *bf, OutsideFold fold)
{
	if (fold_worker_running(bf->id) || !fold_worker_row_free(bf->id))
	{
		bf->blocked_at = GetCurrentTimestamp();
		return true;
	}
	bf->blocked_at = 0;
	outside = fold == OUTSIDE_COMPACTION ?
		fold_worker_start(bf->id, bf->shard, bf->compact_since, bf->compact_since, -1, true) :
		fold_worker_start(bf->id, bf->shard, 0, bf->upper - 1, FOLD_STEP_ROWS,
						  fold == OUTSIDE_BIG_TIME);
	if (outside != NULL)
	{
		outside_id = bf->id;
		outside_fold = fold;
		outside_upper = bf->upper;
		return true;
	}
	if (fold == OUTSIDE_STEP)
	{
		if (!step_alone_logged)
			ereport(LOG,
					(errmsg("pg_peek folds bases in the %s runtime: no background worker is free",
							setting_interactive ? "maintenance" : "solo"),
					 errhint("Raise max_worker_processes.")));
		step_alone_logged = true;
		return false;
	}
	ereport(LOG,
			(errmsg(fold == OUTSIDE_COMPACTION ?
					"pg_peek compacts object " INT64_FORMAT " in the %s runtime: no background worker is free" :
					"pg_peek folds the base of object " INT64_FORMAT " in the %s runtime once every write pauses: no background worker is free",
					bf->id, setting_interactive ? "maintenance" : "solo"),
			 errhint("Raise max_worker_processes.")));
	bf->outside_tries = FOLD_OUTSIDE_TRIES;
	bf->compact_since = 0;
	return false;
}

/*
 * A compaction of a collection from its durable since to since, with rows
 * updates to fold or delete (counted up to FOLD_STEP_ROWS + 1): more than
 * a fold step's is left to a fold worker, as a big time is, so that the
 * runtime's seals never wait for it; returns true, and the caller keeps
 * the compaction pending until the worker's commit raises the durable
 * since (the worker has the runtime re-read the row).  False: the caller
 * folds it itself (a small one, or no worker could be had, or
 * FOLD_OUTSIDE_TRIES workers stopped without raising the since: the
 * runtime's own fold then reports the error as the collection's failure).
 */
bool
folds_compact_outside(PeekObjectId id, int64 durable_since, int64 since, int64 rows)
{
	BaseFold   *bf;

	if (rows <= FOLD_STEP_ROWS)
		return false;
	bf = hash_search(base_folds, &id, HASH_FIND, NULL);
	if (bf == NULL)
		return false;
	if (bf->compact_asked > 0)
	{
		if (durable_since >= bf->compact_asked)
			bf->outside_tries = 0;
		else
			bf->outside_tries++;
		bf->compact_asked = 0;
	}
	if (bf->outside_tries >= FOLD_OUTSIDE_TRIES)
		return false;
	bf->compact_since = since;
	return true;
}

/*
 * Whether a worker folds a collection now, or will (a big compaction
 * queued): its compaction waits for it rather than race it.
 */
bool
folds_outside(PeekObjectId id)
{
	BaseFold   *bf;

	if (outside_running() && outside_id == id)
		return true;
	bf = hash_search(base_folds, &id, HASH_FIND, NULL);
	return bf != NULL && bf->compact_since > 0;
}

/*
 * Start a fold worker for one of the bases whose fold is due for one, if
 * any can have one (outside_start).  Returns whether one started.
 */
static bool
start_outside(TimestampTz now)
{
	HASH_SEQ_STATUS status;
	BaseFold   *bf;
	PeekObjectId *ids;
	int			n = 0;

	/* collect first: outside_start's transaction would cut a hash scan short */
	ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(base_folds));
	hash_seq_init(&status, base_folds);
	while ((bf = hash_seq_search(&status)) != NULL)
		if (outside_wanted(bf) && now >= outside_due_at(bf))
			ids[n++] = bf->id;
	for (int i = 0; i < n && outside == NULL; i++)
	{
		bf = hash_search(base_folds, &ids[i], HASH_FIND, NULL);
		if (bf != NULL)
			(void) outside_start(bf, bf->compact_since > 0 ? OUTSIDE_COMPACTION : OUTSIDE_BIG_TIME);
	}
	pfree(ids);
	return outside != NULL;
}

/*
 * Whether a writer's open transaction held a base's row a moment ago (a
 * worker could not start, or gave way): looked at again in
 * FOLD_ELSEWHERE_MS.
 */
static bool
row_held(BaseFold *bf, TimestampTz now)
{
	return bf->blocked_at != 0 &&
		!TimestampDifferenceExceeds(bf->blocked_at, now, FOLD_ELSEWHERE_MS);
}

/*
 * Move on one of the bases that are due, a step: the one that moved on
 * least recently, so that every base comes in turn.  The step is a fold
 * worker's (one at a time, the others waiting for its stop), so that no
 * fold sits in front of the runtime's seals, captures and views' rounds;
 * the runtime folds a step itself only without a free background worker
 * (then one base's step a round), or a big time that no worker could fold
 * (fold_due).  busy: the runtime has other work left this round, so no
 * big time is folded alone in the runtime.  Returns whether a base is left
 * due that the runtime folds itself (go on without waiting).
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
	int64		upper;
	int64		base_time;
	bool		alone;
	int			due = 0;

	if (hash_get_num_entries(base_folds) == 0)
		return false;
	if (!outside_running())
		(void) start_outside(now);
	hash_seq_init(&status, base_folds);
	while ((bf = hash_seq_search(&status)) != NULL)
	{
		if ((outside != NULL && bf->id == outside_id) || row_held(bf, now))
			continue;			/* its worker folds it, or a writer holds it */
		if (fold_due(bf, now, first_alone))
		{
			due++;
			if (next == NULL || bf->folded_at < next->folded_at)
				next = bf;
		}
	}
	if (next == NULL)
		return false;
	/* a big time alone only where no worker could fold it */
	alone = first_alone && next->stopped && next->outside_tries >= FOLD_OUTSIDE_TRIES;
	/* a step waits for the running worker's stop, which sets the latch */
	if (!alone && (outside != NULL || outside_start(next, OUTSIDE_STEP)))
		return false;
	id = next->id;
	upper = next->upper;
	if (!fold(id, next->shard, upper - 1, FOLD_STEP_ROWS, alone, &base_time))
	{
		/* failed by its work (forgotten), or a transient error: again in a while */
		bf = hash_search(base_folds, &id, HASH_FIND, NULL);
		if (bf != NULL)
			bf->folded_at = bf->failed_at = GetCurrentTimestamp();
		return due > 1;
	}
	bf = hash_search(base_folds, &id, HASH_FIND, NULL);
	if (bf == NULL)
		return due > 1;
	fold_done(bf, upper, base_time, alone);
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
		if ((outside == NULL && outside_wanted(bf)) ||
			(bf->stopped && bf->outside_tries >= FOLD_OUTSIDE_TRIES))
		{
			ms = TimestampDifferenceMilliseconds(now, outside == NULL && outside_wanted(bf) ?
												 outside_due_at(bf) : alone_due_at(bf));
			wait = wait < 0 ? ms : Min(wait, ms);
		}
		/* a step waits for a worker's stop, which sets the latch */
		if (bf->upper <= bf->folded_upper || outside != NULL)
			continue;
		ms = Min(TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->changed_at, FOLD_QUIET_MS)),
				 TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->folded_at, FOLD_BUSY_MS)));
		if (bf->blocked_at != 0)
			ms = Max(ms, TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->blocked_at, FOLD_ELSEWHERE_MS)));
		if (bf->failed_at != 0)
			ms = Max(ms, TimestampDifferenceMilliseconds(now, TimestampTzPlusMilliseconds(bf->failed_at, FOLD_BUSY_MS)));
		wait = wait < 0 ? ms : Min(wait, ms);
	}
	return wait;
}
