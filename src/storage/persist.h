/*-------------------------------------------------------------------------
 *
 * persist.h
 *	  Persist shards: the durable history of a collection in an ordinary
 *	  table of the extension, (time, diff, data): a consolidated base at
 *	  the durable since and the recent updates after it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PERSIST_H
#define PEEK_PERSIST_H

#include "common/ids.h"

#include "utils/array.h"
#include "utils/snapshot.h"

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
extern void persist_scan_range(Oid shard, int64 lower, int64 upper,
							   void (*fn) (int64 time, int64 diff, Datum row, void *arg),
							   void *arg);

#endif							/* PEEK_PERSIST_H */
