/*-------------------------------------------------------------------------
 *
 * rows.c
 *	  Row images and consolidation.
 *
 *	  A collection's rows are composite datums.  Distinct rows are told apart
 *	  by their binary image, the way record_image_eq (*=) does; to make the
 *	  image canonical, rows are normalized when written: fields stored
 *	  compressed or out of line are expanded, so equal values always give
 *	  equal bytes.  Consolidation sums diffs per image.
 *
 *	  Must not read or write tables; callers feed it rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "rows.h"

/*
 * Return a canonical flat image of a composite datum: no compressed or
 * external fields.  Rows that are already canonical are returned detoasted
 * but otherwise untouched.
 */
Datum
row_normalize(Datum row)
{
	HeapTupleHeader td = DatumGetHeapTupleHeader(row);
	TupleDesc	desc;
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;
	bool		changed = false;
	Datum		result = PointerGetDatum(td);

	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(td), HeapTupleHeaderGetTypMod(td));
	tuple.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = td;

	if (HeapTupleHasVarWidth(&tuple))
	{
		values = palloc(sizeof(Datum) * desc->natts);
		nulls = palloc(sizeof(bool) * desc->natts);
		heap_deform_tuple(&tuple, desc, values, nulls);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped || nulls[i] || att->attlen != -1)
				continue;
			if (VARATT_IS_EXTERNAL(DatumGetPointer(values[i])) ||
				VARATT_IS_COMPRESSED(DatumGetPointer(values[i])))
			{
				values[i] = PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(values[i])));
				changed = true;
			}
		}
		if (changed)
		{
			HeapTuple	formed = heap_form_tuple(desc, values, nulls);

			result = heap_copy_tuple_as_datum(formed, desc);
		}
	}
	ReleaseTupleDesc(desc);
	return result;
}

static uint32
row_image_hash(const void *key, Size keysize)
{
	const RowCount *rc = key;

	return DatumGetUInt32(hash_any((const unsigned char *) rc->key.image, rc->key.len));
}

static int
row_image_match(const void *key1, const void *key2, Size keysize)
{
	const RowCount *a = key1;
	const RowCount *b = key2;

	if (a->key.len != b->key.len)
		return 1;
	return memcmp(a->key.image, b->key.image, a->key.len);
}

RowCounts *
row_counts_create(void)
{
	RowCounts  *counts = palloc(sizeof(RowCounts));
	HASHCTL		ctl;

	counts->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek row counts",
										ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(((RowCount *) 0)->key);
	ctl.entrysize = sizeof(RowCount);
	ctl.hash = row_image_hash;
	ctl.match = row_image_match;
	ctl.hcxt = counts->cxt;
	counts->table = hash_create("pg_peek row counts", 1024, &ctl,
								HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	return counts;
}

/*
 * Add diff copies of row (a possibly toasted composite datum).  The key is
 * the row's bytes without the varlena header, whose form (short or not)
 * depends on how the row was stored; the copy kept is a plain 4-byte-header
 * datum, usable as a HeapTupleHeader.
 */
void
row_counts_add(RowCounts *counts, Datum row, int64 diff)
{
	struct varlena *flat = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(row));
	RowCount	probe;
	RowCount   *rc;
	bool		found;

	probe.key.image = VARDATA_ANY(flat);
	probe.key.len = VARSIZE_ANY_EXHDR(flat);
	rc = hash_search(counts->table, &probe, HASH_ENTER, &found);
	if (!found)
	{
		char	   *copy = MemoryContextAlloc(counts->cxt, probe.key.len + VARHDRSZ);

		SET_VARSIZE(copy, probe.key.len + VARHDRSZ);
		memcpy(VARDATA(copy), probe.key.image, probe.key.len);
		rc->key.image = VARDATA(copy);
		rc->key.len = probe.key.len;
		rc->count = 0;
	}
	if (pg_add_s64_overflow(rc->count, diff, &rc->count))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("multiplicity of a row is out of range")));
	if ((Pointer) flat != DatumGetPointer(row))
		pfree(flat);
}

/* DESIGN §3 rule 5: a negative multiplicity is invalid data. */
void
row_counts_check_nonnegative(RowCounts *counts, Oid rowtype, const char *collection,
							 int64 time)
{
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	hash_seq_init(&status, counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		if (rc->count >= 0)
			continue;
		hash_seq_term(&status);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("row %s of \"%s\" has multiplicity " INT64_FORMAT " at time " INT64_FORMAT,
						row_to_text(rowtype, row_count_datum(rc)), collection, rc->count, time),
				 errdetail("More copies of the row were retracted than were inserted.")));
	}
}

char *
row_to_text(Oid rowtype, Datum row)
{
	Oid			output;
	bool		varlena;

	getTypeOutputInfo(rowtype, &output, &varlena);
	return OidOutputFunctionCall(output, row);
}

/*
 * Does a table's row type have exactly the columns of a source's row type
 * (the copy made when the source was created): its live columns, in order,
 * of the same types?  An ALTER TABLE that adds, drops or retypes a column
 * breaks the match; renaming one does not.
 */
bool
rows_match_table(TupleDesc table, TupleDesc row)
{
	int			j = 0;

	for (int i = 0; i < table->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(table, i);

		if (att->attisdropped)
			continue;
		if (j >= row->natts ||
			att->atttypid != TupleDescAttr(row, j)->atttypid ||
			att->atttypmod != TupleDescAttr(row, j)->atttypmod)
			return false;
		j++;
	}
	return j == row->natts;
}
