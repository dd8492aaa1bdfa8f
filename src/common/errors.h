/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  What the runtimes do with an error they isolate (errors.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_COMMON_ERRORS_H
#define PEEK_COMMON_ERRORS_H

#include "utils/elog.h"

#include "common/backoff.h"
#include "common/ids.h"

extern bool error_is_transient(int sqlerrcode);
extern void error_log_isolated(const ErrorData *edata, const char *what);
extern void error_log_retried(const ErrorData *edata, PeekObjectId id, Backoff *retry);

#endif							/* PEEK_COMMON_ERRORS_H */
