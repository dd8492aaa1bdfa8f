# pg_peek: PGXS build.  `make && make install` builds and installs the
# extension; the test suites are driven by scripts/test (see README.md).

MODULE_big = pg_peek
OBJS = \
	src/pg_peek.o \
	src/config.o \
	src/spi.o \
	src/shmem.o \
	src/registry.o \
	src/runtime.o \
	src/maintenance.o \
	src/peek.o \
	src/persist.o \
	src/rows.o \
	src/batch.o \
	src/spine.o \
	src/walk.o \
	src/catalog.o \
	src/notify.o \
	src/capture.o \
	src/decoder.o \
	src/functions.o \
	src/introspection.o

EXTENSION = pg_peek
DATA = pg_peek--0.1.sql pg_peek--0.1--0.2.sql
PGFILEDESC = "pg_peek - time-versioned arrangements in shared memory"

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies here: rebuild when any header changes.
$(OBJS): $(wildcard $(srcdir)/src/*.h)
