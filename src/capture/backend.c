/*-------------------------------------------------------------------------
 *
 * backend.c
 *	  What backends use of capture: create_source's requirements, the
 *	  strict serializable read time, the nudge that wakes the maintenance
 *	  runtime for a peek waiting on ingestion, and skipping own writes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "access/xlogutils.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/wait_event.h"

#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "capture/decoder.h"
#include "storage/persist.h"
#include "ipc/registry.h"
#include "common/rows.h"
#include "ipc/shmem.h"
#include "common/spi.h"
#include "arrange/spine.h"
#include "storage/standby_replay.h"


/* create_source's check: logical decoding must be possible. */
void
capture_check_requirements(const char *source)
{
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create source \"%s\": pg_peek sources require wal_level = logical",
						source),
				 errdetail("wal_level is \"%s\".", GetConfigOption("wal_level", false, false)),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
	if (max_replication_slots == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot create source \"%s\": pg_peek sources require max_replication_slots > 0",
						source),
				 errhint("Each source uses one replication slot.")));
}

/*
 * Strict serializable: read at the current WAL position, so every
 * transaction committed before the peek (commit LSN below it) is included.
 * Decoding reads only written WAL: the peek writes it, not to wait for the
 * maintenance runtime's next flush.
 */
int64
capture_strict_time(void)
{
	/* on a standby: every transaction replayed so far */
	if (RecoveryInProgress())
		return (int64) GetXLogReplayRecPtr(NULL) - 1;
	return (int64) write_inserted_wal(true) - 1;
}

/* A peek that will wait for ingestion wakes the maintenance runtime now. */
void
capture_nudge(PeekObjectId source, int64 time)
{
	if (registry_published_upper(source) <= time)
		shmem_wake_runtime(PEEK_RUNTIME_MAINTENANCE);
}

/*
 * Mark the WAL of this process's transactions as pg_peek's own (origin
 * DoNotReplicateId, which no user session can set), so that decoding
 * skips it at once (decoder.c): the maintenance runtime's shard appends
 * and a loader's initial load.  Physical replication and recovery ignore
 * the mark.
 */
void
capture_skip_own_writes(void)
{
	replorigin_session_origin = DoNotReplicateId;
}

