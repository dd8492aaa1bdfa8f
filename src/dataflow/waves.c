/*-------------------------------------------------------------------------
 *
 * waves.c
 *	  A grouped or joined view's round in waves: its updates at many times
 *	  evaluated with few runs of the executor, each time's output still
 *	  exact.  A group's output depends on its rows alone, so groups at
 *	  different times can share a run: wave k runs the query once over
 *	  every group at the k-th of the times that touch it in the round (its
 *	  updates up to that time applied, none after), and each group's
 *	  difference against its kept output is emitted at that group's time
 *	  (reduce.c).  The executor then runs as often as the most touched
 *	  group is touched, not once per time; a query over the whole input
 *	  (one group) still runs once per time.  No wave holds a group twice,
 *	  and a group's waves come in its times' order.  One run of a wave
 *	  takes groups until they hold WAVE_ROWS rows (the rest of the wave is
 *	  a further run), so that its memory stays bounded as a time's was.
 *
 *	  Only orders a round's touches of groups; must not change the groups
 *	  nor run the query (reduce.c does), nor touch the catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "dataflow/reduce_internal.h"

/* The groups' distinct rows and updates one run of a wave takes at most. */
#define WAVE_ROWS	(1 << 18)

/* Touches by wave, then by time. */
static int
touch_cmp(const void *a, const void *b)
{
	const Touch *ta = a;
	const Touch *tb = b;

	if (ta->wave != tb->wave)
		return ta->wave < tb->wave ? -1 : 1;
	return ta->time < tb->time ? -1 : ta->time > tb->time ? 1 : 0;
}

/*
 * The touches of a round's updates, sorted by time and, within a time,
 * put together by group: a group's updates at one time each, numbered in
 * the group's time order, in wave and time order.
 */
Touch *
reduce_touches(ReduceRound *r, int *ntouches)
{
	Touch	   *touches = palloc(sizeof(Touch) * Max(1, r->nupdates));
	int			n = 0;

	for (int i = 0, end; i < r->nupdates; i = end)
	{
		Touch	   *t = &touches[n++];

		for (end = i; end < r->nupdates && r->updates[end].group == r->updates[i].group &&
			 r->updates[end].time == r->updates[i].time; end++)
			;
		t->group = r->updates[i].group;
		t->time = r->updates[i].time;
		t->first = i;
		t->last = end;
		t->wave = t->group->touches++;
	}
	for (int i = 0; i < n; i++)
		touches[i].group->touches = 0;
	qsort(touches, n, sizeof(Touch), touch_cmp);
	*ntouches = n;
	return touches;
}

/* A group's distinct rows, of all its inputs. */
static int64
group_rows(ReduceRound *r, ViewGroup *group)
{
	int64		n = 0;

	for (int i = 0; i < r->ninputs; i++)
		n += group->inputs[i].nrows;
	return n;
}

/*
 * Where one run of the wave of touches[first] ends: at the wave's end, or
 * once its groups hold WAVE_ROWS rows and updates (at least one group).
 */
int
reduce_wave_end(ReduceRound *r, Touch *touches, int first, int ntouches)
{
	int64		rows = 0;
	int			last = first;

	while (last < ntouches && touches[last].wave == touches[first].wave &&
		   (last == first || rows < WAVE_ROWS))
	{
		rows += group_rows(r, touches[last].group) + touches[last].last - touches[last].first;
		last++;
	}
	return last;
}
