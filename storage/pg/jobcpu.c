/* storage/pg/jobcpu.c — the PostgreSQL side of the job CPU upkeep (storage/core/jobcpu.h): the reads and
 * writes fj_jcpu_update needs, on the writer's connection inside its transaction.
 *
 * fj_jcpu_update asks one question at a time (a neighbour's time, a node-sample's processes, a
 * job's summary), some ten per new node-sample: a round trip each would be hundreds per envelope.
 * So before the drain, what a group's notes will ask is read in four statements (the jobs, the
 * job_samples rows around each (job, node)'s new node-samples, the processes of those node-samples,
 * their producers) into a cache that answers exactly what the database would; the figures it
 * writes are applied to the cache and sent in two batched UPDATEs. A question the cache cannot
 * answer (a backfill, a merge's totals, late data far from the rest) sends the pending writes,
 * then asks the database.
 *
 * The group's new job_samples rows and its jobs are not in the tables yet (fj_pg_jcpu_pending):
 * the cache holds them among the stored rows and jobs, and their figures go into what the writer
 * then writes, so a new row is written once and a job once a group. Before the database is asked
 * anything, they are written (the writer's callback) and from then on they are stored rows and
 * jobs like the others. */
#include "storage/pg/int.h"

#include "alloc.h"
#include "storage/core/cmp.h"
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

/* A job as read before the drain (JCPU_JOBS_MANY's columns), or as the group will write it. */
typedef struct cjob {
    int64_t id, job, epoch, pid, ppid, cmd_id, cluster_id, sum_m, n_samples, win_m;
    size_t pending; /* its entry in the pending jobs, or SIZE_MAX */
    bool fresh;     /* nothing of it stored (fj_pg_jcpu_job.fresh) */
} cjob;

/* The job_samples rows of (rjob, node) with from <= time <= to: all of them (INT64_MIN, INT64_MAX:
 * unbounded), rows[first .. first + n) of the cache, ascending by time. */
typedef struct ckey {
    int64_t rjob, node;
    fj_time from, to;
    size_t first, n;
    bool asked; /* its stored rows were read; not for a fresh job's, which has none */
} ckey;

/* The process rows of a sample job (node, time, job, epoch): procs[first .. first + n). */
typedef struct cprocs {
    int64_t node, time, job, epoch, cluster_id;
    size_t first, n;
    bool children_counted;
    const fj_pg_jcpu_sjob *mem; /* a new sample job of the group, taken from memory; NULL: read */
} cprocs;

/* A figure written: rows of JCPU_SET_MANY (one per row) or JCPU_JOB_SET_MANY (one per job). */
typedef struct pend {
    int64_t a, b, c, d, e;
} pend;

typedef struct cache {
    cjob *jobs;
    size_t n_jobs;
    ckey *keys;
    size_t n_keys;
    fj_jcpu_row *rows;
    size_t *row_pend;  /* per row: its entry in sets, or SIZE_MAX */
    size_t *row_added; /* per row: its entry in the added rows (not inserted yet), or SIZE_MAX */
    size_t n_rows;
    cprocs *sjobs;
    size_t n_sjobs;
    fj_jcpu_proc *procs;
    size_t n_procs;
    pend *sets, *job_sets;
    size_t n_sets, cap_sets, n_job_sets, cap_job_sets;
} cache;

typedef struct ctx {
    fj_store *s;
    fj_err *err;
    slot slots[2];
    fj_jcpu_row *rows;
    size_t rows_cap;
    /* the job being worked on: its key picks its processes */
    int64_t job_id, job, epoch, pid, ppid, cmd_id, cluster_id;
    cache c;
    /* the group's rows and jobs not written yet (pend->inserted: they are now) */
    fj_pg_jcpu_pending *pend;
} ctx;

static bool pending(const ctx *c)
{
    return c->pend && !c->pend->inserted;
}

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

/* --- the cache ------------------------------------------------------------------------------- */

static const cjob *find_job(const cache *k, int64_t id)
{
    size_t lo = 0, hi = k->n_jobs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->jobs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->n_jobs && k->jobs[lo].id == id ? &k->jobs[lo] : NULL;
}

static int key_cmp(const void *a, const void *b)
{
    const ckey *x = a, *y = b;
    int c = fj_cmp_i64(x->rjob, y->rjob);
    return c ? c : fj_cmp_i64(x->node, y->node);
}

static ckey *find_key(const cache *k, int64_t rjob, int64_t node)
{
    ckey want = {.rjob = rjob, .node = node};
    return k->n_keys ? bsearch(&want, k->keys, k->n_keys, sizeof want, key_cmp) : NULL;
}

static int sjob_cmp(const void *a, const void *b)
{
    const cprocs *x = a, *y = b;
    int c = fj_cmp_i64(x->node, y->node);
    if (!c)
        c = fj_cmp_i64(x->time, y->time);
    if (!c)
        c = fj_cmp_i64(x->job, y->job);
    return c ? c : fj_cmp_i64(x->epoch, y->epoch);
}

static const cprocs *find_sjob(const cache *k, int64_t node, fj_time t, int64_t job, int64_t epoch)
{
    cprocs want = {.node = node, .time = t, .job = job, .epoch = epoch};
    return k->n_sjobs ? bsearch(&want, k->sjobs, k->n_sjobs, sizeof want, sjob_cmp) : NULL;
}

/* The cached row of (rjob, node) at time t, or SIZE_MAX. */
static size_t find_row(const cache *k, const ckey *key, fj_time t)
{
    size_t lo = key->first, hi = key->first + key->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->rows[mid].time < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < key->first + key->n && k->rows[lo].time == t ? lo : SIZE_MAX;
}

static void cache_free(cache *k)
{
    fj_free(k->jobs);
    fj_free(k->keys);
    fj_free(k->rows);
    fj_free(k->row_pend);
    fj_free(k->row_added);
    fj_free(k->sjobs);
    fj_free(k->procs);
    fj_free(k->sets);
    fj_free(k->job_sets);
    memset(k, 0, sizeof *k);
}

static fj_status push_pend(ctx *c, pend **v, size_t *n, size_t *cap, pend p)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        pend *nv = fj_realloc(*v, nc * sizeof *nv);
        if (!nv)
            return oom(c);
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = p;
    return FJ_OK;
}

/* Runs a statement over one array parameter per column of t's single row set. */
static fj_status run_cols(ctx *c, fj_pg_stmt_id id, fj_pg_cols *t, PGresult **r, const char *what)
{
    const char *vals[FJ_PG_MAXCOLS];
    fj_status st = fj_pg_cols_finish(t, vals);
    if (st != FJ_OK)
        return fj_err_set(c->err, st, "db", "%s: out of memory", what);
    return fj_pg_run(c->s, id, t->ncols, vals, r, what, c->err);
}

/* Sends the figures written so far. */
static fj_status send_pending(ctx *c)
{
    cache *k = &c->c;
    fj_status st = FJ_OK;
    fj_pg_cols t;
    if (k->n_sets) {
        fj_pg_cols_init(&t, 5);
        for (size_t i = 0; i < k->n_sets; i++) {
            const pend *p = &k->sets[i];
            fj_pg_i64(&t, 0, p->a), fj_pg_i64(&t, 1, p->b), fj_pg_i64(&t, 2, p->c);
            fj_pg_i64(&t, 3, p->d), fj_pg_i64(&t, 4, p->e);
            fj_pg_row(&t, 0);
        }
        st = run_cols(c, FJ_PG_JCPU_SET_MANY, &t, NULL, "job CPU figures");
        fj_pg_cols_free(&t);
        k->n_sets = 0;
        for (size_t i = 0; i < k->n_rows; i++)
            k->row_pend[i] = SIZE_MAX;
    }
    if (st == FJ_OK && k->n_job_sets) {
        fj_pg_cols_init(&t, 4);
        for (size_t i = 0; i < k->n_job_sets; i++) {
            const pend *p = &k->job_sets[i];
            fj_pg_i64(&t, 0, p->a), fj_pg_i64(&t, 1, p->b), fj_pg_i64(&t, 2, p->c), fj_pg_i64(&t, 3, p->d);
            fj_pg_row(&t, 0);
        }
        st = run_cols(c, FJ_PG_JCPU_JOB_SET_MANY, &t, NULL, "job CPU summaries");
        fj_pg_cols_free(&t);
        k->n_job_sets = 0;
    }
    return st;
}

/* Before the database answers a question or takes a figure: the group's new rows go in, then the
 * figures written so far. */
static fj_status flush(ctx *c)
{
    if (pending(c)) {
        fj_status st = c->pend->insert(c->pend->arg, c->err);
        if (st != FJ_OK)
            return st;
        c->pend->inserted = true;
    }
    return send_pending(c);
}

/* A (job, node) whose new node-samples lie further apart than this is asked row by row: its rows
 * in between could be many. */
#define SPAN_MAX (86400 * 2)

static int cjob_cmp(const void *a, const void *b)
{
    return fj_cmp_i64(((const cjob *)a)->id, ((const cjob *)b)->id);
}

/* The notes' jobs: the group's pending ones as it will write them, the others read. */
static fj_status load_jobs(ctx *c, const fj_jcpu_note *notes, size_t n)
{
    cache *k = &c->c;
    const fj_pg_jcpu_job *pj = c->pend ? c->pend->jobs : NULL;
    size_t n_pj = pj ? c->pend->n_jobs : 0;
    int64_t *ids = fj_malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return oom(c);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        ids[m++] = notes[i].rjob;
    qsort(ids, m, sizeof *ids, fj_cmp_i64_elems);
    fj_pg_cols t;
    fj_pg_cols_init(&t, 1);
    size_t p = 0, asked = 0;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && ids[i] == ids[i - 1])
            continue;
        while (p < n_pj && pj[p].id < ids[i])
            p++;
        if (p < n_pj && pj[p].id == ids[i])
            continue;
        fj_pg_i64(&t, 0, ids[i]);
        asked++;
    }
    fj_free(ids);
    fj_pg_row(&t, 0);
    PGresult *r = NULL;
    fj_status st = asked ? run_cols(c, FJ_PG_JCPU_JOBS_MANY, &t, &r, "job CPU jobs") : FJ_OK;
    fj_pg_cols_free(&t);
    if (st != FJ_OK)
        return st;
    size_t rows = r ? (size_t)PQntuples(r) : 0;
    k->jobs = fj_malloc((rows + n_pj ? rows + n_pj : 1) * sizeof *k->jobs);
    if (!k->jobs) {
        PQclear(r);
        return oom(c);
    }
    for (size_t i = 0; i < rows; i++) {
        int64_t v[10];
        for (int col = 0; col < 10; col++)
            v[col] = fj_pg_int(r, (int)i, col);
        k->jobs[i] = (cjob){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], SIZE_MAX, false};
    }
    PQclear(r);
    for (size_t i = 0; i < n_pj; i++)
        k->jobs[rows + i] = (cjob){pj[i].id, pj[i].job, pj[i].epoch, pj[i].pid, pj[i].ppid, pj[i].cmd_id,
                                   pj[i].cluster_id, pj[i].sum_m, pj[i].n_samples, pj[i].win_m, i, pj[i].fresh};
    k->n_jobs = rows + n_pj;
    qsort(k->jobs, k->n_jobs, sizeof *k->jobs, cjob_cmp);
    return FJ_OK;
}

/* The cache's rows: each key's stored rows (JCPU_ROWS_MANY's result r, rows rows, by the ordinal
 * among the asked keys and time; a fresh job's key was not asked) merged by time with its added
 * rows. Of rows with one time the stored one stands, and of added ones the first to arrive: the
 * others are what INSERT ... ON CONFLICT DO NOTHING will drop. A key without stored rows has
 * none at all (the query returns every row between its neighbours, and the neighbours
 * themselves), so the cache holds all of its rows. Keys left with no rows stay out of the
 * cache. */
static fj_status merge_rows(ctx *c, PGresult *r, size_t rows, size_t nk)
{
    cache *k = &c->c;
    fj_pg_jcpu_added *added = c->pend ? c->pend->added : NULL;
    size_t na = c->pend ? c->pend->n_added : 0, cap = rows + na ? rows + na : 1;
    fj_sort_key *ar = fj_malloc((na ? na : 1) * sizeof *ar); /* (rjob, node, time), arrival */
    k->rows = fj_malloc(cap * sizeof *k->rows);
    k->row_pend = fj_malloc(cap * sizeof *k->row_pend);
    k->row_added = fj_malloc(cap * sizeof *k->row_added);
    if (!ar || !k->rows || !k->row_pend || !k->row_added) {
        fj_free(ar);
        return oom(c);
    }
    for (size_t i = 0; i < na; i++)
        ar[i] = (fj_sort_key){{added[i].rjob, added[i].node, added[i].t, 0}, i};
    qsort(ar, na, sizeof *ar, fj_sort_key_cmp);
    size_t kept = 0, out = 0;
    for (size_t i = 0, a = 0, o = 0, asked = 0; o < nk; o++) {
        ckey key = k->keys[o];
        key.first = out;
        size_t d = i;
        if (key.asked) {
            asked++;
            while (i < rows && (size_t)fj_pg_int(r, (int)i, 0) == asked)
                i++;
        }
        key.from = INT64_MIN, key.to = INT64_MAX;
        if (i > d) {
            if (!PQgetisnull(r, (int)d, 1))
                key.from = fj_pg_int(r, (int)d, 1);
            if (!PQgetisnull(r, (int)d, 2))
                key.to = fj_pg_int(r, (int)d, 2) + FJ_JCPU_WINDOW_S;
        }
        const fj_sort_key kk = {{key.rjob, key.node, 0, 0}, 0};
        while (a < na && fj_sort_key_fields(&ar[a], &kk, 2) < 0)
            a++;
        size_t q = a;
        while (a < na && fj_sort_key_fields(&ar[a], &kk, 2) == 0)
            a++;
        while (d < i || q < a) {
            bool stored = q == a || (d < i && fj_pg_int(r, (int)d, 3) <= ar[q].k[2]);
            fj_time t = stored ? fj_pg_int(r, (int)d, 3) : ar[q].k[2];
            if (stored) {
                k->rows[out] = (fj_jcpu_row){t, fj_pg_int(r, (int)d, 4), fj_pg_int(r, (int)d, 5)};
                k->row_added[out] = SIZE_MAX;
                d++;
            } else {
                const fj_pg_jcpu_added *ad = &added[ar[q].at];
                k->rows[out] = (fj_jcpu_row){t, ad->cpu_m, ad->win_m};
                k->row_added[out] = ar[q].at;
            }
            while (q < a && ar[q].k[2] == t)
                q++;
            k->row_pend[out++] = SIZE_MAX;
        }
        key.n = out - key.first;
        if (key.n)
            k->keys[kept++] = key;
    }
    fj_free(ar);
    k->n_keys = kept;
    k->n_rows = out;
    return FJ_OK;
}

/* The job_samples rows around each (job, node)'s new node-samples (notes sorted, finite times). */
static fj_status load_rows(ctx *c, const fj_jcpu_note *notes, size_t n)
{
    cache *k = &c->c;
    k->keys = fj_malloc((n ? n : 1) * sizeof *k->keys);
    if (!k->keys)
        return oom(c);
    fj_pg_cols t;
    fj_pg_cols_init(&t, 4);
    size_t nk = 0, asked = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && notes[j].rjob == notes[i].rjob && notes[j].node == notes[i].node)
            j++;
        const fj_jcpu_note *lo = &notes[i], *hi = &notes[j - 1]; /* sorted: the smallest time first */
        const cjob *job = lo->node >= 0 && lo->t != INT64_MIN && hi->t != INT64_MAX && hi->t - lo->t <= SPAN_MAX
                              ? find_job(k, lo->rjob)
                              : NULL;
        if (job) {
            k->keys[nk++] = (ckey){lo->rjob, lo->node, 0, 0, 0, 0, !job->fresh};
            if (!job->fresh) {
                fj_pg_i64(&t, 0, lo->rjob), fj_pg_i64(&t, 1, lo->node), fj_pg_i64(&t, 2, lo->t);
                fj_pg_i64(&t, 3, hi->t);
                asked++;
            }
        }
        i = j;
    }
    fj_pg_row(&t, 0);
    fj_status st = FJ_OK;
    PGresult *r = NULL;
    if (asked)
        st = run_cols(c, FJ_PG_JCPU_ROWS_MANY, &t, &r, "job CPU rows");
    fj_pg_cols_free(&t);
    if (st != FJ_OK || !nk)
        return st;
    size_t rows = r ? (size_t)PQntuples(r) : 0;
    st = merge_rows(c, r, rows, nk);
    PQclear(r);
    return st;
}

static fj_status add_sjob(ctx *c, size_t *cap, const cjob *j, int64_t node, fj_time t)
{
    cache *k = &c->c;
    if (k->n_sjobs == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        cprocs *v = fj_realloc(k->sjobs, nc * sizeof *v);
        if (!v)
            return oom(c);
        k->sjobs = v;
        *cap = nc;
    }
    k->sjobs[k->n_sjobs++] = (cprocs){node, t, j->job, j->epoch, j->cluster_id, 0, 0, true, NULL};
    return FJ_OK;
}

/* The group's new sample job p, if the writer handed it over (fj_pg_jcpu_pending's sjobs). */
static const fj_pg_jcpu_sjob *find_mem_sjob(const ctx *c, const cprocs *p)
{
    if (!c->pend || !c->pend->n_sjobs)
        return NULL;
    const fj_pg_jcpu_sjob *v = c->pend->sjobs;
    size_t lo = 0, hi = c->pend->n_sjobs;
    const fj_sort_key want = {{p->node, p->time, p->job, p->epoch}, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fj_sort_key at = {{v[mid].node, v[mid].time, v[mid].job, v[mid].epoch}, 0};
        if (fj_sort_key_fields(&at, &want, 4) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->pend->n_sjobs && v[lo].node == p->node && v[lo].time == p->time && v[lo].job == p->job &&
        v[lo].epoch == p->epoch)
        return &v[lo];
    return NULL;
}

/* The processes (and producers) of the node-samples the notes will read: each new one and its
 * neighbours before and after. */
static fj_status load_procs(ctx *c, const fj_jcpu_note *notes, size_t n)
{
    cache *k = &c->c;
    size_t cap = 0;
    fj_status st = FJ_OK;
    for (size_t i = 0; i < n && st == FJ_OK; i++) {
        const fj_jcpu_note *nt = &notes[i];
        const ckey *key = nt->node >= 0 ? find_key(k, nt->rjob, nt->node) : NULL;
        const cjob *j = find_job(k, nt->rjob);
        if (!key || !j || nt->t == INT64_MIN || nt->t == INT64_MAX)
            continue;
        size_t at = find_row(k, key, nt->t);
        if (at == SIZE_MAX)
            continue;
        st = add_sjob(c, &cap, j, nt->node, nt->t);
        if (st == FJ_OK && at > key->first)
            st = add_sjob(c, &cap, j, nt->node, k->rows[at - 1].time);
        if (st == FJ_OK && at + 1 < key->first + key->n)
            st = add_sjob(c, &cap, j, nt->node, k->rows[at + 1].time);
    }
    if (st != FJ_OK || !k->n_sjobs)
        return st;
    qsort(k->sjobs, k->n_sjobs, sizeof *k->sjobs, sjob_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k->n_sjobs; i++)
        if (m == 0 || sjob_cmp(&k->sjobs[m - 1], &k->sjobs[i]) != 0)
            k->sjobs[m++] = k->sjobs[i];
    k->n_sjobs = m;

    /* the group's new sample jobs from memory */
    size_t n_mem = 0;
    for (size_t i = 0; i < m; i++) {
        cprocs *p = &k->sjobs[i];
        p->mem = find_mem_sjob(c, p);
        if (p->mem) {
            p->children_counted = p->mem->children_counted;
            n_mem += p->mem->n;
        }
    }

    /* the others: every process of each of their node-samples once (its arrays decompressed
     * once), handed to the sample jobs asked for; rows of one sample job come together */
    fj_pg_cols t;
    fj_pg_cols_init(&t, 2);
    int64_t *ns_node = fj_malloc(m * sizeof *ns_node), *ns_time = fj_malloc(m * sizeof *ns_time);
    size_t n_ns = 0;
    if (!ns_node || !ns_time) {
        fj_free(ns_node), fj_free(ns_time), fj_pg_cols_free(&t);
        return oom(c);
    }
    for (size_t i = 0; i < m; i++) {
        const cprocs *p = &k->sjobs[i];
        if (p->mem || (n_ns && ns_node[n_ns - 1] == p->node && ns_time[n_ns - 1] == p->time))
            continue;
        ns_node[n_ns] = p->node, ns_time[n_ns++] = p->time;
        fj_pg_i64(&t, 0, p->node), fj_pg_i64(&t, 1, p->time);
    }
    fj_pg_row(&t, 0);
    PGresult *r = NULL;
    st = n_ns ? run_cols(c, FJ_PG_JCPU_PROCS_MANY, &t, &r, "job CPU processes") : FJ_OK;
    fj_pg_cols_free(&t);
    if (st != FJ_OK) {
        fj_free(ns_node), fj_free(ns_time);
        return st;
    }
    size_t rows = r ? (size_t)PQntuples(r) : 0;
    k->procs = fj_malloc((rows + n_mem ? rows + n_mem : 1) * sizeof *k->procs);
    if (!k->procs) {
        fj_free(ns_node), fj_free(ns_time);
        PQclear(r);
        return oom(c);
    }
    cprocs *cur = NULL;
    int64_t cur_o = 0, cur_job = 0, cur_epoch = 0;
    for (size_t i = 0; i < rows; i++) {
        int64_t v[11];
        for (int col = 0; col < 11; col++)
            v[col] = fj_pg_int(r, (int)i, col);
        if (i == 0 || v[0] != cur_o || v[1] != cur_job || v[2] != cur_epoch) {
            cur_o = v[0], cur_job = v[1], cur_epoch = v[2];
            cur = cur_o >= 1 && (size_t)cur_o <= n_ns
                      ? (cprocs *)find_sjob(k, ns_node[cur_o - 1], ns_time[cur_o - 1], cur_job, cur_epoch)
                      : NULL;
            if (cur && cur->mem) /* a node-sample with stored and new sample jobs */
                cur = NULL;
            if (cur)
                cur->first = k->n_procs, cur->n = 0;
        }
        if (!cur)
            continue;
        k->procs[k->n_procs++] = (fj_jcpu_proc){v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]};
        cur->n++;
    }
    fj_free(ns_node), fj_free(ns_time);
    PQclear(r);
    for (size_t i = 0; i < m; i++) {
        cprocs *p = &k->sjobs[i];
        if (!p->mem)
            continue;
        p->first = k->n_procs, p->n = p->mem->n;
        memcpy(k->procs + k->n_procs, c->pend->procs + p->mem->first, p->n * sizeof *k->procs);
        k->n_procs += p->n;
    }

    /* their producers (the new ones' came with them) */
    size_t *asked = fj_malloc((m ? m : 1) * sizeof *asked), n_asked = 0;
    if (!asked)
        return oom(c);
    fj_pg_cols_init(&t, 3);
    for (size_t i = 0; i < m; i++) {
        const cprocs *p = &k->sjobs[i];
        if (p->mem)
            continue;
        asked[n_asked++] = i;
        fj_pg_i64(&t, 0, p->cluster_id), fj_pg_i64(&t, 1, p->node), fj_pg_i64(&t, 2, p->time);
    }
    fj_pg_row(&t, 0);
    r = NULL;
    st = n_asked ? run_cols(c, FJ_PG_JCPU_PRODUCERS, &t, &r, "job CPU producers") : FJ_OK;
    fj_pg_cols_free(&t);
    /* fjord-push before 0.2 sends a process's own time; Sonar, later fjord-push (and, unknown,
     * anything else) add children's */
    for (int i = 0, rows2 = r ? PQntuples(r) : 0; st == FJ_OK && i < rows2; i++) {
        int64_t o = fj_pg_int(r, i, 0);
        const char *version = PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1);
        if (o >= 1 && (size_t)o <= n_asked && !fj_jcpu_push_counts_children(version))
            k->sjobs[asked[o - 1]].children_counted = false;
    }
    PQclear(r);
    fj_free(asked);
    return st;
}

/* --- the questions: from the cache, else from the database ------------------------------------ */

static fj_status io_rows(void *x, int64_t rjob, int64_t node, fj_time lo, fj_time hi, fj_jcpu_row **out, size_t *n)
{
    ctx *c = x;
    const ckey *key = find_key(&c->c, rjob, node);
    PGresult *r = NULL;
    size_t rows, first = 0;
    fj_status st;
    if (key && key->from <= lo && hi <= key->to) {
        first = key->first;
        while (first < key->first + key->n && c->c.rows[first].time < lo)
            first++;
        rows = first;
        while (rows < key->first + key->n && c->c.rows[rows].time <= hi)
            rows++;
        rows -= first;
    } else {
        if ((st = flush(c)) != FJ_OK ||
            (st = run(c, FJ_PG_JCPU_ROWS, 4, (int64_t[]){rjob, node, lo, hi}, &r, "job CPU rows")) != FJ_OK)
            return st;
        rows = (size_t)PQntuples(r);
    }
    if (!fj_grow(&c->rows, &c->rows_cap, rows, sizeof *c->rows, 64)) {
        PQclear(r);
        return oom(c);
    }
    for (size_t i = 0; i < rows; i++)
        c->rows[i] = r ? (fj_jcpu_row){fj_pg_int(r, (int)i, 0), fj_pg_int(r, (int)i, 1), fj_pg_int(r, (int)i, 2)}
                       : c->c.rows[first + i];
    PQclear(r);
    *out = c->rows;
    *n = rows;
    return FJ_OK;
}

static fj_status one_time(ctx *c, fj_pg_stmt_id id, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    PGresult *r;
    fj_status st = flush(c);
    if (st != FJ_OK || (st = run(c, id, 3, (int64_t[]){rjob, node, t}, &r, "job CPU neighbour")) != FJ_OK)
        return st;
    *found = PQntuples(r) > 0;
    if (*found)
        *out = fj_pg_int(r, 0, 0);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_before(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    ctx *c = x;
    const ckey *key = find_key(&c->c, rjob, node);
    if (key && key->from <= t && t <= key->to) {
        /* the cache holds every row in [from, to]: the latest at or before t, if any is there */
        size_t i = key->first + key->n;
        while (i > key->first && c->c.rows[i - 1].time > t)
            i--;
        if (i > key->first) {
            *out = c->c.rows[i - 1].time;
            *found = true;
            return FJ_OK;
        }
        if (key->from == INT64_MIN) {
            *found = false;
            return FJ_OK;
        }
    }
    return one_time(c, FJ_PG_JCPU_BEFORE, rjob, node, t, out, found);
}

static fj_status io_after(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found)
{
    ctx *c = x;
    const ckey *key = find_key(&c->c, rjob, node);
    if (key && key->from <= t && t <= key->to) {
        size_t i = key->first, end = key->first + key->n;
        while (i < end && c->c.rows[i].time <= t)
            i++;
        if (i < end) {
            *out = c->c.rows[i].time;
            *found = true;
            return FJ_OK;
        }
        if (key->to == INT64_MAX) {
            *found = false;
            return FJ_OK;
        }
    }
    return one_time(c, FJ_PG_JCPU_AFTER, rjob, node, t, out, found);
}

static fj_status load_job(ctx *c, int64_t rjob, int64_t *sum, int64_t *n_samples, int64_t *win)
{
    const cjob *j = find_job(&c->c, rjob);
    if (j) {
        c->job_id = rjob;
        c->job = j->job, c->epoch = j->epoch, c->pid = j->pid, c->ppid = j->ppid, c->cmd_id = j->cmd_id;
        c->cluster_id = j->cluster_id;
        if (sum) {
            *sum = j->sum_m;
            *n_samples = j->n_samples;
            *win = j->win_m;
        }
        return FJ_OK;
    }
    PGresult *r;
    fj_status st = flush(c);
    if (st != FJ_OK || (st = run(c, FJ_PG_JCPU_JOB, 1, &rjob, &r, "job CPU job")) != FJ_OK)
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
    const cprocs *cp = find_sjob(&c->c, node, t, c->job, c->epoch);
    PGresult *r = NULL;
    size_t rows;
    if (cp) {
        rows = cp->n;
    } else {
        if ((st = flush(c)) != FJ_OK ||
            (st = run(c, FJ_PG_JCPU_PROCS, 4, (int64_t[]){node, t, c->job, c->epoch}, &r, "job CPU processes")) !=
                FJ_OK)
            return st;
        rows = (size_t)PQntuples(r);
    }
    slot *sl = &c->slots[which];
    if (!fj_grow(&sl->v, &sl->cap, rows, sizeof *sl->v, 64)) {
        PQclear(r);
        return oom(c);
    }
    *out = (fj_jcpu_sample){.time = t, .procs = sl->v, .n = 0};
    for (size_t i = 0; i < rows; i++) {
        int k = (int)i;
        fj_jcpu_proc p = cp ? c->c.procs[cp->first + i]
                            : (fj_jcpu_proc){fj_pg_int(r, k, 0), fj_pg_int(r, k, 1), fj_pg_int(r, k, 2),
                                             fj_pg_int(r, k, 3), fj_pg_int(r, k, 4), fj_pg_int(r, k, 5),
                                             fj_pg_int(r, k, 6), fj_pg_int(r, k, 7)};
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
    if (cp) {
        out->children_counted = cp->children_counted;
        return FJ_OK;
    }
    if ((st = run(c, FJ_PG_JCPU_PRODUCER, 3, (int64_t[]){c->cluster_id, node, t}, &r, "job CPU producer")) != FJ_OK)
        return st;
    /* fjord-push before 0.2 sends a process's own time; Sonar, later fjord-push (and, unknown,
     * anything else) add children's */
    bool found = PQntuples(r) > 0;
    out->children_counted = fj_jcpu_counts_children(found ? PQgetvalue(r, 0, 0) : NULL,
                                                     found && !PQgetisnull(r, 0, 1) ? PQgetvalue(r, 0, 1) : NULL);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_set(void *x, int64_t rjob, int64_t node, fj_time t, int64_t cpu_m, int64_t win_m)
{
    ctx *c = x;
    cache *k = &c->c;
    const ckey *key = find_key(k, rjob, node);
    size_t at = key ? find_row(k, key, t) : SIZE_MAX;
    if (at == SIZE_MAX) {
        fj_status st = flush(c);
        return st != FJ_OK ? st : run(c, FJ_PG_JCPU_SET, 5, (int64_t[]){rjob, node, t, cpu_m, win_m}, NULL, "job CPU figure");
    }
    k->rows[at].cpu_m = cpu_m;
    k->rows[at].win_m = win_m;
    if (pending(c) && k->row_added[at] != SIZE_MAX) { /* goes in with its row */
        c->pend->added[k->row_added[at]].cpu_m = cpu_m;
        c->pend->added[k->row_added[at]].win_m = win_m;
        return FJ_OK;
    }
    if (k->row_pend[at] != SIZE_MAX) {
        k->sets[k->row_pend[at]] = (pend){rjob, node, t, cpu_m, win_m};
        return FJ_OK;
    }
    k->row_pend[at] = k->n_sets;
    return push_pend(c, &k->sets, &k->n_sets, &k->cap_sets, (pend){rjob, node, t, cpu_m, win_m});
}

static fj_status io_job_get(void *x, int64_t rjob, int64_t *sum_m, int64_t *n_samples, int64_t *win_m)
{
    return load_job(x, rjob, sum_m, n_samples, win_m);
}

static fj_status io_job_all(void *x, int64_t rjob, int64_t *sum_m, int64_t *win_m)
{
    ctx *c = x;
    PGresult *r;
    fj_status st = flush(c);
    if (st != FJ_OK || (st = run(c, FJ_PG_JCPU_ALL, 1, &rjob, &r, "job CPU totals")) != FJ_OK)
        return st;
    *sum_m = fj_pg_int(r, 0, 0);
    *win_m = fj_pg_int(r, 0, 1);
    PQclear(r);
    return FJ_OK;
}

static fj_status io_job_set(void *x, int64_t rjob, int64_t sum_m, int64_t win_m, int64_t peak_m)
{
    ctx *c = x;
    cache *k = &c->c;
    cjob *j = (cjob *)find_job(k, rjob);
    if (!j) {
        fj_status st = flush(c);
        return st != FJ_OK ? st
                           : run(c, FJ_PG_JCPU_JOB_SET, 4, (int64_t[]){rjob, sum_m, win_m, peak_m}, NULL,
                                 "job CPU summary");
    }
    j->sum_m = sum_m;
    j->win_m = win_m;
    if (pending(c) && j->pending != SIZE_MAX) { /* goes in with its job row */
        fj_pg_jcpu_job *pj = &c->pend->jobs[j->pending];
        pj->sum_m = sum_m, pj->win_m = win_m, pj->peak_m = peak_m, pj->set = true;
        return FJ_OK;
    }
    pend p = {rjob, sum_m, win_m, peak_m, 0};
    /* the drain settles a job once; should it come again, the last figures stand */
    for (size_t i = 0; i < k->n_job_sets; i++)
        if (k->job_sets[i].a == rjob) {
            k->job_sets[i] = p;
            return FJ_OK;
        }
    return push_pend(c, &k->job_sets, &k->n_job_sets, &k->cap_job_sets, p);
}

/* Reads what the notes will ask into the cache. */
static fj_status prefetch(ctx *c, fj_jcpu_note *notes, size_t n)
{
    if (!n)
        return FJ_OK;
    qsort(notes, n, sizeof *notes, fj_jcpu_note_cmp); /* fj_jcpu_drain's order too */
    fj_status st = load_jobs(c, notes, n);
    if (st == FJ_OK)
        st = load_rows(c, notes, n);
    if (st == FJ_OK)
        st = load_procs(c, notes, n);
    return st;
}

fj_status fj_pg_jcpu_drain(fj_store *s, const int64_t *rjob, const int64_t *node, const int64_t *t, size_t n,
                           fj_pg_jcpu_pending *p, fj_err *err)
{
    ctx c = {.s = s, .err = err, .job_id = -1, .pend = p};
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
    st = prefetch(&c, notes, n + n_todo);
    if (st == FJ_OK)
        st = fj_jcpu_drain(&io, notes, n + n_todo, err);
    if (st == FJ_OK)
        st = send_pending(&c); /* what is pending stays for the writer to write */
    if (st == FJ_OK && n_todo)
        st = fj_pg_run(s, FJ_PG_JCPU_TODO_DEL, 0, NULL, NULL, "job CPU backfill", err);
    cache_free(&c.c);
    fj_free(notes);
    fj_free(c.slots[0].v);
    fj_free(c.slots[1].v);
    fj_free(c.rows);
    return st;
}
