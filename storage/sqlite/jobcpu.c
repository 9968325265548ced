/* storage/sqlite/jobcpu.c — the SQLite side of the job CPU upkeep (storage/core/jobcpu.h): the reads and
 * writes fj_jcpu_update needs, the notes of the transaction's new node-samples, and the jobs'
 * CPU summaries. */
#include "storage/sqlite/int.h"

#include "alloc.h"
#include "storage/core/grow.h"
#include "storage/core/jobcpu.h"

#include <stdlib.h>
#include <string.h>

typedef fj_jcpu_note note;

/* What a node-sample's processes are read into (two at once, see fj_jcpu_io.procs). */
typedef struct slot {
    fj_jcpu_proc *v;
    size_t cap;
} slot;

struct fj_sq_jcpu {
    note *notes;
    size_t n, cap;
    slot slots[2];
    fj_jcpu_row *rows;
    size_t rows_cap;
    /* the job being worked on (its key picks its process from a job-0 range) */
    int64_t job_id, job, pid, ppid, cmd_id, cluster_id;
};

typedef struct ctx {
    fj_store *s;
    fj_err *err;
    struct fj_sq_jcpu *j;
} ctx;

static fj_status oom(fj_err *err)
{
    return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
}

static fj_status ensure(fj_store *s, fj_err *err)
{
    if (!s->jcpu && !(s->jcpu = fj_calloc(1, sizeof *s->jcpu)))
        return oom(err);
    return FJ_OK;
}

fj_status fj_sq_jcpu_note(fj_store *s, int64_t rjob, int64_t node, fj_time t, fj_err *err)
{
    if (ensure(s, err) != FJ_OK)
        return FJ_ENOMEM;
    struct fj_sq_jcpu *j = s->jcpu;
    if (!fj_grow(&j->notes, &j->cap, j->n + 1, sizeof *j->notes, 256))
        return oom(err);
    j->notes[j->n++] = (note){rjob, node, t};
    return FJ_OK;
}

void fj_sq_jcpu_moved(fj_store *s, int64_t to, int64_t from)
{
    if (!s->jcpu)
        return;
    for (size_t i = 0; i < s->jcpu->n; i++)
        if (s->jcpu->notes[i].rjob == from)
            s->jcpu->notes[i].rjob = to;
}

void fj_sq_jcpu_clear(fj_store *s)
{
    if (s->jcpu)
        s->jcpu->n = 0;
}

void fj_sq_jcpu_free(fj_store *s)
{
    if (!s->jcpu)
        return;
    fj_free(s->jcpu->notes);
    fj_free(s->jcpu->slots[0].v);
    fj_free(s->jcpu->slots[1].v);
    fj_free(s->jcpu->rows);
    fj_free(s->jcpu);
    s->jcpu = NULL;
}

/* --- fj_jcpu_io ---------------------------------------------------------------------------- */

#define STMT(var, id)                                                                                    \
    sqlite3_stmt *var = fj_sq_stmt(c->s, FJ_SQ_##id, c->err);                                            \
    if (!var)                                                                                            \
        return FJ_EIO;

static fj_status step_end(ctx *c, sqlite3_stmt *st, int rc, const char *what)
{
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? FJ_OK : fj_sq_fail(c->s, rc, what, c->err);
}

static void bind3(sqlite3_stmt *st, int64_t rjob, int64_t node, fj_time t)
{
    sqlite3_bind_int64(st, 1, rjob);
    sqlite3_bind_int64(st, 2, node);
    sqlite3_bind_int64(st, 3, t);
}

static fj_status io_rows(void *x, int64_t rjob, int64_t node, fj_time lo, fj_time hi, fj_jcpu_row **out, size_t *n)
{
    ctx *c = x;
    struct fj_sq_jcpu *j = c->j;
    STMT(st, JCPU_ROWS);
    bind3(st, rjob, node, lo);
    sqlite3_bind_int64(st, 4, hi);
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!fj_grow(&j->rows, &j->rows_cap, *n + 1, sizeof *j->rows, 64)) {
            sqlite3_reset(st);
            return oom(c->err);
        }
        j->rows[(*n)++] = (fj_jcpu_row){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                        sqlite3_column_int64(st, 2)};
    }
    *out = j->rows;
    return step_end(c, st, rc, "job CPU rows");
}

static fj_status one_time(ctx *c, sqlite3_stmt *st, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    bind3(st, rjob, node, t);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found)
        *out = sqlite3_column_int64(st, 0);
    return step_end(c, st, rc, "job CPU neighbour");
}

static fj_status io_before(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    ctx *c = x;
    STMT(st, JCPU_BEFORE);
    return one_time(c, st, rjob, node, t, out, found);
}

static fj_status io_after(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    ctx *c = x;
    STMT(st, JCPU_AFTER);
    return one_time(c, st, rjob, node, t, out, found);
}

/* Makes the job's key current in c->j (one read per job). */
static fj_status load_job(ctx *c, int64_t rjob, int64_t *sum, int64_t *n_samples, int64_t *win)
{
    struct fj_sq_jcpu *j = c->j;
    STMT(st, JCPU_JOB);
    sqlite3_bind_int64(st, 1, rjob);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        j->job_id = rjob;
        j->job = sqlite3_column_int64(st, 0);
        j->pid = sqlite3_column_int64(st, 1);
        j->ppid = sqlite3_column_int64(st, 2);
        j->cmd_id = sqlite3_column_int64(st, 3);
        j->cluster_id = sqlite3_column_int64(st, 4);
        if (sum)
            *sum = sqlite3_column_int64(st, 5), *n_samples = sqlite3_column_int64(st, 6),
            *win = sqlite3_column_int64(st, 7);
    }
    fj_status r = step_end(c, st, rc, "job CPU job");
    if (r == FJ_OK && rc != SQLITE_ROW)
        return fj_err_set(c->err, FJ_EINTERNAL, "db", "job %lld vanished", (long long)rjob);
    return r;
}

static fj_status io_procs(void *x, int which, int64_t rjob, int64_t node, fj_time t, fj_jcpu_sample *out, bool *have)
{
    ctx *c = x;
    struct fj_sq_jcpu *j = c->j;
    fj_status r;
    if (j->job_id != rjob && (r = load_job(c, rjob, NULL, NULL, NULL)) != FJ_OK)
        return r;
    STMT(pl, JCPU_PLACE);
    bind3(pl, rjob, node, t);
    int rc = sqlite3_step(pl);
    int64_t first = 0, count = 0;
    bool placed = rc == SQLITE_ROW && sqlite3_column_type(pl, 0) != SQLITE_NULL;
    if (placed)
        first = sqlite3_column_int64(pl, 0), count = sqlite3_column_int64(pl, 1);
    if ((r = step_end(c, pl, rc, "job CPU place")) != FJ_OK)
        return r;
    slot *sl = &j->slots[which];
    *out = (fj_jcpu_sample){.time = t, .procs = sl->v, .n = 0};
    *have = placed || count == 0;
    if (!placed)
        return FJ_OK;
    STMT(ps, JCPU_PROCS);
    sqlite3_bind_int64(ps, 1, first);
    sqlite3_bind_int64(ps, 2, first + count);
    size_t rows = 0;
    while ((rc = sqlite3_step(ps)) == SQLITE_ROW) {
        rows++;
        fj_jcpu_proc p = {sqlite3_column_int64(ps, 0), sqlite3_column_int64(ps, 1), sqlite3_column_int64(ps, 2),
                          sqlite3_column_int64(ps, 3), sqlite3_column_int64(ps, 4), sqlite3_column_int64(ps, 5),
                          sqlite3_column_int64(ps, 6), sqlite3_column_int64(ps, 7)};
        /* a job of one process (job 0) picks it from its sample's job-0 range by its key */
        if (j->job == 0 && (p.pid != j->pid || (j->cmd_id && (p.ppid != j->ppid || p.cmd_id != j->cmd_id))))
            continue;
        if (!fj_grow(&sl->v, &sl->cap, out->n + 1, sizeof *sl->v, 64)) {
            sqlite3_reset(ps);
            return oom(c->err);
        }
        out->procs = sl->v;
        out->procs[out->n++] = p;
    }
    if ((r = step_end(c, ps, rc, "job CPU processes")) != FJ_OK)
        return r;
    if (count > 0 && rows == 0) { /* the raw rows are gone */
        *have = false;
        return FJ_OK;
    }
    fj_jcpu_sort(out);
    STMT(pr, JCPU_PRODUCER);
    bind3(pr, j->cluster_id, node, t);
    rc = sqlite3_step(pr);
    const unsigned char *producer = rc == SQLITE_ROW ? sqlite3_column_text(pr, 0) : NULL;
    /* fjord-push sends a process's own time; Sonar (and, unknown, anything else) adds children's */
    out->children_counted = !(producer && strcmp((const char *)producer, "fjord-push") == 0);
    return step_end(c, pr, rc, "job CPU producer");
}

static fj_status io_set(void *x, int64_t rjob, int64_t node, fj_time t, int64_t cpu_m, int64_t win_m)
{
    ctx *c = x;
    STMT(st, JCPU_SET);
    bind3(st, rjob, node, t);
    sqlite3_bind_int64(st, 4, cpu_m);
    sqlite3_bind_int64(st, 5, win_m);
    return fj_sq_done(c->s, st, "job CPU figure", c->err);
}

/* --- the jobs' summaries ------------------------------------------------------------------- */

static fj_status io_job_get(void *x, int64_t rjob, int64_t *sum_m, int64_t *n_samples, int64_t *win_m)
{
    return load_job(x, rjob, sum_m, n_samples, win_m);
}

static fj_status io_job_all(void *x, int64_t rjob, int64_t *sum_m, int64_t *win_m)
{
    ctx *c = x;
    STMT(all, JCPU_ALL);
    sqlite3_bind_int64(all, 1, rjob);
    int rc = sqlite3_step(all);
    if (rc == SQLITE_ROW)
        *sum_m = sqlite3_column_int64(all, 0), *win_m = sqlite3_column_int64(all, 1);
    return step_end(c, all, rc, "job CPU totals");
}

static fj_status io_job_set(void *x, int64_t rjob, int64_t sum_m, int64_t win_m, int64_t peak_m)
{
    ctx *c = x;
    STMT(st, JCPU_JOB_SET);
    sqlite3_bind_int64(st, 1, rjob);
    sqlite3_bind_int64(st, 2, sum_m);
    sqlite3_bind_int64(st, 3, win_m);
    sqlite3_bind_int64(st, 4, peak_m);
    return fj_sq_done(c->s, st, "job CPU summary", c->err);
}

/* The backfill's pairs (job_cpu_todo), as notes that recompute a whole (job, node). */
static fj_status load_todo(ctx *c, bool *any)
{
    STMT(st, JCPU_TODO);
    int rc;
    *any = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *any = true;
        fj_status r = fj_sq_jcpu_note(c->s, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), INT64_MIN,
                                      c->err);
        if (r != FJ_OK) {
            sqlite3_reset(st);
            return r;
        }
    }
    return step_end(c, st, rc, "job CPU backfill");
}

fj_status fj_sq_jcpu_drain(fj_store *s, fj_err *err)
{
    if (ensure(s, err) != FJ_OK)
        return FJ_ENOMEM;
    ctx c = {s, err, s->jcpu};
    c.j->job_id = 0;
    bool backfill = false;
    fj_status r = load_todo(&c, &backfill);
    if (r != FJ_OK)
        return r;
    const fj_jcpu_io io = {&c,      io_rows,    io_before,  io_after, io_procs,
                           io_set,  io_job_get, io_job_all, io_job_set};
    struct fj_sq_jcpu *j = c.j;
    r = fj_jcpu_drain(&io, j->notes, j->n, err);
    j->n = 0;
    if (r == FJ_OK && backfill) {
        sqlite3_stmt *del = fj_sq_stmt(s, FJ_SQ_JCPU_TODO_DEL, err);
        r = del ? fj_sq_done(s, del, "job CPU backfill", err) : FJ_EIO;
    }
    return r;
}
