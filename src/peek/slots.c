/*-------------------------------------------------------------------------
 *
 * slots.c
 *	  The peek slots: one per backend in shared memory (indexed by
 *	  BackendId - 1), where a peek's request, its hold and its answer meet
 *	  between the backend and the runtime that serves it.  Lays them out
 *	  and finds them; the protocol over them is gate.c's,
 *	  backend.c's and serve.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "peek/slots.h"

static PeekSlot *peek_slots = NULL;
static int	npeek_slots = 0;

Size
peek_slots_shmem_size(void)
{
	return MAXALIGN(mul_size(MaxBackends, sizeof(PeekSlot)));
}

/* Lay out the slots, once (the caller holds AddinShmemInitLock). */
void
peek_slots_shmem_init(void)
{
	bool		found;

	peek_slots = ShmemInitStruct(PEEK_EXTENSION " peek slots", peek_slots_shmem_size(), &found);
	npeek_slots = MaxBackends;
	if (found)
		return;
	memset(peek_slots, 0, sizeof(PeekSlot) * MaxBackends);
	for (int i = 0; i < MaxBackends; i++)
	{
		PeekSlot   *slot = &peek_slots[i];

		SpinLockInit(&slot->mutex);
		for (int r = 0; r < PEEK_MAX_RUNTIMES; r++)
		{
			pg_atomic_init_u64(&slot->fast_peeks[r], 0);
			for (int k = 0; k < PEEK_DURATION_KINDS; k++)
				for (int b = 0; b < PEEK_DURATION_BUCKETS; b++)
					pg_atomic_init_u64(&slot->durations[r][k][b], 0);
		}
	}
}

int
peek_slot_count(void)
{
	return npeek_slots;
}

PeekSlot *
peek_slot(int i)
{
	Assert(i >= 0 && i < npeek_slots);
	return &peek_slots[i];
}

int
peek_slot_index(const PeekSlot *slot)
{
	return slot - peek_slots;
}

PeekSlot *
peek_my_slot(void)
{
	Assert(MyBackendId >= 1 && MyBackendId <= npeek_slots);
	return &peek_slots[MyBackendId - 1];
}

/*
 * The lowest time any in-flight peek holds on this object, or INT64_MAX.
 * Called under the object's registry entry lock (registry_advance_since),
 * under which the gate sets holds, so none is missed.
 */
int64
peek_slots_min_hold(PeekObjectId id)
{
	int64		min_hold = PG_INT64_MAX;

	for (int i = 0; i < npeek_slots; i++)
	{
		PeekSlot   *slot = &peek_slots[i];

		SpinLockAcquire(&slot->mutex);
		if (slot->hold_object == id)
			min_hold = Min(min_hold, slot->hold_time);
		SpinLockRelease(&slot->mutex);
	}
	return min_hold;
}

/* Whether a backend's peek of an object waits for a runtime's answer. */
bool
peek_slots_waiting_on(PeekObjectId id)
{
	bool		waiting = false;

	for (int i = 0; i < npeek_slots && !waiting; i++)
	{
		PeekSlot   *slot = &peek_slots[i];

		SpinLockAcquire(&slot->mutex);
		waiting = slot->object == id &&
			(slot->state == PEEK_SUBMITTED || slot->state == PEEK_PARKED);
		SpinLockRelease(&slot->mutex);
	}
	return waiting;
}

/* The peeks the backends gated themselves for a runtime, over all slots. */
uint64
peek_slots_fast_peeks(int runtime)
{
	uint64		sum = 0;

	for (int i = 0; i < npeek_slots; i++)
		sum += pg_atomic_read_u64(&peek_slots[i].fast_peeks[runtime]);
	return sum;
}

/* The peeks of a kind served for a runtime in a duration bucket, over all slots. */
uint64
peek_slots_durations(int runtime, int kind, int bucket)
{
	uint64		sum = 0;

	for (int i = 0; i < npeek_slots; i++)
		sum += pg_atomic_read_u64(&peek_slots[i].durations[runtime][kind][bucket]);
	return sum;
}
