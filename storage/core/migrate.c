/* storage/core/migrate.c — the migrations' bookkeeping over the driver (storage/core/migrate.h). */
#include "storage/core/migrate.h"

#include "storage/core/driver.h"
#include "timefmt.h"

#include <stdio.h>

int fj_migrate_latest(const fj_migrator *m)
{
    return m->n ? m->list[m->n - 1].version : 0;
}

fj_status fj_migrate_current(fj_store *s, const fj_migrator *m, int *out, bool *tracked, fj_err *err)
{
    int64_t has = 0, v = 0;
    fj_status st = m->query_int(s, m->has_table, &has, err);
    if (st == FJ_OK && has)
        st = m->query_int(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", &v, err);
    *out = (int)v;
    if (tracked)
        *tracked = has != 0;
    return st;
}

static fj_status newer(int cur, int latest, fj_err *err)
{
    return fj_err_set(err, FJ_ESCHEMA, "db",
                      "database schema is at version %d, newer than this fjord (%d): upgrade fjord", cur, latest);
}

/* Ends the open transaction by how its work went (st): committed (what names the commit in an
 * error), or rolled back when the work or the commit failed. */
static fj_status end_txn(const fj_driver *d, fj_store *s, fj_status st, const char *what, fj_err *err)
{
    if (st == FJ_OK)
        st = d->exec(s, "COMMIT", what, err);
    if (st != FJ_OK)
        d->rollback(s);
    return st;
}

/* One migration in its own transaction, its row in schema_migrations included. */
static fj_status apply_one(fj_store *s, const fj_migrator *m, const fj_migration *g, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    fj_status st = d->exec(s, m->begin, "begin migration", err);
    if (st == FJ_OK)
        st = d->exec(s, m->create_table, "create schema_migrations", err);
    if (st == FJ_OK)
        st = m->run_text(s, g, err);
    if (st == FJ_OK) {
        char ver[16], at[24];
        snprintf(ver, sizeof ver, "%d", g->version);
        snprintf(at, sizeof at, "%lld", (long long)fj_time_now());
        const char *vals[] = {ver, g->name, at};
        st = d->run(s, "INSERT INTO schema_migrations(version, name, applied_at) VALUES(?1, ?2, ?3)", 3, vals,
                    NULL, NULL, NULL, "record migration", err);
    }
    return end_txn(d, s, st, "commit migration", err);
}

fj_status fj_migrate_apply(fj_store *s, const fj_migrator *m, int *applied, fj_err *err)
{
    *applied = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->list[i].version != (int)i + 1)
            return fj_err_set(err, FJ_EINTERNAL, "db", "embedded %s migrations are not numbered 1..n", m->kind);
    int cur;
    fj_status st = fj_migrate_current(s, m, &cur, NULL, err);
    if (st != FJ_OK)
        return st;
    if (cur > fj_migrate_latest(m))
        return newer(cur, fj_migrate_latest(m), err);
    for (size_t i = (size_t)cur; i < m->n; i++) {
        if ((st = apply_one(s, m, &m->list[i], err)) != FJ_OK)
            return st;
        ++*applied;
    }
    /* What migrations listed to be computed in C, in a transaction of its own: should it not
     * finish, queries read samples meanwhile and the writer completes it. */
    if (*applied > 0) {
        const fj_driver *d = fj_driver_of(s);
        if ((st = d->exec(s, m->begin, "begin", err)) != FJ_OK)
            return st;
        st = end_txn(d, s, m->backfill(s, err), "commit", err);
    }
    return st;
}

fj_status fj_migrate_up(fj_store *s, const fj_migrator *m, int *applied, fj_err *err)
{
    int dummy;
    if (!applied)
        applied = &dummy;
    *applied = 0;
    if (!fj_driver_of(s)->writable(s))
        return fj_err_set(err, FJ_EINVAL, "db", "migrate up needs a writable handle");
    fj_status st = m->lock ? m->lock(s, true, err) : FJ_OK;
    if (st != FJ_OK)
        return st;
    st = fj_migrate_apply(s, m, applied, err);
    if (m->lock) {
        fj_err e2 = {0};
        m->lock(s, false, &e2);
    }
    return st;
}

/* FJ_ESCHEMA when a database without schema_migrations has tables: not fjord's. */
static fj_status not_ours(fj_store *s, const fj_migrator *m, fj_err *err)
{
    int64_t ntables = 0;
    fj_status st = m->query_int(s, m->count_tables, &ntables, err);
    if (st == FJ_OK && ntables > 0)
        st = fj_err_set(err, FJ_ESCHEMA, "db", "%s has tables but no schema_migrations: not an fjord database",
                        m->shown);
    return st;
}

fj_status fj_migrate_check(fj_store *s, const fj_migrator *m, const fj_store_opts *opts, fj_err *err)
{
    int cur, latest = fj_migrate_latest(m);
    bool tracked;
    fj_status st = fj_migrate_current(s, m, &cur, &tracked, err);
    if (st != FJ_OK)
        return st;
    if (cur == 0 && !tracked && opts->mode == FJ_STORE_WRITE && opts->create) {
        /* An empty database: migrate it, under the lock, checking again once we hold it (another
         * fjord may have migrated it meanwhile). */
        if (m->lock && (st = m->lock(s, true, err)) != FJ_OK)
            return st;
        if (m->lock)
            st = fj_migrate_current(s, m, &cur, &tracked, err);
        if (st == FJ_OK && cur == 0 && !tracked) {
            st = not_ours(s, m, err);
            int applied;
            if (st == FJ_OK)
                st = fj_migrate_apply(s, m, &applied, err);
            if (st == FJ_OK)
                st = fj_migrate_current(s, m, &cur, &tracked, err);
        }
        if (m->lock) {
            fj_err e2 = {0};
            m->lock(s, false, &e2);
        }
        if (st != FJ_OK)
            return st;
    }
    if (cur == 0 && !tracked && (st = not_ours(s, m, err)) != FJ_OK)
        return st;
    if (cur == latest || opts->migrating)
        return FJ_OK;
    if (cur > latest)
        return newer(cur, latest, err);
    return fj_err_set(err, FJ_ESCHEMA, "db",
                      "database schema is at version %d, this fjord needs %d: run `fjord migrate up --db %s`", cur,
                      latest, m->shown);
}
