/*-------------------------------------------------------------------------
 *
 * catalog_views.c
 *	  What the catalog keeps of a maintained view besides an object's row:
 *	  its query (analyzed and written out schema-qualified, so that it reads
 *	  the same under any search_path, in a dump too) and the names of its
 *	  inputs (names, not ids: a restore keeps them), which views read an
 *	  object (its drop is refused while one does), and which sources
 *	  capture a table (a view's query reads them for it), and whose times
 *	  are commit LSNs (a view of sources).  Through SPI as the extension's
 *	  owner, in the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "common/spi.h"
#include "storage/catalog.h"
#include "storage/catalog_internal.h"
#include "storage/catalog_views.h"

/* Record a new view's query and its inputs' names, on its row. */
void
catalog_set_view(PeekObjectId id, const char *query, List *inputs)
{
	Oid			argtypes[3] = {INT8OID, TEXTOID, TEXTARRAYOID};
	Datum	   *names = palloc(sizeof(Datum) * list_length(inputs));
	Datum		args[3];
	ListCell   *lc;

	foreach(lc, inputs)
		names[foreach_current_index(lc)] = CStringGetTextDatum(lfirst(lc));
	args[0] = Int64GetDatum(id);
	args[1] = CStringGetTextDatum(query);
	args[2] = PointerGetDatum(construct_array(names, list_length(inputs), TEXTOID, -1,
											  false, TYPALIGN_INT));
	catalog_exec("UPDATE peek.objects SET query = $2, inputs = $3 "
				 "WHERE id OPERATOR(pg_catalog.=) $1",
				 3, argtypes, args, SPI_OK_UPDATE);
}

/*
 * A view's query and its inputs' names (a List of strings), in the
 * caller's memory context; false if the view's row is gone.
 */
bool
catalog_view_definition(PeekObjectId id, char **query, List **inputs)
{
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(id);
	MemoryContext caller = CurrentMemoryContext;
	SavedUser	saved;
	bool		found;

	spi_connect_as_owner(&saved);
	spi_check(catalog_execute_saved("SELECT query, inputs FROM peek.objects "
									"WHERE id OPERATOR(pg_catalog.=) $1 AND query IS NOT NULL",
									1, &argtype, &arg, NULL, true),
			  SPI_OK_SELECT, "view lookup");
	found = SPI_processed > 0;
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		Datum	   *names;
		int			n;

		*query = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));
		deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 2, &isnull)),
						  TEXTOID, -1, false, TYPALIGN_INT, &names, NULL, &n);
		*inputs = NIL;
		for (int i = 0; i < n; i++)
			*inputs = lappend(*inputs, TextDatumGetCString(names[i]));
		MemoryContextSwitchTo(spi);
	}
	spi_finish_as_owner(&saved);
	return found;
}

/*
 * The name of a view that reads the object, or NULL.  The caller holds the
 * object's row lock for its drop (FOR UPDATE), which a create_view over it
 * waits for, so that no view can start reading it after the answer.  Read
 * in the latest snapshot: one that create_view committed while the drop
 * waited for the lock, and one this statement dropped before (a drop_view
 * per row of a query), are seen.
 */
char *
catalog_view_reading(const char *name)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	MemoryContext caller = CurrentMemoryContext;
	char	   *view = NULL;
	SavedUser	saved;

	/* a catalog from before 0.3 has no views */
	if (get_attnum(catalog_relid(), "inputs") == InvalidAttrNumber)
		return NULL;
	spi_connect_as_owner(&saved);
	PushActiveSnapshot(GetLatestSnapshot());
	spi_check(catalog_execute_saved("SELECT name FROM peek.objects "
									"WHERE $1 OPERATOR(pg_catalog.=) ANY (inputs) "
									"ORDER BY name LIMIT 1",
									1, &argtype, &arg, NULL, true),
			  SPI_OK_SELECT, "views reading an object");
	PopActiveSnapshot();
	if (SPI_processed > 0)
	{
		bool		isnull;

		view = MemoryContextStrdup(caller,
								   TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0],
																	 SPI_tuptable->tupdesc,
																	 1, &isnull)));
	}
	spi_finish_as_owner(&saved);
	return view;
}

/*
 * The sources that capture a table, by name (their indexes name the table
 * too, but are not sources).
 */
List *
catalog_sources_of(Oid table)
{
	return catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
								 "WHERE source OPERATOR(pg_catalog.=) $1 "
								 "AND kind OPERATOR(pg_catalog.=) 'c' ORDER BY name",
								 1, OIDOID, ObjectIdGetDatum(table), true);
}

/* The view whose PostgreSQL view has this row type, or NULL. */
CatalogObject *
catalog_view_of_row_type(Oid row_type)
{
	List	   *views;

	/* a catalog from before 0.3 has no views */
	if (get_attnum(catalog_relid(), "inputs") == InvalidAttrNumber)
		return NULL;
	views = catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
								  "WHERE row_type OPERATOR(pg_catalog.=) $1 "
								  "AND kind OPERATOR(pg_catalog.=) 'v'",
								  1, OIDOID, ObjectIdGetDatum(row_type), true);
	return views != NIL ? linitial(views) : NULL;
}

/*
 * The views whose PostgreSQL view another role owns now (ALTER VIEW ...
 * OWNER TO, REASSIGN OWNED), as the catalog has them.  Sees the caller's
 * changes up to its last command.
 */
List *
catalog_views_given_away(void)
{
	if (get_attnum(catalog_relid(), "inputs") == InvalidAttrNumber)
		return NIL;
	return catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
								 "WHERE kind OPERATOR(pg_catalog.=) 'v' AND owner OPERATOR(pg_catalog.<>) "
								 "(SELECT c.relowner FROM pg_catalog.pg_class c "
								 "WHERE c.reltype OPERATOR(pg_catalog.=) row_type) ORDER BY name",
								 0, InvalidOid, (Datum) 0, false);
}

/*
 * The views that read an object, by name, in the latest snapshot (those
 * committed while the caller waited for a lock are seen).
 */
List *
catalog_views_reading(const char *name)
{
	List	   *views;

	PushActiveSnapshot(GetLatestSnapshot());
	views = catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
								  "WHERE $1 OPERATOR(pg_catalog.=) ANY (inputs) ORDER BY name",
								  1, TEXTOID, CStringGetTextDatum(name), true);
	PopActiveSnapshot();
	return views;
}

/*
 * The views, the objects they read and the indexes, the first made first,
 * in the latest snapshot (a view committed while the caller waited for a
 * lock is seen).
 */
List *
catalog_views_inputs_indexes(void)
{
	List	   *objects;

	if (get_attnum(catalog_relid(), "inputs") == InvalidAttrNumber)
		return NIL;
	PushActiveSnapshot(GetLatestSnapshot());
	objects = catalog_query_objects("SELECT " OBJECT_COLUMNS " FROM peek.objects "
									"WHERE kind IN ('v', 'i') OR EXISTS "
									"(SELECT FROM peek.objects v WHERE v.kind OPERATOR(pg_catalog.=) 'v' "
									"AND peek.objects.name OPERATOR(pg_catalog.=) ANY (v.inputs)) ORDER BY id",
									0, InvalidOid, (Datum) 0, true);
	PopActiveSnapshot();
	return objects;
}

/* Give a view and its indexes to another owner. */
void
catalog_set_view_owner(PeekObjectId id, Oid owner)
{
	Oid			argtypes[2] = {INT8OID, OIDOID};
	Datum		args[2] = {Int64GetDatum(id), ObjectIdGetDatum(owner)};

	catalog_exec("UPDATE peek.objects SET owner = $2 "
				 "WHERE id OPERATOR(pg_catalog.=) $1 OR collection OPERATOR(pg_catalog.=) $1",
				 2, argtypes, args, SPI_OK_UPDATE);
}

/*
 * Whether an object's times are commit LSNs: a source's, or a view's whose
 * inputs are sources (or views of them); else logical times.
 */
bool
catalog_times_are_lsns(CatalogObject *obj)
{
	char	   *query;
	List	   *inputs;
	CatalogObject *input;

	if (OidIsValid(obj->source))
		return true;
	if (obj->kind != PEEK_KIND_VIEW || !catalog_view_definition(obj->id, &query, &inputs) ||
		inputs == NIL || (input = catalog_find(linitial(inputs))) == NULL)
		return false;
	return catalog_times_are_lsns(input);
}
