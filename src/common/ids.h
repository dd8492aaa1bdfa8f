/*-------------------------------------------------------------------------
 *
 * ids.h
 *	  Object ids and kinds, the names the extension goes by, and the local
 *	  hash table by object id the runtimes keep their state in.  Declares
 *	  no variable; every constant of one subsystem lives in that
 *	  subsystem's header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_COMMON_IDS_H
#define PEEK_COMMON_IDS_H

#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

/*
 * The extension's name (also its library's, its output plugin's and its
 * settings' prefix) and its schema's.
 */
#define PEEK_EXTENSION			"pg_peek"
#define PEEK_SCHEMA				"peek"

/*
 * Object ids: the catalog's sequence value in the low 32 bits and the OID of
 * the pg_extension row in the high bits, so that a drop and re-create of the
 * extension never reuses an id still known to the shared registry.
 */
typedef int64 PeekObjectId;

#define PEEK_OBJECT_ID(extension, seq)	(((int64) (extension) << 32) | (int64) (seq))
#define PEEK_OBJECT_EXTENSION(id)		((Oid) ((uint64) (id) >> 32))

/*
 * An SQL function's C entry point.  The library is built with hidden
 * visibility: these, _PG_init, the workers' entry points and the output
 * plugin are all it exports (PostgreSQL 15's PG_FUNCTION_INFO_V1 exports
 * only the info function).
 */
#define PEEK_SQL_FUNCTION(name) \
	extern PGDLLEXPORT Datum name(PG_FUNCTION_ARGS); \
	PG_FUNCTION_INFO_V1(name)

#define PEEK_KIND_COLLECTION	'c'
#define PEEK_KIND_INDEX			'i'
#define PEEK_KIND_VIEW			'v'	/* a collection its query's rows fill */

/*
 * Where a shard stores its base's rows, below every time a write gets, and
 * the base time of a shard without a base (the contents at it are empty).
 */
#define PEEK_BASE_TIME			INT64CONST(-1)

/*
 * A backend-local hash table of entries keyed by an object id (the entry's
 * first field), for the life of the process.
 */
static inline HTAB *
id_table_create(const char *name, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

#endif							/* PEEK_COMMON_IDS_H */
