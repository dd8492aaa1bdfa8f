/*-------------------------------------------------------------------------
 *
 * rows.c
 *	  Row images and consolidation.
 *
 *	  A collection's rows are composite datums.  Distinct rows are told apart
 *	  the way record_image_eq (*=) does, by the images of their fields: every
 *	  row is brought to one canonical image (row_normalize) where it enters
 *	  a shard, a consolidation or an arrangement, so that comparing images
 *	  compares fields, whatever header or storage the datum had.
 *	  Consolidation sums diffs per image.  row_type_walk visits what a
 *	  row type's values are made of (through the type caches).
 *
 *	  Must not read or write tables; callers feed it rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "common/rows.h"
#include "common/settings.h"

/* A tuple over a row's header, in place, for heap_getattr and the like. */
void
row_tuple(HeapTupleHeader td, HeapTupleData *tuple)
{
	tuple->t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&tuple->t_self);
	tuple->t_tableOid = InvalidOid;
	tuple->t_data = td;
}

/* The descriptor row_normalize forms rows of rowtype with: its current one. */
TupleDesc
row_desc(Oid rowtype)
{
	return lookup_rowtype_tupdesc_copy(rowtype, -1);
}

/*
 * Return the canonical image of a row, formed with desc (from row_desc):
 * the row's live fields, formed afresh.  Whatever header the datum carries
 * (a heap tuple's, a plpgsql variable's), however its fields are stored
 * (compressed, out of line, short headers) and whichever attributes it
 * predates (ALTER TYPE ... ADD ATTRIBUTE: they read as NULL), equal fields
 * give equal bytes.  Dropped attributes become NULL.
 */
Datum
row_normalize(TupleDesc desc, Datum row)
{
	HeapTupleHeader td = DatumGetHeapTupleHeader(row);
	HeapTupleData tuple;
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	HeapTuple	formed;
	Datum		result;

	row_tuple(td, &tuple);
	heap_deform_tuple(&tuple, desc, values, nulls);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			nulls[i] = true;
		if (nulls[i])
			continue;
		if (att->attlen == -1 &&
			(VARATT_IS_EXTERNAL(DatumGetPointer(values[i])) ||
			 VARATT_IS_COMPRESSED(DatumGetPointer(values[i]))))
			values[i] = PointerGetDatum(detoast_attr((struct varlena *) DatumGetPointer(values[i])));
	}
	formed = heap_form_tuple(desc, values, nulls);
	result = heap_copy_tuple_as_datum(formed, desc);
	heap_freetuple(formed);
	pfree(values);
	pfree(nulls);
	return result;
}

/*
 * The header row_normalize gives rows of desc (a row of NULLs): its
 * datum fields, ctid and flags are compared with a stored row's, which
 * carry the type and, on servers that version composite datums, the
 * type's version.  NULL for a type that lost attributes: a stored row may
 * hold a value where the image has a NULL now, so none is taken as stored.
 */
HeapTupleHeader
row_header_template(TupleDesc desc)
{
	Datum	   *values;
	bool	   *nulls;
	HeapTuple	formed;
	HeapTupleHeader template;

	if (row_desc_has_dropped(desc))
		return NULL;
	values = palloc0(sizeof(Datum) * Max(desc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	memset(nulls, true, sizeof(bool) * Max(desc->natts, 1));
	formed = heap_form_tuple(desc, values, nulls);
	template = DatumGetHeapTupleHeader(heap_copy_tuple_as_datum(formed, desc));
	heap_freetuple(formed);
	pfree(values);
	pfree(nulls);
	return template;
}

/* The flags heap_fill_tuple sets from a row's fields. */
#define ROW_FIELD_FLAGS (HEAP_HASNULL | HEAP_HASVARWIDTH | HEAP_HASEXTERNAL)

/*
 * Would row_normalize give this row's bytes back?  True for a row formed by
 * heap_form_tuple with desc's attributes whose fields are all inline and
 * uncompressed, with the header it writes (template, from
 * row_header_template): forming it afresh repeats the same bytes.  A row
 * copied from a table's tuple (0.1 stored such rows as they came) keeps
 * that tuple's ctid and flags, and one from before an ALTER TYPE another
 * type version or attribute count: neither is canonical.
 */
static bool
row_is_canonical(TupleDesc desc, HeapTupleHeader template, HeapTupleHeader td)
{
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;
	bool		canonical = true;
	bool		hasnull = (td->t_infomask & HEAP_HASNULL) != 0;

	if (td->t_choice.t_datum.datum_typmod != template->t_choice.t_datum.datum_typmod ||
		td->t_choice.t_datum.datum_typeid != template->t_choice.t_datum.datum_typeid ||
		memcmp(&td->t_ctid, &template->t_ctid, sizeof(ItemPointerData)) != 0 ||
		td->t_infomask2 != template->t_infomask2 ||
		(td->t_infomask & ~ROW_FIELD_FLAGS) != (template->t_infomask & ~ROW_FIELD_FLAGS) ||
		(td->t_infomask & HEAP_HASEXTERNAL) != 0 ||
		td->t_hoff != MAXALIGN(SizeofHeapTupleHeader + (hasnull ? BITMAPLEN(desc->natts) : 0)))
		return false;
	if (!(td->t_infomask & HEAP_HASVARWIDTH))
		return true;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	row_tuple(td, &tuple);
	heap_deform_tuple(&tuple, desc, values, nulls);
	for (int i = 0; i < desc->natts && canonical; i++)
	{
		struct varlena *field = (struct varlena *) DatumGetPointer(values[i]);

		if (!nulls[i] && TupleDescAttr(desc, i)->attlen == -1)
			canonical = !VARATT_IS_EXTERNAL(field) && !VARATT_IS_COMPRESSED(field);
	}
	pfree(values);
	pfree(nulls);
	return canonical;
}

/*
 * The canonical image of a row read from a shard, in the current memory
 * context.  Shard rows are normalized on the way in, so a copy of the
 * stored bytes usually is the image; a row from before an ALTER TYPE, or
 * one written by 0.1 (which stored rows as they came), is formed afresh.
 * Saves the forming, and the detoasting copy a short header costs, for
 * each of the million rows a hydration reads.  template is desc's
 * row_header_template (NULL: every row is formed afresh).
 */
Datum
row_from_shard(TupleDesc desc, HeapTupleHeader template, Datum stored)
{
	struct varlena *field = (struct varlena *) DatumGetPointer(stored);
	Size		len;
	struct varlena *copy;

	if (template == NULL || VARATT_IS_EXTERNAL(field) || VARATT_IS_COMPRESSED(field))
		return row_normalize(desc, stored);
	len = VARSIZE_ANY_EXHDR(field);
	copy = palloc(len + VARHDRSZ);
	SET_VARSIZE(copy, len + VARHDRSZ);
	memcpy(VARDATA(copy), VARDATA_ANY(field), len);
	return row_canonical(desc, template, PointerGetDatum(copy));
}

/*
 * The canonical image of a row that usually is one already (a row the
 * runtime or the decoder formed with heap_form_tuple): the row itself when
 * row_normalize would give its bytes back, else row_normalize's.  Saves
 * deforming and forming each row a shard appends.  template as for
 * row_from_shard.
 */
Datum
row_canonical(TupleDesc desc, HeapTupleHeader template, Datum row)
{
	struct varlena *field = (struct varlena *) DatumGetPointer(row);

	if (template != NULL && !VARATT_IS_EXTENDED(field) &&
		row_is_canonical(desc, template, (HeapTupleHeader) field))
		return row;
	return row_normalize(desc, row);
}

/*
 * A hash of a row's identity that a stored row keeps through ALTER TYPE
 * ... ADD ATTRIBUTE: the live, non-NULL fields' bytes with their attribute
 * numbers (a field added later reads as NULL and adds nothing).  Rows
 * with equal images (row_normalize) get equal hashes.  Dropping an
 * attribute changes the hash of rows that had a value there: callers
 * that look rows up by it check row_desc_has_dropped first.
 */
uint32
row_hash(TupleDesc desc, Datum row)
{
	HeapTupleData tuple;
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	uint32		h = 0;

	row_tuple(DatumGetHeapTupleHeader(row), &tuple);
	heap_deform_tuple(&tuple, desc, values, nulls);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		uint32		vh;

		if (att->attisdropped || nulls[i])
			continue;
		if (att->attlen == -1)
		{
			struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(values[i]));

			vh = hash_bytes((unsigned char *) VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
		}
		else if (att->attbyval)
			vh = hash_bytes((unsigned char *) &values[i], sizeof(Datum));
		else if (att->attlen == -2)
			vh = hash_bytes((unsigned char *) DatumGetPointer(values[i]),
							strlen(DatumGetCString(values[i])));
		else
			vh = hash_bytes((unsigned char *) DatumGetPointer(values[i]), att->attlen);
		h = hash_combine(h, hash_combine(hash_bytes_uint32((uint32) i), vh));
	}
	pfree(values);
	pfree(nulls);
	return h;
}

/* Has the row type lost attributes (stored row hashes may be stale)? */
bool
row_desc_has_dropped(TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attisdropped)
			return true;
	return false;
}

/*
 * Visit a type and each type its values are made of (a domain's base type,
 * an array's elements, a range's bounds, a multirange's ranges, a
 * composite type's attributes), however deep, each before its parts, until
 * a visit returns true; returns whether one did.  A composite type's
 * attributes are read after its visit (which may lock it).
 */
bool
row_type_walk(Oid type, bool (*visit) (Oid type, void *arg), void *arg)
{
	HeapTuple	tup;
	Form_pg_type form;
	Oid			part = InvalidOid;
	TupleDesc	desc;
	bool		found = false;

	if (visit(type, arg))
		return true;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	form = (Form_pg_type) GETSTRUCT(tup);
	if (form->typtype == TYPTYPE_DOMAIN)
		part = form->typbasetype;
	else if (IsTrueArrayType(form))
		part = form->typelem;
	else if (form->typtype == TYPTYPE_RANGE)
		part = get_range_subtype(type);
	else if (form->typtype == TYPTYPE_MULTIRANGE)
		part = get_multirange_range(type);
	ReleaseSysCache(tup);
	if (OidIsValid(part))
		return row_type_walk(part, visit, arg);
	if (!type_is_rowtype(type) || type == RECORDOID)
		return false;
	desc = lookup_rowtype_tupdesc(type, -1);
	for (int i = 0; i < desc->natts && !found; i++)
		found = !TupleDescAttr(desc, i)->attisdropped &&
			row_type_walk(TupleDescAttr(desc, i)->atttypid, visit, arg);
	ReleaseTupleDesc(desc);
	return found;
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

	return row_image_cmp(0, a->key.image, a->key.len, 0, b->key.image, b->key.len);
}

/* Consolidation of shard rows (row_from_shard) of rowtype. */
RowCounts *
row_counts_create(Oid rowtype)
{
	RowCounts  *counts = palloc(sizeof(RowCounts));
	HASHCTL		ctl;
	MemoryContext old;

	counts->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek row counts",
										ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(counts->cxt);
	counts->desc = row_desc(rowtype);
	counts->template = row_header_template(counts->desc);
	counts->scratch = AllocSetContextCreate(counts->cxt, "pg_peek row counts scratch",
											ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(old);
	ctl.keysize = sizeof(((RowCount *) 0)->key);
	ctl.entrysize = sizeof(RowCount);
	ctl.hash = row_image_hash;
	ctl.match = row_image_match;
	ctl.hcxt = counts->cxt;
	counts->table = hash_create("pg_peek row counts", 64, &ctl,
								HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	return counts;
}

/*
 * Add diff copies of row, by its canonical image (row_from_shard).  The copy
 * kept is a plain 4-byte-header datum, usable as a HeapTupleHeader.  Counts
 * are summed in 128 bits, so only a final count can be out of bigint's
 * range, whatever order the updates come in.  Returns the row's entry
 * (entries stay where they are while the table grows).
 */
RowCount *
row_counts_add(RowCounts *counts, Datum row, int64 diff)
{
	MemoryContext old = MemoryContextSwitchTo(counts->scratch);
	struct varlena *flat = (struct varlena *)
		DatumGetPointer(row_from_shard(counts->desc, counts->template, row));
	RowCount	probe;
	RowCount   *rc;
	bool		found;

	MemoryContextSwitchTo(old);
	probe.key.image = VARDATA(flat);
	probe.key.len = VARSIZE(flat) - VARHDRSZ;
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
	rc->count += diff;
	MemoryContextReset(counts->scratch);
	return rc;
}

/* The entry of a row, or NULL. */
RowCount *
row_counts_find(RowCounts *counts, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(counts->scratch);
	struct varlena *flat = (struct varlena *)
		DatumGetPointer(row_from_shard(counts->desc, counts->template, row));
	RowCount	probe;
	RowCount   *rc;

	MemoryContextSwitchTo(old);
	probe.key.image = VARDATA(flat);
	probe.key.len = VARSIZE(flat) - VARHDRSZ;
	rc = hash_search(counts->table, &probe, HASH_FIND, NULL);
	MemoryContextReset(counts->scratch);
	return rc;
}

/*
 * A row's summed multiplicity as a bigint; 22003 if it is out of range, the
 * same error from every peek.
 */
int64
row_count_value(int128 count)
{
	if (count > PG_INT64_MAX || count < PG_INT64_MIN)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("multiplicity of a row is out of range")));
	return (int64) count;
}

/*
 * A row whose multiplicity a walk finds negative is
 * invalid data, and fails the peek.
 */
void
row_emit_check(RowEmitter *e, Datum row, int64 count)
{
	if (count >= 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("row %s of \"%s\" has multiplicity " INT64_FORMAT " at time " INT64_FORMAT,
					row_to_text(e->row_type, row), e->name, count, e->time),
			 errdetail("More copies of the row were retracted than were inserted.")));
}

bool
row_emitter_full(RowEmitter *e)
{
	return e->limit >= 0 && e->emitted >= e->limit;
}

/*
 * The tuple of a row of a walk's result that counts count copies.  A
 * negative count fails the peek when the walk reaches it (a peek with a
 * limit reads no further than it needs).  The tuple
 * points into the row, into buf (a packed row, unpacked) or into a copy
 * palloc'd in the current memory context (a compressed or toasted one).
 */
void
row_emit_tuple(RowEmitter *e, Datum row, int64 count, RowImageBuffer *buf, HeapTupleData *tuple)
{
	struct varlena *stored = (struct varlena *) DatumGetPointer(row);

	row_emit_check(e, row, count);
	/* a shard's datum may be out of line, compressed or packed (126 bytes at most) */
	if (!VARATT_IS_EXTERNAL(stored) && VARATT_IS_SHORT(stored))
	{
		SET_VARSIZE(buf->bytes, VARSIZE_SHORT(stored) - VARHDRSZ_SHORT + VARHDRSZ);
		memcpy(VARDATA(buf->bytes), VARDATA_SHORT(stored), VARSIZE_SHORT(stored) - VARHDRSZ_SHORT);
		row_tuple(&buf->header, tuple);
	}
	else
		row_tuple(DatumGetHeapTupleHeader(row), tuple);
}

/*
 * Count up to copies more copies of a row of bytes bytes (its tuple's
 * t_len) into the result: how many the limit lets in (0 once it is met),
 * an error if they take the result past pg_peek.max_result_bytes, just as
 * counting them one at a time would.
 */
int64
row_emit_admit_copies(RowEmitter *e, Size bytes, int64 copies)
{
	Size		max_bytes = (Size) setting_max_result_kb * 1024;
	int64		admitted = copies;

	if (e->limit >= 0)
		admitted = Min(admitted, Max(e->limit - e->emitted, 0));
	if (admitted <= 0)
		return 0;
	if ((int128) e->bytes + (int128) admitted * bytes > (int128) max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("peek result of \"%s\" exceeds pg_peek.max_result_bytes (%d kB)",
						e->name, setting_max_result_kb),
				 errhint("Add a limit or a key to the peek, or raise pg_peek.max_result_bytes.")));
	e->bytes += admitted * bytes;
	e->emitted += admitted;
	return admitted;
}

/*
 * The length of the tuple row_emit_tuple makes of a walk's row, without
 * unpacking it: a packed or plain row's image is its own, a compressed or
 * toasted one's is found from its pointer.
 */
Size
row_emit_bytes(Datum row)
{
	struct varlena *stored = (struct varlena *) DatumGetPointer(row);

	if (VARATT_IS_EXTERNAL(stored) || VARATT_IS_COMPRESSED(stored))
		return toast_raw_datum_size(row);
	if (VARATT_IS_SHORT(stored))
		return VARSIZE_SHORT(stored) - VARHDRSZ_SHORT + VARHDRSZ;
	return VARSIZE(stored);
}

/*
 * Count n rows of a walk's result, each with its count of copies, as
 * row_emit_check and row_emit_admit_copies would one row after the other:
 * failing at the first negative multiplicity or where the bytes pass
 * pg_peek.max_result_bytes, stopping where the limit is met.  Returns the
 * copies counted.  Without a limit, the bytes are summed in one loop and
 * the row that passes the bound is admitted again to fail.
 */
int64
row_emit_count(RowEmitter *e, const Datum *rows, const int64 *counts, int n)
{
	int128		max_bytes = (int128) setting_max_result_kb * 1024;
	int128		bytes = e->bytes;
	int64		counted = 0;

	if (e->limit >= 0)
	{
		for (int i = 0; i < n; i++)
		{
			int64		admitted;

			row_emit_check(e, rows[i], counts[i]);
			admitted = row_emit_admit_copies(e, row_emit_bytes(rows[i]), counts[i]);
			counted += admitted;
			if (admitted < counts[i])
				break;			/* the limit */
		}
		return counted;
	}
	for (int i = 0; i < n; i++)
	{
		Size		row_bytes = row_emit_bytes(rows[i]);

		if (counts[i] < 0)
			row_emit_check(e, rows[i], counts[i]);
		if (bytes + (int128) counts[i] * row_bytes > max_bytes)
		{
			e->bytes = (Size) bytes;
			(void) row_emit_admit_copies(e, row_bytes, counts[i]);
		}
		bytes += (int128) counts[i] * row_bytes;
		/* at most max_result_bytes / a row's bytes in all: no overflow */
		counted += counts[i];
	}
	e->bytes = (Size) bytes;
	e->emitted += counted;
	return counted;
}

/* Count one more copy of a row: false once the limit is met. */
bool
row_emit_admit(RowEmitter *e, Size bytes)
{
	return row_emit_admit_copies(e, bytes, 1) == 1;
}

/*
 * Emit a row of a walk's result into its tuplestore as many times as it
 * counts, up to the limit and within pg_peek.max_result_bytes.
 */
void
row_emit(RowEmitter *e, Datum row, int64 count)
{
	RowImageBuffer buf;
	HeapTupleData tuple;

	row_emit_tuple(e, row, count, &buf, &tuple);
	for (int64 i = 0; i < count && row_emit_admit(e, tuple.t_len); i++)
		tuplestore_puttuple(e->out, &tuple);
	if ((Pointer) tuple.t_data != DatumGetPointer(row) && (Pointer) tuple.t_data != buf.bytes)
		pfree(tuple.t_data);
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
 * Does a table's row type still hold the columns of a source's row type
 * (the copy made when the source was created): its first live columns, in
 * order, of the same types?  Columns added since (ALTER TABLE ... ADD
 * COLUMN) come after them and are not captured: *added, if not NULL, says
 * whether there are any.  Dropping or retyping a captured column breaks the
 * match; renaming one does not.
 */
bool
rows_match_table(TupleDesc table, TupleDesc row, bool *added)
{
	int			j = 0;

	if (added != NULL)
		*added = false;
	for (int i = 0; i < table->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(table, i);

		if (att->attisdropped)
			continue;
		if (j == row->natts)
		{
			if (added != NULL)
				*added = true;
			return true;
		}
		if (att->atttypid != TupleDescAttr(row, j)->atttypid ||
			att->atttypmod != TupleDescAttr(row, j)->atttypmod)
			return false;
		j++;
	}
	return j == row->natts;
}
