/* storage/sqlite/migrations.h — the SQLite schema migrations embedded in the binary. The table is
 * generated at build time from migrations/sqlite/NNNN_name.sql (see the storage section of
 * CMakeLists.txt), sorted by version; versions start at 1 and have no gaps. */
#ifndef FJ_SQLITE_MIGRATIONS_H
#define FJ_SQLITE_MIGRATIONS_H

#include "storage/core/migrate.h"

#include <stddef.h>

typedef fj_migration fj_sqlite_migration; /* storage/core/migrate.h */

extern const fj_sqlite_migration fj_sqlite_migrations[];
extern const size_t fj_sqlite_n_migrations;

#endif
