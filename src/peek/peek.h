/*-------------------------------------------------------------------------
 *
 * peek.h
 *	  The peek path: a backend issues a peek to the runtime that serves
 *	  peeks and waits; the runtime gates it (ready, not ready, compacted),
 *	  parks it keyed by object id, and answers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PEEK_H
#define PEEK_PEEK_H

#include "common/ids.h"

#include "utils/dsa.h"

#include "ipc/shmem.h"

/* What a ready peek hands its walk: the time, and for an index its batches. */
typedef struct PeekTicket
{
	int64		time;
	PeekHandle *handle;			/* index peeks; valid until peek_end */
} PeekTicket;

/* backend side */
extern void peek_backend_init(void);
extern PeekTicket peek_begin(PeekObjectId object, const char *name, char kind, int64 time,
							 int64 floor, bool *dropped);
extern void peek_end(void);

/* runtime side: the solo runtime lends its own spine's batches */
typedef bool (*PeekLocalBatches) (PeekObjectId index, dsa_pointer **batches, int *nbatches,
								  int64 *upper);

extern void peek_runtime_reset(int runtime, PeekLocalBatches local);
extern void peek_serve_inbox(int runtime);
extern void peek_serve_dirty_objects(int runtime);

#endif							/* PEEK_PEEK_H */
