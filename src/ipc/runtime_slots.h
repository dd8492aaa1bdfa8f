/*-------------------------------------------------------------------------
 *
 * runtime_slots.h
 *	  Each runtime's slot in shared memory: who runs it, its queues, its
 *	  counters (runtime_slots.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_IPC_RUNTIME_SLOTS_H
#define PEEK_IPC_RUNTIME_SLOTS_H

#include "port/atomics.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/settings.h"
#include "ipc/queue.h"

/* Commands that backends send to runtimes after their transaction commits. */
typedef enum PeekCommandKind
{
	PEEK_CMD_CATALOG_CHANGED,	/* re-read this object's catalog row (value:
								 * PEEK_CMD_DROPPED if it was dropped) */
	PEEK_CMD_STANDING_HOLD,		/* raise this runtime's standing hold */
	PEEK_CMD_SESSION_UPPER		/* backend-local: this session sealed up to */
} PeekCommandKind;

/* The value of a PEEK_CMD_CATALOG_CHANGED for a committed drop. */
#define PEEK_CMD_DROPPED		1

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
 * Counters shown by peek.runtimes; the owning runtime increments them (the
 * peeks backends gate themselves are counted in their peek slots).
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
	RC_NUM_COUNTERS
} RuntimeCounter;

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
	/* maintenance: the view whose round went on when cancelled, or 0 */
	pg_atomic_uint64 stuck_view;
} RuntimeSlot;

extern Size runtime_slots_shmem_size(void);
extern void runtime_slots_shmem_init(void);

extern RuntimeSlot *runtime_slot(int runtime);
extern void runtime_wake(int runtime);
extern void runtime_wake_all(int mask);
extern bool runtime_send(int runtime, const PeekCommand *cmd);
extern bool runtime_alive(int runtime, uint64 *generation);

static inline void
runtime_count(RuntimeSlot *rt, RuntimeCounter c)
{
	pg_atomic_fetch_add_u64(&rt->counters[c], 1);
}

#endif							/* PEEK_IPC_RUNTIME_SLOTS_H */
