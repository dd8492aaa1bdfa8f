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
 *	  spends bounded fuel merging what is left, towards one batch at the
 *	  spine's since, as far as the updates merged in pay for the work
 *	  (spine_start_tidy_merge): an idle spine does not rewrite a big batch
 *	  for a few updates.
 *
 *	  A spine hydrates from its collection's persist shard (or from a
 *	  view's hydration's read of it, spine_hydration_begin), follows every
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
 *	  (registry_release_dead_spines) and re-hydrates.  The levels, merges
 *	  and pins are spine_batches.c's; this file adopts, follows, shares
 *	  with views and compacts.
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
#include "arrange/spine_batches.h"
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

/*
 * Merge work a round spends per spine beyond what seals brought, all its
 * merges together: about a millisecond, so that a seal arriving meanwhile
 * is not held up (the runtime goes on without sleeping while work is left).
 */
#define ROUND_FUEL		(8 * 1024)

/* The last id given to a spine the runtime keeps for views alone. */
static PeekObjectId last_own_id = 0;

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
			spine_release(spine, true);
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
			spine_release(spine, false);
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
		spine_release(spine, false);
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
	for (int tries = 0; tries < 2; tries++)
	{
		dp = arrange_range(spine->index, spine->key, spine->shard, spine->since,
						   spine->nbatches == 0 && spine->upper == 0, spine->upper, upper,
						   feed, &empty);
		if (empty || DsaPointerIsValid(dp) || !spine_give_way(spine))
			break;
	}
	spine->upper = upper;
	if (!empty && !DsaPointerIsValid(dp))
	{
		spine_fail(spine);
		return;
	}
	if (!empty)
		spine_introduce_batch(spine, dp);
	/* a seal with no updates still publishes */
	if (!spine->failed)
		spine_publish(spine);
}

/*
 * A new spine of row_type's rows by attnums, entered under id.  Its key is
 * made first, in memory of the caller's until the spine is entered: an error
 * there (its row type's relation locked past the runtime's lock wait, a key
 * column gone) leaves no spine half made, which a retry would find and follow
 * with no key, and nothing allocated.  Runs in a transaction.
 */
static Spine *
spine_create(PeekObjectId id, Oid row_type, int nkeys, const AttrNumber *attnums,
			 Oid shard, int64 since)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek spine",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext key_cxt = AllocSetContextCreate(cxt, "pg_peek spine key",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(key_cxt);
	KeyInfo    *key = batch_keyinfo_build(row_type, nkeys, attnums);
	dsa_pointer *retired = MemoryContextAlloc(cxt, sizeof(dsa_pointer) * 2 * PEEK_MAX_BATCHES);
	Spine	   *spine;

	MemoryContextSwitchTo(old);
	spine = hash_search(spines, &id, HASH_ENTER, NULL);
	MemoryContextSetParent(cxt, TopMemoryContext);
	spine->cxt = cxt;
	spine->key_cxt = key_cxt;
	spine->key = key;
	spine->shard = shard;
	memset(spine->levels, 0, sizeof(spine->levels));
	spine->retired_capacity = 2 * PEEK_MAX_BATCHES;
	spine->retired = retired;
	spine->nbatches = 0;
	spine->nretired = 0;
	spine->upper = 0;
	spine->since = since;
	spine->failed = false;
	spine->last_since_advance = 0;
	spine->last_batch = 0;
	spine->tidy_since = -1;
	spine->incoming = InvalidDsaPointer;
	spine->readers = NULL;
	spine->nreaders = 0;
	return spine;
}

/* Does a spine (live or failed) arrange a shard's rows of row_type by attnums? */
static bool
spine_arranged(Spine *spine, Oid shard, Oid row_type, int nkeys, const AttrNumber *attnums)
{
	return spine->shard == shard &&
		spine->key->row_type == row_type && spine->key->nkeys == nkeys &&
		memcmp(spine->key->attnums, attnums, sizeof(AttrNumber) * nkeys) == 0;
}

/* Does a live spine arrange a shard's rows of row_type by attnums? */
static bool
spine_arranges(Spine *spine, Oid shard, Oid row_type, int nkeys, const AttrNumber *attnums)
{
	return !spine->failed && spine_arranged(spine, shard, row_type, nkeys, attnums);
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

/* Did the runtime's own spine of these rows by this key not fit? */
static bool
own_gave_up(Oid shard, Oid row_type, int nkeys, const AttrNumber *attnums)
{
	HASH_SEQ_STATUS status;
	Spine	   *spine;

	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
		if (spine->index < 0 && spine->failed &&
			spine_arranged(spine, shard, row_type, nkeys, attnums))
		{
			hash_seq_term(&status);
			return true;
		}
	return false;
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
 * becomes an index's, or an index's that views read becomes the runtime's
 * own: the same batches, published under the new id from now on, its
 * readers kept.  The old id's list no longer carries the spine's pins.
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
	else
		registry_spine_unpinned(old_id);
	/* its pins are on no published list until it publishes under id */
	spine->nbatches = 0;
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

	spine_own_may_give_way = true;
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
		spine_publish(spine);
	spine_own_may_give_way = false;
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

	spine_own_may_give_way = true;
	hash_seq_init(&status, spines);
	while ((spine = hash_seq_search(&status)) != NULL)
	{
		if (spine->failed || spine_nothing_to_merge(spine) ||
			!spine_start_tidy_merge(spine,
									TimestampDifferenceExceeds(spine->last_batch, now, SETTLED_MS)))
			continue;
		if (spine_apply_fuel(spine, ROUND_FUEL, true) && !spine->failed)
			spine_publish(spine);
		more = true;
	}
	spine_own_may_give_way = false;
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
		spine_publish(spine);
		return;
	}
	spine_release(spine, false);
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
 * The view reads the spine, held at hold (it does not compact past it),
 * and no other spine of the same rows: one read before would stay, its
 * upper stale.
 */
static void
read_by(Spine *spine, PeekObjectId view, int64 hold)
{
	int			i;

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
	unshare_except(view, spine);
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

	/* a view's round may hold other spines' batches: none gives way now */
	spine_own_may_give_way = false;
	/* the runtime's own that did not fit is not built again (spine_fail) */
	if (spine == NULL && own_gave_up(collection->shard, collection->row_type, nkeys, attnums))
		return false;
	if (spine == NULL || (spine->index < 0 && spine_stale(spine, collection)))
		spine = spine_create(--last_own_id, collection->row_type, nkeys, attnums,
							 collection->shard, collection->since);
	read_by(spine, view, hold);
	/* the runtime's own compacts as its readers let it */
	if (spine->index < 0 && readers_hold(spine) > spine->since)
		spine->since = readers_hold(spine);
	if (spine->upper < upper)
	{
		bool		hydrating = spine->upper == 0;

		follow(spine, upper, collection->since, feed);
		if (hydrating && !spine->failed && spine->upper == 0)
			spine_publish(spine);
	}
	if (spine->failed || spine->since > hold || spine->upper < upper)
		return false;
	read->index = spine->index;
	read->key = spine->key;
	read->nbatches = 0;
	read->bytes = 0;
	read->upper = spine->upper;
	for (int k = 0; k < SPINE_LEVELS; k++)
		for (int b = 0; b < spine->levels[k].nbatches; b++)
		{
			read->batches[read->nbatches++] = spine->levels[k].batches[b];
			read->bytes += batch_get(spine->levels[k].batches[b])->size;
		}
	return true;
}

/*
 * A view's hydration reading a collection's contents at a time builds the
 * spine its rounds will read (spine_share) from that read, when the
 * runtime has none of those rows by that key: the contents at the time,
 * the spine's since, are what the spine's hydration would read there (the
 * shard's contents and no update after it), and the view's next round
 * brings it up from the time's end, not from the shard's start.
 */
struct SpineHydration
{
	PeekObjectId view;
	CatalogObject *collection;
	int			nkeys;
	AttrNumber	attnums[INDEX_MAX_KEYS];
	int64		at;
	Arranging  *arranging;
};

/*
 * Start arranging the collection's rows by attnums from the view's read of
 * its contents at at (spine_hydration_add), in the caller's memory
 * context; NULL if a spine of them exists, or did not fit, or the shard is
 * not exact at at.
 */
SpineHydration *
spine_hydration_begin(PeekObjectId view, CatalogObject *collection, int nkeys,
					  const AttrNumber *attnums, int64 at)
{
	SpineHydration *h;

	if (at < collection->since ||
		spine_matching(collection->shard, collection->row_type, nkeys, attnums) != NULL ||
		own_gave_up(collection->shard, collection->row_type, nkeys, attnums))
		return NULL;
	h = palloc(sizeof(SpineHydration));
	h->view = view;
	h->collection = collection;
	h->nkeys = nkeys;
	memcpy(h->attnums, attnums, sizeof(AttrNumber) * nkeys);
	h->at = at;
	h->arranging = arrange_begin(0, batch_keyinfo_build(collection->row_type, nkeys, attnums), -1,
								 persist_estimate_rows(collection->shard));
	return h;
}

/* One update of the read (as persist_scan_at feeds them) into the spine. */
void
spine_hydration_add(SpineHydration *h, int64 time, int64 diff, Datum row)
{
	arrange_update(time, diff, row, h->arranging);
}

/*
 * The read done: the spine made of it, the view its reader, published.
 * Where its batch does not fit, none is made: the view's round hydrates
 * one from the shard, or gives way (spine_share).
 */
void
spine_hydration_end(SpineHydration *h)
{
	CatalogObject *c = h->collection;
	bool		empty;
	dsa_pointer dp = arrange_end(h->arranging, 0, h->at + 1, h->at, &empty);
	Spine	   *spine;

	if (empty || DsaPointerIsValid(dp))
	{
		spine = spine_create(--last_own_id, c->row_type, h->nkeys, h->attnums, c->shard, h->at);
		spine->upper = h->at + 1;
		read_by(spine, h->view, h->at);
		if (!empty)
			spine_introduce_batch(spine, dp);
		if (!spine->failed)
			spine_publish(spine);
	}
	pfree(h);
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
 * to the batches.  Returns false if it must be retried later: one ran too
 * recently, or the views reading the spine hold it below the since asked
 * for (it goes as far as they let it meanwhile).
 */
bool
spine_compact(PeekObjectId index, int64 since)
{
	Spine	   *spine = hash_search(spines, &index, HASH_FIND, NULL);
	TimestampTz now = GetCurrentTimestamp();
	int64		held;

	if (spine == NULL || spine->failed)
		return true;
	held = Min(since, readers_hold(spine));
	if (held > spine->since)
	{
		if (!TimestampDifferenceExceeds(spine->last_since_advance, now, SINCE_INTERVAL_MS))
			return false;
		spine->since = held;
		spine->last_since_advance = now;
		spine_publish(spine);
	}
	return held == since;
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
