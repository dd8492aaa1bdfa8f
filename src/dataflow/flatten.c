/*-------------------------------------------------------------------------
 *
 * flatten.c
 *	  A view's query with its WITH queries and its subqueries in FROM
 *	  pulled up into it, as PostgreSQL's planner pulls up simple ones,
 *	  before plan.c checks it: what follows (plan.c's checks, chain.c,
 *	  stages.c, reduce.c and the executor's runs) sees one SELECT over
 *	  inputs, as if the user had written it without them.
 *
 *	  A WITH query (a SELECT, not RECURSIVE nor MATERIALIZED) becomes a
 *	  subquery at each of its references (one referenced twice: two
 *	  subqueries, each reading its inputs: a self-join; one read nowhere is
 *	  refused, as nothing would check it).  A subquery in
 *	  FROM is pulled up when it is simple: a plain SELECT (no aggregates,
 *	  GROUP BY, HAVING, DISTINCT, window functions, LIMIT or OFFSET, set
 *	  operations, set-returning functions in its select list, FOR UPDATE,
 *	  LATERAL; its ORDER BY, which does not change its rows, is dropped),
 *	  its select list checked as the view's own is (immutable...), its own
 *	  subqueries pulled up first.  Its range table is appended to the
 *	  query's (OffsetVarNodes), the query's references to its columns
 *	  replaced by its select list's expressions (ReplaceVarsFromTargetList),
 *	  its FROM list put where it was and its WHERE where it filters the
 *	  same rows: in a FROM list's WHERE, an inner join's ON, a left join's
 *	  ON when on its nullable side, above the join when on its preserved
 *	  side; its entry is then dropped from the range table (ChangeVarNodes).
 *	  On the nullable side of an outer join, a column the query reads that
 *	  need not be NULL where the subquery's inputs' columns are (a constant,
 *	  COALESCE, CASE...) would not be NULL in the join's NULL-extended rows:
 *	  refused (PostgreSQL wraps it in a PlaceHolderVar, which the views'
 *	  operators do not have).  Anything else is refused (0A000) naming it,
 *	  with the advice to make the subquery a maintained view of its own.
 *	  A UNION ALL's branches are flattened each on its own.
 *
 *	  Works on a copy: the query given (its captured tables already read as
 *	  their sources, sources.c) is what the catalog keeps written out and
 *	  what the view's PostgreSQL view depends on (plan.c), WITH queries and
 *	  subqueries as written, so that a restored view depends on all they
 *	  read and peek.views.query shows them; each planning of the kept text
 *	  flattens it again.  Must not read tables, nor check what the
 *	  operators support beyond a subquery's own select list (expressions.c;
 *	  plan.c checks the flattened query).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"

#include "dataflow/dataflow.h"

static Query *flatten_query(Query *query);

/* inline_references's context: one WITH query, the levels walked down */
typedef struct WithQuery
{
	CommonTableExpr *cte;
	int			levelsup;
	int			references;		/* made subqueries */
} WithQuery;

/*
 * Make each reference to a WITH query (its name, at the level it is
 * defined) a subquery of its own copy, its references to outer levels
 * moved down as deep as it now is.
 */
static bool
inline_references(Node *node, WithQuery *with)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		bool		found;

		with->levelsup++;
		found = query_tree_walker((Query *) node, inline_references, with,
								  QTW_EXAMINE_RTES_AFTER);
		with->levelsup--;
		return found;
	}
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_CTE && rte->ctelevelsup == with->levelsup &&
			strcmp(rte->ctename, with->cte->ctename) == 0)
		{
			/* (ctename stays: it names the WITH query in errors) */
			rte->rtekind = RTE_SUBQUERY;
			rte->subquery = copyObject(castNode(Query, with->cte->ctequery));
			if (with->levelsup > 0)
				IncrementVarSublevelsUp((Node *) rte->subquery, with->levelsup, 1);
			rte->ctelevelsup = 0;
			rte->self_reference = false;
			rte->coltypes = NIL;
			rte->coltypmods = NIL;
			rte->colcollations = NIL;
			with->references++;
		}
		return false;
	}
	return expression_tree_walker(node, inline_references, with);
}

/* The query's WITH queries, each made a subquery where it is read. */
static void
inline_with_queries(Query *query)
{
	ListCell   *lc;

	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (cte->cterecursive)
			dataflow_refuse("WITH RECURSIVE");
		if (!IsA(cte->ctequery, Query) || castNode(Query, cte->ctequery)->commandType != CMD_SELECT)
			dataflow_refuse("data-modifying statements in WITH");
		if (cte->ctematerialized == CTEMaterializeAlways)
			dataflow_refuse("WITH queries AS MATERIALIZED (without MATERIALIZED a WITH query is read as a subquery; or make it a maintained view of its own and read it by name)");
	}
	/*
	 * In order: a later one's references to an earlier are inlined first.
	 * One read nowhere would be in the kept text, its PostgreSQL view
	 * depending on what it uses, but checked nowhere (a temporary object).
	 */
	foreach(lc, query->cteList)
	{
		WithQuery	with = {lfirst_node(CommonTableExpr, lc), 0, 0};

		(void) query_tree_walker(query, inline_references, &with, QTW_EXAMINE_RTES_AFTER);
		if (with.references == 0)
			dataflow_refuse(psprintf("WITH queries that the query does not read (\"%s\")",
									 with.cte->ctename));
	}
	query->cteList = NIL;
}

/* The subqueries in FROM: their range table indexes, negative on a nullable side. */
static void
find_subqueries(Query *query, Node *node, bool nullable, List **found)
{
	ListCell   *lc;

	if (IsA(node, RangeTblRef))
	{
		int			rtindex = ((RangeTblRef *) node)->rtindex;

		if (rt_fetch(rtindex, query->rtable)->rtekind == RTE_SUBQUERY)
			*found = lappend_int(*found, nullable ? -rtindex : rtindex);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		find_subqueries(query, join->larg,
						nullable || join->jointype == JOIN_RIGHT || join->jointype == JOIN_FULL,
						found);
		find_subqueries(query, join->rarg,
						nullable || join->jointype == JOIN_LEFT || join->jointype == JOIN_FULL,
						found);
	}
	else
		foreach(lc, castNode(FromExpr, node)->fromlist)
			find_subqueries(query, lfirst(lc), nullable, found);
}

/* A subquery (or a WITH query read as one) that cannot be pulled up. */
static void
refuse_subquery(RangeTblEntry *rte, const char *construct, bool advice)
{
	dataflow_refuse(psprintf("%s %s%s", rte->ctename != NULL ? "WITH queries" : "subqueries in FROM",
							 construct,
							 !advice ? "" : rte->ctename != NULL ?
							 " (make the WITH query a maintained view of its own and read it by name)" :
							 " (make the subquery a maintained view of its own and read it by name)"));
}

/*
 * What a subquery has that makes its rows other than its input's rows
 * filtered and mapped ("with GROUP BY..."), which neither a subquery in
 * FROM nor one in EXISTS or IN (semijoins.c) may have; NULL: nothing.
 */
const char *
dataflow_subquery_not_plain(Query *sub)
{
	const struct
	{
		bool		has;
		const char *construct;
	}			refused[] = {
		{sub->setOperations != NULL, "with UNION ALL, UNION, INTERSECT or EXCEPT"},
		{sub->hasAggs || sub->groupClause != NIL || sub->groupingSets != NIL ||
			sub->havingQual != NULL, "with GROUP BY, aggregates or HAVING"},
		{sub->hasWindowFuncs, "with window functions"},
		{sub->hasDistinctOn, "with DISTINCT ON"},
		{sub->limitCount != NULL || sub->limitOffset != NULL, "with LIMIT, OFFSET or FETCH"},
		{sub->hasTargetSRFs, "with set-returning functions in the select list"},
	};

	for (int i = 0; i < lengthof(refused); i++)
		if (refused[i].has)
			return refused[i].construct;
	return NULL;
}

/* Refuse a subquery that PostgreSQL's planner would not pull up either. */
static void
refuse_unless_simple(RangeTblEntry *rte, Query *sub)
{
	const char *construct = dataflow_subquery_not_plain(sub);

	if (construct != NULL)
		refuse_subquery(rte, construct, true);
	if (sub->distinctClause != NIL)
		refuse_subquery(rte, "with DISTINCT", true);
	if (sub->hasForUpdate || sub->rowMarks != NIL)
		refuse_subquery(rte, "with FOR UPDATE or FOR SHARE", false);
	if (rte->lateral)
		refuse_subquery(rte, "that are LATERAL", false);
	if (sub->jointree->fromlist == NIL)
		refuse_subquery(rte, "without FROM", false);
	if (sub->hasSubLinks)
		refuse_subquery(rte, "with subqueries in their expressions (write EXISTS, NOT EXISTS or IN (SELECT ...) in the view's own WHERE)",
						false);
	/* every column as the view's own, even those the query does not read */
	dataflow_check_expressions((Node *) sub->targetList);
}

/* columns_read's context */
typedef struct ColumnsRead
{
	int			rtindex;
	int			levelsup;		/* the levels walked down */
	Bitmapset  *columns;		/* attribute numbers (0: the whole row) */
} ColumnsRead;

/*
 * The columns an expression reads of one range table entry of its level,
 * in its subqueries too (EXISTS, IN: semijoins.c).
 */
static bool
columns_read(Node *node, ColumnsRead *read)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == read->rtindex &&
		((Var *) node)->varlevelsup == read->levelsup && ((Var *) node)->varattno >= 0)
		read->columns = bms_add_member(read->columns, ((Var *) node)->varattno);
	if (IsA(node, Query))
	{
		bool		found;

		read->levelsup++;
		found = query_tree_walker((Query *) node, columns_read, read, 0);
		read->levelsup--;
		return found;
	}
	return expression_tree_walker(node, columns_read, read);
}

/*
 * The columns of the subquery rtindex that the query reads (through a
 * join's columns too); a whole-row reference is refused.  On the nullable
 * side of an outer join, each must be NULL in the join's NULL-extended
 * rows, as it is when it is its inputs' column or strict and reads one.
 */
static void
check_columns_read(Query *query, int rtindex, Query *sub, bool nullable)
{
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	ColumnsRead read = {rtindex, 0, NULL};
	int			column = -1;

	(void) columns_read(flatten_join_alias_vars(query,
												(Node *) list_make3(query->targetList,
																	query->jointree,
																	query->havingQual)),
						&read);
	if (bms_is_member(0, read.columns))
		refuse_subquery(rte, "read as a whole row", false);
	while (nullable && (column = bms_next_member(read.columns, column)) >= 0)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, sub->targetList, column - 1);
		Node	   *expr = (Node *) tle->expr;

		if (IsA(expr, Var) || (contain_vars_of_level(expr, 0) && !contain_nonstrict_functions(expr)))
			continue;
		refuse_subquery(rte, psprintf("on the nullable side of an outer join whose column \"%s\" is not NULL wherever its inputs' columns are (a constant, COALESCE, CASE, IS NULL, or other expressions that are not strict)",
									  tle->resname),
						true);
	}
}

/* Put with in place of the reference to range table entry rtindex. */
static bool
replace_reference(Node **node, int rtindex, Node *with)
{
	ListCell   *lc;

	if (IsA(*node, RangeTblRef))
	{
		if (((RangeTblRef *) *node)->rtindex != rtindex)
			return false;
		*node = with;
		return true;
	}
	if (IsA(*node, JoinExpr))
		return replace_reference(&((JoinExpr *) *node)->larg, rtindex, with) ||
			replace_reference(&((JoinExpr *) *node)->rarg, rtindex, with);
	foreach(lc, castNode(FromExpr, *node)->fromlist)
		if (replace_reference((Node **) &lfirst(lc), rtindex, with))
			return true;
	return false;
}

/*
 * The query with its subquery rtindex (flattened, simple) pulled up: its
 * entries after the query's, its columns' expressions where the query read
 * them, its FROM (a FromExpr, for pull_up_normalize) where it was.
 */
static Query *
pull_up(Query *query, int rtindex, bool nullable)
{
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	Query	   *sub = flatten_query(rte->subquery);

	refuse_unless_simple(rte, sub);
	check_columns_read(query, rtindex, sub, nullable);
	OffsetVarNodes((Node *) sub, list_length(query->rtable), 0);
	query->rtable = list_concat(query->rtable, sub->rtable);
	query = (Query *) ReplaceVarsFromTargetList((Node *) query, rtindex, 0,
												rt_fetch(rtindex, query->rtable),
												sub->targetList, REPLACEVARS_REPORT_ERROR, 0,
												NULL);
	if (!replace_reference((Node **) &query->jointree, rtindex, (Node *) sub->jointree))
		elog(ERROR, "subquery %d is not in the view's FROM", rtindex);
	query->hasSubLinks |= sub->hasSubLinks;
	query->hasRowSecurity |= sub->hasRowSecurity;
	return query;
}

/*
 * A join's input: a pulled-up subquery's FROM of one item made that item,
 * its WHERE added to the conditions on the input's rows (one of several
 * items stays a FROM list in the join, as PostgreSQL's planner leaves it).
 */
static Node *
join_input(Node *node, List **conditions)
{
	FromExpr   *from;

	if (!IsA(node, FromExpr) || list_length(((FromExpr *) node)->fromlist) != 1)
		return node;
	from = (FromExpr *) node;
	*conditions = list_concat(*conditions, make_ands_implicit((Expr *) from->quals));
	return linitial(from->fromlist);
}

/*
 * The FROM tree as a query written without subqueries has it: a pulled-up
 * subquery's FROM list in a FROM list merged into it, its WHERE into the
 * list's; in a join, the conditions on an input's rows where they filter
 * the same rows: an inner join's ON; a left join's ON for its nullable
 * side (they read only that side); above the join for its preserved side
 * (it keeps each of that side's rows, or drops it, alike), added to
 * *above.
 */
static Node *
pull_up_normalize(Node *node, List **above)
{
	ListCell   *lc;

	if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;
		List	   *left = NIL;
		List	   *right = NIL;
		List	   *on = make_ands_implicit((Expr *) join->quals);

		join->larg = join_input(pull_up_normalize(join->larg, &left), &left);
		join->rarg = join_input(pull_up_normalize(join->rarg, &right), &right);
		if (join->jointype == JOIN_INNER)
			on = list_concat(list_concat(on, left), right);
		else if (join->jointype == JOIN_LEFT)
		{
			on = list_concat(on, right);
			*above = list_concat(*above, left);
		}
		else if (left != NIL || right != NIL)
			dataflow_refuse(join->jointype == JOIN_FULL ? "FULL JOIN" :
							"RIGHT JOIN (write it as a LEFT JOIN)");
		join->quals = on == NIL ? NULL : (Node *) make_ands_explicit(on);
	}
	else if (IsA(node, FromExpr))
	{
		FromExpr   *from = (FromExpr *) node;
		List	   *items = NIL;
		List	   *where = make_ands_implicit((Expr *) from->quals);

		foreach(lc, from->fromlist)
		{
			Node	   *item = pull_up_normalize(lfirst(lc), &where);

			if (IsA(item, FromExpr))
			{
				items = list_concat(items, ((FromExpr *) item)->fromlist);
				where = list_concat(where, make_ands_implicit((Expr *) ((FromExpr *) item)->quals));
			}
			else
				items = lappend(items, item);
		}
		from->fromlist = items;
		from->quals = where == NIL ? NULL : (Node *) make_ands_explicit(where);
	}
	return node;
}

/* The query without the range table entries dropped (their references gone). */
static void
drop_entries(Query *query, Bitmapset *dropped)
{
	List	   *rtable = NIL;
	int			kept = 0;

	for (int rtindex = 1; rtindex <= list_length(query->rtable); rtindex++)
	{
		if (bms_is_member(rtindex, dropped))
			continue;
		rtable = lappend(rtable, rt_fetch(rtindex, query->rtable));
		if (++kept != rtindex)
			ChangeVarNodes((Node *) query, rtindex, kept, 0);
	}
	query->rtable = rtable;
}

/* The query (the caller's to change) flattened; a UNION ALL's branches each. */
static Query *
flatten_query(Query *query)
{
	List	   *subqueries = NIL;
	Bitmapset  *pulled = NULL;
	List	   *above = NIL;
	ListCell   *lc;

	inline_with_queries(query);
	if (query->setOperations != NULL)
	{
		foreach(lc, query->rtable)
			if (lfirst_node(RangeTblEntry, lc)->rtekind == RTE_SUBQUERY)
				lfirst_node(RangeTblEntry, lc)->subquery =
					flatten_query(lfirst_node(RangeTblEntry, lc)->subquery);
		return query;
	}
	find_subqueries(query, (Node *) query->jointree, false, &subqueries);
	if (subqueries == NIL)
		return query;
	foreach(lc, subqueries)
	{
		query = pull_up(query, abs(lfirst_int(lc)), lfirst_int(lc) < 0);
		pulled = bms_add_member(pulled, abs(lfirst_int(lc)));
	}
	query->jointree = castNode(FromExpr, pull_up_normalize((Node *) query->jointree, &above));
	Assert(above == NIL);
	drop_entries(query, pulled);
	return query;
}

/*
 * The query with its WITH queries and subqueries in FROM pulled up (a
 * copy), or refused (0A000) naming what PostgreSQL would not pull up
 * either; the query itself when it has none.
 */
Query *
dataflow_flatten(Query *query)
{
	ListCell   *lc;
	bool		any = query->cteList != NIL;

	foreach(lc, query->rtable)
		any |= lfirst_node(RangeTblEntry, lc)->rtekind == RTE_SUBQUERY;
	return any ? flatten_query(copyObject(query)) : query;
}
