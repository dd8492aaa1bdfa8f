/*-------------------------------------------------------------------------
 *
 * retries.h
 *	  When an object's work that met a transient error is retried
 *	  (retries.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_RETRIES_H
#define PEEK_RUNTIME_RETRIES_H

#include "common/backoff.h"
#include "common/ids.h"
#include "utils/hsearch.h"

/*
 * An object's publication that meets a transient error (or a cancel) is
 * read again after a wait that doubles from the first to the last while it
 * keeps failing, as a view's round is retried (DATAFLOW_RETRY_FIRST_MS).
 */
#define RETRY_FIRST_MS	100
#define RETRY_LAST_MS	10000

/*
 * Told that an object's work ended without error (failed false: returns
 * NULL), or met a transient error: returns the back-off it waits by.
 */
typedef Backoff *(*RetryFn) (PeekObjectId id, bool failed);

extern void retries_reset(void);
extern Backoff *retries_publication(PeekObjectId id, bool failed);
extern Backoff *retries_round(PeekObjectId id, bool failed);
extern bool retries_put_off(PeekObjectId id);
extern void retries_due(HTAB *changed);
extern void retries_forget(PeekObjectId id);
extern long retries_wait_ms(void);

#endif							/* PEEK_RUNTIME_RETRIES_H */
