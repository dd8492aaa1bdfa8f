/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The settings (pg_peek.*) and the runtime roles they decide: how many
 *	  runtimes run, which one serves peeks, what each is called.
 *
 *	  Must not call any other file of pg_peek: every layer reads it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "common/settings.h"

static const struct config_enum_entry isolation_options[] = {
	{"serializable", PEEK_ISOLATION_SERIALIZABLE, false},
	{"strict serializable", PEEK_ISOLATION_STRICT_SERIALIZABLE, false},
	{NULL, 0, false}
};

char	   *setting_database = NULL;
bool		setting_interactive = true;
int			setting_max_memory_kb = 1024 * 1024;
int			setting_max_result_kb = 256 * 1024;
int			setting_runtime_wait_ms = 10000;
int			setting_view_round_timeout_ms = 60000;
int			setting_isolation = PEEK_ISOLATION_SERIALIZABLE;
bool		setting_fast_path = true;
int			setting_maintenance_nice = 5;

/*
 * pg_peek.retention, in seconds: an hour by default.  Long enough that the
 * reads a user makes without thinking of history still find it (an as_of a
 * write returned minutes ago, a report compared with one from earlier in
 * the hour), short enough that a collection written all day keeps an
 * hour's updates beyond its contents, not the day's.
 */
int			setting_retention_s = 60 * 60;

void
settings_define(void)
{
	DefineCustomStringVariable("pg_peek.database",
							   "Database the pg_peek runtimes connect to and serve.",
							   NULL,
							   &setting_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_peek.interactive",
							 "Split the runtimes: maintenance plus an interactive runtime that serves peeks.",
							 "off runs a single solo runtime that maintains and serves peeks itself.",
							 &setting_interactive,
							 true,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.max_memory",
							"Cap on shared memory used by arrangements.",
							NULL,
							&setting_max_memory_kb,
							1024 * 1024,
							1024,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.max_result_bytes",
							"Largest result a single peek may return.",
							NULL,
							&setting_max_result_kb,
							256 * 1024,
							1,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.runtime_wait_timeout",
							"How long a peek waits for a runtime that is not running before it fails.",
							NULL,
							&setting_runtime_wait_ms,
							10000,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.view_round_timeout",
							"How long one round of a maintained view may run before it is cancelled and retried later.",
							"A round runs the view's query over its inputs' new updates in the maintenance "
							"runtime, ahead of every other object's maintenance: a round that runs longer "
							"(a slow function in its query, a hydration or rebuild over a very large input) "
							"is cancelled instead of holding the others back, and the view retried once as "
							"long has passed, with the limit doubled (up to 16 times this). 0: no limit.",
							&setting_view_round_timeout_ms,
							60000,
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_peek.isolation",
							 "What a peek of a source with as_of NULL reads.",
							 "serializable: the latest complete time, without waiting for ingestion; "
							 "strict serializable: the current WAL position, so every transaction "
							 "committed before the peek is seen.",
							 &setting_isolation,
							 PEEK_ISOLATION_SERIALIZABLE,
							 isolation_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_peek.fast_path",
							 "Gate ready peeks in the backend, without a round trip to a runtime.",
							 "off sends every peek through the runtime that serves peeks.",
							 &setting_fast_path,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.maintenance_nice",
							"How much lower the maintenance runtime's CPU priority is than the server's (a niceness increment).",
							"Applies in split mode only: the solo runtime also serves peeks and keeps the server's priority. "
							"Raising the priority again after a reload needs the privilege to do so.",
							&setting_maintenance_nice,
							5,
							0,
							19,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_peek.retention",
							"How much history, by the wall clock, an object keeps unless peek.set_retention gave it a retention of its own.",
							"Each object's since follows the upper it had this long ago; -1 keeps all history.",
							&setting_retention_s,
							60 * 60,
							-1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_peek");
}

int
settings_runtime_count(void)
{
	return setting_interactive ? 2 : 1;
}

/* The runtime that serves peeks: interactive when split, solo otherwise. */
int
settings_serving_runtime(void)
{
	return setting_interactive ? PEEK_RUNTIME_INTERACTIVE : PEEK_RUNTIME_MAINTENANCE;
}

PeekRole
settings_runtime_role(int runtime)
{
	if (!setting_interactive)
		return PEEK_ROLE_SOLO;
	return runtime == PEEK_RUNTIME_INTERACTIVE ? PEEK_ROLE_INTERACTIVE : PEEK_ROLE_MAINTENANCE;
}

const char *
settings_role_name(PeekRole role)
{
	switch (role)
	{
		case PEEK_ROLE_MAINTENANCE:
			return "maintenance";
		case PEEK_ROLE_INTERACTIVE:
			return "interactive";
		case PEEK_ROLE_SOLO:
			return "solo";
	}
	return "unknown";
}

/*
 * An object's retention in force, in milliseconds or PEEK_RETENTION_KEEP_ALL:
 * its own, or pg_peek.retention's for PEEK_RETENTION_DEFAULT.
 */
int64
settings_retention_ms(int64 retention_ms)
{
	if (retention_ms != PEEK_RETENTION_DEFAULT)
		return retention_ms;
	return setting_retention_s < 0 ? PEEK_RETENTION_KEEP_ALL : (int64) setting_retention_s * 1000;
}
