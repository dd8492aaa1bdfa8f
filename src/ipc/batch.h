/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  Immutable batches of (row, time, diff) in DSA memory, sorted by key
 *	  hash and with a bucket table of the hashes, and the index keys they
 *	  are sorted by.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_BATCH_H
#define PEEK_BATCH_H

#include "access/attnum.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "port/atomics.h"
#include "utils/dsa.h"

#include "common/ids.h"

/* Most batches an arrangement has (geometric merging keeps far fewer). */
#define PEEK_MAX_BATCHES		64

/*
 * The key columns of an index over a collection's row type: their hash
 * (default hash opclass) and equality functions, with the columns'
 * collations, so that keys compare by SQL equality.
 */
typedef struct KeyInfo
{
	Oid			row_type;
	TupleDesc	desc;			/* the row type's, to read key columns */
	int			nkeys;
	AttrNumber	attnums[INDEX_MAX_KEYS];
	Oid			types[INDEX_MAX_KEYS];
	Oid			collations[INDEX_MAX_KEYS];
	FmgrInfo	hash[INDEX_MAX_KEYS];
	FmgrInfo	eq[INDEX_MAX_KEYS];
} KeyInfo;

extern Size batch_shmem_size(void);
extern void batch_shmem_init(void);
extern uint64 batch_arrangement_bytes(void);
extern KeyInfo *batch_keyinfo_build(Oid row_type, int nkeys, const AttrNumber *attnums);
extern uint32 batch_key_hash_values(KeyInfo *key, const Datum *values);
extern uint32 batch_key_hash_row(KeyInfo *key, Datum row);
extern bool batch_key_row_matches(KeyInfo *key, Datum row, const Datum *values);

/*
 * One update, 24 bytes.  Entries of a batch are sorted by (keyhash, row
 * image, time) and consolidated: no two share row and time (unless their
 * diffs would sum beyond bigint's range), none has diff 0.  The row image (a composite datum with a 4-byte header, which gives
 * its length) lives in the batch's data area, at offset MAXALIGN units.
 * The entries of one row (its times, next to each other) share one image:
 * two entries of a batch are of one row exactly when their offsets are
 * equal, which a walk reads without reading the images.
 */
typedef struct BatchEntry
{
	uint32		keyhash;
	uint32		offset;			/* in MAXIMUM_ALIGNOF units */
	int64		time;
	int64		diff;
} BatchEntry;

/*
 * A batch of BATCH_BUCKET_MIN entries or more has a bucket table: for each
 * value p of its key hashes' top bucket_bits bits, buckets[p] is the first
 * entry whose hash's top bits are p or more (buckets[1 << bucket_bits] is
 * the entry count).  A key lookup reads one bucket (about 8 to 16 entries,
 * a cache line or few) after one read of the table, where a search of a
 * big batch takes a cache and TLB miss per probe.
 */
#define BATCH_BUCKET_MIN		64

typedef struct Batch
{
	/*
	 * Spine, published list, reader pins.  On a cache line of its own: every
	 * key lookup pins and unpins the batch, and would otherwise take the
	 * line of the fields below from the other readers' caches each time.
	 */
	pg_atomic_uint32 refcount;
	char		refcount_line[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint32)];
	int			bucket_bits;	/* 0: no bucket table */
	int64		nentries;
	int64		rows;			/* sum of diffs: the rows it adds */
	int64		lower;			/* times of its updates: [lower, upper) */
	int64		upper;
	int64		since;			/* times below since were advanced to it */
	int64		recent;			/* entries at times after since: all that a
								 * rewrite at a later since may consolidate */
	Size		size;			/* bytes of this allocation */
	Size		buckets_offset; /* where the bucket table starts */
	Size		data_offset;	/* where the row images start */
	Size		data_size;		/* bytes of row images */
	BatchEntry	entries[FLEXIBLE_ARRAY_MEMBER];
	/* then the bucket table, then the row images (a merge's batch may have room to spare) */
} Batch;

/*
 * The entries [*lo, *hi) that hold every entry of the key hash: its bucket,
 * or all of them in a batch without a table.
 */
static inline void
batch_bucket(Batch *batch, uint32 hash, int64 *lo, int64 *hi)
{
	uint32	   *buckets;
	uint32		p;

	if (batch->bucket_bits == 0)
	{
		*lo = 0;
		*hi = batch->nentries;
		return;
	}
	buckets = (uint32 *) ((char *) batch + batch->buckets_offset);
	p = hash >> (32 - batch->bucket_bits);
	*lo = buckets[p];
	*hi = buckets[p + 1];
}

static inline char *
batch_data(Batch *batch)
{
	return (char *) batch + batch->data_offset;
}

static inline Datum
batch_row(Batch *batch, BatchEntry *entry)
{
	return PointerGetDatum(batch_data(batch) + (Size) entry->offset * MAXIMUM_ALIGNOF);
}

/* The row image's length, its 4-byte header included. */
static inline uint32
batch_row_len(Batch *batch, BatchEntry *entry)
{
	return VARSIZE(DatumGetPointer(batch_row(batch, entry)));
}

/* An update on its way into a batch (backend-local memory). */
typedef struct PendingUpdate
{
	uint32		keyhash;
	uint32		len;			/* image length, header excluded */
	const char *image;			/* row bytes after a 4-byte header */
	int64		time;
	int64		diff;
} PendingUpdate;

/*
 * A merge in progress: a linear merge of one or two sorted batches (pinned
 * by the caller for its life) at a since, done a step at a time.  It writes
 * straight into its output batch, allocated at the start for the inputs'
 * sizes (consolidation only shrinks), so that no step copies the whole
 * result and each step touches new memory only in proportion to its work.
 * The output is unpublished until the merge completes; whoever drops the
 * merge must abandon it, which frees the output.
 */
typedef struct BatchMerge
{
	int			ninputs;
	dsa_pointer inputs[2];
	int64		pos[2];
	int64		since;
	dsa_pointer output;
	int64		nentries;		/* written to the output so far */
	uint32		next_bucket;	/* the output's buckets set so far */
	Size		data_used;
} BatchMerge;

extern dsa_pointer batch_build(PendingUpdate *updates, int64 n, int64 lower, int64 upper, int64 since);
extern BatchMerge *batch_merge_begin(dsa_pointer *inputs, int ninputs, int64 since);
extern bool batch_merge_step(BatchMerge *merge, int64 *fuel);
extern dsa_pointer batch_merge_finish(BatchMerge *merge);
extern void batch_merge_abandon(BatchMerge *merge);
extern bool batch_has_slack(dsa_pointer dp);
extern Batch *batch_get(dsa_pointer dp);
extern void batch_pin(dsa_pointer dp);
extern void batch_unpin(dsa_pointer dp);

#endif							/* PEEK_BATCH_H */
