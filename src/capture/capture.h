/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Sources: collections fed from a table's committed changes through
 *	  logical decoding, inside the maintenance runtime.
 *
 *	  Each source owns a logical replication slot (plugin "pg_peek", see
 *	  decoder.c).  The slot is created and the table's existing rows loaded
 *	  in one transaction, with the snapshot the slot's creation exports, at
 *	  the time just before the slot's first decodable commit.  That is done
 *	  by a loader, a dynamic background worker per source being loaded
 *	  (creating a slot waits for every running transaction with an xid, so
 *	  the maintenance loop must not); the maintenance runtime starts it,
 *	  learns that it stopped, re-reads the source's row and either decodes
 *	  from the loaded position, or starts another loader.  From then on
 *	  every round decodes the WAL written so far (see write_inserted_wal),
 *	  appends the updates to the shard at their commit LSNs and records the
 *	  decoded position as the source's upper, in one transaction, and keeps
 *	  the updates for the indexes over the source to arrange (capture_feed)
 *	  until the maintenance round is over; only once that commit is flushed
 *	  is the slot told it may forget the WAL (the commit itself does not
 *	  wait).  A crash in between makes the slot replay
 *	  changes the shard already has, which the upper tells apart, so none is
 *	  lost or applied twice.  The upper also rises while the table is idle:
 *	  it is published (not written, which would make WAL to decode) up to
 *	  what has been decoded.
 *
 *	  A table that is dropped, altered to another row type, loses REPLICA
 *	  IDENTITY FULL or gets row-level security fails its source (durably,
 *	  with the reason); so does a slot that someone else dropped or
 *	  advanced, or any error while decoding for it: the slot is dropped, the
 *	  runtime carries on with the other sources.  A slot already missing
 *	  when the runtime takes a loaded source on (a promotion: slots are not
 *	  replicated; a restore) is not a failure: the source is loaded again
 *	  and compacted to the new load, as its history in between is lost.
 *
 *	  The files: streams.c (sources, slots, table checks), loader.c (the
 *	  initial load), rounds.c (decoding rounds), outside_rounds.c (what is
 *	  called outside a round), decoder.c (the output plugin),
 *	  historic_caches.c (the catalog caches around a round's decoding);
 *	  capture_internal.h is what they share.
 *
 *	  Backends use only the strict serializable read time and the nudge.
 *	  Must not publish (runtime/maintenance.c does, after a round) nor arrange
 *	  (arrange/spine.c does, from the updates a round kept).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CAPTURE_H
#define PEEK_CAPTURE_H

#include "nodes/pg_list.h"

#include "arrange/spine.h"
#include "common/ids.h"
#include "storage/catalog.h"

/* the loader worker */
extern PGDLLEXPORT void capture_loader_main(Datum arg);

/* maintenance runtime */
extern void capture_reset(void);
extern int64 capture_adopt(CatalogObject *source);
extern void capture_forget(PeekObjectId id);
extern void capture_drop_orphan_slots(List *live_sources);
extern List *capture_step(void);
extern bool capture_feed(PeekObjectId source, SpineFeed *feed);
extern void capture_release_rounds(void);
extern long capture_wait_ms(void);
extern void capture_skip_own_writes(void);

/* backends */
extern void capture_check_requirements(const char *source);
extern int64 capture_strict_time(void);
extern void capture_nudge(PeekObjectId source, int64 time);

#endif							/* PEEK_CAPTURE_H */
