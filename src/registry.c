/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The sharing registry (DESIGN §1): one dshash entry per object id with
 *	  its frontiers, holds, waiter counts and dirty marks.
 *
 *	  Publishing (publish_frontiers) raises an object's frontiers and, in the
 *	  same entry lock, marks the object dirty only for runtimes that have
 *	  peeks parked on it, then wakes just those.  With nothing parked a seal
 *	  costs no wake-up and takes no lock but the publisher's own.
 *
 *	  The effective since (registry_advance_since) is computed under the
 *	  entry lock from the user's allowance, every standing hold and every
 *	  peek hold; the gate (peek.c) takes peek holds under the same lock.
 *
 *	  Must not touch the catalog or do I/O: callers hold a partition lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pg_list.h"

#include "batch.h"
#include "registry.h"
#include "rows.h"
#include "shmem.h"

static dshash_parameters
registry_params(int tranche)
{
	dshash_parameters params = {
		sizeof(PeekObjectId),
		sizeof(RegistryEntry),
		dshash_memcmp,
		dshash_memhash,
		tranche
	};

	return params;
}

dshash_table_handle
registry_create(dsa_area *dsa, int tranche)
{
	dshash_parameters params = registry_params(tranche);
	dshash_table *table = dshash_create(dsa, &params, NULL);
	dshash_table_handle handle = dshash_get_hash_table_handle(table);

	dshash_detach(table);
	return handle;
}

dshash_table *
registry_attach(dsa_area *dsa, dshash_table_handle handle, int tranche)
{
	dshash_parameters params = registry_params(tranche);

	return dshash_attach(dsa, &params, handle, NULL);
}

/*
 * Find an object's entry and lock it exclusively.  With create, a missing
 * entry is made as an unpublished placeholder at the minimum frontier, so
 * that early peeks can park on it (late binding).
 */
RegistryEntry *
registry_lock(PeekObjectId id, bool create)
{
	dshash_table *table = peek_registry_table();
	RegistryEntry *entry;
	bool		found;

	if (!create)
		return dshash_find(table, &id, true);

	entry = dshash_find_or_insert(table, &id, &found);
	if (!found)
	{
		memset((char *) entry + sizeof(PeekObjectId), 0,
			   sizeof(RegistryEntry) - sizeof(PeekObjectId));
		for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		{
			pg_atomic_init_u32(&entry->live_handles[r], 0);
			pg_atomic_init_u64(&entry->pins[r], 0);
			pg_atomic_init_u64(&entry->releases[r], 0);
		}
	}
	return entry;
}

void
registry_unlock(RegistryEntry *entry)
{
	dshash_release_lock(peek_registry_table(), entry);
}

/*
 * Mark the entry dirty for every runtime with peeks parked on it.  Called
 * with the entry locked; returns a bitmask of the runtimes to wake once the
 * lock is released.
 */
static int
mark_waiters_dirty(RegistryEntry *entry)
{
	int			wake = 0;

	for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
	{
		if (entry->waiters[r] <= 0 || entry->dirty[r])
			continue;
		if (queue_push(peek_shared->runtimes[r].dirty, &entry->id))
			entry->dirty[r] = true;
		/* an overflowed dirty queue makes the runtime re-examine everything */
		wake |= 1 << r;
	}
	return wake;
}

static void
wake_marked(int wake)
{
	for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		if (wake & (1 << r))
			wake_runtime(r);
}

/*
 * Raise a locked entry's frontiers (they only rise) and, if anything changed,
 * count a publication and mark the entry dirty for runtimes with waiters.
 * Returns the runtimes to wake once the lock is released.
 */
static int
raise_frontiers(RegistryEntry *entry, char kind, int64 upper, int64 since, bool *changed)
{
	*changed = !entry->published || upper > entry->upper || since > entry->since;
	entry->kind = kind;
	entry->published = true;
	entry->upper = Max(entry->upper, upper);
	entry->since = Max(entry->since, since);
	if (!*changed)
		return 0;
	entry->publications++;
	return mark_waiters_dirty(entry);
}

/*
 * Publish an object's frontiers.  Frontiers only rise.  This is also the
 * moment a placeholder created by an early peek is adopted.  Returns whether
 * anything changed.
 */
bool
publish_frontiers(PeekObjectId id, char kind, int64 upper, int64 since,
				  int64 allowed_since)
{
	RegistryEntry *entry = registry_lock(id, true);
	bool		changed;
	int			wake;

	wake = raise_frontiers(entry, kind, upper, since, &changed);
	entry->allowed_since = Max(entry->allowed_since, allowed_since);
	registry_unlock(entry);
	wake_marked(wake);
	return changed;
}

/* An object's published upper (0 if unpublished), under a shared lock. */
int64
registry_published_upper(PeekObjectId id)
{
	RegistryEntry *entry = dshash_find(peek_registry_table(), &id, false);
	int64		upper = 0;

	if (entry != NULL)
	{
		upper = entry->published ? entry->upper : 0;
		dshash_release_lock(peek_registry_table(), entry);
	}
	return upper;
}

/*
 * Detach a locked entry's published batch list into old[]; the caller
 * unpins them once the lock is released.
 */
static int
detach_batches(RegistryEntry *entry, dsa_pointer *old)
{
	int			nold = entry->nbatches;

	memcpy(old, entry->batches, sizeof(dsa_pointer) * nold);
	entry->nbatches = 0;
	entry->updates = 0;
	entry->rows = 0;
	entry->bytes = 0;
	return nold;
}

static void
unpin_all(dsa_pointer *batches, int n)
{
	for (int i = 0; i < n; i++)
		batch_unpin(batches[i]);
}

void
registry_mark_dropped(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, true);
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold;
	int			wake = 0;

	nold = detach_batches(entry, old);
	if (!entry->dropped)
	{
		entry->dropped = true;
		wake = mark_waiters_dirty(entry);
	}
	registry_unlock(entry);
	wake_marked(wake);
	unpin_all(old, nold);
}

/*
 * Tombstone every entry whose id is not in live[] (sorted).  Used when the
 * maintenance runtime reconciles with a full read of the catalog.
 */
static int
id_cmp(const void *a, const void *b)
{
	PeekObjectId x = *(const PeekObjectId *) a;
	PeekObjectId y = *(const PeekObjectId *) b;

	return (x > y) - (x < y);
}

void
registry_mark_dropped_except(PeekObjectId *live, int nlive)
{
	dshash_seq_status status;
	RegistryEntry *entry;
	int			wake = 0;

	qsort(live, nlive, sizeof(PeekObjectId), id_cmp);
	dshash_seq_init(&status, peek_registry_table(), true);
	while ((entry = dshash_seq_next(&status)) != NULL)
	{
		dsa_pointer old[PEEK_MAX_BATCHES];
		int			nold;

		if (entry->dropped ||
			bsearch(&entry->id, live, nlive, sizeof(PeekObjectId), id_cmp) != NULL)
			continue;
		entry->dropped = true;
		wake |= mark_waiters_dirty(entry);
		/* unpinning never takes a registry lock, so it may happen here */
		nold = detach_batches(entry, old);
		unpin_all(old, nold);
	}
	dshash_seq_term(&status);
	wake_marked(wake);
}

/* A runtime accepts a since for an object; only rises. Returns true if raised. */
bool
registry_raise_standing_hold(PeekObjectId id, int runtime, int64 since)
{
	RegistryEntry *entry = registry_lock(id, true);
	bool		raised = since > entry->standing_hold[runtime];

	if (raised)
		entry->standing_hold[runtime] = since;
	entry->allowed_since = Max(entry->allowed_since, since);
	registry_unlock(entry);
	return raised;
}

/* The lowest time any in-flight peek holds on this object, or INT64_MAX. */
static int64
min_peek_hold(PeekObjectId id)
{
	int64		min_hold = PG_INT64_MAX;

	for (int i = 0; i < peek_shared->nslots; i++)
	{
		PeekSlot   *slot = &peek_shared->slots[i];

		SpinLockAcquire(&slot->mutex);
		if (slot->hold_object == id)
			min_hold = Min(min_hold, slot->hold_time);
		SpinLockRelease(&slot->mutex);
	}
	return min_hold;
}

/*
 * Advance an object's since as far as every hold allows: the user's
 * allowance, each running role's standing hold, each pending peek, and the
 * upper.  The since stays strictly below the upper and below durable_upper
 * (the upper its shard durably holds): a shard compacted to a time that is
 * not complete would be read again as new updates by the indexes that
 * follow it, a peek at the latest complete time would wait, and a source
 * whose since followed its WAL-driven upper would compact on its own WAL.
 * Returns the since now in force; *target is where it would go if no peek
 * held it back (so the caller knows whether to retry later).
 */
int64
registry_advance_since(PeekObjectId id, int64 durable_upper, int64 *target)
{
	RegistryEntry *entry = registry_lock(id, false);
	int64		allowed;
	int64		since;

	if (entry == NULL)
	{
		*target = 0;
		return 0;
	}
	allowed = Min(entry->allowed_since, Min(entry->upper, durable_upper) - 1);
	for (int r = 0; r < peek_runtime_count(); r++)
		allowed = Min(allowed, entry->standing_hold[r]);
	*target = Max(allowed, entry->since);
	allowed = Min(allowed, min_peek_hold(id));
	if (allowed > entry->since && !entry->dropped)
		entry->since = allowed;
	since = entry->since;
	registry_unlock(entry);
	return since;
}

/*
 * Reconciliation: a (re)starting runtime has no parked peeks, so its waiter
 * counts and dirty marks start from zero.  Standing holds are kept.
 */
void
registry_reset_runtime(int runtime)
{
	dshash_seq_status status;
	RegistryEntry *entry;

	dshash_seq_init(&status, peek_registry_table(), true);
	while ((entry = dshash_seq_next(&status)) != NULL)
	{
		entry->waiters[runtime] = 0;
		entry->dirty[runtime] = false;
	}
	dshash_seq_term(&status);
}

/* A palloc'd copy of every entry, for introspection. */
List *
registry_snapshot(void)
{
	dshash_seq_status status;
	RegistryEntry *entry;
	List	   *result = NIL;

	dshash_seq_init(&status, peek_registry_table(), false);
	while ((entry = dshash_seq_next(&status)) != NULL)
	{
		RegistryEntry *copy = palloc(sizeof(RegistryEntry));

		memcpy(copy, entry, sizeof(RegistryEntry));
		result = lappend(result, copy);
	}
	dshash_seq_term(&status);
	return result;
}

/* ---- arrangements and handles ---- */

/*
 * Publish an index's batch list with its frontiers.  The registry's list
 * holds a reference on each of its batches; the list it replaces lets go
 * of its own after the lock is released (freeing batches no reader pins).
 */
void
publish_arrangement(PeekObjectId id, dsa_pointer *batches, int nbatches,
					int64 upper, int64 since)
{
	RegistryEntry *entry;
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold;
	int64		updates = 0;
	int64		rows = 0;
	int64		bytes = 0;
	int			wake;
	bool		changed;

	Assert(nbatches <= PEEK_MAX_BATCHES);
	for (int i = 0; i < nbatches; i++)
	{
		Batch	   *batch = batch_get(batches[i]);

		batch_pin(batches[i]);
		updates += batch->nentries;
		rows = add_saturating(rows, batch->rows);
		bytes += batch->size;
	}

	entry = registry_lock(id, true);
	nold = detach_batches(entry, old);
	memcpy(entry->batches, batches, sizeof(dsa_pointer) * nbatches);
	entry->nbatches = nbatches;
	entry->updates = updates;
	entry->rows = rows;
	entry->bytes = bytes;
	entry->hydrating = false;
	wake = raise_frontiers(entry, PEEK_KIND_INDEX, upper, since, &changed);
	registry_unlock(entry);
	wake_marked(wake);
	unpin_all(old, nold);
}

/* The index ran out of memory: peeks on it fail until it is recreated. */
void
registry_mark_failed(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, true);
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold = detach_batches(entry, old);
	int			wake;

	entry->failed = true;
	entry->published = true;
	wake = mark_waiters_dirty(entry);
	registry_unlock(entry);
	wake_marked(wake);
	unpin_all(old, nold);
}

/* Pin a batch list for one reader; the pins live until release_handle. */
void
pin_batches(PeekHandle *handle, PeekObjectId index, dsa_pointer *batches, int nbatches,
			bool shared, int runtime)
{
	handle->index = index;
	handle->shared = shared;
	handle->runtime = runtime;
	handle->nbatches = nbatches;
	for (int i = 0; i < nbatches; i++)
	{
		batch_pin(batches[i]);
		handle->batches[i] = batches[i];
	}
}

/*
 * A shared handle: resolve the published list of a locked entry and pin it.
 * Counted as a sharing event of that runtime.
 */
void
resolve_shared_handle(RegistryEntry *entry, int runtime, PeekHandle *handle)
{
	pg_atomic_fetch_add_u64(&entry->pins[runtime], 1);
	pg_atomic_fetch_add_u32(&entry->live_handles[runtime], 1);
	pin_batches(handle, entry->id, entry->batches, entry->nbatches, true, runtime);
}

/* Let go of a handle (by the reader that walked it, or on cancel). */
void
release_handle(PeekHandle *handle)
{
	for (int i = 0; i < handle->nbatches; i++)
		batch_unpin(handle->batches[i]);
	if (handle->shared)
	{
		/* entries are never deleted, so counters need only a shared lock */
		RegistryEntry *entry = dshash_find(peek_registry_table(), &handle->index, false);

		if (entry != NULL)
		{
			pg_atomic_fetch_add_u64(&entry->releases[handle->runtime], 1);
			pg_atomic_fetch_sub_u32(&entry->live_handles[handle->runtime], 1);
			registry_unlock(entry);
		}
	}
	handle->index = 0;
	handle->nbatches = 0;
}

/* Progress of an index's hydration (total < 0: hydration is over). */
void
registry_hydration_progress(PeekObjectId id, int64 loaded, int64 total)
{
	RegistryEntry *entry = registry_lock(id, true);

	entry->hydrating = total >= 0;
	entry->hydrated_rows = loaded;
	entry->hydration_total = Max(total, 0);
	registry_unlock(entry);
}
