/*-------------------------------------------------------------------------
 *
 * catalog_internal.h
 *	  What catalog.c (reads, locks, checks), catalog_write.c (changes) and
 *	  catalog_uppers.c (uppers) share, and the uppers' read that
 *	  standby_replay.c borrows; nothing outside storage/ includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_INTERNAL_H
#define PEEK_STORAGE_CATALOG_INTERNAL_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "common/ids.h"

/* peek.uppers' key for an object id: its sequence part */
#define UPPER_KEY_MASK	INT64CONST(0xFFFFFFFF)
#define UPPER_KEY_SQL(id) "(" id " OPERATOR(pg_catalog.&) 4294967295)"

/*
 * An object's upper, the end of its range of peek.uppers' primary key, is
 * read from that index after the query (catalog_query_objects); the
 * column is only a place for it.  (A subquery's generic plan, made while
 * the table held a few rows, scanned all of it for each object.)
 */
#define OBJECT_UPPER "NULL::pg_catalog.int8"

#define OBJECT_COLUMNS "id, name, kind, row_type, owner, shard, " OBJECT_UPPER ", since, allowed_since, collection, key_attnums, source, failure"
#define NUM_OBJECT_COLUMNS 13

extern int	catalog_execute_saved(const char *query, int nargs, Oid *argtypes, Datum *args,
								  const char *nulls, bool read_only);
extern List *catalog_query_objects(const char *query, int nargs, Oid argtype, Datum arg,
								   bool read_only);
extern Relation catalog_table_open(const char *table, const char *index_name, Oid *index);
extern const char *catalog_query_before_uppers(const char *query);
extern void catalog_read_uppers(int n, const PeekObjectId *ids, int64 *uppers,
								Snapshot snapshot);
extern int64 catalog_read_upper(PeekObjectId id, Snapshot snapshot);
extern int64 catalog_locked_upper(PeekObjectId id, int64 upper);
extern uint64 catalog_exec_nulls(const char *query, int nargs, Oid *argtypes, Datum *args,
								 const char *nulls, int expected);
extern uint64 catalog_exec(const char *query, int nargs, Oid *argtypes, Datum *args, int expected);

#endif							/* PEEK_STORAGE_CATALOG_INTERNAL_H */
