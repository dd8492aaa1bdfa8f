/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  A maintained view's query, analyzed by PostgreSQL and checked against
 *	  what the operators support: inputs peek.persist_peek(NULL::t, 'name')
 *	  in FROM (a collection or a view, its columns under its row type's
 *	  attribute names) or captured tables (read as their sources:
 *	  sources.c; WITH queries and simple subqueries in FROM pulled up into
 *	  the query first: flatten.c), one or several joined by inner and left joins on one
 *	  equality key across all of them (or on different keys: chain.c),
 *	  and semi-joins and anti-joins of one input each (EXISTS, NOT EXISTS
 *	  and IN (SELECT ...) ANDed in WHERE: semijoins.c), filtered by WHERE,
 *	  mapped and
 *	  projected by the select list, and either grouped (GROUP BY, the
 *	  aggregates count, sum, avg, min, max, bool_and, bool_or and every,
 *	  HAVING) or made DISTINCT; or a UNION ALL of such queries; with
 *	  immutable expressions only and no function, operator, collation or
 *	  type of a temporary schema (expressions.c).  The keys by which reduce.c keeps each input's rows are found
 *	  here (a grouping's keys, or a join's key), with the operator that
 *	  tells them apart, and each operator's kind.  A join grouped by other
 *	  keys than its join key (or by none) is two stages: the join (or
 *	  chain.c's chain of join stages), its rows projected to the columns
 *	  the rest reads, and the grouping of those rows (stages.c).  Sums and
 *	  averages of floats are computed exactly (float_sums.c).
 *	  Anything else is refused with 0A000 naming the construct.  The
 *	  backend plans the user's text at create_view (in the user's
 *	  search_path and privileges) and keeps it written out schema-qualified
 *	  (dataflow_plan_text); the maintenance runtime plans that text again
 *	  for each round, under the view owner's privileges, and plans its
 *	  expressions for the executor (dataflow_plan_expressions).
 *
 *	  Must not read or write tables: round.c runs the plan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_func.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "dataflow/dataflow.h"
#include "ipc/registry.h"

/*
 * The input's columns go by the names of its row type's attributes.  The
 * text kept for a view lists them as column aliases (as ruleutils writes
 * any function in FROM), by position: were an attribute renamed since
 * (one the view reads cannot be dropped: its PostgreSQL view depends on
 * it), a name would stand for another attribute or none.  So a name that is not its attribute's fails the
 * view; at create_view, aliases that rename the input's columns are
 * refused.
 */
static void
check_input_columns(RangeTblEntry *rte, Oid row_type)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(row_type, -1);
	List	   *names = rte->eref->colnames;

	for (int i = 0; i < desc->natts && i < list_length(names); i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(strVal(list_nth(names, i)), NameStr(att->attname)) != 0)
		{
			ReleaseTupleDesc(desc);
			dataflow_refuse(psprintf("input column aliases other than the input's attribute names (\"%s\" names attribute \"%s\" of %s: the type was changed, or the column renamed)",
							strVal(list_nth(names, i)), NameStr(att->attname),
							format_type_be(row_type)));
		}
	}
	ReleaseTupleDesc(desc);
}

/* What a relation in FROM that no input stands for is, for an error. */
static const char *
relkind_noun(char relkind)
{
	switch (relkind)
	{
		case RELKIND_MATVIEW:
			return "materialized views";
		case RELKIND_FOREIGN_TABLE:
			return "foreign tables";
		case RELKIND_SEQUENCE:
			return "sequences";
		default:
			return "this kind of relation";
	}
}

/* An input in FROM: peek.persist_peek(NULL::t, 'name'). */
static void
check_input(RangeTblEntry *rte, Index rtindex, ViewPlan *plan)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *call;
	Const	   *args[2] = {NULL, NULL};
	ViewPlanInput *input = palloc0(sizeof(ViewPlanInput));
	ListCell   *lc;

	switch (rte->rtekind)
	{
		case RTE_FUNCTION:
			break;
		case RTE_RELATION:
			/* (sources.c read tables and maintained views as their peeks) */
			dataflow_refuse(psprintf("reading %s", relkind_noun(rte->relkind)));
			break;
		case RTE_SUBQUERY:
			dataflow_refuse("subqueries in FROM (make the subquery a maintained view of its own and read it by name)");
			break;
		default:
			dataflow_refuse("this kind of FROM item");
			break;
	}
	if (list_length(rte->functions) != 1)
		dataflow_refuse("ROWS FROM");
	if (rte->funcordinality)
		dataflow_refuse("WITH ORDINALITY");
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr) ||
		((FuncExpr *) rtfunc->funcexpr)->funcid != dataflow_persist_peek_oid())
		dataflow_refuse("functions in FROM other than peek.persist_peek");
	call = (FuncExpr *) rtfunc->funcexpr;
	foreach(lc, call->args)
	{
		Node	   *arg = lfirst(lc);
		int			n = foreach_current_index(lc);

		if (IsA(arg, NamedArgExpr))
		{
			n = ((NamedArgExpr *) arg)->argnumber;
			arg = (Node *) ((NamedArgExpr *) arg)->arg;
		}
		if (n >= 2)
			dataflow_refuse("as_of or limit in the input's peek.persist_peek");
		if (!IsA(arg, Const))
			dataflow_refuse("an input named by an expression (name it with constants: peek.persist_peek(NULL::t, 'name'))");
		args[n] = (Const *) arg;
	}
	if (args[0] == NULL || args[1] == NULL || args[1]->constisnull ||
		args[1]->consttype != TEXTOID)
		dataflow_refuse("an input named by an expression (name it with constants: peek.persist_peek(NULL::t, 'name'))");
	input->name = TextDatumGetCString(args[1]->constvalue);
	input->row_type = args[0]->consttype;
	input->rtindex = rtindex;
	input->object = list_length(plan->inputs);
	check_input_columns(rte, input->row_type);
	plan->inputs = lappend(plan->inputs, input);
}

/* An equality in a join's ON or in WHERE, a candidate join key. */
typedef struct JoinEquality
{
	OpExpr	   *op;
	Relids		preserved;		/* a left join's ON: its preserved side */
} JoinEquality;

/* A join condition or WHERE: checked, its equalities collected. */
static void
walk_quals(Node *quals, Relids preserved, List **equalities)
{
	ListCell   *lc;

	dataflow_check_expressions(quals);
	foreach(lc, make_ands_implicit((Expr *) quals))
	{
		JoinEquality *eq;

		if (!IsA(lfirst(lc), OpExpr) || list_length(((OpExpr *) lfirst(lc))->args) != 2)
			continue;
		eq = palloc(sizeof(JoinEquality));
		eq->op = lfirst(lc);
		eq->preserved = preserved;
		*equalities = lappend(*equalities, eq);
	}
}

/* The range table indexes of the inputs under a FROM item. */
static Relids
inputs_under(Node *node)
{
	Relids		inputs = NULL;
	ListCell   *lc;

	if (IsA(node, RangeTblRef))
		return bms_make_singleton(((RangeTblRef *) node)->rtindex);
	if (IsA(node, JoinExpr))
		return bms_union(inputs_under(((JoinExpr *) node)->larg),
						 inputs_under(((JoinExpr *) node)->rarg));
	foreach(lc, castNode(FromExpr, node)->fromlist)
		inputs = bms_add_members(inputs, inputs_under(lfirst(lc)));
	return inputs;
}

/*
 * A left join, or a semi-join or anti-join (whose inner input's columns no
 * row has): its ON's equalities key its right input to its left, never
 * two inputs of its left side to each other.
 */
static bool
outer_like(JoinExpr *join)
{
	return join->jointype == JOIN_LEFT || join->jointype == JOIN_SEMI ||
		join->jointype == JOIN_ANTI;
}

/*
 * The range table indexes of the inputs a left join under a FROM item may
 * NULL-extend (or that a semi-join's or anti-join's rows do not have).
 */
static Relids
nullable_under(Node *node)
{
	Relids		inputs = NULL;
	ListCell   *lc;

	if (IsA(node, RangeTblRef))
		return NULL;
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		return bms_union(nullable_under(join->larg),
						 outer_like(join) ? inputs_under(join->rarg) :
						 nullable_under(join->rarg));
	}
	foreach(lc, castNode(FromExpr, node)->fromlist)
		inputs = bms_add_members(inputs, nullable_under(lfirst(lc)));
	return inputs;
}

/*
 * FROM: its inputs, in inner and left joins, their conditions and WHERE
 * checked and their equalities collected.  An equality in a left join's
 * ON between two inputs of its preserved side joins nothing (the rows of
 * that side stay either way), so it is kept with that side to be left
 * out of the join key.
 */
static void
walk_from(Query *query, Node *node, ViewPlan *plan, List **equalities)
{
	ListCell   *lc;

	if (IsA(node, RangeTblRef))
	{
		Index		rtindex = ((RangeTblRef *) node)->rtindex;

		check_input(rt_fetch(rtindex, query->rtable), rtindex, plan);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;

		if (join->jointype == JOIN_FULL)
			dataflow_refuse("FULL JOIN");
		if (join->jointype == JOIN_RIGHT)
			dataflow_refuse("RIGHT JOIN (write it as a LEFT JOIN)");
		/* (a semi-join or anti-join: EXISTS, IN or NOT EXISTS, semijoins.c) */
		if (join->jointype != JOIN_INNER && !outer_like(join))
			dataflow_refuse("this kind of join");
		walk_from(query, join->larg, plan, equalities);
		walk_from(query, join->rarg, plan, equalities);
		walk_quals(join->quals, outer_like(join) ? inputs_under(join->larg) : NULL,
				   equalities);
	}
	else if (IsA(node, FromExpr))
	{
		foreach(lc, ((FromExpr *) node)->fromlist)
			walk_from(query, lfirst(lc), plan, equalities);
		walk_quals(((FromExpr *) node)->quals, NULL, equalities);
	}
	else
		dataflow_refuse("this kind of FROM item");
}

/* The input an expression reads (its place in plan->inputs), or -1: none or several. */
static int
expr_input(ViewPlan *plan, Node *expr)
{
	int			found = -1;
	ListCell   *lc;

	foreach(lc, pull_var_clause(expr, 0))
	{
		Var		   *var = lfirst_node(Var, lc);
		int			input = -1;
		ListCell   *li;

		foreach(li, plan->inputs)
			if (((ViewPlanInput *) lfirst(li))->rtindex == var->varno)
				input = foreach_current_index(li);
		if (input < 0 || (found >= 0 && input != found))
			return -1;
		found = input;
	}
	return found;
}

/*
 * An equality between expressions over two inputs, of one type.  One in a
 * left join's ON holds only where its nullable side has a row: it joins a
 * preserved input's key to a nullable one's, never two preserved inputs'
 * keys through a nullable one (a JOIN b ON a.j = b.j LEFT JOIN c ON c.k =
 * a.k AND c.k = b.k pairs rows of a and b of different k), so it adds no
 * member of its preserved side to a class.
 */
typedef struct KeyEdge
{
	int			input[2];
	Node	   *expr[2];
	bool		adds[2];		/* may add this side's member to a class */
	Oid			opno;
	Oid			collation;
} KeyEdge;

/* A key of a join: an input's expression in a class of equal ones. */
typedef struct KeyMember
{
	int			input;
	Node	   *expr;
} KeyMember;

static bool
key_member(List *members, int input, Node *expr)
{
	ListCell   *lc;

	foreach(lc, members)
		if (((KeyMember *) lfirst(lc))->input == input &&
			equal(((KeyMember *) lfirst(lc))->expr, expr))
			return true;
	return false;
}

static List *
key_add(List *members, int input, Node *expr)
{
	KeyMember  *m = palloc(sizeof(KeyMember));

	m->input = input;
	m->expr = expr;
	return lappend(members, m);
}

/* The expressions its seed's equalities under the same operator make equal. */
static List *
key_class(KeyEdge *edges, int nedges, KeyEdge *seed)
{
	List	   *members = key_add(key_add(NIL, seed->input[0], seed->expr[0]),
								  seed->input[1], seed->expr[1]);
	bool		grew = true;

	while (grew)
	{
		grew = false;
		for (int e = 0; e < nedges; e++)
			for (int side = 0; side < 2; side++)
				if (edges[e].opno == seed->opno && edges[e].collation == seed->collation &&
					edges[e].adds[1 - side] &&
					key_member(members, edges[e].input[side], edges[e].expr[side]) &&
					!key_member(members, edges[e].input[1 - side], edges[e].expr[1 - side]))
				{
					members = key_add(members, edges[e].input[1 - side], edges[e].expr[1 - side]);
					grew = true;
				}
	}
	return members;
}

/*
 * The key each input's rows are kept by in a join: one class of
 * expressions the join's equalities make equal, one of each input, so
 * that an output row depends only on the inputs' rows with its key
 * (reduce.c runs the query over the rows of the keys a time touches).
 * Returns the class's expressions; NIL: no one key joins them all (chain.c
 * joins them a stage at a time, and refuses what it cannot).
 */
static List *
join_keys(Query *query, ViewPlan *plan, List *equalities)
{
	KeyEdge    *edges = palloc(sizeof(KeyEdge) * Max(1, list_length(equalities)));
	int			nedges = 0;
	ListCell   *lc;

	foreach(lc, equalities)
	{
		JoinEquality *eq = lfirst(lc);
		KeyEdge    *edge = &edges[nedges];
		Oid			type;

		for (int side = 0; side < 2; side++)
		{
			edge->expr[side] = flatten_join_alias_vars(query, list_nth(eq->op->args, side));
			edge->input[side] = expr_input(plan, edge->expr[side]);
		}
		type = exprType(edge->expr[0]);
		if (edge->input[0] < 0 || edge->input[1] < 0 || edge->input[0] == edge->input[1])
			continue;
		for (int side = 0; side < 2; side++)
			edge->adds[side] =
				!bms_is_member(list_nth_node(ViewPlanInput, plan->inputs, edge->input[side])->rtindex,
							   eq->preserved);
		if (!edge->adds[0] && !edge->adds[1])
			continue;
		if (type != exprType(edge->expr[1]) || !op_hashjoinable(eq->op->opno, type))
			continue;
		edge->opno = eq->op->opno;
		edge->collation = eq->op->inputcollid;
		nedges++;
	}
	for (int seed = 0; seed < nedges; seed++)
	{
		List	   *members = key_class(edges, nedges, &edges[seed]);
		ListCell   *li;
		bool		covers = true;

		foreach(li, plan->inputs)
		{
			ViewPlanInput *input = lfirst(li);
			ListCell   *lm;

			input->keys = NIL;
			foreach(lm, members)
				if (input->keys == NIL &&
					((KeyMember *) lfirst(lm))->input == foreach_current_index(li))
					input->keys = list_make1(((KeyMember *) lfirst(lm))->expr);
			covers &= input->keys != NIL;
		}
		if (covers)
		{
			plan->key_eqops = list_make1_oid(edges[seed].opno);
			plan->key_collations = list_make1_oid(edges[seed].collation);
			return members;
		}
	}
	foreach(lc, plan->inputs)
		lfirst_node(ViewPlanInput, lc)->keys = NIL;
	return NIL;
}

/*
 * GROUP BY or DISTINCT over a join: whether the join's own stage can
 * group it, its groups' rows each of one join key so that a group's
 * output depends on that key's rows only: one of the keys is the join key
 * of an input that no left join NULL-extends (the NULL-extended rows of
 * all keys would share a group).  Else a stage of its own groups the
 * join's rows (stages.c).
 */
static bool
grouped_by_join_key(Query *query, ViewPlan *plan, List *members)
{
	Relids		nullable = nullable_under((Node *) query->jointree);
	List	   *preserved = NIL;
	ListCell   *lc;

	foreach(lc, members)
		if (!bms_is_member(list_nth_node(ViewPlanInput, plan->inputs,
										 ((KeyMember *) lfirst(lc))->input)->rtindex, nullable))
			preserved = lappend(preserved, ((KeyMember *) lfirst(lc))->expr);
	foreach(lc, query->groupClause != NIL ? query->groupClause : query->distinctClause)
	{
		Node	   *key = flatten_join_alias_vars(query,
												  (Node *) get_sortgroupclause_expr(lfirst(lc), query->targetList));

		if (list_member(preserved, key))
			return true;
	}
	return false;
}

/* A grouping of one input by a type that no hash operator class compares. */
static void
refuse_unhashable(Oid type)
{
	if (OidIsValid(type))
		dataflow_refuse(psprintf("grouping by type %s, which has no hash operator class",
						format_type_be(type)));
}

static ViewPlan *plan_query(Query *query);

/*
 * A UNION ALL's branches, each a query of its own (not a UNION ALL: its
 * branches come in its place), of the union's column types.
 */
static void
plan_union(Query *query, Node *node, ViewPlan *plan)
{
	SetOperationStmt *op;

	if (IsA(node, RangeTblRef))
	{
		Query	   *sub = rt_fetch(((RangeTblRef *) node)->rtindex, query->rtable)->subquery;
		ViewPlan   *branch = plan_query(sub);
		List	   *types = castNode(SetOperationStmt, query->setOperations)->colTypes;
		ListCell   *lc;

		foreach(lc, branch->targetlist)
			if (exprType((Node *) lfirst_node(TargetEntry, lc)->expr) !=
				list_nth_oid(types, foreach_current_index(lc)))
				dataflow_refuse(psprintf("UNION ALL branches whose column %d is not of the union's type %s (cast it)",
								foreach_current_index(lc) + 1,
								format_type_be(list_nth_oid(types, foreach_current_index(lc)))));
		plan->branches = list_concat(plan->branches, dataflow_plan_branches(branch));
		return;
	}
	op = castNode(SetOperationStmt, node);
	if (op->op != SETOP_UNION || !op->all)
		dataflow_refuse("UNION, INTERSECT or EXCEPT (UNION ALL is supported)");
	plan_union(query, op->larg, plan);
	plan_union(query, op->rarg, plan);
}

/* A SELECT over inputs: its FROM, select list, keys. */
static void
plan_select(Query *query, ViewPlan *plan)
{
	List	   *equalities = NIL;
	bool		grouped;
	bool		aggregates;

	if (query->rtable == NIL || query->jointree->fromlist == NIL)
		dataflow_refuse("a query without an input in FROM");
	walk_from(query, (Node *) query->jointree, plan, &equalities);
	dataflow_check_expressions((Node *) query->targetList);
	dataflow_check_expressions(query->havingQual);
	aggregates = query->hasAggs || query->groupClause != NIL || query->havingQual != NULL;
	grouped = aggregates || query->distinctClause != NIL;
	plan->reduces = grouped || list_length(plan->inputs) > 1;
	if (list_length(plan->inputs) > 1)
	{
		/* joined: each input's rows by the join key, WHERE in the query */
		List	   *members = join_keys(query, plan, equalities);

		plan->kind = !grouped ? "join" : aggregates ? "join-reduce" : "join-distinct";
		if (grouped && (members == NIL ||
						(query->groupClause == NIL && query->distinctClause == NIL) ||
						!grouped_by_join_key(query, plan, members)))
		{
			/* the join's stage, or chain of stages, then the grouping's */
			List	   *columns = dataflow_plan_join_columns(query);

			plan->stages = members != NIL ? list_make1(dataflow_plan_join(query, plan, columns)) :
				dataflow_plan_chain(query, plan, columns);
			refuse_unhashable(dataflow_plan_grouping(query, plan, columns));
		}
		else if (members == NIL)
			plan->stages = dataflow_plan_chain(query, plan, plan->targetlist);
		/* (a round counts each stage's work as an operator's) */
		if (list_length(plan->stages) >= PEEK_MAX_OPERATORS)
			dataflow_refuse(psprintf("joins of inputs on different keys in more than %d stages (each input after the first is a stage, and a grouping one more)",
									 PEEK_MAX_OPERATORS - 1));
		return;
	}
	/* one input: WHERE filters it as it is read, rows by group */
	plan->qual = query->jointree->quals;
	plan->kind = !grouped ? "map-project" : aggregates ? "reduce" : "distinct";
	refuse_unhashable(dataflow_plan_group_keys(query, plan));
}

/* An analyzed query (the view's, or a UNION ALL's branch), checked. */
static ViewPlan *
plan_query(Query *query)
{
	ViewPlan   *plan = palloc0(sizeof(ViewPlan));

	query = dataflow_semijoins(query);
	{
		/* what the query has that no operator supports yet, in order */
		const struct
		{
			bool		has;
			const char *construct;
		}			refused[] = {
			{query->commandType != CMD_SELECT || query->utilityStmt != NULL,
			"statements other than SELECT"},
			{query->groupingSets != NIL, "GROUPING SETS, ROLLUP or CUBE"},
			{query->hasWindowFuncs, "window functions"},
			{query->hasTargetSRFs, "set-returning functions in the select list"},
			{query->hasSubLinks, "subqueries"},
			{query->hasDistinctOn, "DISTINCT ON"},
			{query->distinctClause != NIL &&
				(query->groupClause != NIL || query->hasAggs),
			"DISTINCT over GROUP BY or aggregates"},
			{query->sortClause != NIL, "ORDER BY"},
			{query->limitCount != NULL || query->limitOffset != NULL, "LIMIT, OFFSET or FETCH"},
		};

		for (int i = 0; i < lengthof(refused); i++)
			if (refused[i].has)
				dataflow_refuse(refused[i].construct);
	}

	/* (junk columns: GROUP BY keys that are not selected) */
	plan->targetlist = dataflow_plan_columns(query->targetList);
	if (plan->targetlist == NIL)
		dataflow_refuse("a select list without columns");
	if (query->setOperations != NULL)
	{
		plan->kind = "union-all";
		plan_union(query, query->setOperations, plan);
	}
	else
		plan_select(query, plan);
	plan->query = query;
	return plan;
}

/*
 * An error's position while the query is parsed and analyzed is in the
 * query's text, not in the statement that passed it (as SPI shows it).
 */
static void
plan_error_position(void *text)
{
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		internalerrposition(position);
		internalerrquery((const char *) text);
	}
}

/*
 * Parse and analyze a view's query in the current search_path and
 * privileges, and check it; raises 0A000 naming what is not supported.
 */
ViewPlan *
dataflow_plan(const char *text)
{
	ErrorContextCallback context = {error_context_stack, plan_error_position, unconstify(char *, text)};
	List	   *raw;
	RawStmt    *stmt;
	Query	   *query;
	ViewPlan   *plan;

	error_context_stack = &context;
	raw = raw_parser(text, RAW_PARSE_DEFAULT);

	if (list_length(raw) != 1)
		dataflow_refuse("more than one statement");
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt))
		dataflow_refuse("statements other than SELECT");
	if (((SelectStmt *) stmt->stmt)->intoClause != NULL)
		dataflow_refuse("SELECT INTO");
	/* (analysis keeps no row mark for a function in FROM) */
	if (((SelectStmt *) stmt->stmt)->lockingClause != NIL)
		dataflow_refuse("FOR UPDATE or FOR SHARE");
	query = dataflow_read_sources(parse_analyze_fixedparams(stmt, text, NULL, 0, NULL));
	error_context_stack = context.previous;
	dataflow_exact_float_sums(query);
	plan = plan_query(dataflow_flatten(query));
	plan->written = query;
	return plan;
}

/* The SELECTs a view's rounds run: a UNION ALL's branches, or the one. */
List *
dataflow_plan_branches(ViewPlan *plan)
{
	return plan->branches != NIL ? plan->branches : list_make1(plan);
}

/* The names of the objects a view reads, each once, in the query's order. */
List *
dataflow_plan_input_names(ViewPlan *plan)
{
	List	   *names = NIL;
	ListCell   *lb;

	foreach(lb, dataflow_plan_branches(plan))
	{
		ListCell   *li;

		foreach(li, ((ViewPlan *) lfirst(lb))->inputs)
		{
			char	   *name = ((ViewPlanInput *) lfirst(li))->name;
			ListCell   *ln;
			bool		known = false;

			foreach(ln, names)
				known |= strcmp(lfirst(ln), name) == 0;
			if (!known)
				names = lappend(names, name);
		}
	}
	return names;
}

/*
 * The plan's expressions (WHERE, the select list, the inputs' keys) made
 * ready for the expression executor, as the planner makes a query's: a
 * function's named arguments put in order and its defaults filled in, a
 * COLLATE clause made a relabeling, constants folded.  The query itself is
 * left as analyzed (reduce.c plans it whole).  Errors of constant folding
 * are the view's, as its expressions' are: called by the rounds only.
 */
void
dataflow_plan_expressions(ViewPlan *plan)
{
	List	   *targetlist = NIL;
	ListCell   *lc;

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = flatCopyTargetEntry(lfirst_node(TargetEntry, lc));

		tle->expr = expression_planner(tle->expr);
		targetlist = lappend(targetlist, tle);
	}
	plan->targetlist = targetlist;
	if (plan->qual != NULL)
		plan->qual = (Node *) expression_planner((Expr *) plan->qual);
	/* its inputs' keys, or its stages' */
	foreach(lc, plan->stages != NIL ? plan->stages : list_make1(plan))
	{
		ListCell   *li;

		foreach(li, ((ViewPlan *) lfirst(lc))->inputs)
		{
			ViewPlanInput *input = lfirst(li);
			List	   *keys = NIL;
			ListCell   *lk;

			foreach(lk, input->keys)
				keys = lappend(keys, expression_planner(lfirst(lk)));
			input->keys = keys;
		}
	}
}

/*
 * Set, in a new GUC nest level (returned, for AtEOXact_GUC), search_path
 * and the settings that a view's kept query is written and read under,
 * whatever the session's or the database's say: its constants written as
 * pg_dump writes them (ISO dates, read alike in every DateStyle; intervals
 * in postgres style; floats exactly) and read with standard-conforming
 * strings, NULL in array constants and XML content, as the workers read
 * them (common/workers.c pins the same).  Written in the creator's
 * 'SQL, DMY', '01/02/2020' (1 February) was read back as 2 January; an
 * sql_standard interval '-1 2:00:00' as -1 day +2 hours; a float8 at
 * extra_float_digits 0 rounded to 15 digits; a\b, written 'a\\b'
 * without standard_conforming_strings, with two backslashes: the view
 * filtered other rows than its query.  And a session without them, whose
 * CREATE OR REPLACE VIEW recorded the view's dependencies from its kept
 * query, read a constant ending in a backslash as a syntax error.
 */
int
dataflow_kept_text_settings(const char *search_path)
{
	static const char *const settings[][2] = {
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"extra_float_digits", "3"},
		{"standard_conforming_strings", "on"},
		{"array_nulls", "on"},
		{"xmloption", "content"},
	};
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	for (int i = 0; i < lengthof(settings); i++)
		(void) set_config_option(settings[i][0], settings[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * The plan's query as written (its WITH queries and subqueries not pulled
 * up: flatten.c pulls them up each time it is planned) written out with
 * every name qualified that is not in pg_catalog: it reads the same under
 * any search_path (the runtime's, a restored database's), and its
 * constants alike under any settings (dataflow_kept_text_settings).
 */
char *
dataflow_plan_text(ViewPlan *plan)
{
	int			level = dataflow_kept_text_settings("pg_catalog");
	char	   *text;

	text = pg_get_querydef(plan->written, false);
	AtEOXact_GUC(true, level);
	return text;
}
