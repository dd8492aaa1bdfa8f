/*-------------------------------------------------------------------------
 *
 * spine.c
 *	  The maintenance runtime's arrangements: one spine per index, its
 *	  batches kept in levels by size as differential dataflow's fueled spine
 *	  keeps them.  Level k holds batches of at most 2^k updates, at most two;
 *	  two at one level are being merged, a linear merge of sorted batches
 *	  advanced a step at a time.  Each batch a seal introduces gives every
 *	  merge in progress fuel proportional to its updates, enough that a
 *	  merge at level k completes before another batch can reach level k, so
 *	  merge work per update stays logarithmic, the batch list stays short
 *	  (at most two per level) and no merge ever sits whole in front of the
 *	  next seal's publication.  Every round, after its publications,
 *	  spends bounded fuel merging what is left, down to one batch at the
 *	  spine's since.
 *
 *	  A spine hydrates from its collection's persist shard, follows every
 *	  seal by arranging the newly sealed updates (read back from the shard,
 *	  or handed over by the capture round that wrote them there or the
 *	  view's round that read them: the same updates, arranged the same
 *	  way), and publishes after each change; a new since is applied by
 *	  the merges that follow.  The spine holds one
 *	  pin on each of its batches (registry.c states the ownership rule): it
 *	  takes over a build's or merge's reference, lets go of the
 *	  batches a merge replaced only after publishing the result, and
 *	  releases everything when the index is forgotten or failed.  A merge's
 *	  output is unpublished until it completes; the runtime frees
 *	  unfinished ones when it exits.  A restarted
 *	  maintenance runtime releases its dead predecessor's pins
 *	  (registry_release_dead_spines) and re-hydrates.
 *
 *	  Runs only in the maintenance (or solo) runtime.  Must not answer peeks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "arrange/spine.h"
#include "common/rows.h"
#include "ipc/registry.h"
#include "storage/persist.h"

/* A since advance (a catalog write) at most this often per index. */
#define SINCE_INTERVAL_MS	1000

/*
 * Merges beyond those of two batches at one level (towards one batch at
 * the since) wait until the spine has had no new batch this long: under a
 * trickle of seals they would rewrite the biggest batch for each small one.
 */
#define SETTLED_MS		1000

/* Two batches per level: the published list is never longer than allowed. */
#define SPINE_LEVELS	(PEEK_MAX_BATCHES / 2)

/*
 * Merge work per update introduced, for each merge in progress: a merge at
 * level k (at most 2^(k+1) entries) completes before the 2^(k-1) updates it
 * takes to bring another batch to level k have arrived.
 */
#define FUEL_PER_UPDATE	4

/*
 * Merge work a round spends per spine beyond what seals brought, all its
 * merges together: about a millisecond, so that a seal arriving meanwhile
 * is not held up (the runtime goes on without sleeping while work is left).
 */
#define ROUND_FUEL		(8 * 1024)

typedef struct Level
{
	int			nbatches;		/* 0, 1, or 2 (being merged) */
	dsa_pointer batches[2];
	BatchMerge *merge;			/* over batches[0 .. nbatches), or NULL */
} Level;

/* A view reading a spine, and the time it holds the spine's since at. */
typedef struct SpineReader
{
	PeekObjectId view;
	int64		hold;
} SpineReader;

typedef struct Spine
{
	PeekObjectId index;			/* key: an index's id, or < 0: the runtime's
								 * own, for views (spine_share) */
	MemoryContext cxt;			/* everything below; deleted when forgotten */
	MemoryContext key_cxt;		/* the key info, rebuilt with the row type */
	Oid			shard;
	KeyInfo    *key;
	Level		levels[SPINE_LEVELS];
	int			nbatches;		/* the published list: every level's batches */
	dsa_pointer batches[PEEK_MAX_BATCHES];
	dsa_pointer *retired;		/* replaced by merges, unpinned once published */
	int			nretired;
	int			retired_capacity;
	int64		upper;
	int64		since;
	bool		failed;
	TimestampTz last_since_advance;
	TimestampTz last_batch;		/* when a seal last brought a batch */
	dsa_pointer incoming;		/* a new batch not placed yet (for an exit) */
	SpineReader *readers;		/* the views reading it (spine_share) */
	int			nreaders;
} Spine;

static HTAB *spines = NULL;

/* The last id given to a spine the runtime keeps for views alone. */
static PeekObjectId last_own_id = 0;

/* Is dp in the spine's last published list (or, with in_levels, in a level)? */
static bool
spine_holds(Spine *spine, dsa_pointer dp, bool in_levels)
{
	for (int i = 0; i < spine->nbatches; i++)
		if (spine->batches[i] == dp)
			return true;
	for (int k = 0; in_levels && k < SPINE_LEVELS; k++)
		for (int i = 0; i < spine->levels[k].nbatches; i++)
			if (spine->levels[k].batches[i] == dp)
				return true;
	return false;
}

/*
 * Let go of a spine's pins and abandon its merges.  With unpublished_only
 * (a runtime exiting), the pins on its last published list are kept: they
 * are its successor's to release (registry_release_dead_spines); a new
 * batch not placed yet is let go of too.
 */
static void
release_spine(Spine *spine, bool unpublished_only)
{
	if (unpublished_only && DsaPointerIsValid(spine->incoming) &&
		!spine_holds(spine, spine->incoming, true))
		batch_unpin(spine->incoming);
	spine->incoming = InvalidDsaPointer;
	for (int k = 0; k < SPINE_LEVELS; k++)
	{
		Level	   *level = &spine->levels[k];

		if (level->merge != NULL)
			batch_merge_abandon(level->merge);
		level->merge = NULL;
		for (int i = 0; i < level->nbatches; i++)
			if (!unpublished_only || !spine_holds(spine, level->batches[i], false))
				batch_unpin(level->batches[i]);
		level->nbatches = 0;
	}
	for (int i = 0; i < spine->nretired; i++)
		if (!unpublished_only || !spine_holds(spine, spine->retired[i], false))
			batch_unpin(spine->retired[i]);
	spine->nretired = 0;
	spine->nbatches = 0;
}

/*
 * At exit (a SIGTERM may come at any CHECK_FOR_INTERRUPTS of a merge step),
 * let go of what nobody else will: the outputs of unfinished merges, and
 * the spine's pins on batches it has not published (new ones, merge results,
 * batches merged away before a publication).  An error may have left locks
 * held.
 */
static void
release_unpublished_at_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;

	LWLockReleaseAll();
	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
		if (!spine->failed)		/* released when it failed */
			release_spine(spine, true);
}

/*
 * Start over with no spines: release ours, or in a fresh process those of
 * the maintenance runtime that ran before.
 */
void
spine_reset_all(void)
{
	HASHCTL		ctl;

	if (spines != NULL)
	{
		HASH_SEQ_STATUS status;
		Spine	   *spine;

		hash_seq_init(&status, spines);
		while ((spine = hash_seq_search(&status)) != NULL)
		{
			release_spine(spine, false);
			MemoryContextDelete(spine->cxt);
			if (spine->index < 0)
			{
				registry_mark_dropped(spine->index);
				(void) registry_delete_tombstone(spine->index);
			}
		}
		hash_destroy(spines);
	}
	else
	{
		registry_release_dead_spines();
		before_shmem_exit(release_unpublished_at_exit, 0);
	}
	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(Spine);
	ctl.hcxt = TopMemoryContext;
	spines = hash_create("pg_peek spines", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * Publish every level's batches, then let go of the batches merges
 * replaced: readers resolve the new list before the old one is unpinned.
 * A tombstone (a drop committed meanwhile) takes no list: the one published
 * last is still the registry's, its pins still the spine's to give back
 * (when it is forgotten, or by a successor after an exit), so the replaced
 * batches stay pinned and that list stays the spine's last published one.
 */
static void
publish_spine(Spine *spine)
{
	dsa_pointer batches[PEEK_MAX_BATCHES];
	int			nbatches = 0;

	for (int k = 0; k < SPINE_LEVELS; k++)
		for (int i = 0; i < spine->levels[k].nbatches; i++)
			batches[nbatches++] = spine->levels[k].batches[i];
	if (!registry_publish_arrangement(spine->index, batches, nbatches,
									  spine->upper, spine->since))
		return;
	memcpy(spine->batches, batches, sizeof(dsa_pointer) * nbatches);
	spine->nbatches = nbatches;
	for (int i = 0; i < spine->nretired; i++)
		batch_unpin(spine->retired[i]);
	spine->nretired = 0;
}

static void
fail_spine(Spine *spine)
{
	ereport(LOG,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("pg_peek index " INT64_FORMAT " exceeds pg_peek.max_memory (%d kB) and is failed",
					spine->index, setting_max_memory_kb)));
	spine->failed = true;
	registry_mark_failed(spine->index);
	release_spine(spine, false);
}

/* Keep a replaced batch's pin until the next publication. */
static void
retire_batch(Spine *spine, dsa_pointer dp)
{
	if (spine->nretired == spine->retired_capacity)
	{
		spine->retired_capacity *= 2;
		spine->retired = repalloc(spine->retired, sizeof(dsa_pointer) * spine->retired_capacity);
	}
	spine->retired[spine->nretired++] = dp;
}

static int
level_of(Batch *batch)
{
	return Min(pg_ceil_log2_64(Max(batch->nentries, 1)), SPINE_LEVELS - 1);
}

static void place_batch(Spine *spine, dsa_pointer dp);

/*
 * Start merging a level's batches.  Returns false if pg_peek.max_memory
 * has no room for the output now: the batches stay as they are (all still
 * answer peeks) and the merge is tried again in a later round, once other
 * merges have given memory back.
 */
static bool
start_merge(Spine *spine, Level *level)
{
	level->merge = batch_merge_begin(level->batches, level->nbatches, spine->since);
	return level->merge != NULL;
}

/*
 * Level k's merge is complete: its batches are retired and the result goes
 * to the level of its size.  Published by the caller.
 */
static void
complete_merge(Spine *spine, int k)
{
	Level	   *level = &spine->levels[k];
	dsa_pointer merged = batch_merge_finish(level->merge);

	level->merge = NULL;
	for (int i = 0; i < level->nbatches; i++)
		retire_batch(spine, level->batches[i]);
	level->nbatches = 0;
	place_batch(spine, merged);
}

/*
 * Add a batch (its one reference becomes the spine's pin) at the level of
 * its size.  A merge of two batches still running there is finished
 * first: fuel makes that rare.  A rewrite of a lone batch is dropped
 * instead, as the merge with the newcomer rewrites it too.  A batch with
 * much slack (consolidation shrank its merge) is rewritten to give the
 * memory back.
 */
static void
place_batch(Spine *spine, dsa_pointer dp)
{
	int			k;
	Level	   *level;

	if (batch_get(dp)->nentries == 0)
	{
		batch_unpin(dp);
		return;
	}
	k = level_of(batch_get(dp));
	level = &spine->levels[k];

	/*
	 * A full level whose merge found no room must merge now to take the
	 * batch; only if it cannot does the index not fit.
	 */
	if (level->merge == NULL && level->nbatches == 2 && !start_merge(spine, level))
	{
		batch_unpin(dp);
		fail_spine(spine);
		return;
	}
	if (level->merge != NULL && level->nbatches == 2)
	{
		int64		fuel = PG_INT64_MAX;

		(void) batch_merge_step(level->merge, &fuel);
		complete_merge(spine, k);
		if (spine->failed)
		{
			batch_unpin(dp);
			return;
		}
	}
	/* a lone batch's rewrite (maybe just started by that completion) */
	if (level->merge != NULL)
	{
		batch_merge_abandon(level->merge);
		level->merge = NULL;
	}
	if (level->nbatches >= 2)
	{
		batch_unpin(dp);
		spine->incoming = InvalidDsaPointer;
		elog(ERROR, "pg_peek spine level %d is full", k);
	}
	level->batches[level->nbatches++] = dp;
	if (level->nbatches == 2 || batch_has_slack(dp))
		(void) start_merge(spine, level);
}

/*
 * Give the merges in progress fuel, lowest level first (a result may start
 * a merge higher up, which gets its fuel in the same pass): each merge that
 * much, or (shared) that much for all of them together.  Returns whether a
 * merge completed.
 */
static bool
apply_fuel(Spine *spine, int64 fuel, bool shared)
{
	bool		completed = false;

	for (int k = 0; k < SPINE_LEVELS && !spine->failed && fuel > 0; k++)
	{
		Level	   *level = &spine->levels[k];
		int64		level_fuel = fuel;
		bool		done;

		if (level->merge == NULL)
			continue;
		done = batch_merge_step(level->merge, &level_fuel);
		if (shared)
			fuel = level_fuel;
		if (!done)
			continue;
		complete_merge(spine, k);
		completed = true;
	}
	return completed;
}

/* A new batch: fuel for the merges in progress, then its place. */
static void
introduce_batch(Spine *spine, dsa_pointer dp)
{
	int64		n = batch_get(dp)->nentries;

	spine->last_batch = GetCurrentTimestamp();
	spine->incoming = dp;
	apply_fuel(spine, FUEL_PER_UPDATE * n, false);
	if (spine->failed)
		batch_unpin(dp);
	else
		place_batch(spine, dp);
	spine->incoming = InvalidDsaPointer;
}

/*
 * With no merge in progress, start one (if the spine has settled) that
 * brings it closer to one batch at its since: the lowest batch joins the
 * next one up, or a lone batch below the since is rewritten at it.
 * Returns false if there is no merge to advance.
 */
static bool
start_tidy_merge(Spine *spine, bool settled)
{
	int			low = -1;

	for (int k = 0; k < SPINE_LEVELS; k++)
	{
		Level	   *level = &spine->levels[k];

		if (level->merge != NULL)
			return true;
		if (level->nbatches == 2)
			return start_merge(spine, level);	/* found no room before */
		if (level->nbatches == 0)
			continue;
		if (low < 0)
		{
			low = k;
			continue;
		}
		if (!settled)
			return false;
		/* a lone batch per level: move the lowest up to join this one */
		level->batches[level->nbatches++] = spine->levels[low].batches[0];
		if (!start_merge(spine, level))
		{
			level->nbatches--;
			return false;
		}
		spine->levels[low].nbatches = 0;
		return true;
	}
	if (low < 0 || !settled ||
		batch_get(spine->levels[low].batches[0])->since >= spine->since)
		return false;
	return start_merge(spine, &spine->levels[low]);
}

/*
 * Has the row type gained or lost attributes (ALTER TYPE) since the spine's
 * rows were normalized?  Their images would not compare with new rows'.
 */
static bool
row_type_changed(Spine *spine)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(spine->key->row_type, -1);
	bool		changed = desc->natts != spine->key->desc->natts;

	for (int i = 0; i < desc->natts && !changed; i++)
		changed = TupleDescAttr(desc, i)->attisdropped !=
			TupleDescAttr(spine->key->desc, i)->attisdropped;
	ReleaseTupleDesc(desc);
	return changed;
}

/*
 * Bring a spine up to its collection's upper.  After a change of the row
 * type it hydrates again, so that every image is of the current type; the
 * shard it reads is exact only from shard_since, so the spine's since rises
 * to it (older peeks fail rather than see later contents).  The new range
 * is arranged from the feed (if any) when the feed holds all of it; a
 * hydration, or a spine that fell behind the feed, reads the shard.
 */
static void
follow(Spine *spine, int64 upper, int64 shard_since, const SpineFeed *feed)
{
	bool		empty;
	dsa_pointer dp;

	if (spine->failed)
		return;
	if (spine->upper > 0 && row_type_changed(spine))
	{
		KeyInfo    *stale = spine->key;
		MemoryContext key_cxt = AllocSetContextCreate(spine->cxt, "pg_peek spine key",
													  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(key_cxt);

		spine->key = batch_keyinfo_build(stale->row_type, stale->nkeys, stale->attnums);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(spine->key_cxt);
		spine->key_cxt = key_cxt;
		release_spine(spine, false);
		spine->upper = 0;
		spine->since = Max(spine->since, shard_since);
	}
	if (upper <= spine->upper)
		return;
	/* a collection dropped meanwhile: its notice will forget the spine */
	if (!persist_lock_shard(spine->shard))
		return;
	if (feed != NULL &&
		(spine->upper == 0 || spine->upper < feed->lower || upper > feed->upper))
		feed = NULL;
	dp = arrange_range(spine->index, spine->key, spine->shard, spine->since,
					   spine->nbatches == 0 && spine->upper == 0, spine->upper, upper,
					   feed, &empty);
	spine->upper = upper;
	if (!empty && !DsaPointerIsValid(dp))
	{
		fail_spine(spine);
		return;
	}
	if (!empty)
		introduce_batch(spine, dp);
	/* a seal with no updates still publishes */
	if (!spine->failed)
		publish_spine(spine);
}

/*
 * Adopt an index from its catalog row: hydrate it from the shard if this
 * runtime has no spine for it yet, else follow its collection's seals up to
 * upper (the collection's published upper), from feed where it can (NULL:
 * none).  Runs in a transaction.
 */
static Spine *
spine_create(PeekObjectId id, Oid row_type, int nkeys, const AttrNumber *attnums,
			 Oid shard, int64 since)
{
	Spine	   *spine = hash_search(spines, &id, HASH_ENTER, NULL);
	MemoryContext old;

	spine->cxt = AllocSetContextCreate(TopMemoryContext, "pg_peek spine",
									   ALLOCSET_SMALL_SIZES);
	spine->key_cxt = AllocSetContextCreate(spine->cxt, "pg_peek spine key",
										   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(spine->key_cxt);
	spine->key = batch_keyinfo_build(row_type, nkeys, attnums);
	MemoryContextSwitchTo(spine->cxt);
	spine->shard = shard;
	memset(spine->levels, 0, sizeof(spine->levels));
	spine->retired_capacity = 2 * PEEK_MAX_BATCHES;
	spine->retired = palloc(sizeof(dsa_pointer) * spine->retired_capacity);
	MemoryContextSwitchTo(old);
	spine->nbatches = 0;
	spine->nretired = 0;
	spine->upper = 0;
	spine->since = since;
	spine->failed = false;
	spine->last_since_advance = 0;
	spine->last_batch = 0;
	spine->incoming = InvalidDsaPointer;
	spine->readers = NULL;
	spine->nreaders = 0;
	return spine;
}

/* Does a live spine arrange a shard's rows of row_type by attnums? */
static bool
spine_arranges(Spine *spine, Oid shard, Oid row_type, int nkeys, const AttrNumber *attnums)
{
	return spine->shard == shard && !spine->failed &&
		spine->key->row_type == row_type && spine->key->nkeys == nkeys &&
		memcmp(spine->key->attnums, attnums, sizeof(AttrNumber) * nkeys) == 0;
}

/*
 * The live spine arranging a shard's rows of row_type by attnums, or NULL:
 * an index's before the runtime's own (views leave it for the index's).
 */
static Spine *
spine_matching(Oid shard, Oid row_type, int nkeys, const AttrNumber *attnums)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;
	Spine	   *own = NULL;

	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
		if (spine_arranges(spine, shard, row_type, nkeys, attnums))
		{
			if (spine->index >= 0)
			{
				hash_seq_term(&status);
				return spine;
			}
			own = spine;
		}
	return own;
}

/*
 * Has the shard been compacted at or past what a spine read (a source's
 * reload)?  Then it cannot follow: the runtime's own is let go of (its
 * readers read a new one) and its id freed for a new spine.
 */
static bool
spine_stale(Spine *spine, CatalogObject *collection)
{
	if (spine->upper == 0 || collection->since < spine->upper)
		return false;
	if (spine->index < 0)
	{
		spine->nreaders = 0;
		spine_forget(spine->index);
	}
	return true;
}

/*
 * The runtime's own spine (published under a negative id, in no catalog)
 * becomes an index's: the same batches, published under the index's id
 * from now on, its readers kept.
 */
static Spine *
spine_rekey(Spine *spine, PeekObjectId id)
{
	PeekObjectId old_id = spine->index;
	Spine		copy = *spine;

	hash_search(spines, &old_id, HASH_REMOVE, NULL);
	spine = hash_search(spines, &id, HASH_ENTER, NULL);
	*spine = copy;
	spine->index = id;
	if (old_id < 0)
	{
		registry_mark_dropped(old_id);
		(void) registry_delete_tombstone(old_id);
	}
	return spine;
}

/*
 * Adopt an index from its catalog row: hydrate it from the shard if this
 * runtime has no spine for it yet (or take over the spine it keeps of the
 * same rows by the same key for views, spine_share), else follow its
 * collection's seals up to upper (the collection's published upper), from
 * feed where it can (NULL: none).  Runs in a transaction.
 */
void
spine_adopt(CatalogObject *index, CatalogObject *collection, int64 upper,
			int64 published_since, const SpineFeed *feed)
{
	Spine	   *spine = hash_search(spines, &index->id, HASH_FIND, NULL);
	bool		found = spine != NULL;

	if (!found)
	{
		spine = spine_matching(collection->shard, index->row_type, index->nkeys,
							   index->attnums);
		if (spine != NULL && spine->index < 0 && !spine_stale(spine, collection))
			spine = spine_rekey(spine, index->id);
		else
			/* exact from the shard's since, and never below what was shown */
			spine = spine_create(index->id, index->row_type, index->nkeys, index->attnums,
								 collection->shard, Max(collection->since, published_since));
	}
	follow(spine, upper, collection->since, feed);
	/* (an empty collection: published at upper 0; a spine taken over: as it is) */
	if (!found && !spine->failed)
		publish_spine(spine);
}

/*
 * Every round, after its publications: each spine spends bounded fuel on
 * its merges, starting one where batches remain to be merged.  A steady
 * trickle of seals, each waking the runtime, so still finishes big merges.
 * Returns whether merge work is left for later rounds.
 */
bool
spine_merge_round(void)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;
	bool		more = false;
	TimestampTz now = GetCurrentTimestamp();

	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
	{
		bool		settled = TimestampDifferenceExceeds(spine->last_batch, now, SETTLED_MS);

		if (spine->failed || !start_tidy_merge(spine, settled))
			continue;
		if (apply_fuel(spine, ROUND_FUEL, true) && !spine->failed)
			publish_spine(spine);
		more = true;
	}
	return more;
}

void
spine_forget(PeekObjectId index)
{
	Spine	   *spine = hash_search(spines, &index, HASH_FIND, NULL);

	if (spine == NULL)
		return;
	if (spine->nreaders > 0 && !spine->failed)
	{
		/* views read it: it stays, the runtime's own again */
		spine = spine_rekey(spine, --last_own_id);
		publish_spine(spine);
		return;
	}
	release_spine(spine, false);
	MemoryContextDelete(spine->cxt);
	hash_search(spines, &index, HASH_REMOVE, NULL);
	if (index < 0)
	{
		registry_mark_dropped(index);
		(void) registry_delete_tombstone(index);
	}
}

/* The least time a spine's readers hold it at (PG_INT64_MAX: none). */
static int64
readers_hold(Spine *spine)
{
	int64		hold = PG_INT64_MAX;

	for (int i = 0; i < spine->nreaders; i++)
		hold = Min(hold, spine->readers[i].hold);
	return hold;
}

/*
 * Take a view off the readers of every spine (keep NULL), or of the others
 * arranging keep's rows; the runtime's own that no view reads go.
 */
static void
unshare_except(PeekObjectId view, Spine *keep)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;

	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
	{
		if (keep != NULL &&
			(spine == keep || !spine_arranges(spine, keep->shard, keep->key->row_type,
											  keep->key->nkeys, keep->key->attnums)))
			continue;
		for (int i = 0; i < spine->nreaders;)
			if (spine->readers[i].view == view)
				spine->readers[i] = spine->readers[--spine->nreaders];
			else
				i++;
		/* (removes the scan's current entry only, which a scan allows) */
		if (spine->index < 0 && spine->nreaders == 0)
			spine_forget(spine->index);
	}
}

/*
 * A view reads its input's rows by key from the spine arranging the
 * collection's rows by attnums: an index's if one has it, else one the
 * runtime keeps for views (published under a negative id, no catalog row:
 * built again at start like an index; an index created later on the same
 * key takes it over, spine_adopt).  The view holds it at hold: it does
 * not compact past it.  The spine is brought up to upper, from feed where
 * it can (the view's round's updates; NULL: none).  Fills *read with its
 * batches (pinned by the spine until its next merge round) and returns
 * true, or false if it cannot serve reads at hold (failed or compacted past it).
 */
bool
spine_share(PeekObjectId view, CatalogObject *collection, int nkeys,
			const AttrNumber *attnums, int64 hold, int64 upper, const SpineFeed *feed,
			SpineRead *read)
{
	Spine	   *spine = spine_matching(collection->shard, collection->row_type, nkeys, attnums);
	int			i;

	if (spine == NULL || (spine->index < 0 && spine_stale(spine, collection)))
		spine = spine_create(--last_own_id, collection->row_type, nkeys, attnums,
							 collection->shard, collection->since);
	for (i = 0; i < spine->nreaders && spine->readers[i].view != view; i++)
		;
	if (i == spine->nreaders)
	{
		spine->readers = spine->readers == NULL ?
			MemoryContextAlloc(spine->cxt, sizeof(SpineReader) * (i + 1)) :
			repalloc(spine->readers, sizeof(SpineReader) * (i + 1));
		spine->readers[spine->nreaders++].view = view;
	}
	spine->readers[i].hold = hold;
	/* one spine of these rows: one read before would stay, its upper stale */
	unshare_except(view, spine);
	/* the runtime's own compacts as its readers let it */
	if (spine->index < 0 && readers_hold(spine) > spine->since)
		spine->since = readers_hold(spine);
	if (spine->upper < upper)
	{
		bool		hydrating = spine->upper == 0;

		follow(spine, upper, collection->since, feed);
		if (hydrating && !spine->failed && spine->upper == 0)
			publish_spine(spine);
	}
	if (spine->failed || spine->since > hold || spine->upper < upper)
		return false;
	read->index = spine->index;
	read->key = spine->key;
	read->nbatches = 0;
	read->bytes = 0;
	for (int k = 0; k < SPINE_LEVELS; k++)
		for (int b = 0; b < spine->levels[k].nbatches; b++)
		{
			read->batches[read->nbatches++] = spine->levels[k].batches[b];
			read->bytes += batch_get(spine->levels[k].batches[b])->size;
		}
	return true;
}

/* A view reads no spine any more. */
void
spine_unshare(PeekObjectId view)
{
	if (spines != NULL)
		unshare_except(view, NULL);
}

/*
 * Advance a spine's since and publish it; the merges that follow apply it
 * to the batches.  Returns false if it must be retried later (one ran too
 * recently).
 */
bool
spine_compact(PeekObjectId index, int64 since)
{
	Spine	   *spine = hash_search(spines, &index, HASH_FIND, NULL);
	TimestampTz now = GetCurrentTimestamp();

	if (spine != NULL)
		since = Min(since, readers_hold(spine));	/* views read it there */
	if (spine == NULL || spine->failed || since <= spine->since)
		return true;
	if (!TimestampDifferenceExceeds(spine->last_since_advance, now, SINCE_INTERVAL_MS))
		return false;
	spine->since = since;
	spine->last_since_advance = now;
	publish_spine(spine);
	return true;
}

/*
 * How far every spine following a shard has read it (PG_INT64_MAX if none
 * does): the shard must not be compacted to that time or past it, or a
 * fold would merge updates a spine has read with ones it has not (an
 * insert it counted and the retraction it has yet to read, folded to
 * nothing), and the spine would never see the retraction.
 */
int64
spine_read_upper(Oid shard)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;
	int64		upper = PG_INT64_MAX;

	if (spines == NULL)
		return upper;
	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
		if (spine->shard == shard && !spine->failed)
			upper = Min(upper, spine->upper);
	return upper;
}

/*
 * The solo runtime's local handle: its own spine's published batches and
 * the upper they were published at.
 */
bool
spine_local_batches(PeekObjectId index, dsa_pointer **batches, int *nbatches, int64 *upper)
{
	Spine	   *spine = spines ? hash_search(spines, &index, HASH_FIND, NULL) : NULL;

	if (spine == NULL || spine->failed)
		return false;
	*batches = spine->batches;
	*nbatches = spine->nbatches;
	*upper = spine->upper;
	return true;
}
