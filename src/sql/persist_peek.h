/*-------------------------------------------------------------------------
 *
 * persist_peek.h
 *	  A persist peek opened from persist_peek's arguments and read a row at
 *	  a time: what the SQL function shares with the scan node (scan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_PERSIST_PEEK_H
#define PEEK_SQL_PERSIST_PEEK_H

#include "access/htup.h"
#include "fmgr.h"

typedef struct PersistPeek PersistPeek;

extern Datum peek_persist_peek(PG_FUNCTION_ARGS);
extern PersistPeek *persist_peek_open(FunctionCallInfo fcinfo, int64 rows_wanted);
extern bool persist_peek_advance(PersistPeek *p, bool *again);
extern int64 persist_peek_count(PersistPeek *p);
extern HeapTuple persist_peek_tuple(PersistPeek *p);
extern void persist_peek_rewind(PersistPeek *p);
extern void persist_peek_close(PersistPeek *p);

#endif							/* PEEK_SQL_PERSIST_PEEK_H */
