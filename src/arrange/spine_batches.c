/*-------------------------------------------------------------------------
 *
 * spine_batches.c
 *	  A spine's batches in their levels (spine.c says what a spine is):
 *	  a new batch placed at the level of its size with fuel for the merges
 *	  in progress, merges started, advanced and completed, the levels'
 *	  batches published and the ones merges replaced let go of after, every
 *	  pin released when a spine goes, and a spine that does not fit in
 *	  pg_peek.max_memory failed (an index's) or let go of (the runtime's
 *	  own for views, which give way to an index's first).
 *
 *	  Runs only in the maintenance (or solo) runtime.  Must not read a
 *	  shard nor the catalog (spine.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "arrange/spine_batches.h"
#include "common/settings.h"
#include "ipc/registry.h"

/*
 * Merge work per update introduced, for each merge in progress: a merge at
 * level k (at most 2^(k+1) entries) completes before the 2^(k-1) updates it
 * takes to bring another batch to level k have arrived.
 */
#define FUEL_PER_UPDATE	4

HTAB	   *spines = NULL;

/* Is dp in the spine's last published list (or, with in_levels, in a level)? */
bool
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
 * batch not placed yet is let go of too.  Without, the registry learns that
 * its list no longer carries the spine's pins: a successor released them a
 * second time, freeing batches the list still named.
 */
void
spine_release(Spine *spine, bool unpublished_only)
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
	if (!unpublished_only && spine->nbatches > 0)
		registry_spine_unpinned(spine->index);
	spine->nbatches = 0;
}

/*
 * Publish every level's batches, then let go of the batches merges
 * replaced: readers resolve the new list before the old one is unpinned.
 * A tombstone (a drop committed meanwhile) takes no list: the one published
 * last is still the registry's, its pins still the spine's to give back
 * (when it is forgotten, or by a successor after an exit), so the replaced
 * batches stay pinned and that list stays the spine's last published one.
 */
void
spine_publish(Spine *spine)
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

/*
 * A spine that does not fit in pg_peek.max_memory.  An index's is failed.
 * The runtime's own (for views) degrades instead: its batches are let go
 * of and its registry entry dropped, but it stays as a failed spine, so
 * that its views read their rows from their own groups (spine_share says
 * no) and no round builds it again, until its last view goes or the
 * runtime starts again.
 */
void
spine_fail(Spine *spine)
{
	spine->failed = true;
	spine_release(spine, false);
	if (spine->index < 0)
	{
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("pg_peek arrangement " INT64_FORMAT " that views read does not fit in pg_peek.max_memory (%d kB): its views keep their rows themselves",
						spine->index, setting_max_memory_kb),
				 errdetail("Arrangements hold " UINT64_FORMAT " bytes.", batch_arrangement_bytes())));
		registry_mark_dropped(spine->index);
		(void) registry_delete_tombstone(spine->index);
		return;
	}
	ereport(LOG,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("pg_peek index " INT64_FORMAT " exceeds pg_peek.max_memory (%d kB) and is failed",
					spine->index, setting_max_memory_kb),
			 errdetail("Arrangements hold " UINT64_FORMAT " bytes.", batch_arrangement_bytes())));
	registry_mark_failed(spine->index);
}

/*
 * Whether the runtime's own spines may give way to an index's now: not
 * during a view's round, which may be reading their batches (spine_share),
 * only while indexes are adopted and merged.
 */
bool		spine_own_may_give_way = false;

/*
 * An index's spine found no room in pg_peek.max_memory: the runtime's own
 * spines (for views, which can keep their rows themselves) give their
 * memory back first, so that no user index fails for them.  Returns
 * whether any did (the caller tries once more).
 */
bool
spine_give_way(Spine *spine)
{
	HASH_SEQ_STATUS status;
	Spine	   *own;
	bool		freed = false;

	if (spine->index < 0 || !spine_own_may_give_way)
		return false;
	hash_seq_init(&status, spines);
	while ((own = hash_seq_search(&status)) != NULL)
		if (own->index < 0 && !own->failed)
		{
			if (!freed)
				ereport(LOG,
						(errmsg("pg_peek index " INT64_FORMAT " needs room in pg_peek.max_memory (%d kB): the arrangements views read give way",
								spine->index, setting_max_memory_kb)));
			spine_fail(own);
			freed = true;
		}
	return freed;
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
	if (level->merge == NULL && level->nbatches == 2 && !start_merge(spine, level) &&
		(!spine_give_way(spine) || !start_merge(spine, level)))
	{
		batch_unpin(dp);
		spine_fail(spine);
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
bool
spine_apply_fuel(Spine *spine, int64 fuel, bool shared)
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
void
spine_introduce_batch(Spine *spine, dsa_pointer dp)
{
	int64		n = batch_get(dp)->nentries;

	spine->last_batch = GetCurrentTimestamp();
	spine->incoming = dp;
	spine_apply_fuel(spine, FUEL_PER_UPDATE * n, false);
	if (spine->failed)
		batch_unpin(dp);
	else
		place_batch(spine, dp);
	spine->incoming = InvalidDsaPointer;
}

/*
 * Merge work a settled spine may spend on a tidy merge whatever it brings:
 * below it a spine merges down to one batch at its since (a few rounds'
 * fuel).  Above it a tidy merge must be paid for by the updates it takes
 * in (TIDY_RATIO entries of work for each), so that an idle spine never
 * rewrites its biggest batch for a few updates: a round's merge work stays
 * proportional to the updates, not to the arrangement's size.
 */
#define TIDY_FREE		(64 * 1024)
#define TIDY_RATIO		8

/*
 * Is merging a level's lone batch (lower) into the next level up's
 * (upper) worth its work: cheap, or paid for by the lower batch's entries?
 */
static bool
worth_joining(Batch *lower, Batch *upper)
{
	return lower->nentries + upper->nentries <= TIDY_FREE ||
		upper->nentries <= TIDY_RATIO * lower->nentries;
}

/*
 * Is rewriting a batch at the spine's later since worth its work: it has
 * entries at times after its own since (their consolidation is what the
 * rewrite brings; without any it would change only their times), and it
 * is cheap or they are a share of it that pays for it.
 */
static bool
worth_rewriting(Spine *spine, Batch *batch)
{
	return batch->since < spine->since && batch->recent > 0 &&
		(batch->nentries <= TIDY_FREE || batch->nentries <= TIDY_RATIO * batch->recent);
}

/*
 * With no merge in progress, start one (if the spine has settled) that
 * brings it closer to one batch at its since, where that is worth its
 * work: a batch joins the next one up (the lowest such pair first), or is
 * rewritten at the since.  Returns false if there is no merge to advance.
 */
bool
spine_start_tidy_merge(Spine *spine, bool settled)
{
	int			low = -1;

	for (int k = 0; k < SPINE_LEVELS; k++)
	{
		Level	   *level = &spine->levels[k];

		if (level->merge != NULL)
			return true;
		if (level->nbatches == 2)
			return start_merge(spine, level);	/* found no room before */
	}
	if (!settled)
		return false;
	for (int k = 0; k < SPINE_LEVELS; k++)
	{
		Level	   *level = &spine->levels[k];

		if (level->nbatches == 0)
			continue;
		if (low >= 0 && worth_joining(batch_get(spine->levels[low].batches[0]),
									  batch_get(level->batches[0])))
		{
			/* a lone batch per level: move the lower up to join this one */
			level->batches[level->nbatches++] = spine->levels[low].batches[0];
			if (!start_merge(spine, level))
			{
				level->nbatches--;
				return false;
			}
			spine->levels[low].nbatches = 0;
			return true;
		}
		low = k;
	}
	for (int k = 0; k < SPINE_LEVELS; k++)
		if (spine->levels[k].nbatches == 1 &&
			worth_rewriting(spine, batch_get(spine->levels[k].batches[0])))
			return start_merge(spine, &spine->levels[k]);
	/* nothing until a batch or a later since comes: spine_nothing_to_merge */
	spine->tidy_since = spine->since;
	spine->tidy_batch = spine->last_batch;
	return false;
}

/*
 * Whether a settled spine had no merge worth starting and has had no new
 * batch nor a later since since then: with thousands of idle spines,
 * asking each again every round was a third of the maintenance runtime's
 * CPU under single-row writes to one of them.
 */
bool
spine_nothing_to_merge(Spine *spine)
{
	return spine->tidy_since == spine->since && spine->tidy_batch == spine->last_batch;
}
