/*-------------------------------------------------------------------------
 *
 * scan_call.h
 *	  What the peek scan nodes share (scan_call.c): when a node may stand in
 *	  for a peek function's function scan, its plan's scan tuple, and the
 *	  call's checks and arguments at execution.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_SCAN_CALL_H
#define PEEK_SQL_SCAN_CALL_H

#include "commands/explain.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

/* A planned call of a peek function, as a scan node executes it. */
typedef struct ScanCall
{
	FuncExpr   *call;			/* the planned call, its arguments fixed */
	List	   *args;			/* their ExprStates (NULL: a Const) */
	FmgrInfo	flinfo;			/* the call's expression, for its arguments' types */
	List	   *planned_types;	/* the row type's columns' types as planned */
	Bitmapset  *arg_params;		/* the executor parameters the arguments use */
	bool		arg_params_known;	/* arg_params found (at the first rescan) */
	Bitmapset  *own_args;		/* arguments the node evaluates itself (set
								 * before scan_call_begin; scan_call_args
								 * leaves them) */
} ScanCall;

extern FuncExpr *scan_call_standin(RelOptInfo *rel, Index rti, RangeTblEntry *rte,
								   PGFunction function, const char *symbol);
extern CustomPath *scan_call_path(RelOptInfo *rel, const CustomPathMethods *methods);
extern CustomScan *scan_call_plan(PlannerInfo *root, Index rti, List *tlist, List *clauses,
								  CustomPath *best_path, List **types);
extern void scan_call_begin(ScanCall *sc, CustomScanState *node, List *planned_types);
extern void scan_call_use_slots(CustomScanState *node, const TupleTableSlotOps *ops);
extern void scan_call_args(ScanCall *sc, CustomScanState *node, FunctionCallInfo fcinfo);
extern bool scan_call_args_changed(ScanCall *sc, CustomScanState *node);
extern void scan_call_explain(ScanCall *sc, CustomScanState *node, List *ancestors,
							  ExplainState *es);

#endif							/* PEEK_SQL_SCAN_CALL_H */
