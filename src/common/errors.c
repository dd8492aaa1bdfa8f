/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Errors the runtimes isolate to one object (the maintenance round's
 *	  object work, a source's decoding round): which ones the next round
 *	  may not meet again, and how they are logged, with their SQLSTATE,
 *	  detail, hint and context, as the error itself would have been.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
