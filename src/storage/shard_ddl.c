/*-------------------------------------------------------------------------
 *
 * shard_ddl.c
 *	  A collection's shard as an object: its table and indexes made,
 *	  claimed after a restore, checked and dropped, a source's row type,
 *	  the hook that reports a shard dropped behind its collection's back,
 *	  and the lock order DROP EXTENSION takes on the extension's tables.
 *	  Every statement runs as the extension's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "common/spi.h"
#include "ipc/notify.h"
#include "storage/shard_internal.h"

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
		run_ddl(psprintf("ALTER INDEX peek.%s_rows ALTER COLUMN 1 SET STATISTICS 0", relname));
	}

	/*
	 * No statistics of the rows (nor of their hashes, above): gathering
	 * them loads the row type, which for a view's shard opens the view.  An
	 * autovacuum ANALYZE holding the shard then waited for a DDL that a
	 * view refuses through its dependencies (DROP FUNCTION of a function
	 * it calls), whose dependency walk held the view and waited for the
	 * shard, and one of the two failed with "deadlock detected".  No plan
	 * reads them: the walks read a shard through its indexes themselves.
	 */
	run_ddl(psprintf("ALTER TABLE peek.%s ALTER COLUMN data SET STATISTICS 0", relname));
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

/* Whether a table of schema peek is a shard (shard_<seq>); its seq if so. */
static bool
shard_seq(const char *relname, int32 *seq)
{
	int			len;

	return sscanf(relname, "shard_%d%n", seq, &len) == 1 && relname[len] == '\0';
}

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

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0)
		return;
	peek = get_namespace_oid("peek", true);
	if (!OidIsValid(peek) || get_rel_namespace(objectId) != peek)
		return;
	relname = get_rel_name(objectId);
	extension = get_extension_oid("pg_peek", true);
	if (relname != NULL && OidIsValid(extension) && shard_seq(relname, &seq))
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

/*
 * Before DROP EXTENSION pg_peek: every table of schema peek locked
 * exclusively, the catalog's before the shards (as the runtimes and writers
 * take them), each kind in OID order.  PostgreSQL's own drop reaches a shard's
 * rows index through peek.row_hash before the shard, so an autovacuum of
 * the shard (which holds the table, then opens its indexes) and the drop
 * would wait for each other; taking the tables first makes the drop wait
 * on the autovacuum alone, which PostgreSQL then cancels.
 */
void
persist_lock_tables_for_drop(Oid peek)
{
	Relation	pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *catalog = NIL;
	List	   *shards = NIL;
	ListCell   *lc;

	ScanKeyInit(&key, Anum_pg_class_relnamespace, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(peek));
	scan = systable_beginscan(pg_class, InvalidOid, false, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tup);
		int32		seq;

		if (form->relkind != RELKIND_RELATION)
			continue;
		if (shard_seq(NameStr(form->relname), &seq))
			shards = lappend_oid(shards, form->oid);
		else
			catalog = lappend_oid(catalog, form->oid);
	}
	systable_endscan(scan);
	table_close(pg_class, AccessShareLock);
	list_sort(catalog, list_oid_cmp);
	list_sort(shards, list_oid_cmp);
	foreach(lc, list_concat(catalog, shards))
		LockRelationOid(lfirst_oid(lc), AccessExclusiveLock);
}

void
persist_drop_shard(Oid shard)
{
	char	   *relname = get_rel_name(shard);

	if (relname != NULL)
		run_ddl(psprintf("DROP TABLE peek.%s", quote_identifier(relname)));
}

