/*-------------------------------------------------------------------------
 *
 * index_peek.h
 *	  An index peek's answer from index_peek's arguments: what the SQL
 *	  function shares with the scan node that stands in for it
 *	  (index_scan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_INDEX_PEEK_H
#define PEEK_SQL_INDEX_PEEK_H

#include "fmgr.h"
#include "utils/tuplestore.h"

/* index_peek's key argument: its position, and a key given field by field */
#define INDEX_PEEK_KEY_ARG	2

typedef struct KeyFields
{
	int			nfields;
	Datum	   *values;
	bool	   *nulls;
	Oid		   *types;
} KeyFields;

extern Datum peek_index_peek(PG_FUNCTION_ARGS);
extern void index_peek_collect(FunctionCallInfo fcinfo, const KeyFields *key_fields,
							   Tuplestorestate *result);

#endif							/* PEEK_SQL_INDEX_PEEK_H */
