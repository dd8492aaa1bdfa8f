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

extern void view_guard_init(void);

#endif							/* PEEK_SQL_VIEW_GUARD_H */
