/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The durable catalog (peek.objects).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CATALOG_H
#define PEEK_CATALOG_H

#include "access/attnum.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

#include "common/ids.h"
#include "storage/catalog_uppers.h"

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
	/* ms or PEEK_RETENTION_*: catalog_read's (others say KEEP_ALL) */
	int64		retention_ms;
} CatalogObject;

/* How catalog_lookup locks the object's row. */
typedef enum CatalogLock
{
	CATALOG_READ,				/* no lock */
	CATALOG_KEEP,				/* kept from drops; writers go on */
	CATALOG_WRITE,				/* writers of one collection serialize */
	CATALOG_DROP				/* conflicts with writers and compaction */
} CatalogLock;

/* backends */
extern CatalogObject *catalog_find(const char *name);
extern CatalogObject *catalog_lookup(const char *name, char kind, CatalogLock lock);
extern void catalog_check_owner(CatalogObject *obj);
extern void catalog_check_reader(CatalogObject *obj);

/* runtimes (inside a transaction with SPI connected by the caller) */
extern List *catalog_read(PeekObjectId *ids, int nids);
extern CatalogObject *catalog_object_in(List *objects, PeekObjectId id);
extern Oid	catalog_relid(void);
extern bool catalog_keeps_base_time(void);
extern int64 catalog_read_since(PeekObjectId id, Snapshot snapshot, int64 *base_time);
extern int64 catalog_read_shard_base(Oid shard, Snapshot snapshot);
extern void catalog_raise_compacted(const char *noun, const char *name, int64 time,
									int64 since) pg_attribute_noreturn();
extern char *catalog_failure(PeekObjectId id, const char **noun);
extern void catalog_raise_if_failed(PeekObjectId object, char kind, const char *name);
extern const char *catalog_kind_noun(char kind);
extern bool catalog_kind_matches(char wanted, char kind);

#endif							/* PEEK_CATALOG_H */
