/* storage/core/migrate.h — the migrations' bookkeeping, written once over the driver
 * (storage/core/driver.h): the current version (max of schema_migrations), the apply loop (one
 * transaction per migration, its row in schema_migrations included, so a failed one leaves the
 * previous version), and the schema check at open. What differs per backend comes in an
 * fj_migrator: the embedded migrations, the catalog queries, how a migration's text runs and
 * what its failure says, the backfills computed in C after migrating, and the lock around
 * migrations (PostgreSQL's advisory lock; none on SQLite, whose writer is alone on its file). */
#ifndef FJ_STORE_MIGRATE_H
#define FJ_STORE_MIGRATE_H

#include "fj_status.h"
#include "storage/core/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One embedded migration (migrations/<backend>/NNNN_name.sql). */
typedef struct fj_migration {
    int version;     /* NNNN */
    const char *name;
    const char *sql; /* the file's text, NUL-terminated; may hold several statements */
} fj_migration;

typedef struct fj_migrator {
    const char *kind;         /* "SQLite" or "PostgreSQL", in messages */
    const char *shown;        /* the database as messages name it (a path, a redacted URL) */
    const fj_migration *list; /* numbered 1..n */
    size_t n;
    const char *begin;        /* what opens a migration's transaction ("BEGIN IMMEDIATE", "BEGIN") */
    const char *create_table; /* CREATE TABLE IF NOT EXISTS schema_migrations(...) in its types */
    const char *has_table;    /* catalog: 1 when schema_migrations exists, else 0 */
    const char *count_tables; /* catalog: how many tables and views there are */
    /* The single integer sql returns (0 when no row). */
    fj_status (*query_int)(fj_store *s, const char *sql, int64_t *out, fj_err *err);
    /* Runs m's text inside its transaction; a failure says "migration NNNN_name failed: ...". */
    fj_status (*run_text)(fj_store *s, const fj_migration *m, fj_err *err);
    /* What a migration listed to be computed in C (roll-ups, job CPU), in an open transaction. */
    fj_status (*backfill)(fj_store *s, fj_err *err);
    /* Takes (lock true) or releases the lock held while migrating; NULL when there is none. */
    fj_status (*lock)(fj_store *s, bool lock, fj_err *err);
} fj_migrator;

/* The highest applied version, 0 when schema_migrations does not exist or is empty; *tracked
 * (may be NULL) tells whether it exists. */
fj_status fj_migrate_current(fj_store *s, const fj_migrator *m, int *out, bool *tracked, fj_err *err);

/* The latest embedded version (0 when none). */
int fj_migrate_latest(const fj_migrator *m);

/* Applies the pending migrations (*applied of them), then the backfills when any was applied.
 * The caller holds the lock. FJ_ESCHEMA when the database is newer than this fjord. */
fj_status fj_migrate_apply(fj_store *s, const fj_migrator *m, int *applied, fj_err *err);

/* `fjord migrate up`: apply under the lock, on a writable handle. */
fj_status fj_migrate_up(fj_store *s, const fj_migrator *m, int *applied, fj_err *err);

/* The check at open: an empty database is migrated when opts allow it (writer, create), under
 * the lock and checked again once held; one with tables but no schema_migrations is not fjord's;
 * otherwise the version must be the latest (unless opts->migrating). FJ_ESCHEMA says which. */
fj_status fj_migrate_check(fj_store *s, const fj_migrator *m, const fj_store_opts *opts, fj_err *err);

#endif
