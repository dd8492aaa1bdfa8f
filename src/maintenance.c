/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The maintenance runtime's duties: learn committed catalog changes
 *	  from the notices backends send (never by polling the whole catalog,
 *	  except to reconcile at start or after a lost notice), publish each
 *	  object's frontiers in the registry, tombstone dropped objects, and
 *	  compact persist shards as far as every hold allows.
 *
 *	  Runs only in the maintenance (or solo) runtime's loop (runtime.c).
 *	  Must not answer peeks: that is peek.c's job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "persist.h"
#include "registry.h"
#include "runtime.h"

/* An object whose since may advance: its allowance is above its since. */
typedef struct PendingCompaction
{
	PeekObjectId id;
	char		kind;
	Oid			shard;
	int64		durable_since;	/* what the shard is compacted to */
} PendingCompaction;

static HTAB *changed_ids = NULL;	/* PeekObjectId set: re-read these rows */
static bool reread_all = true;
static HTAB *pending_compactions = NULL;

static HTAB *
make_id_table(const char *name, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(PeekObjectId);
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Reconciliation: forget local state and re-read the whole catalog. */
void
maintenance_reset(void)
{
	if (changed_ids != NULL)
		hash_destroy(changed_ids);
	if (pending_compactions != NULL)
		hash_destroy(pending_compactions);
	changed_ids = make_id_table("pg_peek changed objects", sizeof(PeekObjectId));
	pending_compactions = make_id_table("pg_peek pending compactions", sizeof(PendingCompaction));
	reread_all = true;
}

void
maintenance_note_command(PeekCommand *cmd)
{
	if (cmd == NULL)
	{
		reread_all = true;		/* a notice was lost */
		return;
	}
	if (cmd->kind == PEEK_CMD_STANDING_HOLD)
		registry_raise_standing_hold(cmd->object, PEEK_RUNTIME_MAINTENANCE, cmd->value);
	/* either way, re-read the row: it carries the allowance and frontiers */
	hash_search(changed_ids, &cmd->object, HASH_ENTER, NULL);
}

/* Publish one catalog row and note whether it can compact. */
static void
adopt_object(CatalogObject *obj)
{
	PendingCompaction *pc;

	registry_raise_standing_hold(obj->id, PEEK_RUNTIME_MAINTENANCE, obj->allowed_since);
	if (publish_frontiers(obj->id, obj->kind, obj->upper, obj->since, obj->allowed_since))
		runtime_count(&peek_shared->runtimes[PEEK_RUNTIME_MAINTENANCE], RC_PUBLICATIONS);
	if (obj->kind != PEEK_KIND_COLLECTION || obj->allowed_since <= obj->since)
		return;
	pc = hash_search(pending_compactions, &obj->id, HASH_ENTER, NULL);
	pc->kind = obj->kind;
	pc->shard = obj->shard;
	pc->durable_since = obj->since;
}

static void
forget_object(PeekObjectId id)
{
	registry_mark_dropped(id);
	hash_search(pending_compactions, &id, HASH_REMOVE, NULL);
}

/* Read the changed rows (or all) and publish them; tombstone the missing. */
static void
apply_catalog_changes(void *arg)
{
	List	   *objects;
	ListCell   *lc;

	if (reread_all)
	{
		PeekObjectId *live;
		int			n = 0;

		objects = catalog_read(NULL, -1);
		live = palloc(sizeof(PeekObjectId) * Max(list_length(objects), 1));
		foreach(lc, objects)
		{
			CatalogObject *obj = lfirst(lc);

			adopt_object(obj);
			live[n++] = obj->id;
		}
		registry_mark_dropped_except(live, n);
	}
	else
	{
		HASH_SEQ_STATUS status;
		PeekObjectId *ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(changed_ids));
		PeekObjectId *id;
		int			n = 0;

		hash_seq_init(&status, changed_ids);
		while ((id = hash_seq_search(&status)) != NULL)
			ids[n++] = *id;
		objects = catalog_read(ids, n);
		for (int i = 0; i < n; i++)
		{
			bool		found = false;

			foreach(lc, objects)
			{
				CatalogObject *obj = lfirst(lc);

				if (obj->id == ids[i])
				{
					adopt_object(obj);
					found = true;
					break;
				}
			}
			if (!found)
				forget_object(ids[i]);
		}
	}
}

typedef struct CompactionWork
{
	PendingCompaction *pc;
	int64		since;
} CompactionWork;

static void
compact_shard(void *arg)
{
	CompactionWork *work = arg;

	/* a writer holding the row: try again on a later round */
	if (!catalog_lock_for_compaction(work->pc->id))
		return;
	(void) persist_compact(work->pc->shard, work->since);
	catalog_set_since(work->pc->id, work->since);
	work->pc->durable_since = work->since;
}

/*
 * Advance each pending object's since as far as the holds allow and compact
 * its shard to it.  An object stays pending while a peek or a standing hold
 * keeps it below its allowance; the loop retries it each round.
 */
static void
run_compactions(void)
{
	HASH_SEQ_STATUS status;
	PendingCompaction *pc;
	PeekObjectId *ids;
	int			n = 0;

	/* collect first: a transaction's end would cut a hash scan short */
	ids = palloc(sizeof(PeekObjectId) * hash_get_num_entries(pending_compactions));
	hash_seq_init(&status, pending_compactions);
	while ((pc = hash_seq_search(&status)) != NULL)
		ids[n++] = pc->id;

	for (int i = 0; i < n; i++)
	{
		int64		target;
		int64		since = registry_advance_since(ids[i], &target);

		pc = hash_search(pending_compactions, &ids[i], HASH_FIND, NULL);
		if (since > pc->durable_since)
		{
			CompactionWork work = {pc, since};

			run_in_transaction(compact_shard, &work);
			runtime_count(&peek_shared->runtimes[PEEK_RUNTIME_MAINTENANCE], RC_COMPACTIONS);
		}
		if (pc->durable_since >= target)
			hash_search(pending_compactions, &ids[i], HASH_REMOVE, NULL);
	}
	pfree(ids);
}

void
maintenance_step(void)
{
	if (reread_all || hash_get_num_entries(changed_ids) > 0)
	{
		run_in_transaction(apply_catalog_changes, NULL);
		reread_all = false;
		hash_destroy(changed_ids);
		changed_ids = make_id_table("pg_peek changed objects", sizeof(PeekObjectId));
	}
	if (hash_get_num_entries(pending_compactions) > 0)
		run_compactions();
}
