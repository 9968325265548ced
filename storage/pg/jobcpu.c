/* storage/pg/jobcpu.c — the PostgreSQL side of the job CPU upkeep (storage/core/jobcpu.h): the reads and
 * writes fj_jcpu_update needs, on the writer's connection inside its transaction. */
#include "storage/pg/int.h"

#include "alloc.h"
#include "storage/core/grow.h"
#include "storage/core/jobcpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    fj_jcpu_proc *v;
    size_t cap;
} slot;

typedef struct ctx {
    fj_store *s;
    fj_err *err;
    slot slots[2];
    fj_jcpu_row *rows;
    size_t rows_cap;
    /* the job being worked on: its key picks its processes */
    int64_t job_id, job, epoch, pid, ppid, cmd_id, cluster_id;
} ctx;

/* Up to five integer parameters as text. */
typedef struct args {
    char num[5][24];
    const char *v[5];
} args;

static const char *const *ints(args *a, int n, const int64_t *v)
{
    for (int i = 0; i < n; i++) {
        snprintf(a->num[i], sizeof a->num[i], "%" PRId64, v[i]);
        a->v[i] = a->num[i];
    }
    return a->v;
}

static fj_status run(ctx *c, fj_pg_stmt_id id, int n, const int64_t *v, PGresult **r, const char *what)
{
    args a;
    return fj_pg_run(c->s, id, n, ints(&a, n, v), r, what, c->err);
}

static fj_status oom(ctx *c)
{
    return fj_err_set(c->err, FJ_ENOMEM, "db", "out of memory");
}

static fj_status io_rows(void *x, int64_t rjob, int64_t node, fj_time lo, fj_time hi, fj_jcpu_row **out, size_t *n)
{
    ctx *c = x;
    PGresult *r;
    fj_status st = run(c, FJ_PG_JCPU_ROWS, 4, (int64_t[]){rjob, node, lo, hi}, &r, "job CPU rows");
    if (st != FJ_OK)
        return st;
    size_t rows = (size_t)PQntuples(r);
    if (!fj_grow(&c->rows, &c->rows_cap, rows, sizeof *c->rows, 64)) {
        PQclear(r);
        return oom(c);
    }
    for (size_t i = 0; i < rows; i++)
        c->rows[i] = (fj_jcpu_row){fj_pg_int(r, (int)i, 0), fj_pg_int(r, (int)i, 1), fj_pg_int(r, (int)i, 2)};
    PQclear(r);
    *out = c->rows;
    *n = rows;
    return FJ_OK;
}

static fj_status one_time(ctx *c, fj_pg_stmt_id id, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    PGresult *r;
    fj_status st = run(c, id, 3, (int64_t[]){rjob, node, t}, &r, "job CPU neighbour");
    if (st != FJ_OK)
        return st;
    *found = PQntuples(r) > 0;
    if (*found)
        *out = fj_pg_int(r, 0, 0);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_before(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    return one_time(x, FJ_PG_JCPU_BEFORE, rjob, node, t, out, found);
}

static fj_status io_after(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    return one_time(x, FJ_PG_JCPU_AFTER, rjob, node, t, out, found);
}

static fj_status load_job(ctx *c, int64_t rjob, int64_t *sum, int64_t *n_samples, int64_t *win)
{
    PGresult *r;
    fj_status st = run(c, FJ_PG_JCPU_JOB, 1, &rjob, &r, "job CPU job");
    if (st != FJ_OK)
        return st;
    if (PQntuples(r) < 1) {
        PQclear(r);
        return fj_err_set(c->err, FJ_EINTERNAL, "db", "job %lld vanished", (long long)rjob);
    }
    c->job_id = rjob;
    c->job = fj_pg_int(r, 0, 0);
    c->epoch = fj_pg_int(r, 0, 1);
    c->pid = fj_pg_int(r, 0, 2);
    c->ppid = fj_pg_int(r, 0, 3);
    c->cmd_id = fj_pg_int(r, 0, 4);
    c->cluster_id = fj_pg_int(r, 0, 5);
    if (sum) {
        *sum = fj_pg_int(r, 0, 6);
        *n_samples = fj_pg_int(r, 0, 7);
        *win = fj_pg_int(r, 0, 8);
    }
    PQclear(r);
    return FJ_OK;
}

static fj_status io_procs(void *x, int which, int64_t rjob, int64_t node, fj_time t, fj_jcpu_sample *out, bool *have)
{
    ctx *c = x;
    fj_status st;
    if (c->job_id != rjob && (st = load_job(c, rjob, NULL, NULL, NULL)) != FJ_OK)
        return st;
    PGresult *r;
    if ((st = run(c, FJ_PG_JCPU_PROCS, 4, (int64_t[]){node, t, c->job, c->epoch}, &r, "job CPU processes")) != FJ_OK)
        return st;
    slot *sl = &c->slots[which];
    size_t rows = (size_t)PQntuples(r);
    if (!fj_grow(&sl->v, &sl->cap, rows, sizeof *sl->v, 64)) {
        PQclear(r);
        return oom(c);
    }
    *out = (fj_jcpu_sample){.time = t, .procs = sl->v, .n = 0};
    for (size_t i = 0; i < rows; i++) {
        int k = (int)i;
        fj_jcpu_proc p = {fj_pg_int(r, k, 0), fj_pg_int(r, k, 1), fj_pg_int(r, k, 2), fj_pg_int(r, k, 3),
                          fj_pg_int(r, k, 4), fj_pg_int(r, k, 5), fj_pg_int(r, k, 6), fj_pg_int(r, k, 7)};
        /* a job of one process (job 0) picks it from its sample's job 0 by its key */
        if (c->job == 0 && (p.pid != c->pid || (c->cmd_id && (p.ppid != c->ppid || p.cmd_id != c->cmd_id))))
            continue;
        out->procs[out->n++] = p;
    }
    PQclear(r);
    /* no process rows: they went with their week's partition (retention) */
    *have = rows > 0;
    if (!*have)
        return FJ_OK;
    fj_jcpu_sort(out);
    if ((st = run(c, FJ_PG_JCPU_PRODUCER, 3, (int64_t[]){c->cluster_id, node, t}, &r, "job CPU producer")) != FJ_OK)
        return st;
    /* fjord-push sends a process's own time; Sonar (and, unknown, anything else) adds children's */
    out->children_counted = !(PQntuples(r) > 0 && strcmp(PQgetvalue(r, 0, 0), "fjord-push") == 0);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_set(void *x, int64_t rjob, int64_t node, fj_time t, int64_t cpu_m, int64_t win_m)
{
    return run(x, FJ_PG_JCPU_SET, 5, (int64_t[]){rjob, node, t, cpu_m, win_m}, NULL, "job CPU figure");
}

static fj_status io_job_get(void *x, int64_t rjob, int64_t *sum_m, int64_t *n_samples, int64_t *win_m)
{
    return load_job(x, rjob, sum_m, n_samples, win_m);
}

static fj_status io_job_all(void *x, int64_t rjob, int64_t *sum_m, int64_t *win_m)
{
    ctx *c = x;
    PGresult *r;
    fj_status st = run(c, FJ_PG_JCPU_ALL, 1, &rjob, &r, "job CPU totals");
    if (st != FJ_OK)
        return st;
    *sum_m = fj_pg_int(r, 0, 0);
    *win_m = fj_pg_int(r, 0, 1);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_job_set(void *x, int64_t rjob, int64_t sum_m, int64_t win_m, int64_t peak_m)
{
    return run(x, FJ_PG_JCPU_JOB_SET, 4, (int64_t[]){rjob, sum_m, win_m, peak_m}, NULL, "job CPU summary");
}

fj_status fj_pg_jcpu_drain(fj_store *s, const int64_t *rjob, const int64_t *node, const int64_t *t, size_t n,
                           fj_err *err)
{
    ctx c = {.s = s, .err = err};
    PGresult *todo;
    fj_status st = fj_pg_run(s, FJ_PG_JCPU_TODO, 0, NULL, &todo, "job CPU backfill", err);
    if (st != FJ_OK)
        return st;
    size_t n_todo = (size_t)PQntuples(todo);
    fj_jcpu_note *notes = fj_malloc((n + n_todo + 1) * sizeof *notes);
    if (!notes) {
        PQclear(todo);
        return oom(&c);
    }
    for (size_t i = 0; i < n; i++)
        notes[i] = (fj_jcpu_note){rjob[i], node[i], t[i]};
    for (size_t i = 0; i < n_todo; i++)
        notes[n + i] = (fj_jcpu_note){fj_pg_int(todo, (int)i, 0), fj_pg_int(todo, (int)i, 1), INT64_MIN};
    PQclear(todo);
    const fj_jcpu_io io = {&c, io_rows, io_before, io_after, io_procs, io_set, io_job_get, io_job_all, io_job_set};
    st = fj_jcpu_drain(&io, notes, n + n_todo, err);
    if (st == FJ_OK && n_todo)
        st = fj_pg_run(s, FJ_PG_JCPU_TODO_DEL, 0, NULL, NULL, "job CPU backfill", err);
    fj_free(notes);
    fj_free(c.slots[0].v);
    fj_free(c.slots[1].v);
    fj_free(c.rows);
    return st;
}
