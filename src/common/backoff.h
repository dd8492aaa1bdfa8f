/*-------------------------------------------------------------------------
 *
 * backoff.h
 *	  A wait that doubles from a first to a last while an attempt keeps
 *	  failing, and is cleared when one succeeds (backoff.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_COMMON_BACKOFF_H
#define PEEK_COMMON_BACKOFF_H

#include "datatype/timestamp.h"
#include "utils/hsearch.h"

typedef struct Backoff
{
	int			first_ms;		/* the wait after the first failure */
	int			last_ms;		/* the longest wait */
	int			wait_ms;		/* the wait after the last failure, 0: none
								 * since cleared */
	int			told_ms;		/* the wait last told of (backoff_tell) */
	TimestampTz due;			/* not before then (0: due now) */
} Backoff;

extern void backoff_init(Backoff *b, int first_ms, int last_ms);
extern void backoff_failed(Backoff *b, TimestampTz now);
extern void backoff_put_off(Backoff *b, int ms, TimestampTz now);
extern bool backoff_due(const Backoff *b, TimestampTz now);
extern long backoff_table_wait_ms(HTAB *table, Size offset);
extern bool backoff_tell(Backoff *b);
extern void backoff_clear(Backoff *b);

#endif							/* PEEK_COMMON_BACKOFF_H */
