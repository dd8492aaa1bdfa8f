/*-------------------------------------------------------------------------
 *
 * chain.c
 *	  A join of several inputs that no one key joins (a JOIN b ON a.x =
 *	  b.x JOIN c ON b.y = c.y: order lines, orders, customers) planned as
 *	  a chain of binary join stages in the inputs' FROM order (without a
 *	  left join, the order their equalities allow): the first
 *	  joins the first two inputs, each next one the rows of the stage
 *	  before (stages.c) and the next input, each on its own key (every
 *	  hashable equality between the input and the inputs before it), each
 *	  projecting the columns that later stages and the outputs read.  A
 *	  left join's nullable side is one input, its ON its stage's (so is a
 *	  semi-join's or anti-join's inner input: semijoins.c); any other
 *	  condition (WHERE, an inner join's ON) applies after the join of the
 *	  first stage that has every input it reads: an inner join's condition
 *	  filters a product, and a left join only adds columns to the rows it
 *	  preserves, so a filter of them may come before or after it.
 *	  reduce.c runs each stage as a join on one key: a stage's output row
 *	  depends only on the rows of its key, on both sides (NULL keys are
 *	  kept together; the stage's query, which keeps the equalities, joins
 *	  none of them).
 *
 *	  Must not read or write tables, nor check expressions (plan.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dataflow/dataflow.h"

/*
 * A join's inputs in the chain's order and its conditions: by the place
 * (in that order) of the input whose stage applies them, a left join's by
 * its nullable input (in plan->inputs: with left joins, the chain keeps
 * FROM's order).
 */
typedef struct Chain
{
	Query	   *query;
	ViewPlan   *plan;
	int		   *places;			/* each input's (plan->inputs) place */
	int		   *order;			/* the input (plan->inputs) at each place */
	List	   *conditions;		/* WHERE and inner joins' conditions */
	List	  **filters;		/* those, by place */
	List	  **on;				/* a left join's ON, by input */
	bool	   *left;			/* the input is a left join's nullable side
								 * (or a semi-join's or anti-join's inner) */
	JoinType   *jointypes;		/* by input: that join's type */
} Chain;

/* How a stage reads the query's columns (stage_column). */
typedef struct StageColumns
{
	Chain	   *chain;
	int			stage;			/* the place of the input it joins */
	List	   *before;			/* the Vars the stage before projects */
} StageColumns;

/* The input (its place in plan->inputs) of a range table index. */
static int
input_of(ViewPlan *plan, Index rtindex)
{
	ListCell   *lc;

	foreach(lc, plan->inputs)
		if (lfirst_node(ViewPlanInput, lc)->rtindex == rtindex)
			return foreach_current_index(lc);
	elog(ERROR, "a view's query reads range table entry %u, not an input", rtindex);
}

/* The place in the chain of the input of a range table index. */
static int
input_place(Chain *chain, Index rtindex)
{
	return chain->places[input_of(chain->plan, rtindex)];
}

/* The least and greatest places of the inputs an expression reads (-1, -1: none). */
static void
input_span(Chain *chain, Node *expr, int *least, int *greatest)
{
	ListCell   *lc;

	*least = *greatest = -1;
	foreach(lc, pull_var_clause(expr, 0))
	{
		int			place = input_place(chain, lfirst_node(Var, lc)->varno);

		*least = *least < 0 ? place : Min(*least, place);
		*greatest = Max(*greatest, place);
	}
}

/*
 * Whether a condition is an equality that can key the stage of the input
 * at place k: one side of that input only, the other of inputs before it
 * only, of one type (else *mismatch says so), the operator hashable.
 * *side: the side of the input at k.
 */
static bool
key_equality(Chain *chain, Node *condition, int k, int *side, char **mismatch)
{
	OpExpr	   *op = (OpExpr *) condition;
	int			least[2];
	int			greatest[2];
	Oid			type;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	for (int i = 0; i < 2; i++)
		input_span(chain, list_nth(op->args, i), &least[i], &greatest[i]);
	*side = least[0] == k && greatest[0] == k ? 0 : 1;
	if (least[*side] != k || greatest[*side] != k ||
		least[1 - *side] < 0 || greatest[1 - *side] >= k)
		return false;
	type = exprType(list_nth(op->args, 0));
	if (type != exprType(list_nth(op->args, 1)))
	{
		*mismatch = psprintf("a join condition between types %s and %s (cast one side)",
							 format_type_be(type), format_type_be(exprType(list_nth(op->args, 1))));
		return false;
	}
	return op_hashjoinable(op->opno, type);
}

/*
 * The chain's order of the inputs: FROM's with a left join (its nullable
 * input after those its ON reads, the rows it preserves before it);
 * joined by inner joins only (which commute), from the first input each
 * next place the first input in FROM that an equality keys to those
 * before it (FROM a, c, b WHERE a.x = b.x AND b.y = c.y: a, b, c), or
 * FROM's next one, which its stage then refuses.
 */
static void
order_inputs(Chain *chain, int ninputs, bool inner)
{
	for (int i = 0; i < ninputs; i++)
		chain->places[i] = chain->order[i] = i;
	if (!inner)
		return;
	for (int i = 1; i < ninputs; i++)
		chain->places[i] = ninputs;
	for (int k = 1; k < ninputs; k++)
	{
		int			chosen = -1;
		char	   *mismatch = NULL;

		for (int i = 1; i < ninputs && chosen < 0; i++)
		{
			ListCell   *lc;
			int			side;

			if (chain->places[i] < ninputs)
				continue;
			chain->places[i] = k;
			foreach(lc, chain->conditions)
				if (chosen < 0 && key_equality(chain, lfirst(lc), k, &side, &mismatch))
					chosen = i;
			chain->places[i] = ninputs;
		}
		for (int i = 1; i < ninputs && chosen < 0; i++)
			if (chain->places[i] == ninputs)
				chosen = i;
		chain->places[chosen] = k;
		chain->order[k] = chosen;
	}
}

/* FROM's conditions, each given to its stage. */
static void
collect_conditions(Chain *chain, Node *node)
{
	ListCell   *lc;

	if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = (JoinExpr *) node;
		int			nullable;

		collect_conditions(chain, join->larg);
		collect_conditions(chain, join->rarg);
		if (join->jointype != JOIN_LEFT && join->jointype != JOIN_SEMI &&
			join->jointype != JOIN_ANTI)
		{
			chain->conditions = list_concat(chain->conditions,
											make_ands_implicit((Expr *) flatten_join_alias_vars(chain->query, join->quals)));
			return;
		}
		if (!IsA(join->rarg, RangeTblRef))
			dataflow_refuse("a left join whose nullable side is a join of inputs on different keys (left join one input at a time)");
		nullable = input_of(chain->plan, ((RangeTblRef *) join->rarg)->rtindex);
		chain->left[nullable] = true;
		chain->jointypes[nullable] = join->jointype;
		chain->on[nullable] =
			make_ands_implicit((Expr *) flatten_join_alias_vars(chain->query, join->quals));
	}
	else if (IsA(node, FromExpr))
	{
		foreach(lc, ((FromExpr *) node)->fromlist)
			collect_conditions(chain, lfirst(lc));
		chain->conditions = list_concat(chain->conditions,
										make_ands_implicit((Expr *) flatten_join_alias_vars(chain->query, ((FromExpr *) node)->quals)));
	}
}

/*
 * A query's expression as a stage reads it: the columns of the input it
 * joins from its range table entry 2, those of the inputs before from its
 * entry 1 (the first input; or the stage before's rows, a column for each
 * Var it projects).
 */
static Node *
stage_column(Node *node, StageColumns *columns)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		int			place = input_place(columns->chain, var->varno);
		ListCell   *lc;

		Assert(place <= columns->stage);
		if (place == columns->stage || columns->stage == 1)
			return (Node *) makeVar(place == columns->stage ? 2 : 1, var->varattno,
									var->vartype, var->vartypmod, var->varcollid, 0);
		foreach(lc, columns->before)
			if (equal(node, lfirst(lc)))
				return (Node *) makeVar(1, foreach_current_index(lc) + 1, var->vartype,
										var->vartypmod, var->varcollid, 0);
		elog(ERROR, "a column of a view's join is not projected by its stage before");
	}
	return expression_tree_mutator(node, stage_column, columns);
}

/*
 * A stage's key: its conditions' hashable equalities between an
 * expression of the input it joins and one of the inputs before it, each
 * side read by its stage's input.
 */
static void
stage_key(Chain *chain, StageColumns *columns, List *conditions, ViewPlan *stage)
{
	ViewPlanInput *before = linitial(stage->inputs);
	ViewPlanInput *joined = lsecond(stage->inputs);
	char	   *mismatch = NULL;
	ListCell   *lc;

	foreach(lc, conditions)
	{
		OpExpr	   *op = lfirst(lc);
		int			side;

		if (!key_equality(chain, lfirst(lc), columns->stage, &side, &mismatch))
			continue;
		joined->keys = lappend(joined->keys, stage_column(list_nth(op->args, side), columns));
		before->keys = lappend(before->keys,
							   stage_column(list_nth(op->args, 1 - side), columns));
		stage->key_eqops = lappend_oid(stage->key_eqops, op->opno);
		stage->key_collations = lappend_oid(stage->key_collations, op->inputcollid);
	}
	if (joined->keys != NIL)
		return;
	if (mismatch != NULL)
		dataflow_refuse(mismatch);
	if (chain->left[chain->order[columns->stage]] &&
		chain->jointypes[chain->order[columns->stage]] != JOIN_LEFT)
		dataflow_refuse("EXISTS, NOT EXISTS or IN (SELECT ...) without an equality between its input's columns and the outer query's (conditions other than =)");
	dataflow_refuse(chain->left[chain->order[columns->stage]] ?
					"a left join without an equality between its nullable input and the inputs before it (conditions other than =)" :
					"joins without an equality between an input and the inputs before it in FROM (cross joins, conditions other than =)");
}

/* An input of the query as an input of a stage, its entry rtindex there. */
static ViewPlanInput *
stage_input(Chain *chain, int place, Index rtindex)
{
	ViewPlanInput *input = palloc(sizeof(ViewPlanInput));

	*input = *list_nth_node(ViewPlanInput, chain->plan->inputs, chain->order[place]);
	input->rtindex = rtindex;
	input->keys = NIL;
	return input;
}

/* Conditions as one qual (NULL: none). */
static Node *
conjunction(List *conditions)
{
	return conditions == NIL ? NULL : (Node *) make_ands_explicit(conditions);
}

/*
 * The chain's stages of a join (plan->inputs, in order_inputs's order)
 * whose last selects outputs (TargetEntry over the query's inputs, no
 * aggregates).
 */
List *
dataflow_plan_chain(Query *query, ViewPlan *plan, List *outputs)
{
	int			ninputs = list_length(plan->inputs);
	Chain		chain = {query, plan};
	List	   *stages = NIL;
	List	   *before = NIL;
	RangeTblEntry *rows = NULL;
	bool		inner = true;
	ListCell   *lc;

	chain.places = palloc(sizeof(int) * ninputs);
	chain.order = palloc(sizeof(int) * ninputs);
	chain.filters = palloc0(sizeof(List *) * ninputs);
	chain.on = palloc0(sizeof(List *) * ninputs);
	chain.left = palloc0(sizeof(bool) * ninputs);
	chain.jointypes = palloc0(sizeof(JoinType) * ninputs);
	outputs = (List *) flatten_join_alias_vars(query, (Node *) outputs);
	collect_conditions(&chain, (Node *) query->jointree);
	for (int i = 0; i < ninputs; i++)
		inner &= !chain.left[i];
	order_inputs(&chain, ninputs, inner);
	/* conditions that apply after a join: at the first stage with all they read */
	foreach(lc, chain.conditions)
	{
		int			least;
		int			greatest;

		input_span(&chain, lfirst(lc), &least, &greatest);
		greatest = Max(greatest, 1);
		chain.filters[greatest] = lappend(chain.filters[greatest], lfirst(lc));
	}
	for (int k = 1; k < ninputs; k++)
	{
		StageColumns columns = {&chain, k, before};
		ViewPlan   *stage = palloc0(sizeof(ViewPlan));
		Query	   *sq = copyObject(query);
		RangeTblRef *refs[2] = {makeNode(RangeTblRef), makeNode(RangeTblRef)};
		List	   *from = list_make2(refs[0], refs[1]);
		List	   *targetlist = outputs;
		bool		left = chain.left[chain.order[k]];
		List	   *on = chain.on[chain.order[k]];

		stage->inputs = list_make2(k == 1 ? stage_input(&chain, 0, 1) :
								   dataflow_stage_rows_input(),
								   stage_input(&chain, k, 2));
		stage_key(&chain, &columns, left ? on : chain.filters[k], stage);
		sq->rtable = list_make2(k == 1 ?
								rt_fetch(linitial_node(ViewPlanInput, plan->inputs)->rtindex,
										 sq->rtable) : rows,
								rt_fetch(list_nth_node(ViewPlanInput, plan->inputs,
													   chain.order[k])->rtindex,
										 sq->rtable));

		/* what later stages and the outputs read of the inputs up to this one */
		if (k < ninputs - 1)
		{
			List	   *later = list_make1(outputs);
			List	   *projected = NIL;
			ListCell   *lc;

			for (int j = k + 1; j < ninputs; j++)
				later = lappend(lappend(later, chain.filters[j]), chain.on[chain.order[j]]);
			foreach(lc, pull_var_clause((Node *) later, 0))
				if (input_place(&chain, lfirst_node(Var, lc)->varno) <= k)
					projected = list_append_unique(projected, lfirst(lc));
			rows = dataflow_stage_rows(projected, &targetlist);
			before = projected;
		}

		refs[0]->rtindex = 1;
		refs[1]->rtindex = 2;
		if (left)
		{
			JoinExpr   *join = makeNode(JoinExpr);

			join->jointype = chain.jointypes[chain.order[k]];
			join->larg = (Node *) refs[0];
			join->rarg = (Node *) refs[1];
			join->quals = stage_column(conjunction(on), &columns);
			from = list_make1(join);
		}
		sq->jointree = makeFromExpr(from, stage_column(conjunction(chain.filters[k]), &columns));
		sq->targetList = (List *) stage_column((Node *) targetlist, &columns);
		sq->groupClause = NIL;
		sq->groupDistinct = false;
		sq->distinctClause = NIL;
		sq->havingQual = NULL;
		sq->hasAggs = false;
		stage->targetlist = dataflow_plan_columns(sq->targetList);
		stage->reduces = true;
		stage->kind = "join";
		stage->query = sq;
		stages = lappend(stages, stage);
	}
	return stages;
}
