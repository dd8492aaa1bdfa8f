/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL surface (DESIGN §4): collections, indexes and peeks: argument
 *	  checks, privilege checks and the catalog and shard writes, all in the
 *	  caller's transaction.  Committed changes reach the runtimes through
 *	  the notices of catalog.c; peeks go through peek.c.
 *
 *	  Every check happens before anything is written, so bad input changes
 *	  nothing.  Must not touch shared memory directly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "utils/tuplestore.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "utils/datum.h"
#include "storage/lmgr.h"
#include "utils/syscache.h"

#include "batch.h"
#include "capture.h"
#include "catalog.h"
#include "config.h"
#include "decoder.h"
#include "notify.h"
#include "peek.h"
#include "persist.h"
#include "registry.h"
#include "rows.h"
#include "standby.h"
#include "walk.h"
#include "functions.h"

PG_FUNCTION_INFO_V1(peek_create_collection);
PG_FUNCTION_INFO_V1(peek_drop_collection);
PG_FUNCTION_INFO_V1(peek_append);
PG_FUNCTION_INFO_V1(peek_advance);
PG_FUNCTION_INFO_V1(peek_write);
PG_FUNCTION_INFO_V1(peek_allow_compaction);
PG_FUNCTION_INFO_V1(peek_set_retention);
PG_FUNCTION_INFO_V1(peek_reset_retention);
PG_FUNCTION_INFO_V1(peek_persist_peek);
PG_FUNCTION_INFO_V1(peek_create_index);
PG_FUNCTION_INFO_V1(peek_drop_index);
PG_FUNCTION_INFO_V1(peek_index_peek);
PG_FUNCTION_INFO_V1(peek_create_source);
PG_FUNCTION_INFO_V1(peek_drop_source);
PG_FUNCTION_INFO_V1(peek_objects_restored);

/* ---- argument checks ---- */

/* A required argument: NULL is an error that names it. */
static void
require_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what)));
}

static char *
text_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	require_arg(fcinfo, n, what);
	return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* The name of an object being created: neither NULL nor empty. */
static char *
new_name_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *name = text_arg(fcinfo, n, what);

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("%s must not be empty", what)));
	return name;
}

static int64
time_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	int64		t;

	require_arg(fcinfo, n, what);
	t = PG_GETARG_INT64(n);
	if (t < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative: " INT64_FORMAT, what, t)));
	return t;
}

/* An array of the collection's row type, without NULL elements. */
static ArrayType *
rows_arg(FunctionCallInfo fcinfo, int n, const char *what, CatalogObject *coll)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, n);
	Oid			elemtype = get_element_type(argtype);
	ArrayType  *rows;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what),
				 errhint("Pass an empty array for no rows.")));
	if (elemtype != coll->row_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s are of type %s, but collection \"%s\" holds rows of type %s",
						what, format_type_be(argtype), coll->name, format_type_be(coll->row_type)),
				 errhint("Cast the array, e.g. ARRAY[...]::%s[].", format_type_be(coll->row_type))));
	rows = PG_GETARG_ARRAYTYPE_P(n);
	if (array_contains_nulls(rows))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL rows", what)));
	return rows;
}

/* A source's rows come from its table only. */
static void
check_not_source(CatalogObject *coll, const char *instead)
{
	char	   *table;

	if (!OidIsValid(coll->source))
		return;
	table = get_rel_name(coll->source);
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is a source: its rows come from table %s", coll->name,
					table ? table : "(dropped)"),
			 instead ? errhint("%s", instead) : 0));
}

static void
check_not_below_upper(CatalogObject *coll, int64 at)
{
	if (at < coll->upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot append to collection \"%s\" at time " INT64_FORMAT ": its upper is " INT64_FORMAT,
						coll->name, at, coll->upper),
				 errdetail("Times below the upper are sealed.")));
}

/* ---- collections ---- */

/*
 * Whether a type, or one it is made of, lives in a temporary schema: it
 * goes at the end of its session, and a collection must outlast that.
 */
static bool
type_is_temporary(Oid type)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	Form_pg_type form;
	bool		temporary;
	Oid			part = InvalidOid;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	form = (Form_pg_type) GETSTRUCT(tup);
	temporary = isAnyTempNamespace(form->typnamespace);
	if (OidIsValid(form->typelem) && IsTrueArrayType(form))
		part = form->typelem;
	else if (form->typtype == TYPTYPE_DOMAIN)
		part = form->typbasetype;
	else if (form->typtype == TYPTYPE_RANGE)
		part = get_range_subtype(type);
	else if (form->typtype == TYPTYPE_MULTIRANGE)
		part = get_multirange_range(type);
	ReleaseSysCache(tup);
	if (temporary || OidIsValid(part))
		return temporary || type_is_temporary(part);
	if (type_is_rowtype(type))
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(type, -1);

		for (int i = 0; i < desc->natts && !temporary; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				temporary = type_is_temporary(TupleDescAttr(desc, i)->atttypid);
		ReleaseTupleDesc(desc);
	}
	return temporary;
}

Datum
peek_create_collection(PG_FUNCTION_ARGS)
{
	char	   *name = new_name_arg(fcinfo, 0, "collection name");
	Oid			row_type;
	CatalogObject obj = {0};
	int32		seq;
	AclResult	aclresult;

	standby_refuse_writes("create_collection");
	require_arg(fcinfo, 1, "row type");
	row_type = PG_GETARG_OID(1);
	if (get_typtype(row_type) != TYPTYPE_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("row type of collection \"%s\" must be a composite type, not %s",
						name, format_type_be(row_type))));
	aclresult = pg_type_aclcheck(row_type, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error_type(aclresult, row_type);
	if (type_is_temporary(row_type))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("row type of collection \"%s\" cannot be temporary: %s",
						name, format_type_be(row_type)),
				 errdetail("A temporary type, or a type with a field of one, is dropped at the end of its session.")));
	if (catalog_name_taken(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pg_peek object \"%s\" already exists", name)));

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

static void forget_peeked_object(const char *name);

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
	forget_peeked_object(obj->name);
}

/* Drop a collection (or source) with its indexes and its shard. */
static void
drop_collection_and_indexes(CatalogObject *coll)
{
	ListCell   *lc;

	catalog_check_owner(coll);
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
	char	   *name = text_arg(fcinfo, 0, "collection name");
	CatalogObject *coll;

	standby_refuse_writes("drop_collection");
	coll = catalog_lookup(name, PEEK_KIND_COLLECTION, CATALOG_DROP);

	check_not_source(coll, "Use peek.drop_source.");
	drop_collection_and_indexes(coll);
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
	char	   *name = new_name_arg(fcinfo, 0, "source name");
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
	require_arg(fcinfo, 1, "source table");
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
	if (catalog_name_taken(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pg_peek object \"%s\" already exists", name)));

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
	else
		LockRelationOid(relid, AccessShareLock);

	obj.id = catalog_new_id(&seq);
	obj.name = name;
	obj.kind = PEEK_KIND_COLLECTION;
	obj.row_type = persist_create_source_type(seq, reltype);
	obj.owner = GetUserId();
	obj.shard = persist_create_shard(seq, obj.row_type);
	obj.source = relid;
	catalog_insert(&obj, (Datum) 0);
	notify_created(obj.id);
	PG_RETURN_VOID();
}

/* drop_source(name): the source, its indexes, its shard and (soon) its slot */
Datum
peek_drop_source(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "source name");
	CatalogObject *src;

	standby_refuse_writes("drop_source");
	src = catalog_lookup(name, PEEK_KIND_COLLECTION, CATALOG_DROP);

	if (!OidIsValid(src->source))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a collection, not a source", name),
				 errhint("Use peek.drop_collection.")));
	drop_collection_and_indexes(src);
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

/* append(name, rows, at, diff = 1) */
Datum
peek_append(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "collection name");
	CatalogObject *coll;
	ArrayType  *rows;
	int64		at;
	int64		diff;

	standby_refuse_writes("append");
	coll = catalog_lookup(name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	/* privileges first: nothing about another role's object leaks */
	catalog_check_owner(coll);
	check_not_source(coll, NULL);
	rows = rows_arg(fcinfo, 1, "rows", coll);
	at = time_arg(fcinfo, 2, "time");
	require_arg(fcinfo, 3, "diff");
	diff = PG_GETARG_INT64(3);
	if (diff == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("diff must not be zero")));
	check_not_below_upper(coll, at);

	persist_append(coll->shard, rows, at, diff);
	notify_catalog_changed(coll->id);
	PG_RETURN_VOID();
}

/* advance(name, upper): seal every time < upper */
Datum
peek_advance(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "collection name");
	CatalogObject *coll;
	int64		upper;

	standby_refuse_writes("advance");
	coll = catalog_lookup(name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	upper = time_arg(fcinfo, 1, "upper");
	catalog_check_owner(coll);
	check_not_source(coll, NULL);
	if (upper < coll->upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot move the upper of collection \"%s\" back from " INT64_FORMAT " to " INT64_FORMAT,
						coll->name, coll->upper, upper),
				 errdetail("An upper only rises.")));
	if (upper > coll->upper)
	{
		catalog_set_upper(coll->id, upper);
		notify_session_upper(coll->id, upper);
		notify_catalog_changed(coll->id);
	}
	PG_RETURN_VOID();
}

/* write(name, inserts [, deletes]): append at the upper, seal it, return it */
Datum
peek_write(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "collection name");
	CatalogObject *coll;
	ArrayType  *inserts;
	ArrayType  *deletes;
	int64		t;

	standby_refuse_writes("write");
	coll = catalog_lookup(name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	t = coll->upper;
	catalog_check_owner(coll);
	check_not_source(coll, NULL);
	inserts = rows_arg(fcinfo, 1, "inserts", coll);
	deletes = PG_NARGS() > 2 ? rows_arg(fcinfo, 2, "deletes", coll) : NULL;
	if (t == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("collection \"%s\" has no time left to write at", coll->name)));
	persist_append(coll->shard, inserts, t, 1);
	if (deletes != NULL)
		persist_append(coll->shard, deletes, t, -1);
	catalog_set_upper(coll->id, t + 1);
	notify_session_upper(coll->id, t + 1);
	notify_catalog_changed(coll->id);
	PG_RETURN_INT64(t);
}

/* allow_compaction(object, since): only raises; broadcast to every runtime */
Datum
peek_allow_compaction(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "object name");
	CatalogObject *obj;
	int64		since;

	standby_refuse_writes("allow_compaction");
	obj = catalog_lookup(name, 0, CATALOG_WRITE);
	since = time_arg(fcinfo, 1, "since");
	catalog_check_owner(obj);
	if (since > obj->allowed_since)
	{
		catalog_set_allowed_since(obj->id, since);
		notify_catalog_changed(obj->id);
		notify_standing_hold(obj->id, since);
	}
	PG_RETURN_VOID();
}

/*
 * set_retention(object, retention): how much history, by the wall clock,
 * the object keeps (NULL: all of it).  The maintenance runtime raises the
 * since as it goes; a longer retention keeps more from now on, it cannot
 * bring back what was compacted.
 */
Datum
peek_set_retention(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "object name");
	CatalogObject *obj;

	standby_refuse_writes("set_retention");
	obj = catalog_lookup(name, 0, CATALOG_WRITE);
	if (!PG_ARGISNULL(1))
	{
		Interval	zero = {0};

		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, PG_GETARG_DATUM(1),
											  IntervalPGetDatum(&zero))) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retention must not be negative: %s",
							DatumGetCString(DirectFunctionCall1(interval_out,
																PG_GETARG_DATUM(1))))));
	}
	catalog_check_owner(obj);
	catalog_set_retention(obj->id, PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1),
						  PG_ARGISNULL(1), true);
	notify_catalog_changed(obj->id);
	PG_RETURN_VOID();
}

/* reset_retention(object): the object follows pg_peek.retention again. */
Datum
peek_reset_retention(PG_FUNCTION_ARGS)
{
	char	   *name = text_arg(fcinfo, 0, "object name");
	CatalogObject *obj;

	standby_refuse_writes("reset_retention");
	obj = catalog_lookup(name, 0, CATALOG_WRITE);
	catalog_check_owner(obj);
	catalog_set_retention(obj->id, (Datum) 0, false, false);
	notify_catalog_changed(obj->id);
	PG_RETURN_VOID();
}

static int64
optional_time_arg(FunctionCallInfo fcinfo, int n, const char *what, int64 if_null)
{
	return PG_ARGISNULL(n) ? if_null : time_arg(fcinfo, n, what);
}

/* ---- peeks ---- */

/*
 * The row type a peek returns: the object's, or for a source (and its
 * indexes) also its table's, as long as the table still matches.  Returns
 * the map that converts walked rows into the table's row type when their
 * layouts differ (the table has dropped columns), else NULL.
 */
static TupleConversionMap *
check_peek_rowtype(CatalogObject *obj, Oid rowtype)
{
	TupleDesc	table_desc;
	TupleDesc	row_desc;
	TupleConversionMap *map = NULL;
	bool		matches;

	if (rowtype == obj->row_type)
		return NULL;
	/* a failed object's row type may be gone: say why it failed instead */
	catalog_raise_if_failed(obj->id, obj->kind, obj->name);
	if (!OidIsValid(obj->source) || rowtype != get_rel_type_id(obj->source))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s \"%s\" holds rows of type %s, not %s",
						catalog_kind_noun(obj->kind), obj->name,
						format_type_be(obj->row_type), format_type_be(rowtype)),
				 errhint("Pass NULL::%s as the first argument.",
						 OidIsValid(obj->source) && get_rel_type_id(obj->source) != InvalidOid ?
						 format_type_be(get_rel_type_id(obj->source)) : format_type_be(obj->row_type))));
	table_desc = lookup_rowtype_tupdesc(rowtype, -1);
	row_desc = lookup_rowtype_tupdesc(obj->row_type, -1);
	matches = rows_match_table(table_desc, row_desc);
	/* the map outlives the type cache's pins: it keeps copies */
	if (matches && table_desc->natts != row_desc->natts)
		map = convert_tuples_by_position(CreateTupleDescCopy(row_desc),
										 CreateTupleDescCopy(table_desc),
										 gettext_noop("could not convert a source's row to its table's row type"));
	ReleaseTupleDesc(table_desc);
	ReleaseTupleDesc(row_desc);
	if (!matches)
	{
		catalog_raise_if_failed(obj->id, obj->kind, obj->name);
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the row type of table %s no longer matches %s \"%s\"",
						format_type_be(rowtype),
						obj->kind == PEEK_KIND_INDEX ? "index" : "source", obj->name),
				 errhint("Drop the source and create it again.")));
	}
	return map;
}

/*
 * A peek's time (as_of, or PEEK_TIME_LATEST) and *floor, the least time
 * as_of NULL resolves to: the session's own last write, and for a source
 * under strict serializable the current WAL position.  The latter is a
 * floor, not a time: a source loaded again (capture.c) may be compacted
 * past it by the time it is ingested, and a later time sees its
 * transactions too.  A peek that will wait for ingestion nudges the
 * maintenance runtime.
 */
static int64
peek_time(FunctionCallInfo fcinfo, int n, CatalogObject *obj, PeekObjectId collection,
		  int64 *floor)
{
	int64		as_of = optional_time_arg(fcinfo, n, "as_of", PEEK_TIME_LATEST);

	/* a time is complete once the upper passes it: no upper passes this one */
	if (as_of == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("as_of must be less than " INT64_FORMAT, PG_INT64_MAX),
				 errdetail("No upper can pass time " INT64_FORMAT ": a peek at it would wait forever.",
						   PG_INT64_MAX)));
	*floor = notify_last_session_upper(collection) - 1;
	if (!OidIsValid(obj->source))
		return as_of;
	if (as_of == PEEK_TIME_LATEST && peek_isolation == PEEK_ISOLATION_STRICT_SERIALIZABLE)
		*floor = Max(*floor, capture_strict_time());
	capture_nudge(collection, as_of != PEEK_TIME_LATEST ? as_of : *floor);
	return as_of;
}

/* Where a walk puts its rows: the result, or a store to convert from. */
static Tuplestorestate *
walk_output(ReturnSetInfo *rsinfo, TupleConversionMap *map)
{
	return map == NULL ? rsinfo->setResult : tuplestore_begin_heap(false, false, work_mem);
}

/* Rows walked as a source's row type, returned as its table's. */
static void
convert_rows(Tuplestorestate *from, ReturnSetInfo *rsinfo, TupleConversionMap *map)
{
	TupleTableSlot *slot;

	if (map == NULL)
		return;
	slot = MakeSingleTupleTableSlot(map->indesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(from, true, false, slot))
	{
		HeapTuple	converted = execute_attr_map_tuple(ExecFetchSlotHeapTuple(slot, false, NULL), map);

		tuplestore_puttuple(rsinfo->setResult, converted);
		heap_freetuple(converted);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(from);
}


/*
 * Peeked objects, cached by name for this backend's later peeks, so that
 * a peek does not query the catalog.  What is cached never changes for an
 * object's life (id, row type, owner, shard, key); a dropped object is
 * forgotten by the session that drops it (drop_object), noticed by others
 * before the peek (its id is no longer live in the registry) or by the
 * peek's gate, and the name is looked up again.  Only objects a peek
 * was answered on are cached: they are committed and published.
 */
typedef struct PeekedObject
{
	char		name[NAMEDATALEN * 2];	/* key */
	CatalogObject obj;
	Oid			rowtype;		/* what the peek passed (a source's table's?) */
	KeyInfo    *key;			/* indexes */
} PeekedObject;

static HTAB *peeked_objects = NULL;
static MemoryContext peeked_cxt = NULL;
static Oid	peeked_catalog = InvalidOid;	/* peek.objects when cached */
static bool peeked_stale = false;

/*
 * The catalog table was dropped or rebuilt (DROP EXTENSION, maybe followed
 * by CREATE EXTENSION in the same transaction): every cached name is
 * forgotten at the next lookup.  Only flagged here: invalidations arrive in
 * the middle of a peek that holds a cached entry.
 */
static void
peeked_catalog_changed(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == peeked_catalog)
		peeked_stale = true;
}

static PeekedObject *
peeked_object(const char *name, char kind, Oid rowtype, bool *cached)
{
	PeekedObject *peeked = NULL;

	if (peeked_stale && peeked_objects != NULL)
	{
		MemoryContextReset(peeked_cxt);
		peeked_objects = NULL;
	}
	peeked_stale = false;
	if (peeked_objects != NULL && strlen(name) < NAMEDATALEN * 2)
		peeked = hash_search(peeked_objects, name, HASH_FIND, NULL);
	/*
	 * A different kind or row type, or an id the registry no longer has
	 * live: the name was dropped (and maybe reused).  A drop that commits
	 * after this check is reported by the peek's gate.
	 */
	*cached = peeked != NULL && peeked->obj.kind == kind && peeked->rowtype == rowtype &&
		registry_is_live(peeked->obj.id);
	if (peeked != NULL && !*cached)
		hash_search(peeked_objects, name, HASH_REMOVE, NULL);
	if (!*cached)
	{
		peeked = palloc0(sizeof(PeekedObject));
		peeked->obj = *catalog_lookup(name, kind, CATALOG_READ);
	}
	return peeked;
}

static void
forget_peeked_object(const char *name)
{
	if (peeked_objects != NULL && strlen(name) < NAMEDATALEN * 2)
		hash_search(peeked_objects, name, HASH_REMOVE, NULL);
}

static void
remember_peeked_object(CatalogObject *obj, Oid rowtype, KeyInfo *key)
{
	PeekedObject *peeked;
	MemoryContext old;
	bool		found;

	if (strlen(obj->name) >= NAMEDATALEN * 2)
		return;
	if (peeked_objects == NULL)
	{
		HASHCTL		ctl;

		if (peeked_cxt == NULL)
		{
			peeked_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_peek peeked objects",
											   ALLOCSET_SMALL_SIZES);
			CacheRegisterRelcacheCallback(peeked_catalog_changed, (Datum) 0);
		}
		peeked_catalog = catalog_relid();
		ctl.keysize = NAMEDATALEN * 2;
		ctl.entrysize = sizeof(PeekedObject);
		ctl.hcxt = peeked_cxt;
		peeked_objects = hash_create("pg_peek peeked objects", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	peeked = hash_search(peeked_objects, obj->name, HASH_ENTER, &found);
	if (found)
		return;
	old = MemoryContextSwitchTo(peeked_cxt);
	peeked->obj = *obj;
	peeked->obj.name = peeked->name;
	peeked->obj.failure = NULL;
	peeked->rowtype = rowtype;
	peeked->key = key ? batch_keyinfo_build(obj->row_type, obj->nkeys, obj->attnums) : NULL;
	MemoryContextSwitchTo(old);
}

/*
 * One kind of peek: its arguments, and what it does around the skeleton
 * (peek_srf).  prepare runs once the object is found and checked, and
 * returns the key to cache with it; walk reads at the ticket's time.
 */
typedef struct PeekKind
{
	char		kind;
	const char *name_label;		/* the name argument, for messages */
	int			as_of_arg;
	int			limit_arg;
	KeyInfo    *(*prepare) (FunctionCallInfo fcinfo, PeekedObject *peeked, void *state);
	void		(*walk) (CatalogObject *obj, PeekTicket *ticket, int64 limit,
						 Tuplestorestate *out, void *state);
} PeekKind;

/* A peek found, checked and gated: what its walk needs. */
typedef struct OpenedPeek
{
	CatalogObject *obj;			/* the cached entry's: read it at once */
	PeekTicket	ticket;
	TupleConversionMap *map;	/* rows to the caller's row type, or NULL */
	int64		limit;
} OpenedPeek;

/*
 * The peek functions' skeleton up to the walk: find the object (cached by
 * name), check it, issue the peek.  A cached object found dropped by the
 * gate is looked up again.  The hold lasts until peek_end.
 */
static void
open_peek(FunctionCallInfo fcinfo, const PeekKind *pk, void *state, OpenedPeek *op)
{
	Oid			rowtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	char	   *name = text_arg(fcinfo, 1, pk->name_label);
	int64		time;
	int64		floor;
	PeekedObject *peeked;
	CatalogObject *obj;
	PeekObjectId collection;
	KeyInfo    *key;
	bool		cached;
	bool		dropped;

	op->limit = optional_time_arg(fcinfo, pk->limit_arg, "limit", -1);
	registry_attach();
	for (;;)
	{
		dropped = false;
		peeked = peeked_object(name, pk->kind, rowtype, &cached);
		obj = &peeked->obj;
		/* privileges first: nothing about another role's object leaks */
		catalog_check_reader(obj);
		/* the runtimes see it once its creation commits, not before */
		if (notify_created_here(obj->id))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s \"%s\" is not committed yet", catalog_kind_noun(obj->kind), obj->name),
					 errdetail("It was created by this transaction; it can be peeked at once that commits.")));
		/* a failed index's key columns may be gone: say why it failed */
		if (obj->kind == PEEK_KIND_INDEX && obj->failure != NULL)
			catalog_raise_if_failed(obj->id, obj->kind, obj->name);
		op->map = check_peek_rowtype(obj, rowtype);
		key = pk->prepare ? pk->prepare(fcinfo, peeked, state) : NULL;

		/* times are the collection's: an index is sealed with it */
		collection = obj->kind == PEEK_KIND_INDEX ? obj->collection : obj->id;
		time = peek_time(fcinfo, pk->as_of_arg, obj, collection, &floor);
		op->ticket = peek_begin(obj->id, obj->name, obj->kind, time, floor,
								cached ? &dropped : NULL);
		if (!dropped)
			break;
		forget_peeked_object(name);
	}
	remember_peeked_object(obj, rowtype, key);
	op->obj = obj;
}

/*
 * A peek as a set-returning function: opened, walked at the answered time
 * into the result, converted to the caller's row type.
 */
static void
peek_srf(FunctionCallInfo fcinfo, const PeekKind *pk, void *state)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	OpenedPeek	op;
	Tuplestorestate *out;

	/*
	 * Materialize mode: a function scan keeps a set-returning function's
	 * rows in a tuplestore whatever its mode, so handing it ours saves a
	 * call per row.
	 */
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	open_peek(fcinfo, pk, state, &op);
	out = walk_output(rsinfo, op.map);
	pk->walk(op.obj, &op.ticket, op.limit, out, state);
	peek_end();
	convert_rows(out, rsinfo, op.map);
}

/* ---- persist peeks ---- */

/*
 * An open persist peek, read a row at a time: by persist_peek as a
 * set-returning function and by the scan node that streams it (scan.c).
 * Its hold ends once its snapshot is taken: walks in that snapshot at the
 * peek's time give the answer (again, if the scan is rescanned), so rows
 * streamed to a slow reader hold back neither compaction nor this
 * backend's next peek.
 */
struct PersistPeek
{
	MemoryContext cxt;			/* everything below */
	PeekObjectId id;
	Oid			shard;
	Snapshot	snapshot;		/* registered until the peek is closed */
	int64		walk_limit;		/* the walk's limit, or rows wanted */
	PersistWalk *walk;			/* NULL once read through */
	RowEmitter	e;
	TupleConversionMap *map;	/* to the caller's row type, or NULL */
	MemoryContext row_cxt;		/* the current row's tuples */
	HeapTupleData tuple;		/* the current row as walked */
	HeapTuple	out;			/* the same, as returned */
	int64		copies;			/* copies of it still to return */
	RowImageBuffer buf;			/* last: a header's bits are a flexible array */
};

static const PeekKind persist_peek_kind = {
	PEEK_KIND_COLLECTION, "collection name", 2, 3, NULL, NULL
};

/* Walk the peek's answer from its start. */
static void
begin_persist_walk(PersistPeek *p)
{
	MemoryContext old = MemoryContextSwitchTo(p->cxt);

	if (p->walk != NULL)
		persist_walk_end(p->walk);
	p->walk = persist_walk_begin(p->id, p->shard, p->e.row_type, p->e.name, p->snapshot,
								 p->e.time, p->walk_limit);
	p->e.emitted = 0;
	p->e.bytes = 0;
	p->copies = 0;
	MemoryContextSwitchTo(old);
}

/*
 * persist_peek's arguments in fcinfo (its flinfo has the call's
 * expression); rows_wanted (or -1) is how many rows the caller will read at
 * most, for a walk without a limit of its own to read the base as a
 * limited one does.
 */
PersistPeek *
persist_peek_open(FunctionCallInfo fcinfo, int64 rows_wanted)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek persist peek",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	PersistPeek *p = palloc0(sizeof(PersistPeek));
	OpenedPeek	op;
	CatalogObject *coll;

	p->cxt = cxt;
	open_peek(fcinfo, &persist_peek_kind, NULL, &op);
	coll = op.obj;
	p->id = coll->id;
	p->shard = coll->shard;
	p->e.name = pstrdup(coll->name);
	p->e.row_type = coll->row_type;
	p->e.time = op.ticket.time;
	p->e.limit = op.limit;
	p->walk_limit = op.limit >= 0 ? op.limit : rows_wanted;
	p->map = op.map;
	p->row_cxt = AllocSetContextCreate(cxt, "pg_peek persist peek row", ALLOCSET_SMALL_SIZES);
	p->snapshot = RegisterSnapshot(GetLatestSnapshot());
	begin_persist_walk(p);
	standby_check_shard_since(coll->id, coll->name, op.ticket.time);
	peek_end();
	MemoryContextSwitchTo(old);
	return p;
}

/* Read the same answer again from its start (a rescan). */
void
persist_peek_rewind(PersistPeek *p)
{
	begin_persist_walk(p);
}

/*
 * The next row of the result, as many times as it counts, up to the limit;
 * NULL at the end.  The tuple stays valid until the next call; *again says
 * it is another copy of the last call's.
 */
HeapTuple
persist_peek_next(PersistPeek *p, bool *again)
{
	*again = p->copies > 0;
	while (p->copies == 0)
	{
		Datum		row;
		int64		count;
		MemoryContext old;

		if (p->walk == NULL || row_emitter_full(&p->e))
			return NULL;
		if (!persist_walk_next(p->walk, &row, &count))
		{
			/* read through: let go of its scans now */
			persist_walk_end(p->walk);
			p->walk = NULL;
			return NULL;
		}
		MemoryContextReset(p->row_cxt);
		old = MemoryContextSwitchTo(p->row_cxt);
		row_emit_tuple(&p->e, row, count, &p->buf, &p->tuple);
		p->out = p->map != NULL ? execute_attr_map_tuple(&p->tuple, p->map) : &p->tuple;
		MemoryContextSwitchTo(old);
		p->copies = count;
	}
	if (!row_emit_admit(&p->e, &p->tuple))
		return NULL;
	p->copies--;
	return p->out;
}

void
persist_peek_close(PersistPeek *p)
{
	if (p->walk != NULL)
		persist_walk_end(p->walk);
	UnregisterSnapshot(p->snapshot);
	MemoryContextDelete(p->cxt);
}

/* persist_peek(rowtype anyelement, collection, as_of, limit) */
Datum
peek_persist_peek(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PersistPeek *p;
	HeapTuple	tuple;
	bool		again;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	p = persist_peek_open(fcinfo, -1);
	while ((tuple = persist_peek_next(p, &again)) != NULL)
		tuplestore_puttuple(rsinfo->setResult, tuple);
	persist_peek_close(p);
	return (Datum) 0;
}

/* ---- indexes ---- */

/* create_index(name, collection, key text[]) */
Datum
peek_create_index(PG_FUNCTION_ARGS)
{
	char	   *name = new_name_arg(fcinfo, 0, "index name");
	char	   *coll_name = text_arg(fcinfo, 1, "collection name");
	CatalogObject *coll;
	CatalogObject obj = {0};
	ArrayType  *key;
	Datum	   *names;
	bool	   *nulls;
	int			nnames;
	TupleDesc	desc;
	int32		seq;

	standby_refuse_writes("create_index");
	require_arg(fcinfo, 2, "key columns");
	coll = catalog_lookup(coll_name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	catalog_check_owner(coll);
	if (catalog_name_taken(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pg_peek object \"%s\" already exists", name)));

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
	char	   *name = text_arg(fcinfo, 0, "index name");
	CatalogObject *idx;

	standby_refuse_writes("drop_index");
	idx = catalog_lookup(name, PEEK_KIND_INDEX, CATALOG_DROP);

	catalog_check_owner(idx);
	drop_object(idx);
	PG_RETURN_VOID();
}

/*
 * A key field's conversion to its key column's type by the rules of SQL
 * assignment (as INSERT converts a value for a column: numeric 2.5 rounds
 * to int 3, real 0.1 widens to its double value, a domain's checks apply).
 * Finding the cast is planned once per session for each index, field and
 * type a peek passes: an expression over a parameter, kept by the plan
 * cache, which marks it invalid when a function or cast it uses changes
 * (it is planned again then).  It is made executable per peek, so the
 * caller's privileges and the domain's constraints are those of the moment.
 */
typedef struct KeyCoercionKey
{
	PeekObjectId index;
	int			field;
	Oid			from;
} KeyCoercionKey;

typedef struct KeyCoercion
{
	KeyCoercionKey key;
	CachedExpression *plan;
} KeyCoercion;

static HTAB *key_coercions = NULL;

/* The conversion of input (of type from) to a key column's type, unplanned. */
static Node *
key_coercion_expr(Node *input, Oid from, KeyInfo *key, int i, CatalogObject *idx)
{
	Form_pg_attribute att = TupleDescAttr(key->desc, key->attnums[i] - 1);
	Node	   *expr;

	expr = coerce_to_target_type(NULL, input, from, att->atttypid, att->atttypmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column \"%s\" of index \"%s\" is of type %s, but the key gives %s",
						NameStr(att->attname), idx->name, format_type_be(att->atttypid),
						format_type_be(from)),
				 errhint("Cast the key field, e.g. ROW(value::%s).",
						 format_type_be(att->atttypid))));
	assign_expr_collations(NULL, expr);
	return expr;
}

/* The session's plan of a conversion (key_coercion_expr over $1). */
static Expr *
key_coercion_plan(KeyInfo *key, int i, Oid from, CatalogObject *idx)
{
	KeyCoercionKey ckey = {0};
	KeyCoercion *kc;
	Param	   *param;
	CachedExpression *plan;

	ckey.index = idx->id;
	ckey.field = i;
	ckey.from = from;
	if (key_coercions == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(KeyCoercionKey);
		ctl.entrysize = sizeof(KeyCoercion);
		ctl.hcxt = CacheMemoryContext;
		key_coercions = hash_create("pg_peek key coercions", 16, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	kc = hash_search(key_coercions, &ckey, HASH_FIND, NULL);
	if (kc != NULL && kc->plan->is_valid)
		return (Expr *) kc->plan->expr;
	if (kc != NULL)
	{
		FreeCachedExpression(kc->plan);
		hash_search(key_coercions, &ckey, HASH_REMOVE, NULL);
	}

	param = makeNode(Param);
	param->paramkind = PARAM_EXTERN;
	param->paramid = 1;
	param->paramtype = from;
	param->paramtypmod = -1;
	param->paramcollid = get_typcollation(from);
	param->location = -1;
	plan = GetCachedExpression(key_coercion_expr((Node *) param, from, key, i, idx));
	kc = hash_search(key_coercions, &ckey, HASH_ENTER, NULL);
	kc->plan = plan;
	return (Expr *) plan->expr;
}

/*
 * A row value as the parser sees ROW(...): a row expression of its fields
 * as constants, a nested anonymous row (or a NULL one) again as an
 * expression the parser would convert, so that coerce_to_target_type
 * converts it to a composite type field by field (coerce_record_to_complex),
 * refusing what does not fit with the parser's error.
 */
static Node *
row_value_expr(Datum value)
{
	HeapTupleHeader rec = DatumGetHeapTupleHeader(value);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
											  HeapTupleHeaderGetTypMod(rec));
	HeapTupleData tuple;
	RowExpr    *row = makeNode(RowExpr);

	row_tuple(rec, &tuple);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		isnull;
		Datum		field;
		Node	   *arg;

		if (att->attisdropped)
			continue;
		field = heap_getattr(&tuple, i + 1, desc, &isnull);
		if (att->atttypid == RECORDOID && isnull)
			arg = (Node *) makeConst(UNKNOWNOID, -1, InvalidOid, -2, (Datum) 0, true, false);
		else if (att->atttypid == RECORDOID)
			arg = row_value_expr(field);
		else
			arg = (Node *) makeConst(att->atttypid, att->atttypmod, att->attcollation,
									 att->attlen, field, isnull, att->attbyval);
		row->args = lappend(row->args, arg);
	}
	ReleaseTupleDesc(desc);
	row->row_typeid = RECORDOID;
	row->row_format = COERCE_IMPLICIT_CAST;
	row->location = -1;
	return (Node *) row;
}

/*
 * Convert one key field; false if the result is NULL.  An untyped literal
 * (ROW('2')) is read by the column type's input function, as the parser
 * reads a literal, and a row for a key column of a composite type
 * (ROW(ROW(1, 'b'))) is converted field by field, as the parser converts
 * ROW(...) (row_value_expr): those conversions are planned per peek.
 */
static bool
coerce_key_field(Datum *value, Oid from, KeyInfo *key, int i, CatalogObject *idx)
{
	Form_pg_attribute att = TupleDescAttr(key->desc, key->attnums[i] - 1);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek key conversion",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ParamListInfo params = makeParamList(1);
	Expr	   *expr;
	ExprContext *econtext;
	bool		isnull;
	Datum		result;

	if (from == UNKNOWNOID)
		expr = expression_planner((Expr *) key_coercion_expr((Node *) makeConst(UNKNOWNOID, -1, InvalidOid, -2,
																				 *value, false, false),
															  from, key, i, idx));
	else if (type_is_rowtype(from) && type_is_rowtype(att->atttypid) &&
			 (from == RECORDOID ||
			  !can_coerce_type(1, &from, &att->atttypid, COERCION_ASSIGNMENT)))
		expr = expression_planner((Expr *) key_coercion_expr(row_value_expr(*value),
															  RECORDOID, key, i, idx));
	else
		expr = key_coercion_plan(key, i, from, idx);
	params->params[0].ptype = from;
	params->params[0].pflags = PARAM_FLAG_CONST;
	params->params[0].value = *value;
	params->params[0].isnull = false;
	econtext = CreateStandaloneExprContext();
	econtext->ecxt_param_list_info = params;
	result = ExecEvalExpr(ExecInitExprWithParams(expr, params), econtext, &isnull);

	/* the value outlives the conversion's memory: it is copied out */
	MemoryContextSwitchTo(old);
	if (!isnull)
		*value = datumCopy(result, att->attbyval, att->attlen);
	FreeExprContext(econtext, true);
	MemoryContextDelete(cxt);
	return !isnull;
}

/*
 * The key of an index peek: ROW(v1, ...) in key-column order, each field
 * converted to its key column's type (coerce_key_field).
 */
static void
key_arg(FunctionCallInfo fcinfo, int n, CatalogObject *idx, WalkSpec *spec)
{
	HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(n);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
											  HeapTupleHeaderGetTypMod(rec));
	HeapTupleData tuple;

	if (desc->natts != spec->key->nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key of index \"%s\" has %d columns, not %d",
						idx->name, spec->key->nkeys, desc->natts),
				 errhint("Pass the key as ROW(v1, ...) in key-column order.")));
	row_tuple(rec, &tuple);
	spec->has_key = true;
	spec->key_has_null = false;
	for (int i = 0; i < desc->natts; i++)
	{
		Oid			from = TupleDescAttr(desc, i)->atttypid;
		bool		isnull;
		Datum		value = heap_getattr(&tuple, i + 1, desc, &isnull);

		if (!isnull && from != spec->key->types[i])
			isnull = !coerce_key_field(&value, from, spec->key, i, idx);
		if (isnull)
		{
			spec->key_has_null = true;
			continue;
		}
		spec->key_values[i] = value;
	}
	ReleaseTupleDesc(desc);
	if (!spec->key_has_null)
		spec->keyhash = batch_key_hash_values(spec->key, spec->key_values);
}

/* The walk of an index: its key, if the peek passed one. */
static KeyInfo *
prepare_index_walk(FunctionCallInfo fcinfo, PeekedObject *peeked, void *state)
{
	WalkSpec   *spec = state;
	CatalogObject *idx = &peeked->obj;

	spec->name = idx->name;
	spec->row_type = idx->row_type;
	spec->key = peeked->key ? peeked->key :
		batch_keyinfo_build(idx->row_type, idx->nkeys, idx->attnums);
	if (!PG_ARGISNULL(2))
		key_arg(fcinfo, 2, idx, spec);
	return spec->key;
}

static void
walk_index(CatalogObject *idx, PeekTicket *ticket, int64 limit, Tuplestorestate *out,
		   void *state)
{
	WalkSpec   *spec = state;

	spec->time = ticket->time;
	spec->limit = limit;
	spec->out = out;
	walk_batches(ticket->handle, spec);
}

/* index_peek(rowtype anyelement, index, key record, as_of, limit) */
Datum
peek_index_peek(PG_FUNCTION_ARGS)
{
	static const PeekKind index_peek = {
		PEEK_KIND_INDEX, "index name", 3, 4, prepare_index_walk, walk_index
	};
	WalkSpec	spec = {0};

	peek_srf(fcinfo, &index_peek, &spec);
	return (Datum) 0;
}
