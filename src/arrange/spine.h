/*-------------------------------------------------------------------------
 *
 * spine.h
 *	  The maintenance runtime's arrangements (one spine per index).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SPINE_H
#define PEEK_SPINE_H

#include "common/ids.h"

#include "storage/catalog.h"
#include "utils/dsa.h"

/* What a collection's updates are handed to, one at a time. */
typedef void (*SpineUpdateFn) (int64 time, int64 diff, Datum row, void *arg);

/*
 * A collection's updates held in memory by whoever wrote them to its shard
 * (a capture round, capture.c): every update the shard has with lower <=
 * time < upper, as written.  scan hands those of a sub-range to fn.
 */
typedef struct SpineFeed
{
	int64		lower;
	int64		upper;
	void		(*scan) (void *state, int64 lower, int64 upper, SpineUpdateFn fn, void *arg);
	void	   *state;
} SpineFeed;

extern void spine_reset_all(void);
extern void spine_adopt(CatalogObject *index, CatalogObject *collection,
						int64 upper, int64 published_since, const SpineFeed *feed);
extern void spine_forget(PeekObjectId index);
extern bool spine_merge_round(void);
extern bool spine_compact(PeekObjectId index, int64 since);
extern int64 spine_read_upper(Oid shard);
extern bool spine_local_batches(PeekObjectId index, dsa_pointer **batches, int *nbatches,
								int64 *upper);

#endif							/* PEEK_SPINE_H */
