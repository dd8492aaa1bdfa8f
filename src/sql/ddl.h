/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  What the view DDL (view_ddl.c) shares with the collections' (ddl.c)
 *	  and with the guard of the PostgreSQL views beside views (view_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_DDL_H
#define PEEK_SQL_DDL_H

#include "storage/catalog.h"

extern void ddl_drop_collection_and_indexes(CatalogObject *coll);

/* view_ddl.c */
extern void view_record_dependencies_again(CatalogObject *view, Oid relid);

/* view_guard.c */
extern void view_guard_init(void);

#endif							/* PEEK_SQL_DDL_H */
