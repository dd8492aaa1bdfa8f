/*-------------------------------------------------------------------------
 *
 * persist.h
 *	  Persist shards: each collection's updates live in
 *	  an ordinary table peek.shard_<n> (time bigint, diff bigint, data <row>),
 *	  so they are WAL-logged, transactional and crash-safe.  Appends go
 *	  through the table AM in the caller's transaction, in multi-inserts
 *	  that are all in by the writer's close, each row as its canonical
 *	  image (common/rows.c), so that a hydration can take rows as stored
 *	  (row_from_shard).  Every read is a table or index scan.
 *
 *	  The collection's *base* is its contents at one time, its base time
 *	  (peek.objects.base_time, at or after the durable since): one row per
 *	  distinct row with its count, stored at time BASE_TIME (-1, below every
 *	  time a write gets, so that writers never touch the base's indexes).
 *	  The updates after the base time are the *recent* ones; those between
 *	  the since and it stay as *history*, which the base counts already.
 *	  Three indexes serve the reads: on time (the updates), on
 *	  peek.row_hash(data) where time < 0 (a row's base rows) and on time
 *	  where diff <= 0 and time < 0 (the base rows that cannot be read alone:
 *	  negative counts, and a row whose count leaves bigint's range, kept in
 *	  parts with a zero row).  A walk at time t sums the updates between
 *	  the base time and t (the recent ones up to t added, or the history
 *	  after t taken out; past work_mem sorted by row and merged with the
 *	  base in its rows index's order), resolves the rows that may be
 *	  negative, then streams the base adjusting those rows and stops at
 *	  the limit: it reads what changed between the base and t, not the
 *	  history (a full walk's heap scan starts at the base's first row's
 *	  block, past the history a big write folded alone left before them).
 *	  A fold (persist_fold) moves the base on over the recent updates, keeping
 *	  them as history, and deletes the history the since passed, row by
 *	  row, in the runtime's transaction, without a lock a writer waits for,
 *	  and changes the catalog's base time and since in that transaction.
 *	  A shard depends on its row type; one dropped with it (DROP TYPE ...
 *	  CASCADE) is reported to the maintenance runtime, which fails the
 *	  collection.
 *
 *	  The files: shard_ddl.c (the table and its indexes), shard_write.c
 *	  (appends), shard_scan.c (the reading machinery and plain reads),
 *	  shard_sort.c (rows sorted by row, in temporary files past a budget),
 *	  shard_walk.c (a peek's walk), shard_compact.c (folds);
 *	  shard_internal.h is what they share.
 *
 *	  Must not decide readiness or holds: callers run under a peek's hold
 *	  (walk) or the maintenance runtime's since (folds).
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
extern void persist_writer_add_base(ShardWriter *w, Datum row, int64 count);
extern void persist_writer_close(ShardWriter *w);
extern void persist_retract_all(PeekObjectId id, Oid shard, int64 time);
extern void persist_drop_shard(Oid shard);
extern void persist_lock_tables_for_drop(Oid peek);
extern bool persist_lock_shard(Oid shard);
extern void persist_append(Oid shard, ArrayType *rows, int64 time, int64 diff);
extern PersistWalk *persist_walk_begin(PeekObjectId id, Oid shard, Oid row_type,
									   const char *collection, Snapshot snapshot,
									   int64 time, int64 limit);
extern int	persist_walk_next_rows(PersistWalk *w, Datum **rows, int64 **counts);
extern bool persist_walk_next(PersistWalk *w, Datum *row, int64 *count);
extern void persist_walk_end(PersistWalk *w);
extern int64 persist_fold(PeekObjectId id, Oid shard, int64 since, int64 target,
						  int64 max_rows, bool first_alone);
extern int64 persist_fold_rows(PeekObjectId id, Oid shard, int64 since, int64 limit,
							   int64 *durable_since);
extern int64 persist_sum_diffs(Oid shard, int64 upper);
extern int64 persist_estimate_rows(Oid shard);
extern int64 persist_times_end(Oid shard, int64 lower, int64 upper, int n);
extern void persist_scan_range(Oid shard, int64 lower, int64 upper,
							   void (*fn) (int64 time, int64 diff, Datum row, void *arg),
							   void *arg);
extern void persist_scan_at(Oid shard, int64 at, int64 upper,
							void (*fn) (int64 time, int64 diff, Datum row, void *arg),
							void *arg);

#endif							/* PEEK_PERSIST_H */
