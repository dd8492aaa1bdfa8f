/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module entry point: _PG_init defines the settings, installs the shared
 *	  memory hooks, registers the runtimes' background workers and calls one
 *	  init per subsystem.  Owns nothing else; every mechanism lives in its
 *	  own file, and no file calls this one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "common/settings.h"
#include "ipc/notify.h"
#include "peek/peek.h"
#include "storage/persist.h"
#include "ipc/registry.h"
#include "sql/scan.h"
#include "ipc/shmem.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
pg_peek_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shmem_size());
}

/*
 * The registry's dshash is created in the DSA area while the area cannot
 * grow, so that the postmaster never needs a DSM segment.
 */
static void
pg_peek_shmem_startup(void)
{
	dsa_area   *dsa;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	dsa = shmem_startup();
	if (dsa != NULL)
	{
		registry_create(dsa);
		shmem_startup_done(dsa);
	}
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
	shmem_request_hook = pg_peek_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pg_peek_shmem_startup;
	/* pg_upgrade's servers restore and copy files: no runtime may write */
	if (!IsBinaryUpgrade)
		register_runtimes();
	peek_backend_init();
	notify_init();
	persist_init();
	scan_init();
}
