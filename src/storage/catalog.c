/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The durable catalog: rows of peek.objects read and written through SPI
 *	  as the extension's owner (callers check the user's privileges first),
 *	  but the reads that run after every round or peek (catalog_read,
 *	  catalog_find), which read the table through its indexes directly.
 *	  The notices that tell the runtimes about committed changes are
 *	  notify.c's.
 *
 *	  Row locks give the serialization rules: writers of one collection take
 *	  FOR NO KEY UPDATE (times follow commit order), drop takes FOR UPDATE,
 *	  compaction skips a row a writer holds instead of waiting behind it.
 *	  A user's statements lock rows by a query here (catalog_lookup), a
 *	  runtime's directly (catalog_locks.c).
 *
 *	  An object's upper is not in its row but in peek.uppers
 *	  (catalog_uppers.c), read after each query of rows.
 *
 *	  Must not touch shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/settings.h"
#include "common/spi.h"
#include "storage/catalog.h"
#include "storage/catalog_internal.h"


/* Where a query's result has OBJECT_COLUMNS: in that order. */
static const AttrNumber query_columns[NUM_OBJECT_COLUMNS] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

static int64
getint64(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * A CatalogObject from a tuple that has OBJECT_COLUMNS at cols[] (a query's
 * result, or a row of peek.objects itself).
 */
static CatalogObject *
object_from_tuple(HeapTuple tup, TupleDesc desc, const AttrNumber *cols)
{
	CatalogObject *obj = palloc0(sizeof(CatalogObject));
	bool		isnull;

	obj->id = getint64(tup, desc, cols[0]);
	obj->name = TextDatumGetCString(SPI_getbinval(tup, desc, cols[1], &isnull));
	obj->kind = DatumGetChar(SPI_getbinval(tup, desc, cols[2], &isnull));
	obj->row_type = DatumGetObjectId(SPI_getbinval(tup, desc, cols[3], &isnull));
	obj->owner = DatumGetObjectId(SPI_getbinval(tup, desc, cols[4], &isnull));
	obj->shard = DatumGetObjectId(SPI_getbinval(tup, desc, cols[5], &isnull));
	if (isnull)
		obj->shard = InvalidOid;
	obj->upper = cols[6] != InvalidAttrNumber ? getint64(tup, desc, cols[6]) : 0;
	obj->since = getint64(tup, desc, cols[7]);
	obj->allowed_since = getint64(tup, desc, cols[8]);
	obj->collection = getint64(tup, desc, cols[9]);
	{
		Datum		d = SPI_getbinval(tup, desc, cols[10], &isnull);

		if (!isnull)
		{
			ArrayType  *arr = DatumGetArrayTypeP(d);
			Datum	   *elems;
			int			n;

			deconstruct_array(arr, INT2OID, 2, true, TYPALIGN_SHORT, &elems, NULL, &n);
			obj->nkeys = Min(n, INDEX_MAX_KEYS);
			for (int i = 0; i < obj->nkeys; i++)
				obj->attnums[i] = DatumGetInt16(elems[i]);
		}
	}
	obj->source = DatumGetObjectId(SPI_getbinval(tup, desc, cols[11], &isnull));
	if (isnull)
		obj->source = InvalidOid;
	{
		Datum		d = SPI_getbinval(tup, desc, cols[12], &isnull);

		obj->failure = isnull ? NULL : TextDatumGetCString(d);
	}
	obj->retention_ms = PEEK_RETENTION_KEEP_ALL;
	return obj;
}

/*
 * An object's retention from a row of peek.objects (its retention and
 * retention_set columns): milliseconds (a month counted as 30 days, as interval
 * comparison counts it), or PEEK_RETENTION_DEFAULT if set_retention never
 * gave it one, PEEK_RETENTION_KEEP_ALL for NULL.
 */
static int64
retention_from_tuple(HeapTuple tup, TupleDesc desc, AttrNumber retention_col,
					 AttrNumber set_col)
{
	bool		isnull;
	Datum		d = heap_getattr(tup, set_col, desc, &isnull);
	Interval   *retention;
	double		ms;

	if (isnull || !DatumGetBool(d))
		return PEEK_RETENTION_DEFAULT;
	d = heap_getattr(tup, retention_col, desc, &isnull);
	if (isnull)
		return PEEK_RETENTION_KEEP_ALL;
	retention = DatumGetIntervalP(d);
	ms = retention->time / 1000.0 +
		((double) retention->month * DAYS_PER_MONTH + retention->day) * SECS_PER_DAY * 1000.0;
	/*
	 * A CHECK keeps it from being negative.  The cap (about 146,000 years)
	 * is far beyond any upper's age, and keeps the runtime's cutoff, now
	 * less the retention in microseconds, from overflowing: '400000 years'
	 * wrapped around to a cutoff in the future and kept no history at all.
	 */
	return (int64) Max(Min(ms, (double) (PG_INT64_MAX / 2 / 1000)), 0.0);
}

/* What an object of the kind is called in messages. */
const char *
catalog_kind_noun(char kind)
{
	return kind == PEEK_KIND_INDEX ? "index" : kind == PEEK_KIND_VIEW ? "view" : "collection";
}

static const char *
kind_with_article(char kind)
{
	return kind == PEEK_KIND_INDEX ? "an index" : kind == PEEK_KIND_VIEW ? "a view" : "a collection";
}

/*
 * Whether an object of the kind is what a caller asking for wanted: 0 is
 * any kind, and a view is a collection (its rows are read, arranged and
 * compacted as any collection's; the functions that write rows refuse it).
 */
bool
catalog_kind_matches(char wanted, char kind)
{
	return wanted == 0 || wanted == kind ||
		(wanted == PEEK_KIND_COLLECTION && kind == PEEK_KIND_VIEW);
}

/*
 * The catalog's statements are few and fixed (string literals), and the
 * runtimes run some of them many times a second: each is planned once per
 * process and kept, keyed by the literal's address, as a generic plan (the
 * plan cache would otherwise plan the ones with parameters again at each
 * execution, its custom plans looking cheaper: that planning was 40% of the
 * maintenance runtime's time under a write load, each view's round and
 * publication reading the objects' rows).  The plan cache replans one whose
 * tables changed (a drop and re-create of the extension).
 */
typedef struct SavedPlan
{
	const char *query;			/* key */
	SPIPlanPtr	plan;
} SavedPlan;

static HTAB *saved_plans = NULL;

/* Execute a catalog statement through its kept plan; SPI is connected. */
int
catalog_execute_saved(const char *query, int nargs, Oid *argtypes, Datum *args,
			  const char *nulls, bool read_only)
{
	SavedPlan  *saved;

	if (saved_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(const char *);
		ctl.entrysize = sizeof(SavedPlan);
		ctl.hcxt = TopMemoryContext;
		saved_plans = hash_create("pg_peek catalog plans", 32, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	saved = hash_search(saved_plans, &query, HASH_FIND, NULL);
	if (saved == NULL)
	{
		/* entered only once kept: an error while planning leaves no entry */
		SPIPlanPtr	plan = SPI_prepare_cursor(query, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare \"%s\": %s", query,
				 SPI_result_code_string(SPI_result));
		saved = hash_search(saved_plans, &query, HASH_ENTER, NULL);
		saved->plan = plan;
	}
	return SPI_execute_plan(saved->plan, args, nulls, read_only, 0);
}

/* The listed objects' uppers as the snapshot sees them (catalog_read_uppers). */
static void
read_objects_uppers(List *objects, Snapshot snapshot)
{
	PeekObjectId *ids = palloc(sizeof(PeekObjectId) * Max(1, list_length(objects)));
	int64	   *uppers = palloc(sizeof(int64) * Max(1, list_length(objects)));
	ListCell   *lc;

	foreach(lc, objects)
		ids[foreach_current_index(lc)] = ((CatalogObject *) lfirst(lc))->id;
	catalog_read_uppers(list_length(objects), ids, uppers, snapshot);
	foreach(lc, objects)
		((CatalogObject *) lfirst(lc))->upper = uppers[foreach_current_index(lc)];
	pfree(ids);
	pfree(uppers);
}

/* Run a query returning OBJECT_COLUMNS as the extension owner: its objects. */
List *
catalog_query_objects(const char *query, int nargs, Oid argtype, Datum arg, bool read_only)
{
	MemoryContext caller = CurrentMemoryContext;
	SavedUser	saved;
	List	   *result = NIL;
	Oid			peek = get_namespace_oid("peek", true);
	Oid			objects = OidIsValid(peek) ? get_relname_relid("objects", peek) : InvalidOid;
	bool		has_uppers;
	Snapshot	snapshot;

	/*
	 * Lock peek.objects before asking which catalog is installed, as the
	 * query would: an ALTER EXTENSION UPDATE dropping the column of the
	 * uppers then commits before the lock (whose taking reads its
	 * invalidations: peek.uppers is seen) or after the query, not between
	 * the question and a query planned for the old catalog.
	 */
	if (OidIsValid(objects))
		LockRelationOid(objects, AccessShareLock);
	has_uppers = catalog_has_uppers();
	if (!has_uppers)
		query = catalog_query_before_uppers(query);
	spi_connect_as_owner(&saved);
	spi_check(catalog_execute_saved(query, nargs, &argtype, &arg, NULL, read_only),
			  SPI_OK_SELECT, query);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		CatalogObject *obj = object_from_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
											   query_columns);

		result = lappend(result, obj);
		MemoryContextSwitchTo(spi);
	}
	spi_finish_as_owner(&saved);
	if (!has_uppers)
		return result;

	/*
	 * The uppers in the query's snapshot; a query that locks its rows took
	 * a new one, and returned their latest versions: theirs in a new one.
	 */
	snapshot = RegisterSnapshot(read_only ? GetActiveSnapshot() : GetTransactionSnapshot());
	read_objects_uppers(result, snapshot);
	UnregisterSnapshot(snapshot);
	return result;
}

static Relation
objects_open(const char *index_name, Oid *index)
{
	return catalog_table_open("objects", index_name, index);
}

/*
 * Where peek.objects has OBJECT_COLUMNS (the upper only in a catalog from
 * before 0.3: with uppers, InvalidAttrNumber).
 */
static void
object_columns(Relation rel, bool uppers, AttrNumber *cols)
{
	static const char *const names[NUM_OBJECT_COLUMNS] = {
		"id", "name", "kind", "row_type", "owner", "shard", NULL, "since",
		"allowed_since", "collection", "key_attnums", "source", "failure"
	};

	for (int i = 0; i < NUM_OBJECT_COLUMNS; i++)
		cols[i] = names[i] ? get_attnum(RelationGetRelid(rel), names[i]) : InvalidAttrNumber;
	if (!uppers)
		cols[6] = get_attnum(RelationGetRelid(rel), "upper");
}

/* Run one statement with parameters as the extension owner. */
uint64
catalog_exec_nulls(const char *query, int nargs, Oid *argtypes, Datum *args,
				   const char *nulls, int expected)
{
	SavedUser	saved;
	uint64		processed;

	spi_connect_as_owner(&saved);
	spi_check(catalog_execute_saved(query, nargs, argtypes, args, nulls, false),
			  expected, query);
	processed = SPI_processed;
	spi_finish_as_owner(&saved);
	return processed;
}

uint64
catalog_exec(const char *query, int nargs, Oid *argtypes, Datum *args, int expected)
{
	return catalog_exec_nulls(query, nargs, argtypes, args, NULL, expected);
}

/*
 * Find an object by name, without locking its row; NULL if there is none.
 * Read through the name index in the active snapshot, and the table's lock
 * is let go of at once, as a system catalog's is: a peek that then waits
 * (on a standby, for replay) must not hold a lock that replaying the
 * primary's AccessExclusiveLock on peek.objects would wait for.
 */
CatalogObject *
catalog_find(const char *name)
{
	Oid			index;
	Relation	rel = objects_open("objects_name_key", &index);
	AttrNumber	cols[NUM_OBJECT_COLUMNS];
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	CatalogObject *obj = NULL;
	Snapshot	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	bool		uppers = catalog_has_uppers();

	object_columns(rel, uppers, cols);
	/*
	 * systable_beginscan takes the key by its column in the table; the
	 * search compares in the index's collation (the column's), which need
	 * not be C.
	 */
	ScanKeyInit(&key, cols[1], BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(name));
	key.sk_collation = TupleDescAttr(RelationGetDescr(rel), cols[1] - 1)->attcollation;
	scan = systable_beginscan(rel, index, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		obj = object_from_tuple(tuple, RelationGetDescr(rel), cols);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (obj != NULL && uppers)
		obj->upper = catalog_read_upper(obj->id, snapshot);
	return obj;
}

/*
 * Find an object by name.  kind 0 accepts any kind.  Raises 42704 if it
 * does not exist and 42809 if it is of the other kind.
 */
CatalogObject *
catalog_lookup(const char *name, char kind, CatalogLock lock)
{
	const char *query;
	List	   *found;
	CatalogObject *obj;

	switch (lock)
	{
		case CATALOG_KEEP:
			query = "SELECT " OBJECT_COLUMNS " FROM peek.objects WHERE name OPERATOR(pg_catalog.=) $1 FOR KEY SHARE";
			break;
		case CATALOG_WRITE:
			query = "SELECT " OBJECT_COLUMNS " FROM peek.objects WHERE name OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE";
			break;
		case CATALOG_DROP:
			query = "SELECT " OBJECT_COLUMNS " FROM peek.objects WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE";
			break;
		default:
			query = NULL;
			break;
	}
	if (query != NULL)
	{
		found = catalog_query_objects(query, 1, TEXTOID, CStringGetTextDatum(name), false);
		obj = found != NIL ? linitial(found) : NULL;
		if (obj != NULL)
			obj->upper = catalog_locked_upper(obj->id, obj->upper);
	}
	else
		obj = catalog_find(name);

	if (obj == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s \"%s\" does not exist", kind ? catalog_kind_noun(kind) : "object", name)));
	if (!catalog_kind_matches(kind, obj->kind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is %s, not %s", name, kind_with_article(obj->kind),
						kind_with_article(kind))));
	return obj;
}

/* The catalog table, peek.objects (InvalidOid without the extension). */
Oid
catalog_relid(void)
{
	Oid			peek = get_namespace_oid("peek", true);

	return OidIsValid(peek) ? get_relname_relid("objects", peek) : InvalidOid;
}

/*
 * Whether the catalog records a base's time (0.3 on): before, a base is
 * at its since (base_time_of), so a fold moves it no further.
 */
bool
catalog_keeps_base_time(void)
{
	return get_attnum(catalog_relid(), "base_time") != InvalidAttrNumber;
}

/*
 * A peek at time of an object compacted to since fails: 72000, whoever
 * finds it (the gate, a walk reading the durable since, a standby's read).
 * No setting brings that history back: the hint says how to keep more.
 */
void
catalog_raise_compacted(const char *noun, const char *name, int64 time, int64 since)
{
	ereport(ERROR,
			(errcode(ERRCODE_SNAPSHOT_TOO_OLD),
			 errmsg("cannot peek %s \"%s\" at time " INT64_FORMAT ": it is compacted to since " INT64_FORMAT,
					noun, name, time, since),
			 RecoveryInProgress() ?
			 errhint("On a standby, the primary's compaction decides: peek at a time at or after " INT64_FORMAT ".  The primary keeps more history from now on with peek.set_retention or peek.allow_compaction.",
					 since) :
			 errhint("Peek at a time at or after " INT64_FORMAT ": the history before it is gone.  peek.set_retention or peek.allow_compaction keep more of it from now on.",
					 since)));
}

/*
 * The time a collection's base stands at, from its row's base_time and
 * since: a catalog from before 0.3 (no column) or a row it left (NULL) has
 * the base where compaction put it, at the since, or none (-1) at since 0,
 * whose updates are as they were written.
 */
static int64
base_time_of(HeapTuple tuple, Relation rel, int64 since)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), "base_time");
	bool		isnull = true;
	Datum		d = (Datum) 0;

	if (attnum != InvalidAttrNumber)
		d = heap_getattr(tuple, attnum, RelationGetDescr(rel), &isnull);
	if (!isnull)
		return DatumGetInt64(d);
	return since > 0 ? since : PEEK_BASE_TIME;
}

/*
 * A collection's durable since and the time of its base (*base_time, if
 * not NULL) as the snapshot sees them, in one row version, so that a read
 * of its shard in the same snapshot finds the base that time says.  Found
 * by id through the primary key, or, with id 0 (never an object's), by
 * shard (a whole scan of the catalog).  Without the row: 0 and no base.
 */
static int64
read_since(PeekObjectId id, Oid shard, Snapshot snapshot, int64 *base_time)
{
	Oid			index;
	Relation	rel = objects_open("objects_pkey", &index);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int64		since = 0;
	int64		base = PEEK_BASE_TIME;
	bool		isnull;

	if (id != 0)
		ScanKeyInit(&key, get_attnum(RelationGetRelid(rel), "id"), BTEqualStrategyNumber,
					F_INT8EQ, Int64GetDatum(id));
	else
		ScanKeyInit(&key, get_attnum(RelationGetRelid(rel), "shard"), BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(shard));
	scan = systable_beginscan(rel, index, id != 0, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		since = DatumGetInt64(heap_getattr(tuple, get_attnum(RelationGetRelid(rel), "since"),
										   RelationGetDescr(rel), &isnull));
		base = base_time_of(tuple, rel, since);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (base_time != NULL)
		*base_time = base;
	return since;
}

/* An object's durable since and base time (a persist peek: no SPI). */
int64
catalog_read_since(PeekObjectId id, Snapshot snapshot, int64 *base_time)
{
	return read_since(id, InvalidOid, snapshot, base_time);
}

/* The base time of the collection with this shard (the reads of a range). */
int64
catalog_read_shard_base(Oid shard, Snapshot snapshot)
{
	int64		base_time;

	(void) read_since(0, shard, snapshot, &base_time);
	return base_time;
}

/*
 * Why an object failed, or the collection an index arranges, or NULL.
 * *noun names what failed: "index", "collection", "view" or "source".
 * Read in the latest snapshot: a peek that waited learns of a failure the
 * runtime committed after the peek's statement began.
 */
char *
catalog_failure(PeekObjectId id, const char **noun)
{
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(id);
	MemoryContext caller = CurrentMemoryContext;
	char	   *failure = NULL;
	SavedUser	saved;
	bool		isnull;

	spi_connect_as_owner(&saved);
	PushActiveSnapshot(GetLatestSnapshot());
	/* f: the object itself if it failed, else its collection */
	spi_check(catalog_execute_saved("SELECT f.failure, f.kind, f.source IS NOT NULL "
							"FROM peek.objects o JOIN peek.objects f "
							"ON f.id OPERATOR(pg_catalog.=) o.id AND o.failure IS NOT NULL "
							"OR f.id OPERATOR(pg_catalog.=) o.collection AND o.failure IS NULL "
							"WHERE o.id OPERATOR(pg_catalog.=) $1 AND f.failure IS NOT NULL",
							1, &argtype, &arg, NULL, true),
			  SPI_OK_SELECT, "failure lookup");
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		d = SPI_getbinval(tup, desc, 1, &isnull);
		char		kind = DatumGetChar(SPI_getbinval(tup, desc, 2, &isnull));

		failure = MemoryContextStrdup(caller, TextDatumGetCString(d));
		if (kind != PEEK_KIND_COLLECTION)
			*noun = catalog_kind_noun(kind);
		else
			*noun = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)) ? "source" : "collection";
	}
	PopActiveSnapshot();
	spi_finish_as_owner(&saved);
	return failure;
}

/*
 * A peek of a failed object (or of an index of a failed collection) fails
 * with the reason.
 */
void
catalog_raise_if_failed(PeekObjectId object, char kind, const char *name)
{
	const char *noun = NULL;
	char	   *failure = catalog_failure(object, &noun);

	if (failure != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s \"%s\" is failed: %s",
						kind == PEEK_KIND_INDEX ? "index" : noun, name, failure),
				 errhint("Drop the %s and create it again.", noun)));
}

static bool
id_in(PeekObjectId id, PeekObjectId *ids, int nids)
{
	for (int i = 0; i < nids; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * Whether a row of peek.objects is one catalog_read was given or an index
 * of one of them, read from its id and collection alone: a CatalogObject
 * made of every row, a failure text and all, for each view's round and
 * publication was 44% of the maintenance runtime's CPU with 3,000 objects.
 */
static bool
row_given(HeapTuple tuple, TupleDesc desc, const AttrNumber *cols,
		  PeekObjectId *ids, int nids)
{
	PeekObjectId collection = getint64(tuple, desc, cols[9]);

	return nids < 0 || id_in(getint64(tuple, desc, cols[0]), ids, nids) ||
		(collection != 0 && id_in(collection, ids, nids));
}

/* catalog_read's rows so far, and how it reads them */
typedef struct ObjectsRead
{
	Relation	rel;
	Snapshot	snapshot;
	AttrNumber	cols[NUM_OBJECT_COLUMNS];
	AttrNumber	retention_col;
	AttrNumber	retention_set_col;
	List	   *objects;
} ObjectsRead;

static void
take_row(ObjectsRead *read, HeapTuple tuple)
{
	CatalogObject *obj = object_from_tuple(tuple, RelationGetDescr(read->rel), read->cols);

	if (read->retention_set_col != InvalidAttrNumber)
		obj->retention_ms = retention_from_tuple(tuple, RelationGetDescr(read->rel),
												 read->retention_col, read->retention_set_col);
	read->objects = lappend(read->objects, obj);
}

/*
 * Take the rows not taken yet whose column (cols[col]: the id or the
 * collection) is value, found through the index on it.
 */
static void
take_rows_by(ObjectsRead *read, Oid index, int col, PeekObjectId value)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key, read->cols[col], BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(value));
	scan = systable_beginscan(read->rel, index, true, read->snapshot, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		if (catalog_object_in(read->objects,
							  getint64(tuple, RelationGetDescr(read->rel), read->cols[0])) == NULL)
			take_row(read, tuple);
	systable_endscan(scan);
}

/*
 * The rows of the given objects, with each given collection's indexes and
 * each given index's collection, or of all of them with nids < 0, with
 * their retention (all history kept in a catalog from before 0.3, as 0.2
 * kept it: an object written after ALTER EXTENSION UPDATE is read again)
 * and their uppers, in the active snapshot.  Read through the primary key
 * and the index on collection, not by a query: the maintenance runtime
 * reads a few rows after each round, and a query's executor cost several
 * times the reads, a scan of every row 28% of its CPU with 3,000 objects.
 * All of them, or a catalog from before 0.3 (no index on collection), are
 * a scan of the table.  The table's lock is held to the end of the
 * transaction, as a query's would be (see catalog_query_objects).
 */
List *
catalog_read(PeekObjectId *ids, int nids)
{
	Oid			peek = get_namespace_oid("peek", true);
	Oid			objects = OidIsValid(peek) ? get_relname_relid("objects", peek) : InvalidOid;
	ObjectsRead read;
	bool		uppers;
	Oid			pkey;
	Oid			by_collection;

	if (OidIsValid(objects))
		LockRelationOid(objects, AccessShareLock);
	uppers = catalog_has_uppers();
	read.rel = objects_open("objects_pkey", &pkey);
	read.snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
	object_columns(read.rel, uppers, read.cols);
	read.retention_col = get_attnum(RelationGetRelid(read.rel), "retention");
	read.retention_set_col = get_attnum(RelationGetRelid(read.rel), "retention_set");
	read.objects = NIL;
	by_collection = nids >= 0 ? get_relname_relid("objects_collection_idx", peek) : InvalidOid;
	if (OidIsValid(by_collection))
	{
		for (int i = 0; i < nids; i++)
		{
			take_rows_by(&read, pkey, 0, ids[i]);
			take_rows_by(&read, by_collection, 9, ids[i]);
		}
	}
	else
	{
		TableScanDesc scan = table_beginscan(read.rel, read.snapshot, 0, NULL);
		HeapTuple	tuple;

		while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
			if (row_given(tuple, RelationGetDescr(read.rel), read.cols, ids, nids))
				take_row(&read, tuple);
		table_endscan(scan);
	}
	/* the given indexes' collections not given (all are taken with nids < 0) */
	for (int i = 0; nids >= 0 && i < list_length(read.objects); i++)
	{
		PeekObjectId collection = ((CatalogObject *) list_nth(read.objects, i))->collection;

		if (collection != 0)
			take_rows_by(&read, pkey, 0, collection);
	}
	table_close(read.rel, AccessShareLock);

	if (uppers)
		read_objects_uppers(read.objects, read.snapshot);
	return read.objects;
}

/* The object with the id among objects read (catalog_read), or NULL. */
CatalogObject *
catalog_object_in(List *objects, PeekObjectId id)
{
	ListCell   *lc;

	foreach(lc, objects)
	{
		CatalogObject *obj = lfirst(lc);

		if (obj->id == id)
			return obj;
	}
	return NULL;
}

/* ---- privileges ---- */

void
catalog_check_owner(CatalogObject *obj)
{
	if (!has_privs_of_role(GetUserId(), obj->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of %s \"%s\"", catalog_kind_noun(obj->kind), obj->name)));
}

/*
 * Who may peek: the owner and members of pg_read_all_data; for a source and
 * its indexes, whoever may SELECT from the table (while it exists).
 */
void
catalog_check_reader(CatalogObject *obj)
{
	char	   *table = OidIsValid(obj->source) ? get_rel_name(obj->source) : NULL;

	if (table != NULL)
	{
		if (pg_class_aclcheck(obj->source, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to peek %s \"%s\"",
							obj->kind == PEEK_KIND_INDEX ? "index" : "source", obj->name),
					 errdetail("Peeking a source or its indexes requires SELECT on table \"%s\".",
							   table)));
		return;
	}
	if (!has_privs_of_role(GetUserId(), obj->owner) &&
		!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_DATA))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to peek %s \"%s\"", catalog_kind_noun(obj->kind), obj->name),
				 errdetail("Only the owner and members of pg_read_all_data may peek.")));
}
