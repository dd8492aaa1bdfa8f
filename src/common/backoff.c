/*-------------------------------------------------------------------------
 *
 * backoff.c
 *	  A wait that doubles from a first to a last while an attempt keeps
 *	  failing (a source's loader, a view's round, an object's publication
 *	  that met a transient error), is cleared when one succeeds, and may be
 *	  put off by a fixed while besides (a held row, no free worker) without
 *	  changing the doubling.  Which failures to log: the first, and each
 *	  one whose wait grew (backoff_tell), so that a cause that lasts is
 *	  told of a few times, not at every try.  Holds no memory and takes the
 *	  time from the caller; what is retried is the caller's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "common/backoff.h"

/* No failure yet: due now, the first failure waits first_ms. */
void
backoff_init(Backoff *b, int first_ms, int last_ms)
{
	Assert(first_ms > 0 && last_ms >= first_ms);
	b->first_ms = first_ms;
	b->last_ms = last_ms;
	backoff_clear(b);
}

/* An attempt failed (or is armed to, before it runs): due after the next wait. */
void
backoff_failed(Backoff *b, TimestampTz now)
{
	b->wait_ms = b->wait_ms == 0 ? b->first_ms :
		(int) Min((int64) b->wait_ms * 2, b->last_ms);
	b->due = TimestampTzPlusMilliseconds(now, b->wait_ms);
}

/* Due ms from now, whatever the wait: the next failure doubles it as before. */
void
backoff_put_off(Backoff *b, int ms, TimestampTz now)
{
	b->due = TimestampTzPlusMilliseconds(now, ms);
}

bool
backoff_due(const Backoff *b, TimestampTz now)
{
	return b->due <= now;
}

/*
 * How long until the first of the back-offs of a hash table's entries (each
 * at offset in its entry) is due, rounded up (a caller that sleeps that long
 * finds it due), or -1 if none is due later: for a sleep until then.  One
 * due now does not count (the caller's next turn takes it, whenever it
 * comes).
 */
long
backoff_table_wait_ms(HTAB *table, Size offset)
{
	HASH_SEQ_STATUS status;
	char	   *entry;
	TimestampTz now = GetCurrentTimestamp();
	long		wait_ms = -1;

	if (table == NULL)
		return -1;
	hash_seq_init(&status, table);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		const Backoff *b = (const Backoff *) (entry + offset);
		long		ms;

		if (b->due <= now)
			continue;
		ms = TimestampDifferenceMilliseconds(now, b->due) + 1;
		wait_ms = wait_ms < 0 ? ms : Min(wait_ms, ms);
	}
	return wait_ms;
}

/*
 * Whether a failure is worth a log line: the first since the wait was
 * cleared, or one whose wait grew since the last told of; not one at the
 * longest wait again.
 */
bool
backoff_tell(Backoff *b)
{
	if (b->wait_ms <= b->told_ms)
		return false;
	b->told_ms = b->wait_ms;
	return true;
}

/* The attempt succeeded: due now, and the next failure waits first_ms. */
void
backoff_clear(Backoff *b)
{
	b->wait_ms = 0;
	b->told_ms = 0;
	b->due = 0;
}
