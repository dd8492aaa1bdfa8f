/*-------------------------------------------------------------------------
 *
 * runtime.h
 *	  The runtimes' background worker entry point and the maintenance
 *	  duties it runs for the maintenance (or solo) role.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_H
#define PEEK_RUNTIME_H

#include "pg_peek.h"

#include "shmem.h"

extern PGDLLEXPORT void peek_runtime_main(Datum arg);

/* maintenance.c */
extern void maintenance_reset(void);
extern void maintenance_note_command(PeekCommand *cmd);
extern void maintenance_step(void);

/* run fn inside a transaction with a snapshot (for catalog work) */
extern void run_in_transaction(void (*fn) (void *arg), void *arg);

#endif							/* PEEK_RUNTIME_H */
