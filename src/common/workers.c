/*-------------------------------------------------------------------------
 *
 * workers.c
 *	  Starting a short-lived dynamic background worker of this library (a
 *	  loader, a fold worker) in the caller's database: never restarted,
 *	  started once recovery finished, its stop setting the caller's latch.
 *	  What the worker does, and when to start one, is its caller's.  And
 *	  the settings every worker of this library (the runtimes too) pins
 *	  over the database's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "common/spi.h"
#include "common/workers.h"

/*
 * Start a worker that runs function (exported by pg_peek) with extra in its
 * bgw_extra and the database in bgw_main_arg.  Returns its handle,
 * allocated in cxt, or NULL without a free background worker.
 */
BackgroundWorkerHandle *
worker_start(const char *function, const char *name, const char *type,
			 const void *extra, Size extra_len, MemoryContext cxt)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	MemoryContext old;

	Assert(extra_len <= BGW_EXTRALEN);
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_peek");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", type);
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	memcpy(worker.bgw_extra, extra, extra_len);
	/* its stop sets the caller's latch */
	worker.bgw_notify_pid = MyProcPid;

	old = MemoryContextSwitchTo(cxt);
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		handle = NULL;
	MemoryContextSwitchTo(old);
	return handle;
}

/*
 * Pin the settings a worker of this library relies on, whatever the
 * database's (ALTER DATABASE ... SET, which its owner may do) or the
 * server's say; called once connected.  search_path: no user's schema can
 * substitute an operator or function.  Read-write transactions: with
 * default_transaction_read_only on, the maintenance runtime failed at each
 * start, forever.  No JIT: a view's round runs its plan (planned once)
 * over a few groups' rows, and a plan costed past jit_above_cost (a sorted
 * aggregate, with enable_sort off) was compiled anew at every run, seconds
 * a round, in LLVM code that no cancel interrupts.  The text of a float
 * and a bytea (immutable casts a view may use, whose output depends on
 * extra_float_digits and bytea_output): a view's rows are retracted as
 * they were made, so a setting changed between a runtime's starts made
 * the old rows' retractions differ from their insertions (a view over
 * f::text held a row at multiplicity -1 once the database's
 * extra_float_digits changed, and every peek at it failed).  Read
 * committed: the workers' short transactions each see what committed
 * before their statements; under the database's serializable they took
 * part in serializable conflicts and fold workers gave way.  What a
 * view's kept query and its XML expressions read: its constants are
 * written in ISO dates, postgres-style intervals and standard-conforming
 * strings (dataflow_plan_text), which the database's
 * standard_conforming_strings = off read otherwise (and its array_nulls =
 * off an array constant's NULL as the string, its xmloption = document an
 * XML fragment as an error); xmlelement() (which
 * PostgreSQL deems immutable) writes a value by DateStyle, IntervalStyle,
 * TimeZone and xmlbinary, so a view's XML text made under one setting was
 * retracted in another after a restart, as a float's was.
 */
void
worker_pin_settings(void)
{
	static const char *const settings[][2] = {
		{"search_path", PEEK_SAFE_SEARCH_PATH},
		{"default_transaction_read_only", "off"},
		{"default_transaction_isolation", "read committed"},
		{"jit", "off"},
		{"extra_float_digits", "1"},
		{"bytea_output", "hex"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"TimeZone", "UTC"},
		{"xmlbinary", "base64"},
		{"standard_conforming_strings", "on"},
		{"array_nulls", "on"},
		{"xmloption", "content"},
	};

	for (int i = 0; i < lengthof(settings); i++)
		SetConfigOption(settings[i][0], settings[i][1], PGC_SUSET, PGC_S_OVERRIDE);
}
