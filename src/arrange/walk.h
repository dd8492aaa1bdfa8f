/*-------------------------------------------------------------------------
 *
 * walk.h
 *	  The walk of an arrangement's pinned batches at a time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_WALK_H
#define PEEK_WALK_H

#include "common/ids.h"

#include "ipc/batch.h"
#include "ipc/shmem.h"
#include "utils/tuplestore.h"

typedef struct WalkSpec
{
	const char *name;			/* the index, for messages */
	Oid			row_type;
	int64		time;
	int64		limit;			/* < 0: no limit */
	bool		has_key;
	bool		key_has_null;
	KeyInfo    *key;
	uint32		keyhash;
	Datum		key_values[INDEX_MAX_KEYS];
	Tuplestorestate *out;
} WalkSpec;

extern void walk_batches(PeekHandle *handle, WalkSpec *spec);

#endif							/* PEEK_WALK_H */
