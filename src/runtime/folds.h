/*-------------------------------------------------------------------------
 *
 * folds.h
 *	  When each collection's base moves on (folds.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_RUNTIME_FOLDS_H
#define PEEK_RUNTIME_FOLDS_H

#include "storage/catalog.h"

/*
 * The most updates a fold in the runtime folds in one step: about 0.1 to
 * 0.2 s of the runtime's time; a bigger fold is a fold worker's.
 */
#define FOLD_STEP_ROWS	INT64CONST(10000)

/*
 * Fold a collection's base on towards target, max_rows updates at most (at
 * a time's end), but with first_alone at least the first time after the
 * base, however big; true with the base's new time if it committed.
 */
typedef bool (*FoldFn) (PeekObjectId id, Oid shard, int64 target, int64 max_rows,
						bool first_alone, int64 *base_time);

extern void folds_reset(void);
extern void folds_note(CatalogObject *obj);
extern void folds_forget(PeekObjectId id);
extern bool folds_run(FoldFn fold, bool busy);
extern bool folds_compact_outside(PeekObjectId id, int64 durable_since, int64 since,
								  int64 rows);
extern bool folds_outside(PeekObjectId id);
extern long folds_wait_ms(void);

#endif							/* PEEK_RUNTIME_FOLDS_H */
