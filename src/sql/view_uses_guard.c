/*-------------------------------------------------------------------------
 *
 * view_uses_guard.c
 *	  What PostgreSQL's own DDL may do to the functions, operators, types,
 *	  collations and text search configurations and dictionaries a
 *	  maintained view uses (those its PostgreSQL view's rule depends on,
 *	  view_ddl.c), called from view_guard.c's ProcessUtility hook.  A view
 *	  keeps its query as text, planned again by each maintenance runtime,
 *	  and its rows as computed: so
 *	  * renaming or moving (SET SCHEMA) such a function, operator, type,
 *	    collation, text search configuration or dictionary (a regconfig or
 *	    regdictionary constant names it), renaming or dropping a column of
 *	    such a row type,
 *	    renaming a value of such an enum, the schema of any of them, or
 *	    moving their extension (ALTER EXTENSION ... SET SCHEMA), is
 *	    refused (2BP01, naming the view): the kept text would name another
 *	    object, or none;
 *	  * CREATE OR REPLACE FUNCTION or ALTER FUNCTION that changes what such
 *	    a function computes (body, language, volatility, strictness,
 *	    settings, security, defaults) is refused the same way, checked
 *	    after the statement and so undone with it; so is one of a function
 *	    an operator it uses calls, or a function whose SQL-standard body it
 *	    calls.  Owner, cost, rows, parallel safety and leakproofness do not
 *	    change a row, and go through;
 *	  * ALTER TYPE ... ADD, DROP or ALTER ATTRIBUTE of a composite type
 *	    whose values a view reads or keeps, however deep in an input's or
 *	    its own rows, is refused the same way: the values made before would
 *	    hash (and, an attribute dropped, compare) apart from those made
 *	    after, and the view's groups and keys no longer be found; so is
 *	    one whose values an index's key columns hold (2BP01 naming it);
 *	  * ALTER TEXT SEARCH CONFIGURATION of its mappings, or ALTER TEXT
 *	    SEARCH DICTIONARY of its options, for such a configuration or
 *	    dictionary (or a configuration's dictionary) is refused the same
 *	    way: a row retracted would not be the one the view holds; so is
 *	    ALTER DOMAIN ... ADD CONSTRAINT or SET NOT NULL of a domain it
 *	    casts to: the cast of a row made before would fail at its retraction;
 *	  * a captured table a view reads given its first inheritance child is
 *	    refused the same way: the view's query would read the child's rows
 *	    too, which the table's source does not capture (any parent is
 *	    locked first as PostgreSQL locks it, and as create_source locks
 *	    its table, so that a source and view created together are seen).
 *	  Each such statement of the object's owner (PostgreSQL refuses the
 *	  others) locks what it changes exclusively before the check, only
 *	  that (a CREATE OR REPLACE FUNCTION the overload it replaces), and
 *	  create_view what its view uses, and the row types its inputs' and its
 *	  own rows hold, in share mode (view_uses_lock; create_index those its
 *	  keys hold), so that a change and a view being created over it
 *	  go one after the other: neither checks against the other's uncommitted
 *	  catalog rows.  A DROP ... CASCADE of such an object (or of a table a
 *	  view reads) tells the hook which views it drops with it
 *	  (views_dropped_with), whose PostgreSQL views the hook locks first.
 *	  Writes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_ts_dict.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "rewrite/rewriteSupport.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "common/rows.h"
#include "sql/view_uses_guard.h"
#include "storage/catalog_views.h"

/* What a function computes, in pg_proc: a change to any is refused. */
static const AttrNumber function_meaning[] = {
	Anum_pg_proc_prolang, Anum_pg_proc_prosecdef, Anum_pg_proc_proisstrict,
	Anum_pg_proc_proretset, Anum_pg_proc_provolatile, Anum_pg_proc_prorettype,
	Anum_pg_proc_proargdefaults, Anum_pg_proc_prosrc, Anum_pg_proc_probin,
	Anum_pg_proc_prosqlbody, Anum_pg_proc_proconfig,
};

/*
 * Read in the latest committed catalog, as PostgreSQL's own catalog lookups
 * are: a view whose create_view committed while a statement waited for its
 * locks is the statement's to see, whatever its snapshot.
 */
CatalogObject *
maintained_view_of(Oid relid)
{
	CatalogObject *view;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_VIEW ||
		!OidIsValid(get_extension_oid("pg_peek", true)))
		return NULL;
	PushActiveSnapshot(GetLatestSnapshot());
	view = catalog_view_of_row_type(get_rel_type_id(relid));
	PopActiveSnapshot();
	return view;
}

/* The relation a rule belongs to. */
static Oid
rule_relation(Oid rule)
{
	Relation	rewrite = table_open(RewriteRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			relid = InvalidOid;

	ScanKeyInit(&key, Anum_pg_rewrite_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rule));
	scan = systable_beginscan(rewrite, RewriteOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
		relid = ((Form_pg_rewrite) GETSTRUCT(tup))->ev_class;
	systable_endscan(scan);
	table_close(rewrite, AccessShareLock);
	return relid;
}

/* Which way a walk of pg_depend goes from an object (walk_dependencies). */
typedef enum DependencyDirection
{
	TO_DEPENDENTS,				/* to the objects that depend on it */
	TO_REFERENCED,				/* to the objects it depends on */
} DependencyDirection;

/* An object a walk reached: whether the walk goes on from it. */
typedef bool (*DependencyVisit) (const ObjectAddress *object, void *arg);

/*
 * Visit each object reached from (class, objid) through pg_depend's normal
 * dependencies, that way, however many steps away, each once (seen: CREATE
 * OR REPLACE FUNCTION can make the calls circular).
 */
static void
walk_unseen(Oid class, Oid objid, DependencyDirection direction,
			DependencyVisit visit, void *arg, ObjectAddresses *seen)
{
	bool		to_dependents = direction == TO_DEPENDENTS;
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *reached = NIL;
	ListCell   *lc;

	ScanKeyInit(&keys[0], to_dependents ? Anum_pg_depend_refclassid : Anum_pg_depend_classid,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(class));
	ScanKeyInit(&keys[1], to_dependents ? Anum_pg_depend_refobjid : Anum_pg_depend_objid,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(objid));
	scan = systable_beginscan(depend, to_dependents ? DependReferenceIndexId : DependDependerIndexId,
							  true, NULL, 2, keys);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		ObjectAddress *object;

		if (dep->deptype != DEPENDENCY_NORMAL)
			continue;
		object = palloc(sizeof(ObjectAddress));
		if (to_dependents)
			ObjectAddressSet(*object, dep->classid, dep->objid);
		else
			ObjectAddressSet(*object, dep->refclassid, dep->refobjid);
		reached = lappend(reached, object);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);

	foreach(lc, reached)
	{
		ObjectAddress *object = lfirst(lc);

		if (object_address_present(object, seen))
			continue;
		add_exact_object_address(object, seen);
		if (visit(object, arg))
			walk_unseen(object->classId, object->objectId, direction, visit, arg, seen);
	}
}

/* walk_unseen from (class, objid), itself counted as seen */
static void
walk_dependencies(Oid class, Oid objid, DependencyDirection direction,
				  DependencyVisit visit, void *arg)
{
	ObjectAddresses *seen = new_object_addresses();
	ObjectAddress start;

	ObjectAddressSet(start, class, objid);
	add_exact_object_address(&start, seen);
	walk_unseen(class, objid, direction, visit, arg, seen);
	free_object_addresses(seen);
}

/* views_using's walk: the views found, and whether it goes through calls. */
typedef struct ViewsUsing
{
	bool		through_calls;
	List	   *views;
} ViewsUsing;

static bool
visit_user(const ObjectAddress *object, void *arg)
{
	ViewsUsing *using = arg;
	CatalogObject *view;

	if (object->classId == RewriteRelationId)
	{
		if ((view = maintained_view_of(rule_relation(object->objectId))) != NULL)
			using->views = lappend(using->views, view);
		return false;
	}
	return using->through_calls &&
		(object->classId == OperatorRelationId || object->classId == ProcedureRelationId ||
		 object->classId == TSConfigRelationId);
}

/*
 * The maintained views that use an object (class, objid): whose PostgreSQL
 * views' rules depend on it, or, with through_calls, on an operator,
 * function or text search configuration that calls it (an operator's
 * function, a function in a SQL-standard body, a configuration's
 * dictionary), however many calls away.
 */
static List *
views_using(Oid class, Oid objid, bool through_calls)
{
	ViewsUsing	using = {through_calls, NIL};

	if (!OidIsValid(objid) || !OidIsValid(get_extension_oid("pg_peek", true)))
		return NIL;
	walk_dependencies(class, objid, TO_DEPENDENTS, visit_user, &using);
	return using.views;
}

/*
 * A maintained view that uses an object (views_using); of several, the
 * first made, so that the error names the same view whatever order
 * pg_depend gives.
 */
static CatalogObject *
view_using(Oid class, Oid objid, bool through_calls)
{
	CatalogObject *view = NULL;
	ListCell   *lc;

	foreach(lc, views_using(class, objid, through_calls))
		if (view == NULL || ((CatalogObject *) lfirst(lc))->id < view->id)
			view = lfirst(lc);
	return view;
}

static void
refuse_change(const char *change, ObjectAddress *object, CatalogObject *view)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("cannot %s %s because maintained view \"%s\" uses it",
					change, getObjectDescription(object, false), view->name),
			 errdetail("A maintained view keeps its query as text and its rows as they were computed; "
					   "the view would name another object, or compute its rows differently from now on."),
			 errhint("Drop the view with peek.drop_view(%s), make the change, then create the view again.",
					 quote_literal_cstr(view->name))));
}

/* Refuse a change to an object if a view uses it (through_calls: view_using). */
static void
guard_object(const char *change, Oid class, Oid objid, bool through_calls)
{
	CatalogObject *view = view_using(class, objid, through_calls);
	ObjectAddress object;

	if (view != NULL)
	{
		ObjectAddressSet(object, class, objid);
		refuse_change(change, &object, view);
	}
}

/* Whether the kept text names the objects of a class by name. */
static bool
named_by_text(Oid class)
{
	return class == ProcedureRelationId || class == OperatorRelationId ||
		class == TypeRelationId || class == CollationRelationId ||
		class == TSConfigRelationId || class == TSDictionaryRelationId;
}

/*
 * A schema renamed: refused if a view uses a function, operator, type or
 * collation in it (the kept text names them by schema).  Reads every
 * rule's dependencies: a rare statement.
 */
static void
guard_schema(Oid nsp)
{
	Relation	depend;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	/*
	 * The lock the statement takes next, so that it waits for a create_view
	 * using something in the schema (view_uses_lock), as for any statement
	 * creating something in it.
	 */
	if (!OidIsValid(nsp) || !pg_namespace_ownercheck(nsp, GetUserId()))
		return;
	LockDatabaseObject(NamespaceRelationId, nsp, 0, AccessExclusiveLock);
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RewriteRelationId));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);
		ObjectAddress used;
		CatalogObject *view;

		if (dep->deptype != DEPENDENCY_NORMAL ||
			!named_by_text(dep->refclassid))
			continue;
		ObjectAddressSet(used, dep->refclassid, dep->refobjid);
		/* (a view's own row type, in its body, is held by its OID) */
		if (get_object_namespace(&used) == nsp &&
			(view = maintained_view_of(rule_relation(dep->objid))) != NULL &&
			view->row_type != dep->refobjid)
			refuse_change("rename the schema of", &used, view);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
}

/*
 * ALTER EXTENSION ... SET SCHEMA moves each of its members: refused if a
 * view uses one (the kept text names them by schema).  (Not serialised
 * with create_view: that would lock the whole schema.)
 */
static void
guard_extension(const char *name)
{
	Oid			extension = get_extension_oid(name, true);
	Relation	depend;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(extension) || !pg_extension_ownercheck(extension, GetUserId()))
		return;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, keys);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->deptype == DEPENDENCY_EXTENSION && named_by_text(dep->classid))
			guard_object("move", dep->classid, dep->objid, false);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
}

/*
 * A relation renamed or moved renames or moves its row type.  Locked as
 * the statement locks it next, after the same ownership check, so that a
 * create_view reading it (share lock) commits first and is seen.
 */
static void
guard_relation(const char *change, RangeVar *relation)
{
	Oid			relid = RangeVarGetRelidExtended(relation, AccessExclusiveLock, RVR_MISSING_OK,
												 RangeVarCallbackOwnsRelation, NULL);

	if (OidIsValid(relid))
		guard_object(change, TypeRelationId, get_rel_type_id(relid), false);
}

/*
 * A captured table given its first inheritance child (CREATE TABLE ...
 * INHERITS, ALTER TABLE ... INHERIT): refused if a view reads it, whose
 * query then read the table with its children (it had none), while the
 * table's source captures its own rows only.  A table with children is
 * read with ONLY by every view (sources.c refuses the rest): more go
 * through.  Locked first as PostgreSQL locks a parent, as create_source
 * locks its table, so that a source (and a view over it) made together
 * and not yet committed is waited for and seen in the latest snapshot; a
 * captured table then as guard_relation does (a view in flight is waited
 * for).
 */
static void
guard_first_child(RangeVar *parent)
{
	Oid			relid = RangeVarGetRelid(parent, ShareUpdateExclusiveLock, true);
	CatalogObject *view;
	List	   *sources;

	if (!OidIsValid(relid))
		return;
	/* the latest committed catalog, as maintained_view_of reads */
	PushActiveSnapshot(GetLatestSnapshot());
	sources = catalog_sources_of(relid);
	PopActiveSnapshot();
	/* PostgreSQL refuses a partition any inheritance child (42809) */
	if (sources == NIL || get_rel_relispartition(relid))
		return;
	relid = RangeVarGetRelidExtended(parent, AccessExclusiveLock, RVR_MISSING_OK,
									 RangeVarCallbackOwnsRelation, NULL);
	if (!OidIsValid(relid) || find_inheritance_children(relid, NoLock) != NIL)
		return;
	view = view_using(RelationRelationId, relid, false);
	if (view != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot add an inheritance child to table %s because maintained view \"%s\" reads it",
						get_rel_name(relid), view->name),
				 errdetail("The view reads the table's source, which captures the table's own rows, not a child's."),
				 errhint("Drop the view with peek.drop_view(%s), add the child, then create the view again reading FROM ONLY %s.",
						 quote_literal_cstr(view->name), get_rel_name(relid))));
}

/*
 * Whether an ALTER TYPE drops an attribute: the kept text names an input's
 * columns by position (persist_peek(k, v)), so a dropped attribute the
 * query does not read moves the names of those after it.
 */
static bool
drops_attribute(AlterTableStmt *alter)
{
	ListCell   *lc;

	foreach(lc, alter->cmds)
		if (lfirst_node(AlterTableCmd, lc)->subtype == AT_DropColumn)
			return true;
	return false;
}

/* row_type_walk's visit: values of a type hold values of held if it is met */
static bool
is_type(Oid type, void *held)
{
	return type == *(Oid *) held;
}

/*
 * Whether a row type's attributes (the n of attnums, an index's keys, or
 * all: NULL) hold values of a type, however deep.  A dropped one holds
 * none (an index keyed on it fails its peeks), nor a row type dropped (by
 * DROP TYPE ... CASCADE, which failed its collection and indexes).
 */
static bool
row_holds(Oid row_type, const AttrNumber *attnums, int n, Oid held)
{
	TupleDesc	desc;
	bool		holds = false;

	if (!type_is_rowtype(row_type))
		return false;
	desc = lookup_rowtype_tupdesc(row_type, -1);
	for (int i = 0; i < (attnums ? n : desc->natts) && !holds; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, attnums ? attnums[i] - 1 : i);

		holds = !attr->attisdropped && row_type_walk(attr->atttypid, is_type, &held);
	}
	ReleaseTupleDesc(desc);
	return holds;
}

/*
 * An ALTER TYPE that adds, drops or retypes an attribute of a composite
 * type changes how its values hash (a new attribute counts, NULL in the
 * values made before) and, dropped, which are equal: a view that reads or
 * keeps such values, however deep in its input's rows or its own, would no
 * longer find the groups, distinct rows and join keys it kept, nor an
 * index keyed on them its rows.  (An input's own row type is read as its
 * columns: drops_attribute's.)
 * Locked as guard_relation locks it.
 */
static void
guard_attributes(RangeVar *relation)
{
	Oid			relid = RangeVarGetRelidExtended(relation, AccessExclusiveLock, RVR_MISSING_OK,
												 RangeVarCallbackOwnsRelation, NULL);
	Oid			type = get_rel_type_id(relid);
	ObjectAddress changed;
	ListCell   *lc;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_COMPOSITE_TYPE)
		return;
	ObjectAddressSet(changed, TypeRelationId, type);
	foreach(lc, catalog_views_inputs_indexes())
	{
		CatalogObject *object = lfirst(lc);

		if (object->kind == PEEK_KIND_INDEX && row_holds(object->row_type, object->attnums,
													  object->nkeys, type))
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot change the attributes of %s because index \"%s\" is keyed on it",
							getObjectDescription(&changed, false), object->name),
					 errdetail("An index finds a key by its hash, which the change would make another for the values made before."),
					 errhint("Drop the index with peek.drop_index(%s), make the change, then create the index again.",
							 quote_literal_cstr(object->name))));
		if (object->kind != PEEK_KIND_INDEX && row_holds(object->row_type, NULL, 0, type))
		{
			/* (an input's readers read again: one dropped since has none) */
			List	   *readers = object->kind == PEEK_KIND_VIEW ? list_make1(object) :
				catalog_views_reading(object->name);

			if (readers != NIL)
				refuse_change("change the attributes of", &changed, linitial(readers));
		}
	}
}

/*
 * Whether the user owns an object of a class the guard follows: only an
 * owner's statement gets as far as changing it, so only an owner's takes
 * the guard's locks (PostgreSQL refuses the others, 42501, without
 * waiting for the locks).
 */
static bool
owns_object(Oid class, Oid objid)
{
	switch (class)
	{
		case ProcedureRelationId:
			return pg_proc_ownercheck(objid, GetUserId());
		case OperatorRelationId:
			return pg_oper_ownercheck(objid, GetUserId());
		case TypeRelationId:
			return pg_type_ownercheck(objid, GetUserId());
		case CollationRelationId:
			return pg_collation_ownercheck(objid, GetUserId());
		case TSConfigRelationId:
			return pg_ts_config_ownercheck(objid, GetUserId());
		case TSDictionaryRelationId:
			return pg_ts_dict_ownercheck(objid, GetUserId());
	}
	return false;
}

/* Lock an object the statement changes, if the user owns it (above). */
static bool
lock_owned(Oid class, Oid objid)
{
	if (!OidIsValid(objid) || !owns_object(class, objid))
		return false;
	LockDatabaseObject(class, objid, 0, AccessExclusiveLock);
	return true;
}

/*
 * RENAME or SET SCHEMA of an object: its class and oid, locked as
 * view_uses_lock expects, or InvalidOid (none, or the user does not own
 * it: PostgreSQL refuses that, 42501).
 */
static Oid
named_object(ObjectType type, Node *object, Oid *class)
{
	ObjectAddress address;
	Relation	rel = NULL;
	Oid			objid;

	switch (type)
	{
		case OBJECT_FUNCTION:
		case OBJECT_PROCEDURE:
		case OBJECT_ROUTINE:
		case OBJECT_AGGREGATE:
		case OBJECT_OPERATOR:
		case OBJECT_COLLATION:
		case OBJECT_TSCONFIGURATION:
		case OBJECT_TSDICTIONARY:
			/* the lock the statement takes next, before its ownership check */
			address = get_object_address(type, object, &rel, AccessExclusiveLock, true);
			*class = address.classId;
			return OidIsValid(address.objectId) && owns_object(address.classId, address.objectId) ?
				address.objectId : InvalidOid;
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
			/* (named by a list here; the statement locks no type) */
			*class = TypeRelationId;
			objid = LookupTypeNameOid(NULL, makeTypeNameFromNameList(castNode(List, object)), true);
			return lock_owned(TypeRelationId, objid) ? objid : InvalidOid;
		default:
			return InvalidOid;
	}
}

/*
 * The maintained views a DROP ... CASCADE of what they use drops with it
 * (of a table, a function, an operator, a type, a collation, a text search
 * configuration or dictionary the user owns: PostgreSQL refuses the
 * others), each object locked first as for a rename (named_object).
 */
List *
views_dropped_with(DropStmt *drop)
{
	List	   *views = NIL;
	ListCell   *lc;
	Oid			class;
	Oid			objid;

	if (drop->behavior != DROP_CASCADE || !OidIsValid(get_extension_oid("pg_peek", true)))
		return NIL;
	foreach(lc, drop->objects)
	{
		if (drop->removeType == OBJECT_TABLE)
		{
			class = RelationRelationId;
			objid = RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)), NoLock, true);
			if (OidIsValid(objid) && !pg_class_ownercheck(objid, GetUserId()))
				objid = InvalidOid;
		}
		else if (drop->removeType == OBJECT_TYPE || drop->removeType == OBJECT_DOMAIN)
		{
			/* (named by a TypeName here) */
			class = TypeRelationId;
			objid = LookupTypeNameOid(NULL, lfirst_node(TypeName, lc), true);
			if (!lock_owned(TypeRelationId, objid))
				objid = InvalidOid;
		}
		else
			objid = named_object(drop->removeType, lfirst(lc), &class);
		views = list_concat(views, views_using(class, objid, true));
	}
	return views;
}

/*
 * The function a CREATE OR REPLACE FUNCTION replaces: the one of its name,
 * schema and argument types (a procedure's OUT arguments among them), or
 * InvalidOid if none (then it creates one, or fails on a type that does
 * not exist).
 */
static Oid
function_replaced_by(CreateFunctionStmt *create)
{
	char	   *name;
	Oid			nsp = QualifiedNameGetCreationNamespace(create->funcname, &name);
	Oid		   *types = palloc(sizeof(Oid) * (list_length(create->parameters) + 1));
	int			ntypes = 0;
	ListCell   *lc;
	HeapTuple	tup;
	Oid			oid = InvalidOid;

	foreach(lc, create->parameters)
	{
		FunctionParameter *param = lfirst(lc);

		if (param->mode == FUNC_PARAM_TABLE ||
			(param->mode == FUNC_PARAM_OUT && !create->is_procedure))
			continue;
		types[ntypes] = LookupTypeNameOid(NULL, param->argType, true);
		if (!OidIsValid(types[ntypes++]))
			return InvalidOid;
	}
	tup = SearchSysCache3(PROCNAMEARGSNSP, CStringGetDatum(name),
						  PointerGetDatum(buildoidvector(types, ntypes)), ObjectIdGetDatum(nsp));
	if (HeapTupleIsValid(tup))
	{
		oid = ((Form_pg_proc) GETSTRUCT(tup))->oid;
		ReleaseSysCache(tup);
	}
	return oid;
}

/*
 * The function a CREATE OR REPLACE FUNCTION or ALTER FUNCTION may change,
 * locked as view_uses_lock expects (PostgreSQL's ALTER FUNCTION locks
 * none), or InvalidOid.
 */
static Oid
function_changed_by(Node *stmt)
{
	Oid			oid = InvalidOid;

	if (IsA(stmt, CreateFunctionStmt) && ((CreateFunctionStmt *) stmt)->replace)
		oid = function_replaced_by((CreateFunctionStmt *) stmt);
	else if (IsA(stmt, AlterFunctionStmt))
		oid = LookupFuncWithArgs(((AlterFunctionStmt *) stmt)->objtype,
								 ((AlterFunctionStmt *) stmt)->func, true);
	return lock_owned(ProcedureRelationId, oid) ? oid : InvalidOid;
}

/* row_type_walk's visit: a row type's relation locked in share mode */
static bool
lock_row_type(Oid type, void *arg)
{
	if (OidIsValid(get_typ_typrelid(type)))
		LockRelationOid(get_typ_typrelid(type), AccessShareLock);
	return false;
}

void
view_uses_lock_types_held(Oid type)
{
	(void) row_type_walk(type, lock_row_type, NULL);
}

/*
 * Lock, in share mode, a function, operator, type, collation or text
 * search configuration or dictionary a rule depends on, its schema and the
 * row types a type's values hold, and walk on to what it depends on but a
 * type: what views_using and guard_schema follow from a changed object,
 * however many calls away.  A table the rule reads: the row types its
 * rows hold (guard_attributes).
 */
static bool
visit_used(const ObjectAddress *object, void *arg)
{
	if (object->classId == RelationRelationId)
		view_uses_lock_types_held(get_rel_type_id(object->objectId));
	if (!named_by_text(object->classId))
		return false;
	LockDatabaseObject(object->classId, object->objectId, 0, AccessShareLock);
	LockDatabaseObject(NamespaceRelationId, get_object_namespace(object), 0, AccessShareLock);
	if (object->classId == TypeRelationId)
		view_uses_lock_types_held(object->objectId);
	return object->classId != TypeRelationId;
}

void
view_uses_lock(Oid relid)
{
	/* the rule's dependencies on what the query uses, just recorded */
	CommandCounterIncrement();
	walk_dependencies(RewriteRelationId, get_rewrite_oid(relid, ViewSelectRuleName, false),
					  TO_REFERENCED, visit_used, NULL);
	view_uses_lock_types_held(get_rel_type_id(relid));
}

List *
view_uses_guard_before(Node *stmt)
{
	List	   *kept = NIL;
	Oid			class;
	Oid			objid;

	if (!OidIsValid(get_extension_oid("pg_peek", true)))
		return NIL;

	if (IsA(stmt, RenameStmt))
	{
		RenameStmt *rename = (RenameStmt *) stmt;

		if (rename->renameType == OBJECT_SCHEMA)
			guard_schema(get_namespace_oid(rename->subname, true));
		else if (rename->relation == NULL)
		{
			objid = named_object(rename->renameType, rename->object, &class);
			if (OidIsValid(objid))
				guard_object("rename", class, objid, false);
		}
		else if (rename->renameType == OBJECT_COLUMN || rename->renameType == OBJECT_ATTRIBUTE)
			guard_relation("rename a column of", rename->relation);
		else if (rename->renameType == OBJECT_TABLE || rename->renameType == OBJECT_VIEW ||
				 rename->renameType == OBJECT_MATVIEW || rename->renameType == OBJECT_FOREIGN_TABLE)
			guard_relation("rename", rename->relation);
	}
	else if (IsA(stmt, AlterObjectSchemaStmt))
	{
		AlterObjectSchemaStmt *move = (AlterObjectSchemaStmt *) stmt;

		if (move->relation != NULL)
			guard_relation("move", move->relation);
		else if (move->objectType == OBJECT_EXTENSION)
			guard_extension(strVal(move->object));
		else if (OidIsValid(objid = named_object(move->objectType, move->object, &class)))
			guard_object("move", class, objid, false);
	}
	else if (IsA(stmt, AlterTableStmt) && ((AlterTableStmt *) stmt)->objtype == OBJECT_TYPE)
	{
		if (drops_attribute((AlterTableStmt *) stmt))
			guard_relation("drop an attribute of", ((AlterTableStmt *) stmt)->relation);
		guard_attributes(((AlterTableStmt *) stmt)->relation);
	}
	else if (IsA(stmt, AlterTableStmt))
	{
		ListCell   *lc;

		foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			if (lfirst_node(AlterTableCmd, lc)->subtype == AT_AddInherit)
				guard_first_child((RangeVar *) lfirst_node(AlterTableCmd, lc)->def);
	}
	else if ((IsA(stmt, CreateStmt) || IsA(stmt, CreateForeignTableStmt)) &&
			 ((CreateStmt *) stmt)->partbound == NULL)
	{
		ListCell   *lc;

		foreach(lc, ((CreateStmt *) stmt)->inhRelations)
			guard_first_child(lfirst_node(RangeVar, lc));
	}
	else if (IsA(stmt, AlterEnumStmt) && ((AlterEnumStmt *) stmt)->oldVal != NULL)
	{
		/* the kept text names the value ('a'::e) */
		objid = named_object(OBJECT_TYPE, (Node *) ((AlterEnumStmt *) stmt)->typeName, &class);
		if (OidIsValid(objid))
			guard_object("rename a value of", class, objid, false);
	}
	else if (IsA(stmt, AlterTSConfigurationStmt) || IsA(stmt, AlterTSDictionaryStmt))
	{
		/* a configuration's mappings, a dictionary's options (also in a view's configuration) */
		objid = IsA(stmt, AlterTSConfigurationStmt) ?
			named_object(OBJECT_TSCONFIGURATION, (Node *) ((AlterTSConfigurationStmt *) stmt)->cfgname, &class) :
			named_object(OBJECT_TSDICTIONARY, (Node *) ((AlterTSDictionaryStmt *) stmt)->dictname, &class);
		if (OidIsValid(objid))
			guard_object("change", class, objid, true);
	}
	else if (IsA(stmt, AlterDomainStmt) && strchr("CO", ((AlterDomainStmt *) stmt)->subtype) != NULL)
	{
		/* a new constraint (or NOT NULL) fails a cast a view's old row passed, at its retraction */
		objid = named_object(OBJECT_DOMAIN, (Node *) ((AlterDomainStmt *) stmt)->typeName, &class);
		if (OidIsValid(objid))
			guard_object("constrain", class, objid, false);
	}
	objid = function_changed_by(stmt);
	if (OidIsValid(objid) && view_using(ProcedureRelationId, objid, true) != NULL)
	{
		HeapTuple	tup = SearchSysCacheCopy1(PROCOID, ObjectIdGetDatum(objid));

		if (HeapTupleIsValid(tup))
			kept = lappend(kept, tup);
	}
	return kept;
}

void
view_uses_guard_after(List *functions)
{
	Relation	pg_proc;
	ListCell   *lc;

	if (functions == NIL)
		return;
	CommandCounterIncrement();
	pg_proc = table_open(ProcedureRelationId, AccessShareLock);
	foreach(lc, functions)
	{
		HeapTuple	before = lfirst(lc);
		Oid			oid = ((Form_pg_proc) GETSTRUCT(before))->oid;
		HeapTuple	after = SearchSysCache1(PROCOID, ObjectIdGetDatum(oid));

		if (!HeapTupleIsValid(after))
			continue;
		for (int i = 0; i < lengthof(function_meaning); i++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(pg_proc), function_meaning[i] - 1);
			bool		null_before;
			bool		null_after;
			Datum		was = heap_getattr(before, att->attnum, RelationGetDescr(pg_proc), &null_before);
			Datum		is = heap_getattr(after, att->attnum, RelationGetDescr(pg_proc), &null_after);

			if (null_before != null_after ||
				(!null_before && !datum_image_eq(was, is, att->attbyval, att->attlen)))
			{
				ObjectAddress object;

				ObjectAddressSet(object, ProcedureRelationId, oid);
				refuse_change("change", &object, view_using(ProcedureRelationId, oid, true));
			}
		}
		ReleaseSysCache(after);
	}
	table_close(pg_proc, AccessShareLock);
}
