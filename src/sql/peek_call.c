/*-------------------------------------------------------------------------
 *
 * peek_call.c
 *	  What every peek function does before its walk: find the object by
 *	  name (cached for the session), check the caller's privileges and row
 *	  type, resolve as_of, and issue the peek (peek/backend.c).  The walk
 *	  itself is the caller's (persist_peek.c, index_peek.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "capture/capture.h"
#include "common/rows.h"
#include "ipc/notify.h"
#include "sql/arguments.h"
#include "storage/catalog_views.h"
#include "sql/peek_call.h"

/* ---- peeks ---- */

/*
 * The row type a peek returns: the object's, or for a source (and its
 * indexes) also its table's, as long as the table still matches and has
 * no column the source does not capture (one added since).  Returns
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
	bool		added;

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
	matches = rows_match_table(table_desc, row_desc, &added);
	/* the map outlives the type cache's pins: it keeps copies */
	if (matches && !added && table_desc->natts != row_desc->natts)
		map = convert_tuples_by_position(CreateTupleDescCopy(row_desc),
										 CreateTupleDescCopy(table_desc),
										 gettext_noop("could not convert a source's row to its table's row type"));
	ReleaseTupleDesc(table_desc);
	ReleaseTupleDesc(row_desc);
	if (matches && added)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("table %s has columns that %s \"%s\" does not capture",
						format_type_be(rowtype),
						obj->kind == PEEK_KIND_INDEX ? "the source of index" : "source", obj->name),
				 errdetail("A source captures the columns its table had when it was created."),
				 errhint("Pass NULL::%s as the first argument, or drop the source and create it again to capture the new columns.",
						 format_type_be(obj->row_type))));
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
 * The least upper from which this transaction wrote the collection, or a
 * collection the view reads (through views of views), or -1: a view's
 * times are its inputs', and it completes none of them before they do.
 */
static int64
sealed_here_under(PeekObjectId collection)
{
	int64		from = notify_sealed_here(collection);
	char	   *query;
	List	   *inputs;
	ListCell   *lc;

	if (!notify_wrote_any() || !catalog_view_definition(collection, &query, &inputs))
		return from;
	foreach(lc, inputs)
	{
		CatalogObject *input = catalog_find(lfirst(lc));
		int64		input_from = input ? sealed_here_under(input->id) : -1;

		if (input_from >= 0 && (from < 0 || input_from < from))
			from = input_from;
	}
	return from;
}

/*
 * A peek that only this transaction's commit could make ready fails at
 * once: it would wait for its own transaction.  A transaction that wrote a
 * collection holds its catalog row, so no time from the upper it wrote
 * from on is sealed before it ends, in the collection or in a view of it.
 * as_of NULL reads the latest complete time, without the transaction's own
 * writes, and has none to read while that upper is 0.
 */
static void
check_not_sealed_here(CatalogObject *obj, PeekObjectId collection, int64 as_of)
{
	int64		sealed_from = sealed_here_under(collection);

	if (sealed_from < 0)
		return;
	if (as_of == PEEK_TIME_LATEST && sealed_from == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s \"%s\" has no complete time yet", catalog_kind_noun(obj->kind), obj->name),
				 errdetail("Its first time becomes complete when this transaction, which wrote it, commits."),
				 errhint("Commit the write before the peek, or peek from another session.")));
	if (as_of != PEEK_TIME_LATEST && as_of >= sealed_from)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("time " INT64_FORMAT " of %s \"%s\" is not complete before this transaction commits",
						as_of, catalog_kind_noun(obj->kind), obj->name),
				 errdetail("This transaction wrote the collection from time " INT64_FORMAT " on; only its commit can complete those times.",
						   sealed_from),
				 errhint("Commit the write before the peek, or peek from another session.")));
}

/*
 * A peek's time (as_of, or PEEK_TIME_LATEST) and *floor, the least time
 * as_of NULL resolves to: the session's own last write, and for a source
 * (or a view whose times are its sources' commit LSNs) under strict
 * serializable the current WAL position: a view read right after the
 * session's commit to its table missed it, where its source showed it.  The latter is a
 * floor, not a time: a source loaded again (capture/loader.c) may be compacted
 * past it by the time it is ingested, and a later time sees its
 * transactions too.  A peek that will wait for ingestion nudges the
 * maintenance runtime.
 */
static int64
peek_time(FunctionCallInfo fcinfo, int n, CatalogObject *obj, PeekObjectId collection,
		  int64 *floor)
{
	int64		as_of = arg_time_or(fcinfo, n, "as_of", PEEK_TIME_LATEST);

	/* a time is complete once the upper passes it: no upper passes this one */
	if (as_of == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("as_of must be less than " INT64_FORMAT, PG_INT64_MAX),
				 errdetail("No upper can pass time " INT64_FORMAT ": a peek at it would wait forever.",
						   PG_INT64_MAX)));
	*floor = notify_last_session_upper(collection) - 1;
	check_not_sealed_here(obj, collection, as_of);
	if (!OidIsValid(obj->source) &&
		!(obj->kind == PEEK_KIND_VIEW && setting_isolation == PEEK_ISOLATION_STRICT_SERIALIZABLE &&
		  as_of == PEEK_TIME_LATEST && catalog_times_are_lsns(obj)))
		return as_of;
	if (as_of == PEEK_TIME_LATEST && setting_isolation == PEEK_ISOLATION_STRICT_SERIALIZABLE)
		*floor = Max(*floor, capture_strict_time());
	capture_nudge(collection, as_of != PEEK_TIME_LATEST ? as_of : *floor);
	return as_of;
}

/* Rows walked as a source's row type into from, put into result as its table's. */
static void
convert_rows(Tuplestorestate *from, Tuplestorestate *result, TupleConversionMap *map)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(map->indesc, &TTSOpsMinimalTuple);

	while (tuplestore_gettupleslot(from, true, false, slot))
	{
		HeapTuple	converted = execute_attr_map_tuple(ExecFetchSlotHeapTuple(slot, false, NULL), map);

		tuplestore_puttuple(result, converted);
		heap_freetuple(converted);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_end(from);
}

/*
 * Peeked objects (PeekedObject), cached by name for this backend's later
 * peeks, so that a peek does not query the catalog.  What is cached never
 * changes for an object's life (id, row type, shard, key; an owner changes
 * only when a view is given away, which resets every session's cache:
 * view_guard.c); a dropped
 * object is forgotten by the session that drops it (drop_object), noticed
 * by others before the peek (its id is no longer live in the registry) or
 * by the peek's gate, and the name is looked up again.  Only objects a peek
 * was answered on are cached: they are committed and published.
 */
static HTAB *peeked_objects = NULL;
static MemoryContext peeked_cxt = NULL;
static Oid	peeked_catalog = InvalidOid;	/* peek.objects when cached */
static bool peeked_stale = false;

/*
 * The catalog table was dropped or rebuilt (DROP EXTENSION, maybe followed
 * by CREATE EXTENSION in the same transaction), or a cached object's row
 * type's relation changed: every cached name is
 * forgotten at the next lookup.  Only flagged here: invalidations arrive in
 * the middle of a peek that holds a cached entry.
 */
static void
peeked_catalog_changed(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PeekedObject *peeked;

	if (!OidIsValid(relid) || relid == peeked_catalog)
		peeked_stale = true;
	if (peeked_stale || peeked_objects == NULL)
		return;

	/*
	 * An object's row type was altered (ALTER TYPE ... ADD ATTRIBUTE): its
	 * cached key describes the type's old version, whose descriptor cannot
	 * deform the rows the runtime forms with the new one.
	 */
	hash_seq_init(&status, peeked_objects);
	while ((peeked = hash_seq_search(&status)) != NULL)
		if (peeked->row_relid == relid)
		{
			peeked_stale = true;
			hash_seq_term(&status);
			break;
		}
}

static PeekedObject *
peeked_object(const char *name, char kind, Oid rowtype, bool *cached)
{
	PeekedObject *peeked = NULL;

	/*
	 * A change of owner (ALTER VIEW ... OWNER TO) stops the old owner's
	 * peeks at once, as a revoked table privilege does, also in a
	 * transaction that takes no new lock.
	 */
	AcceptInvalidationMessages();
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
	*cached = peeked != NULL && catalog_kind_matches(kind, peeked->obj.kind) &&
		peeked->rowtype == rowtype &&
		registry_is_live(peeked->obj.id, &peeked->live_checked);
	if (peeked != NULL && !*cached)
		hash_search(peeked_objects, name, HASH_REMOVE, NULL);
	if (!*cached)
	{
		/*
		 * As committed now, as PostgreSQL checks privileges: a repeatable
		 * read snapshot from before an ALTER VIEW ... OWNER TO found the
		 * old owner, and the cache kept it for the session's later
		 * transactions.
		 */
		peeked = palloc0(sizeof(PeekedObject));
		PushActiveSnapshot(GetLatestSnapshot());
		peeked->obj = *catalog_lookup(name, kind, CATALOG_READ);
		PopActiveSnapshot();
	}
	return peeked;
}

void
peek_call_forget(const char *name)
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
	peeked->row_relid = get_typ_typrelid(obj->row_type);
	peeked->live_checked = 0;
	MemoryContextSwitchTo(old);
}

/*
 * The peek functions' skeleton up to the walk: find the object (cached by
 * name), check it, issue the peek.  A cached object found dropped by the
 * gate is looked up again.  The hold lasts until backend_peek_end.
 */
void
peek_call_open(FunctionCallInfo fcinfo, const PeekCallKind *pk, void *state, OpenedPeek *op)
{
	Oid			rowtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	char	   *name = arg_text(fcinfo, 1, pk->name_label);
	int64		time;
	int64		floor;
	PeekedObject *peeked;
	CatalogObject *obj;
	PeekObjectId collection;
	KeyInfo    *key;
	bool		cached;
	bool		dropped;

	/*
	 * pg_peek's functions are PARALLEL UNSAFE; a function marked PARALLEL
	 * SAFE that calls one can still run in a parallel worker, where the
	 * catalog lookup would fail with an internal error.
	 */
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("a peek of \"%s\" cannot run in a parallel operation", name),
				 errhint("Mark the function that peeks PARALLEL UNSAFE, as pg_peek's own are.")));
	op->limit = arg_time_or(fcinfo, pk->limit_arg, "limit", -1);
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
		op->ticket = backend_peek_begin(obj->id, obj->name, obj->kind, time, floor,
								cached ? &dropped : NULL);
		if (!dropped)
			break;
		peek_call_forget(name);
	}
	if (!cached)
		remember_peeked_object(obj, rowtype, key);
	op->obj = obj;
}

/*
 * A peek's rows into result (the function's or its scan node's): opened,
 * walked at the answered time, converted to the caller's row type.  The
 * hold ends before the rows go up.
 */
void
peek_call_collect(FunctionCallInfo fcinfo, const PeekCallKind *pk, void *state,
				  Tuplestorestate *result)
{
	OpenedPeek	op;
	Tuplestorestate *out;

	peek_call_open(fcinfo, pk, state, &op);
	out = op.map == NULL ? result : tuplestore_begin_heap(false, false, work_mem);
	pk->walk(op.obj, &op.ticket, op.limit, out, state);
	backend_peek_end();
	if (op.map != NULL)
		convert_rows(out, result, op.map);
}
