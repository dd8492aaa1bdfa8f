/*-------------------------------------------------------------------------
 *
 * historic_caches.c
 *	  The maintenance runtime's catalog caches around a decoding round.
 *
 *	  Each source's slot is decoded in this one process, each at its own
 *	  position in the WAL, and the runtime reads the current catalog
 *	  between rounds.  The reorder buffer builds relcache and catcache
 *	  entries under the historic snapshot of the transaction it replays and
 *	  keeps them: an entry built while one source replays a transaction from
 *	  before a catalog change -- whose invalidation this process took
 *	  already -- would serve another source's later transactions (a table's
 *	  REPLICA IDENTITY FULL, or its columns, as they were before) and the
 *	  runtime's own reads; one built for the current catalog would serve a
 *	  replay of the past.  PostgreSQL's SQL decoding functions invalidate
 *	  every cache before and after decoding; a walsender decodes nothing
 *	  else.  Here that is done only when a catalog change may lie between
 *	  the times the entries serve: when this process has learned of one (an
 *	  invalidation taken, or replayed by a decoding) at or after the oldest
 *	  time the round may replay at.  Without DDL, no round pays for it.
 *
 *	  Owns nothing but that mark; must not decode (rounds.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "storage/sinval.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "capture/capture_internal.h"

/*
 * The insert position of the WAL when this process last learned of a
 * catalog change: every change it knows of committed before it.
 */
static XLogRecPtr catalog_changed_before = InvalidXLogRecPtr;

/* The oldest time the round now decoding may replay at, or invalid. */
static XLogRecPtr round_replays_from = InvalidXLogRecPtr;

/* Our own InvalidateSystemCaches is no catalog change. */
static bool invalidating = false;

static void
note_catalog_change(void)
{
	if (!invalidating)
		catalog_changed_before = GetXLogInsertRecPtr();
}

static void
relcache_changed(Datum arg, Oid relid)
{
	note_catalog_change();
}

static void
type_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	note_catalog_change();
}

/*
 * Take the invalidations committed so far, then drop every cache if a
 * change learned lies at or after from.  In a transaction of its own if
 * none is open: relcache entries in use are rebuilt only inside one.
 */
static void
invalidate_if_changed_since(XLogRecPtr from)
{
	bool		own = !IsTransactionState();

	if (own)
		StartTransactionCommand();
	AcceptInvalidationMessages();
	if (catalog_changed_before > from)
	{
		invalidating = true;
		InvalidateSystemCaches();
		invalidating = false;
	}
	if (own)
		CommitTransactionCommand();
}

/*
 * Before a round decodes a source's slot: from is the oldest time it may
 * replay at (where its reader goes on, or the first change of a
 * transaction the reorder buffer holds, whichever is older).
 */
void
historic_caches_enter(XLogRecPtr from)
{
	static bool registered = false;

	if (!registered)
	{
		/* a relation's columns and replica identity; a row type's */
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, type_changed, (Datum) 0);
		registered = true;
		/* what the process built before has no known time */
		catalog_changed_before = GetXLogInsertRecPtr();
	}
	/* a round that never left (an error) left historic entries behind */
	historic_caches_leave();
	invalidate_if_changed_since(from);
	round_replays_from = from;
}

/*
 * After the round (or its error): the entries it built served times from
 * round_replays_from on; a change learned since then (taken before the
 * replay built them, or replayed by it) makes them stale for what follows.
 */
void
historic_caches_leave(void)
{
	if (XLogRecPtrIsInvalid(round_replays_from))
		return;
	invalidate_if_changed_since(round_replays_from);
	round_replays_from = InvalidXLogRecPtr;
}
