/*-------------------------------------------------------------------------
 *
 * peek_call.h
 *	  A peek function's call up to its walk (peek_call.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_PEEK_CALL_H
#define PEEK_SQL_PEEK_CALL_H

#include "access/tupconvert.h"
#include "fmgr.h"
#include "utils/tuplestore.h"

#include "ipc/batch.h"
#include "peek/peek.h"
#include "storage/catalog.h"

/* An object a peek found: cached by name for the session's later peeks. */
typedef struct PeekedObject
{
	char		name[NAMEDATALEN * 2];	/* key */
	CatalogObject obj;
	Oid			rowtype;		/* what the peek passed (a source's table's?) */
	KeyInfo    *key;			/* indexes: made with the row type's descriptor */
	Oid			row_relid;		/* the row type's relation: its change drops the key */
	uint64		live_checked;	/* registry_is_live's stamp */
} PeekedObject;

/*
 * One kind of peek: its arguments, and what it does around the skeleton
 * (peek_call_collect).  prepare runs once the object is found and checked, and
 * returns the key to cache with it; walk reads at the ticket's time.
 */
typedef struct PeekCallKind
{
	char		kind;
	const char *name_label;		/* the name argument, for messages */
	int			as_of_arg;
	int			limit_arg;
	KeyInfo    *(*prepare) (FunctionCallInfo fcinfo, PeekedObject *peeked, void *state);
	void		(*walk) (CatalogObject *obj, PeekTicket *ticket, int64 limit,
						 Tuplestorestate *out, void *state);
} PeekCallKind;

/* A peek found, checked and gated: what its walk needs. */
typedef struct OpenedPeek
{
	CatalogObject *obj;			/* the cached entry's: read it at once */
	PeekTicket	ticket;
	TupleConversionMap *map;	/* rows to the caller's row type, or NULL */
	int64		limit;
} OpenedPeek;

extern void peek_call_open(FunctionCallInfo fcinfo, const PeekCallKind *pk, void *state,
						   OpenedPeek *op);
extern void peek_call_collect(FunctionCallInfo fcinfo, const PeekCallKind *pk, void *state,
							  Tuplestorestate *result);
extern void peek_call_forget(const char *name);

#endif							/* PEEK_SQL_PEEK_CALL_H */
