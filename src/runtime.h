/*-------------------------------------------------------------------------
 *
 * runtime.h
 *	  The runtimes' background worker entry point.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_H
#define PEEK_RUNTIME_H

#include "pg_peek.h"

#include "shmem.h"

extern PGDLLEXPORT void runtime_main(Datum arg);

#endif							/* PEEK_RUNTIME_H */
