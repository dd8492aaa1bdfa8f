/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Sources: collections fed from a table's changes through logical
 *	  decoding, run by the maintenance runtime; each loaded first by a
 *	  loader worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CAPTURE_H
#define PEEK_CAPTURE_H

#include "common/ids.h"

#include "nodes/pg_list.h"

#include "storage/catalog.h"
#include "arrange/spine.h"

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
