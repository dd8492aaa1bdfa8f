/*-------------------------------------------------------------------------
 *
 * spi.h
 *	  Small helpers every layer uses: SPI as the extension's owner, a
 *	  transaction of its own with a snapshot, a caught subtransaction's end.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SPI_H
#define PEEK_SPI_H

#include "common/ids.h"
#include "utils/resowner.h"

/*
 * Running SPI as the extension's owner, with search_path pinned to
 * PEEK_SAFE_SEARCH_PATH (the runtimes run under it throughout).
 */
#define PEEK_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

typedef struct SavedUser
{
	Oid			userid;
	int			sec_context;
	int			guc_nestlevel;
} SavedUser;

extern void spi_connect_as_owner(SavedUser *saved);
extern void spi_finish_as_owner(SavedUser *saved);
extern void spi_check(int ret, int expected, const char *what);

extern MemoryContext spi_xact_begin(void);
extern void spi_xact_commit(MemoryContext caller);
extern void spi_run_in_transaction(void (*fn) (void *arg), void *arg);
extern void spi_xact_no_standby_wait(void);
extern ErrorData *spi_subxact_rollback_caught(MemoryContext cxt, ResourceOwner owner);

#endif							/* PEEK_SPI_H */
