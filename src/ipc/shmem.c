/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Static shared memory of pg_peek: its size (asked for by the module's
 *	  shmem_request_hook), its layout (runtime slots, peek slots, queues)
 *	  and the DSA area created in place, as pgstat_shmem.c does, because the
 *	  postmaster cannot create DSM segments (laid out from the module's
 *	  shmem_startup_hook).  Every process attaches to the area once.
 *
 *	  Owns the memory layout and the queues.  Must not call any other file
 *	  of pg_peek: the registry (registry.c) lives in the area, the peek
 *	  protocol (peek.c) uses the slots.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "ipc/shmem.h"

#define PEEK_DSA_INIT_SIZE		(1024 * 1024)
#define PEEK_COMMAND_CAPACITY	4096

PeekShared *peek_shared = NULL;

static dsa_area *attached_dsa = NULL;

static Size
queue_size(int capacity, Size item_size)
{
	return MAXALIGN(add_size(offsetof(PeekQueue, items), mul_size(capacity, item_size)));
}

Size
shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(PeekShared));

	size = add_size(size, MAXALIGN(mul_size(MaxBackends, sizeof(PeekSlot))));
	size = add_size(size, PEEK_DSA_INIT_SIZE);
	for (int i = 0; i < PEEK_MAX_RUNTIMES; i++)
	{
		size = add_size(size, queue_size(MaxBackends, sizeof(int)));
		size = add_size(size, queue_size(MaxBackends, sizeof(PeekObjectId)));
		size = add_size(size, queue_size(PEEK_COMMAND_CAPACITY, sizeof(PeekCommand)));
	}
	return size;
}

static PeekQueue *
queue_init(char **cursor, int capacity, Size item_size)
{
	PeekQueue  *queue = (PeekQueue *) *cursor;

	*cursor += queue_size(capacity, item_size);
	SpinLockInit(&queue->mutex);
	queue->capacity = capacity;
	queue->item_size = item_size;
	shmem_queue_reset(queue);
	return queue;
}

/*
 * Lay out the shared memory, once (the caller holds AddinShmemInitLock).
 * Returns the new DSA area, which cannot grow yet so that what the caller
 * creates in it stays in place; shmem_startup_done lets it grow.  NULL when
 * it was laid out already.
 */
dsa_area *
shmem_startup(void)
{
	bool		found;
	char	   *cursor;
	dsa_area   *dsa;

	peek_shared = ShmemInitStruct("pg_peek", shmem_size(), &found);
	if (found)
		return NULL;

	cursor = (char *) peek_shared + MAXALIGN(sizeof(PeekShared));
	memset(peek_shared, 0, sizeof(PeekShared));
	peek_shared->nslots = MaxBackends;
	pg_atomic_init_u64(&peek_shared->arrangement_bytes, 0);
	peek_shared->slots = (PeekSlot *) cursor;
	cursor += MAXALIGN(mul_size(MaxBackends, sizeof(PeekSlot)));
	memset(peek_shared->slots, 0, sizeof(PeekSlot) * MaxBackends);
	for (int i = 0; i < MaxBackends; i++)
		SpinLockInit(&peek_shared->slots[i].mutex);

	for (int i = 0; i < PEEK_MAX_RUNTIMES; i++)
	{
		RuntimeSlot *rt = &peek_shared->runtimes[i];

		SpinLockInit(&rt->mutex);
		rt->state = RUNTIME_STOPPED;
		rt->restarts = -1;
		rt->inbox = queue_init(&cursor, MaxBackends, sizeof(int));
		rt->dirty = queue_init(&cursor, MaxBackends, sizeof(PeekObjectId));
		rt->commands = queue_init(&cursor, PEEK_COMMAND_CAPACITY, sizeof(PeekCommand));
		for (int c = 0; c < RC_NUM_COUNTERS; c++)
			pg_atomic_init_u64(&rt->counters[c], 0);
		for (int k = 0; k < PEEK_DURATION_KINDS; k++)
			for (int b = 0; b < PEEK_DURATION_BUCKETS; b++)
				pg_atomic_init_u64(&rt->durations[k][b], 0);
	}

	peek_shared->dsa_tranche = LWLockNewTrancheId();
	peek_shared->dsa_place = cursor;
	dsa = dsa_create_in_place(peek_shared->dsa_place, PEEK_DSA_INIT_SIZE,
							  peek_shared->dsa_tranche, NULL);
	dsa_pin(dsa);
	dsa_set_size_limit(dsa, PEEK_DSA_INIT_SIZE);
	return dsa;
}

/* The area laid out by shmem_startup may grow from now on. */
void
shmem_startup_done(dsa_area *dsa)
{
	dsa_set_size_limit(dsa, -1);
	dsa_detach(dsa);
}

/* Attach this process to the DSA area, once. */
void
shmem_attach(void)
{
	MemoryContext oldcxt;

	if (attached_dsa != NULL)
		return;
	if (peek_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_peek must be loaded via shared_preload_libraries")));

	LWLockRegisterTranche(peek_shared->dsa_tranche, "pg_peek_dsa");

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	attached_dsa = dsa_attach_in_place(peek_shared->dsa_place, NULL);
	dsa_pin_mapping(attached_dsa);
	MemoryContextSwitchTo(oldcxt);
}

dsa_area *
shmem_dsa(void)
{
	shmem_attach();
	return attached_dsa;
}

PeekSlot *
shmem_my_peek_slot(void)
{
	Assert(MyBackendId >= 1 && MyBackendId <= peek_shared->nslots);
	return &peek_shared->slots[MyBackendId - 1];
}

/* ---- queues ---- */

void
shmem_queue_reset(PeekQueue *queue)
{
	SpinLockAcquire(&queue->mutex);
	queue->head = 0;
	queue->count = 0;
	queue->overflowed = false;
	SpinLockRelease(&queue->mutex);
}

bool
shmem_queue_push(PeekQueue *queue, const void *item)
{
	bool		pushed = false;

	SpinLockAcquire(&queue->mutex);
	if (queue->count < queue->capacity)
	{
		int			pos = (queue->head + queue->count) % queue->capacity;

		memcpy(queue->items + pos * queue->item_size, item, queue->item_size);
		queue->count++;
		pushed = true;
	}
	else
		queue->overflowed = true;
	SpinLockRelease(&queue->mutex);
	return pushed;
}

/*
 * Take up to max_items items off the queue; *overflowed reports (and clears)
 * an overflow since the last drain.
 */
int
shmem_queue_drain(PeekQueue *queue, void *items, int max_items, bool *overflowed)
{
	int			n = 0;

	SpinLockAcquire(&queue->mutex);
	while (n < max_items && queue->count > 0)
	{
		memcpy((char *) items + n * queue->item_size,
			   queue->items + queue->head * queue->item_size, queue->item_size);
		queue->head = (queue->head + 1) % queue->capacity;
		queue->count--;
		n++;
	}
	*overflowed = queue->overflowed;
	queue->overflowed = false;
	SpinLockRelease(&queue->mutex);
	return n;
}

/* ---- runtime liveness and wake-up ---- */

void
shmem_wake_runtime(int runtime)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	PGPROC	   *proc;

	SpinLockAcquire(&rt->mutex);
	proc = rt->pid != 0 ? rt->proc : NULL;
	SpinLockRelease(&rt->mutex);
	if (proc != NULL)
		SetLatch(&proc->procLatch);
}

/* Is the runtime running?  Reports its current generation either way. */
bool
shmem_runtime_alive(int runtime, uint64 *generation)
{
	RuntimeSlot *rt = &peek_shared->runtimes[runtime];
	bool		alive;

	SpinLockAcquire(&rt->mutex);
	alive = rt->pid != 0;
	*generation = rt->generation;
	SpinLockRelease(&rt->mutex);
	return alive;
}
