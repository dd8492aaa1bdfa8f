/*-------------------------------------------------------------------------
 *
 * peek.c
 *	  The peek protocol, both sides.
 *
 *	  The gate (gate_peek) decides ready / not ready / compacted under the
 *	  object's registry entry lock and records the peek's hold in its slot
 *	  there.  It is one function for both routes.
 *
 *	  Backend side: peek_begin fills the backend's peek slot and gates the
 *	  peek itself (pg_peek.fast_path): a ready peek pins the published
 *	  batches and is walked at once, without a hop.  A peek that must wait
 *	  is queued to the runtime that serves peeks, and the backend waits on
 *	  its latch.  It re-issues the peek when that runtime restarts, fails
 *	  after a bounded wait when no runtime runs, and on any abort (cancel,
 *	  statement_timeout, error) withdraws it through one path,
 *	  peek_withdraw.  peek_end releases the hold after the walk.
 *
 *	  Runtime side: a peek that waits is parked keyed by its object id; a
 *	  publication of that object marks it dirty for this runtime
 *	  (registry.c) and peek_serve_dirty_objects re-examines only the peeks
 *	  parked under dirty ids.  A ready index peek is answered with a handle
 *	  on its batches: a shared handle resolved from the registry on that
 *	  attempt (interactive runtime), or a local handle on the solo
 *	  runtime's own spine, pinned once for the peek's life.
 *
 *	  Must not read shards or batches: the walk belongs to the callers
 *	  (walk.c for indexes, persist.c for shards), in the waiting backend.
 *	  Reads the catalog only through catalog.c, to say why an object
 *	  failed.  Must not reach into the maintenance runtime's spines: the
 *	  solo runtime's loop hands peek_runtime_reset the function that lends
 *	  its local batches.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "lib/ilist.h"
#include "libpq/libpq.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "storage/catalog.h"
#include "common/settings.h"
#include "peek/peek.h"
#include "ipc/registry.h"
#include "ipc/shmem.h"

/* ---------------------------------------------------------------------
 * The gate, one for both routes
 * ---------------------------------------------------------------------
 */

typedef enum GateResult
{
	GATE_WAIT,
	GATE_READY,
	GATE_COMPACTED,
	GATE_DROPPED,
	GATE_FAILED,
	GATE_GONE					/* withdrawn meanwhile */
} GateResult;

/*
 * Decide, under the object's registry entry lock, whether the peek in a
 * slot (still the one numbered peek_id) is ready, must wait or asks for a
 * compacted time; as_of NULL (*time PEEK_TIME_LATEST) resolves to the
 * latest complete time.  A peek that is ready or waits at a known time
 * records its hold in its slot here: compaction advances since under the
 * same lock and reads the slots' holds, so it can never pass a peek the
 * gate let through.  Only reads the entry: a shared lock is enough.
 */
static GateResult
gate_peek(RegistryEntry *entry, PeekSlot *slot, uint64 peek_id, int64 *time, int64 floor)
{
	int64		t = *time;
	GateResult	result;

	if (entry->dropped)
		result = GATE_DROPPED;
	else if (entry->failed)
		result = GATE_FAILED;
	else
	{
		/*
		 * Nothing is complete yet (upper 0): the latest complete time is
		 * resolved once there is one, which for a source is just before its
		 * load, not time 0.
		 */
		if (t == PEEK_TIME_LATEST && entry->published &&
			(entry->upper > 0 || floor >= 0))
			t = Max(floor, entry->upper == 0 ? 0 : Max(entry->since, entry->upper - 1));
		if (!entry->published || t == PEEK_TIME_LATEST || t >= entry->upper)
			result = GATE_WAIT;
		else if (entry->since > t)
			result = GATE_COMPACTED;
		else
			result = GATE_READY;
	}

	/*
	 * A peek of the latest time that waits (for its floor) is resolved again
	 * each time it is examined, holding nothing meanwhile: the since may pass
	 * its floor (a source loaded again), and then it reads at the since.
	 */
	if (*time == PEEK_TIME_LATEST && result == GATE_WAIT)
		t = PEEK_TIME_LATEST;

	SpinLockAcquire(&slot->mutex);
	if (slot->peek_id != peek_id ||
		(slot->state != PEEK_SUBMITTED && slot->state != PEEK_PARKED))
		result = GATE_GONE;
	else if (t != PEEK_TIME_LATEST && (result == GATE_WAIT || result == GATE_READY))
	{
		slot->time = t;
		slot->hold_object = entry->id;
		slot->hold_time = t;
	}
	SpinLockRelease(&slot->mutex);
	*time = t;
	return result;
}

/* What the backend is told of a gate's verdict. */
static PeekAnswer
gate_answer(GateResult result)
{
	switch (result)
	{
		case GATE_READY:
			return PEEK_ANSWER_READ;
		case GATE_COMPACTED:
			return PEEK_ANSWER_COMPACTED;
		case GATE_DROPPED:
			return PEEK_ANSWER_DROPPED;
		case GATE_FAILED:
			return PEEK_ANSWER_FAILED;
		case GATE_WAIT:
		case GATE_GONE:
			break;
	}
	elog(ERROR, "pg_peek gate verdict %d is not an answer", (int) result);
	return PEEK_ANSWER_FAILED;	/* keep compiler quiet */
}

/* ---------------------------------------------------------------------
 * Backend side
 * ---------------------------------------------------------------------
 */

static bool peek_in_flight = false;
static SubTransactionId peek_subid = InvalidSubTransactionId;	/* issued it */
static bool backend_checked = false;

/* Queue the slot to its runtime and wake it. */
static void
queue_slot(PeekSlot *slot, int runtime)
{
	int			idx = slot - peek_shared->slots;
	bool		push;

	SpinLockAcquire(&slot->mutex);
	push = !slot->queued;
	slot->queued = true;
	SpinLockRelease(&slot->mutex);
	if (push)
		shmem_queue_push(peek_shared->runtimes[runtime].inbox, &idx);
	shmem_wake_runtime(runtime);
}

/*
 * The single cancel path: a peek in flight when its transaction aborts (query
 * cancel, statement_timeout, any error) or its backend exits is withdrawn
 * and its hold released; the runtime is told so it can unpark it.
 */
static void
peek_withdraw(void)
{
	PeekSlot   *slot;
	bool		notify;
	int			runtime;

	if (!peek_in_flight)
		return;
	peek_in_flight = false;
	slot = shmem_my_peek_slot();

	SpinLockAcquire(&slot->mutex);
	notify = slot->state == PEEK_SUBMITTED || slot->state == PEEK_PARKED;
	if (notify)
	{
		slot->state = PEEK_WITHDRAWN;
		slot->hold_object = 0;
	}
	runtime = slot->runtime;
	SpinLockRelease(&slot->mutex);

	if (notify)
		queue_slot(slot, runtime);
	else
		peek_end();				/* answered: let go of its batches and hold */
}

static void
peek_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		peek_withdraw();
}

/*
 * Only the subtransaction that issued the peek, or one it began within,
 * withdraws it: a subtransaction begun and aborted during the walk (an
 * equality function's exception block) leaves it, and the batches being
 * read, alone.  Subtransaction ids rise, and one begun while the aborting
 * one is open is within it: those are the ids not below the aborting one.
 */
static void
peek_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && peek_subid >= mySubid)
		peek_withdraw();
}

static void
peek_exit_callback(int code, Datum arg)
{
	peek_withdraw();
}

void
peek_backend_init(void)
{
	RegisterXactCallback(peek_xact_callback, NULL);
	RegisterSubXactCallback(peek_subxact_callback, NULL);
}

static void
raise_runtime_missing(int runtime)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pg_peek %s runtime is not running",
					settings_role_name(settings_runtime_role(runtime))),
			 errdetail("The peek waited %d ms for the runtime to start.",
					   setting_runtime_wait_ms),
			 errhint("Check the server log, max_worker_processes and that pg_peek.database is \"%s\".",
					 setting_database)));
}

/* Once per backend: the runtimes serve this database; withdraw at exit. */
static void
check_backend(void)
{
	char	   *dbname;

	if (backend_checked)
		return;
	dbname = get_database_name(MyDatabaseId);
	if (dbname == NULL || strcmp(dbname, setting_database) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_peek runtimes serve database \"%s\", not \"%s\"",
						setting_database, dbname ? dbname : "?"),
				 errhint("Set pg_peek.database to choose the database the runtimes serve.")));
	before_shmem_exit(peek_exit_callback, 0);
	backend_checked = true;
}

/* Fill the backend's peek slot with a new request. */
static void
fill_slot(PeekSlot *slot, int runtime, PeekObjectId object, char kind, int64 time,
		  int64 floor)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&slot->mutex);
	slot->state = PEEK_SUBMITTED;
	slot->peek_id++;
	slot->backend_pid = MyProcPid;
	slot->backend = MyProc;
	slot->object = object;
	slot->kind = kind;
	slot->time = time;
	slot->floor = floor;
	slot->runtime = runtime;
	slot->submitted_at = now;
	slot->hold_object = 0;
	slot->answer_handle.nbatches = 0;
	slot->answer_handle.index = 0;
	SpinLockRelease(&slot->mutex);
	peek_in_flight = true;
	peek_subid = GetCurrentSubTransactionId();
}

/*
 * The fast path: the backend gates its own peek under a shared lock of the
 * object's entry, and a ready index peek pins the published batches, which
 * the entry's upper describes.  Returns false if the peek must wait, or the
 * registry does not know the object yet: the serving runtime parks it.
 */
static bool
answer_in_backend(PeekSlot *slot, int runtime)
{
	RegistryEntry *entry = registry_lock_shared(slot->object);
	int64		time = slot->time;
	int64		since;
	GateResult	result;

	if (entry == NULL)
		return false;
	result = gate_peek(entry, slot, slot->peek_id, &time, slot->floor);
	since = entry->since;
	if (result == GATE_READY && slot->kind == PEEK_KIND_INDEX)
		registry_pin_batches(&slot->answer_handle, entry->id, entry->batches,
							 entry->nbatches, false, runtime);
	registry_unlock(entry);
	if (result == GATE_WAIT)
		return false;

	SpinLockAcquire(&slot->mutex);
	slot->answer = gate_answer(result);
	slot->answer_time = time;
	slot->answer_since = since;
	slot->state = PEEK_ANSWERED;
	SpinLockRelease(&slot->mutex);
	shmem_runtime_count(&peek_shared->runtimes[runtime], RC_PEEKS_FAST);
	return true;
}

/* The routed path: queue the peek to the serving runtime. */
static void
issue_to_runtime(PeekSlot *slot, int runtime)
{
	uint64		generation;

	(void) shmem_runtime_alive(runtime, &generation);
	SpinLockAcquire(&slot->mutex);
	slot->runtime_generation = generation;
	SpinLockRelease(&slot->mutex);
	queue_slot(slot, runtime);
}

static bool
slot_answered(PeekSlot *slot)
{
	PeekState	state;

	SpinLockAcquire(&slot->mutex);
	state = slot->state;
	SpinLockRelease(&slot->mutex);
	return state == PEEK_ANSWERED;
}

/*
 * Wait until the runtime answers the slot's peek: give up when the
 * extension is being dropped or the client is gone, fail after a bounded
 * wait for a runtime that is not running, re-issue to a restarted one.
 */
static void
wait_for_answer(PeekSlot *slot, int runtime, PeekObjectId object, char kind,
				const char *name)
{
	TimestampTz missing_since = 0;

	while (!slot_answered(slot))
	{
		bool		alive;
		uint64		generation;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		/* the answer is what usually wakes us: then nothing else to check */
		if (slot_answered(slot))
			return;

		/* its object will not be published: the extension is (being) dropped */
		if (catalog_extension_dropping(PEEK_OBJECT_EXTENSION(object)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("extension pg_peek is being dropped"),
					 errdetail("The peek of %s \"%s\" waited.", catalog_kind_noun(kind), name)));

		/* A client that went away will never read the answer. */
		if (whereToSendOutput == DestRemote && !pq_check_connection())
			ereport(FATAL,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("connection to client lost while a peek waited")));

		/* Notice a dead or restarted runtime instead of hanging. */
		alive = shmem_runtime_alive(runtime, &generation);
		if (!alive)
		{
			if (missing_since == 0)
				missing_since = GetCurrentTimestamp();
			else if (TimestampDifferenceExceeds(missing_since, GetCurrentTimestamp(),
												setting_runtime_wait_ms))
				raise_runtime_missing(runtime);
			continue;
		}
		missing_since = 0;
		if (generation != slot->runtime_generation)
		{
			bool		reissue;

			/* the runtime dropped its pending work: issue the peek again */
			SpinLockAcquire(&slot->mutex);
			reissue = slot->state == PEEK_SUBMITTED || slot->state == PEEK_PARKED;
			if (reissue)
			{
				slot->state = PEEK_SUBMITTED;
				slot->runtime_generation = generation;
			}
			SpinLockRelease(&slot->mutex);
			if (reissue)
				queue_slot(slot, runtime);
		}
	}
}

/*
 * Issue a peek of an object at a time (or PEEK_TIME_LATEST): gate it here,
 * or, if it must wait, wait until the serving runtime finds it ready.  Returns the resolved time; the hold at
 * that time stays in force until peek_end (or an abort).  Errors from the
 * gate (compacted, dropped) are raised here, naming the object; with
 * dropped, a dropped object is reported there instead (the caller looked
 * the object up in a cache and retries).
 */
PeekTicket
peek_begin(PeekObjectId object, const char *name, char kind, int64 time, int64 floor,
		   bool *dropped)
{
	PeekSlot   *slot = shmem_my_peek_slot();
	int			runtime = settings_serving_runtime();
	PeekAnswer	answer;
	PeekTicket	ticket;
	int64		answer_since;

	check_backend();
	fill_slot(slot, runtime, object, kind, time, floor);
	if (!setting_fast_path || !answer_in_backend(slot, runtime))
	{
		issue_to_runtime(slot, runtime);
		wait_for_answer(slot, runtime, object, kind, name);
	}

	/* The runtime wrote the answer before setting ANSWERED. */
	pg_read_barrier();
	answer = slot->answer;
	ticket.time = slot->answer_time;
	ticket.handle = &slot->answer_handle;
	answer_since = slot->answer_since;
	if (answer == PEEK_ANSWER_READ)
		return ticket;

	peek_end();
	if (answer == PEEK_ANSWER_DROPPED && dropped != NULL)
	{
		*dropped = true;
		return ticket;
	}
	if (answer == PEEK_ANSWER_COMPACTED)
		catalog_raise_compacted(catalog_kind_noun(kind), name, ticket.time, answer_since);
	if (answer == PEEK_ANSWER_FAILED)
	{
		catalog_raise_if_failed(object, kind, name);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("index \"%s\" is failed: its arrangement exceeded pg_peek.max_memory (%d kB)",
						name, setting_max_memory_kb),
				 errhint("Raise pg_peek.max_memory, then drop and recreate the index.")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("%s \"%s\" was dropped while the peek waited", catalog_kind_noun(kind), name)));
	return ticket;				/* keep compiler quiet */
}

/* Count an answered peek's duration in its runtime's histogram. */
static void
record_duration(PeekSlot *slot)
{
	long		secs;
	int			usecs;
	uint64		ns;
	int			bucket = 0;

	TimestampDifference(slot->submitted_at, GetCurrentTimestamp(), &secs, &usecs);
	ns = (uint64) secs * 1000000000 + (uint64) usecs * 1000;
	/* the smallest power of two >= the duration */
	while (bucket < PEEK_DURATION_BUCKETS - 1 && ((uint64) 1 << bucket) < ns)
		bucket++;
	pg_atomic_fetch_add_u64(&peek_shared->runtimes[slot->runtime]
							.durations[slot->kind == PEEK_KIND_INDEX][bucket], 1);
}

/* The walk is done (or failed): release the batches and the hold. */
void
peek_end(void)
{
	PeekSlot   *slot = shmem_my_peek_slot();

	/* the handle is ours once answered: the runtime no longer touches it */
	if (slot->answer_handle.index != 0)
		registry_release_handle(&slot->answer_handle);
	if (slot->state == PEEK_ANSWERED)
		record_duration(slot);
	SpinLockAcquire(&slot->mutex);
	slot->state = PEEK_IDLE;
	slot->hold_object = 0;
	SpinLockRelease(&slot->mutex);
	peek_in_flight = false;
}

/* ---------------------------------------------------------------------
 * Runtime side
 * ---------------------------------------------------------------------
 */

/* The runtime's view of one peek slot. */
typedef struct LocalPeek
{
	bool		parked;
	uint64		peek_id;
	PeekObjectId object;
	char		kind;
	int64		time;
	int64		floor;			/* as_of NULL resolves to at least this */
	dlist_node	node;			/* in its ParkedObject's list */
} LocalPeek;

/* Pending work keyed by the object it waits on. */
typedef struct ParkedObject
{
	PeekObjectId id;
	dlist_head	peeks;
} ParkedObject;

static LocalPeek *local_peeks = NULL;
static HTAB *parked_objects = NULL;
static PeekLocalBatches local_batches = NULL;	/* the solo runtime's spines */

/*
 * Reconciliation: forget all pending work; backends re-issue their peeks
 * once they see the new generation.  local lends the solo runtime's own
 * batches (NULL in a runtime that serves from the registry).
 */
void
peek_runtime_reset(int runtime, PeekLocalBatches local)
{
	HASHCTL		ctl;

	local_batches = local;
	if (parked_objects != NULL)
		hash_destroy(parked_objects);
	if (local_peeks == NULL)
		local_peeks = MemoryContextAllocZero(TopMemoryContext,
											 sizeof(LocalPeek) * peek_shared->nslots);
	else
		memset(local_peeks, 0, sizeof(LocalPeek) * peek_shared->nslots);

	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(ParkedObject);
	ctl.hcxt = TopMemoryContext;
	parked_objects = hash_create("pg_peek parked peeks", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	shmem_queue_reset(peek_shared->runtimes[runtime].inbox);
	shmem_queue_reset(peek_shared->runtimes[runtime].dirty);
	for (int i = 0; i < peek_shared->nslots; i++)
	{
		PeekSlot   *slot = &peek_shared->slots[i];

		SpinLockAcquire(&slot->mutex);
		if (slot->runtime == runtime)
			slot->queued = false;
		SpinLockRelease(&slot->mutex);
	}
	registry_reset_runtime(runtime);
}

/*
 * The solo runtime's local handle on its own spine (see gate_peek), once
 * that has caught up with what the locked entry admits.  Until then (the
 * runtime restarted and its adoption is still to be retried, say on a lock
 * timeout) the list its last incarnation published, which the entry's own
 * pins keep alive, answers every time the entry admits.
 */
static void
pin_local_handle(int runtime, RegistryEntry *entry, PeekHandle *handle)
{
	dsa_pointer *batches;
	int			nbatches;
	int64		upper;

	if (local_batches == NULL || !local_batches(entry->id, &batches, &nbatches, &upper) ||
		upper < entry->upper)
	{
		batches = entry->batches;
		nbatches = entry->nbatches;
	}
	registry_pin_batches(handle, entry->id, batches, nbatches, false, runtime);
}

/*
 * The runtime's gate: an id the registry does not know gets a placeholder
 * entry (verified by maintenance), the waiter count that lets publishers
 * skip the dirty mark is kept in the entry's lock, and a ready index peek
 * is answered with a handle pinned there.
 */
static GateResult
gate_runtime_peek(int runtime, int idx, LocalPeek *lp, int64 *since, PeekHandle *handle)
{
	bool		created;
	RegistryEntry *entry = registry_lock(lp->object, true, &created);
	GateResult	result;

	result = gate_peek(entry, &peek_shared->slots[idx], lp->peek_id, &lp->time, lp->floor);
	*since = entry->since;

	if (result == GATE_WAIT && !lp->parked)
		entry->waiters[runtime]++;
	else if (result != GATE_WAIT && lp->parked)
		entry->waiters[runtime]--;

	/*
	 * The batches a ready index peek walks are pinned under the entry lock:
	 * a shared handle resolved from the registry on this attempt, or (solo)
	 * a local handle on this runtime's own spine, kept for the peek's life.
	 */
	handle->index = 0;
	handle->nbatches = 0;
	if (result == GATE_READY && lp->kind == PEEK_KIND_INDEX)
	{
		if (settings_runtime_role(runtime) == PEEK_ROLE_INTERACTIVE)
			registry_resolve_shared_handle(entry, runtime, handle);
		else
			pin_local_handle(runtime, entry, handle);
	}
	registry_unlock(entry);

	/* an id the registry did not know: maintenance checks the catalog */
	if (created)
	{
		PeekCommand verify = {PEEK_CMD_CATALOG_CHANGED, lp->object, 0};

		shmem_queue_push(peek_shared->runtimes[PEEK_RUNTIME_MAINTENANCE].commands, &verify);
		shmem_wake_runtime(PEEK_RUNTIME_MAINTENANCE);
	}
	return result;
}

static void
park(LocalPeek *lp)
{
	ParkedObject *po;
	bool		found;

	po = hash_search(parked_objects, &lp->object, HASH_ENTER, &found);
	if (!found)
		dlist_init(&po->peeks);
	dlist_push_tail(&po->peeks, &lp->node);
	lp->parked = true;
}

static void
unpark_local(LocalPeek *lp)
{
	ParkedObject *po;

	dlist_delete(&lp->node);
	lp->parked = false;
	po = hash_search(parked_objects, &lp->object, HASH_FIND, NULL);
	if (po != NULL && dlist_is_empty(&po->peeks))
		hash_search(parked_objects, &lp->object, HASH_REMOVE, NULL);
}

/* A parked peek was withdrawn or replaced: drop it and its waiter count. */
static void
unpark(int runtime, LocalPeek *lp)
{
	RegistryEntry *entry = registry_lock(lp->object, false, NULL);

	if (entry != NULL)
	{
		entry->waiters[runtime]--;
		registry_unlock(entry);
	}
	unpark_local(lp);
}

/*
 * Write an answer into the slot if the peek is still the one we examined;
 * if it is gone, its batches are let go of here.
 */
static void
respond(int idx, LocalPeek *lp, PeekAnswer answer, int64 since, PeekHandle *handle)
{
	PeekSlot   *slot = &peek_shared->slots[idx];
	PGPROC	   *backend = NULL;

	SpinLockAcquire(&slot->mutex);
	if (slot->peek_id == lp->peek_id &&
		(slot->state == PEEK_SUBMITTED || slot->state == PEEK_PARKED))
	{
		slot->answer = answer;
		slot->answer_time = lp->time;
		slot->answer_since = since;
		if (handle != NULL)
			memcpy(&slot->answer_handle, handle, offsetof(PeekHandle, batches) +
				   sizeof(dsa_pointer) * handle->nbatches);
		pg_write_barrier();
		slot->state = PEEK_ANSWERED;
		backend = slot->backend;
	}
	SpinLockRelease(&slot->mutex);
	if (backend != NULL)
		SetLatch(&backend->procLatch);
	else if (handle != NULL && handle->index != 0)
		registry_release_handle(handle);
}

/* Gate one peek and act on the result: answer it, or park it. */
static void
examine_peek(int runtime, int idx, LocalPeek *lp)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	PeekSlot   *slot = &peek_shared->slots[idx];
	int64		since;
	PeekHandle	handle;
	GateResult	result = gate_runtime_peek(runtime, idx, lp, &since, &handle);

	if (result == GATE_WAIT)
	{
		if (!lp->parked)
		{
			park(lp);
			SpinLockAcquire(&slot->mutex);
			if (slot->peek_id == lp->peek_id && slot->state == PEEK_SUBMITTED)
				slot->state = PEEK_PARKED;
			SpinLockRelease(&slot->mutex);
			shmem_runtime_count(rt, RC_PEEKS_PARKED);
		}
		return;
	}
	if (lp->parked)
		unpark_local(lp);

	if (result == GATE_GONE)
		return;
	respond(idx, lp, gate_answer(result), since,
			result == GATE_READY ? &handle : NULL);
	shmem_runtime_count(rt, RC_PEEKS_SERVED);
}

/* One slot came through the inbox: a new or re-issued peek, or a withdrawal. */
static void
handle_inbox_slot(int runtime, int idx)
{
	PeekSlot   *slot = &peek_shared->slots[idx];
	LocalPeek  *lp = &local_peeks[idx];
	PeekState	state;
	uint64		peek_id;
	int			slot_runtime;

	SpinLockAcquire(&slot->mutex);
	slot->queued = false;
	state = slot->state;
	peek_id = slot->peek_id;
	slot_runtime = slot->runtime;
	SpinLockRelease(&slot->mutex);

	if (lp->parked && (lp->peek_id != peek_id || state != PEEK_PARKED))
	{
		unpark(runtime, lp);
		shmem_runtime_count(&peek_shared->runtimes[runtime], RC_PEEKS_CANCELED);
	}
	if (state != PEEK_SUBMITTED || slot_runtime != runtime)
		return;

	SpinLockAcquire(&slot->mutex);
	lp->peek_id = slot->peek_id;
	lp->object = slot->object;
	lp->kind = slot->kind;
	lp->time = slot->time;
	lp->floor = slot->floor;
	SpinLockRelease(&slot->mutex);
	lp->parked = false;
	examine_peek(runtime, idx, lp);
}

void
peek_serve_inbox(int runtime)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	int		   *idxs = palloc(sizeof(int) * peek_shared->nslots);
	bool		overflowed;
	int			n;

	n = shmem_queue_drain(rt->inbox, idxs, peek_shared->nslots, &overflowed);
	if (overflowed)
	{
		/* lost track of which slots: look at all of them */
		for (int i = 0; i < peek_shared->nslots; i++)
			handle_inbox_slot(runtime, i);
	}
	else
		for (int i = 0; i < n; i++)
			handle_inbox_slot(runtime, idxs[i]);
	pfree(idxs);
}

/* Re-examine the peeks parked on one object that was published. */
static void
reexamine_object(int runtime, PeekObjectId id)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	RegistryEntry *entry;
	ParkedObject *po;
	dlist_iter	iter;
	int		   *idxs;
	int			n = 0;

	/* clear the mark first, so a publication from here on marks us again */
	entry = registry_lock(id, false, NULL);
	if (entry != NULL)
	{
		entry->dirty[runtime] = false;
		registry_unlock(entry);
	}

	po = hash_search(parked_objects, &id, HASH_FIND, NULL);
	if (po == NULL)
		return;
	/* examining may unpark peeks and free po: collect them first */
	idxs = palloc(sizeof(int) * peek_shared->nslots);
	dlist_foreach(iter, &po->peeks)
		idxs[n++] = dlist_container(LocalPeek, node, iter.cur) - local_peeks;
	for (int i = 0; i < n; i++)
	{
		shmem_runtime_count(rt, RC_PEEKS_REEXAMINED);
		examine_peek(runtime, idxs[i], &local_peeks[idxs[i]]);
	}
	pfree(idxs);
}

void
peek_serve_dirty_objects(int runtime)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	PeekObjectId *ids = palloc(sizeof(PeekObjectId) * peek_shared->nslots);
	bool		overflowed;
	int			n;

	n = shmem_queue_drain(rt->dirty, ids, peek_shared->nslots, &overflowed);
	if (overflowed)
	{
		/* lost track of which objects: re-examine every one with peeks */
		HASH_SEQ_STATUS status;
		ParkedObject *po;
		int			nparked = 0;
		PeekObjectId *parked = palloc(sizeof(PeekObjectId) * peek_shared->nslots);

		hash_seq_init(&status, parked_objects);
		while ((po = hash_seq_search(&status)) != NULL)
			parked[nparked++] = po->id;
		for (int i = 0; i < nparked; i++)
			reexamine_object(runtime, parked[i]);
		pfree(parked);
	}
	for (int i = 0; i < n; i++)
	{
		shmem_runtime_count(rt, RC_DIRTY_MARKS);
		reexamine_object(runtime, ids[i]);
	}
	pfree(ids);
}
