/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  Notices sent to the runtimes when the transaction commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_NOTIFY_H
#define PEEK_NOTIFY_H

#include "common/ids.h"

extern void notify_init(void);
extern void notify_catalog_changed(PeekObjectId id);
extern void notify_created(PeekObjectId id);
extern void notify_written(PeekObjectId id, int64 upper);
extern int64 notify_sealed_here(PeekObjectId id);
extern bool notify_wrote_any(void);
extern bool notify_created_here(PeekObjectId id);
extern void notify_standing_hold(PeekObjectId id, int64 since);
extern void notify_dropped(PeekObjectId id);
extern void notify_session_upper(PeekObjectId id, int64 upper);
extern int64 notify_last_session_upper(PeekObjectId collection);

#endif							/* PEEK_NOTIFY_H */
