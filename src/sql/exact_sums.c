/*-------------------------------------------------------------------------
 *
 * exact_sums.c
 *	  peek.exact_sum, peek.exact_sum4 and peek.exact_avg: the sums and
 *	  averages of floats that maintained views compute in place of
 *	  PostgreSQL's (dataflow/float_sums.c), whose result depends on the
 *	  order of the rows.  These do not: the finite values are summed
 *	  exactly (Shewchuk's partials, as Python's math.fsum) and the sum
 *	  rounded once, Infinity, -Infinity and NaN are counted apart and give
 *	  what any order of float additions gives them (NaN with a NaN or with
 *	  both infinities, else the infinity).  An average is that sum divided
 *	  by the count, as PostgreSQL's float average divides its sum.  A sum
 *	  beyond the float's range fails with 22003, as PostgreSQL's float
 *	  addition does; a partial sum beyond float8's does not, whatever the
 *	  order (1e308 + 1e308 - 1e308 is 1e308): the partials carry whole
 *	  2^1023s out into a count, put back when the sum is rounded.
 *
 *	  Must not keep anything outside the aggregate's own memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/float.h"

#include "common/ids.h"

PEEK_SQL_FUNCTION(peek_exact_sum_accum);
PEEK_SQL_FUNCTION(peek_exact_sum_final);
PEEK_SQL_FUNCTION(peek_exact_sum4_final);
PEEK_SQL_FUNCTION(peek_exact_avg_final);

typedef struct ExactSum
{
	int64		count;			/* the non-null values */
	int64		posinf;
	int64		neginf;
	int64		nan;
	int64		carried;		/* 2^1023s taken out of the partials (signed) */
	int			npartials;		/* non-overlapping, increasing magnitude */
	int			maxpartials;
	double	   *partials;
} ExactSum;

/*
 * Take 2^1023 out of a value at least that large, counting it in carried:
 * exact, as the value lies in [2^1023, 2^1024).
 */
static double
carry_out(ExactSum *s, double x)
{
	if (fabs(x) < ldexp(1.0, 1023))
		return x;
	s->carried += x > 0.0 ? 1 : -1;
	return x - copysign(ldexp(1.0, 1023), x);
}

/*
 * Add a finite value to the partials: their sum plus the 2^1023s carried
 * stays the exact sum.  Two values whose sum overflows are both of its
 * sign and the larger at least 2^1023 (only the top partial can be), so
 * carrying those out of both leaves two values whose sum is finite.
 */
static void
add_finite(ExactSum *s, double x)
{
	int			n = 0;

	for (int j = 0; j < s->npartials; j++)
	{
		double		y = s->partials[j];
		double		hi;
		double		lo;

		if (isinf(x + y))
		{
			x = carry_out(s, x);
			y = carry_out(s, y);
		}
		if (fabs(x) < fabs(y))
		{
			double		t = x;

			x = y;
			y = t;
		}
		hi = x + y;
		lo = y - (hi - x);
		if (lo != 0.0)
			s->partials[n++] = lo;
		x = hi;
	}
	if (n == s->maxpartials)
	{
		s->maxpartials *= 2;
		s->partials = repalloc(s->partials, sizeof(double) * s->maxpartials);
	}
	s->partials[n++] = x;
	s->npartials = n;
}

/* The exact sum of the finite values, rounded once to the nearest double. */
static double
rounded_sum(ExactSum *s)
{
	int			n = s->npartials;
	double		hi = 0.0;
	double		lo = 0.0;

	if (n == 0)
		return 0.0;
	hi = s->partials[--n];
	while (n > 0)
	{
		double		x = hi;
		double		y = s->partials[--n];

		hi = x + y;
		lo = y - (hi - x);
		if (lo != 0.0)
			break;
	}
	/* half-way between two doubles: the partials below tell which way */
	if (n > 0 && ((lo < 0.0 && s->partials[n - 1] < 0.0) ||
				  (lo > 0.0 && s->partials[n - 1] > 0.0)))
	{
		double		y = lo * 2.0;
		double		x = hi + y;

		if (y == x - hi)
			hi = x;
	}
	return hi;
}

/*
 * Copy s's exact sum of the finite values into all as partials alone (a
 * palloc'd copy, with room for one more), the carried 2^1023s put back.  A
 * sum they cannot hold is beyond float8's range: the partials' own sum is
 * below 2^1024 in magnitude, so beyond 3 carried ones it is, and putting
 * them back carries again exactly when it is.  s is not changed: a
 * window's frame calls the final function again.
 */
static void
settle(ExactSum *s, ExactSum *all)
{
	double		unit = copysign(ldexp(1.0, 1023), (double) s->carried);

	if (s->carried > 3 || s->carried < -3)
		float_overflow_error();
	*all = *s;
	all->carried = 0;
	all->maxpartials = s->npartials + 4;
	all->partials = palloc(sizeof(double) * all->maxpartials);
	memcpy(all->partials, s->partials, sizeof(double) * s->npartials);
	for (int64 i = 0; i < (s->carried > 0 ? s->carried : -s->carried); i++)
		add_finite(all, unit);
	if (all->carried != 0)
		float_overflow_error();
}

/* The sum of every value, specials included, or false for no value. */
static bool
exact_sum(FunctionCallInfo fcinfo, double *sum)
{
	ExactSum   *s = PG_ARGISNULL(0) ? NULL : (ExactSum *) PG_GETARG_POINTER(0);

	if (s == NULL || s->count == 0)
		return false;
	if (s->nan > 0 || (s->posinf > 0 && s->neginf > 0))
		*sum = get_float8_nan();
	else if (s->posinf > 0)
		*sum = get_float8_infinity();
	else if (s->neginf > 0)
		*sum = -get_float8_infinity();
	else
	{
		ExactSum	all;

		settle(s, &all);
		*sum = rounded_sum(&all);
		pfree(all.partials);
		if (isinf(*sum))
			float_overflow_error();
	}
	return true;
}

Datum
peek_exact_sum_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	ExactSum   *s;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "peek_exact_sum_accum called in non-aggregate context");
	if (PG_ARGISNULL(0))
	{
		s = MemoryContextAllocZero(aggcontext, sizeof(ExactSum));
		s->maxpartials = 8;
		s->partials = MemoryContextAlloc(aggcontext, sizeof(double) * s->maxpartials);
	}
	else
		s = (ExactSum *) PG_GETARG_POINTER(0);
	if (!PG_ARGISNULL(1))
	{
		double		x = PG_GETARG_FLOAT8(1);

		s->count++;
		if (isnan(x))
			s->nan++;
		else if (isinf(x) && x > 0)
			s->posinf++;
		else if (isinf(x))
			s->neginf++;
		else
			add_finite(s, x);	/* (repalloc keeps aggcontext) */
	}
	PG_RETURN_POINTER(s);
}

Datum
peek_exact_sum_final(PG_FUNCTION_ARGS)
{
	double		sum;

	if (!exact_sum(fcinfo, &sum))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(sum);
}

/*
 * The exact sum of the finite values rounded once to float4, given it
 * rounded to the nearest double: that double can fall half-way between two
 * float4s where the exact sum does not (1 + 2^-24 + 2^-80 rounds to the
 * double 1 + 2^-24, then to the float4 1 where 1 + 2^-23 is nearer), so the
 * sign of what the double left out decides the tie.
 */
static float4
rounded_sum4(ExactSum *s, double sum)
{
	float4		result = (float4) sum;
	float4		other;
	ExactSum	rest;
	double		left_out;

	if ((double) result == sum || isinf(result))
		return result;
	other = nextafterf(result, sum > result ? INFINITY : -INFINITY);
	if (sum - result != other - sum)
		return result;			/* not a tie: the double was near enough */
	settle(s, &rest);
	add_finite(&rest, -sum);
	left_out = rounded_sum(&rest);
	pfree(rest.partials);
	if ((left_out > 0.0) == (other > result) && left_out != 0.0)
		return other;
	return result;
}

Datum
peek_exact_sum4_final(PG_FUNCTION_ARGS)
{
	double		sum;
	float4		result;

	if (!exact_sum(fcinfo, &sum))
		PG_RETURN_NULL();
	result = isfinite(sum) ? rounded_sum4((ExactSum *) PG_GETARG_POINTER(0), sum) : (float4) sum;
	if (isinf(result) && !isinf(sum))
		float_overflow_error();
	PG_RETURN_FLOAT4(result);
}

Datum
peek_exact_avg_final(PG_FUNCTION_ARGS)
{
	double		sum;

	if (!exact_sum(fcinfo, &sum))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(sum / ((ExactSum *) PG_GETARG_POINTER(0))->count);
}
