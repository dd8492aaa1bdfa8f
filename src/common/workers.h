/*-------------------------------------------------------------------------
 *
 * workers.h
 *	  Short-lived dynamic background workers of this library, and the
 *	  settings all its workers pin (workers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_COMMON_WORKERS_H
#define PEEK_COMMON_WORKERS_H

#include "postmaster/bgworker.h"

extern BackgroundWorkerHandle *worker_start(const char *function, const char *name,
											const char *type, const void *extra,
											Size extra_len, MemoryContext cxt);
extern void worker_pin_settings(void);

#endif							/* PEEK_COMMON_WORKERS_H */
