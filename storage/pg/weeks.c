/* storage/pg/weeks.c — week partitions of PostgreSQL's high-volume tables: making sure the weeks
 * a write needs exist (and a few ahead), and retention (storage/core/retention.h) dropping the old
 * ones, with the errors and Slurm job steps past theirs. */
#include "storage/pg/int.h"
#include "storage/core/grow.h"

#include "alloc.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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
        } else if (!fj_grow(&s->weeks, &s->cap_weeks, s->n_weeks + 1, sizeof *s->weeks, 16)) {
            return FJ_ENOMEM;
        }
    }
    s->weeks[s->n_weeks++] = w;
    return FJ_OK;
}

static fj_status ensure_weeks_once(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err)
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

/* Making a partition locks its parent table exclusively, so a reader that holds one parent and
 * waits for another can deadlock with it (40P01), and PostgreSQL may pick the partitions'
 * transaction to undo. In a transaction of its own it is tried again, a few times, before the
 * group fails (a write answered 503 for a week that a moment later exists). */
#define WEEKS_TRIES 5

/* Was the failure a deadlock (40P01)? Only that is tried again: a database that is gone answers
 * 503 at once (a write must not wait in the queue for its return). */
static bool deadlocked(const fj_store *s)
{
    return s->conn && PQstatus(s->conn) == CONNECTION_OK && strcmp(s->sqlstate, "40P01") == 0;
}

fj_status fj_pg_ensure_weeks(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err)
{
    s->sqlstate[0] = '\0';
    fj_status st = ensure_weeks_once(s, times, n, in_tx, err);
    for (int i = 1; st == FJ_EBUSY && !in_tx && i < WEEKS_TRIES && deadlocked(s); i++) {
        fj_log(FJ_LOG_DEBUG, "partitions: %s; trying again", err->message);
        struct timespec pause = {0, 20000000L * i}; /* 20, 40, ... ms: let the other side finish */
        nanosleep(&pause, NULL);
        *err = (fj_err){0};
        s->sqlstate[0] = '\0';
        st = ensure_weeks_once(s, times, n, in_tx, err);
    }
    return st;
}

/* The process-sample tables; every other partitioned table but load_hourly holds node samples
 * (fj_drop_partitions_by, migrations/postgres/0007_retention.sql). */
#define PROCESS_TABLES "{sample_proc_sets,sample_proc_gpus,job_samples}"

/* A horizon as a statement parameter: NULL (no horizon) when the kind is kept forever. */
static const char *horizon(char *buf, size_t cap, bool set, int64_t t)
{
    if (!set)
        return NULL;
    snprintf(buf, cap, "%lld", (long long)t);
    return buf;
}

fj_status fj_pg_retention(fj_store *s, bool force, fj_err *err)
{
    const fj_retention *k = &s->retention;
    if (k->process_samples_s <= 0 && k->node_samples_s <= 0 && k->errors_s <= 0 && k->slurm_s <= 0)
        return FJ_OK;
    fj_time now = fj_time_now();
    if (!force && now - s->retention_ran < RETENTION_EVERY_S)
        return FJ_OK;
    /* Whole weeks go: a week once its end is at or before now - retention, so every row before the
     * start of the week holding now - retention. Process samples never outlive node samples. */
    int64_t keep_proc = k->process_samples_s > 0 ? k->process_samples_s : k->node_samples_s;
    int64_t h_proc = fj_pg_week_of(now - keep_proc), h_node = fj_pg_week_of(now - k->node_samples_s);
    if (k->node_samples_s > 0 && h_node > h_proc)
        h_proc = h_node;
    char bp[24], bn[24], be[24], bs[24];
    const char *proc = horizon(bp, sizeof bp, keep_proc > 0, h_proc);
    const char *node = horizon(bn, sizeof bn, k->node_samples_s > 0, h_node);
    const char *errs = horizon(be, sizeof be, k->errors_s > 0, now - k->errors_s);
    const char *slurm = horizon(bs, sizeof bs, k->slurm_s > 0, now - k->slurm_s);
    const char *drop[] = {proc, PROCESS_TABLES, node};
    const char *const marks[][2] = {{FJ_RET_PROCESS_SAMPLES, proc},
                                    {FJ_RET_NODE_SAMPLES, node},
                                    {FJ_RET_ERRORS, errs},
                                    {FJ_RET_SLURM, slurm}};
    PGresult *r = NULL;
    fj_status st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, DDL_LOCK_TIMEOUT, "retention lock timeout", err);
    /* what the job list reads from the processes of a host's last sample, before they go */
    if (st == FJ_OK && proc)
        st = fj_pg_run(s, FJ_PG_KEEP_USAGE, 1, &proc, NULL, "retention: keep job usage", err);
    if (st == FJ_OK && (proc || node))
        st = fj_pg_run(s, FJ_PG_DROP_BY, 3, drop, &r, "drop old partitions", err);
    if (st == FJ_OK && errs)
        st = fj_pg_run(s, FJ_PG_DEL_ERRORS, 1, &errs, NULL, "retention: errors", err);
    if (st == FJ_OK && slurm)
        st = fj_pg_run(s, FJ_PG_DEL_SLURM, 1, &slurm, NULL, "retention: Slurm job steps", err);
    for (size_t i = 0; st == FJ_OK && i < sizeof marks / sizeof *marks; i++)
        if (marks[i][1])
            st = fj_pg_run(s, FJ_PG_MARK, 2, marks[i], NULL, "retention: marks", err);
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
        fj_info("postgres: retention dropped %lld week partitions (process samples before %s, node samples "
                "before %s)",
                (long long)dropped, proc ? proc : "-", node ? node : "-");
        fj_pg_weeks_forget(s);
    }
    return FJ_OK;
}
