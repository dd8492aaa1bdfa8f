/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  pg_peek's settings and the runtime roles they decide.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CONFIG_H
#define PEEK_CONFIG_H

#include "common/ids.h"

/*
 * Runtimes.  Slot 0 is the maintenance runtime (or the solo runtime), slot 1
 * the interactive runtime; solo mode uses slot 0 only.
 */
#define PEEK_MAX_RUNTIMES		2
#define PEEK_RUNTIME_MAINTENANCE	0
#define PEEK_RUNTIME_INTERACTIVE	1

/*
 * An object's retention, in milliseconds of wall clock its since trails its
 * upper by, when it is not a number: all history kept (set_retention's
 * NULL, pg_peek.retention = -1, or a catalog from before 0.3), or whatever
 * pg_peek.retention says (an object set_retention never gave one).
 */
#define PEEK_RETENTION_KEEP_ALL	((int64) -1)
#define PEEK_RETENTION_DEFAULT	((int64) -2)

typedef enum PeekRole
{
	PEEK_ROLE_MAINTENANCE,
	PEEK_ROLE_INTERACTIVE,
	PEEK_ROLE_SOLO
} PeekRole;

/* pg_peek.isolation */
typedef enum PeekIsolation
{
	PEEK_ISOLATION_SERIALIZABLE,
	PEEK_ISOLATION_STRICT_SERIALIZABLE
} PeekIsolation;

extern char *setting_database;
extern bool setting_interactive;
extern int	setting_max_memory_kb;
extern int	setting_max_result_kb;
extern int	setting_runtime_wait_ms;
extern int	setting_view_round_timeout_ms;
extern int	setting_isolation;
extern bool setting_fast_path;
extern int	setting_maintenance_nice;
extern int	setting_retention_s;

extern void settings_define(void);

extern int	settings_runtime_count(void);
extern int	settings_serving_runtime(void);
extern PeekRole settings_runtime_role(int runtime);
extern const char *settings_role_name(PeekRole role);
extern int64 settings_retention_ms(int64 retention_ms);

#endif							/* PEEK_CONFIG_H */
