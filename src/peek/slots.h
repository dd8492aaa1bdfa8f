/*-------------------------------------------------------------------------
 *
 * slots.h
 *	  The peek slots in shared memory, one per backend (slots.c): a peek's
 *	  request, its hold and its answer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PEEK_SLOTS_H
#define PEEK_PEEK_SLOTS_H

#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/settings.h"
#include "ipc/registry.h"

/* peek.peek_durations: counts per power-of-two nanosecond bucket */
#define PEEK_DURATION_BUCKETS	64
#define PEEK_DURATION_KINDS		2	/* 0 persist, 1 index */

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

	/*
	 * The backend's counts of its peeks, per runtime that serves them: those
	 * it gated itself, and the durations of all.  Only the slot's backend
	 * writes them, so peeking backends pass no shared cache line between
	 * cores; the views sum them over the slots.  They outlive the backend.
	 */
	pg_atomic_uint64 fast_peeks[PEEK_MAX_RUNTIMES];
	pg_atomic_uint64 durations[PEEK_MAX_RUNTIMES][PEEK_DURATION_KINDS][PEEK_DURATION_BUCKETS];
} PeekSlot;

extern Size peek_slots_shmem_size(void);
extern void peek_slots_shmem_init(void);
extern int	peek_slot_count(void);
extern PeekSlot *peek_slot(int i);
extern int	peek_slot_index(const PeekSlot *slot);
extern PeekSlot *peek_my_slot(void);
extern int64 peek_slots_min_hold(PeekObjectId id);
extern bool peek_slots_waiting_on(PeekObjectId id);
extern uint64 peek_slots_fast_peeks(int runtime);
extern uint64 peek_slots_durations(int runtime, int kind, int bucket);

/* Count one in a counter of the backend's own slot (it is the only writer). */
static inline void
peek_slot_add_own(pg_atomic_uint64 *counter)
{
	pg_atomic_write_u64(counter, pg_atomic_read_u64(counter) + 1);
}

#endif							/* PEEK_PEEK_SLOTS_H */
