/*-------------------------------------------------------------------------
 *
 * row_hash.c
 *	  peek.row_hash(record): the hash a shard's rows index is built on
 *	  (common/rows.c's row_hash), so that a row's base rows are found
 *	  without a scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "access/htup_details.h"
#include "utils/typcache.h"

#include "common/rows.h"

PG_FUNCTION_INFO_V1(peek_row_hash);

/*
 * peek.row_hash(record), as the shards' rows indexes call it; the same hash
 * as row_hash.
 */
Datum
peek_row_hash(PG_FUNCTION_ARGS)
{
	HeapTupleHeader td = PG_GETARG_HEAPTUPLEHEADER(0);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(td),
											  HeapTupleHeaderGetTypMod(td));
	uint32		h = row_hash(desc, PointerGetDatum(td));

	ReleaseTupleDesc(desc);
	PG_RETURN_INT32((int32) h);
}
