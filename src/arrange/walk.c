/*-------------------------------------------------------------------------
 *
 * walk.c
 *	  The walk: read an arrangement's pinned batches at a time, optionally
 *	  for one key, into a tuplestore.
 *
 *	  Batches are sorted by (key hash, row image, time), so a key lookup is a
 *	  binary search per batch (O(log n)) followed by the few entries with
 *	  that hash.  The batches' runs are merged in that order: every distinct
 *	  row is complete once the merge passes it, so its multiplicity at the
 *	  time is known right there and the walk stops as soon as the limit is
 *	  reached, without reading further.
 *
 *	  Runs wherever the peek's walk runs (the waiting backend); needs only
 *	  the pinned batches and the peek's hold.  Must not take registry locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "miscadmin.h"

#include "ipc/batch.h"
#include "common/rows.h"
#include "ipc/shmem.h"
#include "arrange/walk.h"

/* One batch's run of candidate entries. */
typedef struct Cursor
{
	Batch	   *batch;
	int64		pos;
	int64		end;
} Cursor;

/*
 * First entry with keyhash >= hash.  Key hashes are spread evenly, so
 * interpolating finds it in a few probes where bisecting a big batch takes
 * one cache miss per halving; a bounded number of guesses, then bisection,
 * keeps an unlucky spread logarithmic.
 */
static int64
lower_bound(Batch *batch, uint32 hash)
{
	BatchEntry *entries = batch->entries;
	int64		lo = 0;
	int64		hi = batch->nentries;

	/* every entry before lo is below hash, every one from hi on is not */
	for (int guesses = 0; guesses < 8 && hi - lo > 16; guesses++)
	{
		uint32		lo_hash = entries[lo].keyhash;
		uint32		hi_hash = entries[hi - 1].keyhash;
		int64		mid;

		if (hash <= lo_hash)
			return lo;
		if (hash > hi_hash)
			return hi;
		mid = lo + (int64) ((double) (hash - lo_hash) / (double) (hi_hash - lo_hash) *
							(double) (hi - 1 - lo));
		if (entries[mid].keyhash < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (entries[mid].keyhash < hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Order of (keyhash, row image) between an entry and a row. */
static int
entry_cmp(Batch *batch, BatchEntry *e, uint32 keyhash, Datum row)
{
	return row_image_cmp(e->keyhash, DatumGetPointer(batch_row(batch, e)),
						 batch_row_len(batch, e), keyhash, DatumGetPointer(row),
						 VARSIZE(DatumGetPointer(row)));
}

/* A cursor per batch over the entries of the key's hash (or all of them). */
static int
open_cursors(PeekHandle *handle, WalkSpec *spec, Cursor *cursors)
{
	int			ncursors = 0;

	for (int i = 0; i < handle->nbatches; i++)
	{
		Cursor	   *c = &cursors[ncursors];

		c->batch = batch_get(handle->batches[i]);
		if (spec->has_key)
		{
			/* the key's entries are the few that follow, with its hash */
			c->pos = lower_bound(c->batch, spec->keyhash);
			c->end = c->pos;
			while (c->end < c->batch->nentries &&
				   c->batch->entries[c->end].keyhash == spec->keyhash)
				c->end++;
		}
		else
		{
			c->pos = 0;
			c->end = c->batch->nentries;
		}
		if (c->pos < c->end)
			ncursors++;
	}
	return ncursors;
}

/*
 * Sum a row's updates at or before the time, in every batch, moving each
 * cursor past the row.
 */
static int64
sum_row(Cursor *cursors, int ncursors, uint32 keyhash, Datum row, int64 time)
{
	int128		sum = 0;

	for (int i = 0; i < ncursors; i++)
	{
		Cursor	   *c = &cursors[i];

		while (c->pos < c->end)
		{
			BatchEntry *e = &c->batch->entries[c->pos];

			if (entry_cmp(c->batch, e, keyhash, row) != 0)
				break;
			if (e->time <= time)
				sum += e->diff;
			c->pos++;
		}
	}
	/* summed in 128 bits: only the row's final count can overflow */
	return row_count_value(sum);
}

/* Order between two cursors' current entries. */
static int
cursor_cmp(Cursor *a, Cursor *b)
{
	BatchEntry *y = &b->batch->entries[b->pos];

	return entry_cmp(a->batch, &a->batch->entries[a->pos], y->keyhash,
					 batch_row(b->batch, y));
}

/*
 * Walk the handle's batches at spec->time into spec->out: merge the
 * batches' sorted entries, sum each row's updates, emit each row as often
 * as it counts.
 */
void
walk_batches(PeekHandle *handle, WalkSpec *spec)
{
	Cursor	   *cursors = palloc(sizeof(Cursor) * Max(handle->nbatches, 1));
	int			ncursors;
	RowEmitter	e = {spec->out, spec->name, spec->row_type, spec->time, spec->limit, 0, 0};

	if (spec->has_key && spec->key_has_null)
		return;					/* NULL keys never match */

	ncursors = open_cursors(handle, spec, cursors);
	while (ncursors > 0 && !row_emitter_full(&e))
	{
		Cursor	   *first = &cursors[0];
		BatchEntry *fe;
		Datum		row;
		int64		count;

		CHECK_FOR_INTERRUPTS();
		for (int i = 1; i < ncursors; i++)
			if (cursor_cmp(&cursors[i], first) < 0)
				first = &cursors[i];
		fe = &first->batch->entries[first->pos];
		row = batch_row(first->batch, fe);
		count = sum_row(cursors, ncursors, fe->keyhash, row, spec->time);

		if (count != 0 && (!spec->has_key || batch_key_row_matches(spec->key, row, spec->key_values)))
			row_emit(&e, row, count);

		/* drop exhausted cursors */
		for (int i = 0; i < ncursors;)
		{
			if (cursors[i].pos >= cursors[i].end)
				cursors[i] = cursors[--ncursors];
			else
				i++;
		}
	}
	pfree(cursors);
}
