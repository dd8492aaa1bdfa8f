/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Errors the runtimes isolate to one object (the maintenance round's
 *	  object work, a source's decoding round): which ones the next round
 *	  may not meet again, and how they are logged, with their SQLSTATE,
 *	  detail, hint and context, as the error itself would have been; one
 *	  retried after a back-off (backoff.c) only when its wait grew.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "common/errors.h"

/*
 * An error the next round may not meet again: a conflict that rolled the
 * work back, a lock that was not free in time, an object (a slot) in use
 * for a moment, temporary files past temp_file_limit or a disk full (a
 * fold's sort spills: the limit may be raised, the space freed).  The work
 * is retried rather than failed.
 */
bool
error_is_transient(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_TRANSACTION_ROLLBACK ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		sqlerrcode == ERRCODE_OBJECT_IN_USE ||
		sqlerrcode == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED ||
		sqlerrcode == ERRCODE_DISK_FULL;
}

/* Log an isolated error as "what: message", keeping all it said. */
void
error_log_isolated(const ErrorData *edata, const char *what)
{
	ereport(LOG,
			(errcode(edata->sqlerrcode),
			 errmsg("%s: %s", what, edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s", edata->hint) : 0,
			 edata->context ? errcontext("%s", edata->context) : 0));
}

/*
 * Log a transient error (or a cancel) after which an object's work is
 * retried.  With a back-off, only the first failure and each one whose
 * wait grew (backoff_tell), saying when it is retried: a cause that lasts
 * is told of a few times, not at every try.  Without one (work retried at
 * its own pace), every time.
 */
void
error_log_retried(const ErrorData *edata, PeekObjectId id, Backoff *retry)
{
	long		ms;

	if (retry == NULL)
	{
		error_log_isolated(edata, psprintf("pg_peek object " INT64_FORMAT " will be retried", id));
		return;
	}
	if (!backoff_tell(retry))
		return;
	ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), retry->due);
	if (retry->wait_ms < retry->last_ms)
		error_log_isolated(edata, psprintf("pg_peek object " INT64_FORMAT " will be retried in %ld ms",
										   id, ms));
	else
		error_log_isolated(edata, psprintf("pg_peek object " INT64_FORMAT " will be retried in %ld ms, then every %d ms while this lasts, not logged again",
										   id, ms, retry->last_ms));
}
