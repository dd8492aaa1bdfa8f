/*-------------------------------------------------------------------------
 *
 * arranging.h
 *	  A collection's updates arranged into a new batch (arranging.c), from
 *	  its shard or from a feed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_ARRANGING_H
#define PEEK_ARRANGING_H

#include "utils/dsa.h"

#include "common/ids.h"
#include "ipc/batch.h"

/* What a collection's updates are handed to, one at a time. */
typedef void (*SpineUpdateFn) (int64 time, int64 diff, Datum row, void *arg);

/*
 * A collection's updates held in memory by whoever wrote them to its shard
 * (a capture round, capture/rounds.c) or read them from it (a view's round,
 * dataflow/arranged.c): every update the shard has with lower <= time <
 * upper, as written.  scan hands those of a sub-range to fn.
 */
typedef struct SpineFeed
{
	int64		lower;
	int64		upper;
	void		(*scan) (void *state, int64 lower, int64 upper, SpineUpdateFn fn, void *arg);
	void	   *state;
} SpineFeed;

/* A collection's updates being arranged (arranging.c). */
typedef struct Arranging Arranging;

extern Arranging *arrange_begin(PeekObjectId index, KeyInfo *key, int64 hydration_total,
								 int64 expected);
extern void arrange_update(int64 time, int64 diff, Datum row, void *arg);
extern dsa_pointer arrange_end(Arranging *a, int64 lower, int64 upper, int64 since, bool *empty);
extern dsa_pointer arrange_range(PeekObjectId index, KeyInfo *key, Oid shard, int64 since,
								 bool hydrating, int64 lower, int64 upper,
								 const SpineFeed *feed, bool *empty);

#endif							/* PEEK_ARRANGING_H */
