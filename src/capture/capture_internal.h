/*-------------------------------------------------------------------------
 *
 * capture_internal.h
 *	  What the files of capture/ share: a source's stream (its slot, its
 *	  decoding context, what its rounds decoded and kept), the table of
 *	  streams, and the bounds of a round.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PEEK_CAPTURE_INTERNAL_H
#define PEEK_CAPTURE_INTERNAL_H

#include "postmaster/bgworker.h"
#include "replication/logical.h"
#include "utils/hsearch.h"

#include "capture/decoder.h"
#include "common/backoff.h"
#include "storage/catalog.h"

/* A round stops decoding at a commit once it holds this much ... */
#define CAPTURE_ROUND_BYTES		(64 * 1024 * 1024)
/*
 * ... or once it has read this much WAL: catching up (after a restart,
 * through other tables' WAL) goes in steps, between which the other sources
 * and objects go on.
 */
#define CAPTURE_ROUND_WAL		(16 * 1024 * 1024)

/*
 * How often the maintenance runtime looks for new WAL while it has
 * sources: every CAPTURE_POLL_MS while rounds find WAL to decode, every
 * CAPTURE_IDLE_POLL_MS once they found none.
 */
#define CAPTURE_POLL_MS			3L
#define CAPTURE_IDLE_POLL_MS	10L

/*
 * A loader that stopped without loading is started again after the first,
 * doubling up to the last (loader_retry, a Backoff); one that found no free
 * worker, after the first whatever the wait.
 */
#define LOADER_RETRY_MIN_MS		1000
#define LOADER_RETRY_MAX_MS		30000

/*
 * While a standby streams, an idle source's decoded upper is written too, at
 * most this often: a standby knows only the durable upper, and would wait
 * for the table's next change to see a later time.  (The write makes WAL,
 * which the next round decodes: hence the bound.)
 */
#define IDLE_UPPER_WRITE_MS		100

typedef struct CaptureStream
{
	PeekObjectId id;			/* key */
	Oid			relid;
	Oid			shard;
	char		slot_name[NAMEDATALEN];
	char		table[NAMEDATALEN]; /* for messages once the table is gone */
	bool		loaded;			/* the initial load committed */
	bool		failed;
	BackgroundWorkerHandle *loader; /* loading it now */
	Backoff		loader_retry;	/* when to start a loader (again) */
	bool		loader_waits;	/* no background worker was free (logged) */
	int64		durable_upper;	/* the catalog's: the shard has what is before */
	int64		upper;			/* decoded: every commit before it is known */
	TimestampTz idle_written_at;	/* the upper last written without changes */
	TimestampTz retry_at;		/* after a transient error: no round before */
	XLogRecPtr	read_upto;		/* where the reader stopped */
	XLogRecPtr	confirm_upto;	/* to confirm to the slot once ... */
	XLogRecPtr	confirm_after;	/* ... the WAL is flushed to here */
	XLogRecPtr	confirmed;		/* the slot's confirmed position, as we left it */
	LogicalDecodingContext *ctx;	/* kept across rounds, like a walsender's */
	HTAB	   *own_xids;		/* pg_peek's own transactions its reader met (ctx's) */
	TransactionId own_last;		/* ... the last one entered */
	HTAB	   *catalog_xids;	/* transactions changing the catalog it met, not
								 * ended (ctx's): rounds.c skips nothing */
	HTAB	   *toast_xids;		/* transactions whose last record it met was a
								 * TOAST table's insertion (ctx's) */
	DecodedChanges changes;		/* the last round's, kept for capture_feed */
	TransactionId held_xid;		/* a decoded commit not visible yet, or invalid */
	int64		held_at;		/* ... its commit LSN, where the upper stays */
	int64		held_from;		/* ... its first update in changes */
	int64		feed_lower;		/* they are all the shard got in [lower, */
	int64		feed_upper;		/* upper); none if equal */
	MemoryContext cxt;
} CaptureStream;

/* Whether a source's slot is there for us. */
typedef enum SlotState
{
	SLOT_FREE,
	SLOT_IN_USE,				/* by another process */
	SLOT_GONE
} SlotState;

/* The maintenance runtime's streams, by source id (streams.c). */
extern HTAB *capture_streams;

/* field4 of the advisory lock a loader holds on its source's id (SQL uses 1, 2) */
#define PEEK_LOADER_LOCK_FIELD4	0x7065

extern void trust_own_output_plugin(void);
extern SlotState slot_state(const char *name, pid_t *active_pid);
extern void drop_slot(const char *name);
extern bool slot_lost(CaptureStream *s);
extern void discard_decoding(CaptureStream *s, bool whole);
extern void stream_init(CaptureStream *s, CatalogObject *source);
extern char *check_table(CaptureStream *s, bool wait);
extern void fail_source(CaptureStream *s, const char *failure);
extern void fail_stream(CaptureStream *s, const char *failure, bool table_first);
extern bool loader_step(CaptureStream *s);
extern XLogRecPtr write_inserted_wal(bool at_once);

/* what a round notes of each record, and skips (record_filters.c) */
extern void capture_note_own_record(CaptureStream *s, XLogReaderState *reader);
extern void capture_note_catalog_xact(CaptureStream *s, XLogReaderState *reader);
extern bool capture_other_tables_change(CaptureStream *s, XLogReaderState *reader);
extern XLogRecPtr capture_oldest_replay(CaptureStream *s, XLogRecPtr start);

/* the catalog caches around a round's decoding (historic_caches.c) */
extern uint64 capture_relcache_generation;
extern void historic_caches_enter(XLogRecPtr from);
extern void historic_caches_leave(void);

#endif							/* PEEK_CAPTURE_INTERNAL_H */
