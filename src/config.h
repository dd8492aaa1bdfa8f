/*-------------------------------------------------------------------------
 *
 * config.h
 *	  pg_peek's settings and the runtime roles they decide.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CONFIG_H
#define PEEK_CONFIG_H

#include "pg_peek.h"

/* pg_peek.isolation */
typedef enum PeekIsolation
{
	PEEK_ISOLATION_SERIALIZABLE,
	PEEK_ISOLATION_STRICT_SERIALIZABLE
} PeekIsolation;

extern char *peek_database;
extern bool peek_interactive;
extern int	peek_max_memory_kb;
extern int	peek_max_result_kb;
extern int	peek_runtime_wait_ms;
extern int	peek_isolation;
extern bool peek_fast_path;
extern int	peek_maintenance_nice;
extern int	peek_retention_s;

extern void config_define_settings(void);

extern int	config_runtime_count(void);
extern int	config_serving_runtime(void);
extern PeekRole config_runtime_role(int runtime);
extern const char *config_role_name(PeekRole role);
extern int64 config_retention_ms(int64 retention_ms);

#endif							/* PEEK_CONFIG_H */
