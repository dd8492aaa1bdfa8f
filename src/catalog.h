/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The durable catalog (peek.objects) and the notices that carry its
 *	  committed changes to the runtimes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CATALOG_H
#define PEEK_CATALOG_H

#include "pg_peek.h"

#include "access/attnum.h"
#include "nodes/pg_list.h"

typedef struct CatalogObject
{
	PeekObjectId id;
	char	   *name;
	char		kind;
	Oid			row_type;
	Oid			owner;
	Oid			shard;			/* collections: the table holding updates */
	PeekObjectId collection;	/* indexes: the collection arranged */
	int			nkeys;			/* indexes: key columns */
	AttrNumber	attnums[INDEX_MAX_KEYS];
	int64		upper;
	int64		since;
	int64		allowed_since;
	Oid			source;			/* sources and their indexes: the table */
	char	   *failure;		/* a failed object: why, else NULL */
} CatalogObject;

/* How catalog_lookup locks the object's row. */
typedef enum CatalogLock
{
	CATALOG_READ,				/* no lock */
	CATALOG_WRITE,				/* writers of one collection serialize */
	CATALOG_DROP				/* conflicts with writers and compaction */
} CatalogLock;

/*
 * Running SPI as the extension's owner, with search_path pinned to
 * PEEK_SAFE_SEARCH_PATH (the runtimes run under it throughout).
 */
#define PEEK_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

typedef struct SavedUser
{
	Oid			userid;
	int			sec_context;
	int			guc_nestlevel;
} SavedUser;

extern void become_extension_owner(SavedUser *saved);
extern void restore_user(SavedUser *saved);

/* backends */
extern CatalogObject *catalog_find(const char *name);
extern CatalogObject *catalog_lookup(const char *name, char kind, CatalogLock lock);
extern PeekObjectId catalog_new_id(int32 *seq);
extern bool catalog_name_taken(const char *name);
extern void catalog_insert(CatalogObject *obj, Datum key_columns);
extern void catalog_delete(PeekObjectId id);
extern List *catalog_indexes_of(PeekObjectId collection);
extern void catalog_set_upper(PeekObjectId id, int64 upper);
extern void catalog_set_allowed_since(PeekObjectId id, int64 since);
extern bool catalog_inserting(void);
extern List *catalog_adopt_restored(PeekObjectId *ids, int nids);
extern void check_object_owner(CatalogObject *obj);
extern void check_object_reader(CatalogObject *obj);

/* runtimes (inside a transaction with SPI connected by the caller) */
extern bool catalog_lock_extension(void);
extern void catalog_bound_lock_waits(void);
extern List *catalog_read(PeekObjectId *ids, int nids);
extern bool catalog_lock_row(PeekObjectId id, bool skip_locked);
extern void catalog_set_since(PeekObjectId id, int64 since);
extern void catalog_set_source_upper(PeekObjectId id, int64 upper);
extern bool catalog_set_failure(PeekObjectId id, const char *failure);
extern char *catalog_failure(PeekObjectId id, const char **noun);
extern bool catalog_extension_dropping(Oid extension);

/* notices sent to the runtimes when the transaction commits */
extern void notify_catalog_changed(PeekObjectId id);
extern void notify_standing_hold(PeekObjectId id, int64 since);
extern void notify_dropped(PeekObjectId id);
extern int64 session_upper(PeekObjectId collection);
extern void catalog_init(void);

#endif							/* PEEK_CATALOG_H */
