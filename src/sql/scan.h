/*-------------------------------------------------------------------------
 *
 * scan.h
 *	  The persist peek scan node (scan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SCAN_H
#define PEEK_SCAN_H

extern void scan_init(void);

#endif							/* PEEK_SCAN_H */
