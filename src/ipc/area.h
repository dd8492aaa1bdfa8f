/*-------------------------------------------------------------------------
 *
 * area.h
 *	  The DSA area that holds the registry and the batches (area.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_IPC_AREA_H
#define PEEK_IPC_AREA_H

#include "utils/dsa.h"

extern Size area_shmem_size(void);
extern dsa_area *area_shmem_init(void);
extern void area_shmem_init_done(dsa_area *dsa);
extern void area_attach(void);
extern dsa_area *area_dsa(void);

#endif							/* PEEK_IPC_AREA_H */
