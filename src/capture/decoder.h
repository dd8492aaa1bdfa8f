/*-------------------------------------------------------------------------
 *
 * decoder.h
 *	  pg_peek's logical decoding output plugin: the committed changes of a
 *	  source table, as updates for the source's shard.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_DECODER_H
#define PEEK_DECODER_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "catalog/pg_class.h"

#include "common/ids.h"

/* One update of a source: a row at a commit LSN, or a TRUNCATE there. */
typedef struct DecodedUpdate
{
	int64		time;
	int64		diff;
	Datum		row;			/* of the source's row type; none for TRUNCATE */
	bool		truncate;
} DecodedUpdate;

/* What one decoding round collected for one source. */
typedef struct DecodedChanges
{
	Oid			relid;			/* the source table */
	TupleDesc	row_desc;		/* the source's row type (its copy) */
	MemoryContext cxt;			/* holds the updates; reset each round */
	DecodedUpdate *updates;
	int64		n;
	int64		capacity;
	Size		bytes;
	int64		txn_start;		/* the replayed transaction's first update */
	Oid			rewrite_heap;	/* the heap an ALTER TABLE is rewriting it into */
	char	   *failure;		/* a change that cannot be captured: why */
	int64		failed_at;		/* ... and its commit LSN */

	/*
	 * The last replayed transaction that had updates, or an invalid xid
	 * (capture/rounds.c takes it, to check that it is visible to SQL yet).
	 */
	TransactionId commit_xid;
	int64		commit_at;		/* its commit LSN */
	int64		commit_from;	/* its first update */

	/*
	 * The relfilenodes whose changes a replay showed to be another table's
	 * (rounds.c skips their records unread), valid while no relcache
	 * invalidation came since capture_relcache_generation was
	 * other_tables_generation; NULL: none kept (a loader's).
	 */
	HTAB	   *other_tables;
	uint64		other_tables_generation;
} DecodedChanges;

/* a source reads its table as a superuser: row-level security fails it */
#define ROW_SECURITY_FAILURE \
	"table \"%s\" has row-level security enabled: a source would show every row to whoever may read the table"

extern void decoder_collect_into(DecodedChanges *changes);
extern void decoder_reset(DecodedChanges *changes);
extern char *decoder_undecodable(Form_pg_class rel);
extern void decoder_keep_from(DecodedChanges *changes, int64 from);
extern Datum decoder_table_row(TupleDesc table_desc, HeapTuple tuple, HeapTuple old_tuple,
							   bool from_wal, TupleDesc row_desc, const char *table,
							   char **failure);

#endif							/* PEEK_DECODER_H */
