/*-------------------------------------------------------------------------
 *
 * decoder.c
 *	  pg_peek's logical decoding output plugin.  It lives in the extension's
 *	  own library, so a slot created with plugin "pg_peek" loads it.  For one
 *	  source table it turns each committed change into updates of the
 *	  source's shard, at the transaction's commit LSN: INSERT +1 new row,
 *	  DELETE -1 old row, UPDATE -1 old and +1 new, TRUNCATE a retraction of
 *	  everything, an ALTER TABLE that rewrites the table a retraction of
 *	  everything and +1 each rewritten row.  The updates are collected in
 *	  memory for the round or load that decodes (rounds.c, loader.c);
 *	  nothing is written here.
 *
 *	  Runs inside the reorder buffer's replay under a historic snapshot, so
 *	  it must not read user tables and must not raise an error for a change
 *	  it cannot capture (a row type that no longer matches, an old row the
 *	  WAL does not carry, a table that got row-level security): it records
 *	  why instead, and the source fails.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_am.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "capture/decoder.h"
#include "common/rows.h"

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

/* Where the next decoding context to start collects (set by loader.c and rounds.c). */
static DecodedChanges *collect_into = NULL;

void
decoder_collect_into(DecodedChanges *changes)
{
	collect_into = changes;
}

void
decoder_reset(DecodedChanges *changes)
{
	MemoryContextReset(changes->cxt);
	changes->capacity = 1024;
	changes->updates = MemoryContextAllocHuge(changes->cxt,
											  sizeof(DecodedUpdate) * changes->capacity);
	changes->n = 0;
	changes->bytes = 0;
	changes->txn_start = 0;
	changes->commit_xid = InvalidTransactionId;
}

/*
 * A table row as a row of the source's type: the table's first live
 * columns, in order, must have the copy's types; columns added to the table
 * since the source was made are left out.  In a row from the WAL (from_wal), a
 * field that is only a pointer into the TOAST table (an UPDATE left it
 * unchanged) is taken from old_tuple, which REPLICA IDENTITY FULL logs in
 * full: decoding must not read the TOAST table.  Returns the row, or
 * (Datum) 0 with *failure set.
 */
Datum
decoder_table_row(TupleDesc table_desc, HeapTuple tuple, HeapTuple old_tuple,
				  bool from_wal, TupleDesc row_desc, const char *table, char **failure)
{
	Datum	   *tvalues = palloc(sizeof(Datum) * table_desc->natts);
	bool	   *tnulls = palloc(sizeof(bool) * table_desc->natts);
	Datum	   *ovalues = NULL;
	bool	   *onulls = NULL;
	Datum	   *values = palloc(sizeof(Datum) * Max(row_desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(row_desc->natts, 1));
	int			j = 0;
	HeapTuple	formed;
	Datum		row;

	if (!rows_match_table(table_desc, row_desc, NULL))
	{
		*failure = psprintf("the row type of table \"%s\" changed: it no longer matches the source's row type %s",
							table, format_type_be(row_desc->tdtypeid));
		return (Datum) 0;
	}
	heap_deform_tuple(tuple, table_desc, tvalues, tnulls);
	if (old_tuple != NULL)
	{
		ovalues = palloc(sizeof(Datum) * table_desc->natts);
		onulls = palloc(sizeof(bool) * table_desc->natts);
		heap_deform_tuple(old_tuple, table_desc, ovalues, onulls);
	}
	for (int i = 0; i < table_desc->natts && j < row_desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(table_desc, i);

		if (att->attisdropped)
			continue;
		values[j] = tvalues[i];
		nulls[j] = tnulls[i];
		if (from_wal && !nulls[j] && att->attlen == -1 &&
			VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[j])))
		{
			if (ovalues == NULL || onulls[i] ||
				VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(ovalues[i])))
			{
				*failure = psprintf("an UPDATE of table \"%s\" left column \"%s\" unchanged and the WAL does not carry its value",
									table, NameStr(att->attname));
				return (Datum) 0;
			}
			values[j] = ovalues[i];
		}
		j++;
	}
	/* flattens TOAST values (from the WAL: those reassembled from chunks) */
	formed = heap_form_tuple(row_desc, values, nulls);
	row = heap_copy_tuple_as_datum(formed, row_desc);

	/*
	 * The round's context keeps only the row: its updates' memory is the
	 * rows' (capture bounds a round by it).
	 */
	heap_freetuple(formed);
	pfree(tvalues);
	pfree(tnulls);
	if (ovalues != NULL)
	{
		pfree(ovalues);
		pfree(onulls);
	}
	pfree(values);
	pfree(nulls);
	return row;
}

static void
add_update(DecodedChanges *changes, int64 time, int64 diff, Datum row, bool truncate)
{
	DecodedUpdate *u;

	if (changes->n == changes->capacity)
	{
		changes->capacity *= 2;
		changes->updates = repalloc_huge(changes->updates,
										 sizeof(DecodedUpdate) * changes->capacity);
	}
	u = &changes->updates[changes->n++];
	u->time = time;
	u->diff = diff;
	u->row = row;
	u->truncate = truncate;
	changes->bytes += sizeof(DecodedUpdate) +
		(truncate ? 0 : VARSIZE(DatumGetPointer(row)));
}

/*
 * Keep only the updates from the one at index from on, moved to the start,
 * in fresh memory: those of a commit that capture holds back for a later
 * round.
 */
void
decoder_keep_from(DecodedChanges *changes, int64 from)
{
	MemoryContext old_cxt = changes->cxt;
	DecodedUpdate *kept = changes->updates + from;
	int64		n = changes->n - from;
	MemoryContext old;

	changes->cxt = AllocSetContextCreate(MemoryContextGetParent(old_cxt),
										 "pg_peek decoded changes", ALLOCSET_DEFAULT_SIZES);
	decoder_reset(changes);
	old = MemoryContextSwitchTo(changes->cxt);
	for (int64 i = 0; i < n; i++)
		add_update(changes, kept[i].time, kept[i].diff,
				   kept[i].truncate ? (Datum) 0 : datumCopy(kept[i].row, false, -1),
				   kept[i].truncate);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(old_cxt);
}

/*
 * Why the changes of a table, as its catalog row says, no longer reach the
 * WAL as decodable heap changes (SET UNLOGGED, SET ACCESS METHOD): a source
 * that went on would present stale contents as current.  NULL if they do.
 */
char *
decoder_undecodable(Form_pg_class rel)
{
	if (rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return psprintf("table \"%s\" became %s, so its changes are no longer written to the WAL",
						NameStr(rel->relname),
						rel->relpersistence == RELPERSISTENCE_TEMP ? "temporary" : "unlogged");
	if (rel->relam != HEAP_TABLE_AM_OID)
	{
		HeapTuple	tup = SearchSysCache1(AMOID, ObjectIdGetDatum(rel->relam));
		bool		heap = HeapTupleIsValid(tup) &&
			((Form_pg_am) GETSTRUCT(tup))->amhandler == F_HEAP_TABLEAM_HANDLER;

		if (HeapTupleIsValid(tup))
			ReleaseSysCache(tup);
		if (!heap)
			return psprintf("table \"%s\" no longer uses the heap table access method, whose changes logical decoding reads",
							NameStr(rel->relname));
	}
	return NULL;
}

/*
 * The source fails at this transaction: none of its updates are kept.  The
 * reason is kept with them (the callback's memory does not outlast it).
 */
static void
fail_at(DecodedChanges *changes, ReorderBufferTXN *txn, char *failure)
{
	changes->n = changes->txn_start;
	changes->failure = MemoryContextStrdup(changes->cxt, failure);
	changes->failed_at = (int64) txn->final_lsn;
}

static void
decoder_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	if (collect_into == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("logical decoding output plugin \"pg_peek\" only serves pg_peek sources")));
	ctx->output_plugin_private = collect_into;
	opt->output_type = OUTPUT_PLUGIN_BINARY_OUTPUT;
	/* an ALTER TABLE that rewrites the table (decoder_change) */
	opt->receive_rewrites = true;
}

static void
decoder_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	DecodedChanges *changes = ctx->output_plugin_private;

	changes->txn_start = changes->n;
	changes->rewrite_heap = InvalidOid;
}

/*
 * A row an ALTER TABLE wrote into the new heap that replaces the table's
 * (SET LOGGED, a column's type or USING expression, SET ACCESS METHOD):
 * the table's contents change without a decodable change of the table's
 * own.  The rewrite is captured as what it is: a retraction of every row
 * (as a TRUNCATE) when its first row comes, then its rows.  (VACUUM FULL
 * and CLUSTER copy pages, not rows: their rows stay as they were.)
 */
static void
add_rewritten_row(DecodedChanges *changes, ReorderBufferTXN *txn, Relation heap,
				  HeapTuple tuple)
{
	char	   *failure = NULL;
	MemoryContext old = MemoryContextSwitchTo(changes->cxt);
	Datum		row;

	if (RelationGetRelid(heap) != changes->rewrite_heap)
	{
		add_update(changes, (int64) txn->final_lsn, 0, (Datum) 0, true);
		changes->rewrite_heap = RelationGetRelid(heap);
	}
	row = decoder_table_row(RelationGetDescr(heap), tuple, NULL, true,
							changes->row_desc, get_rel_name(changes->relid), &failure);
	if (failure == NULL)
		add_update(changes, (int64) txn->final_lsn, 1, row, false);
	MemoryContextSwitchTo(old);
	if (failure != NULL)
		fail_at(changes, txn, failure);
}

/*
 * A change of another ordinary table, replayed under the snapshot of its
 * time: its relfilenode is that table's, whose later records the stream
 * need not decode (rounds.c).  A rewrite's transient heap is not noted.
 */
static void
note_other_table(DecodedChanges *changes, Relation relation, RelFileNode *node)
{
	if (changes->other_tables == NULL || relation->rd_rel->relkind != RELKIND_RELATION ||
		OidIsValid(relation->rd_rel->relrewrite))
		return;
	(void) hash_search(changes->other_tables, node, HASH_ENTER, NULL);
}

static void
decoder_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			   Relation relation, ReorderBufferChange *change)
{
	DecodedChanges *changes = ctx->output_plugin_private;
	HeapTuple	old_tuple = NULL;
	HeapTuple	new_tuple = NULL;
	const char *table = RelationGetRelationName(relation);
	char	   *failure = NULL;
	MemoryContext old;
	Datum		old_row = (Datum) 0;
	Datum		row = (Datum) 0;

	if (changes->failure != NULL)
		return;
	if (relation->rd_rel->relrewrite == changes->relid && change->data.tp.newtuple != NULL)
	{
		add_rewritten_row(changes, txn, relation, &change->data.tp.newtuple->tuple);
		return;
	}
	if (RelationGetRelid(relation) != changes->relid)
	{
		note_other_table(changes, relation, &change->data.tp.relnode);
		return;
	}

	if (change->data.tp.oldtuple != NULL)
		old_tuple = &change->data.tp.oldtuple->tuple;
	if (change->data.tp.newtuple != NULL)
		new_tuple = &change->data.tp.newtuple->tuple;

	/* from this commit on, its rows are no longer for every reader */
	if (relation->rd_rel->relrowsecurity)
	{
		fail_at(changes, txn, psprintf(ROW_SECURITY_FAILURE, table));
		return;
	}

	/* retracting a row needs all of it: only REPLICA IDENTITY FULL logs that */
	if (change->action != REORDER_BUFFER_CHANGE_INSERT &&
		(relation->rd_rel->relreplident != REPLICA_IDENTITY_FULL || old_tuple == NULL))
	{
		fail_at(changes, txn,
				psprintf("table \"%s\" no longer has REPLICA IDENTITY FULL, so an UPDATE or DELETE came without the old row",
						 table));
		return;
	}

	old = MemoryContextSwitchTo(changes->cxt);
	if (old_tuple != NULL)
		old_row = decoder_table_row(RelationGetDescr(relation), old_tuple, NULL, true,
									changes->row_desc, table, &failure);
	if (new_tuple != NULL && failure == NULL)
		row = decoder_table_row(RelationGetDescr(relation), new_tuple, old_tuple, true,
								changes->row_desc, table, &failure);
	/*
	 * An UPDATE that changed no captured column (only columns added since
	 * the source was made, or none) changes nothing of the source.
	 */
	if (failure == NULL && old_row != (Datum) 0 && row != (Datum) 0 &&
		VARSIZE(DatumGetPointer(old_row)) == VARSIZE(DatumGetPointer(row)) &&
		memcmp(DatumGetPointer(old_row), DatumGetPointer(row),
			   VARSIZE(DatumGetPointer(row))) == 0)
		old_row = row = (Datum) 0;
	if (failure == NULL && old_row != (Datum) 0)
		add_update(changes, (int64) txn->final_lsn, -1, old_row, false);
	if (failure == NULL && row != (Datum) 0)
		add_update(changes, (int64) txn->final_lsn, 1, row, false);
	MemoryContextSwitchTo(old);
	if (failure != NULL)
		fail_at(changes, txn, failure);
}

static void
decoder_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, int nrelations,
				 Relation relations[], ReorderBufferChange *change)
{
	DecodedChanges *changes = ctx->output_plugin_private;

	if (changes->failure != NULL)
		return;
	for (int i = 0; i < nrelations; i++)
		if (RelationGetRelid(relations[i]) == changes->relid)
			add_update(changes, (int64) txn->final_lsn, 0, (Datum) 0, true);
}

/*
 * pg_peek's own transactions (capture_skip_own_writes) are skipped as soon
 * as their records are read, before the reorder buffer queues them: the
 * shard appends of every capture round would otherwise be decoded again.
 */
static bool
decoder_filter_origin(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	return origin_id == DoNotReplicateId;
}

/*
 * Updates were stamped with the commit LSN as they came.  A commit that
 * had updates is noted: it may still be in progress for SQL (its session
 * waits for the flush or a synchronous standby), which capture checks.
 */
static void
decoder_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	DecodedChanges *changes = ctx->output_plugin_private;

	/*
	 * A commit that changed the catalog may have made the table's later
	 * changes undecodable: the source fails right here, before its upper
	 * passes a time whose changes it cannot have.
	 */
	if (rbtxn_has_catalog_changes(txn) && changes->failure == NULL)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(changes->relid));

		if (HeapTupleIsValid(tup))
		{
			char	   *failure = decoder_undecodable((Form_pg_class) GETSTRUCT(tup));

			ReleaseSysCache(tup);
			if (failure != NULL)
			{
				fail_at(changes, txn, failure);
				return;
			}
		}
	}
	if (changes->n == changes->txn_start)
		return;
	changes->commit_xid = txn->xid;
	changes->commit_at = (int64) txn->final_lsn;
	changes->commit_from = changes->txn_start;
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = decoder_startup;
	cb->begin_cb = decoder_begin;
	cb->change_cb = decoder_change;
	cb->truncate_cb = decoder_truncate;
	cb->commit_cb = decoder_commit;
	cb->filter_by_origin_cb = decoder_filter_origin;
}
