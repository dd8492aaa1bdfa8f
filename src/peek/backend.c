/*-------------------------------------------------------------------------
 *
 * backend.c
 *	  The backend side of a peek: backend_peek_begin fills the backend's
 *	  peek slot and gates the peek itself (pg_peek.fast_path): a ready peek
 *	  pins the published batches and is walked at once, without a hop.  A
 *	  peek that must wait is queued to the runtime that serves peeks, and
 *	  the backend waits on its latch.  It re-issues the peek when that
 *	  runtime restarts, fails after a bounded wait when no runtime runs, and
 *	  on any abort (cancel, statement_timeout, error) withdraws it through
 *	  one path, peek_withdraw.  backend_peek_end releases the hold after
 *	  the walk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "libpq/libpq.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"

#include "ipc/runtime_slots.h"
#include "peek/gate.h"
#include "peek/peek.h"
#include "storage/catalog.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"

static bool peek_in_flight = false;
static SubTransactionId peek_subid = InvalidSubTransactionId;	/* issued it */
static bool backend_checked = false;

/* Queue the slot to its runtime and wake it. */
static void
queue_slot(PeekSlot *slot, int runtime)
{
	int			idx = peek_slot_index(slot);
	bool		push;

	SpinLockAcquire(&slot->mutex);
	push = !slot->queued;
	slot->queued = true;
	SpinLockRelease(&slot->mutex);
	if (push)
		queue_push(runtime_slot(runtime)->inbox, &idx);
	runtime_wake(runtime);
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
	slot = peek_my_slot();

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
		backend_peek_end();				/* answered: let go of its batches and hold */
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
backend_peek_init(void)
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

/*
 * Once per backend: not one of pg_peek's own workers, the runtimes serve
 * this database; withdraw at exit.
 */
static void
check_backend(const char *name)
{
	char	   *dbname;

	if (backend_checked)
		return;

	/*
	 * A user's function in a view's query runs in the maintenance runtime:
	 * a peek there could wait for a time only that runtime brings, holding
	 * every other object's maintenance until the round's timeout.  (Checked
	 * once a backend; such a worker never gets past it.)
	 */
	if (MyBgworkerEntry != NULL && strcmp(MyBgworkerEntry->bgw_library_name, "pg_peek") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a peek of \"%s\" cannot run in pg_peek's own background workers", name),
				 errdetail("A function called by a maintained view's query peeked."),
				 errhint("Read it as an input of the view's query instead.")));
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
	peek_slot_add_own(&slot->fast_peeks[runtime]);
	return true;
}

/* The routed path: queue the peek to the serving runtime. */
static void
issue_to_runtime(PeekSlot *slot, int runtime)
{
	uint64		generation;

	(void) runtime_alive(runtime, &generation);
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
 * Fail with 40P01 when a pg_peek worker waits for this transaction to end
 * while this transaction waits for a peek of the object (noun, name) to be
 * answered: a source's loader waits for every transaction that held an xid
 * when its slot was made, and a runtime may wait for a row this
 * transaction wrote.  The peek waits on a latch, which the deadlock
 * detector does not see, so the cycle is reported here as the deadlock it
 * is.  A fold worker answers no peek.  Reads other processes' wait locks
 * without their locks: a stale read shows at the next look.
 */
void
peek_check_deadlock(const char *noun, const char *name)
{
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return;
	for (uint32 i = 0; i < ProcGlobal->allProcCount; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		LOCK	   *lock = (LOCK *) ((volatile PGPROC *) proc)->waitLock;
		int			pid = ((volatile PGPROC *) proc)->pid;
		const char *type;

		if (pid == 0 || !proc->isBackgroundWorker || lock == NULL ||
			lock->tag.locktag_type != LOCKTAG_TRANSACTION ||
			!TransactionIdIsCurrentTransactionId((TransactionId) lock->tag.locktag_field1))
			continue;
		type = GetBackgroundWorkerTypeByPid(pid);
		if (type == NULL || strncmp(type, "pg_peek ", 8) != 0 || strcmp(type, "pg_peek fold") == 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
				 errmsg("deadlock detected"),
				 errdetail("A peek of %s \"%s\" waits for the %s process %d, which waits for this transaction to end.",
						   noun, name, type, pid),
				 errhint("Commit or roll back the transaction's writes first, or do this from another session.")));
	}
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
	int			waits = 0;

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

		/* about once a second: a worker it waits for that waits for us */
		if (++waits % 10 == 0)
			peek_check_deadlock(catalog_kind_noun(kind), name);

		/* A client that went away will never read the answer. */
		if (whereToSendOutput == DestRemote && !pq_check_connection())
			ereport(FATAL,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("connection to client lost while a peek waited")));

		/* Notice a dead or restarted runtime instead of hanging. */
		alive = runtime_alive(runtime, &generation);
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
 * that time stays in force until backend_peek_end (or an abort).  Errors from the
 * gate (compacted, dropped) are raised here, naming the object; with
 * dropped, a dropped object is reported there instead (the caller looked
 * the object up in a cache and retries).
 */
PeekTicket
backend_peek_begin(PeekObjectId object, const char *name, char kind, int64 time, int64 floor,
		   bool *dropped)
{
	PeekSlot   *slot = peek_my_slot();
	int			runtime = settings_serving_runtime();
	PeekAnswer	answer;
	PeekTicket	ticket;
	int64		answer_since;

	check_backend(name);
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

	backend_peek_end();
	if (answer == PEEK_ANSWER_DROPPED && dropped != NULL)
	{
		*dropped = true;
		return ticket;
	}
	if (answer == PEEK_ANSWER_COMPACTED)
		catalog_raise_compacted(catalog_kind_noun(kind), name, ticket.time, answer_since);
	if (answer == PEEK_ANSWER_FAILED)
	{
		/* only an index fails in memory, and not in the catalog */
		if (kind != PEEK_KIND_INDEX)
			catalog_await_failure(object);
		catalog_raise_if_failed(object, kind, name);
		if (kind != PEEK_KIND_INDEX)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s \"%s\" is failed", catalog_kind_noun(kind), name),
					 errhint("Drop the %s and create it again.", catalog_kind_noun(kind))));
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
	peek_slot_add_own(&slot->durations[slot->runtime][slot->kind == PEEK_KIND_INDEX][bucket]);
}

/* The walk is done (or failed): release the batches and the hold. */
void
backend_peek_end(void)
{
	PeekSlot   *slot = peek_my_slot();

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

