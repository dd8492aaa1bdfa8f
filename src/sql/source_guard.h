/*-------------------------------------------------------------------------
 *
 * source_guard.h
 *	  The guard of the columns sources capture (source_guard.c), called by
 *	  view_guard.c around each ALTER TABLE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_SOURCE_GUARD_H
#define PEEK_SQL_SOURCE_GUARD_H

#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"

/*
 * An ALTER TABLE that drops a column a source captures is refused (2BP01):
 * what it would drop, noted before the statement, refused after it.
 */
extern List *source_guard_before(AlterTableStmt *alter);
extern void source_guard_after(List *drops);

#endif							/* PEEK_SQL_SOURCE_GUARD_H */
