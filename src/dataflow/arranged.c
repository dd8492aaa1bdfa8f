/*-------------------------------------------------------------------------
 *
 * arranged.c
 *	  A grouping's or join's input rows read from a shared arrangement of
 *	  the input by the stage's key (arrange/spine.c's spine_share: a user
 *	  index's on the same collection and key columns, or one the runtime
 *	  keeps for views, published like an index's), instead of kept in the
 *	  groups.  Only a first stage's inputs whose keys are plain columns
 *	  compared by their type's default equality and collation (what an
 *	  index's keys are) read them so; the rest keep their rows in the
 *	  groups (reduce.c).
 *
 *	  The round reads such an input's updates in its range from the shard
 *	  once (read_round): they bring the arrangement up to the round's end
 *	  (a feed, arranged as the shard's rows are) and are the round's
 *	  updates of the input (reduce.c replays them), so the range is not
 *	  read a second time for the arrangement.  A range whose copy would
 *	  pass maintenance_work_mem (a big load at one time) is not kept: the
 *	  arrangement and the round read it from the shard each.
 *
 *	  A round loads the rows of each group it touches, as they are before
 *	  the group's first time in the round: the arrangement's rows of the
 *	  key's hash at that time (at or after the view's upper, where it holds
 *	  the arrangement's since) that pass WHERE and fall in the group, less
 *	  the group's updates at that time (reduce.c takes them out).  The
 *	  groups hold them for the round only, in the round's rows_cxt: reduce.c
 *	  merges the round's updates into them as into kept rows, and the
 *	  context is reset at the round's end.  A group of linear aggregates
 *	  that knows its states (accums.c) needs only the rows the round
 *	  updates, with their counts before it: each looked up by its image in
 *	  the hash's entries (walk_hash_row_counts), not the group's rows
 *	  walked; it counts its rows itself.  Of a source, whose rows never
 *	  count below zero, it needs none: its diffs are the rows' changes.
 *	  One that does not know them (a lazy group's first touch) walks its
 *	  rows once, each into its states as the walk passes it, none kept but
 *	  those the round updates.
 *
 *	  A hydration's read of such an input builds its arrangement too
 *	  (arranged_hydration_begin, hydrate.c), when the runtime has none.
 *
 *	  Must not change an arrangement (spine.c does) nor write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "arrange/walk.h"
#include "dataflow/reduce_internal.h"

/*
 * Can the input's rows be read from an arrangement of its row type by its
 * keys?  Each key a column of the key's type in the groups' keys (the
 * first input's), told apart by the type's default equality under the
 * column's collation, as an index's key columns are.
 */
static bool
keys_are_columns(ViewPlan *plan, ViewPlanInput *pin, AttrNumber *attnums)
{
	List	   *group_keys = linitial_node(ViewPlanInput, plan->inputs)->keys;
	TupleDesc	desc;
	bool		ok = pin->name != NULL && pin->object >= 0 && pin->keys != NIL &&
		list_length(pin->keys) <= INDEX_MAX_KEYS;
	ListCell   *lc;

	if (!ok)
		return false;
	desc = lookup_rowtype_tupdesc(pin->row_type, -1);
	foreach(lc, pin->keys)
	{
		Var		   *var = lfirst(lc);
		int			k = foreach_current_index(lc);
		Form_pg_attribute att;

		if (!IsA(var, Var) || var->varattno < 1 || var->varattno > desc->natts)
		{
			ok = false;
			break;
		}
		att = TupleDescAttr(desc, var->varattno - 1);
		ok = !att->attisdropped && att->atttypid == var->vartype &&
			exprType(list_nth(group_keys, k)) == var->vartype &&
			list_nth_oid(plan->key_eqops, k) ==
			lookup_type_cache(var->vartype, TYPECACHE_EQ_OPR)->eq_opr &&
			list_nth_oid(plan->key_collations, k) == att->attcollation;
		if (!ok)
			break;
		attnums[k] = var->varattno;
	}
	ReleaseTupleDesc(desc);
	return ok;
}

/*
 * One update of the round's range, kept with a copy of its stored row,
 * unless the copies pass maintenance_work_mem: then none is kept.
 */
static void
keep_update(int64 time, int64 diff, Datum row, void *arg)
{
	RoundUpdates *u = arg;
	MemoryContext old;
	RoundUpdate *kept;

	if (u->updates == NULL)
		return;
	u->bytes += sizeof(RoundUpdate) + VARSIZE_ANY(DatumGetPointer(row));
	if (u->bytes > (Size) maintenance_work_mem * 1024)
	{
		MemoryContextReset(u->cxt);
		u->updates = NULL;
		u->n = 0;
		return;
	}
	old = MemoryContextSwitchTo(u->cxt);
	if (u->n == u->room)
	{
		u->room *= 2;
		u->updates = repalloc_huge(u->updates, sizeof(RoundUpdate) * u->room);
	}
	kept = &u->updates[u->n++];
	kept->time = time;
	kept->diff = diff;
	kept->row = datumCopy(row, false, -1);
	MemoryContextSwitchTo(old);
}

/*
 * The input's updates in [start, end), as its shard stores them, or NULL
 * if they would take more than maintenance_work_mem.
 */
static RoundUpdates *
read_round(CatalogObject *in, int64 start, int64 end)
{
	RoundUpdates *u = palloc(sizeof(RoundUpdates));

	u->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_peek view round updates",
								   ALLOCSET_DEFAULT_SIZES);
	u->n = 0;
	u->room = 64;
	u->bytes = 0;
	u->updates = MemoryContextAlloc(u->cxt, sizeof(RoundUpdate) * u->room);
	persist_scan_range(in->shard, start, end, keep_update, u);
	if (u->updates == NULL)
	{
		MemoryContextDelete(u->cxt);
		pfree(u);
		return NULL;
	}
	return u;
}

/* A SpineFeed's scan: the kept updates with lower <= time < upper. */
static void
scan_round(void *state, int64 lower, int64 upper, SpineUpdateFn fn, void *arg)
{
	RoundUpdates *u = state;

	for (int64 i = 0; i < u->n; i++)
		if (u->updates[i].time >= lower && u->updates[i].time < upper)
			fn(u->updates[i].time, u->updates[i].diff, u->updates[i].row, arg);
}

/* Hand fn every update the round read of an input (reduce.c's read). */
void
arranged_replay(RoundUpdates *updates, SpineUpdateFn fn, void *arg)
{
	scan_round(updates, PG_INT64_MIN, PG_INT64_MAX, fn, arg);
}

/* Can the first stage's i-th input read its rows from an arrangement by attnums? */
static bool
shareable(ViewPlan *plan, int i, ViewPlanInput *pin, CatalogObject **in, AttrNumber *attnums)
{
	return i < 32 && keys_are_columns(plan, pin, attnums) &&
		in[pin->object]->row_type == pin->row_type;
}

/*
 * A hydration's read of the branch's input object (in[object]) at at also
 * builds the arrangement its first stage reads that input from, when it
 * reads one and the runtime has none (spine_hydration_begin): the next
 * round then finds it built, up to at + 1.  NULL: it reads none, or one
 * is there.
 */
SpineHydration *
arranged_hydration_begin(ViewPlan *branch, CatalogObject *v, CatalogObject **in, int object,
						 int64 at)
{
	ViewPlan   *first = branch->stages != NIL ? linitial(branch->stages) : branch;
	ListCell   *lc;

	foreach(lc, first->inputs)
	{
		ViewPlanInput *pin = lfirst(lc);
		AttrNumber	attnums[INDEX_MAX_KEYS];

		if (pin->object == object)
			return shareable(first, foreach_current_index(lc), pin, in, attnums) ?
				spine_hydration_begin(v->id, in[object], list_length(pin->keys), attnums, at) :
				NULL;
	}
	return NULL;
}

/*
 * The first stage's inputs that read their rows from arrangements (their
 * spines in reads[], NULL for the others): each brought up to end and held
 * at start (the view's upper) by the view.  Those that can be read so get
 * their updates in [start, end) in updates[] (NULL for the others), which
 * also bring their arrangements up to end.  Returns them as a mask of
 * inputs; groups kept under another mask are built again.
 */
uint32
arranged_choose(ViewPlan *plan, CatalogObject *v, CatalogObject **in, int64 start,
				int64 end, SpineRead **reads, RoundUpdates **updates)
{
	uint32		shared = 0;
	ListCell   *lc;

	foreach(lc, plan->inputs)
	{
		ViewPlanInput *pin = lfirst(lc);
		int			i = foreach_current_index(lc);
		AttrNumber	attnums[INDEX_MAX_KEYS];
		SpineRead  *read;
		SpineFeed	feed;

		reads[i] = NULL;
		updates[i] = NULL;
		if (!shareable(plan, i, pin, in, attnums))
			continue;
		updates[i] = read_round(in[pin->object], start, end);
		feed.lower = start;
		feed.upper = end;
		feed.scan = scan_round;
		feed.state = updates[i];
		read = palloc(sizeof(SpineRead));
		if (!spine_share(v->id, in[pin->object], list_length(pin->keys), attnums, start, end,
						 updates[i] != NULL ? &feed : NULL, read))
		{
			pfree(read);
			continue;
		}
		reads[i] = read;
		shared |= (uint32) 1 << i;
	}
	return shared;
}

/* A load of one group's rows of one input. */
typedef struct GroupLoad
{
	ReduceRound *r;
	ReduceInput *input;
	ViewGroup  *group;
	const Datum *key;			/* the group's key columns, or NULL: some
								 * is NULL */
	GroupRow   *rows;
	int			nrows;
	int			room;
} GroupLoad;

/*
 * Is a row with a NULL key column (all such rows hash alike) the group's?
 * Looked up as the groups tell keys apart; the row is in the input's slot.
 */
static bool
null_key_in_group(GroupLoad *l)
{
	TupleHashEntry entry;

	ExecProject(l->input->keys);
	entry = LookupTupleHashEntry(l->r->state->table, l->r->state->key_slot, NULL, NULL);
	return entry != NULL && entry->additional == l->group;
}

/*
 * Is a row of the key's hash the group's and does it pass WHERE?  A group
 * without a NULL key compares the row's key columns with its own by the
 * arrangement's equality, which is the grouping's (keys_are_columns), with
 * no lookup among the groups.
 */
static bool
row_in_group(GroupLoad *l, Datum row)
{
	ViewInput  *input = &l->input->input;
	bool		mine;

	if (l->key != NULL && !batch_key_row_matches(l->input->read->key, row, l->key))
		return false;			/* another key of the same hash */
	if (l->key != NULL && input->qual == NULL)
		return true;			/* (no WHERE) */
	mine = view_input_passes(input, row) && (l->key != NULL || null_key_in_group(l));
	ExecClearTuple(input->slot);
	ResetExprContext(input->econtext);
	return mine;
}

/* A row of the key's hash, with its count: kept if it is the group's. */
static bool
load_row(Datum row, int64 count, void *arg)
{
	GroupLoad  *l = arg;

	if (row_in_group(l, row))
	{
		Size		len = VARSIZE(DatumGetPointer(row));
		GroupRow   *kept;

		if (l->nrows == l->room)
		{
			l->room = Max(8, l->room * 2);
			l->rows = l->rows == NULL ?
				MemoryContextAlloc(l->r->rows_cxt, sizeof(GroupRow) * l->room) :
				repalloc(l->rows, sizeof(GroupRow) * l->room);
		}
		kept = &l->rows[l->nrows++];
		kept->row = PointerGetDatum(MemoryContextAlloc(l->r->rows_cxt, len));
		memcpy(DatumGetPointer(kept->row), DatumGetPointer(row), len);
		kept->count = count;
	}
	return true;
}

static int
group_row_cmp(const void *a, const void *b)
{
	return group_row_image_cmp(DatumGetPointer(((const GroupRow *) a)->row),
							   DatumGetPointer(((const GroupRow *) b)->row));
}

/*
 * The hash the group's rows are arranged by, from its key columns, which
 * go in values (by reference into the group's key); NULL if some is NULL
 * (such rows hash to 0: batch_key_hash_row).
 */
static uint32
group_hash(ReduceRound *r, ViewGroup *group, KeyInfo *key, Datum *values, bool *anynull)
{
	bool		isnull;

	*anynull = false;
	ExecStoreMinimalTuple(group->key, r->state->found_slot, false);
	for (int k = 0; k < key->nkeys; k++)
	{
		values[k] = slot_getattr(r->state->found_slot, k + 1, &isnull);
		*anynull |= isnull;
	}
	ExecClearTuple(r->state->found_slot);
	return *anynull ? 0 : batch_key_hash_values(key, values);
}

/* The group's rows of a shared input at the time, in image order. */
static void
load_input(ReduceRound *r, ViewGroup *group, int i, int64 time)
{
	ReduceInput *input = &r->inputs[i];
	SpineRead  *read = input->read;
	GroupLoad	l = {r, input, group, NULL, NULL, 0, 0};
	Datum		values[INDEX_MAX_KEYS];
	bool		anynull;
	uint32		hash = group_hash(r, group, read->key, values, &anynull);

	l.key = anynull ? NULL : values;
	walk_hash_rows(read->batches, read->nbatches, hash, time, load_row, &l);
	if (l.nrows > 1)
		qsort(l.rows, l.nrows, sizeof(GroupRow), group_row_cmp);
	group->inputs[i].rows = l.rows;
	group->inputs[i].nrows = l.nrows;
}

static int
row_image_order(const void *a, const void *b)
{
	return group_row_image_cmp(DatumGetPointer(*(const Datum *) a),
							   DatumGetPointer(*(const Datum *) b));
}

/* rows[] sorted by image, each image once: returns how many are left. */
static int
distinct_images(Datum *rows, int nrows)
{
	int			ndistinct = 0;

	qsort(rows, nrows, sizeof(Datum), row_image_order);
	for (int u = 0; u < nrows; u++)
		if (ndistinct == 0 || row_image_order(&rows[ndistinct - 1], &rows[u]) != 0)
			rows[ndistinct++] = rows[u];
	return ndistinct;
}

/*
 * The place of a row's image in rows[] (distinct, in image order) from
 * *next on, or -1: rows come in image order (a walk passes one hash's
 * so), and *next moves past those before it.
 */
static int
image_next(const Datum *rows, int nrows, int *next, Datum row)
{
	for (; *next < nrows; (*next)++)
	{
		int			cmp = row_image_order(&rows[*next], &row);

		if (cmp == 0)
			return (*next)++;
		if (cmp > 0)
			break;
	}
	return -1;
}

/* A partial group's rows of input i: rows[] (in image order) not counted 0. */
static void
keep_counted(ReduceRound *r, ViewGroup *group, int i, const Datum *rows, const int64 *counts,
			 int nrows)
{
	GroupRow   *kept = MemoryContextAlloc(r->rows_cxt, sizeof(GroupRow) * Max(1, nrows));
	int			nkept = 0;

	for (int u = 0; u < nrows; u++)
		if (counts[u] != 0)
		{
			Size		len = VARSIZE(DatumGetPointer(rows[u]));

			kept[nkept].row = PointerGetDatum(MemoryContextAlloc(r->rows_cxt, len));
			memcpy(DatumGetPointer(kept[nkept].row), DatumGetPointer(rows[u]), len);
			kept[nkept++].count = counts[u];
		}
	group->inputs[i].rows = kept;
	group->inputs[i].nrows = nkept;
}

/*
 * A partial group's rows of a shared input (accums.c keeps its states and
 * its count of rows, which is all a round needs besides them): only the
 * rows the round updates (rows[], of the group, some more than once), in
 * image order, with their counts at the time.  They are the group's rows
 * of the key, passed WHERE, so each row's count is its image's in the
 * arrangement.
 */
static void
load_updated(ReduceRound *r, ViewGroup *group, int i, int64 time, Datum *rows, int nrows)
{
	SpineRead  *read = r->inputs[i].read;
	Datum		values[INDEX_MAX_KEYS];
	bool		anynull;
	uint32		hash = group_hash(r, group, read->key, values, &anynull);
	int64	   *counts = palloc(sizeof(int64) * Max(1, nrows));
	int			ndistinct = distinct_images(rows, nrows);

	walk_hash_row_counts(read->batches, read->nbatches, hash, rows, ndistinct, time, counts);
	keep_counted(r, group, i, rows, counts, ndistinct);
	pfree(counts);
}

/*
 * A walk that computes a group's states from its rows as it passes them
 * (learn_states), counting the rows the round updates.
 */
typedef struct StatesLoad
{
	GroupLoad	l;
	Datum	   *updated;		/* the rows the round updates, distinct, in
								 * image order */
	int			nupdated;
	int64	   *counts;			/* theirs at the time */
	int			next_updated;	/* the first of them the walk has not passed */
	Datum	   *touched;		/* the first touch's rows, distinct, in image
								 * order */
	int64	   *diffs;			/* each one's updates at its time summed */
	bool	   *seen;			/* whether the walk passed it */
	int			ntouched;
	int			next_touched;	/* the first of them the walk has not passed */
} StatesLoad;

/* A row's count before updates of diff, from its count after them. */
static int64
count_before(int64 count, int64 diff)
{
	if (pg_sub_s64_overflow(count, diff, &count))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("a row's count in its group is out of range")));
	return count;
}

/*
 * A row of the key's hash with its count at the first touch's time: if
 * the group's, counted if the round updates it, and into the group's
 * states as it was before that touch.
 */
static bool
learn_row(Datum row, int64 count, void *arg)
{
	StatesLoad *s = arg;
	int			u;

	if (!row_in_group(&s->l, row))
		return true;
	if ((u = image_next(s->updated, s->nupdated, &s->next_updated, row)) >= 0)
		s->counts[u] = count;
	if ((u = image_next(s->touched, s->ntouched, &s->next_touched, row)) >= 0)
	{
		s->seen[u] = true;
		count = count_before(count, s->diffs[u]);
	}
	accums_add_row(s->l.r, s->l.group, row, count);
	return true;
}

/*
 * A partial group that does not know its states learns them
 * from its rows of a shared input as the walk passes them, at the time of
 * its first touch less that touch's updates: as before the touch, which
 * its round then applies.  Of its rows it keeps, partial, only those the
 * round updates (rows[], as load_updated), with their counts at the time.
 * A row of the touch whose count at the time is 0 (the walk does not pass
 * it) counted the touch's retractions before.
 */
static void
learn_states(ReduceRound *r, ViewGroup *group, int i, Touch *first, Datum *rows, int nrows)
{
	StatesLoad	s = {{r, &r->inputs[i], group, NULL, NULL, 0, 0}};
	SpineRead  *read = r->inputs[i].read;
	Datum		values[INDEX_MAX_KEYS];
	bool		anynull;
	uint32		hash = group_hash(r, group, read->key, values, &anynull);
	int			n = first->last - first->first;

	s.l.key = anynull ? NULL : values;
	s.updated = rows;
	s.nupdated = distinct_images(rows, nrows);
	s.counts = palloc0(sizeof(int64) * Max(1, nrows));
	/* (a touch's updates come by input, then by row image: groups_sort_updates) */
	s.touched = palloc(sizeof(Datum) * Max(1, n));
	s.diffs = palloc0(sizeof(int64) * Max(1, n));
	s.seen = palloc0(sizeof(bool) * Max(1, n));
	for (int u = first->first; u < first->last; u++)
	{
		GroupUpdate *update = &r->updates[u];

		if (update->input != i)
			continue;
		if (s.ntouched == 0 ||
			row_image_order(&s.touched[s.ntouched - 1], &update->row) != 0)
			s.touched[s.ntouched++] = update->row;
		if (pg_add_s64_overflow(s.diffs[s.ntouched - 1], update->diff,
								&s.diffs[s.ntouched - 1]))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("a row's count in its group is out of range")));
	}
	accums_start(r, group);
	walk_hash_rows(read->batches, read->nbatches, hash, first->time, learn_row, &s);
	for (int u = 0; u < s.ntouched; u++)
		if (!s.seen[u])
			accums_add_row(r, group, s.touched[u], count_before(0, s.diffs[u]));
	keep_counted(r, group, i, s.updated, s.counts, s.nupdated);
	pfree(s.counts);
	pfree(s.touched);
	pfree(s.diffs);
	pfree(s.seen);
}

/*
 * The inputs a touched group's rows are needed of: all, but in a join
 * linear in each input (delta.c), which joins each input's updates with
 * the other inputs' rows, those of the inputs other than one that has
 * updates in the group this round.  (An input not loaded takes its
 * updates into rows the round does not read, let go of at its end.)
 */
static uint32
inputs_needed(ReduceRound *r, uint32 updated)
{
	uint32		needed = 0;

	if (!r->delta || r->ninputs > 32)
		return ~(uint32) 0;
	for (int i = 0; i < r->ninputs; i++)
		if ((updated & ~((uint32) 1 << i)) != 0)
			needed |= (uint32) 1 << i;
	return needed;
}

/*
 * A partial group's rows loaded whole at the time of one of its touches,
 * that touch's updates included (steps.c takes them out again): its
 * states are computed again from them (accums.c's inverse transition
 * could not).
 */
void
arranged_reload(ReduceRound *r, ViewGroup *group, int64 time)
{
	group->partial = false;
	group->some_row = (Datum) 0;
	for (int i = 0; i < r->ninputs; i++)
		if (r->inputs[i].read != NULL)
			load_input(r, group, i, time);
}

/*
 * The rows each partial group's touches update, gathered by the group's
 * place in the round's loaded groups (NULL for a group not partial).
 */
static Datum **
updated_rows(ReduceRound *r, Touch *touches, int ntouches, int *nrows)
{
	Datum	  **rows = palloc0(sizeof(Datum *) * Max(1, r->nloaded));

	for (int t = 0; t < ntouches; t++)
		if (touches[t].group->partial)
			nrows[touches[t].group->loaded_at] += touches[t].last - touches[t].first;
	for (int g = 0; g < r->nloaded; g++)
	{
		if (r->loaded[g]->partial)
			rows[g] = palloc(sizeof(Datum) * nrows[g]);
		nrows[g] = 0;
	}
	for (int t = 0; t < ntouches; t++)
	{
		int			g = touches[t].group->loaded_at;

		if (!touches[t].group->partial)
			continue;
		for (int u = touches[t].first; u < touches[t].last; u++)
			rows[g][nrows[g]++] = r->updates[u].row;
	}
	return rows;
}

/*
 * The touched groups' rows of the shared inputs at each group's first
 * touch in the round (wave 0: its earliest time), its updates at that
 * time included (reduce.c takes them out again); in a delta join only
 * the inputs whose rows the round joins with (inputs_needed).  A group
 * of linear aggregates that knows its states (accums_partial) loads only
 * the rows the round updates: it is partial; one that does not know them
 * (partial too) learns them as the walk passes its rows.
 */
void
arranged_load(ReduceRound *r, Touch *touches, int ntouches)
{
	uint32	   *updated;
	Touch	  **first;
	int		   *nrows;
	Datum	  **rows;

	if (r->state->shared == 0 || r->rows_whole)
		return;
	r->loaded = palloc(sizeof(ViewGroup *) * Max(1, ntouches));
	updated = palloc0(sizeof(uint32) * Max(1, ntouches));
	first = palloc(sizeof(Touch *) * Max(1, ntouches));
	nrows = palloc0(sizeof(int) * Max(1, ntouches));
	for (int t = 0; t < ntouches; t++)
	{
		ViewGroup  *group = touches[t].group;

		if (touches[t].wave != 0)
			continue;
		group->loaded_at = r->nloaded;
		group->partial = accums_partial(r, group);
		if (group->partial)
			group->some_row = r->updates[touches[t].first].row;
		first[r->nloaded] = &touches[t];
		r->loaded[r->nloaded++] = group;
	}
	for (int t = 0; t < ntouches; t++)
		for (int u = touches[t].first; u < touches[t].last; u++)
			updated[touches[t].group->loaded_at] |= (uint32) 1 << (r->updates[u].input % 32);
	rows = updated_rows(r, touches, ntouches, nrows);
	for (int g = 0; g < r->nloaded; g++)
	{
		ViewGroup  *group = r->loaded[g];
		uint32		needed = inputs_needed(r, updated[g]);

		for (int i = 0; i < r->ninputs; i++)
			if (r->inputs[i].read == NULL || (needed & ((uint32) 1 << i)) == 0)
				continue;
			else if (group->partial && group->accums == NULL)
				learn_states(r, group, i, first[g], rows[g], nrows[g]);
			else if (group->partial && !r->inputs[i].never_negative)
				load_updated(r, group, i, first[g]->time, rows[g], nrows[g]);
			else if (group->partial)
				continue;		/* (accums.c needs no row's count) */
			else
				load_input(r, group, i, first[g]->time);
		if (rows[g] != NULL)
			pfree(rows[g]);
	}
	pfree(rows);
	pfree(nrows);
	pfree(updated);
	pfree(first);
}

/* A group's rows of the shared inputs let go of (with the round's rows_cxt). */
static void
release_group(ReduceRound *r, ViewGroup *group)
{
	for (int i = 0; i < r->ninputs; i++)
		if (r->inputs[i].read != NULL)
		{
			group->inputs[i].rows = NULL;
			group->inputs[i].nrows = 0;
		}
	group->partial = false;
	group->some_row = (Datum) 0;
	group->loaded_at = -1;
}

/* A group about to be freed (emptied) is no longer the round's to let go of. */
void
arranged_forget(ReduceRound *r, ViewGroup *group)
{
	if (group->loaded_at >= 0 && r->loaded != NULL)
		r->loaded[group->loaded_at] = NULL;
	group->loaded_at = -1;
}

/*
 * At the round's end (its emptied groups dropped), the groups let go of
 * the shared inputs' rows: those it loaded, or every group's after the
 * groups were built again (rows_whole).  The arrangements' bytes are the
 * stage's state, shared.
 */
void
arranged_release(ReduceRound *r)
{
	ReduceState *state = r->state;

	if (state->shared == 0)
		return;
	if (r->rows_whole)
	{
		TupleHashIterator iter;
		TupleHashEntry entry;

		InitTupleHashIterator(state->table, &iter);
		while ((entry = ScanTupleHashTable(state->table, &iter)) != NULL)
			release_group(r, entry->additional);
		TermTupleHashIterator(&iter);
	}
	for (int g = 0; g < r->nloaded; g++)
		if (r->loaded[g] != NULL)
			release_group(r, r->loaded[g]);
	r->nloaded = 0;
	MemoryContextReset(r->rows_cxt);
	/* each arrangement once (a self-join reads one twice) */
	for (int i = 0; i < r->ninputs; i++)
	{
		SpineRead  *read = r->inputs[i].read;
		bool		counted = false;

		for (int j = 0; j < i && read != NULL; j++)
			counted |= r->inputs[j].read != NULL && r->inputs[j].read->index == read->index;
		if (read != NULL && !counted)
			dataflow_count_shared(read->bytes);
	}
}
