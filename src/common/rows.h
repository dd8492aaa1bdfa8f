/*-------------------------------------------------------------------------
 *
 * rows.h
 *	  Row images and consolidation: rows of a collection are compared by
 *	  the images of their fields (as record_image_eq does), through one
 *	  canonical image per row, and updates are summed per distinct row.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_ROWS_H
#define PEEK_ROWS_H

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "common/int.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"

#include "common/ids.h"

/* A distinct row and its summed multiplicity. */
typedef struct RowCount
{
	struct
	{
		const char *image;		/* the row's bytes, after a 4-byte header */
		uint32		len;
	}			key;
	int128		count;		/* a sum of bigints never overflows here */
} RowCount;

typedef struct RowCounts
{
	HTAB	   *table;
	MemoryContext cxt;
	MemoryContext scratch;		/* per row */
	TupleDesc	desc;			/* rows are normalized with it */
	HeapTupleHeader template;	/* row_header_template(desc) */
} RowCounts;

extern void row_tuple(HeapTupleHeader td, HeapTupleData *tuple);
extern TupleDesc row_desc(Oid rowtype);
extern Datum row_normalize(TupleDesc desc, Datum row);
extern HeapTupleHeader row_header_template(TupleDesc desc);
extern Datum row_from_shard(TupleDesc desc, HeapTupleHeader template, Datum stored);
extern Datum row_canonical(TupleDesc desc, HeapTupleHeader template, Datum row);
extern uint32 row_hash(TupleDesc desc, Datum row);
extern bool row_desc_has_dropped(TupleDesc desc);
extern bool row_type_walk(Oid type, bool (*visit) (Oid type, void *arg), void *arg);
extern RowCounts *row_counts_create(Oid rowtype);
extern RowCount *row_counts_add(RowCounts *counts, Datum row, int64 diff);
extern RowCount *row_counts_find(RowCounts *counts, Datum row);
extern int64 row_count_value(int128 count);
/* Rows a walk has emitted into its result, and what bounds them. */
typedef struct RowEmitter
{
	Tuplestorestate *out;		/* row_emit's; unused by a stream */
	const char *name;			/* the peeked object, for messages */
	Oid			row_type;
	int64		time;
	int64		limit;			/* < 0: none */
	int64		emitted;
	Size		bytes;
} RowEmitter;

/* Room for a packed row's unpacked image (row_emit_tuple). */
typedef union RowImageBuffer
{
	HeapTupleHeaderData header;
	char		bytes[VARHDRSZ + VARATT_SHORT_MAX];
	int64		align;
} RowImageBuffer;

extern bool row_emitter_full(RowEmitter *e);
extern void row_emit_tuple(RowEmitter *e, Datum row, int64 count, RowImageBuffer *buf,
						   HeapTupleData *tuple);
extern void row_emit_check(RowEmitter *e, Datum row, int64 count);
extern bool row_emit_admit(RowEmitter *e, Size bytes);
extern int64 row_emit_admit_copies(RowEmitter *e, Size bytes, int64 copies);
extern Size row_emit_bytes(Datum row);
extern int64 row_emit_count(RowEmitter *e, const Datum *rows, const int64 *counts, int n);
extern void row_emit(RowEmitter *e, Datum row, int64 count);
extern char *row_to_text(Oid rowtype, Datum row);
extern bool rows_match_table(TupleDesc table, TupleDesc row, bool *added);

/* A sum only shown (row counts in views): it stops at bigint's bounds. */
static inline int64
row_add_saturating(int64 a, int64 b)
{
	int64		sum;

	if (pg_add_s64_overflow(a, b, &sum))
		return b > 0 ? PG_INT64_MAX : PG_INT64_MIN;
	return sum;
}

/*
 * The order of row images: by key hash, then length, then bytes.  Batches
 * are sorted by it; equal images (0) are the same row.
 */
static inline int
row_image_cmp(uint32 xhash, const char *x, uint32 xlen,
			  uint32 yhash, const char *y, uint32 ylen)
{
	if (xhash != yhash)
		return xhash < yhash ? -1 : 1;
	if (xlen != ylen)
		return xlen < ylen ? -1 : 1;
	return memcmp(x, y, xlen);
}

static inline Datum
row_count_datum(RowCount *rc)
{
	return PointerGetDatum(rc->key.image - VARHDRSZ);
}

#endif							/* PEEK_ROWS_H */
