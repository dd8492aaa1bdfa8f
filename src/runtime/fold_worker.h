/*-------------------------------------------------------------------------
 *
 * fold_worker.h
 *	  A big fold done outside the maintenance runtime (fold_worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_FOLD_WORKER_H
#define PEEK_RUNTIME_FOLD_WORKER_H

#include "postmaster/bgworker.h"

#include "common/ids.h"

extern bool folds_kept(PeekObjectId id, Oid shard);
extern bool fold_worker_running(PeekObjectId id);
extern bool fold_worker_row_free(PeekObjectId id);
extern bool fold_worker_probe(PeekObjectId id, int64 *base_time);
extern BackgroundWorkerHandle *fold_worker_start(PeekObjectId id, Oid shard, int64 since,
												 int64 target, int64 max_rows,
												 bool first_alone);
extern PGDLLEXPORT void fold_worker_main(Datum arg);

#endif							/* PEEK_RUNTIME_FOLD_WORKER_H */
