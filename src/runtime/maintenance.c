/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The maintenance runtime's duties: learn committed catalog changes
 *	  from the notices backends send (never by polling the whole catalog,
 *	  except to reconcile at start or after a lost notice; on a hot standby,
 *	  from replay, see standby_replay.c, and then read-only), publish each
 *	  object's frontiers in the registry, keep each index's arrangement
 *	  (spine.c) hydrated and following its collection, tombstone dropped
 *	  objects, and compact shards and arrangements as far as every hold
 *	  allows (an object with a retention is looked at again every
 *	  sixteenth of it, so that its since follows its upper by the wall
 *	  clock even when nothing else happens to it), and delete the uppers
 *	  below each collection's latest.  Each round first lets capture
 *	  (capture/rounds.c) decode for the sources; a source whose upper rose
 *	  is then published like a changed
 *	  catalog row, its indexes arranging the updates the round kept
 *	  (capture_feed), which are let go of once the publications are done.
 *	  After the publications, each maintained view whose inputs published
 *	  new times runs a round (dataflow/round.c) in a transaction of its
 *	  own, and is published with its indexes as soon as it commits (a view
 *	  over it is due by the next round, which follows at once); an input
 *	  compacts only below the uppers of the views reading it.  With nothing
 *	  else to do, a view learns its groups (dataflow/learn.c), a step at a time.
 *	  An error in one object's work fails that object (durably, with the
 *	  reason), never the runtime; a transient one puts it off: a
 *	  publication is read again after a wait that doubles (retries.c).
 *
 *	  Runs in the maintenance (or solo) runtime's loop (runtime.c).  Must
 *	  not answer peeks: that is peek/'s job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "capture/capture.h"
#include "common/errors.h"
#include "common/settings.h"
#include "common/spi.h"
#include "dataflow/dataflow.h"
#include "peek/slots.h"
#include "runtime/fold_worker.h"
#include "runtime/folds.h"
#include "runtime/maintenance.h"
#include "runtime/retries.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_uppers.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

/*
 * An object whose since may advance: its allowance is above its since
 * (pending), or it has a retention (kept while it does, and pending again
 * each time its retention is due to be looked at).
 */
typedef struct PendingCompaction
{
	PeekObjectId id;
	char		kind;
	Oid			shard;
	int64		durable_since;	/* what the shard (an index's spine) is compacted to */
	int64		durable_upper;	/* the collection's catalog upper: since stays below */
	bool		pending;		/* compact it this round */
	int64		retention_ms;	/* in force, or PEEK_RETENTION_KEEP_ALL */
	TimestampTz retention_due;	/* when to look at the retention again */
	TimestampTz retry_at;		/* its last compaction fell short: not before */
} PendingCompaction;

#define COMPACTION_RETRY_MS	1000	/* after a compaction that fell short */

static HTAB *changed_ids = NULL;	/* PeekObjectId set: re-read these rows */
static bool reread_all = true;
static HTAB *pending_compactions = NULL;
static TimestampTz compactions_quiet_until = 0;	/* none pending nor due before: no scan */
static HTAB *tombstones = NULL; /* PeekObjectId set: registry entries to delete */

/*
 * A collection's uppers in peek.uppers: those below its latest are deleted
 * at most every UPPER_PRUNE_MS, so a seal costs an insert and no dead row
 * (catalog.c), and deleting costs once per interval, not per seal.  Each
 * deletion starts where the previous one stopped, so that it never walks
 * the rows deleted before, which an old snapshot keeps; and none starts
 * while a snapshot older than the last interval is open, so the dead rows
 * stay within one interval's (catalog_uppers_no_snapshot_before).
 */
typedef struct UpperPrune
{
	PeekObjectId id;
	int64		from;			/* the uppers below were deleted */
	int64		below;			/* the latest durable upper read */
} UpperPrune;

#define UPPER_PRUNE_MS	1000

static HTAB *upper_prunes = NULL;
static TimestampTz pruned_at = 0;
static TransactionId prune_mark = InvalidTransactionId;	/* see run_prunes */

/* Reconciliation: forget local state and re-read the whole catalog. */
void
maintenance_reset(void)
{
	if (changed_ids != NULL)
		hash_destroy(changed_ids);
	if (pending_compactions != NULL)
		hash_destroy(pending_compactions);
	if (tombstones != NULL)
		hash_destroy(tombstones);
	if (upper_prunes != NULL)
		hash_destroy(upper_prunes);
	folds_reset();
	retries_reset();
	changed_ids = id_table_create("pg_peek changed objects", sizeof(PeekObjectId));
	pending_compactions = id_table_create("pg_peek pending compactions", sizeof(PendingCompaction));
	tombstones = id_table_create("pg_peek tombstones", sizeof(PeekObjectId));
	upper_prunes = id_table_create("pg_peek upper prunes", sizeof(UpperPrune));
	reread_all = true;
	spine_reset_all();
	dataflow_reset();
	capture_reset();
	standby_reset();
}

void
maintenance_note_command(PeekCommand *cmd)
{
	if (cmd == NULL)
	{
		reread_all = true;		/* a notice was lost */
		return;
	}
	if (cmd->kind == PEEK_CMD_STANDING_HOLD)
		registry_raise_standing_hold(cmd->object, PEEK_RUNTIME_MAINTENANCE, cmd->value);
	/* either way, re-read the row: it carries the allowance and frontiers */
	hash_search(changed_ids, &cmd->object, HASH_ENTER, NULL);
}

/*
 * The retention an object has in force, which the registry is told before
 * the object's frontiers are published (their samples are spaced by it).
 * On a standby none: its since is the primary's, replayed.
 */
static int64
retention_in_force(CatalogObject *obj)
{
	int64		retention_ms = standby_active() ? PEEK_RETENTION_KEEP_ALL :
		settings_retention_ms(obj->retention_ms);

	registry_set_retention(obj->id, retention_ms);
	return retention_ms;
}

/*
 * Note an object whose allowance is above its since, or that has a
 * retention: it may compact, up to below its collection's durable upper
 * (see registry_advance_since).  An index's pending compaction keeps its
 * durable since: the since given (the registry's) is published before the
 * spine takes it (run_compactions), which it may put off (spine_compact).
 */
static void
note_compaction(CatalogObject *obj, int64 since, int64 durable_upper, int64 retention_ms)
{
	PendingCompaction *pc;
	bool		found;

	pc = hash_search(pending_compactions, &obj->id, HASH_FIND, NULL);
	if (pc == NULL && obj->allowed_since <= since && retention_ms < 0)
		return;
	pc = hash_search(pending_compactions, &obj->id, HASH_ENTER, &found);
	if (!found || retention_ms != pc->retention_ms)
	{
		if (!found)
			pc->pending = false;
		/* a new retention: look at it at once */
		pc->retention_ms = retention_ms;
		pc->retention_due = 0;
		pc->retry_at = 0;
	}
	pc->kind = obj->kind;
	pc->shard = obj->shard;
	if (!found || obj->kind != PEEK_KIND_INDEX)
		pc->durable_since = since;
	pc->durable_upper = durable_upper;
	pc->pending |= obj->allowed_since > since;
	if (pc->pending || pc->retention_due == 0)
		compactions_quiet_until = 0;
}

/*
 * How often an object's retention is looked at: every sixteenth of it, so
 * that the since trails the retention by little, but at most ten times a
 * second, each look that moves the since being a compaction.
 */
static int64
retention_interval_us(int64 retention_ms)
{
	return Max(retention_ms * 1000 / 16, 100 * 1000);
}

/* Note a collection's durable upper: the ones below it may go. */
static void
note_upper(CatalogObject *obj)
{
	UpperPrune *up;
	bool		found;

	/* a standby's catalog follows the primary's deletions */
	if (standby_active() || obj->upper == 0)
		return;
	up = hash_search(upper_prunes, &obj->id, HASH_ENTER, &found);
	if (!found)
		up->from = up->below = 0;
	up->below = Max(up->below, obj->upper);
}

/*
 * Fail an object for good, with the reason its peeks and the views show;
 * false if its row is gone meanwhile (a drop committed: likely its error).
 */
static bool
fail_object(PeekObjectId id, const char *reason)
{
	/* a standby fails it here only: the primary's row decides for good */
	if (!standby_active() && !catalog_set_failure(id, reason))
		return false;
	spine_forget(id);
	capture_forget(id);
	dataflow_forget(id);
	registry_mark_failed(id);
	hash_search(pending_compactions, &id, HASH_REMOVE, NULL);
	folds_forget(id);
	retries_forget(id);
	return true;
}

/*
 * Do one object's work in a subtransaction, as PL/pgSQL runs an EXCEPTION
 * block.  An error there is that object's: it fails the object, and the
 * round goes on with the others, so that no user's object (a dropped row
 * type or key column) can put the runtime into a restart loop.  A cancel, a
 * transient conflict or an object dropped meanwhile fails nothing (nor is
 * logged as a failure): the work is retried, after retry's back-off if
 * given (retries.c), which is told when the work ends without error.
 * Returns the failure, or NULL.
 */
static char *
object_work(PeekObjectId id, void (*fn) (void *arg), void *arg, RetryFn retry)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		catalog_bound_lock_waits();
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		edata = spi_subxact_rollback_caught(cxt, owner);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;

	if (edata == NULL)
	{
		if (retry != NULL)
			(void) retry(id, false);
		return NULL;
	}
	/* a view's round that ran out of time: retried later, with more time */
	if (dataflow_round_timer_stop() && edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		dataflow_round_timed_out(id))
		return NULL;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || error_is_transient(edata->sqlerrcode))
	{
		error_log_retried(edata, id, retry != NULL ? retry(id, true) : NULL);
		return NULL;
	}
	if (!fail_object(id, edata->message))
		return NULL;			/* (the next round finds it gone) */
	error_log_isolated(edata, psprintf("pg_peek object " INT64_FORMAT " failed", id));
	return edata->message;
}

static int64
published_since(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, false, NULL);
	int64		since = 0;

	if (entry != NULL)
	{
		since = entry->since;
		registry_unlock(entry);
	}
	return since;
}

/*
 * Publish one collection's (or view's) catalog row.  A source's upper is
 * what capture has decoded, and a view's what its rounds reached, either
 * of which may be beyond the durable one (obj->upper, which bounds
 * compaction).  A view is kept current from now on (dataflow_note_view).
 */
static void
adopt_collection(void *arg)
{
	CatalogObject *obj = arg;
	int64		upper = OidIsValid(obj->source) && !standby_active() ?
		capture_adopt(obj) : obj->upper;
	int64		retention_ms;

	if (obj->kind == PEEK_KIND_VIEW && !standby_active())
		upper = dataflow_note_view(obj);
	dataflow_note_input_upper(obj->id, obj->upper);
	if (obj->failure != NULL)
	{
		registry_mark_failed(obj->id);
		dataflow_forget(obj->id);	/* (the views reading it fail) */
		return;
	}
	persist_check_shard(obj->shard, obj->row_type);
	retention_ms = retention_in_force(obj);
	registry_raise_standing_hold(obj->id, PEEK_RUNTIME_MAINTENANCE, obj->allowed_since);
	if (registry_publish_frontiers(obj->id, obj->kind, upper, obj->since, obj->allowed_since))
		runtime_count(runtime_slot(PEEK_RUNTIME_MAINTENANCE), RC_PUBLICATIONS);
	note_compaction(obj, obj->since, obj->upper, retention_ms);
	note_upper(obj);
	folds_note(obj);
}

typedef struct IndexWork
{
	CatalogObject *index;
	CatalogObject *collection;
} IndexWork;

/* Hydrate or follow one index over its (already adopted) collection. */
static void
adopt_index(void *arg)
{
	CatalogObject *obj = ((IndexWork *) arg)->index;
	CatalogObject *collection = ((IndexWork *) arg)->collection;
	int64		since;
	int64		retention_ms;
	SpineFeed	feed;

	if (collection->failure != NULL || obj->failure != NULL)
	{
		spine_forget(obj->id);
		registry_mark_failed(obj->id);
		return;
	}
	/* its key columns still exist (ALTER TABLE ... DROP COLUMN) */
	(void) batch_keyinfo_build(obj->row_type, obj->nkeys, obj->attnums);

	/*
	 * The shard was compacted at or past what the spine has read (on a
	 * standby by replay, on a primary by a source's reload): the next range
	 * would count history again.  Hydrate anew (the published list serves
	 * peeks meanwhile).
	 */
	if (registry_published_upper(obj->id) > 0 &&
		collection->since >= registry_published_upper(obj->id))
		spine_forget(obj->id);
	retention_ms = retention_in_force(obj);
	registry_raise_standing_hold(obj->id, PEEK_RUNTIME_MAINTENANCE, obj->allowed_since);
	since = published_since(obj->id);
	/* a source's round hands its updates over (capture_feed) */
	spine_adopt(obj, collection, registry_published_upper(collection->id),
				Max(since, obj->since),
				capture_feed(collection->id, &feed) ? &feed : NULL);
	runtime_count(runtime_slot(PEEK_RUNTIME_MAINTENANCE), RC_PUBLICATIONS);
	note_compaction(obj, published_since(obj->id), collection->upper, retention_ms);
}

/* What this runtime keeps of an object whose registry entry is tombstoned. */
static void
forget_tombstoned(PeekObjectId id)
{
	spine_forget(id);
	capture_forget(id);
	dataflow_forget(id);
	hash_search(pending_compactions, &id, HASH_REMOVE, NULL);
	hash_search(upper_prunes, &id, HASH_REMOVE, NULL);
	folds_forget(id);
	retries_forget(id);
	hash_search(tombstones, &id, HASH_ENTER, NULL);
}

/*
 * A dropped object (or an id a late peek made a placeholder for, which the
 * catalog does not have): release its batches and tombstone its entry; the
 * tombstone is deleted once no peek is parked on it (delete_tombstones).
 */
static void
forget_object(PeekObjectId id)
{
	registry_mark_dropped(id);
	forget_tombstoned(id);
}

static void
delete_tombstones(void)
{
	HASH_SEQ_STATUS status;
	PeekObjectId *id;

	hash_seq_init(&status, tombstones);
	while ((id = hash_seq_search(&status)) != NULL)
		if (registry_delete_tombstone(*id))
			hash_search(tombstones, id, HASH_REMOVE, NULL);
}

/*
 * Read the changed rows (or all) and publish them, collections before the
 * indexes that follow them; tombstone what is gone.
 */
static void
apply_catalog_changes(void *arg)
{
	HTAB	   *changed = arg;
	List	   *objects;
	ListCell   *lc;

	if (!catalog_lock_extension())
		return;					/* dropped: the runtime's next check resets */
	if (reread_all)
		objects = catalog_read(NULL, -1);
	else
	{
		HASH_SEQ_STATUS status;
		PeekObjectId *ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(changed));
		PeekObjectId *id;
		int			n = 0;

		hash_seq_init(&status, changed);
		while ((id = hash_seq_search(&status)) != NULL)
			ids[n++] = *id;
		objects = catalog_read(ids, n);
		for (int i = 0; i < n; i++)
			if (catalog_object_in(objects, ids[i]) == NULL)
				forget_object(ids[i]);
	}
	standby_as_replayed(objects);

	foreach(lc, objects)
	{
		CatalogObject *obj = lfirst(lc);
		char	   *failure;

		if (obj->kind == PEEK_KIND_INDEX || retries_put_off(obj->id))
			continue;
		failure = object_work(obj->id, adopt_collection, obj, retries_publication);
		if (failure != NULL)
			obj->failure = failure; /* and its indexes' */
	}
	foreach(lc, objects)
	{
		CatalogObject *obj = lfirst(lc);
		IndexWork	work = {obj, NULL};

		if (obj->kind != PEEK_KIND_INDEX || retries_put_off(obj->id))
			continue;
		work.collection = catalog_object_in(objects, obj->collection);
		if (work.collection != NULL)
			(void) object_work(obj->id, adopt_index, &work, retries_publication);
	}

	if (reread_all)
	{
		PeekObjectId *live = palloc(sizeof(PeekObjectId) * Max(list_length(objects), 1));
		List	   *live_sources = NIL;
		List	   *unverified;
		int			n = 0;

		foreach(lc, objects)
		{
			CatalogObject *obj = lfirst(lc);

			live[n++] = obj->id;
			if (OidIsValid(obj->source) && obj->kind == PEEK_KIND_COLLECTION &&
				obj->failure == NULL)
				live_sources = lappend(live_sources, &obj->id);
		}
		foreach(lc, registry_mark_dropped_except(live, n, &unverified))
			forget_tombstoned(*(PeekObjectId *) lfirst(lc));
		/* placeholders made since the read: checked next round */
		foreach(lc, unverified)
			hash_search(changed_ids, lfirst(lc), HASH_ENTER, NULL);
		if (!standby_active())
			capture_drop_orphan_slots(live_sources);
	}
}

typedef struct CompactionWork
{
	PendingCompaction *pc;
	int64		since;
} CompactionWork;

static void
compact_one(void *arg)
{
	CompactionWork *work = arg;
	int64		rows;
	int64		durable_since;

	if (work->pc->kind == PEEK_KIND_INDEX)
	{
		/* durable as published: a re-hydrated index never shows a lower since */
		if (!standby_active())
			catalog_set_since(work->pc->id, work->since);
		if (spine_compact(work->pc->id, work->since))
			work->pc->durable_since = work->since;
		return;
	}

	/*
	 * The fold holds nothing a writer waits for; the row is changed last,
	 * raising the durable since (a writer holds its lock only briefly).  A
	 * big one is a fold worker's (the compaction stays pending meanwhile).
	 */
	if (!folds_kept(work->pc->id, work->pc->shard))
		return;
	rows = persist_fold_rows(work->pc->id, work->pc->shard, work->since, FOLD_STEP_ROWS,
							 &durable_since);
	if (folds_compact_outside(work->pc->id, durable_since, work->since, rows))
		return;
	(void) persist_fold(work->pc->id, work->pc->shard, work->since, work->since, -1, false);
	work->pc->durable_since = work->since;
}

static void
compact_object(void *arg)
{
	CompactionWork *work = arg;

	spi_xact_no_standby_wait();
	if (catalog_lock_extension())
		(void) object_work(work->pc->id, compact_one, work, NULL);
}

/*
 * Advance each pending object's since as far as the holds allow and compact
 * its shard to it.  An object stays pending while a peek or a standing hold
 * keeps it below its allowance; the loop retries it each round.  An object
 * whose retention is due is pending again; one whose retention was let go
 * of (all history kept) is done once its allowance is.
 */
static void
run_compactions(void)
{
	HASH_SEQ_STATUS status;
	PendingCompaction *pc;
	PeekObjectId *ids;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next_due = DT_NOEND;
	int			n = 0;

	if (now < compactions_quiet_until)
		return;
	/* collect first: a transaction's end would cut a hash scan short */
	ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(pending_compactions));
	hash_seq_init(&status, pending_compactions);
	while ((pc = hash_seq_search(&status)) != NULL)
	{
		if (pc->retention_ms >= 0 && now >= pc->retention_due)
		{
			pc->pending = true;
			pc->retention_due = now + retention_interval_us(pc->retention_ms);
		}
		if (pc->pending || pc->retention_ms < 0)
			ids[n++] = pc->id;
		else
			next_due = Min(next_due, pc->retention_due);
	}
	if (n == 0)
		compactions_quiet_until = next_due;

	for (int i = 0; i < n; i++)
	{
		int64		bound;
		int64		target;
		int64		since;

		pc = hash_search(pending_compactions, &ids[i], HASH_FIND, NULL);
		if (!pc->pending)
		{
			hash_search(pending_compactions, &ids[i], HASH_REMOVE, NULL);
			continue;
		}
		/*
		 * A shard stays below what its indexes have read (spine_read_upper)
		 * and what the views reading it have (dataflow_input_hold).
		 */
		bound = pc->kind == PEEK_KIND_INDEX ? PG_INT64_MAX :
			Min(spine_read_upper(pc->shard), dataflow_input_hold(pc->id));
		bound = Min(bound, pc->durable_upper);
		since = registry_advance_since(ids[i], bound, &target, peek_slots_min_hold);
		/* a worker folds it (its commit re-reads the row), or retry_at is to come */
		if (since > pc->durable_since &&
			(now < pc->retry_at || (pc->kind != PEEK_KIND_INDEX && folds_outside(ids[i]))))
			continue;
		if (since > pc->durable_since)
		{
			CompactionWork work = {pc, since};

			spi_run_in_transaction(compact_object, &work);
			runtime_count(runtime_slot(PEEK_RUNTIME_MAINTENANCE), RC_COMPACTIONS);
			/* a failed object is no longer pending */
			pc = hash_search(pending_compactions, &ids[i], HASH_FIND, NULL);
			if (pc == NULL)
				continue;
			/* not there (an error, a held row, a worker's fold): in a while */
			if (pc->durable_since < since)
				pc->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), COMPACTION_RETRY_MS);
		}
		if (pc->durable_since < target)
			continue;
		if (pc->retention_ms >= 0)
			pc->pending = false;
		else
			hash_search(pending_compactions, &ids[i], HASH_REMOVE, NULL);
	}
	pfree(ids);
}

/* A base's fold step (folds.c), as an object's work in its transaction. */
typedef struct FoldWork
{
	PeekObjectId id;
	Oid			shard;
	int64		target;
	int64		max_rows;
	bool		first_alone;
	int64		base_time;
	bool		folded;
} FoldWork;

static void
fold_one(void *arg)
{
	FoldWork   *work = arg;

	if (!folds_kept(work->id, work->shard))
		return;
	work->base_time = persist_fold(work->id, work->shard, 0, work->target, work->max_rows,
								   work->first_alone);
	work->folded = true;
}

static void
fold_object(void *arg)
{
	FoldWork   *work = arg;

	spi_xact_no_standby_wait();
	if (catalog_lock_extension())
		(void) object_work(work->id, fold_one, work, NULL);
}

static bool
fold_base(PeekObjectId id, Oid shard, int64 target, int64 max_rows, bool first_alone,
		  int64 *base_time)
{
	FoldWork	work = {id, shard, target, max_rows, first_alone, 0, false};

	spi_run_in_transaction(fold_object, &work);
	*base_time = work.base_time;
	return work.folded;
}

static void
prune_one(void *arg)
{
	UpperPrune *up = arg;

	catalog_prune_uppers(up->id, up->from, up->below);
	up->from = up->below;
}

typedef struct PruneWork
{
	PeekObjectId *ids;
	int			n;
	TransactionId mark;			/* taken by the look, or invalid */
} PruneWork;

static void
prune_uppers(void *arg)
{
	PruneWork  *work = arg;

	spi_xact_no_standby_wait();
	if (!catalog_lock_extension() || !catalog_uppers_no_snapshot_before(prune_mark, &work->mark))
		return;
	for (int i = 0; i < work->n; i++)
	{
		UpperPrune *up = hash_search(upper_prunes, &work->ids[i], HASH_FIND, NULL);

		if (up != NULL)
			(void) object_work(work->ids[i], prune_one, up, NULL);
	}
}

/* Every UPPER_PRUNE_MS, delete what note_upper let go of. */
static void
run_prunes(void)
{
	HASH_SEQ_STATUS status;
	UpperPrune *up;
	PruneWork	work = {NULL, 0, InvalidTransactionId};

	if (!TimestampDifferenceExceeds(pruned_at, GetCurrentTimestamp(), UPPER_PRUNE_MS))
		return;
	pruned_at = GetCurrentTimestamp();
	/* marked every interval, so that the mark is never older than one */
	if (hash_get_num_entries(upper_prunes) == 0)
	{
		prune_mark = ReadNextTransactionId();
		return;
	}
	/* collect first: a transaction's end would cut a hash scan short */
	work.ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(upper_prunes));
	hash_seq_init(&status, upper_prunes);
	while ((up = hash_seq_search(&status)) != NULL)
		if (up->below > up->from)
			work.ids[work.n++] = up->id;
	if (work.n > 0)
		spi_run_in_transaction(prune_uppers, &work);
	/* after the pruning's commit: a snapshot taken from now on sees it */
	prune_mark = TransactionIdIsValid(work.mark) ? work.mark : ReadNextTransactionId();
	pfree(work.ids);
}

static void
view_round(void *arg)
{
	DataflowView *view = arg;

	/* published with its indexes once its transaction commits */
	if (dataflow_round(view))
		hash_search(changed_ids, &view->id, HASH_ENTER, NULL);
}

/* A view's round, in a transaction of its own */
static void
view_round_alone(void *arg)
{
	DataflowView *view = arg;

	if (catalog_lock_extension())
		(void) object_work(view->id, view_round, view, retries_round);
}

/* A view's step of learning its groups (dataflow_learn) and whether more is left */
typedef struct ViewLearn
{
	DataflowView *view;
	bool		more;
} ViewLearn;

static void
view_learn(void *arg)
{
	ViewLearn  *learn = arg;

	learn->more = dataflow_learn(learn->view);
}

/* A learning step, in a transaction of its own */
static void
view_learn_alone(void *arg)
{
	if (catalog_lock_extension())
		(void) object_work(((ViewLearn *) arg)->view->id, view_learn, arg, NULL);
}

/*
 * Publish the changed catalog rows (or all, after a reconcile is asked
 * for) and what the sources and views did since the last publication.
 */
static void
publish_changes(void)
{
	HTAB	   *ids = changed_ids;

	retries_due(changed_ids);
	if (!reread_all && hash_get_num_entries(changed_ids) == 0)
		return;
	/* what this publication learns of goes to the next one */
	changed_ids = id_table_create("pg_peek changed objects", sizeof(PeekObjectId));
	spi_run_in_transaction(apply_catalog_changes, ids);
	reread_all = false;
	hash_destroy(ids);
}

/*
 * A round of each view whose inputs published times it has not taken
 * (never on a standby: replay brings the primary's rounds), each in a
 * transaction of its own and published as soon as it commits: a view is
 * visible without waiting for the other views' rounds nor for the next
 * capture.  The views take their turns by id, which is their order of
 * creation, so that the order does not depend on a hash table's and a
 * view over views, due once its inputs published, follows them in the
 * same step.  Returns whether a view's upper rose (it may still be
 * behind, or a view over it due: the next step follows without waiting).
 */
static bool
run_view_rounds(void)
{
	PeekObjectId last = 0;
	DataflowView *view;
	bool		rose = false;

	if (standby_active())
		return false;
	/* a publication may forget a view (dropped): looked up again each turn */
	while ((view = dataflow_next_due_view(last)) != NULL)
	{
		last = view->id;
		spi_run_in_transaction(view_round_alone, view);
		rose |= hash_get_num_entries(changed_ids) > 0;
		/* (a reconcile waits for the next step's start, with capture's) */
		if (!reread_all)
			publish_changes();
	}
	return rose;
}

/*
 * One round of maintenance.  Returns whether merge work is left (or a
 * view's new upper to publish) that the next round should do without
 * waiting.
 */
bool
maintenance_step(void)
{
	ListCell   *lc;
	bool		more;
	ViewLearn	learn = {NULL, false};

	/*
	 * Sources whose upper rose are published like a changed catalog row; on
	 * a standby, so are the rows replay changed.
	 */
	foreach(lc, standby_active() ? standby_replayed_changes() : capture_step())
		hash_search(changed_ids, lfirst(lc), HASH_ENTER, NULL);
	publish_changes();
	capture_release_rounds();
	/* after the publications: merge what seals' fuel left, a step a round */
	more = spine_merge_round();
	more |= run_view_rounds();
	if (hash_get_num_entries(pending_compactions) > 0)
		run_compactions();
	more |= folds_run(fold_base, more);
	if (hash_get_num_entries(tombstones) > 0)
		delete_tombstones();
	run_prunes();
	/* with nothing else to do, a view learns its groups (a step, dataflow/learn.c) */
	if (!more && !standby_active() && (learn.view = dataflow_next_learning_view()) != NULL)
		spi_run_in_transaction(view_learn_alone, &learn);
	return more || learn.more;
}
