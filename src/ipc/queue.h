/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  Bounded rings of fixed-size items in shared memory (queue.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_IPC_QUEUE_H
#define PEEK_IPC_QUEUE_H

#include "storage/spin.h"

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

extern Size queue_size(int capacity, Size item_size);
extern PeekQueue *queue_init(char **cursor, int capacity, Size item_size);
extern bool queue_push(PeekQueue *queue, const void *item);
extern int	queue_drain(PeekQueue *queue, void *items, int max_items, bool *overflowed);
extern void queue_reset(PeekQueue *queue);

#endif							/* PEEK_IPC_QUEUE_H */
