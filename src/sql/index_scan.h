/*-------------------------------------------------------------------------
 *
 * index_scan.h
 *	  The index peek scan node (index_scan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_SQL_INDEX_SCAN_H
#define PEEK_SQL_INDEX_SCAN_H

extern void index_scan_init(void);

#endif							/* PEEK_SQL_INDEX_SCAN_H */
