/*-------------------------------------------------------------------------
 *
 * catalog_views.h
 *	  A maintained view's query and inputs in the catalog (catalog_views.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_VIEWS_H
#define PEEK_STORAGE_CATALOG_VIEWS_H

#include "nodes/pg_list.h"

#include "common/ids.h"
#include "storage/catalog.h"

extern void catalog_set_view(PeekObjectId id, const char *query, List *inputs);
extern bool catalog_view_definition(PeekObjectId id, char **query, List **inputs);
extern bool catalog_times_are_lsns(CatalogObject *obj);
extern char *catalog_view_reading(const char *name);
extern List *catalog_sources_of(Oid table);
extern CatalogObject *catalog_view_of_row_type(Oid row_type);
extern List *catalog_views_given_away(void);
extern List *catalog_views_reading(const char *name);
extern List *catalog_views_inputs_indexes(void);
extern void catalog_set_view_owner(PeekObjectId id, Oid owner);

#endif							/* PEEK_STORAGE_CATALOG_VIEWS_H */
