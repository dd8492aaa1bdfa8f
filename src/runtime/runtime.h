/*-------------------------------------------------------------------------
 *
 * runtime.h
 *	  The runtimes' background worker entry point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_H
#define PEEK_RUNTIME_H

#include "common/ids.h"

#include "ipc/shmem.h"

extern PGDLLEXPORT void runtime_main(Datum arg);

#endif							/* PEEK_RUNTIME_H */
