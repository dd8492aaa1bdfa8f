/*-------------------------------------------------------------------------
 *
 * gate.c
 *	  The gate: one function for both routes (the backend's fast path and
 *	  the serving runtime) decides ready, wait, compacted, dropped or failed
 *	  under the object's registry entry lock, and records the peek's hold in
 *	  its slot under that lock, so compaction (which reads holds under the
 *	  same lock) never misses it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "peek/gate.h"
#include "peek/peek.h"

/*
 * Decide, under the object's registry entry lock, whether the peek in a
 * slot (still the one numbered peek_id) is ready, must wait or asks for a
 * compacted time; as_of NULL (*time PEEK_TIME_LATEST) resolves to the
 * latest complete time.  A peek that is ready or waits at a known time
 * records its hold in its slot here: compaction advances since under the
 * same lock and reads the slots' holds, so it can never pass a peek the
 * gate let through.  Only reads the entry: a shared lock is enough.
 */
GateResult
gate_peek(RegistryEntry *entry, PeekSlot *slot, uint64 peek_id, int64 *time, int64 floor)
{
	int64		t = *time;
	GateResult	result;

	if (entry->dropped)
		result = GATE_DROPPED;
	else if (entry->failed)
		result = GATE_FAILED;
	else
	{
		/*
		 * Nothing is complete yet (upper 0): the latest complete time is
		 * resolved once there is one, which for a source is just before its
		 * load, not time 0.
		 */
		if (t == PEEK_TIME_LATEST && entry->published &&
			(entry->upper > 0 || floor >= 0))
			t = Max(floor, entry->upper == 0 ? 0 : Max(entry->since, entry->upper - 1));
		if (!entry->published || t == PEEK_TIME_LATEST || t >= entry->upper)
			result = GATE_WAIT;
		else if (entry->since > t)
			result = GATE_COMPACTED;
		else
			result = GATE_READY;
	}

	/*
	 * A peek of the latest time that waits (for its floor) is resolved again
	 * each time it is examined, holding nothing meanwhile: the since may pass
	 * its floor (a source loaded again), and then it reads at the since.
	 */
	if (*time == PEEK_TIME_LATEST && result == GATE_WAIT)
		t = PEEK_TIME_LATEST;

	SpinLockAcquire(&slot->mutex);
	if (slot->peek_id != peek_id ||
		(slot->state != PEEK_SUBMITTED && slot->state != PEEK_PARKED))
		result = GATE_GONE;
	else if (t != PEEK_TIME_LATEST && (result == GATE_WAIT || result == GATE_READY))
	{
		slot->time = t;
		slot->hold_object = entry->id;
		slot->hold_time = t;
	}
	SpinLockRelease(&slot->mutex);
	*time = t;
	return result;
}

/* What the backend is told of a gate's verdict. */
PeekAnswer
gate_answer(GateResult result)
{
	switch (result)
	{
		case GATE_READY:
			return PEEK_ANSWER_READ;
		case GATE_COMPACTED:
			return PEEK_ANSWER_COMPACTED;
		case GATE_DROPPED:
			return PEEK_ANSWER_DROPPED;
		case GATE_FAILED:
			return PEEK_ANSWER_FAILED;
		case GATE_WAIT:
		case GATE_GONE:
			break;
	}
	elog(ERROR, "pg_peek gate verdict %d is not an answer", (int) result);
	return PEEK_ANSWER_FAILED;	/* keep compiler quiet */
}

