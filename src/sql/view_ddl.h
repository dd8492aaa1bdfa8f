/*-------------------------------------------------------------------------
 *
 * view_ddl.h
 *	  What the view DDL (view_ddl.c) does for the guard of the PostgreSQL
 *	  views beside views (view_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_VIEW_DDL_H
#define PEEK_SQL_VIEW_DDL_H

#include "storage/catalog.h"

extern void view_record_dependencies_again(CatalogObject *view, Oid relid);

#endif							/* PEEK_SQL_VIEW_DDL_H */
