/*-------------------------------------------------------------------------
 *
 * source_guard.c
 *	  What PostgreSQL's own ALTER TABLE may do to the columns a source
 *	  captures, called from view_guard.c's ProcessUtility hook.  A source
 *	  captures the columns its table had when it was made, by position
 *	  (its row type is a copy of them: the table's first live columns,
 *	  common/rows.c), and columns added since are not captured.  Dropping a
 *	  captured column is refused (2BP01, naming the source), with or
 *	  without CASCADE, from the table, a parent it inherits the column
 *	  from or the composite type of a typed table: the columns after it would take its place, and one
 *	  of the same type would be captured in its stead without a word.  The
 *	  refusal comes after the statement, which it undoes, so that
 *	  PostgreSQL's own refusal (of a column a maintained view reads) comes
 *	  first in its own words.  A failed source captures nothing; an added
 *	  column may be dropped.
 *
 *	  Must not change a source (capture/ decides its failures).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tupdesc.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "sql/source_guard.h"
#include "storage/catalog_views.h"

/* Is the column of table relid among the first ncaptured live columns? */
static bool
column_captured(Oid relid, AttrNumber attnum, int ncaptured)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(get_rel_type_id(relid), -1);
	int			live = 0;
	bool		captured = false;

	for (int i = 0; i < desc->natts && i < attnum; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			live++;
	captured = !TupleDescAttr(desc, attnum - 1)->attisdropped && live <= ncaptured;
	ReleaseTupleDesc(desc);
	return captured;
}

/* A captured column the statement drops: refused once PostgreSQL let it. */
typedef struct CapturedDrop
{
	Oid			relid;
	char	   *column;
	char	   *source;
} CapturedDrop;

/* The drop of the column of table relid, if a source of it captures it. */
static List *
captured_drop(List *drops, Oid relid, const char *column)
{
	AttrNumber	attnum = get_attnum(relid, column);
	ListCell   *lc;

	if (attnum <= 0)
		return drops;
	foreach(lc, catalog_sources_of(relid))
	{
		CatalogObject *src = lfirst(lc);
		TupleDesc	row_desc;
		int			ncaptured;

		if (src->failure != NULL)
			continue;
		row_desc = lookup_rowtype_tupdesc(src->row_type, -1);
		ncaptured = row_desc->natts;
		ReleaseTupleDesc(row_desc);
		if (column_captured(relid, attnum, ncaptured))
		{
			CapturedDrop *drop = palloc(sizeof(CapturedDrop));

			drop->relid = relid;
			drop->column = pstrdup(column);
			drop->source = pstrdup(src->name);
			return lappend(drops, drop);
		}
	}
	return drops;
}

/*
 * The tables (and their inheritance children) whose rows are of the
 * composite type relid's: ALTER TYPE ... DROP ATTRIBUTE ... CASCADE drops
 * the column from them.
 */
static List *
typed_tables(Oid relid)
{
	Oid			type = get_rel_type_id(relid);
	Relation	pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *tables = NIL;

	ScanKeyInit(&key, Anum_pg_class_reloftype, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(type));
	scan = systable_beginscan(pg_class, InvalidOid, false, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		tables = list_concat(tables, find_all_inheritors(((Form_pg_class) GETSTRUCT(tuple))->oid,
														 NoLock, NULL));
	systable_endscan(scan);
	table_close(pg_class, AccessShareLock);
	return tables;
}

List *
source_guard_before(AlterTableStmt *alter)
{
	Oid			relid = InvalidOid;
	List	   *tables = NIL;
	List	   *drops = NIL;
	ListCell   *lc;

	if (alter->objtype != OBJECT_TABLE && alter->objtype != OBJECT_TYPE)
		return NIL;
	foreach(lc, alter->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);
		ListCell   *table;

		if (cmd->subtype != AT_DropColumn)
			continue;
		if (!OidIsValid(relid))
		{
			if (!OidIsValid(get_extension_oid("pg_peek", true)))
				return NIL;
			relid = RangeVarGetRelid(alter->relation, NoLock, true);
			if (!OidIsValid(relid))
				return NIL;
			/* the drop goes down to the inheritance children (but for ONLY) */
			if (alter->objtype == OBJECT_TYPE)
				tables = typed_tables(relid);
			else
				tables = alter->relation->inh ? find_all_inheritors(relid, NoLock, NULL) :
					list_make1_oid(relid);
		}
		foreach(table, tables)
			drops = captured_drop(drops, lfirst_oid(table), cmd->name);
	}
	return drops;
}

/*
 * After the statement, which PostgreSQL let through (it refuses a drop of
 * a column a maintained view reads first, in its own words): refused, and
 * so undone.
 */
void
source_guard_after(List *drops)
{
	CapturedDrop *drop;

	if (drops == NIL)
		return;
	drop = linitial(drops);
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot drop column %s of table %s because source \"%s\" captures it",
					quote_identifier(drop->column),
					quote_qualified_identifier(get_namespace_name(get_rel_namespace(drop->relid)),
											   get_rel_name(drop->relid)),
					drop->source),
			 errdetail("A source captures the columns its table had when it was created."),
			 errhint("Drop the source first with peek.drop_source(%s).",
					 quote_literal_cstr(drop->source))));
}
