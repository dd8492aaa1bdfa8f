/*-------------------------------------------------------------------------
 *
 * catalog_sources.h
 *	  A captured table's name kept in its sources' rows (catalog_sources.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_SOURCES_H
#define PEEK_STORAGE_CATALOG_SOURCES_H

#include "common/ids.h"

extern void catalog_name_source_table(Oid table);
extern char *catalog_source_table_name(PeekObjectId source);

#endif							/* PEEK_STORAGE_CATALOG_SOURCES_H */
