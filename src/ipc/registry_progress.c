/*-------------------------------------------------------------------------
 *
 * registry_progress.c
 *	  What the maintenance runtime reports of its work on an object in the
 *	  object's registry entry, for introspection (peek.views,
 *	  peek.dataflow_operators, the hydration columns): a view's operators'
 *	  counts, its rounds that ran out of time, a hydration's progress.
 *
 *	  Must not touch frontiers, holds or batch lists (registry.c's) nor the
 *	  catalog: callers may hold a partition lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/registry_progress.h"

/*
 * A view's round's work through its operators, added to the counts of
 * each (its kind and the bytes it keeps are the round's).
 */
void
registry_add_operators(PeekObjectId id, int noperators, const OperatorStats *round)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);

	Assert(noperators <= PEEK_MAX_OPERATORS);
	entry->noperators = noperators;
	for (int i = 0; i < noperators; i++)
	{
		OperatorStats *op = &entry->operators[i];

		strlcpy(op->kind, round[i].kind, sizeof(op->kind));
		op->rows_in += round[i].rows_in;
		op->rows_out += round[i].rows_out;
		op->bytes = round[i].bytes;
		op->learning = round[i].learning;
		op->time_us += round[i].time_us;
	}
	registry_unlock(entry);
}

/*
 * A view's rounds that ran out of time in a row and the limit of its next
 * (peek.views shows it 'retrying'); 0 once a round completes.
 */
void
registry_round_timeouts(PeekObjectId id, int32 timeouts, int32 limit_ms)
{
	RegistryEntry *entry = registry_lock(id, false, NULL);

	if (entry == NULL)
		return;
	entry->round_timeouts = timeouts;
	entry->round_limit_ms = limit_ms;
	registry_unlock(entry);
}

/* Progress of an index's or a view's hydration (total < 0: it is over). */
void
registry_hydration_progress(PeekObjectId id, int64 loaded, int64 total)
{
	RegistryEntry *entry = registry_lock(id, true, NULL);

	entry->hydrating = total >= 0;
	entry->hydrated_rows = loaded;
	entry->hydration_total = Max(total, 0);
	registry_unlock(entry);
}
