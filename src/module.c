/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module entry point: _PG_init defines the settings, installs the shared
 *	  memory hooks, registers the runtimes' background workers and calls the
 *	  init of each folder that hooks into the backend.  Owns nothing else; every mechanism lives in its
 *	  own file, and no file calls this one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"

#include "ipc/area.h"
#include "ipc/notify.h"
#include "ipc/runtime_slots.h"
#include "peek/peek.h"
#include "peek/slots.h"
#include "sql/view_guard.h"
#include "sql/scan.h"
#include "storage/persist.h"

PG_MODULE_MAGIC;

extern PGDLLEXPORT void _PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Each folder's shared memory, summed. */
static void
request_shared_memory(void)
{
	Size		size = area_shmem_size();

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	size = add_size(size, registry_shmem_size());
	size = add_size(size, batch_shmem_size());
	size = add_size(size, runtime_slots_shmem_size());
	size = add_size(size, peek_slots_shmem_size());
	RequestAddinShmemSpace(size);
}

/*
 * Each folder lays out its shared memory.  The registry's dshash is created
 * in the DSA area while the area cannot grow, so that the postmaster never
 * needs a DSM segment.
 */
static void
init_shared_memory(void)
{
	dsa_area   *dsa;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	dsa = area_shmem_init();
	if (dsa != NULL)
	{
		registry_shmem_init(dsa);
		area_shmem_init_done(dsa);
	}
	batch_shmem_init();
	runtime_slots_shmem_init();
	peek_slots_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

static void
register_runtimes(void)
{
	for (int r = 0; r < settings_runtime_count(); r++)
	{
		BackgroundWorker worker;
		const char *role = settings_role_name(settings_runtime_role(r));

		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		/* on a hot standby too: read-only, following replay (standby_replay.c) */
		worker.bgw_start_time = BgWorkerStart_ConsistentState;
		worker.bgw_restart_time = 1;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_peek");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "runtime_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "pg_peek %s runtime", role);
		snprintf(worker.bgw_type, BGW_MAXLEN, "pg_peek %s", role);
		worker.bgw_main_arg = Int32GetDatum(r);
		RegisterBackgroundWorker(&worker);
	}
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_peek must be loaded via shared_preload_libraries"),
				 errhint("Add pg_peek to shared_preload_libraries in postgresql.conf and restart the server.")));

	settings_define();
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = request_shared_memory;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = init_shared_memory;
	/* pg_upgrade's servers restore and copy files: no runtime may write */
	if (!IsBinaryUpgrade)
		register_runtimes();
	backend_peek_init();
	notify_init();
	persist_init();
	scan_init();
	view_guard_init();
}
