/*-------------------------------------------------------------------------
 *
 * gate.h
 *	  The gate both routes of a peek use (gate.c); private to peek/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_PEEK_GATE_H
#define PEEK_PEEK_GATE_H

#include "ipc/registry.h"
#include "peek/slots.h"

typedef enum GateResult
{
	GATE_WAIT,
	GATE_READY,
	GATE_COMPACTED,
	GATE_DROPPED,
	GATE_FAILED,
	GATE_GONE					/* withdrawn meanwhile */
} GateResult;

extern GateResult gate_peek(RegistryEntry *entry, PeekSlot *slot, uint64 peek_id, int64 *time, int64 floor);
extern PeekAnswer gate_answer(GateResult result);

#endif							/* PEEK_PEEK_GATE_H */
