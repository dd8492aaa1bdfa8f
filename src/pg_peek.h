/*-------------------------------------------------------------------------
 *
 * pg_peek.h
 *	  Declarations shared by every part of pg_peek: settings, runtime roles,
 *	  object ids and the per-subsystem init entry points called by _PG_init.
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

/* settings (pg_peek.c) */
extern char *peek_database;
extern bool peek_interactive;
extern int	peek_max_memory_kb;
extern int	peek_max_result_kb;
extern int	peek_runtime_wait_ms;

/* per-subsystem init, called once from _PG_init */
extern void peek_shmem_init(void);
extern void peek_runtime_register(void);
extern void peek_backend_init(void);
extern void catalog_init(void);
extern void persist_init(void);

/* helpers */
extern int	peek_runtime_count(void);
extern int	peek_serving_runtime(void);
extern const char *peek_role_name(PeekRole role);
extern PeekRole peek_runtime_role(int runtime);

#endif							/* PG_PEEK_H */
