/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The sharing registry: a dshash in the DSA keyed by object id, holding
 *	  per published object its frontiers, holds, waiter counts and dirty
 *	  marks, an index's or a view's hydration and a view's operators'
 *	  counts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_REGISTRY_H
#define PEEK_REGISTRY_H

#include "lib/dshash.h"
#include "nodes/pg_list.h"
#include "utils/dsa.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/settings.h"
#include "ipc/batch.h"

/*
 * Retention's clock: when an object's upper was what.  Samples spaced by a
 * sixteenth of the retention find the upper it had a retention ago to
 * within that; a few more cover a retention raised meanwhile.
 */
#define PEEK_RETENTION_SAMPLES	32

typedef struct UpperSample
{
	TimestampTz clock;			/* the wall clock of a publication */
	int64		upper;			/* the upper it published */
} UpperSample;

/* A maintained view's operators, for peek.dataflow_operators. */
#define PEEK_MAX_OPERATORS	8

typedef struct OperatorStats
{
	char		kind[32];		/* what it does (dataflow/ names it) */
	int64		rows_in;
	int64		rows_out;
	int64		bytes;			/* the state it keeps now */
	int64		time_us;		/* spent in it */
	bool		learning;		/* learning its groups between rounds */
} OperatorStats;

typedef struct RegistryEntry
{
	PeekObjectId id;			/* key */
	char		kind;			/* PEEK_KIND_* once published */
	bool		published;		/* adopted by the maintenance runtime */
	bool		dropped;		/* tombstone: answers parked peeks with an error */
	int64		upper;			/* every time < upper is complete */
	int64		since;			/* exact at times >= since */
	int64		allowed_since;	/* the user's allow_compaction */
	int64		standing_hold[PEEK_MAX_RUNTIMES];
	/* retention in force (ms, or PEEK_RETENTION_KEEP_ALL), and its clock */
	int64		retention_ms;
	TimestampTz since_clock;	/* when since was last the newest complete time (0: unknown) */
	int32		nsamples;		/* oldest first */
	UpperSample samples[PEEK_RETENTION_SAMPLES];
	int32		waiters[PEEK_MAX_RUNTIMES]; /* peeks parked here, per runtime */
	bool		dirty[PEEK_MAX_RUNTIMES];	/* queued in that runtime's dirty set */
	/* arrangements (indexes) */
	bool		failed;			/* out of pg_peek.max_memory */
	int32		nbatches;		/* the published batch list */
	bool		spine_pinned;	/* ... is pinned by a spine as well */
	dsa_pointer batches[PEEK_MAX_BATCHES];
	int64		updates;		/* entries in the published batches */
	int64		rows;			/* their diffs summed: the current row count */
	int64		bytes;
	/* hydration of an index, for peek.hydration_progress */
	bool		hydrating;
	int64		hydrated_rows;
	int64		hydration_total;
	/* a maintained view's rounds that ran out of time in a row, its limit now */
	int32		round_timeouts;
	int32		round_limit_ms;
	/* a maintained view's operators: counts since it was published */
	int32		noperators;
	OperatorStats operators[PEEK_MAX_OPERATORS];
	/* shared handles, per runtime */
	pg_atomic_uint32 live_handles[PEEK_MAX_RUNTIMES];
	pg_atomic_uint64 pins[PEEK_MAX_RUNTIMES];
	pg_atomic_uint64 releases[PEEK_MAX_RUNTIMES];
} RegistryEntry;

/*
 * A handle: an index's batch list, each batch pinned for one reader until
 * registry_release_handle.  Shared when resolved from the registry (a sharing event
 * of that runtime), local when taken from the solo runtime's own spine.
 */
typedef struct PeekHandle
{
	PeekObjectId index;
	bool		shared;
	int			runtime;
	int32		nbatches;		/* 0 and no index: no handle */
	dsa_pointer batches[PEEK_MAX_BATCHES];
} PeekHandle;

extern Size registry_shmem_size(void);
extern void registry_shmem_init(dsa_area *dsa);
extern void registry_attach(void);

extern RegistryEntry *registry_lock(PeekObjectId id, bool create, bool *created);
extern RegistryEntry *registry_lock_shared(PeekObjectId id);
extern void registry_unlock(RegistryEntry *entry);

extern bool registry_publish_frontiers(PeekObjectId id, char kind, int64 upper,
							  int64 since, int64 allowed_since);
extern int64 registry_published_upper(PeekObjectId id);
extern bool registry_is_live(PeekObjectId id, uint64 *checked);
extern void registry_tombstone(PeekObjectId id);
extern void registry_mark_dropped(PeekObjectId id);
extern List *registry_mark_dropped_except(PeekObjectId *live, int nlive, List **unverified);
extern bool registry_delete_tombstone(PeekObjectId id);
extern void registry_spine_unpinned(PeekObjectId id);
extern void registry_release_dead_spines(void);
extern bool registry_raise_standing_hold(PeekObjectId id, int runtime, int64 since);
extern void registry_accept_standing_hold(PeekObjectId id, int runtime, int64 since);
extern int64 registry_advance_since(PeekObjectId id, int64 durable_upper, int64 *target,
									 int64 (*min_peek_hold) (PeekObjectId id));
extern void registry_set_retention(PeekObjectId id, int64 retention_ms);
extern void registry_reset_runtime(int runtime);
extern List *registry_snapshot(void);

extern bool registry_publish_arrangement(PeekObjectId id, dsa_pointer *batches, int nbatches,
								int64 upper, int64 since);
extern void registry_mark_failed(PeekObjectId id);
extern void registry_pin_batches(PeekHandle *handle, PeekObjectId index, dsa_pointer *batches,
						int nbatches, bool shared, int runtime);
extern void registry_resolve_shared_handle(RegistryEntry *entry, int runtime, PeekHandle *handle);
extern void registry_release_handle(PeekHandle *handle);

#endif							/* PEEK_REGISTRY_H */
