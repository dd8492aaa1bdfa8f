/*-------------------------------------------------------------------------
 *
 * walk.h
 *	  The walk of an arrangement's pinned batches at a time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_WALK_H
#define PEEK_WALK_H

#include "utils/tuplestore.h"

#include "common/ids.h"
#include "ipc/batch.h"
#include "ipc/registry.h"

/* A key a walk looks for: its key columns' values and their hash. */
typedef struct WalkKey
{
	uint32		hash;
	Datum	   *values;			/* one per key column */
} WalkKey;

typedef struct WalkSpec
{
	const char *name;			/* the index, for messages */
	Oid			row_type;
	int64		time;
	int64		limit;			/* < 0: no limit */
	bool		has_key;		/* only the rows of keys[] (none: no row) */
	KeyInfo    *key;
	int			nkeys;			/* keys without a NULL, sorted by hash */
	WalkKey    *keys;
	Tuplestorestate *out;
} WalkSpec;

/* A row and its count at a walk's time; returns false to stop the walk. */
typedef bool (*WalkRowFn) (Datum row, int64 count, void *arg);

extern void walk_sort_keys(WalkSpec *spec);
extern void walk_batches(PeekHandle *handle, WalkSpec *spec);
extern void walk_hash_rows(dsa_pointer *batches, int nbatches, uint32 hash, int64 time,
						   WalkRowFn fn, void *arg);
extern void walk_hash_range(dsa_pointer *batches, int nbatches, uint32 lo, uint64 hi,
							int64 time, WalkRowFn fn, void *arg);
extern int64 walk_hash_range_entries(dsa_pointer *batches, int nbatches, uint32 lo, uint64 hi);
extern void walk_hash_row_counts(dsa_pointer *batches, int nbatches, uint32 hash,
								 const Datum *rows, int nrows, int64 time, int64 *counts);

#endif							/* PEEK_WALK_H */
