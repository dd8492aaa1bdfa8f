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
extern long folds_wait_ms(void);

#endif							/* PEEK_RUNTIME_FOLDS_H */
