/*-------------------------------------------------------------------------
 *
 * peek.h
 *	  The peek protocol, both sides.
 *
 *	  The gate (gate_peek) decides ready / not ready / compacted under the
 *	  object's registry entry lock and records the peek's hold in its slot
 *	  there.  It is one function for both routes.
 *
 *	  Backend side: backend_peek_begin fills the backend's peek slot and gates the
 *	  peek itself (pg_peek.fast_path): a ready peek pins the published
 *	  batches and is walked at once, without a hop.  A peek that must wait
 *	  is queued to the runtime that serves peeks, and the backend waits on
 *	  its latch.  It re-issues the peek when that runtime restarts, fails
 *	  after a bounded wait when no runtime runs, and on any abort (cancel,
 *	  statement_timeout, error) withdraws it through one path,
 *	  peek_withdraw.  backend_peek_end releases the hold after the walk.
 *
 *	  Runtime side: a peek that waits is parked keyed by its object id; a
 *	  publication of that object marks it dirty for this runtime
 *	  (registry.c) and serve_dirty_objects re-examines only the peeks
 *	  parked under dirty ids.  A ready index peek is answered with a handle
 *	  on its batches: a shared handle resolved from the registry on that
 *	  attempt (interactive runtime), or a local handle on the solo
 *	  runtime's own spine, pinned once for the peek's life.
 *
 *	  The files: slots.c (the slots), gate.c (the gate), backend.c (the
 *	  backend side), serve.c (the serving runtime's side).
 *
 *	  Must not read shards or batches: the walk belongs to the callers
 *	  (arrange/walk.c for indexes, storage/ for shards), in the waiting backend.
 *	  Reads the catalog only through storage/catalog.c, to say why a peek
 *	  cannot be answered (the object failed or is compacted past the time,
 *	  the extension is being dropped).  Must not reach into the maintenance runtime's spines: the
 *	  solo runtime's loop hands serve_reset the function that lends
 *	  its local batches.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PEEK_H
#define PEEK_PEEK_H

#include "utils/dsa.h"

#include "common/ids.h"
#include "ipc/registry.h"

/* A peek's "as of" time before the runtime resolves it (as_of => NULL). */
#define PEEK_TIME_LATEST		((int64) -1)

/* What a ready peek hands its walk: the time, and for an index its batches. */
typedef struct PeekTicket
{
	int64		time;
	PeekHandle *handle;			/* index peeks; valid until backend_peek_end */
} PeekTicket;

/* backend side */
extern void backend_peek_init(void);
extern PeekTicket backend_peek_begin(PeekObjectId object, const char *name, char kind, int64 time,
							 int64 floor, bool *dropped);
extern void backend_peek_end(void);
extern void peek_check_deadlock(const char *noun, const char *name);

/* runtime side: the solo runtime lends its own spine's batches */
typedef bool (*PeekLocalBatches) (PeekObjectId index, dsa_pointer **batches, int *nbatches,
								  int64 *upper);

extern void serve_reset(int runtime, PeekLocalBatches local);
extern void serve_inbox(int runtime);
extern void serve_dirty_objects(int runtime);

#endif							/* PEEK_PEEK_H */
