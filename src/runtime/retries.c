/*-------------------------------------------------------------------------
 *
 * retries.c
 *	  When the maintenance runtime retries an object's work that met a
 *	  transient error (a lock not had within the runtime's 100 ms bound, a
 *	  serialization failure, temp_file_limit, a full disk) or a cancel.
 *	  A publication (a collection's, a source's or a view's catalog row
 *	  adopted, an index hydrated or following its collection) is put off,
 *	  per object: its row is not read again, nor its notices acted on, until
 *	  a wait has passed that doubles from RETRY_FIRST_MS to RETRY_LAST_MS
 *	  while it keeps failing (common/backoff.c), and is forgotten once its
 *	  work ends without error; the runtime sleeps until the first is due
 *	  (retries_wait_ms).  A view's round keeps its own back-off, armed by
 *	  the round itself (dataflow_round).  Either way the failure is logged
 *	  when its wait grew (error_log_retried), not at every try.  Other work
 *	  (a compaction, a fold, a pruning, a learning step) is retried at its
 *	  own pace (maintenance.c, folds.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "dataflow/dataflow.h"
#include "runtime/retries.h"

/* An object whose publication met a transient error: read again when due. */
typedef struct PutOff
{
	PeekObjectId id;
	Backoff		backoff;
} PutOff;

static HTAB *put_off = NULL;

/* Reconciliation: every object is read again now. */
void
retries_reset(void)
{
	if (put_off != NULL)
		hash_destroy(put_off);
	put_off = id_table_create("pg_peek put-off publications", sizeof(PutOff));
}

/* A RetryFn for a publication: put off once more, or no longer. */
Backoff *
retries_publication(PeekObjectId id, bool failed)
{
	PutOff	   *p;
	bool		found;

	if (!failed)
	{
		retries_forget(id);
		return NULL;
	}
	p = hash_search(put_off, &id, HASH_ENTER, &found);
	if (!found)
		backoff_init(&p->backoff, RETRY_FIRST_MS, RETRY_LAST_MS);
	backoff_failed(&p->backoff, GetCurrentTimestamp());
	return &p->backoff;
}

/*
 * A RetryFn for a view's round: its back-off, which the round armed before
 * it ran and clears when it ends (dataflow_round).
 */
Backoff *
retries_round(PeekObjectId id, bool failed)
{
	DataflowView *view = failed ? dataflow_view(id) : NULL;

	return view != NULL ? &view->retry : NULL;
}

/* Whether an object's publication is put off, not due yet. */
bool
retries_put_off(PeekObjectId id)
{
	PutOff	   *p = hash_search(put_off, &id, HASH_FIND, NULL);

	return p != NULL && !backoff_due(&p->backoff, GetCurrentTimestamp());
}

/* Enter the put-off objects that are due into changed: read them again. */
void
retries_due(HTAB *changed)
{
	HASH_SEQ_STATUS status;
	PutOff	   *p;
	TimestampTz now = GetCurrentTimestamp();

	hash_seq_init(&status, put_off);
	while ((p = hash_seq_search(&status)) != NULL)
		if (backoff_due(&p->backoff, now))
			hash_search(changed, &p->id, HASH_ENTER, NULL);
}

/* A dropped or failed object, or one published: nothing to retry. */
void
retries_forget(PeekObjectId id)
{
	hash_search(put_off, &id, HASH_REMOVE, NULL);
}

/*
 * How long until the first put-off publication is due (-1: none is put
 * off till later), for the runtime to wake then.
 */
long
retries_wait_ms(void)
{
	return backoff_table_wait_ms(put_off, offsetof(PutOff, backoff));
}
