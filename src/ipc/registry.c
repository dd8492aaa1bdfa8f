/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The sharing registry: one dshash entry per object id with
 *	  its frontiers, holds, waiter counts and dirty marks.
 *
 *	  Publishing (registry_publish_frontiers) raises an object's frontiers and, in the
 *	  same entry lock, marks the object dirty only for runtimes that have
 *	  peeks parked on it, then wakes just those.  With nothing parked a seal
 *	  costs no wake-up and takes no lock but the publisher's own.
 *
 *	  The effective since (registry_advance_since) is computed under the
 *	  entry lock from the user's allowance, every standing hold, the
 *	  object's retention and every peek hold; the gate (peek/gate.c) takes peek
 *	  holds under the same lock.  For retention each publication that
 *	  raises an upper samples the wall clock (record_upper_sample), so that
 *	  the entry knows, to within a sixteenth of the retention, what its
 *	  upper was a retention ago, and when its since was last the newest
 *	  complete time (the since's age, in the views).
 *
 *	  Batch ownership, the one rule: a batch is referenced by the spine that
 *	  built it (one pin, owned by the maintenance runtime), by the published
 *	  list of its registry entry (one pin) and by each reader's handle.  Only
 *	  the maintenance runtime releases the spine's and the published list's
 *	  pins; a backend that drops an object only tombstones its entry
 *	  (registry_tombstone), which allocates nothing and frees nothing, so it
 *	  is safe in a commit callback.  Publishing to a tombstone installs
 *	  nothing.  The maintenance runtime deletes a tombstone once no peek is
 *	  parked on it (registry_delete_tombstone); a peek that comes later with
 *	  a stale id makes a placeholder, which the maintenance runtime checks
 *	  against the catalog (registry_lock reports the creation).
 *
 *	  Must not touch the catalog or do I/O: callers hold a partition lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/rows.h"
#include "ipc/area.h"
#include "ipc/registry.h"
#include "ipc/runtime_slots.h"

static dshash_table *attached_registry = NULL;

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

/* Where every process finds the registry's dshash. */
typedef struct RegistryShared
{
	int			tranche;
	dshash_table_handle handle;
	pg_atomic_uint64 tombstones;	/* entries ever tombstoned, from 1 */
} RegistryShared;

static RegistryShared *registry_shared = NULL;

Size
registry_shmem_size(void)
{
	return MAXALIGN(sizeof(RegistryShared));
}

/*
 * Create the registry in the area area_shmem_init just laid out (the caller
 * holds AddinShmemInitLock).
 */
void
registry_shmem_init(dsa_area *dsa)
{
	dshash_parameters params;
	dshash_table *table;
	bool		found;

	registry_shared = ShmemInitStruct(PEEK_EXTENSION " registry", registry_shmem_size(), &found);
	if (found)
		return;

	registry_shared->tranche = LWLockNewTrancheId();
	pg_atomic_init_u64(&registry_shared->tombstones, 1);
	params = registry_params(registry_shared->tranche);
	table = dshash_create(dsa, &params, NULL);
	registry_shared->handle = dshash_get_hash_table_handle(table);
	dshash_detach(table);
}

/* Attach this process to the DSA area and the registry, once. */
void
registry_attach(void)
{
	dshash_parameters params;
	MemoryContext oldcxt;

	if (attached_registry != NULL)
		return;
	area_attach();
	LWLockRegisterTranche(registry_shared->tranche, "pg_peek_registry");
	params = registry_params(registry_shared->tranche);
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	attached_registry = dshash_attach(area_dsa(), &params, registry_shared->handle, NULL);
	MemoryContextSwitchTo(oldcxt);
}

static dshash_table *
registry_table(void)
{
	registry_attach();
	return attached_registry;
}

/*
 * Find an object's entry and lock it exclusively.  With create, a missing
 * entry is made as an unpublished placeholder at the minimum frontier, so
 * that early peeks can park on it (late binding); *created (if not NULL)
 * tells the caller, who must then have the maintenance runtime check the id
 * against the catalog (forget_object in maintenance.c does).
 */
RegistryEntry *
registry_lock(PeekObjectId id, bool create, bool *created)
{
	dshash_table *table = registry_table();
	RegistryEntry *entry;
	bool		found;

	if (created != NULL)
		*created = false;
	if (!create)
		return dshash_find(table, &id, true);

	entry = dshash_find_or_insert(table, &id, &found);
	if (created != NULL)
		*created = !found;
	if (!found)
	{
		memset((char *) entry + sizeof(PeekObjectId), 0,
			   sizeof(RegistryEntry) - sizeof(PeekObjectId));
		/* until the maintenance runtime tells it (registry_set_retention) */
		entry->retention_ms = PEEK_RETENTION_KEEP_ALL;
		for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		{
			pg_atomic_init_u32(&entry->live_handles[r], 0);
			pg_atomic_init_u64(&entry->pins[r], 0);
			pg_atomic_init_u64(&entry->releases[r], 0);
		}
	}
	return entry;
}

/*
 * An entry locked for reading only (NULL if none): readers of the same
 * object do not wait for each other, and a writer (publication,
 * compaction) waits for them.
 */
RegistryEntry *
registry_lock_shared(PeekObjectId id)
{
	return dshash_find(registry_table(), &id, false);
}

void
registry_unlock(RegistryEntry *entry)
{
	dshash_release_lock(registry_table(), entry);
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
		if (queue_push(runtime_slot(r)->dirty, &entry->id))
			entry->dirty[r] = true;
		/* an overflowed dirty queue makes the runtime re-examine everything */
		wake |= 1 << r;
	}
	return wake;
}

/*
 * Samples closer together than this say little more: a sixteenth of the
 * retention (so the since trails by at most that much more than the
 * retention), at least 10 ms; a second when all history is kept (they only
 * date the since then).
 */
static int64
sample_spacing_us(int64 retention_ms)
{
	if (retention_ms < 0)
		return USECS_PER_SEC;
	return Max(retention_ms * 1000 / 16, 10 * 1000);
}

/*
 * The since's clock: the last sample at which the since was the newest
 * complete time or newer (upper <= since + 1).  Only rises; unknown (0)
 * while no sample is that old (history behind the since from before the
 * server started).
 */
static void
refresh_since_clock(RegistryEntry *entry)
{
	for (int i = entry->nsamples - 1; i >= 0; i--)
		if (entry->samples[i].upper <= entry->since + 1)
		{
			entry->since_clock = Max(entry->since_clock, entry->samples[i].clock);
			return;
		}
}

/*
 * Note that a locked entry's upper rose, by the wall clock.  The newest
 * sample is always the latest rise; it replaces the one before if that one
 * was not yet the spacing after its own predecessor.  A full list keeps
 * every other one, the newest included, so it spans twice the time at half
 * the precision (a retention raised meanwhile).
 */
static void
record_upper_sample(RegistryEntry *entry)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = entry->nsamples;

	if (n >= 2 &&
		entry->samples[n - 1].clock - entry->samples[n - 2].clock <
		sample_spacing_us(entry->retention_ms))
		n--;
	else if (n == PEEK_RETENTION_SAMPLES)
	{
		int			kept = 0;

		for (int i = (n - 1) % 2; i < n; i += 2)
			entry->samples[kept++] = entry->samples[i];
		n = kept;
	}
	entry->samples[n].clock = now;
	entry->samples[n].upper = entry->upper;
	entry->nsamples = n + 1;
	refresh_since_clock(entry);
}

/*
 * Where retention lets a locked entry's since go: the newest complete time
 * of the upper it had a retention ago (the newest sample at least that old),
 * so that every time complete since then stays readable.  -1 if it allows
 * nothing (all history kept, or no sample is that old yet).  The samples
 * before the one used that no later reading needs go: those whose
 * successor is at or below the since as well.
 */
static int64
retention_allows(RegistryEntry *entry)
{
	TimestampTz cutoff;
	int			used = -1;
	int			drop = 0;

	if (entry->retention_ms < 0)
		return -1;
	cutoff = GetCurrentTimestamp() - entry->retention_ms * 1000;
	for (int i = 0; i < entry->nsamples && entry->samples[i].clock <= cutoff; i++)
		used = i;
	if (used < 0)
		return -1;
	while (drop < used && entry->samples[drop + 1].upper <= entry->since + 1)
		drop++;
	if (drop > 0)
	{
		memmove(entry->samples, entry->samples + drop,
				sizeof(UpperSample) * (entry->nsamples - drop));
		entry->nsamples -= drop;
		used -= drop;
	}
	return entry->samples[used].upper - 1;
}

/*
 * Raise a locked entry's frontiers (they only rise) and, if anything changed,
 * count a publication and mark the entry dirty for runtimes with waiters.
 * Returns the runtimes to wake once the lock is released.
 */
static int
raise_frontiers(RegistryEntry *entry, char kind, int64 upper, int64 since, bool *changed)
{
	bool		upper_rose = !entry->published || upper > entry->upper;

	*changed = upper_rose || since > entry->since;
	entry->kind = kind;
	entry->published = true;
	entry->upper = Max(entry->upper, upper);
	entry->since = Max(entry->since, since);
	if (upper_rose)
		record_upper_sample(entry);
	else if (*changed)
		refresh_since_clock(entry);
	if (!*changed)
		return 0;
	return mark_waiters_dirty(entry);
}

/*
 * Publish an object's frontiers.  Frontiers only rise.  This is also the
 * moment a placeholder created by an early peek is adopted.  Returns whether
 * anything changed.
 */
bool
registry_publish_frontiers(PeekObjectId id, char kind, int64 upper, int64 since,
				  int64 allowed_since)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);
	bool		changed;
	int			wake;

	wake = raise_frontiers(entry, kind, upper, since, &changed);
	entry->allowed_since = Max(entry->allowed_since, allowed_since);
	registry_unlock(entry);
	runtime_wake_all(wake);
	return changed;
}

/* An object's published upper (0 if unpublished), under a shared lock. */
int64
registry_published_upper(PeekObjectId id)
{
	RegistryEntry *entry = dshash_find(registry_table(), &id, false);
	int64		upper = 0;

	if (entry != NULL)
	{
		upper = entry->published ? entry->upper : 0;
		dshash_release_lock(registry_table(), entry);
	}
	return upper;
}

/*
 * Whether an object a backend looked up before is still there: published
 * and not tombstoned (a deleted tombstone has no entry).  *checked is the
 * caller's stamp of its last check that found it live (0: none): while no
 * entry was tombstoned since, it still is (an entry is never unpublished,
 * and deleted only once tombstoned), and its entry is not looked up, so
 * that the peeks of one object do not all take its entry's lock twice.
 */
bool
registry_is_live(PeekObjectId id, uint64 *checked)
{
	uint64		tombstones = pg_atomic_read_u64(&registry_shared->tombstones);
	RegistryEntry *entry;
	bool		live = false;

	if (*checked == tombstones)
		return true;
	/* read before the entry: a tombstone from now on changes the count */
	pg_read_barrier();
	entry = registry_lock_shared(id);
	if (entry != NULL)
	{
		live = entry->published && !entry->dropped;
		registry_unlock(entry);
	}
	*checked = live ? tombstones : 0;
	return live;
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
	entry->spine_pinned = false;
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

/*
 * Tombstone a locked entry (once) and unlock it; returns the runtimes to
 * wake, those with peeks parked on it.
 */
static int
tombstone_locked(RegistryEntry *entry)
{
	int			wake = 0;

	if (!entry->dropped)
	{
		entry->dropped = true;
		pg_atomic_fetch_add_u64(&registry_shared->tombstones, 1);
		wake = mark_waiters_dirty(entry);
	}
	registry_unlock(entry);
	return wake;
}

/*
 * A committed drop, seen by the dropping backend at commit: tombstone the
 * entry so no peek reads the object once the drop returns, and wake the
 * runtimes with peeks parked on it.  Finds, never inserts; frees nothing
 * (the maintenance runtime releases the batches in registry_mark_dropped).
 */
void
registry_tombstone(PeekObjectId id)
{
	RegistryEntry *entry = dshash_find(registry_table(), &id, true);

	if (entry == NULL)
		return;					/* never published: maintenance learns it */
	runtime_wake_all(tombstone_locked(entry));
}

/*
 * The maintenance runtime lets go of a dropped object: tombstone its entry
 * (making one if need be, for late peeks to find) and release the
 * published list's pins.
 */
void
registry_mark_dropped(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold;

	nold = detach_batches(entry, old);
	runtime_wake_all(tombstone_locked(entry));
	unpin_all(old, nold);
}

/*
 * Delete a tombstone once no runtime has a peek parked on it (they are
 * answered "dropped" first).  Returns false while it must stay.
 */
bool
registry_delete_tombstone(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, false, NULL);

	if (entry == NULL)
		return true;
	if (!entry->dropped)
	{
		/* re-created as a placeholder meanwhile: no longer ours to delete */
		registry_unlock(entry);
		return true;
	}
	for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		if (entry->waiters[r] > 0)
		{
			registry_unlock(entry);
			return false;
		}
	dshash_delete_entry(registry_table(), entry);
	return true;
}

static int
id_cmp(const void *a, const void *b)
{
	PeekObjectId x = *(const PeekObjectId *) a;
	PeekObjectId y = *(const PeekObjectId *) b;

	return (x > y) - (x < y);
}

/*
 * Tombstone every published entry whose id is not in live[] and release its
 * published list.  Used when the maintenance runtime reconciles with a full
 * read of the catalog; returns the ids of all tombstones (palloc'd), to
 * delete.  An unpublished entry not in live[] may be a placeholder a peek
 * made after that read, for an object created since: it is not judged by
 * the read but returned in *unverified, to be checked against the catalog
 * as a placeholder is.
 */
List *
registry_mark_dropped_except(PeekObjectId *live, int nlive, List **unverified)
{
	dshash_seq_status status;
	RegistryEntry *entry;
	int			wake = 0;
	List	   *dropped = NIL;

	*unverified = NIL;
	qsort(live, nlive, sizeof(PeekObjectId), id_cmp);
	dshash_seq_init(&status, registry_table(), true);
	while ((entry = dshash_seq_next(&status)) != NULL)
	{
		dsa_pointer old[PEEK_MAX_BATCHES];
		PeekObjectId *copy;
		int			nold;

		/* (a negative id: an arrangement the runtime keeps for views) */
		if (entry->id < 0 ||
			bsearch(&entry->id, live, nlive, sizeof(PeekObjectId), id_cmp) != NULL)
			continue;
		copy = palloc(sizeof(PeekObjectId));
		*copy = entry->id;
		if (!entry->published && !entry->dropped)
		{
			*unverified = lappend(*unverified, copy);
			continue;
		}
		dropped = lappend(dropped, copy);
		if (!entry->dropped)
		{
			entry->dropped = true;
			pg_atomic_fetch_add_u64(&registry_shared->tombstones, 1);
			wake |= mark_waiters_dirty(entry);
		}
		/* unpinning never takes a registry lock, so it may happen here */
		nold = detach_batches(entry, old);
		unpin_all(old, nold);
	}
	dshash_seq_term(&status);
	runtime_wake_all(wake);
	return dropped;
}

/* A runtime accepts a since for an object; only rises. Returns true if raised. */
bool
registry_raise_standing_hold(PeekObjectId id, int runtime, int64 since)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);
	bool		raised = since > entry->standing_hold[runtime];

	if (raised)
		entry->standing_hold[runtime] = since;
	entry->allowed_since = Max(entry->allowed_since, since);
	registry_unlock(entry);
	return raised;
}

/*
 * A runtime other than maintenance accepts a since for an object.  Its
 * standing hold may have been what kept the object from compacting, so the
 * maintenance runtime is told to look at the object again.
 */
void
registry_accept_standing_hold(PeekObjectId id, int runtime, int64 since)
{
	if (registry_raise_standing_hold(id, runtime, since))
	{
		PeekCommand reread = {PEEK_CMD_CATALOG_CHANGED, id, 0};

		(void) runtime_send(PEEK_RUNTIME_MAINTENANCE, &reread);
	}
}

/*
 * The retention an object has in force (its own or the setting's,
 * resolved), told by the maintenance runtime before it publishes the
 * object's frontiers, whose samples it spaces.
 */
void
registry_set_retention(PeekObjectId id, int64 retention_ms)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);

	entry->retention_ms = retention_ms;
	registry_unlock(entry);
}

/*
 * Advance an object's since as far as every hold allows: the user's
 * allowance, each running role's standing hold, each pending peek, and the
 * upper.  Retention lets the since go further than the user's allowance
 * and the standing holds, which accept that allowance: a retention is the
 * object's own, and no runtime reads history but under a peek's hold, which
 * retention never passes.  The since stays strictly below the upper and below durable_upper
 * (the upper its shard durably holds): a shard compacted to a time that is
 * not complete would be read again as new updates by the indexes that
 * follow it, a peek at the latest complete time would wait, and a source
 * whose since followed its WAL-driven upper would compact on its own WAL.
 * Returns the since now in force; *target is where it would go if no peek
 * held it back (so the caller knows whether to retry later).  min_peek_hold
 * gives the lowest hold of the object's peeks in flight; it is called under
 * the entry's lock, under which the gates set those holds.
 */
int64
registry_advance_since(PeekObjectId id, int64 durable_upper, int64 *target,
					   int64 (*min_peek_hold) (PeekObjectId id))
{
	RegistryEntry *entry = registry_lock(id, false, NULL);
	int64		allowed;
	int64		retention;
	int64		peek_hold;
	int64		since;

	if (entry == NULL)
	{
		*target = 0;
		return 0;
	}
	allowed = entry->allowed_since;
	for (int r = 0; r < settings_runtime_count(); r++)
		allowed = Min(allowed, entry->standing_hold[r]);
	retention = retention_allows(entry);
	allowed = Max(allowed, retention);
	allowed = Min(allowed, Min(entry->upper, durable_upper) - 1);
	*target = Max(allowed, entry->since);
	/* once: Min() evaluates an argument twice, and a hold may end between */
	peek_hold = min_peek_hold(id);
	allowed = Min(allowed, peek_hold);
	if (allowed > entry->since && !entry->dropped)
	{
		entry->since = allowed;
		refresh_since_clock(entry);
	}
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

	dshash_seq_init(&status, registry_table(), true);
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

	dshash_seq_init(&status, registry_table(), false);
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
 * Publish an index's batch list (the spine's, each batch pinned by the
 * spine) with its frontiers.  The published list takes a pin of its own on
 * each batch, so a reader may resolve it under the entry lock whatever the
 * spine does next; the list it replaces lets go of its pins after the lock
 * is released.  A tombstoned entry gets nothing (returns false): its list
 * stays the one the spine last published, still carrying the spine's pins
 * (spine_pinned), which the spine must keep until it is forgotten.
 */
bool
registry_publish_arrangement(PeekObjectId id, dsa_pointer *batches, int nbatches,
					int64 upper, int64 since)
{
	RegistryEntry *entry;
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold = 0;
	int64		updates = 0;
	int64		rows = 0;
	int64		bytes = 0;
	int			wake = 0;
	bool		changed;
	bool		installed;

	Assert(nbatches <= PEEK_MAX_BATCHES);
	for (int i = 0; i < nbatches; i++)
	{
		Batch	   *batch = batch_get(batches[i]);

		updates += batch->nentries;
		rows = row_add_saturating(rows, batch->rows);
		bytes += batch->size;
	}

	entry = registry_lock(id, true, NULL);
	installed = !entry->dropped;
	if (installed)
	{
		/* batches stay alive meanwhile: the spine pins them */
		for (int i = 0; i < nbatches; i++)
			batch_pin(batches[i]);
		nold = detach_batches(entry, old);
		memcpy(entry->batches, batches, sizeof(dsa_pointer) * nbatches);
		entry->nbatches = nbatches;
		entry->spine_pinned = true;
		entry->updates = updates;
		entry->rows = rows;
		entry->bytes = bytes;
		entry->hydrating = false;
		/* a failed spine publishes no more: this is its rebuild by a new runtime */
		entry->failed = false;
		wake = raise_frontiers(entry, PEEK_KIND_INDEX, upper, since, &changed);
	}
	registry_unlock(entry);
	runtime_wake_all(wake);
	unpin_all(old, nold);
	return installed;
}

/*
 * The spine that published an index's list let go of its pins on it (the
 * index forgotten while its list still serves peeks, or the runtime reset):
 * the list is the registry's alone, and no successor may release those pins
 * again.
 */
void
registry_spine_unpinned(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, false, NULL);

	if (entry == NULL)
		return;
	entry->spine_pinned = false;
	registry_unlock(entry);
}

/*
 * A maintenance runtime starting in a fresh process: the spines of the
 * incarnation before it are gone, but each of them still pinned the list
 * it had published.  Release those pins once (spine_pinned says whether a
 * list still carries one), so that re-hydration leaks nothing.  The
 * arrangements it kept for views alone (negative ids) go: views build
 * them again.
 */
void
registry_release_dead_spines(void)
{
	dshash_seq_status status;
	RegistryEntry *entry;

	dshash_seq_init(&status, registry_table(), true);
	while ((entry = dshash_seq_next(&status)) != NULL)
	{
		if (entry->spine_pinned)
		{
			entry->spine_pinned = false;
			/* the published list's own pins keep every batch alive here */
			unpin_all(entry->batches, entry->nbatches);
		}
		if (entry->id < 0)
		{
			/* an arrangement the dead runtime kept for views: built anew */
			dsa_pointer old[PEEK_MAX_BATCHES];
			int			nold = detach_batches(entry, old);

			unpin_all(old, nold);
			dshash_delete_current(&status);
		}
	}
	dshash_seq_term(&status);
}

/* The index ran out of memory: peeks on it fail until it is recreated. */
void
registry_mark_failed(PeekObjectId id)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);
	dsa_pointer old[PEEK_MAX_BATCHES];
	int			nold = detach_batches(entry, old);
	int			wake;

	entry->failed = true;
	entry->published = true;
	wake = mark_waiters_dirty(entry);
	registry_unlock(entry);
	runtime_wake_all(wake);
	unpin_all(old, nold);
}

/* Pin a batch list for one reader; the pins live until registry_release_handle. */
void
registry_pin_batches(PeekHandle *handle, PeekObjectId index, dsa_pointer *batches, int nbatches,
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
registry_resolve_shared_handle(RegistryEntry *entry, int runtime, PeekHandle *handle)
{
	pg_atomic_fetch_add_u64(&entry->pins[runtime], 1);
	pg_atomic_fetch_add_u32(&entry->live_handles[runtime], 1);
	registry_pin_batches(handle, entry->id, entry->batches, entry->nbatches, true, runtime);
}

/* Let go of a handle (by the reader that walked it, or on cancel). */
void
registry_release_handle(PeekHandle *handle)
{
	for (int i = 0; i < handle->nbatches; i++)
		batch_unpin(handle->batches[i]);
	if (handle->shared)
	{
		/* counters are atomics: a shared lock keeps the entry from deletion */
		RegistryEntry *entry = dshash_find(registry_table(), &handle->index, false);

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
