/*-------------------------------------------------------------------------
 *
 * index_peek.c
 *	  peek.index_peek: the key (or keys) argument converted to the index's
 *	  key types by SQL's assignment rules, and the walk of the index's
 *	  pinned batches (arrange/walk.c), for the set-returning function and
 *	  for the scan node that stands in for it (index_scan.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/typcache.h"

#include "arrange/walk.h"
#include "common/rows.h"
#include "sql/index_peek.h"
#include "sql/peek_call.h"

PEEK_SQL_FUNCTION(peek_index_peek);

/*
 * A key field's conversion to its key column's type by the rules of SQL
 * assignment (as INSERT converts a value for a column: numeric 2.5 rounds
 * to int 3, real 0.1 widens to its double value, a domain's checks apply).
 * Finding the cast is planned once per session for each index, field and
 * type a peek passes: an expression over a parameter, kept by the plan
 * cache, which marks it invalid when a function or cast it uses changes
 * (it is planned again then).  It is made executable per peek, so the
 * caller's privileges and the domain's constraints are those of the moment.
 */
typedef struct KeyCoercionKey
{
	PeekObjectId index;
	int			field;
	Oid			from;
} KeyCoercionKey;

typedef struct KeyCoercion
{
	KeyCoercionKey key;
	CachedExpression *plan;
} KeyCoercion;

static HTAB *key_coercions = NULL;

/* The conversion of input (of type from) to a key column's type, unplanned. */
static Node *
key_coercion_expr(Node *input, Oid from, KeyInfo *key, int i, CatalogObject *idx)
{
	Form_pg_attribute att = TupleDescAttr(key->desc, key->attnums[i] - 1);
	Node	   *expr;

	expr = coerce_to_target_type(NULL, input, from, att->atttypid, att->atttypmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key column \"%s\" of index \"%s\" is of type %s, but the key gives %s",
						NameStr(att->attname), idx->name, format_type_be(att->atttypid),
						format_type_be(from)),
				 errhint("Cast the key field, e.g. ROW(value::%s).",
						 format_type_be(att->atttypid))));
	assign_expr_collations(NULL, expr);
	return expr;
}

/* The session's plan of a conversion (key_coercion_expr over $1). */
static Expr *
key_coercion_plan(KeyInfo *key, int i, Oid from, CatalogObject *idx)
{
	KeyCoercionKey ckey = {0};
	KeyCoercion *kc;
	Param	   *param;
	CachedExpression *plan;

	ckey.index = idx->id;
	ckey.field = i;
	ckey.from = from;
	if (key_coercions == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(KeyCoercionKey);
		ctl.entrysize = sizeof(KeyCoercion);
		ctl.hcxt = CacheMemoryContext;
		key_coercions = hash_create("pg_peek key coercions", 16, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	kc = hash_search(key_coercions, &ckey, HASH_FIND, NULL);
	if (kc != NULL && kc->plan->is_valid)
		return (Expr *) kc->plan->expr;
	if (kc != NULL)
	{
		FreeCachedExpression(kc->plan);
		hash_search(key_coercions, &ckey, HASH_REMOVE, NULL);
	}

	param = makeNode(Param);
	param->paramkind = PARAM_EXTERN;
	param->paramid = 1;
	param->paramtype = from;
	param->paramtypmod = -1;
	param->paramcollid = get_typcollation(from);
	param->location = -1;
	plan = GetCachedExpression(key_coercion_expr((Node *) param, from, key, i, idx));
	kc = hash_search(key_coercions, &ckey, HASH_ENTER, NULL);
	kc->plan = plan;
	return (Expr *) plan->expr;
}

/*
 * A row value as the parser sees ROW(...): a row expression of its fields
 * as constants, a nested anonymous row (or a NULL one) again as an
 * expression the parser would convert, so that coerce_to_target_type
 * converts it to a composite type field by field (coerce_record_to_complex),
 * refusing what does not fit with the parser's error.
 */
static Node *
row_value_expr(Datum value)
{
	HeapTupleHeader rec = DatumGetHeapTupleHeader(value);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
											  HeapTupleHeaderGetTypMod(rec));
	HeapTupleData tuple;
	RowExpr    *row = makeNode(RowExpr);

	row_tuple(rec, &tuple);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		isnull;
		Datum		field;
		Node	   *arg;

		if (att->attisdropped)
			continue;
		field = heap_getattr(&tuple, i + 1, desc, &isnull);
		if (att->atttypid == RECORDOID && isnull)
			arg = (Node *) makeConst(UNKNOWNOID, -1, InvalidOid, -2, (Datum) 0, true, false);
		else if (att->atttypid == RECORDOID)
			arg = row_value_expr(field);
		else
			arg = (Node *) makeConst(att->atttypid, att->atttypmod, att->attcollation,
									 att->attlen, field, isnull, att->attbyval);
		row->args = lappend(row->args, arg);
	}
	ReleaseTupleDesc(desc);
	row->row_typeid = RECORDOID;
	row->row_format = COERCE_IMPLICIT_CAST;
	row->location = -1;
	return (Node *) row;
}

/*
 * Convert one key field; false if the result is NULL.  An untyped literal
 * (ROW('2')) is read by the column type's input function, as the parser
 * reads a literal, and a row for a key column of a composite type
 * (ROW(ROW(1, 'b'))) is converted field by field, as the parser converts
 * ROW(...) (row_value_expr): those conversions are planned per peek.
 */
static bool
coerce_key_field(Datum *value, Oid from, KeyInfo *key, int i, CatalogObject *idx)
{
	Form_pg_attribute att = TupleDescAttr(key->desc, key->attnums[i] - 1);
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek key conversion",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ParamListInfo params = makeParamList(1);
	Expr	   *expr;
	ExprContext *econtext;
	bool		isnull;
	Datum		result;

	if (from == UNKNOWNOID)
		expr = expression_planner((Expr *) key_coercion_expr((Node *) makeConst(UNKNOWNOID, -1, InvalidOid, -2,
																				 *value, false, false),
															  from, key, i, idx));
	else if (type_is_rowtype(from) && type_is_rowtype(att->atttypid) &&
			 (from == RECORDOID ||
			  !can_coerce_type(1, &from, &att->atttypid, COERCION_ASSIGNMENT)))
		expr = expression_planner((Expr *) key_coercion_expr(row_value_expr(*value),
															  RECORDOID, key, i, idx));
	else
		expr = key_coercion_plan(key, i, from, idx);
	params->params[0].ptype = from;
	params->params[0].pflags = PARAM_FLAG_CONST;
	params->params[0].value = *value;
	params->params[0].isnull = false;
	econtext = CreateStandaloneExprContext();
	econtext->ecxt_param_list_info = params;
	result = ExecEvalExpr(ExecInitExprWithParams(expr, params), econtext, &isnull);

	/* the value outlives the conversion's memory: it is copied out */
	MemoryContextSwitchTo(old);
	if (!isnull)
		*value = datumCopy(result, att->attbyval, att->attlen);
	FreeExprContext(econtext, true);
	MemoryContextDelete(cxt);
	return !isnull;
}

/*
 * Whether a key field of type from goes through coerce_key_field: of
 * another type than its column, or of a column with a type modifier
 * (numeric(6,2), varchar(5)), which SQL assignment applies to a value of
 * the column's own type too (rounding, or 22001 for a string too long).
 */
static bool
key_field_needs_coercion(KeyInfo *key, int i, Oid from)
{
	return from != key->types[i] ||
		TupleDescAttr(key->desc, key->attnums[i] - 1)->atttypmod >= 0;
}

/*
 * A key given as its fields, in key-column order, into values, each field
 * converted to its key column's type (coerce_key_field).  False if a field
 * is NULL: the key matches no row, as = would not.  Every field is
 * converted even then, so a bad one fails as it would with no NULL.
 */
static bool
key_field_values(const KeyFields *fields, CatalogObject *idx, KeyInfo *key, Datum *values,
				 const char *hint)
{
	bool		has_null = false;

	if (fields->nfields != key->nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key of index \"%s\" has %d columns, not %d",
						idx->name, key->nkeys, fields->nfields),
				 errhint("%s", hint)));
	for (int i = 0; i < fields->nfields; i++)
	{
		Datum		value = fields->values[i];
		bool		isnull = fields->nulls[i];

		if (!isnull && key_field_needs_coercion(key, i, fields->types[i]))
			isnull = !coerce_key_field(&value, fields->types[i], key, i, idx);
		if (isnull)
			has_null = true;
		else
			values[i] = value;
	}
	return !has_null;
}

/* A key given as a row, ROW(v1, ...): its fields' values (key_field_values). */
static bool
key_row_values(HeapTupleHeader rec, CatalogObject *idx, KeyInfo *key, Datum *values,
			   const char *hint)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
											  HeapTupleHeaderGetTypMod(rec));
	HeapTupleData tuple;
	KeyFields	fields;
	bool		matchable;

	fields.nfields = desc->natts;
	fields.values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	fields.nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	fields.types = palloc(sizeof(Oid) * Max(desc->natts, 1));
	row_tuple(rec, &tuple);
	heap_deform_tuple(&tuple, desc, fields.values, fields.nulls);
	for (int i = 0; i < desc->natts; i++)
		fields.types[i] = TupleDescAttr(desc, i)->atttypid;
	matchable = key_field_values(&fields, idx, key, values, hint);
	ReleaseTupleDesc(desc);
	return matchable;
}

/*
 * The state of an index peek: its walk, room for a single key, and that
 * key's fields if the caller evaluated them (else NULL: the key argument).
 */
typedef struct IndexPeekState
{
	const KeyFields *key_fields;
	WalkSpec	spec;
	WalkKey		one;
	Datum		one_values[INDEX_MAX_KEYS];
} IndexPeekState;

/* The key argument: one key, ROW(v1, ...), or its fields as evaluated. */
static void
key_arg(FunctionCallInfo fcinfo, int n, CatalogObject *idx, IndexPeekState *st)
{
	WalkSpec   *spec = &st->spec;
	const char *hint = "Pass the key as ROW(v1, ...) in key-column order.";
	bool		matchable;

	spec->has_key = true;
	spec->keys = &st->one;
	st->one.values = st->one_values;
	if (st->key_fields != NULL)
		matchable = key_field_values(st->key_fields, idx, spec->key, st->one_values, hint);
	else
		matchable = key_row_values(PG_GETARG_HEAPTUPLEHEADER(n), idx, spec->key,
								   st->one_values, hint);
	spec->nkeys = matchable ? 1 : 0;
	if (spec->nkeys == 1)
		st->one.hash = batch_key_hash_values(spec->key, st->one_values);
}

/*
 * The keys argument: an array of keys as the key argument takes them
 * (ARRAY[ROW(1, 'a'), ...]), or for an index of one key column an array
 * of its values (ARRAY[1, 2]), converted as a key field is.  The rows of
 * every key are answered once, as WHERE k = ANY(keys) answers them: a key
 * given twice does not repeat them.  A NULL element or a key with a NULL
 * field matches no row, as in = ANY.
 */
static void
keys_arg(FunctionCallInfo fcinfo, int n, CatalogObject *idx, WalkSpec *spec)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(n);
	Oid			elemtype = ARR_ELEMTYPE(array);
	KeyInfo    *key = spec->key;
	bool		rows = type_is_rowtype(elemtype) &&
		!(key->nkeys == 1 && elemtype == key->types[0]);
	const char *hint = "Pass keys as ARRAY[ROW(v1, ...), ...] in key-column order.";
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Datum	   *values;

	if (!rows && key->nkeys != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("key of index \"%s\" has %d columns, but keys gives values of type %s",
						idx->name, key->nkeys, format_type_be(elemtype)),
				 errhint("%s", hint)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign, &elems, &nulls, &nelems);
	spec->has_key = true;
	spec->nkeys = 0;
	spec->keys = palloc(sizeof(WalkKey) * Max(nelems, 1));
	values = palloc(sizeof(Datum) * key->nkeys * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
	{
		WalkKey    *k = &spec->keys[spec->nkeys];
		bool		matchable;

		if (nulls[i])
			continue;
		k->values = values + (Size) spec->nkeys * key->nkeys;
		if (rows)
			matchable = key_row_values(DatumGetHeapTupleHeader(elems[i]), idx, key, k->values,
									   hint);
		else
		{
			k->values[0] = elems[i];
			matchable = !key_field_needs_coercion(key, 0, elemtype) ||
				coerce_key_field(&k->values[0], elemtype, key, 0, idx);
		}
		if (!matchable)
			continue;
		k->hash = batch_key_hash_values(key, k->values);
		spec->nkeys++;
	}
	walk_sort_keys(spec);
}

/*
 * The walk of an index: its key or keys, if the peek passed them.  The
 * keys argument is missing when the library is newer than the extension's
 * functions (before ALTER EXTENSION pg_peek UPDATE).
 */
static KeyInfo *
prepare_index_walk(FunctionCallInfo fcinfo, PeekedObject *peeked, void *state)
{
	IndexPeekState *st = state;
	WalkSpec   *spec = &st->spec;
	CatalogObject *idx = &peeked->obj;
	bool		has_keys = PG_NARGS() > 5 && !PG_ARGISNULL(5);

	if (has_keys && !PG_ARGISNULL(INDEX_PEEK_KEY_ARG))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("index_peek takes key or keys, not both")));
	spec->name = idx->name;
	spec->row_type = idx->row_type;
	spec->key = peeked->key ? peeked->key :
		batch_keyinfo_build(idx->row_type, idx->nkeys, idx->attnums);
	if (!PG_ARGISNULL(INDEX_PEEK_KEY_ARG))
		key_arg(fcinfo, INDEX_PEEK_KEY_ARG, idx, st);
	else if (has_keys)
		keys_arg(fcinfo, 5, idx, spec);
	return spec->key;
}

static void
walk_index(CatalogObject *idx, PeekTicket *ticket, int64 limit, Tuplestorestate *out,
		   void *state)
{
	WalkSpec   *spec = &((IndexPeekState *) state)->spec;

	spec->time = ticket->time;
	spec->limit = limit;
	spec->out = out;
	walk_batches(ticket->handle, spec);
}

static const PeekCallKind index_peek_kind = {
	PEEK_KIND_INDEX, "index name", 3, 4, prepare_index_walk, walk_index
};

/*
 * index_peek's answer into result, from its arguments in fcinfo (its
 * flinfo has the call's expression): by the function and by the scan node
 * that stands in for it (index_scan.c), which may pass a ROW(...) key as
 * its evaluated fields (key_fields) rather than as a record.
 */
void
index_peek_collect(FunctionCallInfo fcinfo, const KeyFields *key_fields,
				   Tuplestorestate *result)
{
	IndexPeekState st = {0};

	st.key_fields = key_fields;
	peek_call_collect(fcinfo, &index_peek_kind, &st, result);
}

/* index_peek(rowtype anyelement, index, key record, as_of, limit, keys anycompatiblearray) */
Datum
peek_index_peek(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	/*
	 * Materialize mode: a function scan keeps a set-returning function's
	 * rows in a tuplestore whatever its mode, so handing it ours saves a
	 * call per row.
	 */
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	index_peek_collect(fcinfo, NULL, rsinfo->setResult);
	return (Datum) 0;
}
