/*-------------------------------------------------------------------------
 *
 * spine.h
 *	  The maintenance runtime's arrangements (one spine per index).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SPINE_H
#define PEEK_SPINE_H

#include "pg_peek.h"

#include "catalog.h"
#include "utils/dsa.h"

extern void spine_reset_all(void);
extern void spine_adopt(CatalogObject *index, CatalogObject *collection,
						int64 upper, int64 published_since);
extern void spine_forget(PeekObjectId index);
extern bool spine_merge_round(void);
extern bool spine_compact(PeekObjectId index, int64 since);
extern int64 spine_read_upper(Oid shard);
extern bool spine_local_batches(PeekObjectId index, dsa_pointer **batches, int *nbatches);

#endif							/* PEEK_SPINE_H */
