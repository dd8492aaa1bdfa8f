/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Immutable batches in DSA memory, and index keys.
 *
 *	  A batch is one DSA allocation: a header, entries sorted by (key hash,
 *	  row image, time), and the row images, one for each row however many
 *	  times it changed: its entries are next to each other and share it (a
 *	  view's group keeps every version within its retention, and a walk of
 *	  it reads the versions without their images).  Building a batch
 *	  advances times below the arrangement's since to it and consolidates
 *	  updates that share row and time, dropping those that cancel.  Merging
 *	  sorted batches is a linear merge that does the same (advancing a time
 *	  keeps the order), a step at a time and straight into its output
 *	  batch, so that its caller can spread it, the writing of the result
 *	  included, over many rounds.
 *
 *	  Batches are reference counted: the owning spine, the registry's
 *	  published list and every reader pin count.  The last unpin frees it,
 *	  whichever process that is, so the maintenance runtime never waits for
 *	  readers.  All batch memory is counted against pg_peek.max_memory.
 *
 *	  Keys: the key columns' default hash opclass gives the key hash; their
 *	  equality operator, with the column's collation, decides a match.
 *
 *	  Must not know about spines, publishing or peeks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "common/rows.h"
#include "common/settings.h"
#include "ipc/area.h"
#include "ipc/batch.h"

/* ---- keys ---- */

KeyInfo *
batch_keyinfo_build(Oid row_type, int nkeys, const AttrNumber *attnums)
{
	KeyInfo    *key = palloc0(sizeof(KeyInfo));
	TupleDesc	desc = lookup_rowtype_tupdesc(row_type, -1);

	key->row_type = row_type;
	key->nkeys = nkeys;
	for (int i = 0; i < nkeys; i++)
	{
		Form_pg_attribute att;
		TypeCacheEntry *tc;

		if (attnums[i] < 1 || attnums[i] > desc->natts ||
			TupleDescAttr(desc, attnums[i] - 1)->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column %d of type %s no longer exists",
							attnums[i], format_type_be(row_type))));
		att = TupleDescAttr(desc, attnums[i] - 1);
		key->attnums[i] = attnums[i];
		key->types[i] = att->atttypid;
		key->collations[i] = att->attcollation;
		tc = lookup_type_cache(att->atttypid, TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);
		if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->eq_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("key column \"%s\" of type %s has no default hash operator class",
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errhint("Index keys need a type with hash equality.")));
		fmgr_info_copy(&key->hash[i], &tc->hash_proc_finfo, CurrentMemoryContext);
		fmgr_info_copy(&key->eq[i], &tc->eq_opr_finfo, CurrentMemoryContext);
	}
	key->desc = CreateTupleDescCopy(desc);
	ReleaseTupleDesc(desc);
	return key;
}

uint32
batch_key_hash_values(KeyInfo *key, const Datum *values)
{
	uint32		hash = 0;

	for (int i = 0; i < key->nkeys; i++)
		hash = hash_combine(hash,
							DatumGetUInt32(FunctionCall1Coll(&key->hash[i], key->collations[i],
															 values[i])));
	return hash;
}

/* A row's key columns; false if any is NULL (such a row matches no key). */
static bool
row_key_values(KeyInfo *key, Datum row, Datum *values)
{
	HeapTupleHeader td = DatumGetHeapTupleHeader(row);
	HeapTupleData tuple;
	bool		isnull = false;

	row_tuple(td, &tuple);
	for (int i = 0; i < key->nkeys && !isnull; i++)
		values[i] = heap_getattr(&tuple, key->attnums[i], key->desc, &isnull);
	return !isnull;
}

/* The key hash of a row; rows with a NULL key column hash to 0. */
uint32
batch_key_hash_row(KeyInfo *key, Datum row)
{
	Datum		values[INDEX_MAX_KEYS];

	if (!row_key_values(key, row, values))
		return 0;
	return batch_key_hash_values(key, values);
}

/* Does the row's key equal values by the key columns' SQL equality? */
bool
batch_key_row_matches(KeyInfo *key, Datum row, const Datum *values)
{
	Datum		row_values[INDEX_MAX_KEYS];

	if (!row_key_values(key, row, row_values))
		return false;
	for (int i = 0; i < key->nkeys; i++)
		if (!DatumGetBool(FunctionCall2Coll(&key->eq[i], key->collations[i],
											row_values[i], values[i])))
			return false;
	return true;
}

/* ---- batches ---- */

static int
pending_update_cmp(const PendingUpdate *x, const PendingUpdate *y)
{
	int			c = row_image_cmp(x->keyhash, x->image, x->len, y->keyhash, y->image, y->len);

	if (c != 0)
		return c;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return 0;
}

/* The bytes of live batches, counted against pg_peek.max_memory. */
static pg_atomic_uint64 *arrangement_bytes = NULL;

Size
batch_shmem_size(void)
{
	return MAXALIGN(sizeof(pg_atomic_uint64));
}

/* Lay out the counter, once (the caller holds AddinShmemInitLock). */
void
batch_shmem_init(void)
{
	bool		found;

	arrangement_bytes = ShmemInitStruct(PEEK_EXTENSION " arrangement bytes", batch_shmem_size(), &found);
	if (!found)
		pg_atomic_init_u64(arrangement_bytes, 0);
}

uint64
batch_arrangement_bytes(void)
{
	return pg_atomic_read_u64(arrangement_bytes);
}

/* Count size against pg_peek.max_memory; false if it does not fit. */
static bool
reserve_memory(Size size)
{
	uint64		limit = (uint64) setting_max_memory_kb * 1024;
	uint64		used = pg_atomic_read_u64(arrangement_bytes);

	for (;;)
	{
		if (used + size > limit)
			return false;
		if (pg_atomic_compare_exchange_u64(arrangement_bytes, &used, used + size))
			return true;
	}
}

/* The bits of a bucket table for nentries: buckets of 8 to 16 on average. */
static int
bucket_bits_for(int64 nentries)
{
	int			bits = 0;

	if (nentries < BATCH_BUCKET_MIN)
		return 0;
	while (bits < 24 && ((int64) 16 << bits) <= nentries)
		bits++;
	return bits;
}

static uint32 *
batch_buckets(Batch *batch)
{
	return (uint32 *) ((char *) batch + batch->buckets_offset);
}

/*
 * Entry i, of key hash, is the next one written: the buckets up to its
 * hash's start there (and every earlier bucket not yet started is empty).
 * *next counts the buckets set.  Consolidation may take the last entry
 * back; the buckets that start at it stay right, since the entry written
 * in its place has no lower hash.
 */
static void
mark_buckets(Batch *batch, uint32 *next, int64 i, uint32 hash)
{
	uint32		p;

	if (batch->bucket_bits == 0)
		return;
	p = hash >> (32 - batch->bucket_bits);
	while (*next <= p)
		batch_buckets(batch)[(*next)++] = (uint32) i;
}

/* The buckets after the last entry's are empty: they start at the end. */
static void
finish_buckets(Batch *batch, uint32 *next)
{
	if (batch->bucket_bits == 0)
		return;
	while (*next <= ((uint32) 1 << batch->bucket_bits))
		batch_buckets(batch)[(*next)++] = (uint32) batch->nentries;
}

/* Bytes of a batch's header and entries, and its bucket table. */
static Size
batch_index_size(int64 nentries, int bucket_bits)
{
	Size		size = MAXALIGN(offsetof(Batch, entries) + sizeof(BatchEntry) * nentries);

	if (bucket_bits > 0)
		size += MAXALIGN(sizeof(uint32) * (((Size) 1 << bucket_bits) + 1));
	return size;
}

/*
 * Allocate a batch with room for nentries entries, their bucket table and
 * data_size bytes of row images, its header filled for that many but for
 * rows.  Returns InvalidDsaPointer if pg_peek.max_memory would be exceeded.
 */
static dsa_pointer
allocate_batch(int64 nentries, Size data_size, int64 lower, int64 upper, int64 since)
{
	int			bucket_bits = bucket_bits_for(nentries);
	Size		data_offset = batch_index_size(nentries, bucket_bits);
	Size		size = data_offset + data_size;
	dsa_pointer dp;
	Batch	   *batch;

	if (data_size / MAXIMUM_ALIGNOF > PG_UINT32_MAX || nentries > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arrangement batch exceeds the largest batch size")));
	if (!reserve_memory(size))
		return InvalidDsaPointer;
	dp = dsa_allocate_extended(area_dsa(), size, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(dp))
	{
		pg_atomic_fetch_sub_u64(arrangement_bytes, size);
		return InvalidDsaPointer;
	}
	batch = dsa_get_address(area_dsa(), dp);
	pg_atomic_init_u32(&batch->refcount, 1);
	batch->bucket_bits = bucket_bits;
	batch->nentries = nentries;
	batch->rows = 0;
	batch->lower = lower;
	batch->upper = upper;
	batch->since = since;
	batch->recent = 0;
	batch->size = size;
	batch->buckets_offset = MAXALIGN(offsetof(Batch, entries) + sizeof(BatchEntry) * nentries);
	batch->data_offset = data_offset;
	batch->data_size = data_size;
	return dp;
}

/*
 * Updates and images are read in sort order, scattered in memory: each is
 * asked for this many updates before it is read, so that the reads wait
 * on memory side by side rather than one after another.
 */
#define BATCH_PREFETCH_AHEAD	24
#if defined(__GNUC__)
#define batch_prefetch(p)	__builtin_prefetch(p)
#else
#define batch_prefetch(p)	((void) 0)
#endif

/*
 * An update's place in sort_updates' order: its key hash and position, and
 * its lead (sort_leads).
 */
typedef struct SortEntry
{
	uint64		hashpos;		/* key hash << 32 | position */
	uint64		lead;
} SortEntry;

/*
 * The radix sort's digits, least significant first: one of the leads
 * (digit 0, when sort_leads finds one), then the key hash's, of 11, 11 and
 * 10 bits.
 */
#define SORT_DIGITS		4
#define SORT_DIGIT_BITS	11
#define SORT_BUCKETS	(1 << SORT_DIGIT_BITS)

static inline int
sort_digit(const SortEntry *e, int d, int lead_shift)
{
	if (d == 0)
		return (int) ((e->lead >> lead_shift) & (SORT_BUCKETS - 1));
	return (int) ((e->hashpos >> (32 + (d - 1) * SORT_DIGIT_BITS)) & (SORT_BUCKETS - 1));
}

/*
 * Each update's lead: its image's length and the six bytes after the
 * prefix that every image shares (big-endian, zeros past its end), so that
 * two updates with one key hash and different leads order by their leads
 * as pending_update_cmp orders them (length, then bytes); 0, telling
 * nothing, for an image too long to say so.  Read in the updates' order,
 * as their images were packed: no comparison of a sort touches an image
 * then unless the leads tie.  Returns the shift of the lead's digit that
 * sort_updates sorts by (the SORT_DIGIT_BITS bits from its highest bit
 * that varies: all leads agree above it, so that they order as their
 * leads do where it differs), or -1 if a lead tells nothing or none varies.
 */
static int
sort_leads(PendingUpdate *updates, int64 n, SortEntry *entries)
{
	uint64		varying = 0;
	bool		telling = true;

	const char *first = n > 0 ? updates[0].image : NULL;
	uint32		prefix = n > 0 ? updates[0].len : 0;

	for (int64 i = 1; i < n; i++)
	{
		const PendingUpdate *u = &updates[i];

		if (u->len < prefix || memcmp(u->image, first, prefix) != 0)
		{
			uint32		k = 0;

			prefix = Min(prefix, u->len);
			while (k < prefix && u->image[k] == first[k])
				k++;
			prefix = k;
		}
	}
	for (int64 i = 0; i < n; i++)
	{
		const PendingUpdate *u = &updates[i];
		uint64		lead = u->len;

		for (uint32 k = prefix; k < prefix + 6; k++)
			lead = (lead << 8) | (k < u->len ? (unsigned char) u->image[k] : 0);
		entries[i].hashpos = ((uint64) u->keyhash << 32) | (uint64) i;
		entries[i].lead = u->len <= PG_UINT16_MAX ? lead : 0;
		telling &= entries[i].lead != 0;
		varying |= entries[i].lead ^ entries[0].lead;
	}
	if (!telling || varying == 0)
		return -1;
	return Max(pg_leftmost_one_pos64(varying) + 1 - SORT_DIGIT_BITS, 0);
}

static inline int
sort_entry_cmp(const SortEntry *x, const SortEntry *y, PendingUpdate *updates)
{
	if (x->lead != y->lead && x->lead != 0 && y->lead != 0)
		return x->lead < y->lead ? -1 : 1;
	return pending_update_cmp(&updates[(uint32) x->hashpos], &updates[(uint32) y->hashpos]);
}

/* An update's image length: its lead's top 16 bits, unless the lead tells nothing. */
static inline uint32
sort_entry_len(const SortEntry *x, PendingUpdate *updates)
{
	return x->lead != 0 ? (uint32) (x->lead >> 48) : updates[(uint32) x->hashpos].len;
}

/*
 * Are two updates' images one row's?  Their key hashes and leads tell most
 * apart without reading the images.
 */
static bool
sort_entry_same_image(const SortEntry *x, const SortEntry *y, PendingUpdate *updates)
{
	const PendingUpdate *u = &updates[(uint32) x->hashpos];
	const PendingUpdate *v = &updates[(uint32) y->hashpos];

	if ((x->hashpos >> 32) != (y->hashpos >> 32) ||
		(x->lead != y->lead && x->lead != 0 && y->lead != 0))
		return false;
	return row_image_cmp(u->keyhash, u->image, u->len, v->keyhash, v->image, v->len) == 0;
}

/* sort_run(entries, n, updates): a run's entries by sort_entry_cmp */
#define ST_SORT sort_run
#define ST_ELEMENT_TYPE SortEntry
#define ST_COMPARE(a, b, arg) sort_entry_cmp(a, b, arg)
#define ST_COMPARE_ARG_TYPE PendingUpdate
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The order of updates by pending_update_cmp: a radix sort on the key
 * hash and, below it, a digit of the leads, 11 bits per pass, then each
 * run they tie (a key's versions whose leads agree there, or a collision)
 * by the whole order, mostly by their leads.  Linear in n but for those
 * runs, where a comparison sort of the updates themselves spent most of a
 * hydration, and then a comparison of their images, scattered in memory
 * as the key's versions are; the lead's digit spares sorting a key's
 * versions, which mostly differ there.
 */
static SortEntry *
sort_updates(PendingUpdate *updates, int64 n)
{
	SortEntry  *order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SortEntry) * n);
	SortEntry  *spare = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(SortEntry) * n);
	int64	   *start = palloc0(sizeof(int64) * SORT_DIGITS * (SORT_BUCKETS + 1));
	int			lead_shift;
	int			first_digit;
	int64		run = 0;

	if (n > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arrangement batch exceeds the largest batch size")));
	lead_shift = sort_leads(updates, n, order);
	first_digit = lead_shift >= 0 ? 0 : 1;
	/* every digit's bucket sizes counted in one pass, then a pass per digit */
	for (int64 i = 0; i < n; i++)
		for (int d = first_digit; d < SORT_DIGITS; d++)
			start[d * (SORT_BUCKETS + 1) + sort_digit(&order[i], d, lead_shift) + 1]++;
	for (int d = first_digit; d < SORT_DIGITS; d++)
	{
		int64	   *digit_start = &start[d * (SORT_BUCKETS + 1)];
		SortEntry  *swap;

		for (int b = 0; b < SORT_BUCKETS; b++)
			digit_start[b + 1] += digit_start[b];
		for (int64 i = 0; i < n; i++)
			spare[digit_start[sort_digit(&order[i], d, lead_shift)]++] = order[i];
		swap = order;
		order = spare;
		spare = swap;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(start);
	pfree(spare);
	/* what the digits leave tied: runs of one hash (and lead digit) */
	for (int64 i = 1; i <= n; i++)
	{
		if (i < n && (order[i].hashpos >> 32) == (order[run].hashpos >> 32) &&
			(lead_shift < 0 ||
			 sort_digit(&order[i], 0, lead_shift) == sort_digit(&order[run], 0, lead_shift)))
			continue;
		if (i - run > 1)
			sort_run(&order[run], i - run, updates);
		run = i;
	}
	return order;
}

/*
 * Build a batch from updates (whose times this may advance; none with a
 * diff of 0): times below since advance to since, equal (row, time) pairs
 * consolidate, those that sum to 0 vanish.  Two updates whose diffs would
 * sum beyond bigint's range stay apart: the walk, which sums a row's
 * updates anyway, reports the overflow to the peek, as the persist walk
 * does, and the maintenance runtime never fails on it.  Returns
 * InvalidDsaPointer if pg_peek.max_memory would be exceeded.
 */
dsa_pointer
batch_build(PendingUpdate *updates, int64 n,
			int64 lower, int64 upper, int64 since)
{
	SortEntry  *order;
	bool	   *shares;
	int64		out = 0;
	Size		data_size = 0;
	dsa_pointer dp;
	Batch	   *batch;
	char	   *data;
	Size		offset = 0;
	uint32		next_bucket = 0;
	bool		last_summed = false;

	for (int64 i = 0; i < n; i++)
		if (updates[i].time < since)
			updates[i].time = since;
	order = sort_updates(updates, n);

	/*
	 * consolidate: order[0 .. out) keeps one update per (row, time), whose
	 * images take data_size bytes, one for each run of a row's entries
	 * (shares[i]: entry i is of entry i - 1's row).  No update comes with
	 * a diff of 0 (arrange_update drops them): only a kept one that others
	 * were summed into (last_summed) may have come to 0.  So, the leads
	 * giving most lengths, most updates are not read here.
	 */
	shares = palloc(sizeof(bool) * Max(n, 1));
	for (int64 i = 0; i < n; i++)
	{
		bool		same = false;

		CHECK_FOR_INTERRUPTS();
		if (out > 0)
		{
			same = sort_entry_same_image(&order[out - 1], &order[i], updates);
			if (same)
			{
				PendingUpdate *last = &updates[(uint32) order[out - 1].hashpos];
				PendingUpdate *u = &updates[(uint32) order[i].hashpos];
				int64		sum;

				if (last->time == u->time && !pg_add_s64_overflow(last->diff, u->diff, &sum))
				{
					last->diff = sum;
					last_summed = true;
					continue;
				}
			}
			if (last_summed && updates[(uint32) order[out - 1].hashpos].diff == 0)
			{
				out--;
				if (!shares[out])
					data_size -= MAXALIGN(sort_entry_len(&order[out], updates) + VARHDRSZ);
				same = out > 0 && sort_entry_same_image(&order[out - 1], &order[i], updates);
			}
		}
		last_summed = false;
		shares[out] = same;
		if (!same)
			data_size += MAXALIGN(sort_entry_len(&order[i], updates) + VARHDRSZ);
		order[out++] = order[i];
	}
	if (last_summed && updates[(uint32) order[out - 1].hashpos].diff == 0)
	{
		out--;
		if (!shares[out])
			data_size -= MAXALIGN(sort_entry_len(&order[out], updates) + VARHDRSZ);
	}

	dp = allocate_batch(out, data_size, lower, upper, since);
	if (!DsaPointerIsValid(dp))
	{
		pfree(order);
		pfree(shares);
		return InvalidDsaPointer;
	}

	batch = batch_get(dp);
	data = batch_data(batch);
	for (int64 i = 0; i < out; i++)
	{
		PendingUpdate *u = &updates[(uint32) order[i].hashpos];
		BatchEntry *e = &batch->entries[i];

		if (i + 2 * BATCH_PREFETCH_AHEAD < out)
			batch_prefetch(&updates[(uint32) order[i + 2 * BATCH_PREFETCH_AHEAD].hashpos]);
		if (i + BATCH_PREFETCH_AHEAD < out)
			batch_prefetch(updates[(uint32) order[i + BATCH_PREFETCH_AHEAD].hashpos].image);
		mark_buckets(batch, &next_bucket, i, u->keyhash);
		e->keyhash = u->keyhash;
		e->time = u->time;
		e->diff = u->diff;
		batch->rows = row_add_saturating(batch->rows, e->diff);
		if (e->time > since)
			batch->recent++;
		if (shares[i])
		{
			e->offset = e[-1].offset;
			continue;
		}
		e->offset = (uint32) (offset / MAXIMUM_ALIGNOF);
		SET_VARSIZE(data + offset, u->len + VARHDRSZ);
		memcpy(VARDATA(data + offset), u->image, u->len);
		offset += MAXALIGN(u->len + VARHDRSZ);
	}
	finish_buckets(batch, &next_bucket);
	pfree(order);
	pfree(shares);
	return dp;
}

/* ---- merges ---- */

/*
 * Start merging inputs (one or two batches, pinned by the caller until the
 * merge is finished or abandoned) at since.  With one input the merge
 * rewrites it at a later since, or without slack.  Returns NULL if the
 * output would exceed pg_peek.max_memory.
 */
BatchMerge *
batch_merge_begin(dsa_pointer *inputs, int ninputs, int64 since)
{
	BatchMerge *merge;
	int64		nentries = 0;
	Size		data_size = 0;
	int64		lower = PG_INT64_MAX;
	int64		upper = 0;
	dsa_pointer output;

	Assert(ninputs >= 1 && ninputs <= 2);
	for (int i = 0; i < ninputs; i++)
	{
		Batch	   *batch = batch_get(inputs[i]);

		nentries += batch->nentries;
		data_size += batch->data_size;
		lower = Min(lower, batch->lower);
		upper = Max(upper, batch->upper);
	}
	output = allocate_batch(nentries, data_size, lower, upper, since);
	if (!DsaPointerIsValid(output))
		return NULL;
	merge = MemoryContextAllocZero(TopMemoryContext, sizeof(BatchMerge));
	merge->ninputs = ninputs;
	memcpy(merge->inputs, inputs, sizeof(dsa_pointer) * ninputs);
	merge->since = since;
	merge->output = output;
	return merge;
}

/* The order of pending_update_cmp, between two batches' entries. */
static int
entry_cmp(const char *x, BatchEntry *ex, int64 xtime, const char *y, BatchEntry *ey, int64 ytime)
{
	int			c = row_image_cmp(ex->keyhash, VARDATA(x), VARSIZE(x) - VARHDRSZ,
								  ey->keyhash, VARDATA(y), VARSIZE(y) - VARHDRSZ);

	if (c != 0)
		return c;
	if (xtime != ytime)
		return xtime < ytime ? -1 : 1;
	return 0;
}

/*
 * Append one input entry (its time advanced to the since) to the output,
 * consolidating it with the last output entry of the same row and time;
 * an entry that sums to zero vanishes.  An entry of the last one's row
 * shares its image.
 */
static void
merge_emit(BatchMerge *merge, Batch *out, Batch *batch, BatchEntry *e)
{
	char	   *image = DatumGetPointer(batch_row(batch, e));
	int64		time = Max(e->time, merge->since);
	BatchEntry *last = merge->nentries > 0 ? &out->entries[merge->nentries - 1] : NULL;
	bool		same_row = false;
	BatchEntry *next;

	if (last != NULL)
	{
		char	   *last_image = DatumGetPointer(batch_row(out, last));
		int64		sum;

		same_row = row_image_cmp(last->keyhash, VARDATA(last_image), VARSIZE(last_image) - VARHDRSZ,
								 e->keyhash, VARDATA(image), VARSIZE(image) - VARHDRSZ) == 0;
		if (same_row && last->time == time &&
			!pg_add_s64_overflow(last->diff, e->diff, &sum))
		{
			last->diff = sum;
			if (sum == 0)
			{
				/* its image is the last one written, unless it shared it */
				if (merge->nentries < 2 || last[-1].offset != last->offset)
					merge->data_used -= MAXALIGN(VARSIZE(last_image));
				merge->nentries--;
				if (last->time > merge->since)
					out->recent--;
			}
			return;
		}
	}
	mark_buckets(out, &merge->next_bucket, merge->nentries, e->keyhash);
	next = &out->entries[merge->nentries++];
	next->keyhash = e->keyhash;
	next->time = time;
	next->diff = e->diff;
	if (time > merge->since)
		out->recent++;
	if (same_row)
	{
		next->offset = last->offset;
		return;
	}
	next->offset = (uint32) (merge->data_used / MAXIMUM_ALIGNOF);
	memcpy(batch_data(out) + merge->data_used, image, VARSIZE(image));
	merge->data_used += MAXALIGN(VARSIZE(image));
}

/*
 * Advance the merge by up to *fuel input entries, taking what it uses from
 * *fuel.  Returns true once every input entry is merged.
 */
bool
batch_merge_step(BatchMerge *merge, int64 *fuel)
{
	Batch	   *in[2];
	Batch	   *out = batch_get(merge->output);

	for (int i = 0; i < merge->ninputs; i++)
		in[i] = batch_get(merge->inputs[i]);
	while (*fuel > 0)
	{
		int			next = -1;

		for (int i = 0; i < merge->ninputs; i++)
		{
			BatchEntry *e;

			if (merge->pos[i] >= in[i]->nentries)
				continue;
			e = &in[i]->entries[merge->pos[i]];
			if (next < 0)
				next = i;
			else
			{
				BatchEntry *n = &in[next]->entries[merge->pos[next]];

				if (entry_cmp(DatumGetPointer(batch_row(in[i], e)), e,
							  Max(e->time, merge->since),
							  DatumGetPointer(batch_row(in[next], n)), n,
							  Max(n->time, merge->since)) < 0)
					next = i;
			}
		}
		if (next < 0)
			return true;
		merge_emit(merge, out, in[next], &in[next]->entries[merge->pos[next]++]);
		if (--(*fuel) % 4096 == 0)
			CHECK_FOR_INTERRUPTS();
	}
	for (int i = 0; i < merge->ninputs; i++)
		if (merge->pos[i] < in[i]->nentries)
			return false;
	return true;
}

/*
 * The merged batch of a complete merge, its caller's reference; the merge
 * is freed.  What consolidation removed stays allocated (batch_has_slack).
 */
dsa_pointer
batch_merge_finish(BatchMerge *merge)
{
	Batch	   *out = batch_get(merge->output);
	dsa_pointer dp = merge->output;

	out->nentries = merge->nentries;
	out->data_size = merge->data_used;
	finish_buckets(out, &merge->next_bucket);
	/* the sum of the diffs, which merging keeps */
	for (int i = 0; i < merge->ninputs; i++)
		out->rows = row_add_saturating(out->rows, batch_get(merge->inputs[i])->rows);
	pfree(merge);
	return dp;
}

/* Drop a merge and its unfinished output. */
void
batch_merge_abandon(BatchMerge *merge)
{
	batch_unpin(merge->output);
	pfree(merge);
}

/*
 * Does the batch (a merge's) keep more than a quarter of its allocation
 * unused?  Rewriting it (a one-input merge) gives the memory back.
 */
bool
batch_has_slack(dsa_pointer dp)
{
	Batch	   *batch = batch_get(dp);
	Size		used = batch_index_size(batch->nentries, bucket_bits_for(batch->nentries)) +
		batch->data_size;

	return used < batch->size - batch->size / 4;
}

Batch *
batch_get(dsa_pointer dp)
{
	return (Batch *) dsa_get_address(area_dsa(), dp);
}

void
batch_pin(dsa_pointer dp)
{
	pg_atomic_fetch_add_u32(&batch_get(dp)->refcount, 1);
}

/* Drop one reference; the last one frees the batch and its memory. */
void
batch_unpin(dsa_pointer dp)
{
	Batch	   *batch = batch_get(dp);
	uint32		pins = pg_atomic_fetch_sub_u32(&batch->refcount, 1);

	if (pins == 0)
		elog(ERROR, "pg_peek batch unpinned more often than pinned");
	if (pins == 1)
	{
		pg_atomic_fetch_sub_u64(arrangement_bytes, batch->size);
		dsa_free(area_dsa(), dp);
	}
}
