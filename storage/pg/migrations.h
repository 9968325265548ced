/* storage/pg/migrations.h — the PostgreSQL schema migrations embedded in the binary. The table is generated
 * at build time from migrations/postgres/NNNN_name.sql (see the storage section of CMakeLists.txt),
 * sorted by version; versions start at 1 and have no gaps. */
#ifndef FJ_PG_MIGRATIONS_H
#define FJ_PG_MIGRATIONS_H

#include "storage/core/migrate.h"

#include <stddef.h>

typedef fj_migration fj_pg_migration; /* storage/core/migrate.h */

extern const fj_pg_migration fj_pg_migrations[];
extern const size_t fj_pg_n_migrations;

#endif
