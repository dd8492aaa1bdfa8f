/*-------------------------------------------------------------------------
 *
 * spine.h
 *	  The maintenance runtime's arrangements (one spine per index).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SPINE_H
#define PEEK_SPINE_H

#include "utils/dsa.h"

#include "arrange/arranging.h"
#include "common/ids.h"
#include "ipc/batch.h"
#include "storage/catalog.h"

/*
 * The batches a view reads its input's rows by key from (spine_share):
 * pinned by their spine until its next merge round.
 */
typedef struct SpineRead
{
	PeekObjectId index;			/* the index's, or < 0: the runtime's own */
	KeyInfo    *key;
	int			nbatches;
	dsa_pointer batches[PEEK_MAX_BATCHES];
	int64		bytes;			/* theirs */
	int64		upper;			/* the spine's: they hold every update below it */
} SpineRead;

extern void spine_reset_all(void);
extern void spine_adopt(CatalogObject *index, CatalogObject *collection,
						int64 upper, int64 published_since, const SpineFeed *feed);
extern void spine_forget(PeekObjectId index);
extern bool spine_merge_round(void);
extern bool spine_compact(PeekObjectId index, int64 since);
extern int64 spine_read_upper(Oid shard);
extern bool spine_share(PeekObjectId view, CatalogObject *collection, int nkeys,
						const AttrNumber *attnums, int64 hold, int64 upper,
						const SpineFeed *feed, SpineRead *read);
extern void spine_unshare(PeekObjectId view);

/* A view's hydration building a spine from its read (spine.c). */
typedef struct SpineHydration SpineHydration;

extern SpineHydration *spine_hydration_begin(PeekObjectId view, CatalogObject *collection,
											 int nkeys, const AttrNumber *attnums, int64 at);
extern void spine_hydration_add(SpineHydration *h, int64 time, int64 diff, Datum row);
extern void spine_hydration_end(SpineHydration *h);
extern bool spine_local_batches(PeekObjectId index, dsa_pointer **batches, int *nbatches,
								int64 *upper);

#endif							/* PEEK_SPINE_H */
