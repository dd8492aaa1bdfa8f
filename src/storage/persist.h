/*-------------------------------------------------------------------------
 *
 * persist.h
 *	  Persist shards: each collection's updates live in
 *	  an ordinary table peek.shard_<n> (time bigint, diff bigint, data <row>),
 *	  so they are WAL-logged, transactional and crash-safe.  Appends go
 *	  straight through the table AM in the caller's transaction, each row
 *	  as its canonical image (common/rows.c), so that a hydration can take rows
 *	  as stored (row_from_shard).  Every read is a table or index scan.
 *
 *	  The collection's *base* is its history consolidated at the durable
 *	  since: one row per distinct row with its count, stored at time
 *	  BASE_TIME (-1, below every time a write gets, so that writers never
 *	  touch the base's indexes).  The rows after it are the *recent*
 *	  updates.  Three indexes serve the reads: on time (the recent rows), on
 *	  peek.row_hash(data) where time < 0 (a row's base rows) and on time
 *	  where diff <= 0 and time < 0 (the base rows that cannot be read alone:
 *	  negative counts, and a row whose count leaves bigint's range, kept in
 *	  parts with a zero row).  A
 *	  walk reads the recent rows up to its time, resolves the rows that may
 *	  be negative, then streams the base adjusting those rows and stops at
 *	  the limit.  Compaction folds the recent rows up to since into the base
 *	  row by row, in the runtime's transaction, without a lock a writer
 *	  waits for; the caller raises the durable since in that transaction.
 *	  A shard depends on its row type; one dropped with it (DROP TYPE ...
 *	  CASCADE) is reported to the maintenance runtime, which fails the
 *	  collection.
 *
 *	  The files: shard_ddl.c (the table and its indexes), shard_write.c
 *	  (appends), shard_scan.c (the reading machinery and plain reads),
 *	  shard_walk.c (a peek's walk), shard_compact.c (folding);
 *	  shard_internal.h is what they share.
 *
 *	  Must not decide readiness or holds: callers run under a peek's hold
 *	  (walk) or the maintenance runtime's since (compaction).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PERSIST_H
#define PEEK_PERSIST_H

#include "utils/array.h"
#include "utils/snapshot.h"

#include "common/ids.h"

typedef struct ShardWriter ShardWriter;
typedef struct PersistWalk PersistWalk;

extern void persist_init(void);

extern Oid	persist_create_shard(int32 seq, Oid row_type);
extern void persist_claim_shard(Oid shard, Oid row_type);
extern void persist_check_shard(Oid shard, Oid row_type);
extern Oid	persist_create_source_type(int32 seq, Oid table_rowtype);
extern void persist_drop_source_type(Oid row_type);
extern ShardWriter *persist_writer_open(Oid shard);
extern void persist_writer_add(ShardWriter *w, int64 time, int64 diff, Datum row);
extern void persist_writer_close(ShardWriter *w);
extern void persist_retract_all(Oid shard, int64 time);
extern void persist_drop_shard(Oid shard);
extern bool persist_lock_shard(Oid shard);
extern void persist_append(Oid shard, ArrayType *rows, int64 time, int64 diff);
extern PersistWalk *persist_walk_begin(PeekObjectId id, Oid shard, Oid row_type,
									   const char *collection, Snapshot snapshot,
									   int64 time, int64 limit);
extern bool persist_walk_next(PersistWalk *w, Datum *row, int64 *count);
extern void persist_walk_end(PersistWalk *w);
extern int64 persist_compact(Oid shard, int64 durable_since, int64 since);
extern int64 persist_sum_diffs(Oid shard, int64 upper);
extern int64 persist_estimate_rows(Oid shard);
extern int64 persist_times_end(Oid shard, int64 lower, int64 upper, int n);
extern void persist_scan_range(Oid shard, int64 lower, int64 upper,
							   void (*fn) (int64 time, int64 diff, Datum row, void *arg),
							   void *arg);

#endif							/* PEEK_PERSIST_H */
