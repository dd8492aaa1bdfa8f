/*-------------------------------------------------------------------------
 *
 * runtime.c
 *	  The runtimes: background worker registration and the one loop every
 *	  role runs.  Split mode registers a maintenance and an interactive
 *	  runtime; solo mode a single runtime that does both jobs.  The loop
 *	  waits on its latch, then takes commands, does maintenance (if its role
 *	  maintains) and serves peeks (if its role serves them).
 *
 *	  A runtime connects to pg_peek.database and stays idle until the
 *	  extension exists there.  On start it reconciles (DESIGN §1): pending
 *	  work is dropped (backends re-issue), waiter counts restart at zero,
 *	  standing holds are kept and raised to what the catalog allows.
 *	  Errors exit with code 1, so the postmaster restarts the runtime.
 *
 *	  Owns the runtime slots' identity fields.  Must not implement
 *	  maintenance (maintenance.c) or the peek protocol (peek.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/wait_event.h"

#include "capture.h"
#include "catalog.h"
#include "peek.h"
#include "registry.h"
#include "runtime.h"

#define RUNTIME_TICK_MS		1000L
/* how often maintenance looks for newly flushed WAL while it has sources */
#define CAPTURE_POLL_MS			10L
#define MAX_COMMANDS_PER_ROUND	1024

void
peek_runtime_register(void)
{
	for (int r = 0; r < peek_runtime_count(); r++)
	{
		BackgroundWorker worker;
		const char *role = peek_role_name(peek_runtime_role(r));

		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = 1;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_peek");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "peek_runtime_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "pg_peek %s runtime", role);
		snprintf(worker.bgw_type, BGW_MAXLEN, "pg_peek %s", role);
		worker.bgw_main_arg = Int32GetDatum(r);
		RegisterBackgroundWorker(&worker);
	}
}

/*
 * Run fn in a transaction of its own.  Commit leaves TopMemoryContext
 * current; the caller's context (the loop's round context) is restored so
 * that what the round allocates afterwards is freed with the round.
 */
void
run_in_transaction(void (*fn) (void *arg), void *arg)
{
	MemoryContext caller = CurrentMemoryContext;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	fn(arg);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(caller);
	pgstat_report_stat(false);
}

static void
find_extension(void *arg)
{
	*(Oid *) arg = get_extension_oid("pg_peek", true);
}

/*
 * The interactive runtime accepts a since for an object.  Its standing hold
 * may have been what kept the object from compacting, so the maintenance
 * runtime is told to look at the object again.
 */
static void
accept_since(int runtime, PeekObjectId id, int64 since)
{
	if (registry_raise_standing_hold(id, runtime, since))
	{
		PeekCommand reread = {PEEK_CMD_CATALOG_CHANGED, id, 0};

		queue_push(peek_shared->runtimes[PEEK_RUNTIME_MAINTENANCE].commands, &reread);
		wake_runtime(PEEK_RUNTIME_MAINTENANCE);
	}
}

/* The interactive runtime accepts what the catalog allows. */
static void
raise_standing_holds(void *arg)
{
	int			runtime = *(int *) arg;
	ListCell   *lc;

	if (!catalog_lock_extension())
		return;
	foreach(lc, catalog_read(NULL, -1))
	{
		CatalogObject *obj = lfirst(lc);

		accept_since(runtime, obj->id, obj->allowed_since);
	}
}

static void
runtime_set_state(RuntimeSlot *rt, RuntimeState state)
{
	SpinLockAcquire(&rt->mutex);
	rt->state = state;
	SpinLockRelease(&rt->mutex);
}

static void
runtime_exit(int code, Datum arg)
{
	RuntimeSlot *rt = &peek_shared->runtimes[DatumGetInt32(arg)];

	SpinLockAcquire(&rt->mutex);
	rt->pid = 0;
	rt->proc = NULL;
	rt->state = RUNTIME_STOPPED;
	SpinLockRelease(&rt->mutex);
}

/*
 * Take the commands sent at commit.  A standing-hold raise in a runtime
 * other than maintenance is passed on to maintenance, which may now compact.
 */
static void
take_commands(int runtime, bool maintains)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	PeekCommand *cmds = palloc(sizeof(PeekCommand) * MAX_COMMANDS_PER_ROUND);
	bool		overflowed;
	int			n;

	do
	{
		n = queue_drain(rt->commands, cmds, MAX_COMMANDS_PER_ROUND, &overflowed);
		for (int i = 0; i < n; i++)
		{
			runtime_count(rt, RC_COMMANDS);
			if (maintains)
				maintenance_note_command(&cmds[i]);
			else if (cmds[i].kind == PEEK_CMD_STANDING_HOLD)
				accept_since(runtime, cmds[i].object, cmds[i].value);
		}
		if (overflowed)
		{
			if (maintains)
				maintenance_note_command(NULL);
			else
				run_in_transaction(raise_standing_holds, &runtime);
		}
	} while (n == MAX_COMMANDS_PER_ROUND);
	pfree(cmds);
}

/*
 * A query cancel (pg_cancel_backend) has no query to cancel in a runtime and
 * is ignored, as pg_cron's launcher does.  lock_timeout and
 * statement_timeout arrive as SIGINT too, with their timeout's indicator
 * set: those still cancel the statement, so a runtime never waits on a lock
 * longer than the database allows.
 */
static void
runtime_sigint(SIGNAL_ARGS)
{
	if (get_timeout_indicator(LOCK_TIMEOUT, false) ||
		get_timeout_indicator(STATEMENT_TIMEOUT, false))
		StatementCancelHandler(postgres_signal_arg);
}

void
peek_runtime_main(Datum arg)
{
	int			runtime = DatumGetInt32(arg);
	PeekRole	role = peek_runtime_role(runtime);
	bool		maintains = role != PEEK_ROLE_INTERACTIVE;
	bool		serves = role != PEEK_ROLE_MAINTENANCE;
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	MemoryContext round_cxt;
	Oid			extension = InvalidOid;
	TimestampTz extension_checked = 0;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, runtime_sigint);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(peek_database, NULL, 0);
	/* the runtime is a superuser: the database's search_path is not its own */
	SetConfigOption("search_path", PEEK_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_OVERRIDE);
	peek_attach();

	/*
	 * Reconciliation, shared part: drop what a previous incarnation had
	 * pending, then announce the new generation so backends re-issue.
	 */
	peek_runtime_reset(runtime);
	before_shmem_exit(runtime_exit, Int32GetDatum(runtime));
	SpinLockAcquire(&rt->mutex);
	rt->pid = MyProcPid;
	rt->proc = MyProc;
	rt->generation++;
	rt->restarts++;
	rt->state = RUNTIME_WAITING;
	rt->started_at = GetCurrentTimestamp();
	rt->max_memory_kb = peek_max_memory_kb;
	SpinLockRelease(&rt->mutex);

	ereport(LOG,
			(errmsg("pg_peek %s runtime started in database \"%s\"",
					peek_role_name(role), peek_database)));

	round_cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek runtime round",
									  ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(round_cxt);
		int			rc;

		/*
		 * Idle until the extension exists; notice a drop and re-create once
		 * a second.  The first check reconciles whatever it finds.
		 */
		if (!OidIsValid(extension) ||
			TimestampDifferenceExceeds(extension_checked, GetCurrentTimestamp(),
									   RUNTIME_TICK_MS))
		{
			Oid			found;
			bool		first = extension_checked == 0;

			run_in_transaction(find_extension, &found);
			extension_checked = GetCurrentTimestamp();
			if (found != extension || first)
			{
				extension = found;
				if (maintains)
					maintenance_reset();
				if (maintains && !OidIsValid(extension))
					capture_drop_orphan_slots(NIL); /* dropped with the extension */
				else if (OidIsValid(extension) && !maintains)
					run_in_transaction(raise_standing_holds, &runtime);
				runtime_set_state(rt, OidIsValid(extension) ? RUNTIME_RUNNING : RUNTIME_WAITING);
			}
		}

		if (OidIsValid(extension))
		{
			take_commands(runtime, maintains);
			if (maintains)
				maintenance_step();
			if (serves)
			{
				serve_peek_inbox(runtime);
				serve_dirty_objects(runtime);
			}
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(round_cxt);

		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   maintains && capture_active() ? CAPTURE_POLL_MS : RUNTIME_TICK_MS,
					   PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_LATCH_SET)
			runtime_count(rt, RC_WAKEUPS);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			SpinLockAcquire(&rt->mutex);
			rt->max_memory_kb = peek_max_memory_kb;
			SpinLockRelease(&rt->mutex);
		}
	}
}
