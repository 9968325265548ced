/* storage/sqlite/jobcpu.c — the SQLite side of the job CPU upkeep (storage/core/jobcpu.h): the reads and
 * writes fj_jcpu_update needs, the notes of the transaction's new node-samples, and the jobs'
 * CPU summaries.
 *
 * What the writer keeps between transactions. A running job's samples arrive in order, and each
 * needs only what the previous ones left: the latest node-sample's processes on the node, the
 * figures of the last window (FJ_JCPU_WINDOW_S), and the job's CPU summary. The handle keeps them
 * (a tail per (job, node), a summary per job), so such a node-sample's figure is computed when its
 * row is buffered (fj_sq_jcpu_add, fj_jcpu_next) and stored with it, and the job's summary is
 * written once per transaction: no read, and no second write of the row. Everything else (a
 * sample that is late or repeated, a merge, a job first seen since the handle opened or since its
 * memory was dropped) is noted and worked off by the drain from the stored rows, as before, and
 * the job's memory is dropped after it. Dropped entirely on rollback, when another connection
 * wrote (data_version), when retention deleted rows, and when it grows past its bounds. */
#include "storage/sqlite/int.h"

#include "alloc.h"
#include "storage/core/grow.h"
#include "storage/core/jobcpu.h"
#include "storage/core/try.h"

#include <stdlib.h>
#include <string.h>

typedef fj_jcpu_note note;

/* What a node-sample's processes are read into (two at once, see fj_jcpu_io.procs). */
typedef struct slot {
    fj_jcpu_proc *v;
    size_t cap;
} slot;

/* The latest stored node-sample of a (job, node) and the figures a next one's window needs. */
typedef struct tail {
    int64_t rjob, node;  /* first: the key the index (slot_of) reads */
    bool loaded;         /* filled (from the stored rows, or empty for a new job) */
    uint32_t gen;        /* the job's generation when filled: an older one is stale */
    bool prev_have;      /* the latest node-sample's raw rows exist (procs is it) */
    fj_jcpu_proc *procs; /* its processes, sorted */
    size_t n_procs, procs_cap;
    fj_jcpu_row *rows;   /* the stored node-samples a later window needs (fj_jcpu_rows_keep_from) */
    size_t n_rows, rows_cap;
    /* What the pair's job_activity row holds at least, once written through memory
     * (fj_sq_jcpu_activity_current): first_time at or before act_first, the busy times at or after
     * act_cpu_busy and act_gpu_busy. Only a bound: triggers and merges move the row further. */
    bool act_have;
    fj_time act_first, act_cpu_busy, act_gpu_busy;
} tail;

/* A job's CPU summary as stored once the transaction's pending write ran. */
typedef struct jsum {
    int64_t rjob;        /* first: the key the index (slot_of) reads */
    uint32_t gen;        /* bumped when the job's tails go stale */
    bool known;          /* sum_m and win_m are current */
    bool slow;           /* noted in this transaction: the drain reads and writes it */
    bool pend;           /* its summary awaits JCPU_JOB_SET */
    int64_t sum_m, win_m, n_samples;
} jsum;

#define TAILS_MAX 131072 /* (job, node) tails kept; past this, memory starts over between transactions */
#define JSUMS_MAX 131072

struct fj_sq_jcpu {
    note *notes;
    size_t n, cap;
    uint32_t *tail_ix;   /* open addressing over tails by (rjob, node): 1 + index, 0 empty */
    size_t tail_mask;
    tail *tails;
    size_t n_tails, tails_cap;
    uint32_t *jsum_ix;   /* the same over jsums by rjob */
    size_t jsum_mask;
    jsum *jsums;
    size_t n_jsums, jsums_cap;
    size_t *touched;     /* jsums pending or slow in this transaction */
    size_t n_touched, touched_cap;
    /* 1 + the index of the summary and of the tail fj_sq_jcpu_add worked on last (0: none), which
     * the writer asks about next (fj_sq_jcpu_activity_current): no second hash look-up */
    size_t recent_jsum, recent_tail;
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

/* --- the memory kept between transactions ---------------------------------------------------- */

static uint64_t hash2(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)b * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

/* The slot of a key in an index over entries of size `size` whose first field (nkeys 1: rjob) or
 * first two fields (nkeys 2: rjob, node) are the key: the slot holding it, or the empty one where it
 * goes. */
static uint32_t *slot_of(uint32_t *ix, size_t mask, const void *entries, size_t size, int nkeys, int64_t a,
                         int64_t b)
{
    for (size_t i = (size_t)hash2(a, b) & mask;; i = (i + 1) & mask) {
        if (!ix[i])
            return &ix[i];
        const int64_t *k = (const int64_t *)((const char *)entries + (ix[i] - 1) * size);
        if (k[0] == a && (nkeys == 1 || k[1] == b))
            return &ix[i];
    }
}

/* Makes room for entry n (0-based) in the index, at most half full; rebuilt when it grows. */
static bool index_room(uint32_t **ix, size_t *mask, const void *entries, size_t size, int nkeys, size_t n)
{
    if (*ix && 2 * (n + 1) <= *mask + 1)
        return true;
    size_t cap = *ix ? 2 * (*mask + 1) : 1024;
    while (2 * (n + 1) > cap)
        cap *= 2;
    uint32_t *nix = fj_calloc(cap, sizeof *nix);
    if (!nix)
        return false;
    for (size_t i = 0; i < n; i++) {
        const int64_t *k = (const int64_t *)((const char *)entries + i * size);
        *slot_of(nix, cap - 1, entries, size, nkeys, k[0], nkeys == 1 ? 0 : k[1]) = (uint32_t)(i + 1);
    }
    fj_free(*ix);
    *ix = nix;
    *mask = cap - 1;
    return true;
}

static jsum *jsum_find(struct fj_sq_jcpu *j, int64_t rjob)
{
    if (!j->jsum_ix)
        return NULL;
    uint32_t *at = slot_of(j->jsum_ix, j->jsum_mask, j->jsums, sizeof *j->jsums, 1, rjob, 0);
    return *at ? &j->jsums[*at - 1] : NULL;
}

/* The job's summary entry, made (unknown) when absent. */
static fj_status jsum_get(struct fj_sq_jcpu *j, int64_t rjob, jsum **out, fj_err *err)
{
    if (!index_room(&j->jsum_ix, &j->jsum_mask, j->jsums, sizeof *j->jsums, 1, j->n_jsums))
        return oom(err);
    uint32_t *at = slot_of(j->jsum_ix, j->jsum_mask, j->jsums, sizeof *j->jsums, 1, rjob, 0);
    if (*at) {
        *out = &j->jsums[*at - 1];
        return FJ_OK;
    }
    if (!fj_grow(&j->jsums, &j->jsums_cap, j->n_jsums + 1, sizeof *j->jsums, 1024))
        return oom(err);
    j->jsums[j->n_jsums] = (jsum){.rjob = rjob};
    *at = (uint32_t)++j->n_jsums;
    *out = &j->jsums[j->n_jsums - 1];
    return FJ_OK;
}

/* Lists the job among those the drain visits (once). */
static fj_status touch(struct fj_sq_jcpu *j, jsum *e, fj_err *err)
{
    if (e->pend || e->slow)
        return FJ_OK;
    if (!fj_grow(&j->touched, &j->touched_cap, j->n_touched + 1, sizeof *j->touched, 256))
        return oom(err);
    j->touched[j->n_touched++] = (size_t)(e - j->jsums);
    return FJ_OK;
}

/* The job goes through the drain in this transaction: its pending summary is written first, its
 * tails are stale, and its memory is dropped after it. */
static fj_status make_slow(struct fj_sq_jcpu *j, int64_t rjob, fj_err *err)
{
    jsum *e;
    FJ_TRY(jsum_get(j, rjob, &e, err));
    FJ_TRY(touch(j, e, err));
    e->slow = true;
    e->gen++;
    return FJ_OK;
}

static fj_status tail_get(struct fj_sq_jcpu *j, int64_t rjob, int64_t node, tail **out, fj_err *err)
{
    if (!index_room(&j->tail_ix, &j->tail_mask, j->tails, sizeof *j->tails, 2, j->n_tails))
        return oom(err);
    uint32_t *at = slot_of(j->tail_ix, j->tail_mask, j->tails, sizeof *j->tails, 2, rjob, node);
    if (*at) {
        *out = &j->tails[*at - 1];
        return FJ_OK;
    }
    if (!fj_grow(&j->tails, &j->tails_cap, j->n_tails + 1, sizeof *j->tails, 1024))
        return oom(err);
    j->tails[j->n_tails] = (tail){.rjob = rjob, .node = node};
    *at = (uint32_t)++j->n_tails;
    *out = &j->tails[j->n_tails - 1];
    return FJ_OK;
}

static void forget(struct fj_sq_jcpu *j)
{
    for (size_t i = 0; i < j->n_tails; i++) {
        fj_free(j->tails[i].procs);
        fj_free(j->tails[i].rows);
    }
    j->n_tails = 0;
    j->n_jsums = 0;
    j->n_touched = 0;
    j->recent_jsum = j->recent_tail = 0;
    fj_free(j->tail_ix);
    fj_free(j->jsum_ix);
    j->tail_ix = j->jsum_ix = NULL;
}

void fj_sq_jcpu_forget(fj_store *s)
{
    if (s->jcpu)
        forget(s->jcpu);
}

void fj_sq_jcpu_moved(fj_store *s, int64_t to, int64_t from)
{
    if (!s->jcpu)
        return;
    struct fj_sq_jcpu *j = s->jcpu;
    for (size_t i = 0; i < j->n; i++)
        if (j->notes[i].rjob == from)
            j->notes[i].rjob = to;
    /* from is deleted and its id may be handed out again: nothing of it may be written */
    jsum *e = jsum_find(j, from);
    if (e) {
        e->known = e->pend = e->slow = false;
        e->gen++;
    }
}

void fj_sq_jcpu_clear(fj_store *s)
{
    if (!s->jcpu)
        return;
    s->jcpu->n = 0;
    forget(s->jcpu); /* the transaction is rolled back: what it added to memory is not stored */
}

void fj_sq_jcpu_free(fj_store *s)
{
    if (!s->jcpu)
        return;
    forget(s->jcpu);
    fj_free(s->jcpu->tails);
    fj_free(s->jcpu->jsums);
    fj_free(s->jcpu->touched);
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
    const unsigned char *version = rc == SQLITE_ROW ? sqlite3_column_text(pr, 1) : NULL;
    out->children_counted = fj_jcpu_counts_children((const char *)producer, (const char *)version);
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

/* --- node-samples computed when they are written ----------------------------------------------- */

/* Copies n processes into the tail's own array. */
static fj_status keep_procs(tail *tl, const fj_jcpu_proc *p, size_t n, fj_err *err)
{
    if (!fj_grow(&tl->procs, &tl->procs_cap, n ? n : 1, sizeof *tl->procs, 8))
        return oom(err);
    memcpy(tl->procs, p, n * sizeof *p);
    tl->n_procs = n;
    return FJ_OK;
}

/* Fills a tail of (rjob, node) from the stored rows: the latest node-sample's processes and the
 * figures a later window needs. Only for a job with nothing of this transaction in memory or
 * buffers, so the stored rows are all there is. */
static fj_status load_tail(ctx *c, tail *tl, int64_t rjob, int64_t node, fj_err *err)
{
    fj_time last = 0, lo = 0;
    bool found, found_lo;
    tl->n_rows = tl->n_procs = 0;
    tl->prev_have = false;
    FJ_TRY(io_before(c, rjob, node, INT64_MAX, &last, &found));
    if (!found)
        return FJ_OK;
    fj_jcpu_sample prev;
    FJ_TRY(io_procs(c, 0, rjob, node, last, &prev, &tl->prev_have));
    if (tl->prev_have)
        FJ_TRY(keep_procs(tl, prev.procs, prev.n, err));
    FJ_TRY(io_before(c, rjob, node, last - FJ_JCPU_WINDOW_S, &lo, &found_lo));
    fj_jcpu_row *rows;
    size_t n;
    FJ_TRY(io_rows(c, rjob, node, found_lo ? lo : INT64_MIN, last, &rows, &n));
    if (!fj_grow(&tl->rows, &tl->rows_cap, n ? n : 1, sizeof *tl->rows, 8))
        return oom(err);
    memcpy(tl->rows, rows, n * sizeof *rows);
    tl->n_rows = n;
    return FJ_OK;
}

/* Appends the new node-sample to its tail, keeping only the rows a later window needs. */
static fj_status advance(tail *tl, const fj_jcpu_sample *cur, int64_t cpu_m, int64_t win_m, fj_err *err)
{
    if (!fj_grow(&tl->rows, &tl->rows_cap, tl->n_rows + 1, sizeof *tl->rows, 8))
        return oom(err);
    tl->rows[tl->n_rows++] = (fj_jcpu_row){cur->time, cpu_m, win_m};
    size_t from = fj_jcpu_rows_keep_from(tl->rows, tl->n_rows);
    if (from) {
        memmove(tl->rows, tl->rows + from, (tl->n_rows - from) * sizeof *tl->rows);
        tl->n_rows -= from;
    }
    FJ_TRY(keep_procs(tl, cur->procs, cur->n, err));
    tl->prev_have = true;
    return FJ_OK;
}

fj_status fj_sq_jcpu_add(fj_store *s, int64_t rjob, int64_t node, fj_time t, const fj_jcpu_sample *cur, bool created,
                         int64_t n_samples, fj_sq_jcpu_hint *hint, int64_t *cpu_m, int64_t *win_m, fj_err *err)
{
    FJ_TRY(ensure(s, err));
    struct fj_sq_jcpu *j = s->jcpu;
    ctx c = {s, err, j};
    *cpu_m = 0;
    *win_m = -1;
    jsum *e;
    if (hint && hint->jsum && hint->jsum <= j->n_jsums && j->jsums[hint->jsum - 1].rjob == rjob)
        e = &j->jsums[hint->jsum - 1];
    else
        FJ_TRY(jsum_get(j, rjob, &e, err));
    j->recent_jsum = (size_t)(e - j->jsums) + 1;
    if (hint)
        hint->jsum = (uint32_t)j->recent_jsum;
    j->recent_tail = 0;
    if (created) { /* a new id (perhaps one a merge freed): nothing stored, nothing kept is its */
        uint32_t gen = e->gen + 1;
        *e = (jsum){.rjob = rjob, .gen = gen, .known = true, .win_m = -1};
    }
    if (!cur || e->slow) {
        FJ_TRY(make_slow(j, rjob, err));
        return fj_sq_jcpu_note(s, rjob, node, t, err);
    }
    tail *tl = NULL;
    if (hint && hint->tail && hint->tail <= j->n_tails && j->tails[hint->tail - 1].rjob == rjob &&
        j->tails[hint->tail - 1].node == node)
        tl = &j->tails[hint->tail - 1];
    else
        FJ_TRY(tail_get(j, rjob, node, &tl, err));
    j->recent_tail = (size_t)(tl - j->tails) + 1;
    if (hint)
        hint->tail = (uint32_t)j->recent_tail;
    if (!tl->loaded || tl->gen != e->gen) {
        /* unknown or stale: nothing of this transaction is in memory for the job (it would be
         * slow, or the tail current), so the stored rows are the whole story */
        if (created) {
            tl->n_rows = tl->n_procs = 0;
            tl->prev_have = false;
        } else {
            c.j->job_id = 0; /* an id a merge freed may name another job now */
            FJ_TRY(load_tail(&c, tl, rjob, node, err));
        }
        tl->loaded = true;
        tl->gen = e->gen;
        tl->act_have = false;
    }
    if (tl->n_rows && cur->time <= tl->rows[tl->n_rows - 1].time) {
        /* late or repeated: the stored rows after it change too */
        FJ_TRY(make_slow(j, rjob, err));
        return fj_sq_jcpu_note(s, rjob, node, t, err);
    }
    if (!e->known) {
        int64_t n_stored;
        c.j->job_id = 0;
        FJ_TRY(load_job(&c, rjob, &e->sum_m, &n_stored, &e->win_m));
        e->known = true;
    }
    fj_jcpu_sample prev = {.time = tl->n_rows ? tl->rows[tl->n_rows - 1].time : 0, .procs = tl->procs,
                           .n = tl->n_procs};
    bool use_prev = tl->n_rows && tl->prev_have;
    FJ_TRY(fj_jcpu_next(use_prev ? &prev : NULL, tl->rows, tl->n_rows, cur, cpu_m, win_m, err));
    FJ_TRY(advance(tl, cur, *cpu_m, *win_m, err));
    FJ_TRY(touch(j, e, err));
    e->pend = true;
    e->sum_m += *cpu_m; /* as the drain's deltas add up */
    if (*win_m > e->win_m)
        e->win_m = *win_m;
    e->n_samples = n_samples;
    return FJ_OK;
}

bool fj_sq_jcpu_activity_current(fj_store *s, int64_t rjob, int64_t node, fj_time t, fj_time cpu_busy,
                                 fj_time gpu_busy)
{
    struct fj_sq_jcpu *j = s->jcpu;
    if (!j)
        return false;
    jsum *e = j->recent_jsum && j->jsums[j->recent_jsum - 1].rjob == rjob ? &j->jsums[j->recent_jsum - 1]
                                                                         : jsum_find(j, rjob);
    if (!e || e->slow || !j->tail_ix)
        return false;
    tail *tl = NULL;
    if (j->recent_tail && j->tails[j->recent_tail - 1].rjob == rjob && j->tails[j->recent_tail - 1].node == node)
        tl = &j->tails[j->recent_tail - 1];
    else {
        uint32_t *at = slot_of(j->tail_ix, j->tail_mask, j->tails, sizeof *j->tails, 2, rjob, node);
        tl = *at ? &j->tails[*at - 1] : NULL;
    }
    if (!tl || !tl->loaded || tl->gen != e->gen)
        return false; /* the pair's memory is not current: write the row */
    if (tl->act_have && tl->act_first <= t && tl->act_cpu_busy >= cpu_busy && tl->act_gpu_busy >= gpu_busy)
        return true;
    if (!tl->act_have || t < tl->act_first)
        tl->act_first = t;
    if (!tl->act_have || cpu_busy > tl->act_cpu_busy)
        tl->act_cpu_busy = cpu_busy;
    if (!tl->act_have || gpu_busy > tl->act_gpu_busy)
        tl->act_gpu_busy = gpu_busy;
    tl->act_have = true;
    return false;
}

bool fj_sq_jcpu_take(fj_store *s, int64_t rjob, int64_t *sum_m, int64_t *peak_m, int64_t *win_m)
{
    jsum *e = s->jcpu ? jsum_find(s->jcpu, rjob) : NULL;
    if (!e || !e->pend)
        return false;
    e->pend = false;
    *sum_m = e->sum_m;
    *win_m = e->win_m;
    *peak_m = fj_jcpu_peak_m(e->win_m, e->sum_m, e->n_samples);
    return true;
}

/* Writes the summaries of jobs whose node-samples were computed when written (before the drain
 * reads any summary). */
static fj_status write_pending(ctx *c)
{
    struct fj_sq_jcpu *j = c->j;
    for (size_t i = 0; i < j->n_touched; i++) {
        jsum *e = &j->jsums[j->touched[i]];
        if (!e->pend)
            continue;
        FJ_TRY(io_job_set(c, e->rjob, e->sum_m, e->win_m, fj_jcpu_peak_m(e->win_m, e->sum_m, e->n_samples)));
        e->pend = false;
    }
    return FJ_OK;
}

/* After the drain: what it changed is stored, not in memory. */
static void settle_slow(struct fj_sq_jcpu *j)
{
    for (size_t i = 0; i < j->n_touched; i++) {
        jsum *e = &j->jsums[j->touched[i]];
        if (e->slow) {
            e->slow = e->known = false;
            e->gen++;
        }
    }
    j->n_touched = 0;
}

/* Between transactions: memory past its bounds starts over. */
static void bound(struct fj_sq_jcpu *j)
{
    if (j->n_tails > TAILS_MAX || j->n_jsums > JSUMS_MAX)
        forget(j);
}

fj_status fj_sq_jcpu_drain(fj_store *s, fj_err *err)
{
    if (ensure(s, err) != FJ_OK)
        return FJ_ENOMEM;
    ctx c = {s, err, s->jcpu};
    c.j->job_id = 0;
    fj_status pr = write_pending(&c);
    if (pr != FJ_OK)
        return pr;
    bool backfill = false;
    fj_status r = load_todo(&c, &backfill);
    if (r != FJ_OK)
        return r;
    const fj_jcpu_io io = {&c,      io_rows,    io_before,  io_after, io_procs,
                           io_set,  io_job_get, io_job_all, io_job_set};
    struct fj_sq_jcpu *j = c.j;
    r = fj_jcpu_drain(&io, j->notes, j->n, err);
    j->n = 0;
    settle_slow(j);
    bound(j);
    if (r == FJ_OK && backfill) {
        sqlite3_stmt *del = fj_sq_stmt(s, FJ_SQ_JCPU_TODO_DEL, err);
        r = del ? fj_sq_done(s, del, "job CPU backfill", err) : FJ_EIO;
    }
    return r;
}
