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
 *	  else.  Here only the invalidations this process learned (taken, or
 *	  replayed by a decoding) at or after the oldest time the round may
 *	  replay at are executed again around it: they drop exactly the entries
 *	  those changes made stale, whichever time they were built for.  Every
 *	  cache is dropped only when such a change named no relation or type
 *	  (a reset), or is no longer remembered.  Without DDL, no round pays
 *	  for it; a temporary table made per transaction, or one long
 *	  transaction holding the oldest time back, costs an entry or two per
 *	  round, not every cache and cached plan of the runtime.
 *
 *	  Owns nothing but the changes learned; must not decode (rounds.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/sinval.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "capture/capture_internal.h"

/* What a change's invalidation names: a relation, or a pg_type row's hash. */
typedef struct LearnedKey
{
	uint32		key;
	uint32		type;			/* bool, as a word: hashed as bytes */
} LearnedKey;

/*
 * A change learned, and the insert position of the WAL when it was (it
 * committed before).  A name learned again (every decoding replays what
 * the others replay) keeps only its newest time: the older one goes dead.
 */
typedef struct LearnedChange
{
	LearnedKey	k;
	XLogRecPtr	at;
	bool		live;
} LearnedChange;

/* A name's newest change: its place in learned. */
typedef struct LearnedPlace
{
	LearnedKey	k;
	int			index;
} LearnedPlace;

/*
 * The changes learned, oldest first.  When it is full the dead go, then
 * the oldest live ones down to half.  More than AGAIN_MAX names (or
 * SCAN_MAX changes) since a round's time cost more executed again than
 * every cache dropped: each runs the callbacks.
 */
#define LEARNED_MAX 8192
#define AGAIN_MAX	128
#define SCAN_MAX	2048
static LearnedChange *learned = NULL;
static int	nlearned = 0;
static HTAB *learned_places = NULL;

/* The newest time of a reset or of a change forgotten: every cache goes. */
static XLogRecPtr everything_changed_before = InvalidXLogRecPtr;

/* The oldest time the round now decoding may replay at, or invalid. */
static XLogRecPtr round_replays_from = InvalidXLogRecPtr;

/*
 * The invalidation this process executes again, which is no change of its
 * own (one another backend sent meanwhile, taken while an entry in use is
 * rebuilt, is): everything, a name, or none.
 */
static enum
{
	AGAIN_NONE, AGAIN_ALL, AGAIN_NAME
}			again = AGAIN_NONE;
static LearnedKey again_key;

/* Keep the live changes, the oldest dropped until at most half are left. */
static void
forget_oldest(void)
{
	int			live = 0;
	int			kept = 0;

	for (int i = 0; i < nlearned; i++)
		live += learned[i].live;
	for (int i = 0; i < nlearned; i++)
	{
		LearnedChange *c = &learned[i];

		if (!c->live)
			continue;
		if (live > LEARNED_MAX / 2)
		{
			/* a reset since may be newer: its names are lost */
			everything_changed_before = Max(everything_changed_before, c->at);
			hash_search(learned_places, &c->k, HASH_REMOVE, NULL);
			live--;
			continue;
		}
		learned[kept] = *c;
		((LearnedPlace *) hash_search(learned_places, &c->k, HASH_FIND, NULL))->index = kept;
		kept++;
	}
	nlearned = kept;
}

static void
note_catalog_change(bool type, uint32 key, bool everything)
{
	LearnedKey	k;
	LearnedPlace *place;
	bool		found;

	k.key = key;
	k.type = type;
	if (again == AGAIN_ALL && everything)
		return;
	if (again == AGAIN_NAME && memcmp(&k, &again_key, sizeof(LearnedKey)) == 0)
		return;
	if (everything)
	{
		everything_changed_before = GetXLogInsertRecPtr();
		return;
	}
	place = hash_search(learned_places, &k, HASH_ENTER, &found);
	if (found)
		learned[place->index].live = false;
	if (nlearned == LEARNED_MAX)
		forget_oldest();
	place->index = nlearned;
	learned[nlearned].k = k;
	learned[nlearned].at = GetXLogInsertRecPtr();
	learned[nlearned].live = true;
	nlearned++;
}

/* Bumped at each relcache invalidation this process executes (rounds.c). */
uint64		capture_relcache_generation = 0;

static void
relcache_changed(Datum arg, Oid relid)
{
	capture_relcache_generation++;
	note_catalog_change(false, relid, !OidIsValid(relid));
}

static void
type_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	note_catalog_change(true, hashvalue, hashvalue == 0);
}

/* Execute a change's invalidation again, in this process only. */
static void
invalidate_again(LearnedKey *k)
{
	SharedInvalidationMessage msg;

	again = AGAIN_NAME;
	again_key = *k;
	if (k->type)
	{
		msg.cc.id = TYPEOID;
		msg.cc.dbId = MyDatabaseId;
		msg.cc.hashValue = k->key;
		LocalExecuteInvalidationMessage(&msg);
	}
	else
	{
		msg.rc.id = SHAREDINVALRELCACHE_ID;
		msg.rc.dbId = MyDatabaseId;
		msg.rc.relId = k->key;
		LocalExecuteInvalidationMessage(&msg);
		/* its pg_class row, which the decoder looks up (a relcache change is one) */
		msg.cc.id = RELOID;
		msg.cc.dbId = MyDatabaseId;
		msg.cc.hashValue = GetSysCacheHashValue1(RELOID, ObjectIdGetDatum(k->key));
		LocalExecuteInvalidationMessage(&msg);
	}
	again = AGAIN_NONE;
}

/*
 * Take the invalidations committed so far, then drop what a change learned
 * at or after from made stale.  In a transaction of its own if none is
 * open: relcache entries in use are rebuilt only inside one.
 */
static void
invalidate_if_changed_since(XLogRecPtr from)
{
	bool		own = !IsTransactionState();
	LearnedKey *names = NULL;
	int			n = 0;
	int			i;

	if (own)
		StartTransactionCommand();
	/* one an error interrupted */
	again = AGAIN_NONE;
	AcceptInvalidationMessages();
	/* a copy: a change learned meanwhile (an entry rebuilt took it) moves them */
	for (i = nlearned - 1; i >= 0 && nlearned - i <= SCAN_MAX && n <= AGAIN_MAX &&
		 learned[i].at > from; i--)
		if (learned[i].live)
		{
			if (names == NULL)
				names = palloc(sizeof(LearnedKey) * (AGAIN_MAX + 1));
			names[n++] = learned[i].k;
		}
	if (everything_changed_before > from ||
		(i >= 0 && learned[i].at > from))
	{
		again = AGAIN_ALL;
		InvalidateSystemCaches();
		again = AGAIN_NONE;
	}
	else
		for (int j = 0; j < n; j++)
			invalidate_again(&names[j]);
	if (names != NULL)
		pfree(names);
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
	HASHCTL		ctl;

	if (!registered)
	{
		/* a relation's columns and replica identity; a row type's */
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, type_changed, (Datum) 0);
		learned = MemoryContextAlloc(TopMemoryContext, sizeof(LearnedChange) * LEARNED_MAX);
		ctl.keysize = sizeof(LearnedKey);
		ctl.entrysize = sizeof(LearnedPlace);
		learned_places = hash_create("pg_peek catalog changes learned", LEARNED_MAX, &ctl,
									 HASH_ELEM | HASH_BLOBS);
		registered = true;
		/* what the process built before has no known time */
		note_catalog_change(false, InvalidOid, true);
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
