/*-------------------------------------------------------------------------
 *
 * introspection.c
 *	  Set-returning functions behind the peek.* views: the runtimes, the
 *	  registry's frontiers, the peeks in flight and their durations, holds,
 *	  sinces and a collection's row count.  Read-only: copies shared
 *	  state under its locks and never changes it.  Rows about an object
 *	  are shown only to whom the views show it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "ipc/runtime_slots.h"
#include "peek/peek.h"
#include "peek/slots.h"
#include "storage/catalog.h"
#include "storage/persist.h"

PEEK_SQL_FUNCTION(peek_runtime_status);
PEEK_SQL_FUNCTION(peek_registry_status);
PEEK_SQL_FUNCTION(peek_active_peek_status);
PEEK_SQL_FUNCTION(peek_runtime_object_status);
PEEK_SQL_FUNCTION(peek_peek_hold_status);
PEEK_SQL_FUNCTION(peek_duration_status);
PEEK_SQL_FUNCTION(peek_collection_rows);
PEEK_SQL_FUNCTION(peek_since_status);
PEEK_SQL_FUNCTION(peek_view_round_status);
PEEK_SQL_FUNCTION(peek_operator_status);

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

/*
 * Who sees an object's state, as the views say (peek.visible): its owner
 * and members of pg_read_all_data or pg_read_all_stats.
 */
static bool
sees_all(void)
{
	return has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_DATA) ||
		has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
}

static bool
may_see(Oid owner)
{
	return sees_all() || has_privs_of_role(GetUserId(), owner);
}

/*
 * The objects the caller may not see, whose rows the functions below leave
 * out (as the views do): NULL when the caller sees them all.  An id that is
 * not in the catalog (a dropped object) names nothing and is shown.
 */
static HTAB *
hidden_objects(void)
{
	HTAB	   *hidden = NULL;
	ListCell   *lc;

	if (sees_all())
		return NULL;
	foreach(lc, catalog_read(NULL, -1))
	{
		CatalogObject *obj = lfirst(lc);

		if (may_see(obj->owner))
			continue;
		if (hidden == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = sizeof(PeekObjectId);
			ctl.entrysize = sizeof(PeekObjectId);
			ctl.hcxt = CurrentMemoryContext;
			hidden = hash_create("pg_peek hidden objects", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		hash_search(hidden, &obj->id, HASH_ENTER, NULL);
	}
	return hidden;
}

static bool
is_hidden(HTAB *hidden, PeekObjectId id)
{
	return hidden != NULL && hash_search(hidden, &id, HASH_FIND, NULL) != NULL;
}

/*
 * The start of a set-returning function over the registry: the result set
 * made, and the entries (a snapshot of them) whose objects the caller may
 * see.
 */
static List *
visible_entries(FunctionCallInfo fcinfo)
{
	HTAB	   *hidden = hidden_objects();
	List	   *visible = NIL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	registry_attach();
	foreach(lc, registry_snapshot())
	{
		RegistryEntry *e = lfirst(lc);

		if (!is_hidden(hidden, e->id))
			visible = lappend(visible, e);
	}
	return visible;
}

/* One row per runtime of the configured mode. */
Datum
peek_runtime_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	registry_attach();
	for (int r = 0; r < settings_runtime_count(); r++)
	{
		RuntimeSlot *rt = runtime_slot(r);
		Datum		values[8 + RC_NUM_COUNTERS];
		bool		nulls[8 + RC_NUM_COUNTERS] = {0};
		pid_t		pid;
		RuntimeState state;
		TimestampTz started_at;
		int			restarts;
		int			max_memory_kb;

		SpinLockAcquire(&rt->mutex);
		pid = rt->pid;
		state = rt->state;
		started_at = rt->started_at;
		restarts = rt->restarts;
		max_memory_kb = rt->max_memory_kb;
		SpinLockRelease(&rt->mutex);

		values[0] = CStringGetTextDatum(settings_role_name(settings_runtime_role(r)));
		values[1] = Int32GetDatum(pid);
		nulls[1] = pid == 0;
		values[2] = CStringGetTextDatum(runtime_state_name(state));
		values[3] = TimestampTzGetDatum(started_at);
		nulls[3] = started_at == 0;
		values[4] = Int32GetDatum(Max(restarts, 0));
		for (int c = 0; c < RC_NUM_COUNTERS; c++)
			values[5 + c] = Int64GetDatum((int64) pg_atomic_read_u64(&rt->counters[c]));
		values[5 + RC_NUM_COUNTERS] = Int64GetDatum((int64) peek_slots_fast_peeks(r));
		values[6 + RC_NUM_COUNTERS] =
			Int64GetDatum((int64) batch_arrangement_bytes());
		values[7 + RC_NUM_COUNTERS] = Int64GetDatum((int64) max_memory_kb * 1024);
		nulls[7 + RC_NUM_COUNTERS] = max_memory_kb == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* One row per registry entry: frontiers, allowance, arrangement, hydration. */
Datum
peek_registry_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	foreach(lc, visible_entries(fcinfo))
	{
		RegistryEntry *e = lfirst(lc);
		Datum		values[14];
		bool		nulls[14] = {0};

		values[0] = Int64GetDatum(e->id);
		values[1] = BoolGetDatum(e->published);
		values[2] = BoolGetDatum(e->dropped);
		values[3] = Int64GetDatum(e->since);
		values[4] = Int64GetDatum(e->upper);
		values[5] = Int64GetDatum(e->allowed_since);
		values[6] = BoolGetDatum(e->failed);
		values[7] = Int32GetDatum(e->nbatches);
		values[8] = Int64GetDatum(e->updates);
		values[9] = Int64GetDatum(e->rows);
		values[10] = Int64GetDatum(e->bytes);
		values[11] = BoolGetDatum(e->hydrating);
		values[12] = Int64GetDatum(e->hydrated_rows);
		values[13] = Int64GetDatum(e->hydration_total);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* A row of peek.operator_status(): the view's operator i (from 0). */
static void
put_operator(ReturnSetInfo *rsinfo, PeekObjectId view, int i, const OperatorStats *op)
{
	Datum		values[8] = {
		Int64GetDatum(view), Int32GetDatum(i + 1), CStringGetTextDatum(op->kind),
		Int64GetDatum(op->rows_in), Int64GetDatum(op->rows_out), Int64GetDatum(op->bytes),
		Float8GetDatum(op->time_us / 1000.0), BoolGetDatum(op->learning)
	};
	bool		nulls[8] = {0};

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * One row per operator of each maintained view in the registry: what its
 * rounds did in it (peek.dataflow_operators).
 */
Datum
peek_operator_status(PG_FUNCTION_ARGS)
{
	ListCell   *lc;

	foreach(lc, visible_entries(fcinfo))
	{
		RegistryEntry *e = lfirst(lc);

		for (int i = 0; !e->dropped && i < e->noperators; i++)
			put_operator((ReturnSetInfo *) fcinfo->resultinfo, e->id, i, &e->operators[i]);
	}
	return (Datum) 0;
}

/*
 * One row per published registry entry: when its since was last the newest
 * complete time (NULL if not known: not since the server started), for the
 * since's age in the views.
 */
Datum
peek_since_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	foreach(lc, visible_entries(fcinfo))
	{
		RegistryEntry *e = lfirst(lc);
		Datum		values[2];
		bool		nulls[2] = {0};

		if (!e->published || e->dropped)
			continue;
		values[0] = Int64GetDatum(e->id);
		values[1] = TimestampTzGetDatum(e->since_clock);
		nulls[1] = e->since_clock == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * One row per maintained view whose rounds ran out of time in a row (it is
 * retried with a longer limit, which the row shows): 'retrying' in
 * peek.views.
 */
Datum
peek_view_round_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	foreach(lc, visible_entries(fcinfo))
	{
		RegistryEntry *e = lfirst(lc);
		Datum		values[3];
		bool		nulls[3] = {0};

		if (e->dropped || e->round_timeouts == 0)
			continue;
		values[0] = Int64GetDatum(e->id);
		values[1] = Int32GetDatum(e->round_timeouts);
		values[2] = Int32GetDatum(e->round_limit_ms);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * One row per registry entry and runtime in use: that runtime's standing
 * hold, parked peeks and shared handles on the object.
 */
Datum
peek_runtime_object_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	foreach(lc, visible_entries(fcinfo))
	{
		RegistryEntry *e = lfirst(lc);

		for (int r = 0; r < settings_runtime_count(); r++)
		{
			Datum		values[7];
			bool		nulls[7] = {0};

			values[0] = Int64GetDatum(e->id);
			values[1] = CStringGetTextDatum(settings_role_name(settings_runtime_role(r)));
			values[2] = Int64GetDatum(e->standing_hold[r]);
			values[3] = Int32GetDatum(e->waiters[r]);
			values[4] = Int32GetDatum((int32) pg_atomic_read_u32(&e->live_handles[r]));
			values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&e->pins[r]));
			values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&e->releases[r]));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * A peek's id as shown by the views: its backend, slot and sequence number
 * (a peek is numbered in its slot, not given a random id per peek).
 */
static void
peek_uuid(const PeekSlot *slot, pg_uuid_t *uuid)
{
	uint32		pid = (uint32) slot->backend_pid;
	uint32		idx = (uint32) peek_slot_index(slot);

	memcpy(uuid->data, &pid, 4);
	memcpy(uuid->data + 4, &idx, 4);
	memcpy(uuid->data + 8, &slot->peek_id, 8);
}

/* Every hold of a pending peek: (object, runtime, time, peek id). */
Datum
peek_peek_hold_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HTAB	   *hidden = hidden_objects();

	InitMaterializedSRF(fcinfo, 0);
	registry_attach();
	for (int i = 0; i < peek_slot_count(); i++)
	{
		PeekSlot   *slot = peek_slot(i);
		Datum		values[4];
		bool		nulls[4] = {0};
		PeekObjectId object;
		int64		time;
		int			runtime;
		pg_uuid_t	uuid;

		SpinLockAcquire(&slot->mutex);
		object = slot->hold_object;
		time = slot->hold_time;
		runtime = slot->runtime;
		peek_uuid(slot, &uuid);
		SpinLockRelease(&slot->mutex);
		if (object == 0 || is_hidden(hidden, object))
			continue;
		values[0] = Int64GetDatum(object);
		values[1] = CStringGetTextDatum(settings_role_name(settings_runtime_role(runtime)));
		values[2] = Int64GetDatum(time);
		values[3] = UUIDPGetDatum(&uuid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* The peek duration histograms: (runtime, kind, bucket ns, count). */
Datum
peek_duration_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	registry_attach();
	for (int r = 0; r < settings_runtime_count(); r++)
		for (int k = 0; k < PEEK_DURATION_KINDS; k++)
			for (int b = 0; b < PEEK_DURATION_BUCKETS; b++)
			{
				uint64		count = peek_slots_durations(r, k, b);
				Datum		values[4];
				bool		nulls[4] = {0};

				if (count == 0)
					continue;
				values[0] = CStringGetTextDatum(settings_role_name(settings_runtime_role(r)));
				values[1] = CStringGetTextDatum(k == 1 ? "index" : "persist");
				values[2] = Int64GetDatum((int64) ((uint64) 1 << b));
				values[3] = Int64GetDatum((int64) count);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	return (Datum) 0;
}

static const char *
peek_state_name(PeekState state)
{
	return state == PEEK_PARKED ? "parked" :
		state == PEEK_SUBMITTED ? "submitted" : "running";
}

/* One row per peek in flight. */
Datum
peek_active_peek_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HTAB	   *hidden = hidden_objects();

	InitMaterializedSRF(fcinfo, 0);
	registry_attach();
	for (int i = 0; i < peek_slot_count(); i++)
	{
		PeekSlot   *slot = peek_slot(i);
		PeekSlot	copy;
		pg_uuid_t	uuid;
		Datum		values[8];
		bool		nulls[8] = {0};

		SpinLockAcquire(&slot->mutex);
		memcpy(&copy, slot, sizeof(PeekSlot));
		peek_uuid(slot, &uuid);
		SpinLockRelease(&slot->mutex);
		if (copy.state != PEEK_SUBMITTED && copy.state != PEEK_PARKED &&
			copy.state != PEEK_ANSWERED)
			continue;
		if (is_hidden(hidden, copy.object))
			continue;

		values[0] = UUIDPGetDatum(&uuid);
		values[1] = Int64GetDatum(copy.object);
		values[2] = CStringGetTextDatum(copy.kind == PEEK_KIND_INDEX ? "index" : "persist");
		values[3] = Int64GetDatum(copy.time);
		nulls[3] = copy.time == PEEK_TIME_LATEST;
		values[4] = CStringGetTextDatum(settings_role_name(settings_runtime_role(copy.runtime)));
		values[5] = CStringGetTextDatum(peek_state_name(copy.state));
		values[6] = Int32GetDatum(copy.backend_pid);
		values[7] = TimestampTzGetDatum(copy.submitted_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * A collection's current row count: the sum of its shard's diffs before the
 * given upper (peek.collections and peek.views pass the one they show; a
 * registry read here could see a newer publication), or without one before
 * the published upper, which a peek at as_of NULL reads below, else the
 * stored one (NULL once its shard is gone with its row type).  The stored
 * upper commits before it is published, so a count at it would be ahead of
 * what a peek right after sees.  A collection the caller may not see is
 * answered as one that does not exist.
 */
Datum
peek_collection_rows(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CatalogObject *coll = catalog_find(name);
	RegistryEntry *entry;
	int64		upper;

	if (coll == NULL || !may_see(coll->owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("collection \"%s\" does not exist", name)));
	if (coll->kind == PEEK_KIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is an index, not a collection", name)));
	if (!persist_lock_shard(coll->shard))
		PG_RETURN_NULL();
	if (PG_NARGS() > 1)
		PG_RETURN_INT64(persist_sum_diffs(coll->shard, PG_GETARG_INT64(1)));
	upper = coll->upper;
	registry_attach();
	entry = registry_lock(coll->id, false, NULL);
	if (entry != NULL)
	{
		if (entry->published && coll->failure == NULL)
			upper = entry->upper;
		registry_unlock(entry);
	}
	PG_RETURN_INT64(persist_sum_diffs(coll->shard, upper));
}
