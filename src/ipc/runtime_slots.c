/*-------------------------------------------------------------------------
 *
 * runtime_slots.c
 *	  The runtimes' slots in shared memory: which process runs each role
 *	  (its latch, its generation, its state), its three queues (peeks to
 *	  look at, objects published with its peeks parked, committed catalog
 *	  commands) and its counters.  Sending a runtime something is pushing
 *	  it onto a queue and setting the runtime's latch.
 *	  Owns the slots; must not interpret what the queues carry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "ipc/runtime_slots.h"

/* Committed catalog commands a runtime's queue holds before it overflows. */
#define COMMAND_CAPACITY	4096

static RuntimeSlot *runtime_slots = NULL;

Size
runtime_slots_shmem_size(void)
{
	Size		size = MAXALIGN(mul_size(PEEK_MAX_RUNTIMES, sizeof(RuntimeSlot)));

	for (int i = 0; i < PEEK_MAX_RUNTIMES; i++)
	{
		size = add_size(size, queue_size(MaxBackends, sizeof(int)));
		size = add_size(size, queue_size(MaxBackends, sizeof(PeekObjectId)));
		size = add_size(size, queue_size(COMMAND_CAPACITY, sizeof(PeekCommand)));
	}
	return size;
}

/* Lay out the slots, once (the caller holds AddinShmemInitLock). */
void
runtime_slots_shmem_init(void)
{
	bool		found;
	char	   *cursor;

	runtime_slots = ShmemInitStruct(PEEK_EXTENSION " runtimes", runtime_slots_shmem_size(), &found);
	if (found)
		return;
	cursor = (char *) runtime_slots + MAXALIGN(mul_size(PEEK_MAX_RUNTIMES, sizeof(RuntimeSlot)));
	memset(runtime_slots, 0, sizeof(RuntimeSlot) * PEEK_MAX_RUNTIMES);
	for (int i = 0; i < PEEK_MAX_RUNTIMES; i++)
	{
		RuntimeSlot *rt = &runtime_slots[i];

		SpinLockInit(&rt->mutex);
		rt->state = RUNTIME_STOPPED;
		rt->restarts = -1;
		rt->inbox = queue_init(&cursor, MaxBackends, sizeof(int));
		rt->dirty = queue_init(&cursor, MaxBackends, sizeof(PeekObjectId));
		rt->commands = queue_init(&cursor, COMMAND_CAPACITY, sizeof(PeekCommand));
		for (int c = 0; c < RC_NUM_COUNTERS; c++)
			pg_atomic_init_u64(&rt->counters[c], 0);
		pg_atomic_init_u64(&rt->stuck_view, 0);
	}
}

RuntimeSlot *
runtime_slot(int runtime)
{
	Assert(runtime >= 0 && runtime < PEEK_MAX_RUNTIMES);
	return &runtime_slots[runtime];
}

/* Set the runtime's latch, if it runs. */
void
runtime_wake(int runtime)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	PGPROC	   *proc;

	SpinLockAcquire(&rt->mutex);
	proc = rt->pid != 0 ? rt->proc : NULL;
	SpinLockRelease(&rt->mutex);
	if (proc != NULL)
		SetLatch(&proc->procLatch);
}

/* Wake every runtime whose bit (1 << runtime) is set in mask. */
void
runtime_wake_all(int mask)
{
	for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		if (mask & (1 << r))
			runtime_wake(r);
}

/*
 * Queue a command to the runtime and wake it.  False if its queue was full:
 * it then re-reads the whole catalog, which covers the command.
 */
bool
runtime_send(int runtime, const PeekCommand *cmd)
{
	bool		pushed = queue_push(runtime_slot(runtime)->commands, cmd);

	runtime_wake(runtime);
	return pushed;
}

/* Is the runtime running?  Reports its current generation either way. */
bool
runtime_alive(int runtime, uint64 *generation)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	bool		alive;

	SpinLockAcquire(&rt->mutex);
	alive = rt->pid != 0;
	*generation = rt->generation;
	SpinLockRelease(&rt->mutex);
	return alive;
}
