/*-------------------------------------------------------------------------
 *
 * arguments.h
 *	  Argument checks shared by the SQL functions (arguments.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_ARGUMENTS_H
#define PEEK_SQL_ARGUMENTS_H

#include "fmgr.h"
#include "utils/array.h"

#include "storage/catalog.h"

extern CatalogObject *arg_owned_object(const char *function, const char *name, char kind,
										CatalogLock lock);
extern void arg_require(FunctionCallInfo fcinfo, int n, const char *what);
extern char *arg_text(FunctionCallInfo fcinfo, int n, const char *what);
extern char *arg_new_name(FunctionCallInfo fcinfo, int n, const char *what);
extern void arg_refuse_extension_script(const char *function);
extern void arg_check_name_free(const char *name);
extern int64 arg_time(FunctionCallInfo fcinfo, int n, const char *what);
extern int64 arg_time_or(FunctionCallInfo fcinfo, int n, const char *what, int64 if_null);
extern ArrayType *arg_rows(FunctionCallInfo fcinfo, int n, const char *what, CatalogObject *coll);
extern void arg_check_not_source(CatalogObject *coll, const char *instead);
extern void arg_check_not_view(CatalogObject *coll, const char *instead);
extern void arg_check_not_below_upper(CatalogObject *coll, int64 at);

#endif							/* PEEK_SQL_ARGUMENTS_H */
