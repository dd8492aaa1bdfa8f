/*-------------------------------------------------------------------------
 *
 * walk.c
 *	  The walk: read an arrangement's pinned batches at a time, optionally
 *	  for some keys, into a tuplestore.
 *
 *	  Batches are sorted by (key hash, row image, time), so a key lookup is a
 *	  bisection of the hash's bucket in each batch (batch_bucket) followed
 *	  by the few entries with that hash.  Many keys are looked up in one pass in the order of their
 *	  hashes, each search starting where the previous key's run ended.  The
 *	  batches' runs are merged in that order: every distinct
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

#include "miscadmin.h"

#include "arrange/walk.h"
#include "common/rows.h"

/* One batch's run of candidate entries. */
typedef struct Cursor
{
	Batch	   *batch;
	int64		pos;
	int64		end;
} Cursor;

/* Most cache lines of a bucket's entries prefetched at once. */
#define BUCKET_PREFETCH_LINES	16

/*
 * Start loading, at once, the cache lines of the entries of the hash's
 * bucket from lo on.  A bucket spans a few lines (8 to 16 entries of 24
 * bytes): the bisection below would otherwise take their misses one after
 * another, each probe waiting for the last.
 */
static void
prefetch_bucket(Batch *batch, uint32 hash, int64 lo)
{
	int64		first;
	int64		hi;
	char	   *p;
	char	   *end;

	batch_bucket(batch, hash, &first, &hi);
	lo = Max(lo, first);
	if (lo >= hi)
		return;
	p = (char *) &batch->entries[lo];
	end = Min((char *) &batch->entries[hi],
			  p + BUCKET_PREFETCH_LINES * PG_CACHE_LINE_SIZE);
	for (p = (char *) TYPEALIGN_DOWN(PG_CACHE_LINE_SIZE, p); p < end; p += PG_CACHE_LINE_SIZE)
		__builtin_prefetch(p);
}

/*
 * First entry from lo on with keyhash >= hash: a bisection of the hash's
 * bucket (batch_bucket), whose first entry has it or a higher one.  That
 * first entry is read before bisecting: a bucket that is one key's many
 * versions (a view's group, changed again and again) starts with the
 * hash, and a bisection would wait on lines past the prefetched ones.
 */
static int64
lower_bound(Batch *batch, uint32 hash, int64 lo)
{
	BatchEntry *entries = batch->entries;
	int64		first;
	int64		hi;

	batch_bucket(batch, hash, &first, &hi);
	lo = Max(lo, first);
	if (lo < hi && entries[lo].keyhash >= hash)
		return lo;
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

/* A cursor per batch over all its entries. */
static int
open_all_cursors(PeekHandle *handle, Cursor *cursors)
{
	int			ncursors = 0;

	for (int i = 0; i < handle->nbatches; i++)
	{
		Cursor	   *c = &cursors[ncursors];

		c->batch = batch_get(handle->batches[i]);
		c->pos = 0;
		c->end = c->batch->nentries;
		if (c->pos < c->end)
			ncursors++;
	}
	return ncursors;
}

/*
 * A cursor per batch over the entries with a key hash: the few that follow
 * its lower bound, searched from from[i] on in batch i (no earlier entry
 * has it); from[i] moves past them, for the next, higher hash.  Each step
 * is a cache miss in a big batch (the bucket table, the bucket's entries,
 * the first row image), and is started in every batch before any batch
 * waits for it, so the batches' misses overlap.
 */
static int
open_key_cursors(PeekHandle *handle, uint32 hash, int64 *from, Cursor *cursors)
{
	int			ncursors = 0;

	for (int i = 0; i < handle->nbatches; i++)
	{
		Batch	   *batch = batch_get(handle->batches[i]);

		cursors[i].batch = batch;
		if (batch->bucket_bits > 0)
			__builtin_prefetch((char *) batch + batch->buckets_offset +
							   sizeof(uint32) * (hash >> (32 - batch->bucket_bits)));
	}
	for (int i = 0; i < handle->nbatches; i++)
		prefetch_bucket(cursors[i].batch, hash, from[i]);
	for (int i = 0; i < handle->nbatches; i++)
	{
		Cursor	   *c = &cursors[ncursors];
		Batch	   *batch = cursors[i].batch;

		c->batch = batch;
		c->pos = lower_bound(batch, hash, from[i]);
		c->end = c->pos;
		while (c->end < batch->nentries && batch->entries[c->end].keyhash == hash)
			c->end++;
		from[i] = c->end;
		if (c->pos < c->end)
		{
			__builtin_prefetch(DatumGetPointer(batch_row(batch, &batch->entries[c->pos])));
			ncursors++;
		}
	}
	return ncursors;
}

/*
 * Sum a row's updates at or before the time, in every batch, moving each
 * cursor past the row.  The row is first's current entry's; in a batch,
 * the entries after a row's first are of that row while they share its
 * image (batch.h), so only each other batch's first entry is compared.
 */
static int64
sum_row(Cursor *cursors, int ncursors, Cursor *first, int64 time)
{
	BatchEntry *fe = &first->batch->entries[first->pos];
	Datum		row = batch_row(first->batch, fe);
	int128		sum = 0;

	for (int i = 0; i < ncursors; i++)
	{
		Cursor	   *c = &cursors[i];
		BatchEntry *e = &c->batch->entries[c->pos];

		if (c != first && entry_cmp(c->batch, e, fe->keyhash, row) != 0)
			continue;
		do
		{
			if (e->time <= time)
				sum += e->diff;
			c->pos++;
			e++;
		} while (c->pos < c->end && e->offset == e[-1].offset);
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

/* Does the row's key equal one of keys (all of one hash)? */
static bool
row_matches_any(KeyInfo *key, Datum row, WalkKey *keys, int nkeys)
{
	for (int i = 0; i < nkeys; i++)
		if (batch_key_row_matches(key, row, keys[i].values))
			return true;
	return false;
}

/*
 * Merge the cursors' runs and sum each row's updates at the time: fn gets
 * each row whose count is not 0, and returns false to stop.
 */
static void
merge_runs(Cursor *cursors, int ncursors, int64 time, WalkRowFn fn, void *arg)
{
	bool		more = true;

	while (ncursors > 0 && more)
	{
		Cursor	   *first = &cursors[0];
		Datum		row;
		int64		count;

		CHECK_FOR_INTERRUPTS();
		for (int i = 1; i < ncursors; i++)
			if (cursor_cmp(&cursors[i], first) < 0)
				first = &cursors[i];
		row = batch_row(first->batch, &first->batch->entries[first->pos]);
		count = sum_row(cursors, ncursors, first, time);

		if (count != 0)
			more = fn(row, count, arg);

		/* drop exhausted cursors */
		for (int i = 0; i < ncursors;)
		{
			if (cursors[i].pos >= cursors[i].end)
				cursors[i] = cursors[--ncursors];
			else
				i++;
		}
	}
}

/* A peek's walk: its rows, or (keys) those of the keys it looks for. */
typedef struct PeekRows
{
	WalkSpec   *spec;
	WalkKey    *keys;			/* NULL: every row */
	int			nkeys;
	RowEmitter *e;
} PeekRows;

/*
 * Emit a row as often as it counts, if its key equals one of the keys
 * (once however many of them it equals); false once the limit is reached.
 */
static bool
peek_row(Datum row, int64 count, void *arg)
{
	PeekRows   *p = arg;

	if (p->keys == NULL || row_matches_any(p->spec->key, row, p->keys, p->nkeys))
		row_emit(p->e, row, count);
	return !row_emitter_full(p->e);
}

static int
walk_key_cmp(const void *a, const void *b)
{
	uint32		x = ((const WalkKey *) a)->hash;
	uint32		y = ((const WalkKey *) b)->hash;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Put a spec's keys in the order walk_batches reads them: by hash. */
void
walk_sort_keys(WalkSpec *spec)
{
	if (spec->nkeys > 1)
		qsort(spec->keys, spec->nkeys, sizeof(WalkKey), walk_key_cmp);
}

/*
 * Walk the handle's batches at spec->time into spec->out: merge the
 * batches' sorted entries (those of each key's hash in turn, with keys),
 * sum each row's updates, emit each row as often as it counts.
 */
void
walk_batches(PeekHandle *handle, WalkSpec *spec)
{
	Cursor	   *cursors = palloc(sizeof(Cursor) * Max(handle->nbatches, 1));
	RowEmitter	e = {spec->out, spec->name, spec->row_type, spec->time, spec->limit, 0, 0};
	PeekRows	p = {spec, NULL, 0, &e};

	if (!spec->has_key)
	{
		if (!row_emitter_full(&e))
			merge_runs(cursors, open_all_cursors(handle, cursors), spec->time, peek_row, &p);
	}
	else
	{
		int64		from[PEEK_MAX_BATCHES] = {0};

		Assert(handle->nbatches <= PEEK_MAX_BATCHES);
		for (int i = 0; i < spec->nkeys && !row_emitter_full(&e);)
		{
			int			n = 1;	/* the keys of this hash: equal or colliding */

			CHECK_FOR_INTERRUPTS();
			while (i + n < spec->nkeys && spec->keys[i + n].hash == spec->keys[i].hash)
				n++;
			p.keys = &spec->keys[i];
			p.nkeys = n;
			merge_runs(cursors, open_key_cursors(handle, spec->keys[i].hash, from, cursors),
					   spec->time, peek_row, &p);
			i += n;
		}
	}
	pfree(cursors);
}

/*
 * The rows of the batches whose key hash is hash, each with its count at
 * the time (not 0), to fn: a maintained view's rows of a key (dataflow/),
 * read in the maintenance runtime from the batches its spine pins.
 */
void
walk_hash_rows(dsa_pointer *batches, int nbatches, uint32 hash, int64 time,
			   WalkRowFn fn, void *arg)
{
	PeekHandle	handle;
	Cursor		cursors[PEEK_MAX_BATCHES];
	int64		from[PEEK_MAX_BATCHES] = {0};

	Assert(nbatches <= PEEK_MAX_BATCHES);
	handle.nbatches = nbatches;
	memcpy(handle.batches, batches, sizeof(dsa_pointer) * nbatches);
	merge_runs(cursors, open_key_cursors(&handle, hash, from, cursors), time, fn, arg);
}

/* A cursor per batch over its entries whose key hashes are in [lo, hi). */
static int
open_range_cursors(dsa_pointer *batches, int nbatches, uint32 lo, uint64 hi, Cursor *cursors)
{
	int			ncursors = 0;

	Assert(nbatches <= PEEK_MAX_BATCHES);
	for (int b = 0; b < nbatches; b++)
	{
		Cursor	   *c = &cursors[ncursors];

		c->batch = batch_get(batches[b]);
		c->pos = lower_bound(c->batch, lo, 0);
		c->end = hi > PG_UINT32_MAX ? c->batch->nentries :
			lower_bound(c->batch, (uint32) hi, c->pos);
		if (c->pos < c->end)
			ncursors++;
	}
	return ncursors;
}

/*
 * The rows of the batches whose key hashes are in [lo, hi) (hi up to
 * 2^32), in their hashes' order, each with its count at the time (not 0),
 * to fn: a lazy view's groups learned a range of hashes at a time
 * (dataflow/learn.c).
 */
void
walk_hash_range(dsa_pointer *batches, int nbatches, uint32 lo, uint64 hi, int64 time,
				WalkRowFn fn, void *arg)
{
	Cursor		cursors[PEEK_MAX_BATCHES];

	merge_runs(cursors, open_range_cursors(batches, nbatches, lo, hi, cursors), time, fn, arg);
}

/* How many entries the batches hold with key hashes in [lo, hi): no row read. */
int64
walk_hash_range_entries(dsa_pointer *batches, int nbatches, uint32 lo, uint64 hi)
{
	Cursor		cursors[PEEK_MAX_BATCHES];
	int			ncursors = open_range_cursors(batches, nbatches, lo, hi, cursors);
	int64		entries = 0;

	for (int i = 0; i < ncursors; i++)
		entries += cursors[i].end - cursors[i].pos;
	return entries;
}

/*
 * The counts at the time of some rows of the batches' key hash (their
 * images in length-then-bytes order, as a batch orders one hash's rows),
 * into counts: each row's updates at or before the time summed in every
 * batch, found by a bisection of the hash's entries by row image, each
 * from where the row before it was found.  A maintained view's group
 * whose round needs only the rows it updates (dataflow/arranged.c).
 */
void
walk_hash_row_counts(dsa_pointer *batches, int nbatches, uint32 hash, const Datum *rows,
					 int nrows, int64 time, int64 *counts)
{
	int128	   *sums = palloc0(sizeof(int128) * Max(1, nrows));

	for (int b = 0; b < nbatches; b++)
	{
		Batch	   *batch = batch_get(batches[b]);
		int64		bucket_lo;
		int64		end;
		int64		lo;

		batch_bucket(batch, hash, &bucket_lo, &end);
		lo = lower_bound(batch, hash, 0);
		for (int i = 0; i < nrows; i++)
		{
			int64		hi = end;

			while (lo < hi)
			{
				int64		mid = lo + (hi - lo) / 2;

				if (entry_cmp(batch, &batch->entries[mid], hash, rows[i]) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < end && entry_cmp(batch, &batch->entries[lo], hash, rows[i]) == 0; lo++)
				if (batch->entries[lo].time <= time)
					sums[i] += batch->entries[lo].diff;
		}
	}
	for (int i = 0; i < nrows; i++)
		counts[i] = row_count_value(sums[i]);
	pfree(sums);
}
