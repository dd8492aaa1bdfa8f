/*-------------------------------------------------------------------------
 *
 * catalog_locks.c
 *	  The locks a runtime's transaction takes in the durable catalog: the
 *	  extension's (against a concurrent DROP EXTENSION) and objects' rows in
 *	  peek.objects, whose modes give the serialization rules: writers of
 *	  one collection take FOR NO KEY UPDATE (times follow commit order), a
 *	  drop FOR UPDATE, a fold FOR KEY SHARE; compaction skips a row a writer
 *	  holds instead of waiting behind it.  The rows are locked as SELECT
 *	  ... FOR NO KEY UPDATE locks them, through the primary key and
 *	  table_tuple_lock, not by a query: the query's executor was 9% of the
 *	  maintenance runtime's CPU under single-row writes, a lock or two a
 *	  round.  Also how long a runtime waits for a user's lock.
 *
 *	  Must not touch shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "storage/catalog_internal.h"
#include "storage/catalog_locks.h"


/*
 * Lock the object's row in the mode, as SELECT ... FOR <mode> [SKIP
 * LOCKED] WHERE id = id does in the transaction's isolation: the row the
 * statement's snapshot sees, or in READ COMMITTED its latest version if
 * it changed meanwhile, as long as it still has the id; a row deleted or
 * (under REPEATABLE READ) changed since is a serialization failure, as
 * for the statement.  The table's RowShareLock is held to the end of the
 * transaction, as the statement holds it.  False if there is no such row,
 * or with skip_locked if another transaction holds a conflicting lock.
 */
static bool
lock_object_row(PeekObjectId id, LockTupleMode mode, bool skip_locked)
{
	Oid			index;
	Relation	rel = catalog_table_open("objects", "objects_pkey", &index);
	AttrNumber	id_attnum = get_attnum(RelationGetRelid(rel), "id");
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	ItemPointerData tid;
	bool		found;
	bool		locked = false;
	Snapshot	snapshot;

	LockRelationOid(RelationGetRelid(rel), RowShareLock);
	/* as a statement starts: it sees the transaction's own changes */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	ScanKeyInit(&key, id_attnum, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = systable_beginscan(rel, index, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	found = HeapTupleIsValid(tuple);
	if (found)
		tid = tuple->t_self;
	systable_endscan(scan);
	if (found)
	{
		TupleTableSlot *slot = table_slot_create(rel, NULL);
		TM_FailureData tmfd;
		bool		isnull;

		switch (table_tuple_lock(rel, &tid, snapshot, slot, GetCurrentCommandId(false), mode,
								 skip_locked ? LockWaitSkip : LockWaitBlock,
								 TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS |
								 (IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION),
								 &tmfd))
		{
			case TM_Ok:
				/* a later version is the object's while it has the id */
				locked = !tmfd.traversed ||
					DatumGetInt64(slot_getattr(slot, id_attnum, &isnull)) == id;
				break;
			case TM_WouldBlock:
			case TM_SelfModified:
				break;
			case TM_Updated:
			case TM_Deleted:
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to concurrent update")));
				break;
			default:
				elog(ERROR, "unexpected lock result for object " INT64_FORMAT, id);
		}
		ExecDropSingleTupleTableSlot(slot);
	}
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return locked;
}

/*
 * Lock an object's row as writers do, before the maintenance runtime writes
 * its shard (false: the object is gone).  Compaction skips a row a writer
 * holds (false too) and retries later, rather than stall the runtime behind
 * a writer's open transaction; a capture round waits (drop_source waits for
 * it, or it for drop_source).
 */
bool
catalog_lock_row(PeekObjectId id, bool skip_locked)
{
	return lock_object_row(id, LockTupleNoKeyExclusive, skip_locked);
}

/*
 * Keep an object's row, and so its shard, from a drop until the end of the
 * transaction, before the maintenance runtime folds its shard (false: the
 * object is gone, or a drop holds its row: the fold is skipped, never
 * waited for).  A key share lock: writers' locks do not conflict with it,
 * so a fold still holds no lock a writer waits for; a drop's (FOR UPDATE)
 * waits for the fold instead.
 */
bool
catalog_keep_row(PeekObjectId id)
{
	return lock_object_row(id, LockTupleKeyShare, true);
}

/*
 * A runtime's work on one object waits for a user's lock at most this long
 * (lock_timeout for the rest of the current subtransaction), then fails
 * with 55P03 and is retried on a later round.  So an open transaction that
 * holds an object's catalog row or shard (say, an uncommitted drop_source)
 * delays that object only, not every other object's publication.  A
 * shorter lock_timeout set for the database is kept.
 */
#define RUNTIME_LOCK_WAIT_MS	100

void
catalog_bound_lock_waits(void)
{
	if (LockTimeout == 0 || LockTimeout > RUNTIME_LOCK_WAIT_MS)
		(void) set_config_option("lock_timeout", CppAsString2(RUNTIME_LOCK_WAIT_MS),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * A runtime's transaction that reads the catalog first makes sure it exists
 * and stays: DROP EXTENSION waits for the lock taken here, or has committed
 * and the extension is gone (false).  The extension's OID is the one the
 * last call locked until a look-up after the lock says otherwise: one
 * look-up a call, not one before the lock and one after.
 */
bool
catalog_lock_extension(void)
{
	static Oid	locked = InvalidOid;

	for (;;)
	{
		Oid			extension;

		if (OidIsValid(locked))
			LockDatabaseObject(ExtensionRelationId, locked, 0, AccessShareLock);
		extension = get_extension_oid("pg_peek", true);
		if (extension == locked)
			return OidIsValid(extension);
		locked = extension;
		if (!OidIsValid(extension))
			return false;
	}
}

/*
 * Whether the extension is being dropped or is gone: another transaction
 * holds or waits for its AccessExclusiveLock (DROP EXTENSION takes it
 * first), or the drop committed.  A peek that waits gives up then: its
 * object will never be published.
 */
bool
catalog_extension_dropping(Oid extension)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, MyDatabaseId, ExtensionRelationId, extension, 0);
	/* a mode no one else takes on an extension, conflicting with the drop's */
	if (LockAcquire(&tag, RowShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, RowShareLock, false);

	/*
	 * Or it was dropped already: a peek holds no lock the drop waits for
	 * (its name lookup lets go of peek.objects at once), and on a standby
	 * replay takes none of an extension's.
	 */
	AcceptInvalidationMessages();
	return get_extension_name(extension) == NULL;
}
