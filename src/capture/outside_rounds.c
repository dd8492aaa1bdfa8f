/*-------------------------------------------------------------------------
 *
 * outside_rounds.c
 *	  What backends call of capture, outside its rounds: create_source's
 *	  requirements, the strict serializable read time and the nudge that
 *	  wakes the maintenance runtime for a peek waiting on ingestion.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogrecovery.h"
#include "utils/guc.h"

#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "ipc/registry.h"
#include "ipc/runtime_slots.h"

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
		runtime_wake(PEEK_RUNTIME_MAINTENANCE);
}
