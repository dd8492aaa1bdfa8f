/*-------------------------------------------------------------------------
 *
 * accums_functions.c
 *	  Which aggregates a group keeps as states (accums.c), and the
 *	  functions of pg_aggregate it keeps them with: an aggregate with
 *	  PostgreSQL's moving-aggregate support (a forward and an inverse
 *	  transition), or one that keeps the first of its inputs in its sort
 *	  operator's order, as min and max do (the sort operator is what lets
 *	  the planner read them from an index): its state is its result, a
 *	  retraction of any other value leaves it as it is, and only a
 *	  retraction of the value it keeps needs the group's other rows
 *	  (accums.c computes the states again from them).  Only over types
 *	  whose equal values are the same bytes, so that the value kept is the
 *	  same whatever order the rows came in.
 *
 *	  Must not evaluate anything nor touch a group (accums.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "dataflow/reduce_internal.h"

/*
 * The function that combines two of the aggregate's moving states: the
 * combine function of an aggregate whose (plain) states are built by the
 * same transition function into the same type (its own, as count's, or
 * another's: sum(int4)'s moving states are avg(int4)'s).  Combining a
 * state with itself doubles it in place for an internal state, which only
 * PostgreSQL's own combine functions are known to allow.  InvalidOid if
 * none.
 */
static Oid
moving_combine(Form_pg_aggregate form)
{
	Relation	aggregates;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			combine = InvalidOid;

	if (form->aggtransfn == form->aggmtransfn && form->aggtranstype == form->aggmtranstype)
		combine = form->aggcombinefn;
	else
	{
		aggregates = table_open(AggregateRelationId, AccessShareLock);
		scan = systable_beginscan(aggregates, InvalidOid, false, NULL, 0, NULL);
		while (!OidIsValid(combine) && HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			Form_pg_aggregate other = (Form_pg_aggregate) GETSTRUCT(tuple);

			if (other->aggtransfn == form->aggmtransfn &&
				other->aggtranstype == form->aggmtranstype)
				combine = other->aggcombinefn;
		}
		systable_endscan(scan);
		table_close(aggregates, AccessShareLock);
	}
	if (form->aggmtranstype == INTERNALOID && combine >= FirstGenbkiObjectId)
		return InvalidOid;
	return combine;
}

/* The combine function of an aggregate's moving states, looked up once. */
static Oid
moving_combine_of(Oid aggfnoid, Form_pg_aggregate form)
{
	static HTAB *known = NULL;
	Oid		   *entry;
	Oid			combine;

	if (known == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = 2 * sizeof(Oid);
		known = hash_create("pg_peek moving combine functions", 16, &ctl,
							HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(known, &aggfnoid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry[1];
	combine = moving_combine(form);
	entry = hash_search(known, &aggfnoid, HASH_ENTER, NULL);
	entry[1] = combine;
	return combine;
}

/*
 * Does the aggregate keep the first of its inputs in its sort operator's
 * order (min, max)?  Its one argument's type is its state's, whose
 * default btree order's < or > is its sort operator, its transition is
 * strict and combines states too, it starts from no state and has no
 * final function; equal values of the type are the same bytes.
 */
static bool
keeps_extreme(Aggref *aggref, HeapTuple tuple)
{
	Form_pg_aggregate form = (Form_pg_aggregate) GETSTRUCT(tuple);
	TypeCacheEntry *typentry;
	bool		noinit;
	Oid			type;

	(void) SysCacheGetAttr(AGGFNOID, tuple, Anum_pg_aggregate_agginitval, &noinit);
	if (!OidIsValid(form->aggsortop) || OidIsValid(form->aggfinalfn) || !noinit ||
		form->aggtransfn != form->aggcombinefn ||
		list_length(aggref->args) != 1 || !func_strict(form->aggtransfn))
		return false;
	type = exprType((Node *) linitial_node(TargetEntry, aggref->args)->expr);
	if (getBaseType(type) != form->aggtranstype ||
		!dataflow_equal_is_same(form->aggtranstype, aggref->inputcollid))
		return false;
	typentry = lookup_type_cache(form->aggtranstype, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
	return form->aggsortop == typentry->lt_opr || form->aggsortop == typentry->gt_opr;
}

/*
 * The functions a group keeps the aggregate's states with, if it can:
 * without DISTINCT or ORDER BY, by its moving-aggregate functions, or as
 * the extreme value it keeps (min, max).
 */
bool
accums_functions(Aggref *aggref, AccumFunctions *fns)
{
	HeapTuple	tuple;
	Form_pg_aggregate form;
	Datum		init;
	bool		found = true;

	if (aggref->aggdistinct != NIL || aggref->aggorder != NIL ||
		aggref->aggkind != AGGKIND_NORMAL || aggref->agglevelsup != 0)
		return false;
	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	form = (Form_pg_aggregate) GETSTRUCT(tuple);
	memset(fns, 0, sizeof(AccumFunctions));
	if (OidIsValid(form->aggmtransfn) && OidIsValid(form->aggminvtransfn) &&
		!form->aggmfinalextra && form->aggmfinalmodify == AGGMODIFY_READ_ONLY)
	{
		fns->transfn = form->aggmtransfn;
		fns->invfn = form->aggminvtransfn;
		fns->finalfn = form->aggmfinalfn;
		fns->combinefn = moving_combine_of(aggref->aggfnoid, form);
		fns->transtype = form->aggmtranstype;
		init = SysCacheGetAttr(AGGFNOID, tuple, Anum_pg_aggregate_aggminitval,
							   &fns->initnull);
		if (!fns->initnull)
			fns->initval = TextDatumGetCString(init);
	}
	else if (keeps_extreme(aggref, tuple))
	{
		fns->transfn = form->aggtransfn;
		fns->sortop = form->aggsortop;
		fns->combinefn = form->aggcombinefn;
		fns->transtype = form->aggtranstype;
		fns->initnull = true;
	}
	else
		found = false;
	ReleaseSysCache(tuple);
	return found;
}
