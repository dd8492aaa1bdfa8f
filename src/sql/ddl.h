/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  What the view DDL (view_ddl.c) shares with the collections' (ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_DDL_H
#define PEEK_SQL_DDL_H

#include "storage/catalog.h"

extern void ddl_drop_collection_and_indexes(CatalogObject *coll);

#endif							/* PEEK_SQL_DDL_H */
