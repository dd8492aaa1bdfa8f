/*-------------------------------------------------------------------------
 *
 * view_guard.h
 *	  The guard of the PostgreSQL views beside maintained views
 *	  (view_guard.c), installed by _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_VIEW_GUARD_H
#define PEEK_SQL_VIEW_GUARD_H

#include "common/ids.h"

extern void view_guard_init(void);
extern void view_guard_lock_pg_view(PeekObjectId id, Oid relid);

#endif							/* PEEK_SQL_VIEW_GUARD_H */
