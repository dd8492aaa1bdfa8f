/*-------------------------------------------------------------------------
 *
 * ids.h
 *	  Types and constants shared by every part of pg_peek: object ids, kinds,
 *	  runtime slots and roles.  Declares no function or variable (the
 *	  settings are in settings.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_PEEK_H
#define PG_PEEK_H

#include "postgres.h"

/*
 * Object ids: the catalog's sequence value in the low 32 bits and the OID of
 * the pg_extension row in the high bits, so that a drop and re-create of the
 * extension never reuses an id still known to the shared registry.
 */
typedef int64 PeekObjectId;

#define PEEK_OBJECT_ID(extension, seq)	(((int64) (extension) << 32) | (int64) (seq))
#define PEEK_OBJECT_EXTENSION(id)		((Oid) ((uint64) (id) >> 32))

#define PEEK_KIND_COLLECTION	'c'
#define PEEK_KIND_INDEX			'i'

/* Most batches an arrangement has (geometric merging keeps far fewer). */
#define PEEK_MAX_BATCHES		64

/*
 * An object's retention, in milliseconds of wall clock its since trails its
 * upper by, when it is not a number: all history kept (set_retention's
 * NULL, pg_peek.retention = -1, or a catalog from before 0.3), or whatever
 * pg_peek.retention says (an object set_retention never gave one).
 */
#define PEEK_RETENTION_KEEP_ALL	((int64) -1)
#define PEEK_RETENTION_DEFAULT	((int64) -2)

/* A peek's "as of" time before the runtime resolves it (as_of => NULL). */
#define PEEK_TIME_LATEST		((int64) -1)

/*
 * Runtimes.  Slot 0 is the maintenance runtime (or the solo runtime), slot 1
 * the interactive runtime; solo mode uses slot 0 only.
 */
#define PEEK_MAX_RUNTIMES		2
#define PEEK_RUNTIME_MAINTENANCE	0
#define PEEK_RUNTIME_INTERACTIVE	1

typedef enum PeekRole
{
	PEEK_ROLE_MAINTENANCE,
	PEEK_ROLE_INTERACTIVE,
	PEEK_ROLE_SOLO
} PeekRole;

#endif							/* PG_PEEK_H */
