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
