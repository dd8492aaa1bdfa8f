/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  peek.create_collection, create_source, create_index and their drops,
 *	  and the trigger that adopts restored objects: argument and privilege
 *	  checks, then the catalog and shard changes in the caller's
 *	  transaction.  Committed changes reach the runtimes as notices
 *	  (ipc/notify.c).  Must not touch shared memory directly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "capture/capture.h"
#include "capture/decoder.h"
#include "common/rows.h"
#include "ipc/notify.h"
#include "sql/arguments.h"
#include "sql/ddl.h"
#include "sql/peek_call.h"
#include "sql/view_uses_guard.h"
#include "storage/catalog_sources.h"
#include "storage/catalog_views.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"
#include "storage/standby_replay.h"

PEEK_SQL_FUNCTION(peek_create_collection);
PEEK_SQL_FUNCTION(peek_drop_collection);
PEEK_SQL_FUNCTION(peek_create_source);
PEEK_SQL_FUNCTION(peek_drop_source);
PEEK_SQL_FUNCTION(peek_objects_restored);
PEEK_SQL_FUNCTION(peek_create_index);
PEEK_SQL_FUNCTION(peek_drop_index);

/* ---- collections ---- */

/*
 * Whether a type, or one it is made of (row_type_walk), lives in a
 * temporary schema: it goes at the end of its session, and a collection
 * must outlast that.
 */
static bool
type_in_temporary_schema(Oid type, void *arg)
{
	ObjectAddress address;

	ObjectAddressSet(address, TypeRelationId, type);
	return isAnyTempNamespace(get_object_namespace(&address));
}

Datum
peek_create_collection(PG_FUNCTION_ARGS)
{
	char	   *name = arg_new_name(fcinfo, 0, "collection name");
	Oid			row_type;
	CatalogObject obj = {0};
	int32		seq;
	AclResult	aclresult;

	standby_refuse_writes("create_collection");
	arg_refuse_extension_script("create_collection");
	arg_require(fcinfo, 1, "row type");
	row_type = PG_GETARG_OID(1);
	if (get_typtype(row_type) != TYPTYPE_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("row type of collection \"%s\" must be a composite type, not %s",
						name, format_type_be(row_type))));
	aclresult = pg_type_aclcheck(row_type, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error_type(aclresult, row_type);
	if (row_type_walk(row_type, type_in_temporary_schema, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("row type of collection \"%s\" cannot be temporary: %s",
						name, format_type_be(row_type)),
				 errdetail("A temporary type, or a type with a field of one, is dropped at the end of its session.")));
	arg_check_name_free(name);

	obj.id = catalog_new_id(&seq);
	obj.name = name;
	obj.kind = PEEK_KIND_COLLECTION;
	obj.row_type = row_type;
	obj.owner = GetUserId();
	obj.shard = persist_create_shard(seq, row_type);
	catalog_insert(&obj, (Datum) 0);
	notify_created(obj.id);
	PG_RETURN_VOID();
}

/*
 * Delete an object's catalog row; the runtimes hear of it at commit.  This
 * session's cached lookup goes now: its later peeks, in this transaction
 * too, must see the drop.
 */
static void
drop_object(CatalogObject *obj)
{
	catalog_delete(obj->id);
	notify_dropped(obj->id);
	peek_call_forget(obj->name);
}

/*
 * Drop a collection (or source, or view) with its indexes and its shard,
 * once the caller has checked that the user owns it.  Refused while a view
 * reads it: the caller's lock on its row (CATALOG_DROP) keeps a new view
 * from starting to.
 */
void
ddl_drop_collection_and_indexes(CatalogObject *coll)
{
	ListCell   *lc;
	char	   *view = catalog_view_reading(coll->name);

	if (view != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop %s \"%s\" because view \"%s\" reads it",
						catalog_kind_noun(coll->kind), coll->name, view),
				 errhint("Drop the view first with peek.drop_view.")));

	/* like a table's indexes, the collection's indexes go with it */
	foreach(lc, catalog_indexes_of(coll->id))
		drop_object(lfirst(lc));
	drop_object(coll);
	persist_drop_shard(coll->shard);
	if (OidIsValid(coll->source))
		persist_drop_source_type(coll->row_type);
}

Datum
peek_drop_collection(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "collection name");
	CatalogObject *coll;

	coll = arg_owned_object("drop_collection", name, PEEK_KIND_COLLECTION, CATALOG_DROP);
	arg_check_not_source(coll, "Use peek.drop_source.");
	arg_check_not_view(coll, "Use peek.drop_view.");
	ddl_drop_collection_and_indexes(coll);
	PG_RETURN_VOID();
}

/* ---- sources ---- */

/*
 * create_source(name, table): a collection of the table's rows, fed from its
 * committed changes by the maintenance runtime; once this transaction
 * commits, a loader it starts creates the slot and loads the existing rows.
 */
Datum
peek_create_source(PG_FUNCTION_ARGS)
{
	char	   *name = arg_new_name(fcinfo, 0, "source name");
	Oid			relid;
	HeapTuple	tup;
	Form_pg_class rel;
	char	   *relname;
	char		relkind;
	char		replident;
	Oid			reltype;
	CatalogObject obj = {0};
	int32		seq;

	standby_refuse_writes("create_source");
	arg_refuse_extension_script("create_source");
	arg_require(fcinfo, 1, "source table");
	relid = PG_GETARG_OID(1);
	capture_check_requirements(name);

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	rel = (Form_pg_class) GETSTRUCT(tup);
	relname = pstrdup(NameStr(rel->relname));
	relkind = rel->relkind;
	replident = rel->relreplident;
	reltype = rel->reltype;
	if (relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot capture \"%s\": it is not a table", relname),
				 errdetail("Sources capture ordinary tables; partitioned tables, views and foreign tables are not supported.")));
	/* pg_peek's own writes are not decoded (capture_skip_own_writes) */
	if (rel->relnamespace == get_namespace_oid("peek", false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot capture table \"peek.%s\": it is pg_peek's own", relname),
				 errdetail("Capture skips the changes pg_peek's runtimes make.")));
	if (rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot capture table \"%s\": it is %s", relname,
						rel->relpersistence == RELPERSISTENCE_TEMP ? "temporary" : "unlogged"),
				 errdetail("Its changes are not written to the WAL.")));
	if (decoder_undecodable(rel) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot capture table \"%s\": it does not use the heap table access method", relname),
				 errdetail("Logical decoding reads only heap tables' changes.")));
	/* the source's rows are read as a superuser: no policy would apply */
	if (rel->relrowsecurity)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot capture table \"%s\": it has row-level security enabled", relname),
				 errdetail("A source would show every row of the table to whoever may SELECT from it, whatever its policies."),
				 errhint("Sources cannot apply row-level security policies: capture a table that has none.")));
	ReleaseSysCache(tup);
	if (IsCatalogRelationOid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot capture system catalog \"%s\"", relname)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);
	arg_check_name_free(name);

	/* retracting an updated or deleted row needs all of it in the WAL */
	if (replident != REPLICA_IDENTITY_FULL)
	{
		SPI_connect();
		if (SPI_execute(psprintf("ALTER TABLE %s REPLICA IDENTITY FULL",
								 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
															relname)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not set REPLICA IDENTITY FULL on \"%s\"", relname);
		SPI_finish();
		ereport(NOTICE,
				(errmsg("table \"%s\" now has REPLICA IDENTITY FULL", relname),
				 errdetail("A source retracts the old rows of updates and deletes, which the WAL carries in full only with REPLICA IDENTITY FULL.")));
	}

	/*
	 * Locked as a first inheritance child's statement locks its parent
	 * (view_uses_guard.c), which then waits for this source and sees it,
	 * and a view made over the table with it is refused the child; one in
	 * flight is waited for here, and its child seen by such a view.
	 */
	LockRelationOid(relid, ShareUpdateExclusiveLock);

	obj.id = catalog_new_id(&seq);
	obj.name = name;
	obj.kind = PEEK_KIND_COLLECTION;
	obj.row_type = persist_create_source_type(seq, reltype);
	obj.owner = GetUserId();
	obj.shard = persist_create_shard(seq, obj.row_type);
	obj.source = relid;
	catalog_insert(&obj, (Datum) 0);
	catalog_name_source_table(relid);
	notify_created(obj.id);
	PG_RETURN_VOID();
}

/* drop_source(name): the source, its indexes, its shard and (soon) its slot */
Datum
peek_drop_source(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "source name");
	CatalogObject *src;

	src = arg_owned_object("drop_source", name, PEEK_KIND_COLLECTION, CATALOG_DROP);
	arg_check_not_view(src, "Use peek.drop_view.");
	if (!OidIsValid(src->source))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a collection, not a source", name),
				 errhint("Use peek.drop_collection.")));
	ddl_drop_collection_and_indexes(src);
	PG_RETURN_VOID();
}

/*
 * After each statement inserting into peek.objects: unless catalog_insert
 * made them, its rows were loaded by pg_restore.  Adopt them (see
 * catalog_adopt_restored) and claim their shards.  The runtimes are not
 * told: a restore loads the shards after the catalog, so they take the
 * restored objects on when they start (README, Dump and restore).
 */
Datum
peek_objects_restored(PG_FUNCTION_ARGS)
{
	TriggerData *trigger = (TriggerData *) fcinfo->context;
	TupleTableSlot *slot;
	PeekObjectId *ids;
	int			nids = 0;
	ListCell   *lc;

	if (!CALLED_AS_TRIGGER(fcinfo) || trigger->tg_newtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"objects_restored\" must be fired by a trigger with a transition table")));
	if (catalog_inserting())
		return PointerGetDatum(NULL);

	slot = MakeSingleTupleTableSlot(RelationGetDescr(trigger->tg_relation), &TTSOpsMinimalTuple);
	ids = palloc(sizeof(PeekObjectId) * Max(tuplestore_tuple_count(trigger->tg_newtable), 1));
	tuplestore_rescan(trigger->tg_newtable);
	while (tuplestore_gettupleslot(trigger->tg_newtable, true, false, slot))
	{
		bool		isnull;

		ids[nids++] = DatumGetInt64(slot_getattr(slot, 1, &isnull));
	}
	ExecDropSingleTupleTableSlot(slot);

	foreach(lc, catalog_adopt_restored(ids, nids))
	{
		CatalogObject *coll = lfirst(lc);
		const char *shard = get_rel_name(coll->shard);

		/* a shard dropped before the dump left its OID behind */
		if (shard != NULL && get_rel_namespace(coll->shard) == get_namespace_oid("peek", false) &&
			strcmp(shard, psprintf("shard_%u", (uint32) coll->id)) == 0)
			persist_claim_shard(coll->shard, coll->row_type);
	}
	return PointerGetDatum(NULL);
}

/* ---- indexes ---- */

/* create_index(name, collection, key text[]) */
Datum
peek_create_index(PG_FUNCTION_ARGS)
{
	char	   *name = arg_new_name(fcinfo, 0, "index name");
	char	   *coll_name = arg_text(fcinfo, 1, "collection name");
	CatalogObject *coll;
	CatalogObject obj = {0};
	ArrayType  *key;
	Datum	   *names;
	bool	   *nulls;
	int			nnames;
	TupleDesc	desc;
	int32		seq;

	arg_require(fcinfo, 2, "key columns");
	coll = arg_owned_object("create_index", coll_name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	arg_check_name_free(name);

	key = PG_GETARG_ARRAYTYPE_P(2);
	deconstruct_array(key, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &nnames);
	if (nnames == 0 || nnames > INDEX_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an index needs between 1 and %d key columns, not %d", INDEX_MAX_KEYS, nnames)));
	desc = lookup_rowtype_tupdesc(coll->row_type, -1);
	for (int i = 0; i < nnames; i++)
	{
		char	   *col;
		AttrNumber	attnum = InvalidAttrNumber;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key columns must not contain NULL")));
		col = TextDatumGetCString(names[i]);
		for (int a = 0; a < desc->natts; a++)
			if (!TupleDescAttr(desc, a)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, a)->attname), col) == 0)
				attnum = a + 1;
		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist in row type %s of collection \"%s\"",
							col, format_type_be(coll->row_type), coll->name)));
		for (int j = 0; j < i; j++)
			if (obj.attnums[j] == attnum)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("key column \"%s\" appears more than once", col)));
		obj.attnums[i] = attnum;
		view_uses_lock_types_held(TupleDescAttr(desc, attnum - 1)->atttypid);
	}
	ReleaseTupleDesc(desc);
	obj.nkeys = nnames;
	/* every key column needs hash equality */
	(void) batch_keyinfo_build(coll->row_type, obj.nkeys, obj.attnums);

	obj.id = catalog_new_id(&seq);
	obj.name = name;
	obj.kind = PEEK_KIND_INDEX;
	obj.row_type = coll->row_type;
	obj.owner = GetUserId();
	obj.collection = coll->id;
	obj.source = coll->source;
	catalog_insert(&obj, PG_GETARG_DATUM(2));
	notify_created(obj.id);
	PG_RETURN_VOID();
}

Datum
peek_drop_index(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "index name");
	CatalogObject *idx;

	idx = arg_owned_object("drop_index", name, PEEK_KIND_INDEX, CATALOG_DROP);
	drop_object(idx);
	PG_RETURN_VOID();
}

