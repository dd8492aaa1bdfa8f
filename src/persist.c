/*-------------------------------------------------------------------------
 *
 * persist.c
 *	  Persist shards (DESIGN §1, §6): each collection's updates live in an
 *	  ordinary table peek.shard_<n> (time bigint, diff bigint, data <row>),
 *	  so they are WAL-logged, transactional and crash-safe.  Appends go
 *	  straight through the table AM in the caller's transaction; the walk
 *	  reads the shard at a time with a snapshot taken after the peek's wait;
 *	  compaction advances updates before since to since and merges them.
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

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "config.h"
#include "notify.h"
#include "persist.h"
#include "rows.h"
#include "spi.h"

#define SHARD_TIME		1
#define SHARD_DIFF		2
#define SHARD_DATA		3

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

	snprintf(relname, sizeof(relname), "shard_%d", seq);
	run_ddl(psprintf("CREATE TABLE peek.%s (time bigint NOT NULL, diff bigint NOT NULL, data %s NOT NULL)",
					 relname, format_type_be_qualified(row_type)));
	/* indexes follow seals by reading the newly sealed times */
	run_ddl(psprintf("CREATE INDEX ON peek.%s (time)", relname));
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
			appendStringInfo(&cols, " COLLATE %s", generate_collation_name(att->attcollation));
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
 * Sum the updates at or before time into counts.  With tids, also collect
 * the scanned rows' tids (for compaction).
 */
static int64
scan_consolidate(Relation rel, Snapshot snapshot, int64 time, RowCounts *counts,
				 ItemPointerData **tids)
{
	TableScanDesc scan = table_beginscan(rel, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int64		nrows = 0;
	int64		capacity = 1024;
	bool		isnull;

	if (tids != NULL)
		*tids = palloc(sizeof(ItemPointerData) * capacity);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (DatumGetInt64(slot_getattr(slot, SHARD_TIME, &isnull)) > time)
			continue;
		row_counts_add(counts, slot_getattr(slot, SHARD_DATA, &isnull),
					   DatumGetInt64(slot_getattr(slot, SHARD_DIFF, &isnull)));
		if (tids != NULL)
		{
			if (nrows == capacity)
			{
				capacity *= 2;
				*tids = repalloc_huge(*tids, sizeof(ItemPointerData) * capacity);
			}
			(*tids)[nrows] = slot->tts_tid;
		}
		nrows++;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	return nrows;
}

/*
 * The persist walk: the shard's contents at time into out, each row as many
 * times as its multiplicity, at most limit rows (limit < 0: all).  The
 * snapshot is taken now, after the peek's wait, so every update the runtime
 * saw sealed is visible.
 */
void
persist_walk(Oid shard, Oid row_type, const char *collection, int64 time,
			 int64 limit, Tuplestorestate *out)
{
	Relation	rel = table_open(shard, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	RowCounts  *counts = row_counts_create(row_type);
	HASH_SEQ_STATUS status;
	RowCount   *rc;
	Size		max_bytes = (Size) peek_max_result_kb * 1024;
	Size		bytes = 0;
	int64		emitted = 0;

	scan_consolidate(rel, snapshot, time, counts, NULL);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);

	row_counts_check_nonnegative(counts, row_type, collection, time);

	hash_seq_init(&status, counts->table);
	while ((rc = hash_seq_search(&status)) != NULL)
	{
		HeapTupleData tuple;

		row_tuple((HeapTupleHeader) DatumGetPointer(row_count_datum(rc)), &tuple);
		for (int64 i = 0; i < rc->count; i++)
		{
			if (limit >= 0 && emitted >= limit)
				break;
			bytes += tuple.t_len;
			if (bytes > max_bytes)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("peek result of \"%s\" exceeds pg_peek.max_result_bytes (%d kB)",
								collection, peek_max_result_kb),
						 errhint("Add a limit or a key to the peek, or raise pg_peek.max_result_bytes.")));
			tuplestore_puttuple(out, &tuple);
			emitted++;
		}
		if (limit >= 0 && emitted >= limit)
		{
			hash_seq_term(&status);
			break;
		}
	}
	MemoryContextDelete(counts->cxt);
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
 * Compaction: advance every update at or before since to since and merge,
 * dropping rows whose diffs cancel.  Runs in the maintenance runtime's
 * transaction, after the registry's since was raised (so no peek below it
 * can start).  A row whose merged multiplicity would leave bigint's range
 * leaves the shard as it is: its updates stay apart, and a peek reports
 * the overflow.  Returns how many rows the shard lost.
 */
int64
persist_compact(Oid shard, int64 since)
{
	ShardWriter w;
	Snapshot	snapshot = GetActiveSnapshot();
	RowCounts  *counts;
	ItemPointerData *tids;
	int64		before;
	int64		after = 0;

	shard_writer_open(&w, shard);
	counts = row_counts_create(shard_row_type(w.rel));
	before = scan_consolidate(w.rel, snapshot, since, counts, &tids);
	if (!row_counts_in_range(counts))
		after = before;
	else
	{
		for (int64 i = 0; i < before; i++)
			simple_table_tuple_delete(w.rel, &tids[i], snapshot);
		after = append_counts(&w, counts, since, 1);
	}
	shard_writer_close(&w);
	MemoryContextDelete(counts->cxt);
	pfree(tids);
	return before - after;
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
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	RowCounts  *counts;

	shard_writer_open(&w, shard);
	counts = row_counts_create(shard_row_type(w.rel));
	scan_consolidate(w.rel, snapshot, time, counts, NULL);
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

/*
 * Feed every update with lower <= time < upper to fn, in no particular
 * order: the rows an index needs to hydrate (lower 0) or to follow a seal.
 * Runs in the caller's transaction and snapshot.
 */
void
persist_scan_range(Oid shard, int64 lower, int64 upper,
				   void (*fn) (int64 time, int64 diff, Datum row, void *arg), void *arg)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		args[2] = {Int64GetDatum(lower), Int64GetDatum(upper)};
	Portal		portal;
	char	   *relname = get_rel_name(shard);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("shard table with OID %u does not exist", shard)));
	SPI_connect();
	portal = SPI_cursor_open_with_args(NULL,
									   psprintf("SELECT time, diff, data FROM peek.%s "
												"WHERE time OPERATOR(pg_catalog.>=) $1 "
												"AND time OPERATOR(pg_catalog.<) $2",
												quote_identifier(relname)),
									   2, argtypes, args, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;

			CHECK_FOR_INTERRUPTS();
			fn(DatumGetInt64(SPI_getbinval(tup, desc, SHARD_TIME, &isnull)),
			   DatumGetInt64(SPI_getbinval(tup, desc, SHARD_DIFF, &isnull)),
			   SPI_getbinval(tup, desc, SHARD_DATA, &isnull), arg);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
}

/* How many updates have lower <= time < upper (a hydration's total). */
int64
persist_count_range(Oid shard, int64 lower, int64 upper)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		args[2] = {Int64GetDatum(lower), Int64GetDatum(upper)};
	bool		isnull;
	int64		count;

	SPI_connect();
	if (SPI_execute_with_args(psprintf("SELECT pg_catalog.count(*) FROM peek.%s "
									   "WHERE time OPERATOR(pg_catalog.>=) $1 "
									   "AND time OPERATOR(pg_catalog.<) $2",
									   quote_identifier(get_rel_name(shard))),
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not count shard %u", shard);
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return count;
}

/* The sum of the diffs before upper: the row count at the latest time. */
int64
persist_sum_diffs(Oid shard, int64 upper)
{
	Relation	rel = table_open(shard, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan(rel, snapshot, 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int64		sum = 0;
	bool		isnull;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (DatumGetInt64(slot_getattr(slot, SHARD_TIME, &isnull)) < upper)
			sum = row_add_saturating(sum, DatumGetInt64(slot_getattr(slot, SHARD_DIFF, &isnull)));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return sum;
}
