/* storage/pg/backend.c — the PostgreSQL backend's top (libpq): its driver's table (fj_pg_driver,
 * storage/core/driver.h), opening, embedded migrations' own parts, their advisory lock
 * (storage/core/migrate.c keeps the books; tokens are storage/core/tokens.c). It calls down into
 * the other files of storage/pg/, which call down into the driver's bottom (storage/pg/driver.c:
 * connection, transactions, statements, errors), batched rows (copy.c), week partitions (weeks.c)
 * and the name cache (intern.c), never back up. The write path is in storage/pg/write.c, the
 * metrics in ts.c and ts_read.c; the queries are written once (storage/query/); the schema in
 * migrations/postgres/. */
#include "storage/pg/int.h"
#include "storage/pg/migrations.h"
#include "storage/pg/query_int.h"
#include "storage/pg/ts.h"

#include "alloc.h"
#include "log.h"
#include "redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Session advisory lock held while migrations run ('fjordmig'), so that two `fjord migrate` or
 * `fjord serve` never migrate one database at once. Partition DDL has its own (in the schema). */
#define MIGRATE_LOCK "7379250473474779495"

/* --- statements ----------------------------------------------------------------------------- */

/* The SQL of statement id for the driver's cache: the fixed texts of FJ_PG_STMTS, or the ones the
 * writer and Chimbuko build. */
static const char *stmt_text(fj_pg_stmt_id id)
{
    static const char *const sql[] = {
#define FJ_PG_SQL(name, text) text,
        FJ_PG_STMTS(FJ_PG_SQL)
#undef FJ_PG_SQL
    };
    if (sql[id])
        return sql[id];
    const char *b = fj_pg_built_sql(id);
    return b ? b : fj_pg_chimbuko_sql(id);
}

/* The URL as logs and errors show it: every credential in it redacted (common/redact.h). */
static char *url_shown(const char *url)
{
    char shown[1024];
    return fj_strdup(fj_redact_conn(url, shown, sizeof shown));
}

/* --- URL ---------------------------------------------------------------------------------- */

static bool pg_accepts(const char *url)
{
    return url && (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0);
}

/* --- migrations (the bookkeeping is storage/core/migrate.c) ------------------------------------------------------------------------- */

/* A one-value query without parameters (schema inspection; no user data in the SQL). */
static fj_status query_int(fj_store *s, const char *sql, int64_t *out, fj_err *err)
{
    PGresult *r = PQexec(s->conn, sql);
    fj_status st = FJ_OK;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        st = fj_pg_fail(s, r, "schema check", err);
    else
        *out = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    return st;
}

static fj_status migrate_lock(fj_store *s, bool lock, fj_err *err)
{
    return fj_pg_exec(s, lock ? "SELECT pg_advisory_lock(" MIGRATE_LOCK ")" : "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")",
                      lock ? "take the migration lock" : "release the migration lock", err);
}

/* A migration's text; its failure keeps the server's message, as busy (retry) or not. */
static fj_status run_text(fj_store *s, const fj_migration *m, fj_err *err)
{
    PGresult *r = PQexec(s->conn, m->sql);
    fj_status st = FJ_OK;
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        fj_err e2 = {0};
        fj_status st2 = fj_pg_fail(s, r, "migration", &e2);
        st = fj_err_set(err, st2 == FJ_EBUSY ? FJ_EBUSY : FJ_EIO, "db", "migration %04d_%s failed: %s", m->version,
                        m->name, e2.message);
    }
    PQclear(r);
    return st;
}

/* Roll-ups and job CPU a migration listed (0004's and 0005's backfills). */
static fj_status backfill(fj_store *s, fj_err *err)
{
    fj_status st = fj_pg_load_rollup_drain(s, err);
    return st == FJ_OK ? fj_pg_jcpu_drain(s, NULL, NULL, NULL, 0, NULL, err) : st; /* 0005's backfill of job CPU */
}

static fj_migrator migrator(const fj_store *s)
{
    return (fj_migrator){
        .kind = "PostgreSQL",
        .shown = s->shown,
        .list = fj_pg_migrations,
        .n = fj_pg_n_migrations,
        .begin = "BEGIN",
        .create_table = "CREATE TABLE IF NOT EXISTS schema_migrations(version integer PRIMARY KEY, "
                        "name text, applied_at bigint)",
        .has_table = "SELECT count(*) FROM pg_class WHERE relname = 'schema_migrations' AND "
                     "relnamespace = current_schema()::regnamespace",
        .count_tables = "SELECT count(*) FROM pg_class WHERE relkind IN ('r','p','v') AND "
                        "relnamespace = current_schema()::regnamespace",
        .query_int = query_int,
        .run_text = run_text,
        .backfill = backfill,
        .lock = migrate_lock,
    };
}

/* --- open / close ------------------------------------------------------------------------- */

static void pg_close(fj_store *s)
{
    if (!s)
        return;
    fj_pg_ts_close(s); /* seals and commits buffered metrics while the connection is open */
    if (s->conn)
        PQfinish(s->conn);
    if (s->cancel)
        PQfreeCancel(s->cancel);
    fj_pg_quota_close(s);
    fj_pg_write_free(s);
    fj_intern_clear(&s->names);
    fj_intern_clear(&s->kept);
    fj_free(s->weeks);
    fj_free(s->url);
    fj_free(s->shown);
    fj_free(s);
}

static fj_status pg_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err)
{
    static const fj_store_opts defaults = {0};
    if (!opts)
        opts = &defaults;
    *out = NULL;
    fj_store *s = fj_calloc(1, sizeof *s);
    if (!s)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    s->driver = &fj_pg_driver;
    s->stmt_text = stmt_text;
    s->mode = opts->mode;
    s->migrating = opts->migrating;
    s->job_gap_s = opts->job_gap_s > 0 ? opts->job_gap_s : FJ_JOB_GAP_DEFAULT_S;
    s->retention = opts->retention;
    s->commit_timeout_s = opts->commit_timeout_s ? opts->commit_timeout_s : FJ_PG_COMMIT_TIMEOUT_S;
    s->url = fj_strdup(url);
    s->shown = url_shown(url);
    if (!s->url || !s->shown) {
        pg_close(s);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    fj_status st = fj_pg_reconnect(s, err);
    if (st == FJ_OK) {
        fj_migrator m = migrator(s);
        st = fj_migrate_check(s, &m, opts, err);
    }
    if (st == FJ_OK && opts->mode == FJ_STORE_WRITE && !opts->migrating) {
        /* The writer keeps partitions ahead of time and old ones dropped from the start. */
        st = fj_pg_retention(s, true, err);
        if (st == FJ_OK)
            st = fj_pg_ensure_weeks(s, NULL, 0, false, err);
        if (st == FJ_OK)
            st = fj_pg_quota_open(s, &opts->quota, err);
    }
    if (st != FJ_OK) {
        pg_close(s);
        return st;
    }
    *out = s;
    return FJ_OK;
}

static fj_status pg_migrate_status(fj_store *s, fj_migration_info *out, fj_err *err)
{
    fj_migrator m = migrator(s);
    out->latest = fj_migrate_latest(&m);
    fj_status st = fj_pg_connect(s, err);
    return st == FJ_OK ? fj_migrate_current(s, &m, &out->current, NULL, err) : st;
}

static fj_status pg_migrate_up(fj_store *s, int *applied, fj_err *err)
{
    if (s->mode == FJ_STORE_WRITE) {
        fj_status st = fj_pg_connect(s, err);
        if (st != FJ_OK)
            return st;
    }
    fj_migrator m = migrator(s);
    return fj_migrate_up(s, &m, applied, err);
}

/* The driver (storage/core/driver.h), in its order, a line per section: what PostgreSQL does its
 * own way (line-protocol metrics in storage/pg/ts.c and storage/pg/ts_read.c); every other
 * function of the engine is written once over it. No compact or backup: the database has its own
 * tools. */
const fj_driver fj_pg_driver = {
    .name = "postgres",
    .dialect = {.mark = '$', .bytewise = " COLLATE \"C\"", .greatest = "greatest", .cross = "JOIN",
                .real = "::float8", .glob_regex = true,
                .insert_ignore_head = "INSERT INTO", .insert_ignore_tail = " ON CONFLICT DO NOTHING",
                .blob_type = "bytea"},
    .layout = &fj_pg_driver_layout,
    /* a query's statements; the store's own (storage/pg/driver.c) */
    .begin_read = fj_pg_driver_begin_read, .end_read = fj_pg_driver_end_read, .prepare = fj_pg_driver_prepare,
    .finalize = fj_pg_driver_finalize, .exec = fj_pg_exec, .rollback = fj_pg_rollback,
    .writable = fj_pg_driver_writable, .run = fj_pg_driver_run,
    .accepts = pg_accepts, .open = pg_open, .close = pg_close,
    .migrate_status = pg_migrate_status, .migrate_up = pg_migrate_up,
    .own_tools = "PostgreSQL has its own tools (pg_dump for a backup, VACUUM for space; docs/deploy.md)",
    .write = fj_pg_write,
    .ts_start = fj_pg_ts_start, .ts_engine = fj_pg_ts_engine, .ts_maintain = fj_pg_ts_maintain,
    .ts_series = fj_pg_ts_series, .ts_read = fj_pg_ts_read, .ts_read_many = fj_pg_ts_read_many,
};
