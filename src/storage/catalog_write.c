/*-------------------------------------------------------------------------
 *
 * catalog_write.c
 *	  Changes to the durable catalog: objects inserted and deleted, their
 *	  uppers sealed (inserted into peek.uppers) and pruned, their sinces,
 *	  allowances, retentions and failures set, and restored or upgraded
 *	  objects adopted; an object's name locked while it is checked (or a
 *	  view dropped), and a peek's wait for a failure being recorded.  In
 *	  the caller's transaction, through SPI as the extension's owner
 *	  (callers check the user's privileges first).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "executor/executor.h"
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
#include "storage/catalog_write.h"

/* catalog_insert is inserting a row */
static bool inserting = false;


/*
 * Lock an object's name until the transaction ends, as its creator and a
 * view's drop do (names of one hash take turns too).  The lock is let go
 * of after the transaction's invalidations are sent, and taking it reads
 * them: a creator that then finds the name free has seen the drop of a
 * view's PostgreSQL view too, not the view still in its caches (42P07).
 */
void
catalog_lock_name(const char *name)
{
	LockDatabaseObject(catalog_relid(), hash_bytes((const unsigned char *) name, strlen(name)),
					   0, ExclusiveLock);
}

/*
 * Whether an object has the name.  The name is locked first: two
 * transactions creating one name take turns, and the later one (in READ
 * COMMITTED) finds the earlier one's committed row here (42710) rather than
 * fail on a unique index of peek.objects or, for a view, of pg_type
 * (23505).
 */
bool
catalog_name_taken(const char *name)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);

	catalog_lock_name(name);
	return catalog_exec("SELECT 1 FROM peek.objects WHERE name OPERATOR(pg_catalog.=) $1",
						1, &argtype, &arg, SPI_OK_SELECT) > 0;
}

/*
 * Wait for the transaction that is recording an object's failure: the
 * maintenance runtime publishes the failure before it commits the reason
 * (on a standby, replay brings the reason: nothing to wait for).
 */
void
catalog_await_failure(PeekObjectId id)
{
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(id);

	if (!RecoveryInProgress())
		(void) catalog_exec("SELECT 1 FROM peek.objects WHERE id OPERATOR(pg_catalog.=) $1 FOR SHARE",
							1, &argtype, &arg, SPI_OK_SELECT);
}

/*
 * A fresh object id: the sequence value in the low bits, the extension's OID
 * in the high bits (see ids.h).  *seq gets the sequence value, which
 * names the object's tables.
 */
PeekObjectId
catalog_new_id(int32 *seq)
{
	Oid			ext = get_extension_oid("pg_peek", false);
	SavedUser	saved;
	bool		isnull;
	int64		value;

	spi_connect_as_owner(&saved);
	spi_check(SPI_execute("SELECT pg_catalog.nextval('peek.object_seq')", false, 1),
			  SPI_OK_SELECT, "nextval");
	value = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	spi_finish_as_owner(&saved);

	if (value > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pg_peek ran out of object ids")));
	*seq = (int32) value;
	return PEEK_OBJECT_ID(ext, value);
}

/* Insert a collection's or an index's row (key_columns names its keys). */
void
catalog_insert(CatalogObject *obj, Datum key_columns)
{
	Oid			argtypes[10] = {INT8OID, TEXTOID, CHAROID, OIDOID, OIDOID, OIDOID,
	INT8OID, TEXTARRAYOID, INT2ARRAYOID, OIDOID};
	Datum		args[10];
	char		nulls[10] = "          ";
	Datum	   *attnums = palloc(sizeof(Datum) * Max(obj->nkeys, 1));

	args[0] = Int64GetDatum(obj->id);
	args[1] = CStringGetTextDatum(obj->name);
	args[2] = CharGetDatum(obj->kind);
	args[3] = ObjectIdGetDatum(obj->row_type);
	args[4] = ObjectIdGetDatum(obj->owner);
	args[5] = ObjectIdGetDatum(obj->shard);
	args[6] = Int64GetDatum(obj->collection);
	args[7] = key_columns;
	for (int i = 0; i < obj->nkeys; i++)
		attnums[i] = Int16GetDatum(obj->attnums[i]);
	args[8] = PointerGetDatum(construct_array(attnums, obj->nkeys, INT2OID, 2, true, TYPALIGN_SHORT));
	args[9] = ObjectIdGetDatum(obj->source);
	if (!OidIsValid(obj->source))
		nulls[9] = 'n';
	if (obj->kind != PEEK_KIND_INDEX)
	{
		nulls[6] = nulls[7] = nulls[8] = 'n';
	}
	else
		nulls[5] = 'n';
	/* not a restored row (see catalog_adopt_restored) */
	inserting = true;
	PG_TRY();
	{
		catalog_exec_nulls("INSERT INTO peek.objects (id, name, kind, row_type, owner, shard, "
						   "collection, key_columns, key_attnums, source) "
						   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
						   10, argtypes, args, nulls, SPI_OK_INSERT);
	}
	PG_FINALLY();
	{
		inserting = false;
	}
	PG_END_TRY();
}

/* Whether the insert under way is catalog_insert's. */
bool
catalog_inserting(void)
{
	return inserting;
}

/* The indexes arranging a collection (for drop_collection). */
List *
catalog_indexes_of(PeekObjectId collection)
{
	return catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
						 "WHERE collection OPERATOR(pg_catalog.=) $1 FOR UPDATE",
						 1, INT8OID, Int64GetDatum(collection), false);
}

void
catalog_delete(PeekObjectId id)
{
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(id);

	catalog_exec("DELETE FROM peek.objects WHERE id OPERATOR(pg_catalog.=) $1",
				 1, &argtype, &arg, SPI_OK_DELETE);
	if (catalog_has_uppers())
		catalog_exec("DELETE FROM peek.uppers WHERE object OPERATOR(pg_catalog.=) " UPPER_KEY_SQL("$1"),
					 1, &argtype, &arg, SPI_OK_DELETE);
}

static void
catalog_set_column(const char *query, PeekObjectId id, int64 value)
{
	Oid			argtypes[2] = {INT8OID, INT8OID};
	Datum		args[2] = {Int64GetDatum(id), Int64GetDatum(value)};

	catalog_exec(query, 2, argtypes, args, SPI_OK_UPDATE);
}

/*
 * Raise an object's upper: what is written to its shard is complete below
 * it.  A source's is written in the transaction that writes its changes, so
 * a crash loses or repeats none of them.  The caller holds the object's
 * row lock (writers serialize on it): no other seal of the object is under
 * way, and the latest snapshot has every seal that committed before the
 * lock.  An upper at or below the one it has is kept; a higher one is
 * inserted into peek.uppers directly, not by a statement: its executor
 * and ON CONFLICT's check were 6% of the maintenance runtime's CPU under
 * single-row writes, a seal or two a round.
 */
void
catalog_set_upper(PeekObjectId id, int64 upper)
{
	Snapshot	latest;
	int64		have;
	Relation	rel;
	EState	   *estate;
	RangeTblEntry *rte;
	ResultRelInfo *result;
	TupleTableSlot *slot;

	if (!catalog_has_uppers())
	{
		catalog_set_column("UPDATE peek.objects SET upper = $2 WHERE id OPERATOR(pg_catalog.=) $1",
						   id, upper);
		return;
	}
	latest = RegisterSnapshot(GetLatestSnapshot());
	have = catalog_read_upper(id, latest);
	UnregisterSnapshot(latest);
	if (upper <= have)
		return;

	/* as logical replication's apply inserts a row: constraints, index */
	rel = table_open(catalog_uppers_relid(), RowExclusiveLock);
	estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(estate, list_make1(rte));
	result = makeNode(ResultRelInfo);
	InitResultRelInfo(result, rel, 1, NULL, 0);
	estate->es_output_cid = GetCurrentCommandId(true);
	ExecOpenIndices(result, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsVirtual);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, 0, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot->tts_values[get_attnum(RelationGetRelid(rel), "object") - 1] = Int64GetDatum(id & UPPER_KEY_MASK);
	slot->tts_values[get_attnum(RelationGetRelid(rel), "upper") - 1] = Int64GetDatum(upper);
	ExecStoreVirtualTuple(slot);
	ExecSimpleRelationInsert(result, estate, slot);
	ExecCloseIndices(result);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	/* the next statement (a read of the upper) sees it */
	CommandCounterIncrement();
}

/*
 * Delete an object's uppers in [from, below), below its upper (the caller
 * read it).  Starting at where the last pruning stopped keeps the scan off
 * the rows that one deleted, which an old snapshot may keep for long.
 * Writers insert above the upper, so this takes no lock they wait for.
 */
void
catalog_prune_uppers(PeekObjectId id, int64 from, int64 below)
{
	Oid			argtypes[3] = {INT8OID, INT8OID, INT8OID};
	Datum		args[3] = {Int64GetDatum(id), Int64GetDatum(from), Int64GetDatum(below)};

	if (!catalog_has_uppers())
		return;
	/*
	 * Rows are keyed by the id's sequence part, which a re-created extension
	 * reuses: delete only while the object itself (its whole id) is there.
	 */
	catalog_exec("DELETE FROM peek.uppers WHERE object OPERATOR(pg_catalog.=) " UPPER_KEY_SQL("$1") " "
				 "AND upper OPERATOR(pg_catalog.>=) $2 AND upper OPERATOR(pg_catalog.<) $3 "
				 "AND EXISTS (SELECT FROM peek.objects o WHERE o.id OPERATOR(pg_catalog.=) $1)",
				 3, argtypes, args, SPI_OK_DELETE);
}

void
catalog_set_allowed_since(PeekObjectId id, int64 since)
{
	catalog_set_column("UPDATE peek.objects SET allowed_since = $2 WHERE id OPERATOR(pg_catalog.=) $1",
					   id, since);
}

/*
 * An object's retention: an interval, keep_all (NULL) or, without set, the
 * setting's (pg_peek.retention).  Kept as the user wrote it, for the views
 * and a dump.
 */
void
catalog_set_retention(PeekObjectId id, Datum retention, bool keep_all, bool set)
{
	Oid			argtypes[3] = {INT8OID, INTERVALOID, BOOLOID};
	Datum		args[3] = {Int64GetDatum(id), retention, BoolGetDatum(set)};
	char		nulls[3] = {' ', keep_all || !set ? 'n' : ' ', ' '};

	catalog_exec_nulls("UPDATE peek.objects SET retention = $2, retention_set = $3 "
					   "WHERE id OPERATOR(pg_catalog.=) $1",
					   3, argtypes, args, nulls, SPI_OK_UPDATE);
}

void
catalog_set_since(PeekObjectId id, int64 since)
{
	/*
	 * Only rises: a late compaction must not undo a reload's
	 * (capture/loader.c); a since it has already writes no row (an index's
	 * is set again while views hold its spine below it).
	 */
	catalog_set_column("UPDATE peek.objects SET since = $2 "
					   "WHERE id OPERATOR(pg_catalog.=) $1 AND since OPERATOR(pg_catalog.<) $2",
					   id, since);
}

/*
 * A fold's change of a collection's base, from old_base to new_base, and
 * of its since (which only rises), in the fold's transaction.  A base whose
 * time another fold changed meanwhile (a source's reload) is not this
 * fold's to replace: it fails with a serialization failure, which rolls
 * the fold back and is retried.  A catalog from before 0.3 has no column
 * for it: there the base is at the since (catalog_read_since), and the
 * caller moves it no further.  The row's lock is waited for, as a writer holds it
 * only briefly.
 */
void
catalog_set_base(PeekObjectId id, int64 since, int64 old_base, int64 new_base)
{
	Oid			argtypes[4] = {INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		args[4] = {Int64GetDatum(id), Int64GetDatum(since), Int64GetDatum(old_base),
	Int64GetDatum(new_base)};

	if (!catalog_keeps_base_time())
	{
		catalog_set_since(id, since);
		return;
	}
	if (catalog_exec("UPDATE peek.objects SET since = GREATEST(since, $2), base_time = $4 "
					 "WHERE id OPERATOR(pg_catalog.=) $1 AND COALESCE(base_time, "
					 "CASE WHEN since OPERATOR(pg_catalog.>) 0 THEN since ELSE -1 END) "
					 "OPERATOR(pg_catalog.=) $3",
					 4, argtypes, args, SPI_OK_UPDATE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not fold the shard of object " INT64_FORMAT " due to a concurrent fold",
						id)));
}

/*
 * Rows that reached peek.objects other than through catalog_insert: loaded
 * by pg_restore.  Their ids were made with the dumped database's extension
 * OID: they get this extension's (an id names the extension it belongs to,
 * as its slot name, drop notices and DROP EXTENSION checks assume), keeping
 * the sequence part, which names their tables.  A restored source has no
 * replication slot: it fails, with the remedy in its reason.  Returns the
 * restored collections and views (the objects with a shard), as they were.
 */
List *
catalog_adopt_restored(PeekObjectId *ids, int nids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(nids, 1));
	Oid			argtypes[2] = {INT8ARRAYOID, TEXTOID};
	Datum		args[2];
	List	   *restored;

	for (int i = 0; i < nids; i++)
		elems[i] = Int64GetDatum(ids[i]);
	args[0] = PointerGetDatum(construct_array(elems, nids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[1] = CStringGetTextDatum("restored from a dump without its replication slot: drop the source and create it again");

	restored = catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
							 "WHERE id OPERATOR(pg_catalog.=) ANY ($1) AND kind OPERATOR(pg_catalog.<>) 'i'",
							 1, INT8ARRAYOID, args[0], false);
	catalog_exec("UPDATE peek.objects SET failure = COALESCE(failure, $2) "
				 "WHERE id OPERATOR(pg_catalog.=) ANY ($1) AND kind OPERATOR(pg_catalog.=) 'c' "
				 "AND source IS NOT NULL",
				 2, argtypes, args, SPI_OK_UPDATE);
	(void) catalog_adopt_foreign_ids(get_extension_oid("pg_peek", false));
	return restored;
}

/*
 * Give every object whose id names another extension OID this extension's,
 * keeping the sequence part: rows restored by pg_restore, and after
 * pg_upgrade (which copies peek.objects' files but creates the extension
 * anew, with a new OID) all of them.  Returns how many.
 */
uint64
catalog_adopt_foreign_ids(Oid extension)
{
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum((int64) extension);

	/* one statement, so that the collection column's key follows */
	return catalog_exec("UPDATE peek.objects SET "
						"id = $1 OPERATOR(pg_catalog.<<) 32 OPERATOR(pg_catalog.|) (id OPERATOR(pg_catalog.&) 4294967295), "
						"collection = $1 OPERATOR(pg_catalog.<<) 32 OPERATOR(pg_catalog.|) (collection OPERATOR(pg_catalog.&) 4294967295) "
						"WHERE id OPERATOR(pg_catalog.>>) 32 OPERATOR(pg_catalog.<>) $1",
						1, &argtype, &arg, SPI_OK_UPDATE);
}

/* Record why an object failed; false if its row is gone (dropped). */
bool
catalog_set_failure(PeekObjectId id, const char *failure)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		args[2] = {Int64GetDatum(id), CStringGetTextDatum(failure)};

	return catalog_exec("UPDATE peek.objects SET failure = $2 WHERE id OPERATOR(pg_catalog.=) $1",
						2, argtypes, args, SPI_OK_UPDATE) > 0;
}

