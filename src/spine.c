/*-------------------------------------------------------------------------
 *
 * spine.c
 *	  The maintenance runtime's arrangements: one spine per index, a list of
 *	  batches merged geometrically (like an LSM: a batch merges with its
 *	  predecessor while that one is at most twice its size, so merge work
 *	  per update is logarithmic and the list stays short).  A large merge
 *	  waits for a quiet round, so that it does not delay the publication of
 *	  the next seal while updates keep coming.
 *
 *	  A spine hydrates from its collection's persist shard, follows every
 *	  seal by arranging the newly sealed updates, compacts by merging at its
 *	  since, and publishes after each change.  The spine holds one pin on
 *	  each of its batches (registry.c states the ownership rule): it takes
 *	  over the build's reference, lets go of the batches a merge replaced
 *	  only after publishing the result, and releases everything when the
 *	  index is forgotten or failed.  A restarted maintenance runtime
 *	  releases its dead predecessor's pins (registry_release_dead_spines)
 *	  and re-hydrates.
 *
 *	  Runs only in the maintenance (or solo) runtime.  Must not answer peeks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "batch.h"
#include "catalog.h"
#include "config.h"
#include "persist.h"
#include "registry.h"
#include "rows.h"
#include "spine.h"

/* A full merge to apply a new since at most this often per index. */
#define FULL_MERGE_INTERVAL_MS	1000

/*
 * A merge this large waits for a quiet round (one with nothing new to
 * arrange), so that it does not hold back the next seal's publication while
 * updates keep coming; a spine with this many batches merges regardless.
 */
#define DEFERRED_MERGE_ENTRIES	(64 * 1024)
#define MAX_DEFERRING_BATCHES	16

typedef struct Spine
{
	PeekObjectId index;			/* key */
	Oid			shard;
	KeyInfo    *key;
	int			nbatches;
	dsa_pointer batches[PEEK_MAX_BATCHES];
	int64		upper;
	int64		since;
	bool		failed;
	bool		merge_deferred;
	TimestampTz last_full_merge;
} Spine;

static HTAB *spines = NULL;

/* Let go of a spine's pins. */
static void
release_spine(Spine *spine)
{
	for (int i = 0; i < spine->nbatches; i++)
		batch_unpin(spine->batches[i]);
	spine->nbatches = 0;
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
			release_spine(spine);
		hash_destroy(spines);
	}
	else
		registry_release_dead_spines();
	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(Spine);
	ctl.hcxt = TopMemoryContext;
	spines = hash_create("pg_peek spines", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static void
publish_spine(Spine *spine)
{
	registry_publish_arrangement(spine->index, spine->batches, spine->nbatches,
						spine->upper, spine->since);
}

static void
fail_spine(Spine *spine)
{
	ereport(LOG,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("pg_peek index " INT64_FORMAT " exceeds pg_peek.max_memory (%d kB) and is failed",
					spine->index, peek_max_memory_kb)));
	spine->failed = true;
	registry_mark_failed(spine->index);
	release_spine(spine);
}

/*
 * Replace batches [from, nbatches) with one new batch (a build or merge
 * result, whose one reference becomes the spine's pin), publish, and only
 * then let go of the replaced batches.
 */
static void
install_batch(Spine *spine, int from, dsa_pointer dp)
{
	dsa_pointer replaced[PEEK_MAX_BATCHES];
	int			nreplaced = spine->nbatches - from;

	memcpy(replaced, &spine->batches[from], sizeof(dsa_pointer) * nreplaced);
	spine->batches[from] = dp;
	spine->nbatches = from + 1;
	publish_spine(spine);
	for (int i = 0; i < nreplaced; i++)
		batch_unpin(replaced[i]);
}

/*
 * Merge the last two batches while the older is at most twice the newer;
 * unless quiet, a large merge is deferred (see DEFERRED_MERGE_ENTRIES).
 */
static void
merge_geometrically(Spine *spine, bool quiet)
{
	spine->merge_deferred = false;
	while (spine->nbatches >= 2)
	{
		int			n = spine->nbatches;
		Batch	   *older = batch_get(spine->batches[n - 2]);
		Batch	   *newer = batch_get(spine->batches[n - 1]);
		dsa_pointer merged;

		if (older->nentries > 2 * newer->nentries && n < PEEK_MAX_BATCHES)
			break;
		if (!quiet && n < MAX_DEFERRING_BATCHES &&
			older->nentries + newer->nentries > DEFERRED_MERGE_ENTRIES)
		{
			spine->merge_deferred = true;
			break;
		}
		merged = batch_merge(&spine->batches[n - 2], 2, spine->since);
		if (!DsaPointerIsValid(merged))
		{
			fail_spine(spine);
			return;
		}
		install_batch(spine, n - 2, merged);
	}
}

/* ---- arranging shard updates ---- */

typedef struct Arranging
{
	PeekObjectId index;
	int64		hydration_total;	/* < 0: following, not hydrating */
	KeyInfo    *key;
	TupleDesc	row_desc;		/* rows are normalized with it */
	PendingUpdate *updates;
	int64		n;
	int64		capacity;
	MemoryContext cxt;
} Arranging;

static void
arrange_update(int64 time, int64 diff, Datum row, void *arg)
{
	Arranging  *a = arg;
	MemoryContext old = MemoryContextSwitchTo(a->cxt);
	struct varlena *flat = (struct varlena *) DatumGetPointer(row_normalize(a->row_desc, row));
	PendingUpdate *u;

	if (a->n == a->capacity)
	{
		a->capacity *= 2;
		a->updates = repalloc_huge(a->updates, sizeof(PendingUpdate) * a->capacity);
	}
	u = &a->updates[a->n++];
	u->keyhash = batch_key_hash_row(a->key, PointerGetDatum(flat));
	u->len = VARSIZE(flat) - VARHDRSZ;
	u->image = VARDATA(flat);
	u->time = time;
	u->diff = diff;
	MemoryContextSwitchTo(old);
	if (a->hydration_total >= 0 && a->n % 10000 == 0)
		registry_hydration_progress(a->index, a->n, a->hydration_total);
}

/*
 * Arrange the shard's updates in [lower, upper) into a new batch.  The first
 * range of a spine is its hydration, shown in peek.hydration_progress.
 */
static dsa_pointer
arrange_range(Spine *spine, int64 lower, int64 upper, bool *empty)
{
	Arranging	a;
	dsa_pointer dp;
	bool		hydrating = spine->nbatches == 0 && lower == 0;

	a.index = spine->index;
	a.hydration_total = hydrating ? persist_count_range(spine->shard, lower, upper) : -1;
	if (hydrating)
		registry_hydration_progress(spine->index, 0, a.hydration_total);
	a.key = spine->key;
	a.cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek arranging",
								  ALLOCSET_DEFAULT_SIZES);
	/* the type's current descriptor: rows from before an ALTER TYPE match */
	a.row_desc = row_desc(spine->key->row_type);
	a.capacity = 1024;
	a.n = 0;
	a.updates = MemoryContextAllocHuge(a.cxt, sizeof(PendingUpdate) * a.capacity);
	persist_scan_range(spine->shard, lower, upper, arrange_update, &a);
	*empty = (a.n == 0);
	dp = *empty ? InvalidDsaPointer :
		batch_build(a.updates, a.n, lower, upper, spine->since);
	MemoryContextDelete(a.cxt);
	FreeTupleDesc(a.row_desc);
	if (hydrating)
		registry_hydration_progress(spine->index, a.n, -1);
	return dp;
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
 * type it hydrates again, so that every image is of the current type.
 */
static void
follow(Spine *spine, int64 upper)
{
	bool		empty;
	dsa_pointer dp;

	if (spine->failed)
		return;
	if (spine->upper > 0 && row_type_changed(spine))
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		spine->key = batch_keyinfo_build(spine->key->row_type, spine->key->nkeys,
								   spine->key->attnums);
		MemoryContextSwitchTo(old);
		release_spine(spine);
		spine->upper = 0;
	}
	if (upper <= spine->upper)
		return;
	/* a collection dropped meanwhile: its notice will forget the spine */
	if (!persist_lock_shard(spine->shard))
		return;
	dp = arrange_range(spine, spine->upper, upper, &empty);
	spine->upper = upper;
	if (empty)
	{
		publish_spine(spine);	/* a seal with no updates still publishes */
		return;
	}
	if (!DsaPointerIsValid(dp))
	{
		fail_spine(spine);
		return;
	}
	install_batch(spine, spine->nbatches, dp);
	merge_geometrically(spine, false);
}

/*
 * Adopt an index from its catalog row: hydrate it from the shard if this
 * runtime has no spine for it yet, else follow its collection's seals up to
 * upper (the collection's published upper).  Runs in a transaction.
 */
void
spine_adopt(CatalogObject *index, CatalogObject *collection, int64 upper,
			int64 published_since)
{
	Spine	   *spine;
	bool		found;

	spine = hash_search(spines, &index->id, HASH_ENTER, &found);
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		spine->shard = collection->shard;
		spine->key = batch_keyinfo_build(index->row_type, index->nkeys, index->attnums);
		MemoryContextSwitchTo(old);
		spine->nbatches = 0;
		spine->upper = 0;
		/* exact from the shard's since, and never below what was shown */
		spine->since = Max(collection->since, published_since);
		spine->failed = false;
		spine->merge_deferred = false;
		spine->last_full_merge = 0;
	}
	follow(spine, upper);
	if (!found && !spine->failed && spine->upper == 0)
		publish_spine(spine);	/* an empty collection: published, upper 0 */
}

/* A quiet round: run the merges busy rounds deferred. */
void
spine_merge_deferred(void)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;

	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
		if (spine->merge_deferred && !spine->failed)
			merge_geometrically(spine, true);
}

void
spine_forget(PeekObjectId index)
{
	Spine	   *spine = hash_search(spines, &index, HASH_FIND, NULL);

	if (spine == NULL)
		return;
	release_spine(spine);
	hash_search(spines, &index, HASH_REMOVE, NULL);
}

/*
 * Compact a spine to since by merging all its batches there.  Returns
 * false if it must be retried later (a full merge ran too recently).
 */
bool
spine_compact(PeekObjectId index, int64 since)
{
	Spine	   *spine = hash_search(spines, &index, HASH_FIND, NULL);
	dsa_pointer merged;
	TimestampTz now = GetCurrentTimestamp();

	if (spine == NULL || spine->failed || since <= spine->since)
		return true;
	if (!TimestampDifferenceExceeds(spine->last_full_merge, now, FULL_MERGE_INTERVAL_MS))
		return false;
	spine->since = since;
	spine->last_full_merge = now;
	if (spine->nbatches == 0)
	{
		publish_spine(spine);
		return true;
	}
	merged = batch_merge(spine->batches, spine->nbatches, since);
	if (!DsaPointerIsValid(merged))
		fail_spine(spine);
	else
		install_batch(spine, 0, merged);
	return true;
}

/* The solo runtime's local handle: its own spine's current batches. */
bool
spine_local_batches(PeekObjectId index, dsa_pointer **batches, int *nbatches)
{
	Spine	   *spine = spines ? hash_search(spines, &index, HASH_FIND, NULL) : NULL;

	if (spine == NULL || spine->failed)
		return false;
	*batches = spine->batches;
	*nbatches = spine->nbatches;
	return true;
}
