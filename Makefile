# pg_peek: PGXS build.  `make && make install` builds and installs the
# extension.  `make installcheck` runs the regression and isolation suites
# against a running server (as in contrib; see README.md, Tests), and
# `make prove_installcheck` the TAP suite; scripts/test runs all of them
# in both runtime modes against throwaway clusters.

MODULE_big = pg_peek
OBJS = \
	src/module.o \
	src/common/settings.o \
	src/common/rows.o \
	src/common/spi.o \
	src/ipc/shmem.o \
	src/ipc/batch.o \
	src/ipc/registry.o \
	src/ipc/notify.o \
	src/storage/catalog.o \
	src/storage/shard_ddl.o \
	src/storage/shard_write.o \
	src/storage/shard_scan.o \
	src/storage/shard_walk.o \
	src/storage/shard_compact.o \
	src/storage/standby_replay.o \
	src/arrange/spine.o \
	src/arrange/walk.o \
	src/peek/peek.o \
	src/capture/streams.o \
	src/capture/loader.o \
	src/capture/rounds.o \
	src/capture/backend.o \
	src/capture/decoder.o \
	src/sql/arguments.o \
	src/sql/ddl.o \
	src/sql/writes.o \
	src/sql/peek_call.o \
	src/sql/persist_peek.o \
	src/sql/index_peek.o \
	src/sql/row_hash.o \
	src/sql/scan.o \
	src/sql/introspection.o \
	src/runtime/runtime.o \
	src/runtime/maintenance.o

EXTENSION = pg_peek
DATA = pg_peek--0.1.sql pg_peek--0.1--0.2.sql pg_peek--0.2--0.3.sql
PGFILEDESC = "pg_peek - time-versioned arrangements in shared memory"

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

# The runtimes serve one database (pg_peek.database, default postgres), so
# the suites run in it rather than in a database pg_regress would create;
# the server must be started with shared_preload_libraries = 'pg_peek' and
# wal_level = logical.  Files run in name order: sql/00_helpers.sql first,
# sql/zz_cleanup.sql last.
REGRESS = $(sort $(basename $(notdir $(wildcard $(srcdir)/sql/*.sql))))
REGRESS_OPTS = --use-existing
ISOLATION = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/specs/*.spec))))
ISOLATION_OPTS = --use-existing --inputdir=$(srcdir)/test
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# (after the include, which sets them)
CONTRIB_TESTDB = postgres
ISOLATION_TESTDB = postgres
# the TAP tests' helper module (PgPeekTest)
PROVE_FLAGS = -I test/perl

# PGXS defines the recipe (installcheck runs it too) but no target of its own
.PHONY: prove_installcheck
prove_installcheck:
	$(prove_installcheck)

# PGXS tracks no header dependencies here: rebuild when any header changes.
$(OBJS): $(wildcard $(srcdir)/src/*/*.h)
