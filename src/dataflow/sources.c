/*-------------------------------------------------------------------------
 *
 * sources.c
 *	  A captured table standing for its source in a view's query: FROM t,
 *	  where a source captures the table t, reads that source as
 *	  peek.persist_peek(NULL::<the source's row type>, '<source>') does,
 *	  the query's names of the table's columns resolved as the table's;
 *	  so does peek.persist_peek(NULL::t,
 *	  '<source>'), the source read as its table's row type, as a peek may
 *	  read it.  The source's row type is a copy of
 *	  the table's without its dropped columns, made when the source was
 *	  (a column renamed since keeps its place), so the query's references
 *	  to the table's columns are renumbered for it by position (its Vars,
 *	  and the columns a join of it lists), in a UNION ALL's branches, its
 *	  subqueries in FROM and its WITH queries too (flatten.c pulls them up after)
 *	  and in its expressions (EXISTS, IN (SELECT ...): semijoins.c),
 *	  and refused (42804) if the types no longer match.  A column added to
 *	  the table since the source was made is not in the source's rows: a
 *	  query that reads it is refused (0A000, naming it), and the joins of
 *	  the table leave it out of their columns (their lists, names and
 *	  aliases, and the references to their later columns renumbered), so
 *	  that the kept text names the columns the query reads as it did.
 *	  A table that no source
 *	  captures, or that more than one does, is refused (0A000, naming it),
 *	  as are its inheritance children (its source has its own rows only),
 *	  a partitioned table (no source captures one) and TABLESAMPLE; one the user may not SELECT from is 42501.
 *	  Done on the analyzed query, before plan.c checks it: the kept text
 *	  names the source, so the maintenance runtime plans it again the same
 *	  whatever sources are made later; the PostgreSQL view beside the view
 *	  depends on the table and its columns the view reads, so that they
 *	  cannot be dropped (2BP01).
 *	  The other way, dataflow_read_tables reads a kept query's sources as
 *	  their tables again, for those dependencies: at create_view and after
 *	  a restore alike.
 *
 *	  Likewise a maintained view's PostgreSQL view in FROM stands for the
 *	  view, read as peek.persist_peek(NULL::<its row type>, '<view>'), which
 *	  the PostgreSQL view's body is (its columns are the view's row type's):
 *	  a view over views names them as a user reads them.  Another view is
 *	  refused (0A000, naming it), one the user may not SELECT from is 42501.
 *
 *	  Reads the catalog only (which sources capture a table, which view has
 *	  a row type).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "common/rows.h"
#include "dataflow/dataflow.h"
#include "storage/catalog_views.h"

/*
 * peek.persist_peek(anyelement, text, bigint, bigint), through which a view
 * reads its inputs and its PostgreSQL view reads it; or InvalidOid
 */
Oid
dataflow_persist_peek_oid(void)
{
	Oid			argtypes[4] = {ANYELEMENTOID, TEXTOID, INT8OID, INT8OID};

	return LookupFuncName(list_make2(makeString(PEEK_SCHEMA), makeString("persist_peek")),
						  4, argtypes, true);
}

/*
 * The one source that captures the table of rte, which the user may read
 * (first: nothing is told of its sources otherwise).
 */
static CatalogObject *
table_source(RangeTblEntry *rte)
{
	List	   *sources;
	char	   *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
												   get_rel_name(rte->relid));

	if (pg_class_aclcheck(rte->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(rte->relid));
	/* a source has the table's own rows: a partitioned table has none */
	if (rte->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support reading partitioned table %s", table),
				 errdetail("A source captures a table's own rows; a partitioned table's are its partitions'."),
				 errhint("Read a partition's source.")));
	/* ... not its children's */
	if (rte->inh && find_inheritance_children(rte->relid, NoLock) != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support reading table %s with its inheritance children", table),
				 errdetail("A table's source captures the table's own rows, not its children's."),
				 errhint("Read its own rows with FROM ONLY %s.", table)));
	if (rte->tablesample != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support TABLESAMPLE")));
	sources = catalog_sources_of(rte->relid);
	if (sources == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support reading table %s: no source captures it", table),
				 errdetail("A table in a view's query stands for the source that captures it."),
				 errhint("Create a source for it with peek.create_source('name', %s).",
						 quote_literal_cstr(table))));
	if (list_length(sources) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support reading table %s: sources \"%s\" and \"%s\" both capture it",
						table, ((CatalogObject *) linitial(sources))->name,
						((CatalogObject *) lsecond(sources))->name),
				 errdetail("A table in a view's query stands for the one source that captures it."),
				 errhint("Read one of them by name: peek.persist_peek(NULL::%s, %s).",
						 table, quote_literal_cstr(((CatalogObject *) linitial(sources))->name))));
	return linitial(sources);
}

/*
 * A join of the table rtindex lists the table's columns it merges by
 * number (joinleftcols, joinrightcols: ruleutils names the join's columns
 * by them): renumbered as the Vars are.
 */
static void
renumber_join_columns(Query *query, Node *node, int rtindex, AttrMap *map)
{
	JoinExpr   *join;
	RangeTblEntry *rte;

	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			renumber_join_columns(query, lfirst(lc), rtindex, map);
		return;
	}
	if (!IsA(node, JoinExpr))
		return;
	join = (JoinExpr *) node;
	renumber_join_columns(query, join->larg, rtindex, map);
	renumber_join_columns(query, join->rarg, rtindex, map);
	rte = rt_fetch(join->rtindex, query->rtable);
	for (int side = 0; side < 2; side++)
	{
		Node	   *arg = side == 0 ? join->larg : join->rarg;
		List	   *cols = side == 0 ? rte->joinleftcols : rte->joinrightcols;
		List	   *renumbered = NIL;
		ListCell   *lc;

		if (!IsA(arg, RangeTblRef) || ((RangeTblRef *) arg)->rtindex != rtindex)
			continue;
		foreach(lc, cols)
			renumbered = lappend_int(renumbered, lfirst_int(lc) > 0 ? map->attnums[lfirst_int(lc) - 1] : 0);
		if (side == 0)
			rte->joinleftcols = renumbered;
		else
			rte->joinrightcols = renumbered;
	}
}

/*
 * The map from the table's columns to the source's: its first live columns
 * in order, as capture copies a row (decoder.c) and a peek reads the source
 * as the table's row type (by position: a column renamed since the source
 * was made keeps its place, not its name); a column added since maps to
 * none.  A table whose live columns no longer have the source's types is
 * refused, as such a peek is.
 */
static AttrMap *
source_columns(TupleDesc table_desc, TupleDesc source_desc, Oid from, CatalogObject *src)
{
	AttrMap    *map = make_attrmap(table_desc->natts);
	int			live = 0;

	if (!rows_match_table(table_desc, source_desc, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the row type of table %s no longer matches source \"%s\"",
						format_type_be(from), src->name),
				 errhint("Drop the source and create it again.")));
	for (int i = 0; i < table_desc->natts && live < source_desc->natts; i++)
		if (!TupleDescAttr(table_desc, i)->attisdropped)
			map->attnums[i] = ++live;
	return map;
}

typedef struct UncapturedColumns
{
	int			rtindex;
	int			sublevels_up;
	AttrMap    *map;
	AttrNumber	found;			/* a column read that maps to none */
} UncapturedColumns;

static bool
find_uncaptured(Node *node, UncapturedColumns *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == context->rtindex && var->varlevelsup == context->sublevels_up &&
			var->varattno > 0 && context->map->attnums[var->varattno - 1] == 0)
			context->found = var->varattno;
		return context->found != 0;
	}
	if (IsA(node, Query))
	{
		bool		found;

		context->sublevels_up++;
		found = query_tree_walker((Query *) node, find_uncaptured, context,
								  QTW_IGNORE_JOINALIASES);
		context->sublevels_up--;
		return found;
	}
	return expression_tree_walker(node, find_uncaptured, context);
}

/*
 * A column added to the table since its source was made is not in the
 * source's rows: a query that reads one is refused (0A000, naming it).  The
 * query's joins of the table list it among their columns (joinaliasvars):
 * there it is left out, as the rewriter leaves out a dropped column.
 */
static void
refuse_uncaptured_columns(Query *query, int rtindex, AttrMap *map, TupleDesc table_desc,
						  CatalogObject *src)
{
	UncapturedColumns context = {rtindex, 0, map, 0};
	ListCell   *lc;

	(void) query_tree_walker(query, find_uncaptured, &context, QTW_IGNORE_JOINALIASES);
	if (context.found != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of table \"%s\" is not captured by source \"%s\"",
						NameStr(TupleDescAttr(table_desc, context.found - 1)->attname),
						get_rel_name(src->source), src->name),
				 errdetail("A source captures the columns its table had when it was created."),
				 errhint("Drop the source and create it again to capture the new columns.")));
	foreach(lc, query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		ListCell   *alias;

		if (rte->rtekind != RTE_JOIN)
			continue;
		foreach(alias, rte->joinaliasvars)
		{
			Var		   *var = lfirst(alias);

			if (var != NULL && IsA(var, Var) && var->varno == rtindex &&
				var->varlevelsup == 0 && var->varattno > 0 &&
				map->attnums[var->varattno - 1] == 0)
				lfirst(alias) = NULL;
		}
	}
}

/* renumber_join_vars's context: each join's new column numbers by its old */
typedef struct JoinColumnMaps
{
	int		  **maps;			/* by rtindex: NULL for a join that kept all */
	int			nmaps;
	int			sublevels_up;
} JoinColumnMaps;

static AttrNumber
renumbered_join_column(JoinColumnMaps *context, int varno, AttrNumber attno)
{
	if (varno < 1 || varno > context->nmaps || context->maps[varno] == NULL || attno <= 0)
		return attno;
	if (context->maps[varno][attno - 1] == 0)
		elog(ERROR, "a join column left out of the query is read");
	return context->maps[varno][attno - 1];
}

/*
 * References to a join's columns (varattno for a merged column, and
 * varattnosyn, which ruleutils prints j.col by) renumbered for the columns
 * drop_join_columns left.
 */
static bool
renumber_join_vars(Node *node, JoinColumnMaps *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varlevelsup == context->sublevels_up)
		{
			var->varattno = renumbered_join_column(context, var->varno, var->varattno);
			var->varattnosyn = renumbered_join_column(context, var->varnosyn, var->varattnosyn);
		}
		return false;
	}
	if (IsA(node, Query))
	{
		bool		found;

		context->sublevels_up++;
		found = query_tree_walker((Query *) node, renumber_join_vars, context, 0);
		context->sublevels_up--;
		return found;
	}
	return expression_tree_walker(node, renumber_join_vars, context);
}

static List *
renumbered_columns(List *cols, int *map)
{
	List	   *renumbered = NIL;
	ListCell   *lc;

	foreach(lc, cols)
		renumbered = lappend_int(renumbered, lfirst_int(lc) > 0 ? map[lfirst_int(lc) - 1] : 0);
	return renumbered;
}

/*
 * The joins under node without the columns refuse_uncaptured_columns left
 * out (their alias Vars NULL), inner joins first: gone from the join's
 * column lists, names and alias, so that the kept text (ruleutils names a
 * join's columns by what its inputs list) names the others as the query
 * did.  A join of a join lists its columns by their new numbers.
 */
static void
drop_join_columns_in(Query *query, Node *node, int **maps)
{
	JoinExpr   *join;
	RangeTblEntry *rte;
	int			nmerged;
	int			nleft;
	int			kept = 0;
	int		   *map;
	List	   *vars = NIL;
	List	   *names = NIL;
	List	   *aliases = NIL;
	List	   *left = NIL;
	List	   *right = NIL;

	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			drop_join_columns_in(query, lfirst(lc), maps);
		return;
	}
	if (!IsA(node, JoinExpr))
		return;
	join = (JoinExpr *) node;
	drop_join_columns_in(query, join->larg, maps);
	drop_join_columns_in(query, join->rarg, maps);
	rte = rt_fetch(join->rtindex, query->rtable);
	if (IsA(join->larg, JoinExpr) && maps[((JoinExpr *) join->larg)->rtindex] != NULL)
		rte->joinleftcols = renumbered_columns(rte->joinleftcols,
											   maps[((JoinExpr *) join->larg)->rtindex]);
	if (IsA(join->rarg, JoinExpr) && maps[((JoinExpr *) join->rarg)->rtindex] != NULL)
		rte->joinrightcols = renumbered_columns(rte->joinrightcols,
												maps[((JoinExpr *) join->rarg)->rtindex]);
	if (!list_member(rte->joinaliasvars, NULL))
		return;
	map = palloc0(sizeof(int) * list_length(rte->joinaliasvars));
	nmerged = rte->joinmergedcols;
	nleft = list_length(rte->joinleftcols) - nmerged;
	for (int i = 0; i < list_length(rte->joinaliasvars); i++)
	{
		if (list_nth(rte->joinaliasvars, i) == NULL)
			continue;
		map[i] = ++kept;
		vars = lappend(vars, list_nth(rte->joinaliasvars, i));
		names = lappend(names, list_nth(rte->eref->colnames, i));
		if (rte->alias != NULL && i < list_length(rte->alias->colnames))
			aliases = lappend(aliases, list_nth(rte->alias->colnames, i));
		if (i < nmerged + nleft)
			left = lappend_int(left, list_nth_int(rte->joinleftcols, i));
		if (i < nmerged)
			right = lappend_int(right, list_nth_int(rte->joinrightcols, i));
		else if (i >= nmerged + nleft)
			right = lappend_int(right, list_nth_int(rte->joinrightcols, i - nleft));
	}
	rte->joinaliasvars = vars;
	rte->eref = makeAlias(rte->eref->aliasname, names);
	if (rte->alias != NULL)
	{
		rte->alias = makeAlias(rte->alias->aliasname, aliases);
		join->alias = rte->alias;
	}
	rte->joinleftcols = left;
	rte->joinrightcols = right;
	maps[join->rtindex] = map;
}

/* The query's joins without the columns left out, and what reads them. */
static void
drop_join_columns(Query *query)
{
	JoinColumnMaps context = {NULL, list_length(query->rtable), 0};

	context.maps = palloc0(sizeof(int *) * (context.nmaps + 1));
	drop_join_columns_in(query, (Node *) query->jointree, context.maps);
	(void) query_tree_walker(query, renumber_join_vars, &context, 0);
}

/* peek.persist_peek(NULL::<obj's row type>, '<obj's name>') */
static FuncExpr *
persist_peek_call(CatalogObject *obj)
{
	FuncExpr   *call;

	call = makeFuncExpr(dataflow_persist_peek_oid(), obj->row_type,
						list_make2(makeNullConst(obj->row_type, -1, InvalidOid),
								   makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
											 CStringGetTextDatum(obj->name), false, false)),
						InvalidOid, DEFAULT_COLLATION_OID, COERCE_EXPLICIT_CALL);
	call->funcretset = true;
	return call;
}

/*
 * Make the range table entry rtindex of the query (a copy of the caller's)
 * the call, a persist peek of ncolumns columns, under the entry's alias and
 * column names.  No permissions are left to check: the view's inputs'
 * readers are checked as their own (view_ddl.c).
 */
static void
read_as_peek(Query *query, int rtindex, FuncExpr *call, int ncolumns)
{
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	RangeTblFunction *rtfunc = makeNode(RangeTblFunction);
	RangeTblEntry *peek = makeNode(RangeTblEntry);

	rtfunc->funcexpr = (Node *) call;
	rtfunc->funccolcount = ncolumns;
	peek->rtekind = RTE_FUNCTION;
	peek->functions = list_make1(rtfunc);
	peek->alias = rte->alias;
	peek->eref = rte->eref;
	peek->lateral = rte->lateral;
	peek->inFromCl = rte->inFromCl;
	list_nth_cell(query->rtable, rtindex - 1)->ptr_value = peek;
}

/*
 * Read the range table entry rtindex of the query, a table of row type
 * from or a persist peek of the source as that row type, as the source
 * src: references to the table's columns renumbered for the source's row
 * type, the entry made its persist peek, its columns under the source's
 * attribute names but where the query renamed them (an alias list, which
 * plan.c refuses).  Returns the query, a copy.
 */
static Query *
read_as_source(Query *query, int rtindex, Oid from, CatalogObject *src)
{
	TupleDesc	table_desc = lookup_rowtype_tupdesc_copy(from, -1);
	TupleDesc	source_desc = lookup_rowtype_tupdesc_copy(src->row_type, -1);
	AttrMap    *map = source_columns(table_desc, source_desc, from, src);
	bool		whole_row;
	RangeTblEntry *rte;
	FuncExpr   *call;
	List	   *names = NIL;

	query = copyObject(query);
	refuse_uncaptured_columns(query, rtindex, map, table_desc, src);
	/* (a whole-row reference stays as it is: plan.c refuses it) */
	query = (Query *) map_variable_attnos((Node *) query, rtindex, 0, map, InvalidOid,
										  &whole_row);
	renumber_join_columns(query, (Node *) query->jointree, rtindex, map);
	drop_join_columns(query);
	rte = rt_fetch(rtindex, query->rtable);
	rte->eref = copyObject(rte->eref);	/* (the copy shares it with the query) */

	for (int i = 0; i < source_desc->natts; i++)
	{
		char	   *name = NameStr(TupleDescAttr(source_desc, i)->attname);

		for (int j = 0; j < map->maplen; j++)
		{
			char	   *given = strVal(list_nth(rte->eref->colnames, j));

			if (map->attnums[j] == i + 1 &&
				strcmp(given, NameStr(TupleDescAttr(table_desc, j)->attname)) != 0)
				name = given;
		}
		names = lappend(names, makeString(pstrdup(name)));
	}
	rte->eref->colnames = names;

	if (rte->rtekind == RTE_FUNCTION)
	{
		/* (its other arguments stay, for plan.c to refuse) */
		call = (FuncExpr *) copyObject(linitial_node(RangeTblFunction, rte->functions)->funcexpr);
		linitial(call->args) = makeNullConst(src->row_type, -1, InvalidOid);
		call->funcresulttype = src->row_type;
	}
	else
		call = persist_peek_call(src);
	read_as_peek(query, rtindex, call, source_desc->natts);
	return query;
}

/*
 * The collection that a persist peek in FROM reads by constants,
 * peek.persist_peek(NULL::t, 'name'), with the row type t it reads it as;
 * else NULL.
 */
static CatalogObject *
peeked_collection(RangeTblEntry *rte, Oid *row_type)
{
	FuncExpr   *call;
	Const	   *type;
	Const	   *name;
	CatalogObject *coll;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1)
		return NULL;
	call = (FuncExpr *) linitial_node(RangeTblFunction, rte->functions)->funcexpr;
	if (!IsA(call, FuncExpr) || call->funcid != dataflow_persist_peek_oid() ||
		list_length(call->args) < 2 || !IsA(linitial(call->args), Const) ||
		!IsA(lsecond(call->args), Const))
		return NULL;
	type = linitial(call->args);
	name = lsecond(call->args);
	if (name->constisnull || name->consttype != TEXTOID)
		return NULL;
	coll = catalog_find(TextDatumGetCString(name->constvalue));
	if (coll == NULL || coll->kind != PEEK_KIND_COLLECTION)
		return NULL;
	*row_type = type->consttype;
	return coll;
}

/*
 * The source that a persist peek in FROM reads as its table's row type,
 * peek.persist_peek(NULL::t, 'source'), as a peek may; else NULL.
 */
static CatalogObject *
peeked_source(RangeTblEntry *rte)
{
	Oid			row_type;
	CatalogObject *src = peeked_collection(rte, &row_type);

	if (src == NULL || !OidIsValid(get_typ_typrelid(row_type)) ||
		src->source != get_typ_typrelid(row_type))
		return NULL;
	return src;
}

/*
 * The maintained view whose PostgreSQL view rte reads, which the user may
 * read (first: nothing is told of it otherwise); another view is refused.
 */
static CatalogObject *
pg_view_view(RangeTblEntry *rte)
{
	CatalogObject *view;

	if (pg_class_aclcheck(rte->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_VIEW, get_rel_name(rte->relid));
	view = catalog_view_of_row_type(get_rel_type_id(rte->relid));
	if (view == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("maintained views do not support reading view %s: it is not a maintained view",
						quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
												   get_rel_name(rte->relid))),
				 errdetail("A view in a view's query stands for the maintained view it is the PostgreSQL view of."),
				 errhint("Read its query's tables, or make it a maintained view with peek.create_view.")));
	return view;
}

/*
 * The query with read applied to each of its WITH queries that is a SELECT
 * and not recursive (flatten.c refuses the others): a copy if it changed
 * one, else the query itself.
 */
static Query *
read_in_with_queries(Query *query, Query *(*read) (Query *))
{
	ListCell   *lc;

	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);
		Query	   *sub;

		if (cte->cterecursive || !IsA(cte->ctequery, Query) ||
			castNode(Query, cte->ctequery)->commandType != CMD_SELECT)
			continue;
		sub = read((Query *) cte->ctequery);
		if (sub != (Query *) cte->ctequery)
		{
			query = copyObject(query);
			list_nth_node(CommonTableExpr, query->cteList, foreach_current_index(lc))->ctequery =
				(Node *) sub;
		}
	}
	return query;
}

/* read_in_sublinks's context */
typedef struct SublinkReader
{
	Query	   *(*read) (Query *);
} SublinkReader;

/* A sublink's subquery read (its own sublinks when it is read). */
static Node *
read_sublink(Node *node, SublinkReader *reader)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, SubLink))
	{
		SubLink    *sublink = makeNode(SubLink);

		memcpy(sublink, node, sizeof(SubLink));
		sublink->testexpr = read_sublink(sublink->testexpr, reader);
		sublink->subselect = (Node *) reader->read(castNode(Query, sublink->subselect));
		return (Node *) sublink;
	}
	return expression_tree_mutator(node, read_sublink, reader);
}

/*
 * The query with read applied to the subqueries of its expressions (EXISTS,
 * IN (SELECT ...): semijoins.c takes some; plan.c refuses the others): a
 * copy when it has some, else the query itself.  (Its FROM's subqueries
 * are read where their range table entries are.)
 */
static Query *
read_in_sublinks(Query *query, Query *(*read) (Query *))
{
	SublinkReader reader = {read};

	if (!query->hasSubLinks)
		return query;
	return query_tree_mutator(query, read_sublink, &reader, QTW_IGNORE_RANGE_TABLE);
}

/*
 * The query with each table in its FROM that a source captures read as
 * that source, each persist peek of a source as its table's row type
 * read as the source's, and each maintained view's PostgreSQL view read as
 * the view (the query itself if it has none of them).
 */
Query *
dataflow_read_sources(Query *query)
{
	query = read_in_with_queries(query, dataflow_read_sources);
	for (int rtindex = 1; rtindex <= list_length(query->rtable); rtindex++)
	{
		RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
		CatalogObject *src;

		if (rte->rtekind == RTE_SUBQUERY)
		{
			/* a UNION ALL's branch, a subquery in FROM, a WITH query read */
			Query	   *sub = dataflow_read_sources(rte->subquery);

			if (sub != rte->subquery)
			{
				query = copyObject(query);
				rt_fetch(rtindex, query->rtable)->subquery = sub;
			}
		}
		else if (rte->rtekind == RTE_RELATION &&
				 (rte->relkind == RELKIND_RELATION || rte->relkind == RELKIND_PARTITIONED_TABLE))
			query = read_as_source(query, rtindex, get_rel_type_id(rte->relid), table_source(rte));
		else if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_VIEW)
		{
			CatalogObject *view = pg_view_view(rte);

			query = copyObject(query);
			read_as_peek(query, rtindex, persist_peek_call(view),
						 list_length(rte->eref->colnames));
		}
		else if ((src = peeked_source(rte)) != NULL)
			query = read_as_source(query, rtindex, get_rel_type_id(src->source), src);
	}
	return read_in_sublinks(query, dataflow_read_sources);
}

/*
 * Read the range table entry rtindex of the query, a persist peek of the
 * source src as its own row type, as the table it captures: references to
 * the source's columns renumbered for the table's (the inverse of
 * read_as_source's map), the entry made the table.  Returns the query, a
 * copy.
 */
static Query *
read_as_table(Query *query, int rtindex, CatalogObject *src)
{
	Oid			from = get_rel_type_id(src->source);
	TupleDesc	table_desc = lookup_rowtype_tupdesc_copy(from, -1);
	TupleDesc	source_desc = lookup_rowtype_tupdesc_copy(src->row_type, -1);
	AttrMap    *to_source = source_columns(table_desc, source_desc, from, src);
	AttrMap    *to_table = make_attrmap(source_desc->natts);
	RangeTblEntry *peek;
	RangeTblEntry *table = makeNode(RangeTblEntry);
	List	   *names = NIL;
	bool		whole_row;

	for (int i = 0; i < table_desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(table_desc, i);

		if (to_source->attnums[i] > 0)
			to_table->attnums[to_source->attnums[i] - 1] = i + 1;
		names = lappend(names, makeString(att->attisdropped ? "" : pstrdup(NameStr(att->attname))));
	}
	query = (Query *) map_variable_attnos((Node *) query, rtindex, 0, to_table, InvalidOid,
										  &whole_row);
	renumber_join_columns(query, (Node *) query->jointree, rtindex, to_table);
	peek = rt_fetch(rtindex, query->rtable);
	table->rtekind = RTE_RELATION;
	table->relid = src->source;
	table->relkind = RELKIND_RELATION;
	table->rellockmode = AccessShareLock;
	table->alias = peek->alias;
	table->eref = makeAlias(peek->eref->aliasname, names);
	table->inFromCl = peek->inFromCl;
	table->requiredPerms = ACL_SELECT;
	list_nth_cell(query->rtable, rtindex - 1)->ptr_value = table;
	return query;
}

/*
 * The query with each persist peek of a source as the source's row type
 * read as the table the source captures (the query itself if it has none):
 * what a view's kept query, which names sources (dataflow_read_sources),
 * reads of tables, for the PostgreSQL view to depend on the tables and
 * columns it reads, at create_view and again after a restore.  The table
 * is the source's catalog row's (a restore names it again).
 */
Query *
dataflow_read_tables(Query *query)
{
	query = read_in_with_queries(query, dataflow_read_tables);
	for (int rtindex = 1; rtindex <= list_length(query->rtable); rtindex++)
	{
		RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
		CatalogObject *src;
		Oid			row_type;

		if (rte->rtekind == RTE_SUBQUERY)
		{
			Query	   *sub = dataflow_read_tables(rte->subquery);

			if (sub != rte->subquery)
			{
				query = copyObject(query);
				rt_fetch(rtindex, query->rtable)->subquery = sub;
			}
		}
		else if ((src = peeked_collection(rte, &row_type)) != NULL &&
				 OidIsValid(src->source) && row_type == src->row_type &&
				 OidIsValid(get_rel_type_id(src->source)))
			query = read_as_table(query, rtindex, src);
	}
	return read_in_sublinks(query, dataflow_read_tables);
}
