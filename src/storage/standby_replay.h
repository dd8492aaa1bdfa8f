/*-------------------------------------------------------------------------
 *
 * standby_replay.h
 *	  Hot standbys: read-only runtimes that follow replay.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STANDBY_H
#define PEEK_STANDBY_H

#include "common/ids.h"

#include "nodes/pg_list.h"

/* how often a standby's maintenance runtime looks at the replay position */
#define STANDBY_POLL_MS		5L

/* runtimes */
extern bool standby_round_begin(void);
extern bool standby_active(void);
extern long standby_wait_ms(long timeout, bool maintains);
extern void standby_reset(void);
extern void standby_as_replayed(List *objects);
extern List *standby_replayed_changes(void);

/* capture, on a primary */
extern bool standby_streaming(void);

/* backends */
extern void standby_refuse_writes(const char *function);
extern void standby_check_shard_since(PeekObjectId collection, const char *name, int64 time);

#endif							/* PEEK_STANDBY_H */
