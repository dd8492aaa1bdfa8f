/*-------------------------------------------------------------------------
 *
 * catalog_locks.h
 *	  The locks a runtime's transaction takes in the durable catalog
 *	  (catalog_locks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_LOCKS_H
#define PEEK_STORAGE_CATALOG_LOCKS_H

#include "common/ids.h"

/* inside a transaction */
extern bool catalog_lock_extension(void);
extern void catalog_bound_lock_waits(void);
extern bool catalog_lock_row(PeekObjectId id, bool skip_locked);
extern bool catalog_keep_row(PeekObjectId id);
extern bool catalog_extension_dropping(Oid extension);

#endif							/* PEEK_STORAGE_CATALOG_LOCKS_H */
