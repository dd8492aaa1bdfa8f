/*-------------------------------------------------------------------------
 *
 * catalog_uppers.h
 *	  Whether the installed catalog keeps objects' uppers in peek.uppers,
 *	  and whether a pruning of them may start (catalog_uppers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_STORAGE_CATALOG_UPPERS_H
#define PEEK_STORAGE_CATALOG_UPPERS_H

extern bool catalog_has_uppers(void);
extern Oid	catalog_uppers_relid(void);
extern bool catalog_uppers_no_snapshot_before(TransactionId since, TransactionId *mark);

#endif							/* PEEK_STORAGE_CATALOG_UPPERS_H */
