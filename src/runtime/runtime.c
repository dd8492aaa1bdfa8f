/*-------------------------------------------------------------------------
 *
 * runtime.c
 *	  The runtimes: the one loop every role runs (the module registers the
 *	  background workers).  Split mode registers a maintenance and an interactive
 *	  runtime; solo mode a single runtime that does both jobs.  The loop
 *	  waits on its latch, then takes commands, does maintenance (if its role
 *	  maintains) and serves peeks (if its role serves them).
 *
 *	  A runtime connects to pg_peek.database and stays idle until the
 *	  extension exists there.  It runs on a hot standby too (standby_replay.c
 *	  decides, once per round, whether this is one); a promotion reconciles
 *	  as a start does.  On start it reconciles: pending
 *	  work is dropped (backends re-issue), waiter counts restart at zero,
 *	  standing holds are kept and raised to what the catalog allows.
 *	  Errors exit with code 1, so the postmaster restarts the runtime.
 *	  The maintenance runtime of split mode lowers its CPU priority
 *	  (pg_peek.maintenance_nice) so that backends and the interactive
 *	  runtime are served first on a busy machine; the solo runtime also
 *	  serves peeks and keeps the server's priority.
 *
 *	  Owns the runtime slots' identity fields and the interactive runtime's
 *	  acceptance of the standing holds the catalog allows.  Must not
 *	  implement maintenance (maintenance.c) or the peek protocol (peek/).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>

#include "access/xlog.h"
#include "commands/extension.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timeout.h"

#include "capture/capture.h"
#include "common/spi.h"
#include "common/workers.h"
#include "dataflow/dataflow.h"
#include "ipc/runtime_slots.h"
#include "peek/peek.h"
#include "runtime/folds.h"
#include "runtime/maintenance.h"
#include "runtime/retries.h"
#include "runtime/runtime.h"
#include "storage/catalog_locks.h"
#include "storage/catalog_write.h"
#include "storage/standby_replay.h"

#define RUNTIME_TICK_MS		1000L
#define MAX_COMMANDS_PER_ROUND	1024

/* The niceness the runtime started with; -100 unless it lowers its own. */
#define NO_NICE		(-100)
static int	base_nice = NO_NICE;

/* Set the maintenance runtime's niceness to base + pg_peek.maintenance_nice. */
static void
apply_nice(void)
{
	int			nice = Min(base_nice + setting_maintenance_nice, 19);

	if (setpriority(PRIO_PROCESS, 0, nice) != 0)
		ereport(LOG,
				(errmsg("could not set the pg_peek maintenance runtime's niceness to %d: %m",
						nice)));
}

static void
find_extension(void *arg)
{
	*(Oid *) arg = get_extension_oid("pg_peek", true);
}

/*
 * After pg_upgrade the objects' ids still carry the old cluster's extension
 * OID: they get this one's before anything reads them (a source's slot,
 * which pg_upgrade does not carry over, is then found missing and the
 * source loaded again), and the views' PostgreSQL views, restored without
 * the dependencies create_view recorded, have them again.  On a standby,
 * replay brings the primary's.
 */
static void
adopt_upgraded_objects(void *arg)
{
	Oid			found = *(Oid *) arg;
	uint64		adopted;
	ListCell   *lc;

	/* dropped since find_extension's transaction: the next check sees it */
	if (!catalog_lock_extension() || get_extension_oid("pg_peek", true) != found)
		return;
	adopted = catalog_adopt_foreign_ids(found);
	if (adopted == 0)
		return;
	ereport(LOG,
			(errmsg("pg_peek adopted " UINT64_FORMAT " objects made under another OID of the extension (pg_upgrade)",
					adopted)));
	foreach(lc, catalog_read(NULL, -1))
	{
		CatalogObject *obj = lfirst(lc);
		Oid			relid = get_typ_typrelid(obj->row_type);

		if (obj->kind == PEEK_KIND_VIEW && OidIsValid(relid))
			dataflow_record_dependencies_again(obj, relid);
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
	RuntimeSlot *rt = runtime_slot(DatumGetInt32(arg));

	SpinLockAcquire(&rt->mutex);
	rt->pid = 0;
	rt->proc = NULL;
	rt->state = RUNTIME_STOPPED;
	SpinLockRelease(&rt->mutex);
}

/* Raise the runtime's standing holds to what the catalog allows. */
static void
accept_catalog_holds(void *arg)
{
	int			runtime = *(int *) arg;
	ListCell   *lc;

	if (!catalog_lock_extension())
		return;
	foreach(lc, catalog_read(NULL, -1))
	{
		CatalogObject *obj = lfirst(lc);

		registry_accept_standing_hold(obj->id, runtime, obj->allowed_since);
	}
}

/*
 * The interactive runtime accepts what the catalog allows: at start, and
 * when its command queue overflowed (it may have missed a raise).
 */
static void
accept_standing_holds(int runtime)
{
	spi_run_in_transaction(accept_catalog_holds, &runtime);
}

/*
 * Take the commands sent at commit.  A standing-hold raise in a runtime
 * other than maintenance is passed on to maintenance, which may now compact.
 * Returns whether one named an object of another extension than the one in
 * effect (of any, while there is none): the extension was made, or dropped
 * and made anew, since the last check, and the runtime must start over
 * before it works for the new one's objects.
 */
static bool
take_commands(int runtime, bool maintains, Oid extension)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	PeekCommand *cmds = palloc(sizeof(PeekCommand) * MAX_COMMANDS_PER_ROUND);
	bool		overflowed;
	bool		made_anew = false;
	int			n;

	do
	{
		n = queue_drain(rt->commands, cmds, MAX_COMMANDS_PER_ROUND, &overflowed);
		for (int i = 0; i < n; i++)
		{
			runtime_count(rt, RC_COMMANDS);
			/*
			 * Only another extension's command is left to the start over,
			 * which re-reads all it would tell: one of an extension that is
			 * no longer (or of another database's) starts nothing over, and
			 * the commands of the extension in effect must still be taken.
			 */
			if (cmds[i].object > 0 &&
				PEEK_OBJECT_EXTENSION(cmds[i].object) != extension)
			{
				made_anew = true;
				continue;
			}
			if (!OidIsValid(extension))
				continue;
			if (maintains)
				maintenance_note_command(&cmds[i]);
			else if (cmds[i].kind == PEEK_CMD_STANDING_HOLD)
				registry_accept_standing_hold(cmds[i].object, runtime, cmds[i].value);
		}
		if (overflowed && OidIsValid(extension))
		{
			if (maintains)
				maintenance_note_command(NULL);
			else
				accept_standing_holds(runtime);
		}
	} while (n == MAX_COMMANDS_PER_ROUND);
	pfree(cmds);
	return made_anew;
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

/*
 * Start: signals, the database connection, then reconciliation's shared
 * part: drop what a previous incarnation had pending, then announce the new
 * generation so backends re-issue.
 */
static void
runtime_start(int runtime, PeekRole role)
{
	RuntimeSlot *rt = runtime_slot(runtime);

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, runtime_sigint);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(setting_database, NULL, 0);
	/* the runtime is a superuser: the database's settings are not its own */
	worker_pin_settings();
	registry_attach();
	if (role != PEEK_ROLE_INTERACTIVE)
		capture_skip_own_writes();
	if (role == PEEK_ROLE_MAINTENANCE)
	{
		errno = 0;
		base_nice = getpriority(PRIO_PROCESS, 0);
		if (errno == 0)
			apply_nice();
		else
			base_nice = NO_NICE;
	}

	serve_reset(runtime, role == PEEK_ROLE_SOLO ? spine_local_batches : NULL);
	before_shmem_exit(runtime_exit, Int32GetDatum(runtime));
	SpinLockAcquire(&rt->mutex);
	rt->pid = MyProcPid;
	rt->proc = MyProc;
	rt->generation++;
	rt->restarts++;
	rt->state = RUNTIME_WAITING;
	rt->started_at = GetCurrentTimestamp();
	rt->max_memory_kb = setting_max_memory_kb;
	SpinLockRelease(&rt->mutex);

	ereport(LOG,
			(errmsg("pg_peek %s runtime started in database \"%s\"",
					settings_role_name(role), setting_database)));
}

/*
 * Idle until the extension exists; notice a drop and re-create once a
 * second, or at once when a command told of it (recheck).  The first check
 * reconciles whatever it finds.  Returns the extension's OID (invalid while
 * there is none).
 */
static Oid
check_extension(int runtime, bool maintains, Oid extension, TimestampTz *checked,
				bool recheck)
{
	Oid			found;
	bool		first = *checked == 0;
	bool		promoted = standby_round_begin();

	if (OidIsValid(extension) && !promoted && !recheck &&
		!TimestampDifferenceExceeds(*checked, GetCurrentTimestamp(), RUNTIME_TICK_MS))
		return extension;

	spi_run_in_transaction(find_extension, &found);
	*checked = GetCurrentTimestamp();
	/* a promoted standby takes up the primary's duties as a fresh start */
	if (found != extension || first || promoted)
	{
		if (maintains && OidIsValid(found) && !RecoveryInProgress())
			spi_run_in_transaction(adopt_upgraded_objects, &found);
		if (maintains)
			maintenance_reset();
		if (maintains && !OidIsValid(found))
			capture_drop_orphan_slots(NIL); /* dropped with the extension */
		else if (OidIsValid(found) && !maintains)
			accept_standing_holds(runtime);
		runtime_set_state(runtime_slot(runtime),
						  OidIsValid(found) ? RUNTIME_RUNNING : RUNTIME_WAITING);
	}
	return found;
}

/*
 * Sleep until woken or the tick (not at all while merge work is left); take
 * a configuration reload.
 */
static void
runtime_wait(RuntimeSlot *rt, bool maintains, bool busy)
{
	int			rc;
	long		capture_ms = maintains ? capture_wait_ms() : -1;
	long		fold_ms = maintains ? folds_wait_ms() : -1;
	long		view_ms = maintains ? dataflow_wait_ms() : -1;
	long		retry_ms = maintains ? retries_wait_ms() : -1;
	long		wait_ms = capture_ms >= 0 ? capture_ms : RUNTIME_TICK_MS;

	if (fold_ms >= 0)
		wait_ms = Min(wait_ms, fold_ms);
	if (view_ms >= 0)
		wait_ms = Min(wait_ms, view_ms);
	if (retry_ms >= 0)
		wait_ms = Min(wait_ms, retry_ms);
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   busy ? 0 : standby_wait_ms(wait_ms, maintains),
				   PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	if (rc & WL_LATCH_SET)
		runtime_count(rt, RC_WAKEUPS);
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		int			retention_s = setting_retention_s;

		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		/* the objects that follow pg_peek.retention follow its new value */
		if (maintains && retention_s != setting_retention_s)
			maintenance_note_command(NULL);
		if (base_nice != NO_NICE)
			apply_nice();
		SpinLockAcquire(&rt->mutex);
		rt->max_memory_kb = setting_max_memory_kb;
		SpinLockRelease(&rt->mutex);
	}
}

void
runtime_main(Datum arg)
{
	int			runtime = DatumGetInt32(arg);
	PeekRole	role = settings_runtime_role(runtime);
	bool		maintains = role != PEEK_ROLE_INTERACTIVE;
	bool		serves = role != PEEK_ROLE_MAINTENANCE;
	RuntimeSlot *rt = runtime_slot(runtime);
	MemoryContext round_cxt;
	Oid			extension = InvalidOid;
	TimestampTz extension_checked = 0;
	bool		recheck = false;

	runtime_start(runtime, role);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek runtime round",
									  ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(round_cxt);
		bool		busy = false;

		extension = check_extension(runtime, maintains, extension,
									&extension_checked, recheck);
		recheck = take_commands(runtime, maintains, extension);
		if (OidIsValid(extension) && !recheck)
		{
			if (maintains)
				busy = maintenance_step();
			if (serves)
			{
				serve_inbox(runtime);
				serve_dirty_objects(runtime);
			}
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(round_cxt);
		runtime_wait(rt, maintains, busy || recheck);
	}
}
