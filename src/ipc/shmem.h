/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  pg_peek's static shared memory: the runtime slots (identity, liveness,
 *	  queues, counters), the per-backend peek slots and the DSA area that
 *	  holds the sharing registry.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SHMEM_H
#define PEEK_SHMEM_H

#include "common/ids.h"

#include "lib/dshash.h"
#include "port/atomics.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/timestamp.h"

/*
 * A bounded ring of fixed-size items shared between processes.  Producers
 * are backends and publishers; the consumer is one runtime.  When full, the
 * queue remembers that it overflowed so the consumer can fall back to a full
 * re-examination instead of losing work.
 */
typedef struct PeekQueue
{
	slock_t		mutex;
	int			capacity;
	int			head;
	int			count;
	bool		overflowed;
	Size		item_size;
	char		items[FLEXIBLE_ARRAY_MEMBER];
} PeekQueue;

extern bool shmem_queue_push(PeekQueue *queue, const void *item);
extern int	shmem_queue_drain(PeekQueue *queue, void *items, int max_items, bool *overflowed);
extern void shmem_queue_reset(PeekQueue *queue);

/* Commands that backends send to runtimes after their transaction commits. */
typedef enum PeekCommandKind
{
	PEEK_CMD_CATALOG_CHANGED,	/* re-read this object's catalog row (value
								 * 1: it was dropped) */
	PEEK_CMD_STANDING_HOLD,		/* raise this runtime's standing hold */
	PEEK_CMD_SESSION_UPPER		/* backend-local: this session sealed up to */
} PeekCommandKind;

typedef struct PeekCommand
{
	PeekCommandKind kind;
	PeekObjectId object;
	int64		value;
} PeekCommand;

typedef enum RuntimeState
{
	RUNTIME_STOPPED,			/* not running (never started, or exited) */
	RUNTIME_WAITING,			/* running, waiting for the extension */
	RUNTIME_RUNNING				/* reconciled and serving */
} RuntimeState;

/*
 * Counters shown by peek.runtimes; the owning runtime increments them, and
 * backends count the peeks they gate themselves (RC_PEEKS_FAST).
 */
typedef enum RuntimeCounter
{
	RC_WAKEUPS,
	RC_DIRTY_MARKS,
	RC_PEEKS_SERVED,
	RC_PEEKS_PARKED,
	RC_PEEKS_REEXAMINED,
	RC_PEEKS_CANCELED,
	RC_COMMANDS,
	RC_PUBLICATIONS,
	RC_COMPACTIONS,
	RC_PEEKS_FAST,				/* gated by their backends on our behalf */
	RC_NUM_COUNTERS
} RuntimeCounter;

/* peek.peek_durations: counts per power-of-two nanosecond bucket */
#define PEEK_DURATION_BUCKETS	64
#define PEEK_DURATION_KINDS		2	/* 0 persist, 1 index */

typedef struct RuntimeSlot
{
	slock_t		mutex;
	pid_t		pid;			/* 0 while not running */
	PGPROC	   *proc;			/* for SetLatch */
	uint64		generation;		/* bumped at every start */
	RuntimeState state;
	TimestampTz started_at;
	int			restarts;		/* starts after the first since shmem init */
	int			max_memory_kb;	/* pg_peek.max_memory as this runtime sees it */
	PeekQueue  *inbox;			/* peek slot numbers needing attention */
	PeekQueue  *dirty;			/* object ids published with our peeks parked */
	PeekQueue  *commands;		/* PeekCommand from committed transactions */
	pg_atomic_uint64 counters[RC_NUM_COUNTERS];
	pg_atomic_uint64 durations[PEEK_DURATION_KINDS][PEEK_DURATION_BUCKETS];
} RuntimeSlot;

/*
 * Peek slots: one per backend (indexed by BackendId - 1).  The backend owns
 * the request while the slot is IDLE; the backend's own gate or the serving
 * runtime answers it.  The hold lives here too: the gate sets it under the
 * registry entry's lock (so that compaction, which reads holds under the
 * same lock, never misses it) and the backend clears it when the peek ends.
 */
typedef enum PeekState
{
	PEEK_IDLE,
	PEEK_SUBMITTED,				/* in the serving runtime's inbox */
	PEEK_PARKED,				/* waiting for the object's upper */
	PEEK_ANSWERED,				/* answer ready; backend reads or raises it */
	PEEK_WITHDRAWN				/* canceled by the backend */
} PeekState;

typedef enum PeekAnswer
{
	PEEK_ANSWER_READ,			/* ready: the backend walks at answer_time */
	PEEK_ANSWER_COMPACTED,		/* answer_time is below answer_since */
	PEEK_ANSWER_DROPPED,		/* the object was dropped */
	PEEK_ANSWER_FAILED			/* the index is failed (out of memory) */
} PeekAnswer;

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

typedef struct PeekSlot
{
	slock_t		mutex;
	PeekState	state;
	bool		queued;			/* sitting in a runtime inbox */
	uint64		peek_id;		/* bumped at each new peek */
	pid_t		backend_pid;
	PGPROC	   *backend;
	/* request */
	PeekObjectId object;
	char		kind;
	int64		time;			/* PEEK_TIME_LATEST until resolved */
	int64		floor;			/* ... and then at least this time */
	int			runtime;
	uint64		runtime_generation;
	TimestampTz submitted_at;
	/* hold: object 0 means none */
	PeekObjectId hold_object;
	int64		hold_time;
	/* answer */
	PeekAnswer	answer;
	int64		answer_time;
	int64		answer_since;
	PeekHandle	answer_handle;	/* index peeks: the batches to walk */
} PeekSlot;

typedef struct PeekShared
{
	int			dsa_tranche;
	int			registry_tranche;
	dshash_table_handle registry_handle;
	void	   *dsa_place;
	int			nslots;
	PeekSlot   *slots;
	RuntimeSlot runtimes[PEEK_MAX_RUNTIMES];
	pg_atomic_uint64 arrangement_bytes; /* live batches, against max_memory */
} PeekShared;

extern PeekShared *peek_shared;

extern Size shmem_size(void);
extern dsa_area *shmem_startup(void);
extern void shmem_startup_done(dsa_area *dsa);
extern void shmem_attach(void);
extern dsa_area *shmem_dsa(void);
extern PeekSlot *shmem_my_peek_slot(void);

static inline void
shmem_runtime_count(RuntimeSlot *rt, RuntimeCounter c)
{
	pg_atomic_fetch_add_u64(&rt->counters[c], 1);
}

extern void shmem_wake_runtime(int runtime);
extern bool shmem_runtime_alive(int runtime, uint64 *generation);

#endif							/* PEEK_SHMEM_H */
