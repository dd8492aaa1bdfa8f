/*-------------------------------------------------------------------------
 *
 * serve.c
 *	  The serving runtime's side: a peek that waits is parked keyed by its
 *	  object id; a publication of that object marks it dirty for this
 *	  runtime (ipc/registry.c) and serve_dirty_objects re-examines only the
 *	  peeks parked under dirty ids.  A ready index peek is answered with a
 *	  handle on its batches: a shared handle resolved from the registry on
 *	  that attempt (interactive runtime), or a local handle on the solo
 *	  runtime's own spine, pinned once for the peek's life.  Must not reach
 *	  into the maintenance runtime's spines: the solo runtime's loop hands
 *	  serve_reset the function that lends its local batches.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "ipc/runtime_slots.h"
#include "peek/gate.h"
#include "peek/peek.h"

/* The runtime's view of one peek slot. */
typedef struct LocalPeek
{
	bool		parked;
	uint64		peek_id;
	PeekObjectId object;
	char		kind;
	int64		time;
	int64		floor;			/* as_of NULL resolves to at least this */
	dlist_node	node;			/* in its ParkedObject's list */
} LocalPeek;

/* Pending work keyed by the object it waits on. */
typedef struct ParkedObject
{
	PeekObjectId id;
	dlist_head	peeks;
} ParkedObject;

static LocalPeek *local_peeks = NULL;
static HTAB *parked_objects = NULL;
static PeekLocalBatches local_batches = NULL;	/* the solo runtime's spines */

/*
 * Reconciliation: forget all pending work; backends re-issue their peeks
 * once they see the new generation.  local lends the solo runtime's own
 * batches (NULL in a runtime that serves from the registry).
 */
void
serve_reset(int runtime, PeekLocalBatches local)
{
	HASHCTL		ctl;

	local_batches = local;
	if (parked_objects != NULL)
		hash_destroy(parked_objects);
	if (local_peeks == NULL)
		local_peeks = MemoryContextAllocZero(TopMemoryContext,
											 sizeof(LocalPeek) * peek_slot_count());
	else
		memset(local_peeks, 0, sizeof(LocalPeek) * peek_slot_count());

	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = sizeof(ParkedObject);
	ctl.hcxt = TopMemoryContext;
	parked_objects = hash_create("pg_peek parked peeks", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	queue_reset(runtime_slot(runtime)->inbox);
	queue_reset(runtime_slot(runtime)->dirty);
	for (int i = 0; i < peek_slot_count(); i++)
	{
		PeekSlot   *slot = peek_slot(i);

		SpinLockAcquire(&slot->mutex);
		if (slot->runtime == runtime)
			slot->queued = false;
		SpinLockRelease(&slot->mutex);
	}
	registry_reset_runtime(runtime);
}

/*
 * The solo runtime's local handle on its own spine (see gate_peek), once
 * that has caught up with what the locked entry admits.  Until then (the
 * runtime restarted and its adoption is still to be retried, say on a lock
 * timeout) the list its last incarnation published, which the entry's own
 * pins keep alive, answers every time the entry admits.
 */
static void
pin_local_handle(int runtime, RegistryEntry *entry, PeekHandle *handle)
{
	dsa_pointer *batches;
	int			nbatches;
	int64		upper;

	if (local_batches == NULL || !local_batches(entry->id, &batches, &nbatches, &upper) ||
		upper < entry->upper)
	{
		batches = entry->batches;
		nbatches = entry->nbatches;
	}
	registry_pin_batches(handle, entry->id, batches, nbatches, false, runtime);
}

/*
 * The runtime's gate: an id the registry does not know gets a placeholder
 * entry (verified by maintenance), the waiter count that lets publishers
 * skip the dirty mark is kept in the entry's lock, and a ready index peek
 * is answered with a handle pinned there.
 */
static GateResult
gate_runtime_peek(int runtime, int idx, LocalPeek *lp, int64 *since, PeekHandle *handle)
{
	bool		created;
	RegistryEntry *entry = registry_lock(lp->object, true, &created);
	GateResult	result;

	result = gate_peek(entry, peek_slot(idx), lp->peek_id, &lp->time, lp->floor);
	*since = entry->since;

	if (result == GATE_WAIT && !lp->parked)
		entry->waiters[runtime]++;
	else if (result != GATE_WAIT && lp->parked)
		entry->waiters[runtime]--;

	/*
	 * The batches a ready index peek walks are pinned under the entry lock:
	 * a shared handle resolved from the registry on this attempt, or (solo)
	 * a local handle on this runtime's own spine, kept for the peek's life.
	 */
	handle->index = 0;
	handle->nbatches = 0;
	if (result == GATE_READY && lp->kind == PEEK_KIND_INDEX)
	{
		if (settings_runtime_role(runtime) == PEEK_ROLE_INTERACTIVE)
			registry_resolve_shared_handle(entry, runtime, handle);
		else
			pin_local_handle(runtime, entry, handle);
	}
	registry_unlock(entry);

	/* an id the registry did not know: maintenance checks the catalog */
	if (created)
	{
		PeekCommand verify = {PEEK_CMD_CATALOG_CHANGED, lp->object, 0};

		(void) runtime_send(PEEK_RUNTIME_MAINTENANCE, &verify);
	}
	return result;
}

static void
park(LocalPeek *lp)
{
	ParkedObject *po;
	bool		found;

	po = hash_search(parked_objects, &lp->object, HASH_ENTER, &found);
	if (!found)
		dlist_init(&po->peeks);
	dlist_push_tail(&po->peeks, &lp->node);
	lp->parked = true;
}

static void
unpark_local(LocalPeek *lp)
{
	ParkedObject *po;

	dlist_delete(&lp->node);
	lp->parked = false;
	po = hash_search(parked_objects, &lp->object, HASH_FIND, NULL);
	if (po != NULL && dlist_is_empty(&po->peeks))
		hash_search(parked_objects, &lp->object, HASH_REMOVE, NULL);
}

/* A parked peek was withdrawn or replaced: drop it and its waiter count. */
static void
unpark(int runtime, LocalPeek *lp)
{
	RegistryEntry *entry = registry_lock(lp->object, false, NULL);

	if (entry != NULL)
	{
		entry->waiters[runtime]--;
		registry_unlock(entry);
	}
	unpark_local(lp);
}

/*
 * Write an answer into the slot if the peek is still the one we examined;
 * if it is gone, its batches are let go of here.
 */
static void
respond(int idx, LocalPeek *lp, PeekAnswer answer, int64 since, PeekHandle *handle)
{
	PeekSlot   *slot = peek_slot(idx);
	PGPROC	   *backend = NULL;

	SpinLockAcquire(&slot->mutex);
	if (slot->peek_id == lp->peek_id &&
		(slot->state == PEEK_SUBMITTED || slot->state == PEEK_PARKED))
	{
		slot->answer = answer;
		slot->answer_time = lp->time;
		slot->answer_since = since;
		if (handle != NULL)
			memcpy(&slot->answer_handle, handle, offsetof(PeekHandle, batches) +
				   sizeof(dsa_pointer) * handle->nbatches);
		pg_write_barrier();
		slot->state = PEEK_ANSWERED;
		backend = slot->backend;
	}
	SpinLockRelease(&slot->mutex);
	if (backend != NULL)
		SetLatch(&backend->procLatch);
	else if (handle != NULL && handle->index != 0)
		registry_release_handle(handle);
}

/* Gate one peek and act on the result: answer it, or park it. */
static void
examine_peek(int runtime, int idx, LocalPeek *lp)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	PeekSlot   *slot = peek_slot(idx);
	int64		since;
	PeekHandle	handle;
	GateResult	result = gate_runtime_peek(runtime, idx, lp, &since, &handle);

	if (result == GATE_WAIT)
	{
		if (!lp->parked)
		{
			park(lp);
			SpinLockAcquire(&slot->mutex);
			if (slot->peek_id == lp->peek_id && slot->state == PEEK_SUBMITTED)
				slot->state = PEEK_PARKED;
			SpinLockRelease(&slot->mutex);
			runtime_count(rt, RC_PEEKS_PARKED);
		}
		return;
	}
	if (lp->parked)
		unpark_local(lp);

	if (result == GATE_GONE)
		return;
	respond(idx, lp, gate_answer(result), since,
			result == GATE_READY ? &handle : NULL);
	runtime_count(rt, RC_PEEKS_SERVED);
}

/* One slot came through the inbox: a new or re-issued peek, or a withdrawal. */
static void
handle_inbox_slot(int runtime, int idx)
{
	PeekSlot   *slot = peek_slot(idx);
	LocalPeek  *lp = &local_peeks[idx];
	PeekState	state;
	uint64		peek_id;
	int			slot_runtime;

	SpinLockAcquire(&slot->mutex);
	slot->queued = false;
	state = slot->state;
	peek_id = slot->peek_id;
	slot_runtime = slot->runtime;
	SpinLockRelease(&slot->mutex);

	if (lp->parked && (lp->peek_id != peek_id || state != PEEK_PARKED))
	{
		unpark(runtime, lp);
		runtime_count(runtime_slot(runtime), RC_PEEKS_CANCELED);
	}
	if (state != PEEK_SUBMITTED || slot_runtime != runtime)
		return;

	SpinLockAcquire(&slot->mutex);
	lp->peek_id = slot->peek_id;
	lp->object = slot->object;
	lp->kind = slot->kind;
	lp->time = slot->time;
	lp->floor = slot->floor;
	SpinLockRelease(&slot->mutex);
	lp->parked = false;
	examine_peek(runtime, idx, lp);
}

void
serve_inbox(int runtime)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	int		   *idxs = palloc(sizeof(int) * peek_slot_count());
	bool		overflowed;
	int			n;

	n = queue_drain(rt->inbox, idxs, peek_slot_count(), &overflowed);
	if (overflowed)
	{
		/* lost track of which slots: look at all of them */
		for (int i = 0; i < peek_slot_count(); i++)
			handle_inbox_slot(runtime, i);
	}
	else
		for (int i = 0; i < n; i++)
			handle_inbox_slot(runtime, idxs[i]);
	pfree(idxs);
}

/* Re-examine the peeks parked on one object that was published. */
static void
reexamine_object(int runtime, PeekObjectId id)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	RegistryEntry *entry;
	ParkedObject *po;
	dlist_iter	iter;
	int		   *idxs;
	int			n = 0;

	/* clear the mark first, so a publication from here on marks us again */
	entry = registry_lock(id, false, NULL);
	if (entry != NULL)
	{
		entry->dirty[runtime] = false;
		registry_unlock(entry);
	}

	po = hash_search(parked_objects, &id, HASH_FIND, NULL);
	if (po == NULL)
		return;
	/* examining may unpark peeks and free po: collect them first */
	idxs = palloc(sizeof(int) * peek_slot_count());
	dlist_foreach(iter, &po->peeks)
		idxs[n++] = dlist_container(LocalPeek, node, iter.cur) - local_peeks;
	for (int i = 0; i < n; i++)
	{
		runtime_count(rt, RC_PEEKS_REEXAMINED);
		examine_peek(runtime, idxs[i], &local_peeks[idxs[i]]);
	}
	pfree(idxs);
}

void
serve_dirty_objects(int runtime)
{
	RuntimeSlot *rt = runtime_slot(runtime);
	PeekObjectId *ids = palloc(sizeof(PeekObjectId) * peek_slot_count());
	bool		overflowed;
	int			n;

	n = queue_drain(rt->dirty, ids, peek_slot_count(), &overflowed);
	if (overflowed)
	{
		/* lost track of which objects: re-examine every one with peeks */
		HASH_SEQ_STATUS status;
		ParkedObject *po;
		int			nparked = 0;
		PeekObjectId *parked = palloc(sizeof(PeekObjectId) * peek_slot_count());

		hash_seq_init(&status, parked_objects);
		while ((po = hash_seq_search(&status)) != NULL)
			parked[nparked++] = po->id;
		for (int i = 0; i < nparked; i++)
			reexamine_object(runtime, parked[i]);
		pfree(parked);
	}
	for (int i = 0; i < n; i++)
	{
		runtime_count(rt, RC_DIRTY_MARKS);
		reexamine_object(runtime, ids[i]);
	}
	pfree(ids);
}

