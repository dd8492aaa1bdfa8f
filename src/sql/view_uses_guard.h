/*-------------------------------------------------------------------------
 *
 * view_uses_guard.h
 *	  The guard of the functions, operators and types maintained views use
 *	  (view_uses_guard.c), called by view_guard.c around each utility
 *	  statement.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_VIEW_USES_GUARD_H
#define PEEK_SQL_VIEW_USES_GUARD_H

#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "storage/catalog.h"

/* The maintained view whose PostgreSQL view is relid, or NULL. */
extern CatalogObject *maintained_view_of(Oid relid);

/*
 * Before a statement: refuses a rename or move of what a view uses;
 * returns what a function change must not change, for after it.
 */
extern List *view_uses_guard_before(Node *stmt);
extern void view_uses_guard_after(List *functions);

#endif							/* PEEK_SQL_VIEW_USES_GUARD_H */
