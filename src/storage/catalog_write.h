/*-------------------------------------------------------------------------
 *
 * catalog_write.h
 *	  Changes to the durable catalog (catalog_write.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_WRITE_H
#define PEEK_STORAGE_CATALOG_WRITE_H

#include "storage/catalog.h"

extern PeekObjectId catalog_new_id(int32 *seq);
extern void catalog_lock_name(const char *name);
extern bool catalog_name_taken(const char *name);
extern void catalog_await_failure(PeekObjectId id);
extern void catalog_insert(CatalogObject *obj, Datum key_columns);
extern void catalog_delete(PeekObjectId id);
extern List *catalog_indexes_of(PeekObjectId collection);
extern void catalog_set_upper(PeekObjectId id, int64 upper);
extern void catalog_set_allowed_since(PeekObjectId id, int64 since);
extern void catalog_set_retention(PeekObjectId id, Datum retention, bool keep_all, bool set);
extern bool catalog_inserting(void);
extern List *catalog_adopt_restored(PeekObjectId *ids, int nids);
extern uint64 catalog_adopt_foreign_ids(Oid extension);
extern void catalog_set_since(PeekObjectId id, int64 since);
extern void catalog_set_base(PeekObjectId id, int64 since, int64 old_base, int64 new_base);
extern void catalog_prune_uppers(PeekObjectId id, int64 from, int64 below);
extern bool catalog_set_failure(PeekObjectId id, const char *failure);

#endif							/* PEEK_STORAGE_CATALOG_WRITE_H */
