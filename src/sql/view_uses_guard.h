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
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "storage/catalog.h"

/* The maintained view whose PostgreSQL view is relid, or NULL. */
extern CatalogObject *maintained_view_of(Oid relid);

/*
 * Before a statement: refuses a rename or move of what a view uses;
 * returns what a function change must not change, for after it.
 */
extern List *views_dropped_with(DropStmt *drop);
extern List *view_uses_guard_before(Node *stmt);
extern void view_uses_guard_after(List *functions);

/*
 * Lock what a view's PostgreSQL view relid uses in share mode (and the row
 * types its inputs' and its own rows hold), as the guard
 * locks what a statement changes in exclusive mode: a create_view and such
 * a change go one after the other, so the change sees the view, or the
 * view is planned again after the change.
 */
extern void view_uses_lock(Oid relid);

/*
 * Lock in share mode the row types whose values a type's values hold (it
 * too, if one), however deep: an ALTER TYPE of their attributes (refused
 * for a view's or an index's values, view_uses_guard_before) waits for
 * the creating transaction and then sees what it made.
 */
extern void view_uses_lock_types_held(Oid type);

#endif							/* PEEK_SQL_VIEW_USES_GUARD_H */
