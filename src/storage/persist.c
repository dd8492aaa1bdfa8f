/*-------------------------------------------------------------------------
 *
 * persist.c
 *	  Persist shards (DESIGN §1, §2, §6): each collection's updates live in
 *	  an ordinary table peek.shard_<n> (time bigint, diff bigint, data <row>),
 *	  so they are WAL-logged, transactional and crash-safe.  Appends go
 *	  straight through the table AM in the caller's transaction, each row
 *	  as its canonical image (rows.c), so that a hydration can take rows
 *	  as stored (row_from_shard).  Every read is a table or index scan.
 *
 *	  The collection's *base* is its history consolidated at the durable
 *	  since: one row per distinct row with its count, stored at time
 *	  BASE_TIME (-1, below every time a write gets, so that writers never
 *	  touch the base's indexes).  The rows after it are the *recent*
 *	  updates.  Three indexes serve the reads: on time (the recent rows), on
 *	  peek.row_hash(data) where time < 0 (a row's base rows) and on time
 *	  where diff <= 0 and time < 0 (the base rows that cannot be read alone:
 *	  negative counts, and a row whose count leaves bigint's range, kept in
 *	  parts with a zero row).  A
 *	  walk reads the recent rows up to its time, resolves the rows that may
 *	  be negative, then streams the base adjusting those rows and stops at
 *	  the limit.  Compaction folds the recent rows up to since into the base
 *	  row by row, in the runtime's transaction, without a lock a writer
 *	  waits for; the caller raises the durable since in that transaction.
 *	  A shard depends on its row type; one dropped with it (DROP TYPE ...
 *	  CASCADE) is reported to the maintenance runtime, which fails the
 *	  collection.
 *
 *	  Must not decide readiness or holds: callers run under a peek's hold
 *	  (walk) or the maintenance runtime's since (compaction).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "storage/catalog.h"
#include "ipc/notify.h"
#include "storage/persist.h"
#include "common/rows.h"
#include "common/spi.h"

#define SHARD_TIME		1
#define SHARD_DIFF		2
#define SHARD_DATA		3

/* Where base rows are stored: below every time, and so below every since. */
#define BASE_TIME		INT64CONST(-1)

static void
run_ddl(const char *query)
{
	SavedUser	saved;

	spi_connect_as_owner(&saved);
	spi_check(SPI_execute(query, false, 0), SPI_OK_UTILITY, query);
	spi_finish_as_owner(&saved);
}

/*
 * Create the shard table of a new collection; returns its OID.  The shard
 * depends on its row type: DROP TYPE is refused, and DROP TYPE ... CASCADE
 * drops the shard, which fails the collection (see shard_drop_hook).  Its
 * own row type may not be used by anyone else, so that no other role can
 * make a drop of the collection wait for or depend on theirs.
 */
Oid
persist_create_shard(int32 seq, Oid row_type)
{
	char		relname[NAMEDATALEN];
	Oid			shard;
	Oid			record = RECORDOID;

	snprintf(relname, sizeof(relname), "shard_%d", seq);
	run_ddl(psprintf("CREATE TABLE peek.%s (time bigint NOT NULL, diff bigint NOT NULL, data %s NOT NULL)",
					 relname, format_type_be_qualified(row_type)));
	/* indexes follow seals by reading the newly sealed times */
	run_ddl(psprintf("CREATE INDEX ON peek.%s (time)", relname));
	/*
	 * The base's indexes (see ShardBase), on the base rows alone: a write
	 * (at a time >= 0) adds nothing to them.  0.1's SQL has no row_hash.
	 */
	if (OidIsValid(LookupFuncName(list_make2(makeString("peek"), makeString("row_hash")),
								  1, &record, true)))
	{
		run_ddl(psprintf("CREATE INDEX %s_rows ON peek.%s (peek.row_hash(data))"
						 " WHERE time OPERATOR(pg_catalog.<) 0", relname, relname));
		run_ddl(psprintf("CREATE INDEX %s_flagged ON peek.%s (time)"
						 " WHERE diff OPERATOR(pg_catalog.<=) 0 AND time OPERATOR(pg_catalog.<) 0",
						 relname, relname));
	}
	shard = get_relname_relid(relname, get_namespace_oid("peek", false));
	persist_claim_shard(shard, row_type);
	return shard;
}

/*
 * What a shard has besides its table, which pg_dump does not keep: its
 * dependency on its row type and its own row type's privileges.  For a new
 * shard and for a restored one.
 */
void
persist_claim_shard(Oid shard, Oid row_type)
{
	ObjectAddress rel;
	ObjectAddress type;

	run_ddl(psprintf("REVOKE USAGE ON TYPE %s FROM PUBLIC",
					 format_type_be_qualified(get_rel_type_id(shard))));
	ObjectAddressSet(rel, RelationRelationId, shard);
	ObjectAddressSet(type, TypeRelationId, row_type);
	recordDependencyOn(&rel, &type, DEPENDENCY_NORMAL);
}

/*
 * Raise if a collection's shard is gone though its catalog row is not:
 * dropped with its row type (DROP TYPE ... CASCADE).  Otherwise the shard
 * cannot be dropped until the end of the transaction.
 */
void
persist_check_shard(Oid shard, Oid row_type)
{
	if (persist_lock_shard(shard))
		return;
	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(row_type)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("its row type (OID %u) was dropped, and its shard with it", row_type)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("its shard (OID %u) was dropped", shard)));
}

PG_FUNCTION_INFO_V1(peek_row_hash);

/*
 * peek.row_hash(record): the hash a shard's rows index is built on (see
 * row_hash), so that a row's base rows are found without a scan.
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

static object_access_hook_type prev_object_access_hook = NULL;

/*
 * A shard dropped by anything but its collection's drop (DROP TYPE ...
 * CASCADE on the row type): the maintenance runtime is told to look at the
 * collection at commit, and fails it.  A collection's own drop sends the
 * same notice with its drop.
 */
static void
shard_drop_hook(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Oid			peek;
	Oid			extension;
	char	   *relname;
	int32		seq;
	int			len;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0)
		return;
	peek = get_namespace_oid("peek", true);
	if (!OidIsValid(peek) || get_rel_namespace(objectId) != peek)
		return;
	relname = get_rel_name(objectId);
	extension = get_extension_oid("pg_peek", true);
	if (relname != NULL && OidIsValid(extension) &&
		sscanf(relname, "shard_%d%n", &seq, &len) == 1 && relname[len] == '\0')
		notify_catalog_changed(PEEK_OBJECT_ID(extension, seq));
}

void
persist_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = shard_drop_hook;
}

/*
 * A collation's name with its schema, always: the runtimes and the DDL here
 * run with search_path pinned, so a name qualified only when it is not
 * visible (generate_collation_name) would not be found.
 */
static char *
qualified_collation_name(Oid collid)
{
	HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	Form_pg_collation coll;
	char	   *name;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	name = quote_qualified_identifier(get_namespace_name(coll->collnamespace),
									  NameStr(coll->collname));
	ReleaseSysCache(tup);
	return name;
}

/*
 * A source's row type: a copy of its table's (live columns, their types and
 * collations), so that the shard does not depend on the table and the table
 * can still be altered or dropped.  Returns the type's OID.
 */
Oid
persist_create_source_type(int32 seq, Oid table_rowtype)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(table_rowtype, -1);
	StringInfoData cols;
	char		typname[NAMEDATALEN];
	bool		first = true;

	initStringInfo(&cols);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		appendStringInfo(&cols, "%s%s %s", first ? "" : ", ", quote_identifier(NameStr(att->attname)),
						 format_type_extended(att->atttypid, att->atttypmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(att->attcollation) && att->attcollation != get_typcollation(att->atttypid))
			appendStringInfo(&cols, " COLLATE %s", qualified_collation_name(att->attcollation));
		first = false;
	}
	ReleaseTupleDesc(desc);
	snprintf(typname, sizeof(typname), "source_%d", seq);
	run_ddl(psprintf("CREATE TYPE peek.%s AS (%s)", typname, cols.data));
	run_ddl(psprintf("REVOKE USAGE ON TYPE peek.%s FROM PUBLIC", typname));
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(typname),
						   ObjectIdGetDatum(get_namespace_oid("peek", false)));
}

void
persist_drop_source_type(Oid row_type)
{
	run_ddl(psprintf("DROP TYPE %s", format_type_be_qualified(row_type)));
}

void
persist_drop_shard(Oid shard)
{
	char	   *relname = get_rel_name(shard);

	if (relname != NULL)
		run_ddl(psprintf("DROP TABLE peek.%s", quote_identifier(relname)));
}

/*
 * Inserting into a shard: through the table AM, keeping the shard's indexes
 * (its time index) current, in the caller's transaction.
 */
struct ShardWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	BulkInsertState bis;
	MemoryContext per_row;
	TupleDesc	row_desc;		/* rows are normalized with it */
};

/* The row type of a shard's data column. */
static Oid
shard_row_type(Relation rel)
{
	return TupleDescAttr(RelationGetDescr(rel), SHARD_DATA - 1)->atttypid;
}

static void
shard_writer_open(ShardWriter *w, Oid shard)
{
	w->rel = table_open(shard, RowExclusiveLock);
	w->estate = CreateExecutorState();
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
	ExecOpenIndices(w->rri, false);
	w->slot = table_slot_create(w->rel, NULL);
	w->bis = GetBulkInsertState();
	w->per_row = AllocSetContextCreate(CurrentMemoryContext, "pg_peek shard writer",
									   ALLOCSET_DEFAULT_SIZES);
	w->row_desc = row_desc(shard_row_type(w->rel));
}

static void
shard_insert(ShardWriter *w, int64 time, int64 diff, Datum row)
{
	TupleTableSlot *slot = w->slot;

	ExecClearTuple(slot);
	slot->tts_values[SHARD_TIME - 1] = Int64GetDatum(time);
	slot->tts_values[SHARD_DIFF - 1] = Int64GetDatum(diff);
	slot->tts_values[SHARD_DATA - 1] = row;
	memset(slot->tts_isnull, 0, sizeof(bool) * 3);
	ExecStoreVirtualTuple(slot);
	table_tuple_insert(w->rel, slot, GetCurrentCommandId(true), 0, w->bis);
	if (w->rri->ri_NumIndices > 0)
		list_free(ExecInsertIndexTuples(w->rri, slot, w->estate, false, false, NULL, NIL));
}

static void
shard_writer_close(ShardWriter *w)
{
	MemoryContextDelete(w->per_row);
	FreeTupleDesc(w->row_desc);
	FreeBulkInsertState(w->bis);
	ExecDropSingleTupleTableSlot(w->slot);
	ExecCloseIndices(w->rri);
	FreeExecutorState(w->estate);
	table_close(w->rel, NoLock);
	CommandCounterIncrement();
}

/* A writer for a series of appends in the caller's transaction. */
ShardWriter *
persist_writer_open(Oid shard)
{
	ShardWriter *w = palloc(sizeof(ShardWriter));

	shard_writer_open(w, shard);
	return w;
}

/* Append one update; the row is normalized (see rows.c) on the way. */
void
persist_writer_add(ShardWriter *w, int64 time, int64 diff, Datum row)
{
	MemoryContext old = MemoryContextSwitchTo(w->per_row);

	shard_insert(w, time, diff, row_normalize(w->row_desc, row));
	MemoryContextSwitchTo(old);
	MemoryContextReset(w->per_row);
}

/* Finish the appends; later commands of the transaction see them. */
void
persist_writer_close(ShardWriter *w)
{
	shard_writer_close(w);
	pfree(w);
}

/* Append each row of the array at (time, diff), in the caller's transaction. */
void
persist_append(Oid shard, ArrayType *rows, int64 time, int64 diff)
{
	ShardWriter *w = persist_writer_open(shard);
	ArrayIterator it = array_create_iterator(rows, 0, NULL);
	Datum		value;
	bool		isnull;

	while (array_iterate(it, &value, &isnull))
	{
		Assert(!isnull);		/* callers reject arrays with NULLs */
		persist_writer_add(w, time, diff, value);
	}
	array_free_iterator(it);
	persist_writer_close(w);
}

/*
 * The base's reading machinery: the shard, the snapshot, the base's since
 * and the indexes the walk and compaction look rows up through.  Without
 * them (a shard whose indexes were dropped) or with a row type that lost
 * attributes (its rows' stored hashes may be stale), the shard is read
 * whole instead.
 */
typedef struct ShardBase
{
	Relation	rel;
	Snapshot	snapshot;
	int64		since;			/* rows at or before it are the base */
	TupleDesc	desc;			/* row_desc of the row type */
	Relation	time_index;
	Relation	rows_index;
	Relation	flagged_index;
	TupleTableSlot *slot;
} ShardBase;

/*
 * What is done with each shard row a scan finds (its tid and fields);
 * false stops the scan.
 */
typedef bool (*ShardRowFn) (ShardBase *b, ItemPointer tid, int64 time, int64 diff,
							Datum row, void *arg);

/* Shard rows' tids, in the order found (or sorted). */
typedef struct TidList
{
	ItemPointerData *tids;
	int64		n;
	int64		capacity;
} TidList;

static void
tid_list_init(TidList *l)
{
	l->n = 0;
	l->capacity = 64;
	l->tids = palloc(sizeof(ItemPointerData) * l->capacity);
}

static void
tid_list_add(TidList *l, ItemPointer tid)
{
	if (l->n == l->capacity)
	{
		l->capacity *= 2;
		l->tids = repalloc_huge(l->tids, sizeof(ItemPointerData) * l->capacity);
	}
	l->tids[l->n++] = *tid;
}

static Relation
open_shard_index(Relation rel, const char *suffix, LOCKMODE lock)
{
	Oid			index = get_relname_relid(psprintf("%s_%s", RelationGetRelationName(rel), suffix),
										  RelationGetNamespace(rel));

	return OidIsValid(index) ? index_open(index, lock) : NULL;
}

/*
 * The last time of the base, from the collection's durable since: the rows
 * up to it are base rows (all at BASE_TIME: a fold leaves no other row at
 * or before the since), the rows after it recent ones.  BASE_TIME before a
 * first compaction (a since of 0 is never compacted to, and the updates at
 * 0 are as they were written).
 */
static int64
base_since(int64 durable_since)
{
	return durable_since > 0 ? durable_since : BASE_TIME;
}

/* The shard alone, to be read straight through (scan_heap). */
static void
base_open_heap(ShardBase *b, Relation rel, Snapshot snapshot)
{
	memset(b, 0, sizeof(ShardBase));
	b->rel = rel;
	b->snapshot = snapshot;
	b->slot = table_slot_create(rel, NULL);
}

/* Open the base's indexes; false if the shard must be read whole. */
static bool
base_open(ShardBase *b, Relation rel, Snapshot snapshot, int64 since, LOCKMODE lock)
{
	base_open_heap(b, rel, snapshot);
	b->since = since;
	b->desc = row_desc(shard_row_type(rel));
	b->time_index = open_shard_index(rel, "time_idx", lock);
	b->rows_index = open_shard_index(rel, "rows", lock);
	b->flagged_index = open_shard_index(rel, "flagged", lock);
	return b->time_index != NULL && b->rows_index != NULL && b->flagged_index != NULL &&
		!row_desc_has_dropped(b->desc);
}

static void
base_close(ShardBase *b, LOCKMODE lock)
{
	Relation	indexes[3] = {b->time_index, b->rows_index, b->flagged_index};

	for (int i = 0; i < 3; i++)
		if (indexes[i] != NULL)
			index_close(indexes[i], lock);
	ExecDropSingleTupleTableSlot(b->slot);
	if (b->desc != NULL)
		FreeTupleDesc(b->desc);
}

/*
 * A stream of shard rows, each with its tid (in b->slot): a heap scan or an
 * index scan.  One loop reads every scan's rows (cursor_next).
 */
typedef struct ShardCursor
{
	ShardBase  *b;
	TableScanDesc heap;			/* or: */
	IndexScanDesc index;
	int64		lower;			/* a heap scan's rows: lower <= time <= upto */
	int64		upto;
} ShardCursor;

/* The rows of a heap scan with lower <= time <= upto, in heap order. */
static void
cursor_open_heap(ShardCursor *c, ShardBase *b, int64 lower, int64 upto)
{
	memset(c, 0, sizeof(ShardCursor));
	c->b = b;
	c->heap = table_beginscan(b->rel, b->snapshot, 0, NULL);
	c->lower = lower;
	c->upto = upto;
}

/* The rows an index scan with these keys finds, in index order. */
static void
cursor_open_index(ShardCursor *c, ShardBase *b, Relation index, ScanKey keys, int nkeys)
{
	memset(c, 0, sizeof(ShardCursor));
	c->b = b;
	c->index = index_beginscan(b->rel, index, b->snapshot, nkeys, 0);
	index_rescan(c->index, keys, nkeys, NULL, 0);
}

/*
 * An index scan of the time index (or the flagged one) with these time
 * bounds (strategy and bound per key).
 */
static void
cursor_open_times(ShardCursor *c, ShardBase *b, Relation index, int nkeys,
				  StrategyNumber *strategies, int64 *bounds)
{
	static const RegProcedure procs[] = {
		[BTLessStrategyNumber] = F_INT8LT,
		[BTLessEqualStrategyNumber] = F_INT8LE,
		[BTGreaterEqualStrategyNumber] = F_INT8GE,
		[BTGreaterStrategyNumber] = F_INT8GT,
	};
	ScanKeyData keys[2];

	for (int i = 0; i < nkeys; i++)
		ScanKeyInit(&keys[i], 1, strategies[i], procs[strategies[i]], Int64GetDatum(bounds[i]));
	cursor_open_index(c, b, index, keys, nkeys);
}

/* The next row's fields (its tid is b->slot's); false at the end. */
static bool
cursor_next(ShardCursor *c, int64 *time, int64 *diff, Datum *row)
{
	TupleTableSlot *slot = c->b->slot;
	bool		isnull;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (c->heap != NULL ? !table_scan_getnextslot(c->heap, ForwardScanDirection, slot) :
			!index_getnext_slot(c->index, ForwardScanDirection, slot))
			return false;
		*time = DatumGetInt64(slot_getattr(slot, SHARD_TIME, &isnull));
		if (c->heap != NULL && (*time < c->lower || *time > c->upto))
			continue;
		*diff = DatumGetInt64(slot_getattr(slot, SHARD_DIFF, &isnull));
		*row = slot_getattr(slot, SHARD_DATA, &isnull);
		return true;
	}
}

static void
cursor_close(ShardCursor *c)
{
	if (c->heap != NULL)
		table_endscan(c->heap);
	else
		index_endscan(c->index);
}

/* Feed fn the cursor's rows until it returns false, then close it. */
static void
scan_cursor(ShardCursor *c, ShardRowFn fn, void *arg)
{
	int64		time;
	int64		diff;
	Datum		row;

	while (cursor_next(c, &time, &diff, &row))
		if (!fn(c->b, &c->b->slot->tts_tid, time, diff, row, arg))
			break;
	cursor_close(c);
}

static void
scan_times(ShardBase *b, Relation index, int nkeys, StrategyNumber *strategies, int64 *bounds,
		   ShardRowFn fn, void *arg)
{
	ShardCursor c;

	cursor_open_times(&c, b, index, nkeys, strategies, bounds);
	scan_cursor(&c, fn, arg);
}

/* Feed fn every shard row with lower <= time <= upto, in heap order. */
static void
scan_heap(ShardBase *b, int64 lower, int64 upto, ShardRowFn fn, void *arg)
{
	ShardCursor c;

	cursor_open_heap(&c, b, lower, upto);
	scan_cursor(&c, fn, arg);
}

static bool
count_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	row_counts_add((RowCounts *) arg, row, diff);
	return true;
}

static bool
flag_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	row_counts_add((RowCounts *) arg, row, 0);
	return true;
}

/* The recent rows with since < time <= upto. */
static void
scan_recent(ShardBase *b, int64 upto, ShardRowFn fn, void *arg)
{
	StrategyNumber strategies[2] = {BTGreaterStrategyNumber, BTLessEqualStrategyNumber};
	int64		bounds[2] = {b->since, upto};

	scan_times(b, b->time_index, 2, strategies, bounds, fn, arg);
}

/* The rows with base rows that cannot be read alone (diff <= 0), with 0. */
static void
collect_flagged(ShardBase *b, RowCounts *counts)
{
	StrategyNumber strategy = BTLessEqualStrategyNumber;

	scan_times(b, b->flagged_index, 1, &strategy, &b->since, flag_row, counts);
}

/*
 * The base rows of the rows in rows (one each, but a flagged row may have
 * several), found in one scan of the rows index for all of their hashes.
 */
static void
scan_base_rows(ShardBase *b, RowCounts *rows, ShardRowFn fn, void *arg)
{
	int			n = hash_get_num_entries(rows->table);
	Datum	   *hashes;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	ScanKeyData key;
	ShardCursor c;
	int64		time;
	int64		diff;
	Datum		row;
	int			i = 0;

	if (n == 0)
		return;
	hashes = palloc(sizeof(Datum) * n);
	hash_seq_init(&status, rows->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		hashes[i++] = Int32GetDatum((int32) row_hash(b->desc, row_count_datum(rc)));
	ScanKeyEntryInitialize(&key, SK_SEARCHARRAY, 1, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT4EQ,
						   PointerGetDatum(construct_array(hashes, n, INT4OID, sizeof(int32),
														   true, TYPALIGN_INT)));
	cursor_open_index(&c, b, b->rows_index, &key, 1);
	while (cursor_next(&c, &time, &diff, &row))
		if (time <= b->since && row_counts_find(rows, row) != NULL &&
			!fn(b, &b->slot->tts_tid, time, diff, row, arg))
			break;
	cursor_close(&c);
	pfree(hashes);
}

#define TOUCHED_BY_HASH_ROWS	16

/* The base rows a walk must adjust, and their rows' sums. */
typedef struct Touched
{
	RowCounts  *recent;			/* sums of the recent rows up to the time */
	RowCounts  *flagged;		/* whole counts of the flagged rows */
	HTAB	   *hashes;			/* the rows' hashes, or NULL: */
	TidList		tids;			/* their base rows, sorted */
} Touched;

static bool
touch_base_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Touched    *t = arg;
	RowCount   *whole = row_counts_find(t->flagged, row);

	if (whole != NULL)
		whole->count += diff;
	if (t->hashes == NULL)
		tid_list_add(&t->tids, tid);
	return true;
}

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * Find the base rows to adjust: for a flagged row, add its base rows to
 * its whole count; with hashes, note the rows' hashes, else the base rows'
 * tids.
 */
static void
touch_base(ShardBase *b, Touched *t, int64 limit)
{
	int64		nrecent = hash_get_num_entries(t->recent->table);
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	t->hashes = NULL;
	tid_list_init(&t->tids);
	if (nrecent == 0)
		return;
	if (limit < 0 || limit >= TOUCHED_BY_HASH_ROWS * nrecent)
	{
		scan_base_rows(b, t->recent, touch_base_row, t);
		qsort(t->tids.tids, t->tids.n, sizeof(ItemPointerData), tid_cmp);
		return;
	}

	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint32);
		ctl.entrysize = sizeof(uint32);
		ctl.hcxt = t->recent->cxt;
		t->hashes = hash_create("pg_peek recent row hashes", nrecent, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	hash_seq_init(&status, t->recent->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		uint32		h = row_hash(b->desc, row_count_datum(rc));

		(void) hash_search(t->hashes, &h, HASH_ENTER, NULL);
	}
	scan_base_rows(b, t->flagged, touch_base_row, t);
}

/* Might this base row need adjusting? */
static bool
touched(ShardBase *b, Touched *t, ItemPointer tid, Datum row)
{
	if (t->hashes != NULL)
	{
		uint32		h;

		if (hash_get_num_entries(t->hashes) == 0)
			return false;
		h = row_hash(b->desc, row);
		return hash_search(t->hashes, &h, HASH_FIND, NULL) != NULL;
	}
	return t->tids.n > 0 &&
		bsearch(tid, t->tids.tids, t->tids.n, sizeof(ItemPointerData), tid_cmp) != NULL;
}

/*
 * A persist walk in progress: the shard's contents at a time, read row by
 * row (persist_walk_next) in one of two ways.  Over the base (the usual
 * one, walk_base_begin): the recent rows up to the time summed first, then
 * the base streamed with those rows adjusted, then the rows only the
 * recent part has.  Whole (a shard without its base indexes, or whose row
 * type lost attributes): every row up to the time summed, then those sums.
 * It keeps its snapshot and its scans open between rows, and nothing else:
 * no peek hold, so a walk streamed by an executor node (scan.c) holds
 * neither compaction nor the backend's peek slot.
 */
struct PersistWalk
{
	MemoryContext cxt;			/* everything below */
	Relation	rel;
	Snapshot	snapshot;
	ShardBase	b;
	Touched		t;				/* a walk over the base */
	bool		streaming;		/* the base cursor is open: */
	ShardCursor base;
	MemoryContext per_row;		/* a base row's comparisons */
	RowCounts  *rest;			/* the sums emitted last */
	bool		rest_open;		/* rest_seq is under way */
	HASH_SEQ_STATUS rest_seq;
};

/*
 * Prepare a walk over the base: the recent rows up to time are summed
 * (recent); a row with flagged base rows -- a negative count or one out of
 * bigint's range, stored in parts -- gets its whole count from the base now
 * (flagged).  Then the base is streamed (a limited walk through the time
 * index, a full one through the heap): a row with recent updates is
 * emitted with its count at time, a flagged one once with its whole
 * count, any other -- nearly all -- as its base row says (see touch_base
 * for how they are told apart).
 */
static void
walk_base_begin(PersistWalk *w, Oid row_type, int64 time, int64 limit)
{
	ShardBase  *b = &w->b;
	Touched    *t = &w->t;
	HASH_SEQ_STATUS status;
	RowCount   *rc;

	t->recent = row_counts_create(row_type);
	t->flagged = row_counts_create(row_type);
	scan_recent(b, time, count_row, t->recent);
	collect_flagged(b, t->flagged);
	/* a flagged row's whole count: its recent part, and its base rows' */
	hash_seq_init(&status, t->flagged->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		row_counts_add(t->recent, row_count_datum(rc), 0);
	hash_seq_init(&status, t->recent->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		RowCount   *whole = row_counts_find(t->flagged, row_count_datum(rc));

		if (whole != NULL)
			whole->count += rc->count;
	}
	touch_base(b, t, limit);

	w->rest = t->recent;
	w->per_row = AllocSetContextCreate(w->cxt, "pg_peek base row", ALLOCSET_SMALL_SIZES);
	w->streaming = limit != 0;
	if (limit > 0)
	{
		/*
		 * Through the time index, which has the base rows first: a heap
		 * scan would read whatever precedes them (the space a fold freed)
		 * before its first row.
		 */
		StrategyNumber strategy = BTLessEqualStrategyNumber;

		cursor_open_times(&w->base, b, b->time_index, 1, &strategy, &b->since);
	}
	else if (limit < 0)
		cursor_open_heap(&w->base, b, PG_INT64_MIN, b->since);
}

/* A base row's count at the walk's time: as stored, or adjusted. */
static int64
adjust_base_row(PersistWalk *w, int64 diff, Datum row)
{
	Touched    *t = &w->t;
	MemoryContext old;

	MemoryContextReset(w->per_row);
	old = MemoryContextSwitchTo(w->per_row);
	if (touched(&w->b, t, &w->b.slot->tts_tid, row))
	{
		RowCount   *whole = row_counts_find(t->flagged, row);
		RowCount   *part = row_counts_find(t->recent, row);

		if (whole != NULL)
		{
			/* emitted once, at its first base row */
			diff = row_count_value(whole->count);
			whole->count = 0;
		}
		else if (part != NULL)	/* NULL: a hash's false match */
			diff = row_count_value((int128) diff + part->count);
		if (part != NULL)
			part->count = 0;
	}
	MemoryContextSwitchTo(old);
	return diff;
}

/*
 * Begin the persist walk of a shard at time, in snapshot (the caller's,
 * taken after the peek's gate, so that every update the runtime saw sealed
 * is visible; walks in one snapshot at one time give the same rows); the
 * base's since is read in it, before the shard is locked (DROP EXTENSION
 * locks peek.objects, then the shards).  limit, the most rows the caller
 * will read (< 0: all), chooses how the base is read (a positive one still
 * reads it whole if asked; 0 reads none of it).
 */
PersistWalk *
persist_walk_begin(PeekObjectId id, Oid shard, Oid row_type, const char *collection,
				   Snapshot snapshot, int64 time, int64 limit)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek persist walk",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	PersistWalk *w = palloc0(sizeof(PersistWalk));
	int64		durable_since;

	w->cxt = cxt;
	w->snapshot = snapshot;
	durable_since = catalog_read_since(id, w->snapshot);

	/*
	 * The gate admitted time against the registry's since, which a source
	 * loaded again (compact_to_reload) raises in the catalog first: its
	 * history before is gone.
	 */
	if (durable_since > time)
		catalog_raise_compacted("collection", collection, time, durable_since);
	w->rel = try_table_open(shard, AccessShareLock);
	/* dropped after the gate (no lock held since the name lookup) */
	if (w->rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("collection \"%s\" was dropped while it was peeked", collection)));
	if (base_open(&w->b, w->rel, w->snapshot, base_since(durable_since), AccessShareLock) &&
		w->b.since <= time)
		walk_base_begin(w, row_type, time, limit);
	else
	{
		w->rest = row_counts_create(row_type);
		scan_heap(&w->b, PG_INT64_MIN, time, count_row, w->rest);
	}
	MemoryContextSwitchTo(old);
	return w;
}

/*
 * The walk's next row and its count (not 0; a negative one is the caller's
 * to report); false at the end.  The row stays valid until the next call.
 */
bool
persist_walk_next(PersistWalk *w, Datum *row, int64 *count)
{
	RowCount   *rc;

	while (w->streaming)
	{
		int64		time;
		int64		diff;

		if (!cursor_next(&w->base, &time, &diff, row))
		{
			cursor_close(&w->base);
			w->streaming = false;
			break;
		}
		*count = adjust_base_row(w, diff, *row);
		if (*count != 0)
			return true;
	}
	if (!w->rest_open && w->rest != NULL)
	{
		/*
		 * Frozen, the table's scan is not registered: a registered one
		 * belongs to the subtransaction that began it and may not outlive
		 * it, nor may a backend have more than a few; a walk streamed by a
		 * cursor lives across both.  Only lookups follow.
		 */
		hash_freeze(w->rest->table);
		hash_seq_init(&w->rest_seq, w->rest->table);
		w->rest_open = true;
	}
	while (w->rest_open)
	{
		if ((rc = hash_seq_search(&w->rest_seq)) == NULL)
		{
			w->rest_open = false;
			w->rest = NULL;		/* read */
			break;
		}
		*row = row_count_datum(rc);
		*count = row_count_value(rc->count);
		if (*count != 0)
			return true;
	}
	return false;
}

/* End a walk, read through or not. */
void
persist_walk_end(PersistWalk *w)
{
	if (w->streaming)
		cursor_close(&w->base);
	if (w->rest_open)
		hash_seq_term(&w->rest_seq);
	base_close(&w->b, AccessShareLock);
	table_close(w->rel, AccessShareLock);
	MemoryContextDelete(w->cxt);
}

/*
 * Append one update per row with a non-zero count, at time, with the count
 * times sign as its diff.  Returns how many were appended.
 */
static int64
append_counts(ShardWriter *w, RowCounts *counts, int64 time, int64 sign)
{
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		n = 0;

	hash_seq_init(&status, counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		if (rc->count == 0)
			continue;
		shard_insert(w, time, sign * (int64) rc->count, row_count_datum(rc));
		n++;
	}
	return n;
}

/*
 * Write a row's base count: one row, or, out of bigint's range,
 * bigint-sized parts and a zero row that flags them.  Returns the rows
 * written.
 */
static int64
write_base_row(ShardWriter *w, Datum row, int128 count)
{
	int64		n = 0;

	if (count == 0)
		return 0;
	if (count < PG_INT64_MIN || count > PG_INT64_MAX)
	{
		shard_insert(w, BASE_TIME, 0, row);
		n++;
	}
	while (count > PG_INT64_MAX || count < PG_INT64_MIN)
	{
		int64		part = count > 0 ? PG_INT64_MAX : PG_INT64_MIN;

		shard_insert(w, BASE_TIME, part, row);
		count -= part;
		n++;
	}
	shard_insert(w, BASE_TIME, (int64) count, row);
	return n + 1;
}

/*
 * A fold's rows: each one's sum, and whether it must be rewritten: its
 * shard rows' weights, 1 for a base row and 2 for a recent one (which must
 * move to the base), above 1 if so.
 */
/* A shard row a fold reads, and its row's weight. */
typedef struct FoldedRow
{
	ItemPointerData tid;
	RowCount   *weight;
} FoldedRow;

typedef struct Fold
{
	RowCounts  *counts;
	RowCounts  *weights;		/* base row 1, recent row 2: > 1 is rewritten */
	FoldedRow  *rows;
	int64		nrows;
	int64		capacity;
} Fold;

static bool
fold_count(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Fold	   *f = arg;

	if (f->nrows == f->capacity)
	{
		f->capacity *= 2;
		f->rows = repalloc_huge(f->rows, sizeof(FoldedRow) * f->capacity);
	}
	row_counts_add(f->counts, row, diff);
	f->rows[f->nrows].tid = *tid;
	f->rows[f->nrows++].weight = row_counts_add(f->weights, row, time > b->since ? 2 : 1);
	return true;
}

/*
 * Delete a shard row a compaction replaces.  Another transaction may have
 * deleted or updated it since the fold's snapshot (a loader folding the
 * same shard, the 0.1 to 0.2 upgrade rewriting its base): the fold then
 * counted a row that is gone, so it gives up with a serialization failure,
 * which its caller treats as transient and retries on a new snapshot.
 */
static void
delete_replaced(Relation rel, ItemPointer tid, Snapshot snapshot)
{
	TM_FailureData tmfd;
	TM_Result	result;

	result = table_tuple_delete(rel, tid, GetCurrentCommandId(true), snapshot,
								InvalidSnapshot, true, &tmfd, false);
	if (result == TM_Updated || result == TM_Deleted)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not compact shard \"%s\" due to a concurrent change of its rows",
						RelationGetRelationName(rel))));
	if (result != TM_Ok)
		elog(ERROR, "unexpected table_tuple_delete status: %u", result);
}

/*
 * Fold the recent rows up to since into the base: each row with updates
 * there (and each flagged base row) gets its shard rows replaced by one base
 * row with their sum.  A row with a single base row is already so and stays
 * where it is.  Touches only those rows, read once: writers, who insert
 * after since, never wait for it.
 */
static int64
fold(ShardWriter *w, ShardBase *b, int64 since)
{
	Fold		f;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		deleted = 0;
	int64		written = 0;

	f.counts = row_counts_create(shard_row_type(w->rel));
	f.weights = row_counts_create(shard_row_type(w->rel));
	f.nrows = 0;
	f.capacity = 64;
	f.rows = palloc(sizeof(FoldedRow) * f.capacity);
	scan_recent(b, since, fold_count, &f);
	collect_flagged(b, f.counts);
	scan_base_rows(b, f.counts, fold_count, &f);
	for (int64 i = 0; i < f.nrows; i++)
		if (f.rows[i].weight->count > 1)
		{
			delete_replaced(w->rel, &f.rows[i].tid, b->snapshot);
			deleted++;
		}
	hash_seq_init(&status, f.counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		if (row_counts_find(f.weights, row_count_datum(rc))->count > 1)
			written += write_base_row(w, row_count_datum(rc), rc->count);
	pfree(f.rows);
	MemoryContextDelete(f.counts->cxt);
	MemoryContextDelete(f.weights->cxt);
	return deleted - written;
}

/* The rows a whole compaction replaces: their sums, and their tids. */
typedef struct Replaced
{
	RowCounts  *counts;
	TidList		tids;
} Replaced;

static bool
replace_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	Replaced   *r = arg;

	row_counts_add(r->counts, row, diff);
	tid_list_add(&r->tids, tid);
	return true;
}

/*
 * The shard read whole (see ShardBase): every update at or before since
 * is replaced by its row's base rows (write_base_row: one, or parts when
 * the sum leaves bigint's range), so that no row is left between the base
 * and the since.
 */
static int64
compact_whole(ShardWriter *w, ShardBase *b, int64 since)
{
	Replaced	r;
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	int64		written = 0;

	r.counts = row_counts_create(shard_row_type(w->rel));
	tid_list_init(&r.tids);
	scan_heap(b, PG_INT64_MIN, since, replace_row, &r);
	for (int64 i = 0; i < r.tids.n; i++)
		delete_replaced(w->rel, &r.tids.tids[i], b->snapshot);
	hash_seq_init(&status, r.counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
		written += write_base_row(w, row_count_datum(rc), rc->count);
	MemoryContextDelete(r.counts->cxt);
	pfree(r.tids.tids);
	return r.tids.n - written;
}

/*
 * Compaction of a shard whose durable since is durable_since to since.  Runs in the
 * maintenance runtime's transaction, after the registry's since was raised
 * (so no peek below it can start); the caller raises the durable since in
 * the same transaction.  Returns how many rows the shard lost.
 */
int64
persist_compact(Oid shard, int64 durable_since, int64 since)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = GetActiveSnapshot();
	int64		lost;

	shard_writer_open(&w, shard);
	if (base_open(&b, w.rel, snapshot, base_since(durable_since), RowExclusiveLock))
		lost = fold(&w, &b, since);
	else
		lost = compact_whole(&w, &b, since);
	base_close(&b, RowExclusiveLock);
	shard_writer_close(&w);
	return lost;
}
/*
 * Retract the shard's whole contents at time (a captured TRUNCATE): every
 * row present at time gets an update cancelling its multiplicity.  Sees the
 * caller's own earlier appends.
 */
void
persist_retract_all(Oid shard, int64 time)
{
	ShardWriter w;
	ShardBase	b;
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	RowCounts  *counts;

	shard_writer_open(&w, shard);
	counts = row_counts_create(shard_row_type(w.rel));
	base_open_heap(&b, w.rel, snapshot);
	scan_heap(&b, PG_INT64_MIN, time, count_row, counts);
	base_close(&b, NoLock);
	UnregisterSnapshot(snapshot);
	(void) append_counts(&w, counts, time, -1);
	shard_writer_close(&w);
	MemoryContextDelete(counts->cxt);
}

/*
 * Keep a shard from being dropped until the end of the transaction; false
 * if it is gone already (a drop that committed, or that we waited for).
 */
bool
persist_lock_shard(Oid shard)
{
	Relation	rel = try_relation_open(shard, AccessShareLock);

	if (rel == NULL)
		return false;
	relation_close(rel, NoLock);
	return true;
}

/* What persist_scan_range feeds its rows to. */
typedef struct RangeFeed
{
	void		(*fn) (int64 time, int64 diff, Datum row, void *arg);
	void	   *arg;
} RangeFeed;

static bool
feed_row(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	RangeFeed  *feed = arg;

	feed->fn(time, diff, row, feed->arg);
	return true;
}

/*
 * Feed every update with lower <= time < upper to fn, in no particular
 * order, each row as the shard stores it (see row_from_shard): the rows an
 * index needs to hydrate (lower 0: the heap read straight through, base
 * rows at BASE_TIME included) or to follow a seal (through the time index).
 * Runs in the caller's transaction and snapshot.
 */
void
persist_scan_range(Oid shard, int64 lower, int64 upper,
				   void (*fn) (int64 time, int64 diff, Datum row, void *arg), void *arg)
{
	RangeFeed	feed = {fn, arg};
	Relation	rel = try_table_open(shard, AccessShareLock);
	ShardBase	b;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("shard table with OID %u does not exist", shard)));
	base_open_heap(&b, rel, GetActiveSnapshot());
	b.time_index = lower > 0 ? open_shard_index(rel, "time_idx", AccessShareLock) : NULL;
	if (b.time_index != NULL)
	{
		StrategyNumber strategies[2] = {BTGreaterEqualStrategyNumber, BTLessStrategyNumber};
		int64		bounds[2] = {lower, upper};

		scan_times(&b, b.time_index, 2, strategies, bounds, feed_row, &feed);
	}
	else if (upper > lower)
		scan_heap(&b, lower > 0 ? lower : PG_INT64_MIN, upper - 1, feed_row, &feed);
	base_close(&b, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * About how many updates the shard holds, from its size: a hydration's
 * total before it has read them.
 */
int64
persist_estimate_rows(Oid shard)
{
	Relation	rel = table_open(shard, AccessShareLock);
	BlockNumber pages;
	double		tuples;
	double		allvisfrac;

	table_relation_estimate_size(rel, NULL, &pages, &tuples, &allvisfrac);
	table_close(rel, AccessShareLock);
	return (int64) tuples;
}

static bool
add_diff(ShardBase *b, ItemPointer tid, int64 time, int64 diff, Datum row, void *arg)
{
	int64	   *sum = arg;

	*sum = row_add_saturating(*sum, diff);
	return true;
}

/* The sum of the diffs before upper: the row count at the latest time. */
int64
persist_sum_diffs(Oid shard, int64 upper)
{
	Relation	rel = table_open(shard, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	ShardBase	b;
	int64		sum = 0;

	base_open_heap(&b, rel, snapshot);
	if (upper > PG_INT64_MIN)
		scan_heap(&b, PG_INT64_MIN, upper - 1, add_diff, &sum);
	base_close(&b, AccessShareLock);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return sum;
}
