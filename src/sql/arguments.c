/*-------------------------------------------------------------------------
 *
 * arguments.c
 *	  Argument checks shared by the SQL functions: a required argument, a
 *	  name, a time, rows of a collection's type, the object a changing
 *	  function names; every check raises before anything is written, so bad
 *	  input changes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "sql/arguments.h"
#include "storage/catalog.h"
#include "storage/catalog_write.h"
#include "storage/standby_replay.h"

/*
 * The object that a function changing the catalog names: refused on a
 * standby, looked up with the lock the change needs, and owned by the user.
 * Privileges come before any other check, so that nothing about another
 * role's object leaks.
 */
CatalogObject *
arg_owned_object(const char *function, const char *name, char kind, CatalogLock lock)
{
	CatalogObject *obj;

	standby_refuse_writes(function);
	obj = catalog_lookup(name, kind, lock);
	catalog_check_owner(obj);
	return obj;
}

/* A new object's name: no object has it (42710). */
void
arg_check_name_free(const char *name)
{
	if (catalog_name_taken(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pg_peek object \"%s\" already exists", name)));
}

/* A required argument: NULL is an error that names it. */
void
arg_require(FunctionCallInfo fcinfo, int n, const char *what)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what)));
}

char *
arg_text(FunctionCallInfo fcinfo, int n, const char *what)
{
	arg_require(fcinfo, n, what);
	return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* The name of an object being created: neither NULL nor empty. */
char *
arg_new_name(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *name = arg_text(fcinfo, n, what);

	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("%s must not be empty", what)));
	return name;
}

/*
 * Refuse to create an object in an extension's script (CREATE EXTENSION,
 * ALTER EXTENSION ... UPDATE): its shard, row type and PostgreSQL view
 * would become members of that extension, and DROP EXTENSION would drop
 * them under the object's catalog row, which stayed behind failed.
 */
void
arg_refuse_extension_script(const char *function)
{
	if (creating_extension)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run in the script of extension \"%s\"",
						function, get_extension_name(CurrentExtensionObject)),
				 errdetail("What it creates would become a member of that extension, and DROP EXTENSION would drop it under pg_peek's catalog.")));
}

int64
arg_time(FunctionCallInfo fcinfo, int n, const char *what)
{
	int64		t;

	arg_require(fcinfo, n, what);
	t = PG_GETARG_INT64(n);
	if (t < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative: " INT64_FORMAT, what, t)));
	return t;
}

/* An array of the collection's row type, without NULL elements. */
ArrayType *
arg_rows(FunctionCallInfo fcinfo, int n, const char *what, CatalogObject *coll)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, n);
	Oid			elemtype = get_element_type(argtype);
	ArrayType  *rows;

	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what),
				 errhint("Pass an empty array for no rows.")));
	if (elemtype != coll->row_type)
	{
		/* a failed collection's row type may be gone: say why it failed instead */
		catalog_raise_if_failed(coll->id, coll->kind, coll->name);
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s are of type %s, but collection \"%s\" holds rows of type %s",
						what, format_type_be(argtype), coll->name, format_type_be(coll->row_type)),
				 errhint("Cast the array, e.g. ARRAY[...]::%s[].", format_type_be(coll->row_type))));
	}
	rows = PG_GETARG_ARRAYTYPE_P(n);
	if (array_contains_nulls(rows))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL rows", what)));
	return rows;
}

/* A source's rows come from its table only. */
void
arg_check_not_source(CatalogObject *coll, const char *instead)
{
	char	   *table;

	if (!OidIsValid(coll->source))
		return;
	table = get_rel_name(coll->source);
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is a source: its rows come from table %s", coll->name,
					table ? table : "(dropped)"),
			 instead ? errhint("%s", instead) : 0));
}

/* A view's rows come from its query only. */
void
arg_check_not_view(CatalogObject *coll, const char *instead)
{
	if (coll->kind != PEEK_KIND_VIEW)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is a view: its rows come from its query", coll->name),
			 instead ? errhint("%s", instead) : 0));
}

void
arg_check_not_below_upper(CatalogObject *coll, int64 at)
{
	if (at < coll->upper)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot append to collection \"%s\" at time " INT64_FORMAT ": its upper is " INT64_FORMAT,
						coll->name, at, coll->upper),
				 errdetail("Times below the upper are sealed.")));
}

int64
arg_time_or(FunctionCallInfo fcinfo, int n, const char *what, int64 if_null)
{
	return PG_ARGISNULL(n) ? if_null : arg_time(fcinfo, n, what);
}

