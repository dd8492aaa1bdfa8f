/*
 * registry_progress.h
 *	  Progress of the maintenance runtime's work on an object, for
 *	  introspection (registry_progress.c).
 */
#ifndef PEEK_REGISTRY_PROGRESS_H
#define PEEK_REGISTRY_PROGRESS_H

#include "ipc/registry.h"

extern void registry_hydration_progress(PeekObjectId id, int64 loaded, int64 total);
extern void registry_round_timeouts(PeekObjectId id, int32 timeouts, int32 limit_ms);
extern void registry_add_operators(PeekObjectId id, int noperators, const OperatorStats *round);

#endif
