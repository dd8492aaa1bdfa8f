/*-------------------------------------------------------------------------
 *
 * maintenance.h
 *	  The maintenance duties the runtime loop runs for the maintenance (or
 *	  solo) role.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_MAINTENANCE_H
#define PEEK_MAINTENANCE_H

#include "common/ids.h"
#include "ipc/runtime_slots.h"

extern void maintenance_reset(void);
extern void maintenance_note_command(PeekCommand *cmd);
extern bool maintenance_step(void);

#endif							/* PEEK_MAINTENANCE_H */
