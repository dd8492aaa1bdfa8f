/*-------------------------------------------------------------------------
 *
 * rows.h
 *	  Row images and consolidation: rows of a collection are compared by
 *	  their binary image (as record_image_eq does), and updates are summed
 *	  per distinct row.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_ROWS_H
#define PEEK_ROWS_H

#include "pg_peek.h"

#include "access/tupdesc.h"
#include "utils/hsearch.h"

/* A distinct row and its summed multiplicity. */
typedef struct RowCount
{
	struct
	{
		const char *image;		/* the row's bytes, after a 4-byte header */
		uint32		len;
	}			key;
	int64		count;
} RowCount;

typedef struct RowCounts
{
	HTAB	   *table;
	MemoryContext cxt;
} RowCounts;

extern Datum row_normalize(Datum row);
extern RowCounts *row_counts_create(void);
extern void row_counts_add(RowCounts *counts, Datum row, int64 diff);
extern void row_counts_check_nonnegative(RowCounts *counts, Oid rowtype,
										 const char *collection, int64 time);
extern char *row_to_text(Oid rowtype, Datum row);
extern bool rows_match_table(TupleDesc table, TupleDesc row);

static inline Datum
row_count_datum(RowCount *rc)
{
	return PointerGetDatum(rc->key.image - VARHDRSZ);
}

#endif							/* PEEK_ROWS_H */
