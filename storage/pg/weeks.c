/* storage/pg/weeks.c — week partitions of PostgreSQL's high-volume tables: making sure the weeks
 * a write needs exist (and a few ahead), and retention dropping the old ones. */
#include "storage/pg/int.h"

#include "alloc.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define DDL_LOCK_TIMEOUT "SET LOCAL lock_timeout = '" FJ_PG_LOCK_TIMEOUT "'"
#define WEEK_S 604800
#define MONDAY0 345600 /* 1970-01-05T00:00:00Z, the first Monday */
#define WEEKS_AHEAD 2
#define RETENTION_EVERY_S 3600

/* --- partitions and retention ------------------------------------------------------------- */

int64_t fj_pg_week_of(fj_time t)
{
    int64_t d = t - MONDAY0;
    int64_t q = d / WEEK_S;
    if (d % WEEK_S < 0)
        q--; /* floor, also before 1970 */
    return q * WEEK_S + MONDAY0;
}

void fj_pg_weeks_forget(fj_store *s)
{
    s->n_weeks = 0;
}

static bool week_known(const fj_store *s, int64_t w)
{
    for (size_t i = 0; i < s->n_weeks; i++)
        if (s->weeks[i] == w)
            return true;
    return false;
}

static fj_status week_remember(fj_store *s, int64_t w)
{
    if (s->n_weeks == s->cap_weeks) {
        if (s->cap_weeks >= 4096) { /* a cache: start over */
            s->n_weeks = 0;
        } else {
            size_t cap = s->cap_weeks ? s->cap_weeks * 2 : 16;
            int64_t *v = fj_realloc(s->weeks, cap * sizeof *v);
            if (!v)
                return FJ_ENOMEM;
            s->weeks = v;
            s->cap_weeks = cap;
        }
    }
    s->weeks[s->n_weeks++] = w;
    return FJ_OK;
}

fj_status fj_pg_ensure_weeks(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err)
{
    /* The weeks of the given times, then the current week and the next ones, so that partitions
     * exist before data for them arrives. Known weeks cost a lookup in a short list. */
    int64_t now_w = fj_pg_week_of(fj_time_now());
    bool began = false;
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n + 1 + WEEKS_AHEAD; i++) {
        int64_t w = i < n ? fj_pg_week_of(times[i]) : now_w + (int64_t)(i - n) * WEEK_S;
        if (week_known(s, w))
            continue;
        if (!in_tx && !began) {
            st = fj_pg_begin(s, false, err);
            if (st == FJ_OK)
                st = fj_pg_exec(s, DDL_LOCK_TIMEOUT, "partition lock timeout", err);
            began = true;
        }
        char v[24];
        snprintf(v, sizeof v, "%lld", (long long)w);
        const char *vals[] = {v};
        if (st == FJ_OK)
            st = fj_pg_run(s, FJ_PG_ENSURE_WEEK, 1, vals, NULL, "create partitions", err);
        /* Remembered at once (later times of the same week skip it). Inside a caller's
         * transaction that may still roll back: the write path forgets them when it does. */
        if (st == FJ_OK && week_remember(s, w) != FJ_OK)
            st = fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    if (st == FJ_OK && began)
        st = fj_pg_exec(s, "COMMIT", "commit partitions", err);
    if (st != FJ_OK) {
        if (began)
            fj_pg_rollback(s);
        fj_pg_weeks_forget(s);
    }
    return st;
}

fj_status fj_pg_retention(fj_store *s, bool force, fj_err *err)
{
    if (s->retention_s <= 0)
        return FJ_OK;
    fj_time now = fj_time_now();
    if (!force && now - s->retention_ran < RETENTION_EVERY_S)
        return FJ_OK;
    char v[24];
    snprintf(v, sizeof v, "%lld", (long long)(now - s->retention_s));
    const char *vals[] = {v};
    PGresult *r = NULL;
    fj_status st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, DDL_LOCK_TIMEOUT, "retention lock timeout", err);
    if (st == FJ_OK)
        st = fj_pg_run(s, FJ_PG_DROP_BEFORE, 1, vals, &r, "drop old partitions", err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, "COMMIT", "commit retention", err);
    if (st != FJ_OK) {
        PQclear(r);
        fj_pg_rollback(s);
        return st;
    }
    int64_t dropped = r && PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    s->retention_ran = now;
    if (dropped) {
        fj_info("postgres: retention dropped %lld week partitions older than %s", (long long)dropped, v);
        fj_pg_weeks_forget(s);
    }
    return FJ_OK;
}

