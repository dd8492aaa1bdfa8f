/*-------------------------------------------------------------------------
 *
 * introspection.c
 *	  Set-returning functions behind the peek.* views: the runtimes, the
 *	  registry's frontiers and the peeks in flight.  Read-only: copies shared
 *	  state under its locks and never changes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "registry.h"
#include "shmem.h"

PG_FUNCTION_INFO_V1(peek_runtime_status);
PG_FUNCTION_INFO_V1(peek_registry_status);
PG_FUNCTION_INFO_V1(peek_active_peek_status);

static const char *
runtime_state_name(RuntimeState state)
{
	switch (state)
	{
		case RUNTIME_STOPPED:
			return "stopped";
		case RUNTIME_WAITING:
			return "waiting for extension";
		case RUNTIME_RUNNING:
			return "running";
	}
	return "unknown";
}

/* One row per runtime of the configured mode. */
Datum
peek_runtime_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	peek_attach();
	for (int r = 0; r < peek_runtime_count(); r++)
	{
		RuntimeSlot *rt = &peek_shared->runtimes[r];
		Datum		values[5 + RC_NUM_COUNTERS];
		bool		nulls[5 + RC_NUM_COUNTERS] = {0};
		pid_t		pid;
		RuntimeState state;
		TimestampTz started_at;
		int			restarts;

		SpinLockAcquire(&rt->mutex);
		pid = rt->pid;
		state = rt->state;
		started_at = rt->started_at;
		restarts = rt->restarts;
		SpinLockRelease(&rt->mutex);

		values[0] = CStringGetTextDatum(peek_role_name(peek_runtime_role(r)));
		values[1] = Int32GetDatum(pid);
		nulls[1] = pid == 0;
		values[2] = CStringGetTextDatum(runtime_state_name(state));
		values[3] = TimestampTzGetDatum(started_at);
		nulls[3] = started_at == 0;
		values[4] = Int32GetDatum(Max(restarts, 0));
		for (int c = 0; c < RC_NUM_COUNTERS; c++)
			values[5 + c] = Int64GetDatum((int64) pg_atomic_read_u64(&rt->counters[c]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* One row per registry entry: frontiers, holds and waiters. */
Datum
peek_registry_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	peek_attach();
	foreach(lc, registry_snapshot())
	{
		RegistryEntry *e = lfirst(lc);
		Datum		values[16];
		bool		nulls[16] = {0};
		int32		waiters = 0;
		int32		live_handles = 0;
		uint64		pins = 0;
		uint64		releases = 0;

		for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		{
			waiters += e->waiters[r];
			live_handles += pg_atomic_read_u32(&e->live_handles[r]);
			pins += pg_atomic_read_u64(&e->pins[r]);
			releases += pg_atomic_read_u64(&e->releases[r]);
		}
		values[0] = Int64GetDatum(e->id);
		values[1] = BoolGetDatum(e->published);
		values[2] = BoolGetDatum(e->dropped);
		values[3] = Int64GetDatum(e->since);
		values[4] = Int64GetDatum(e->upper);
		values[5] = Int64GetDatum(e->allowed_since);
		values[6] = Int64GetDatum(e->standing_hold[PEEK_RUNTIME_MAINTENANCE]);
		values[7] = Int64GetDatum(e->standing_hold[PEEK_RUNTIME_INTERACTIVE]);
		nulls[7] = !peek_interactive;
		values[8] = Int32GetDatum(waiters);
		values[9] = BoolGetDatum(e->failed);
		values[10] = Int32GetDatum(e->nbatches);
		values[11] = Int64GetDatum(e->rows);
		values[12] = Int64GetDatum(e->bytes);
		values[13] = Int32GetDatum(live_handles);
		values[14] = Int64GetDatum((int64) pins);
		values[15] = Int64GetDatum((int64) releases);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static const char *
peek_state_name(PeekState state)
{
	return state == PEEK_PARKED ? "waiting" :
		state == PEEK_SUBMITTED ? "submitted" : "running";
}

/* One row per peek in flight. */
Datum
peek_active_peek_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	peek_attach();
	for (int i = 0; i < peek_shared->nslots; i++)
	{
		PeekSlot   *slot = &peek_shared->slots[i];
		PeekSlot	copy;
		Datum		values[8];
		bool		nulls[8] = {0};

		SpinLockAcquire(&slot->mutex);
		memcpy(&copy, slot, sizeof(PeekSlot));
		SpinLockRelease(&slot->mutex);
		if (copy.state != PEEK_SUBMITTED && copy.state != PEEK_PARKED &&
			copy.state != PEEK_ANSWERED)
			continue;

		values[0] = UUIDPGetDatum(&copy.uuid);
		values[1] = Int64GetDatum(copy.object);
		values[2] = CStringGetTextDatum(copy.kind == PEEK_KIND_INDEX ? "index" : "persist");
		values[3] = Int64GetDatum(copy.time);
		nulls[3] = copy.time == PEEK_TIME_LATEST;
		values[4] = CStringGetTextDatum(peek_role_name(peek_runtime_role(copy.runtime)));
		values[5] = CStringGetTextDatum(peek_state_name(copy.state));
		values[6] = Int32GetDatum(copy.backend_pid);
		values[7] = TimestampTzGetDatum(copy.submitted_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
