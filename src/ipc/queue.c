/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  Bounded rings of fixed-size items in shared memory, each under its
 *	  spinlock: a runtime's inbox, dirty list and commands
 *	  (runtime_slots.c lays them out).  Knows nothing of what the items
 *	  mean.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/queue.h"

/* The shared memory a queue of capacity items of item_size takes. */
Size
queue_size(int capacity, Size item_size)
{
	return MAXALIGN(add_size(offsetof(PeekQueue, items), mul_size(capacity, item_size)));
}

/* A queue laid out at *cursor, which is moved past it. */
PeekQueue *
queue_init(char **cursor, int capacity, Size item_size)
{
	PeekQueue  *queue = (PeekQueue *) *cursor;

	*cursor += queue_size(capacity, item_size);
	SpinLockInit(&queue->mutex);
	queue->capacity = capacity;
	queue->item_size = item_size;
	queue_reset(queue);
	return queue;
}

void
queue_reset(PeekQueue *queue)
{
	SpinLockAcquire(&queue->mutex);
	queue->head = 0;
	queue->count = 0;
	queue->overflowed = false;
	SpinLockRelease(&queue->mutex);
}

/* Add an item; false (and the overflow remembered) when the queue is full. */
bool
queue_push(PeekQueue *queue, const void *item)
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
queue_drain(PeekQueue *queue, void *items, int max_items, bool *overflowed)
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
