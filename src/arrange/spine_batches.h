/*-------------------------------------------------------------------------
 *
 * spine_batches.h
 *	  The maintenance runtime's spines, as spine.c (adopting, following,
 *	  sharing with views, compacting) and spine_batches.c (a spine's levels
 *	  of batches: placing, merging, publishing, releasing, failing) both
 *	  see them.  Private to arrange/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SPINE_BATCHES_H
#define PEEK_SPINE_BATCHES_H

#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "ipc/batch.h"

/* Two batches per level: the published list is never longer than allowed. */
#define SPINE_LEVELS	(PEEK_MAX_BATCHES / 2)

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
	int64		tidy_since;		/* the since and last batch at which it */
	TimestampTz tidy_batch;		/* had no merge worth starting, settled */
	dsa_pointer incoming;		/* a new batch not placed yet (for an exit) */
	SpineReader *readers;		/* the views reading it (spine_share) */
	int			nreaders;
} Spine;

/* every spine of the runtime, by index id (spine_batches.c) */
extern HTAB *spines;

/* may the runtime's own spines give way to an index's now (spine_give_way) */
extern bool spine_own_may_give_way;

extern bool spine_holds(Spine *spine, dsa_pointer dp, bool in_levels);
extern void spine_release(Spine *spine, bool unpublished_only);
extern void spine_publish(Spine *spine);
extern void spine_fail(Spine *spine);
extern bool spine_give_way(Spine *spine);
extern bool spine_apply_fuel(Spine *spine, int64 fuel, bool shared);
extern void spine_introduce_batch(Spine *spine, dsa_pointer dp);
extern bool spine_start_tidy_merge(Spine *spine, bool settled);
extern bool spine_nothing_to_merge(Spine *spine);

#endif							/* PEEK_SPINE_BATCHES_H */
