/*-------------------------------------------------------------------------
 *
 * catalog_internal.h
 *	  What catalog.c (reads, locks, checks) and catalog_write.c (changes)
 *	  share; nothing outside storage/ includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_INTERNAL_H
#define PEEK_STORAGE_CATALOG_INTERNAL_H

#include "nodes/pg_list.h"

/* peek.uppers' key for an object id: its sequence part */
#define UPPER_KEY_MASK	INT64CONST(0xFFFFFFFF)
#define UPPER_KEY_SQL(id) "(" id " OPERATOR(pg_catalog.&) 4294967295)"

/* an object's upper: the end of its range of peek.uppers' primary key */
#define OBJECT_UPPER "COALESCE((SELECT pg_catalog.max(u.upper) FROM peek.uppers u " \
	"WHERE u.object OPERATOR(pg_catalog.=) " UPPER_KEY_SQL("peek.objects.id") "), 0)"

#define OBJECT_COLUMNS "id, name, kind, row_type, owner, shard, " OBJECT_UPPER ", since, allowed_since, collection, key_attnums, source, failure"
#define NUM_OBJECT_COLUMNS 13

extern int	catalog_execute_saved(const char *query, int nargs, Oid *argtypes, Datum *args,
								  const char *nulls, bool read_only);
extern List *catalog_query_objects(const char *query, int nargs, Oid argtype, Datum arg,
								   bool read_only);
extern uint64 catalog_exec_nulls(const char *query, int nargs, Oid *argtypes, Datum *args,
								 const char *nulls, int expected);
extern uint64 catalog_exec(const char *query, int nargs, Oid *argtypes, Datum *args, int expected);

#endif							/* PEEK_STORAGE_CATALOG_INTERNAL_H */
