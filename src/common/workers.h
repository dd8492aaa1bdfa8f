/*-------------------------------------------------------------------------
 *
 * workers.h
 *	  Short-lived dynamic background workers of this library (workers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_COMMON_WORKERS_H
#define PEEK_COMMON_WORKERS_H

#include "postmaster/bgworker.h"

extern BackgroundWorkerHandle *worker_start(const char *function, const char *name,
											const char *type, const void *extra,
											Size extra_len, MemoryContext cxt);

#endif							/* PEEK_COMMON_WORKERS_H */
