/*-------------------------------------------------------------------------
 *
 * arranging.c
 *	  A collection's updates in a range of times arranged into one new
 *	  batch (read from its shard, or handed over by a feed): each row
 *	  normalized as a row read from the shard is, its key hashed, the
 *	  images packed into blocks.  spine.c calls it for a spine's
 *	  hydration (its own read of the shard, or a view's hydration's read)
 *	  and for each seal it follows.
 *
 *	  Must not place, merge or publish batches (spine.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "arrange/arranging.h"
#include "common/rows.h"
#include "ipc/registry.h"
#include "ipc/registry_progress.h"
#include "storage/persist.h"

/* Row images are packed into blocks of this size, past any palloc overhead. */
#define ARRANGE_BLOCK_SIZE	(4 * 1024 * 1024)
/* A hydration's array of updates starts with room for this many at most. */
#define ARRANGE_PRESIZE_MAX	(1024 * 1024)

struct Arranging
{
	PeekObjectId index;
	int64		hydration_total;	/* estimated; < 0: following, not hydrating */
	KeyInfo    *key;
	TupleDesc	row_desc;		/* rows are normalized with it */
	HeapTupleHeader row_template;	/* and recognized by its header */
	PendingUpdate *updates;
	int64		n;
	int64		capacity;
	char	   *block;			/* where the next image goes */
	Size		block_free;
	MemoryContext cxt;			/* the updates and their images */
	MemoryContext per_row;
};

/*
 * Room for an image of len bytes in the current block: MAXALIGNed, its
 * 4-byte header before it, so that the image is a row datum as it lies
 * (hashed and compared in place).
 */
static struct varlena *
block_room(Arranging *a, Size len)
{
	Size		size = MAXALIGN(len + VARHDRSZ);
	struct varlena *room;

	if (size > a->block_free)
	{
		a->block_free = Max(ARRANGE_BLOCK_SIZE, size);
		a->block = MemoryContextAllocHuge(a->cxt, a->block_free);
	}
	room = (struct varlena *) a->block;
	SET_VARSIZE(room, len + VARHDRSZ);
	a->block += size;
	a->block_free -= size;
	return room;
}

/*
 * One update (arg: the Arranging), from the shard, a feed or a view's
 * hydration: its row is normalized as a row read from the shard is, so
 * that images from any compare equal.  The stored bytes are copied into
 * the block once and kept when they are the canonical image already (as
 * they usually are, row_from_shard), else replaced by the image formed.
 */
void
arrange_update(int64 time, int64 diff, Datum row, void *arg)
{
	Arranging  *a = arg;
	struct varlena *field = (struct varlena *) DatumGetPointer(row);
	struct varlena *flat = NULL;
	struct varlena *formed;
	MemoryContext old;
	PendingUpdate *u;

	if (diff == 0)
		return;					/* (batch_build counts on none) */
	old = MemoryContextSwitchTo(a->per_row);
	if (a->row_template != NULL && !VARATT_IS_EXTERNAL(field) && !VARATT_IS_COMPRESSED(field))
	{
		flat = block_room(a, VARSIZE_ANY_EXHDR(field));
		memcpy(VARDATA(flat), VARDATA_ANY(field), VARSIZE_ANY_EXHDR(field));
		formed = (struct varlena *) DatumGetPointer(row_canonical(a->row_desc, a->row_template,
																  PointerGetDatum(flat)));
	}
	else
		formed = (struct varlena *) DatumGetPointer(row_normalize(a->row_desc, row));
	MemoryContextSwitchTo(old);
	if (formed != flat)
	{
		/* (the room just taken, if any, is given back for the image formed) */
		if (flat != NULL)
		{
			a->block -= MAXALIGN(VARSIZE(flat));
			a->block_free += MAXALIGN(VARSIZE(flat));
		}
		flat = block_room(a, VARSIZE(formed) - VARHDRSZ);
		memcpy(VARDATA(flat), VARDATA(formed), VARSIZE(formed) - VARHDRSZ);
		MemoryContextReset(a->per_row);
	}
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
	if (a->hydration_total >= 0 && a->n % 10000 == 0)
		registry_hydration_progress(a->index, a->n, Max(a->n, a->hydration_total));
}

/*
 * Start arranging a collection's updates by key, in the caller's memory
 * context, with room for about expected of them (< 0: unknown);
 * hydration_total >= 0: a spine's hydration, shown in
 * peek.hydration_progress against that estimate until the count is known.
 */
Arranging *
arrange_begin(PeekObjectId index, KeyInfo *key, int64 hydration_total, int64 expected)
{
	Arranging  *a = palloc(sizeof(Arranging));
	MemoryContext old;

	a->index = index;
	a->hydration_total = hydration_total;
	if (hydration_total >= 0)
		registry_hydration_progress(index, 0, hydration_total);
	a->key = key;
	a->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek arranging",
								   ALLOCSET_DEFAULT_SIZES);
	a->per_row = AllocSetContextCreate(a->cxt, "pg_peek arranging row", ALLOCSET_SMALL_SIZES);
	a->block = NULL;
	a->block_free = 0;
	/* the type's current descriptor: rows from before an ALTER TYPE match */
	a->row_desc = row_desc(key->row_type);
	old = MemoryContextSwitchTo(a->cxt);
	a->row_template = row_header_template(a->row_desc);
	MemoryContextSwitchTo(old);
	/* room for the estimate (not beyond a bloated shard's first million) */
	a->capacity = Max(Min(expected, ARRANGE_PRESIZE_MAX), 1024);
	a->n = 0;
	a->updates = MemoryContextAllocHuge(a->cxt, sizeof(PendingUpdate) * a->capacity);
	return a;
}

/*
 * The updates arranged (arrange_update) into a new batch of [lower, upper)
 * at since (InvalidDsaPointer: none, *empty if there was none, else
 * pg_peek.max_memory would be exceeded); the arranging is let go of.
 */
dsa_pointer
arrange_end(Arranging *a, int64 lower, int64 upper, int64 since, bool *empty)
{
	dsa_pointer dp;

	*empty = (a->n == 0);
	dp = *empty ? InvalidDsaPointer :
		batch_build(a->updates, a->n, lower, upper, since);
	if (a->hydration_total >= 0)
		registry_hydration_progress(a->index, a->n, -1);
	MemoryContextDelete(a->cxt);
	FreeTupleDesc(a->row_desc);
	pfree(a);
	return dp;
}

/*
 * Arrange the collection's updates in [lower, upper) into a new batch, from
 * the feed if it has them (see follow), else from the shard.  The first
 * range of a spine (hydrating) is its hydration.
 */
dsa_pointer
arrange_range(PeekObjectId index, KeyInfo *key, Oid shard, int64 since, bool hydrating,
			  int64 lower, int64 upper, const SpineFeed *feed, bool *empty)
{
	int64		estimate = hydrating ? persist_estimate_rows(shard) : -1;
	Arranging  *a = arrange_begin(index, key, estimate, estimate);

	if (feed != NULL)
		feed->scan(feed->state, lower, upper, arrange_update, a);
	else if (lower == 0 && since < upper)
	{
		/*
		 * A hydration keeps the contents at the since and what came after:
		 * the shard's contents there and its updates after, not every
		 * update since its start (a base and the history it counts, as
		 * many rows again each), all of which the batch would advance to
		 * the since and consolidate.
		 */
		persist_scan_at(shard, since, upper, arrange_update, a);
	}
	else
		persist_scan_range(shard, lower, upper, arrange_update, a);
	return arrange_end(a, lower, upper, since, empty);
}
