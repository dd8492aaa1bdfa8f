/*-------------------------------------------------------------------------
 *
 * area.c
 *	  The DSA area, created in place in the static shared memory as
 *	  pgstat_shmem.c does, because the postmaster cannot create DSM
 *	  segments.  It cannot grow until the module has made what must stay
 *	  in place in it (the registry's dshash); every process attaches once.
 *	  Owns nothing but the area.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "common/ids.h"
#include "ipc/area.h"

#define AREA_INIT_SIZE		(1024 * 1024)

/* Followed, MAXALIGNed, by the area's first AREA_INIT_SIZE bytes. */
typedef struct AreaShared
{
	int			tranche;
} AreaShared;

#define AREA_PLACE(shared)	((char *) (shared) + MAXALIGN(sizeof(AreaShared)))

static AreaShared *area_shared = NULL;
static dsa_area *attached_dsa = NULL;

Size
area_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(AreaShared)), AREA_INIT_SIZE);
}

/*
 * Lay out the area, once (the caller holds AddinShmemInitLock).  Returns
 * it, unable to grow so that what the caller creates in it stays in place
 * (area_shmem_init_done lets it grow); NULL when it was laid out already.
 */
dsa_area *
area_shmem_init(void)
{
	bool		found;
	dsa_area   *dsa;

	area_shared = ShmemInitStruct(PEEK_EXTENSION " area", area_shmem_size(), &found);
	if (found)
		return NULL;
	area_shared->tranche = LWLockNewTrancheId();
	dsa = dsa_create_in_place(AREA_PLACE(area_shared), AREA_INIT_SIZE, area_shared->tranche, NULL);
	dsa_pin(dsa);
	dsa_set_size_limit(dsa, AREA_INIT_SIZE);
	return dsa;
}

/* The area laid out by area_shmem_init may grow from now on. */
void
area_shmem_init_done(dsa_area *dsa)
{
	dsa_set_size_limit(dsa, -1);
	dsa_detach(dsa);
}

/* Attach this process to the area, once. */
void
area_attach(void)
{
	MemoryContext oldcxt;

	if (attached_dsa != NULL)
		return;
	if (area_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_peek must be loaded via shared_preload_libraries")));

	LWLockRegisterTranche(area_shared->tranche, "pg_peek_dsa");
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	attached_dsa = dsa_attach_in_place(AREA_PLACE(area_shared), NULL);
	dsa_pin_mapping(attached_dsa);
	MemoryContextSwitchTo(oldcxt);
}

dsa_area *
area_dsa(void)
{
	area_attach();
	return attached_dsa;
}
