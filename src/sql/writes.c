/*-------------------------------------------------------------------------
 *
 * writes.c
 *	  peek.append, advance, write, allow_compaction, set_retention and
 *	  reset_retention: a
 *	  collection's updates appended to its shard and its upper sealed, in
 *	  the caller's transaction (times follow commit order under the catalog
 *	  row lock), and how far an object may compact.
 *	  Must not touch shared memory directly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "ipc/notify.h"
#include "sql/arguments.h"
#include "storage/catalog_write.h"
#include "storage/persist.h"

PEEK_SQL_FUNCTION(peek_append);
PEEK_SQL_FUNCTION(peek_advance);
PEEK_SQL_FUNCTION(peek_write);
PEEK_SQL_FUNCTION(peek_allow_compaction);
PEEK_SQL_FUNCTION(peek_set_retention);
PEEK_SQL_FUNCTION(peek_reset_retention);

/* append(name, rows, at, diff = 1) */
Datum
peek_append(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "collection name");
	CatalogObject *coll;
	ArrayType  *rows;
	int64		at;
	int64		diff;

	coll = arg_owned_object("append", name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	arg_check_not_source(coll, NULL);
	arg_check_not_view(coll, NULL);
	rows = arg_rows(fcinfo, 1, "rows", coll);
	at = arg_time(fcinfo, 2, "time");
	arg_require(fcinfo, 3, "diff");
	diff = PG_GETARG_INT64(3);
	if (diff == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("diff must not be zero")));
	arg_check_not_below_upper(coll, at);

	persist_append(coll->shard, rows, at, diff);
	notify_written(coll->id, coll->upper);
	PG_RETURN_VOID();
}

/* advance(name, upper): seal every time < upper */
Datum
peek_advance(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "collection name");
	CatalogObject *coll;
	int64		upper;

	coll = arg_owned_object("advance", name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	upper = arg_time(fcinfo, 1, "upper");
	arg_check_not_source(coll, NULL);
	arg_check_not_view(coll, NULL);
	if (upper < coll->upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot move the upper of collection \"%s\" back from " INT64_FORMAT " to " INT64_FORMAT,
						coll->name, coll->upper, upper),
				 errdetail("An upper only rises.")));
	if (upper > coll->upper)
	{
		catalog_set_upper(coll->id, upper);
		notify_session_upper(coll->id, upper);
	}
	/* even the same upper: the row it locked keeps others from sealing */
	notify_written(coll->id, coll->upper);
	PG_RETURN_VOID();
}

/* write(name, inserts [, deletes]): append at the upper, seal it, return it */
Datum
peek_write(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "collection name");
	CatalogObject *coll;
	ArrayType  *inserts;
	ArrayType  *deletes;
	int64		t;

	coll = arg_owned_object("write", name, PEEK_KIND_COLLECTION, CATALOG_WRITE);
	t = coll->upper;
	arg_check_not_source(coll, NULL);
	arg_check_not_view(coll, NULL);
	inserts = arg_rows(fcinfo, 1, "inserts", coll);
	deletes = PG_NARGS() > 2 ? arg_rows(fcinfo, 2, "deletes", coll) : NULL;
	if (t == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("collection \"%s\" has no time left to write at", coll->name)));
	persist_append(coll->shard, inserts, t, 1);
	if (deletes != NULL)
		persist_append(coll->shard, deletes, t, -1);
	catalog_set_upper(coll->id, t + 1);
	notify_session_upper(coll->id, t + 1);
	notify_written(coll->id, t);
	PG_RETURN_INT64(t);
}

/* allow_compaction(object, since): only raises; broadcast to every runtime */
Datum
peek_allow_compaction(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "object name");
	CatalogObject *obj;
	int64		since;

	obj = arg_owned_object("allow_compaction", name, 0, CATALOG_WRITE);
	since = arg_time(fcinfo, 1, "since");
	if (since > obj->allowed_since)
	{
		catalog_set_allowed_since(obj->id, since);
		notify_catalog_changed(obj->id);
		notify_standing_hold(obj->id, since);
	}
	PG_RETURN_VOID();
}

/*
 * set_retention(object, retention): how much history, by the wall clock,
 * the object keeps (NULL: all of it).  The maintenance runtime raises the
 * since as it goes; a longer retention keeps more from now on, it cannot
 * bring back what was compacted.
 */
Datum
peek_set_retention(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "object name");
	CatalogObject *obj;

	obj = arg_owned_object("set_retention", name, 0, CATALOG_WRITE);
	if (!PG_ARGISNULL(1))
	{
		Interval	zero = {0};

		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, PG_GETARG_DATUM(1),
											  IntervalPGetDatum(&zero))) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retention must not be negative: %s",
							DatumGetCString(DirectFunctionCall1(interval_out,
																PG_GETARG_DATUM(1))))));
	}
	catalog_set_retention(obj->id, PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1),
						  PG_ARGISNULL(1), true);
	notify_catalog_changed(obj->id);
	PG_RETURN_VOID();
}

/* reset_retention(object): the object follows pg_peek.retention again. */
Datum
peek_reset_retention(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0, "object name");
	CatalogObject *obj;

	obj = arg_owned_object("reset_retention", name, 0, CATALOG_WRITE);
	catalog_set_retention(obj->id, (Datum) 0, false, false);
	notify_catalog_changed(obj->id);
	PG_RETURN_VOID();
}
