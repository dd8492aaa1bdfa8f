/*-------------------------------------------------------------------------
 *
 * catalog_sources.c
 *	  The name of the table a source captures, kept in the source's row
 *	  (and its indexes', source_name): recorded at create_source and after
 *	  each rename of the table, read when the table is gone, so that the
 *	  source's failure names the table even to a runtime that started after
 *	  the DROP (a regclass shows only the OID then).  Through SPI as the
 *	  extension's owner, in the caller's transaction.  A catalog before 0.3
 *	  has no such column: nothing is recorded and no name read.
 *
 *	  Must not decide anything about the source (capture/ does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "common/spi.h"
#include "storage/catalog.h"
#include "storage/catalog_internal.h"
#include "storage/catalog_sources.h"

/* Whether the installed catalog keeps source_name (0.3 on). */
static bool
keeps_source_names(void)
{
	Oid			objects = catalog_relid();

	return OidIsValid(objects) && get_attnum(objects, "source_name") != InvalidAttrNumber;
}

/* Record the name the table has now in the rows of the sources capturing it. */
void
catalog_name_source_table(Oid table)
{
	Oid			argtype = OIDOID;
	Datum		arg = ObjectIdGetDatum(table);

	if (!keeps_source_names())
		return;
	catalog_exec("UPDATE peek.objects o SET source_name = c.relname FROM pg_catalog.pg_class c "
				 "WHERE o.source OPERATOR(pg_catalog.=) $1 AND c.oid OPERATOR(pg_catalog.=) $1",
				 1, &argtype, &arg, SPI_OK_UPDATE);
}

/* The name last recorded for a source's table, or NULL. */
char *
catalog_source_table_name(PeekObjectId source)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtype = INT8OID;
	Datum		arg = Int64GetDatum(source);
	SavedUser	saved;
	char	   *name = NULL;

	if (!keeps_source_names())
		return NULL;
	spi_connect_as_owner(&saved);
	spi_check(catalog_execute_saved("SELECT source_name FROM peek.objects WHERE id OPERATOR(pg_catalog.=) $1",
									1, &argtype, &arg, NULL, true),
			  SPI_OK_SELECT, "reading a source's table name");
	if (SPI_processed == 1)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (value != NULL)
			name = MemoryContextStrdup(caller, value);
	}
	spi_finish_as_owner(&saved);
	return name;
}
