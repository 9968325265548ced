/* sqlite_query_load.c — node and cluster load of the SQLite backend, bucketed in C. CPU
 * utilisation comes from the cumulative per-core counters (qmath.h: a decreasing counter is no
 * use, a duplicate timestamp no interval); the sample before the window opens the first interval.
 *
 * Two ways to read the samples, with the same result:
 *  - per node: an index range on samples(node_id, time), and the node's GPU rows; for a few nodes.
 *  - one pass: samples arrive in time order, so the window's samples of all nodes sit in one
 *    rowid range, read sequentially (about 3x faster than 1,000 index ranges, whose every row is
 *    a seek into the table); likewise sample_gpus by its sample_id key. A node whose rows in that
 *    range are not all its window's rows in time order (late or back-filled data) is read again
 *    per node, so the result never depends on arrival order.
 * Cluster load folds the nodes' buckets.
 *
 * Hourly roll-ups (load_hourly, loadagg.h) answer the whole hours inside the window when the
 * bucket width is whole hours; the writer keeps them with this file's own per-node reading
 * (fj_sq_load_rollup_drain: new samples appended, an hour a late sample changes recomputed), so
 * either way of answering gives the same figures. GPU load per card (fj_sq_q_gpu_load) reads the
 * cards' rows. */
#include "sqlite_query_int.h"

#include "alloc.h"
#include "gpuload.h"
#include "loadagg.h"
#include "qmath.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* More nodes than this are read in one pass. */
#define SCAN_MIN_NODES 16
/* Bucket memory of all nodes at once (one pass) at most; above, nodes are read one by one. */
#define SCAN_MAX_BUCKET_BYTES ((size_t)256 << 20)
/* At least this many nodes (and 4 buckets): the later half of the buckets is read by a second
 * thread on its own connection. */
#define SPLIT_MIN_NODES 64
/* A rowid range more than this many times the window's samples is not worth one pass. */
#define SCAN_MAX_WASTE 3
/* Largest rowid range mapped sample id -> node for the GPU pass (entries). */
#define SCAN_MAX_MAP ((int64_t)32 << 20)

typedef fj_la_bucket nbucket;

/* One node being read. */
typedef struct nstate {
    int64_t node_id;
    const char *name;
    nbucket *b;        /* g.n buckets */
    fj_qm_cpustate cpu; /* counters of the next interval's start */
    /* one pass */
    fj_time last_t;
    int64_t expect, seen;
    bool redo;
} nstate;

typedef struct loadctx {
    fj_sqq *x;
    fj_qm_grid g;
    fj_time from, to;
    sqlite3_stmt *prev, *main, *gpu, *has_gpu, *count, *first, *last;
    size_t b_lo, b_hi; /* the buckets this reader fills: [from, to] covers exactly them */
    nstate *ns;    /* wanted nodes, by name */
    size_t n_ns;
} loadctx;

static fj_status oom(loadctx *l)
{
    return fj_err_set(l->x->err, FJ_ENOMEM, NULL, "out of memory");
}

/* Room in the node's counter storage for a blob of len bytes (at most len counters). */
static fj_status room(loadctx *l, nstate *ns, size_t len)
{
    if (len <= ns->cpu.cap)
        return FJ_OK;
    size_t nc = len < 128 ? 128 : len;
    uint64_t *v = fj_realloc(ns->cpu.c, nc * sizeof *v);
    if (!v)
        return oom(l);
    ns->cpu.c = v;
    ns->cpu.cap = nc;
    return FJ_OK;
}

/* Feeds a sample's counters to the node's CPU state; *ok when they formed an interval. */
static fj_status cpu_step(loadctx *l, nstate *ns, fj_time t, fj_time boot, const void *blob, size_t len,
                          fj_qm_cpu *cpu, bool *ok)
{
    *ok = false;
    if (!blob || !len)
        return FJ_OK;
    fj_status rs = room(l, ns, len);
    if (rs == FJ_OK)
        *ok = fj_qm_cpu_step(&ns->cpu, t, boot, blob, len, cpu) == 1; /* malformed: no figure */
    return rs;
}

/* Resets a node and reads the sample before the window (the first interval's start). */
static fj_status node_start(loadctx *l, nstate *ns)
{
    memset(ns->b + l->b_lo, 0, (l->b_hi - l->b_lo) * sizeof *ns->b);
    ns->cpu.have = false;
    ns->cpu.n = 0;
    sqlite3_stmt *st = l->prev;
    sqlite3_bind_int64(st, 1, ns->node_id);
    sqlite3_bind_int64(st, 2, l->from);
    int r = sqlite3_step(st);
    fj_status rs = FJ_OK;
    if (r == SQLITE_ROW) {
        fj_qm_cpu cpu;
        bool ok;
        rs = cpu_step(l, ns, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_blob(st, 2),
                      (size_t)sqlite3_column_bytes(st, 2), &cpu, &ok);
    }
    sqlite3_reset(st);
    if (rs == FJ_OK && r != SQLITE_ROW && r != SQLITE_DONE)
        rs = fj_sqq_fail(l->x, r, "previous sample");
    return rs;
}

/* One sample row of a node: columns time, boot, used_memory_kb, load1, load5, load15, cpus from
 * column `c` of st on. Rows of one node must come in time order. */
static fj_status node_row(loadctx *l, nstate *ns, sqlite3_stmt *st, int c)
{
    fj_time t = sqlite3_column_int64(st, c), boot = sqlite3_column_int64(st, c + 1);
    fj_qm_cpu cpu;
    bool ok;
    fj_status rs = cpu_step(l, ns, t, boot, sqlite3_column_blob(st, c + 6), (size_t)sqlite3_column_bytes(st, c + 6),
                            &cpu, &ok);
    if (rs != FJ_OK)
        return rs;
    long bi = fj_qm_bucket(&l->g, t);
    if (bi < 0)
        return FJ_OK;
    nbucket *b = &ns->b[bi];
    b->samples++;
    if (ns->cpu.have && ns->cpu.t == t && (int64_t)ns->cpu.n > b->cores)
        b->cores = (int64_t)ns->cpu.n;
    if (ok) {
        fj_qm_addw(&b->cpu_util, fj_qm_cpu_util(&cpu), cpu.seconds);
        fj_qm_addw(&b->cpu_cores, fj_qm_cpu_cores(&cpu), cpu.seconds);
    }
    if (sqlite3_column_type(st, c + 2) != SQLITE_NULL)
        fj_qm_add(&b->mem, sqlite3_column_double(st, c + 2));
    if (sqlite3_column_type(st, c + 3) != SQLITE_NULL) {
        fj_qm_add(&b->load1, sqlite3_column_double(st, c + 3));
        fj_qm_add(&b->load5, sqlite3_column_double(st, c + 4));
        fj_qm_add(&b->load15, sqlite3_column_double(st, c + 5));
    }
    return FJ_OK;
}

/* All cards of one sample time into its bucket. */
typedef struct gsum {
    fj_time t;
    int64_t cards;
    double usum, umax, mem, power, tsum, tmax;
} gsum;

static void gsum_add(gsum *g, double util, double mem, double power, double temp)
{
    if (g->cards == 0 || util > g->umax)
        g->umax = util;
    if (g->cards == 0 || temp > g->tmax)
        g->tmax = temp;
    g->usum += util;
    g->tsum += temp;
    g->mem += mem;
    g->power += power;
    g->cards++;
}

static void gsum_flush(loadctx *l, nstate *ns, gsum *g)
{
    long bi = g->cards ? fj_qm_bucket(&l->g, g->t) : -1;
    if (bi >= 0) {
        nbucket *b = &ns->b[bi];
        if (g->cards > b->gpus)
            b->gpus = g->cards;
        fj_qm_add(&b->gpu_util, g->usum / (double)g->cards);
        fj_qm_add(&b->gpu_util_card_max, g->umax);
        fj_qm_add(&b->gpu_mem, g->mem);
        fj_qm_add(&b->gpu_power, g->power);
        fj_qm_add(&b->gpu_temp, g->tsum / (double)g->cards);
        fj_qm_add(&b->gpu_temp_card_max, g->tmax);
    }
    memset(g, 0, sizeof *g);
}

/* A node read alone: its index range, then its GPU rows when it reports GPUs (or never sent a
 * sysinfo). */
static fj_status node_alone(loadctx *l, nstate *ns)
{
    fj_status rs = node_start(l, ns);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *st = l->main;
    sqlite3_bind_int64(st, 1, ns->node_id);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        if ((rs = node_row(l, ns, st, 0)) != FJ_OK)
            break;
    sqlite3_reset(st);
    if (rs != FJ_OK)
        return rs;
    if (r != SQLITE_DONE)
        return fj_sqq_fail(l->x, r, "samples");

    sqlite3_bind_int64(l->has_gpu, 1, ns->node_id);
    r = sqlite3_step(l->has_gpu);
    bool gpus = r == SQLITE_ROW &&
                (sqlite3_column_int64(l->has_gpu, 0) == 0 || sqlite3_column_int64(l->has_gpu, 1) > 0);
    sqlite3_reset(l->has_gpu);
    if (r != SQLITE_ROW)
        return fj_sqq_fail(l->x, r, "sysinfo gpus");
    if (!gpus)
        return FJ_OK;
    st = l->gpu;
    sqlite3_bind_int64(st, 1, ns->node_id);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    gsum g = {0};
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        fj_time t = sqlite3_column_int64(st, 0);
        if (t != g.t)
            gsum_flush(l, ns, &g);
        g.t = t;
        gsum_add(&g, sqlite3_column_double(st, 1), sqlite3_column_double(st, 2), sqlite3_column_double(st, 3),
                 sqlite3_column_double(st, 4));
    }
    gsum_flush(l, ns, &g);
    sqlite3_reset(st);
    return r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(l->x, r, "gpu samples");
}

/* The first column of st's first row for (node, from, to) into *v (0 when no row). */
static fj_status node_int(loadctx *l, sqlite3_stmt *st, int64_t node, int64_t *v)
{
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    int r = sqlite3_step(st);
    *v = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return r == SQLITE_ROW || r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(l->x, r, "sample range");
}

/* Index of a node id among l->ns (sorted copy of ids), or -1. */
typedef struct idslot {
    int64_t id;
    size_t slot;
} idslot;

static int cmp_idslot(const void *a, const void *b)
{
    const idslot *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static long find_slot(const idslot *v, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].id == id ? (long)v[lo].slot : -1;
}

/* Reads every wanted node in one pass over the window's rowid range. Nodes it cannot vouch for
 * are marked redo. false in *used when the range is not worth it (nothing read). */
static fj_status one_pass(loadctx *l, bool *used)
{
    fj_sqq *x = l->x;
    *used = false;
    /* Each node's window rows: how many, and the rowids of the first and the last by time. In
     * time-ordered data these are its smallest and largest, and the union range holds every row of
     * the window; a node for which it does not (back-filled data) is caught by its count below and
     * read alone. Three cheap index lookups per node; min(id)/max(id) over the range would cost
     * more than the scan saves. */
    int64_t r0 = INT64_MAX, r1 = INT64_MIN, total = 0;
    for (size_t i = 0; i < l->n_ns; i++) {
        nstate *ns = &l->ns[i];
        int64_t a = 0, b = 0;
        fj_status rs = node_int(l, l->count, ns->node_id, &ns->expect);
        if (rs == FJ_OK && ns->expect > 0 && (rs = node_int(l, l->first, ns->node_id, &a)) == FJ_OK)
            rs = node_int(l, l->last, ns->node_id, &b);
        if (rs != FJ_OK)
            return rs;
        if (ns->expect > 0) {
            r0 = a < r0 ? a : r0;
            r1 = b > r1 ? b : r1;
            total += ns->expect;
        }
    }
    if (total == 0 || r1 < r0 || (r1 - r0 + 1) > SCAN_MAX_WASTE * total)
        return FJ_OK;
    *used = true;

    idslot *ids = fj_arena_alloc(x->a, l->n_ns * sizeof *ids);
    if (!ids)
        return oom(l);
    for (size_t i = 0; i < l->n_ns; i++)
        ids[i] = (idslot){l->ns[i].node_id, i};
    qsort(ids, l->n_ns, sizeof *ids, cmp_idslot);
    fj_status rs;
    for (size_t i = 0; i < l->n_ns; i++)
        if ((rs = node_start(l, &l->ns[i])) != FJ_OK)
            return rs;

    /* sample id -> slot + 1 and time, for the GPU pass */
    int64_t span = r1 - r0 + 1;
    int32_t *map_slot = NULL;
    fj_time *map_t = NULL;
    if (span <= SCAN_MAX_MAP) {
        map_slot = fj_calloc((size_t)span, sizeof *map_slot);
        map_t = fj_malloc((size_t)span * sizeof *map_t);
        if (!map_slot || !map_t) {
            fj_free(map_slot);
            fj_free(map_t);
            return oom(l);
        }
    }

    sqlite3_stmt *st = NULL;
    rs = fj_sqq_prepare(x,
                        "SELECT id, node_id, time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                        " WHERE id >= ?1 AND id <= ?2",
                        &st);
    if (rs != FJ_OK)
        goto out;
    sqlite3_bind_int64(st, 1, r0);
    sqlite3_bind_int64(st, 2, r1);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        fj_time t = sqlite3_column_int64(st, 2); /* the window is checked here: cheaper than in SQL */
        if (t < l->from || t > l->to)
            continue;
        long slot = find_slot(ids, l->n_ns, sqlite3_column_int64(st, 1));
        if (slot < 0)
            continue;
        nstate *ns = &l->ns[slot];
        if (ns->redo)
            continue;
        if (ns->seen && t <= ns->last_t) { /* not in time order: read this node alone */
            ns->redo = true;
            continue;
        }
        ns->seen++;
        ns->last_t = t;
        if ((rs = node_row(l, ns, st, 2)) != FJ_OK)
            goto out;
        if (map_slot) {
            int64_t k = sqlite3_column_int64(st, 0) - r0;
            map_slot[k] = (int32_t)slot + 1;
            map_t[k] = t;
        }
    }
    if (r != SQLITE_DONE) {
        rs = fj_sqq_fail(x, r, "samples");
        goto out;
    }
    for (size_t i = 0; i < l->n_ns; i++)
        if (l->ns[i].seen != l->ns[i].expect)
            l->ns[i].redo = true; /* some of its rows lie outside the range */

    /* GPU rows of the range, grouped by sample */
    sqlite3_finalize(st);
    st = NULL;
    if (!map_slot) {
        for (size_t i = 0; i < l->n_ns; i++)
            l->ns[i].redo = true;
        goto out;
    }
    if ((rs = fj_sqq_prepare(x,
                             "SELECT sample_id, ce_util, memory_kb, power, temperature FROM sample_gpus"
                             " WHERE sample_id >= ?1 AND sample_id <= ?2",
                             &st)) != FJ_OK)
        goto out;
    sqlite3_bind_int64(st, 1, r0);
    sqlite3_bind_int64(st, 2, r1);
    gsum g = {0};
    int64_t cur = -1;
    nstate *gns = NULL;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t sid = sqlite3_column_int64(st, 0);
        if (sid != cur) {
            if (gns)
                gsum_flush(l, gns, &g);
            cur = sid;
            int32_t slot = map_slot[sid - r0];
            gns = slot ? &l->ns[slot - 1] : NULL;
            if (gns && gns->redo)
                gns = NULL;
            g.t = gns ? map_t[sid - r0] : 0;
        }
        if (gns)
            gsum_add(&g, sqlite3_column_double(st, 1), sqlite3_column_double(st, 2), sqlite3_column_double(st, 3),
                     sqlite3_column_double(st, 4));
    }
    if (gns)
        gsum_flush(l, gns, &g);
    if (r != SQLITE_DONE)
        rs = fj_sqq_fail(x, r, "gpu samples");
out:
    sqlite3_finalize(st);
    fj_free(map_slot);
    fj_free(map_t);
    return rs;
}

typedef fj_status (*node_done_fn)(loadctx *l, nstate *ns, void *ctx);

static fj_status load_prepare(loadctx *l);
static void load_free(loadctx *l);

/* Reads every node of l into its buckets: one pass when `all` (the buckets of all nodes are in
 * memory), nodes the pass could not vouch for, or every node otherwise, one by one. */
static fj_status read_nodes(loadctx *l, bool all)
{
    bool used = false;
    fj_status rs;
    if (all && (rs = one_pass(l, &used)) != FJ_OK)
        return rs;
    for (size_t i = 0; i < l->n_ns; i++) {
        nstate *ns = &l->ns[i];
        if ((!used || ns->redo) && (rs = node_alone(l, ns)) != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

/* The later half of a long query, read by a second thread on a read connection of its own (so
 * a cluster-wide day takes two cores, not one). Its buckets are disjoint from the first half's;
 * the sample before its window opens its first CPU interval, exactly as a single pass would. The
 * halves read two snapshots taken a moment apart: at worst the later half shows a commit the
 * earlier does not, as if it had been asked a moment later. */
typedef struct half {
    struct fj_store st;
    fj_sqq x;
    fj_err err;
    loadctx l;
    fj_status rs;
    pthread_t th;
} half;

static void *half_main(void *arg)
{
    half *h = arg;
    h->rs = load_prepare(&h->l);
    if (h->rs == FJ_OK)
        h->rs = read_nodes(&h->l, true);
    return NULL;
}

/* Starts the second half over buckets [cut, g.n) of l's nodes; false when it could not (the
 * caller then reads everything itself). */
static bool half_start(loadctx *l, half *h, size_t cut)
{
    memset(h, 0, sizeof *h);
    const char *file = sqlite3_db_filename(l->x->s->db, "main");
    if (!file || !*file)
        return false;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    sqlite3_busy_timeout(db, 5000);
    h->st.ops = l->x->s->ops;
    h->st.db = db;
    h->st.mode = FJ_STORE_READ;
    h->st.path = l->x->s->path;
    fj_sqq *x = &h->x;
    x->s = &h->st;
    x->q = l->x->q;
    x->err = &h->err;
    x->cluster_id = l->x->cluster_id;
    if (!(x->a = fj_arena_create()) ||
        sqlite3_exec(db, "PRAGMA cache_size=-65536; PRAGMA mmap_size=17179869184; BEGIN", NULL, NULL, NULL) !=
            SQLITE_OK)
        goto fail;
    loadctx *m = &h->l;
    m->x = x;
    m->g = l->g;
    m->from = l->g.from + (int64_t)cut * l->g.step;
    m->to = l->to;
    m->b_lo = cut;
    m->b_hi = l->g.n;
    m->n_ns = l->n_ns;
    if (!(m->ns = fj_arena_calloc(x->a, l->n_ns + 1, sizeof *m->ns)))
        goto fail;
    for (size_t i = 0; i < l->n_ns; i++) {
        m->ns[i].node_id = l->ns[i].node_id;
        m->ns[i].name = l->ns[i].name;
        m->ns[i].b = l->ns[i].b;
    }
    if (pthread_create(&h->th, NULL, half_main, h) != 0)
        goto fail;
    return true;
fail:
    fj_arena_destroy(x->a);
    x->a = NULL;
    sqlite3_close(db);
    return false;
}

static fj_status half_join(half *h)
{
    pthread_join(h->th, NULL);
    fj_status rs = h->rs;
    load_free(&h->l);
    for (size_t i = 0; i < h->l.n_ns; i++)
        fj_free(h->l.ns[i].cpu.c);
    sqlite3_exec(h->st.db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h->st.db);
    fj_arena_destroy(h->x.a);
    return rs;
}

/* --- hourly roll-ups (loadagg.h, migrations/sqlite/0006) ----------------------------------- */

/* The whole hours [*r0, *r1) inside the window that roll-ups answer, when the width is whole hours
 * (buckets are aligned to multiples of it, so no hour straddles two buckets); the rest of the
 * window, less than an hour at either end, is read from samples. None (*r0 == *r1) for other
 * widths, or while roll-ups are pending (right after the migration, until its backfill is done). */
static fj_status rollup_span(loadctx *l, fj_time *r0, fj_time *r1)
{
    *r0 = *r1 = 0;
    fj_time a = fj_la_hour(l->from + FJ_LA_ROLLUP_S - 1), b = fj_la_hour(l->to + 1);
    if (l->g.step % FJ_LA_ROLLUP_S || b <= a)
        return FJ_OK;
    sqlite3_stmt *st;
    fj_status rs = fj_sqq_prepare(l->x, "SELECT 1 FROM load_hourly_todo LIMIT 1", &st);
    if (rs != FJ_OK)
        return rs;
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r == SQLITE_DONE) {
        *r0 = a;
        *r1 = b;
    }
    return r == SQLITE_ROW || r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(l->x, r, "load roll-ups pending");
}

/* Reads the samples of [from, to], a part of one bucket, into edge (one bucket per node when
 * `all`, in one pass, else the one node ns), then adds them to that bucket of the nodes. The read
 * runs on a grid of that one bucket, so the node's other buckets are left alone. */
static fj_status read_edge(loadctx *l, nbucket *edge, bool all, nstate *ns, fj_time from, fj_time to)
{
    if (from > to)
        return FJ_OK;
    fj_qm_grid g = l->g;
    fj_time lfrom = l->from, lto = l->to;
    long bi = fj_qm_bucket(&g, from);
    size_t first = all ? 0 : (size_t)(ns - l->ns), end = all ? l->n_ns : first + 1;
    if (bi < 0) /* from is inside the window, so never */
        return fj_err_set(l->x->err, FJ_EINTERNAL, NULL, "load: edge outside the grid");
    nbucket **keep = fj_malloc((end - first) * sizeof *keep);
    if (!keep)
        return oom(l);
    l->g = (fj_qm_grid){.from = g.from + bi * g.step, .step = g.step, .n = 1};
    l->b_lo = 0;
    l->b_hi = 1;
    l->from = from;
    l->to = to;
    for (size_t i = first; i < end; i++) {
        keep[i - first] = l->ns[i].b;
        l->ns[i].b = edge + (i - first);
        l->ns[i].seen = 0;
        l->ns[i].redo = false;
    }
    fj_status rs = all ? read_nodes(l, true) : node_alone(l, ns);
    for (size_t i = first; i < end; i++) {
        l->ns[i].b = keep[i - first];
        if (rs == FJ_OK)
            fj_la_merge(&l->ns[i].b[bi], &edge[i - first]);
    }
    l->g = g;
    l->b_hi = g.n;
    l->from = lfrom;
    l->to = lto;
    fj_free(keep);
    return rs;
}

/* Roll-ups for the hours [r0, r1), samples for the rest of the window; with many nodes the
 * window's ends are read for all nodes in one pass each, otherwise node by node. */
static fj_status run_rollup(loadctx *l, fj_time r0, fj_time r1, node_done_fn done, void *ctx)
{
    fj_sqq *x = l->x;
    bool all = l->n_ns >= SCAN_MIN_NODES && l->g.n * sizeof(nbucket) * l->n_ns <= SCAN_MAX_BUCKET_BYTES;
    nbucket *mem = fj_calloc(all ? l->n_ns * l->g.n : l->g.n, sizeof *mem);
    nbucket *edge = fj_calloc(all ? l->n_ns : 1, sizeof *edge);
    sqlite3_stmt *st = NULL;
    fj_status rs = mem && edge ? FJ_OK : oom(l);
    if (rs == FJ_OK)
        rs = fj_sqq_prepare(x, "SELECT hour," FJ_LA_COLS_SQL " FROM load_hourly"
                               " WHERE node_id = ?1 AND hour >= ?2 AND hour < ?3", &st);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
        l->ns[i].b = all ? mem + i * l->g.n : mem;
    if (rs == FJ_OK && all && (rs = read_edge(l, edge, true, NULL, l->from, r0 - 1)) == FJ_OK)
        rs = read_edge(l, edge, true, NULL, r1, l->to);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++) {
        nstate *ns = &l->ns[i];
        if (!all) {
            memset(mem, 0, l->g.n * sizeof *mem);
            if ((rs = read_edge(l, edge, false, ns, l->from, r0 - 1)) != FJ_OK ||
                (rs = read_edge(l, edge, false, ns, r1, l->to)) != FJ_OK)
                break;
        }
        sqlite3_bind_int64(st, 1, ns->node_id);
        sqlite3_bind_int64(st, 2, r0);
        sqlite3_bind_int64(st, 3, r1);
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            long bi = fj_qm_bucket(&l->g, sqlite3_column_int64(st, 0));
            if (bi < 0)
                continue;
            double v[FJ_LA_NCOLS];
            for (int c = 0; c < FJ_LA_NCOLS; c++)
                v[c] = sqlite3_column_double(st, c + 1);
            nbucket h;
            fj_la_from_row(&h, v);
            fj_la_merge(&ns->b[bi], &h);
        }
        sqlite3_reset(st);
        if (r != SQLITE_DONE)
            rs = fj_sqq_fail(x, r, "load roll-ups");
        else
            rs = done(l, ns, ctx);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < l->n_ns; i++)
        fj_free(l->ns[i].cpu.c);
    fj_free(edge);
    fj_free(mem);
    return rs;
}

/* Buckets every wanted node and calls done for each, in name order. */
static fj_status run_load(loadctx *l, node_done_fn done, void *ctx)
{
    fj_time r0, r1;
    fj_status rs = rollup_span(l, &r0, &r1);
    if (rs != FJ_OK)
        return rs;
    if (r1 > r0)
        return run_rollup(l, r0, r1, done, ctx);
    size_t per_node = l->g.n * sizeof(nbucket);
    bool all = l->n_ns >= SCAN_MIN_NODES && per_node * l->n_ns <= SCAN_MAX_BUCKET_BYTES;
    nbucket *mem = fj_calloc(all ? l->n_ns * l->g.n : l->g.n, sizeof *mem);
    if (!mem)
        return oom(l);
    for (size_t i = 0; i < l->n_ns; i++)
        l->ns[i].b = all ? mem + i * l->g.n : mem;
    /* many nodes and buckets: the later half of the buckets on a second thread */
    half h;
    bool split = all && l->n_ns >= SPLIT_MIN_NODES && l->g.n >= 4 && half_start(l, &h, l->g.n / 2);
    fj_time to = l->to;
    if (split) {
        l->b_hi = l->g.n / 2;
        l->to = l->g.from + (int64_t)l->b_hi * l->g.step - 1;
    }
    if (all) {
        rs = read_nodes(l, true);
    } else { /* one bucket array for all: each node is answered before the next is read */
        rs = FJ_OK;
        for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
            if ((rs = node_alone(l, &l->ns[i])) == FJ_OK)
                rs = done(l, &l->ns[i], ctx);
    }
    l->to = to;
    l->b_hi = l->g.n;
    if (split) {
        fj_status hs = half_join(&h);
        if (rs == FJ_OK && hs != FJ_OK) {
            rs = hs;
            *l->x->err = h.err;
        }
    }
    for (size_t i = 0; all && rs == FJ_OK && i < l->n_ns; i++)
        rs = done(l, &l->ns[i], ctx);
    for (size_t i = 0; i < l->n_ns; i++)
        fj_free(l->ns[i].cpu.c);
    fj_free(mem);
    return rs;
}

static fj_status load_prepare(loadctx *l)
{
    fj_sqq *x = l->x;
    fj_status rs;
    /* The first interval starts at the latest sample with counters, as inside the window (a
     * sample without counters interrupts no interval), so an hour's roll-up and any window that
     * contains the hour see the same intervals. */
    if ((rs = fj_sqq_prepare(x, "SELECT time, boot, cpus FROM samples WHERE node_id = ?1 AND time < ?2"
                                " AND cpus IS NOT NULL ORDER BY time DESC LIMIT 1", &l->prev)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                                " WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
                             &l->main)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT s.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                                " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3 ORDER BY s.time, g.idx",
                             &l->gpu)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = ?1", &l->has_gpu)) !=
            FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT count(*) FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3",
                             &l->count)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT id FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3"
                                " ORDER BY time LIMIT 1", &l->first)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT id FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3"
                                " ORDER BY time DESC LIMIT 1", &l->last)) != FJ_OK)
        return rs;
    return FJ_OK;
}

static void load_free(loadctx *l)
{
    sqlite3_finalize(l->prev);
    sqlite3_finalize(l->main);
    sqlite3_finalize(l->gpu);
    sqlite3_finalize(l->has_gpu);
    sqlite3_finalize(l->count);
    sqlite3_finalize(l->first);
    sqlite3_finalize(l->last);
}

static fj_value avg_or_null(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_v_real(v) : fj_v_null();
}

static fj_value avg_int_or_null(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_v_int((int64_t)llround(v)) : fj_v_null();
}

static fj_value max_or_null(const fj_qm_acc *a)
{
    return a->n ? fj_v_real(a->max) : fj_v_null();
}

static fj_value max_int_or_null(const fj_qm_acc *a)
{
    return a->n ? fj_v_int((int64_t)llround(a->max)) : fj_v_null();
}

/* Starts a load query: cluster, wanted nodes by name, window, grid, statements. */
static fj_status load_begin(fj_sqq *x, loadctx *l)
{
    fj_query *q = x->q;
    memset(l, 0, sizeof *l);
    l->x = x;
    fj_status rs;
    if ((rs = fj_sqq_cluster(x)) != FJ_OK || (rs = fj_sqq_load_nodes(x)) != FJ_OK)
        return rs;
    l->to = q->to ? q->to : q->now;
    l->from = q->from ? q->from : l->to - 86400;
    if (l->from > l->to)
        return fj_err_set(x->err, FJ_EINVAL, "from", "parameter 'from': after 'to'");
    int64_t step = q->bucket_s > 0 ? q->bucket_s : fj_qm_default_bucket(l->from, l->to);
    if (fj_qm_grid_make(l->from, l->to, step, FJ_QM_MAX_BUCKETS, &l->g) != FJ_OK)
        return fj_err_set(x->err, FJ_EINVAL, "bucket", "parameter 'bucket': more than %d buckets",
                          FJ_QM_MAX_BUCKETS);
    q->from = l->from; /* what was used, for the answer */
    q->to = l->to;
    q->bucket_s = step;
    l->b_lo = 0;
    l->b_hi = l->g.n;
    l->ns = fj_arena_calloc(x->a, x->nodes.n + 1, sizeof *l->ns);
    if (!l->ns)
        return oom(l);
    for (size_t i = 0; i < x->nodes.n; i++) {
        if (!x->nodes.want[i])
            continue;
        size_t j = l->n_ns++;
        while (j > 0 && strcmp(l->ns[j - 1].name, x->nodes.names[i]) > 0) {
            l->ns[j] = l->ns[j - 1];
            j--;
        }
        memset(&l->ns[j], 0, sizeof l->ns[j]);
        l->ns[j].node_id = x->nodes.ids[i];
        l->ns[j].name = x->nodes.names[i];
    }
    return load_prepare(l);
}

static fj_status emit_node(loadctx *l, nstate *ns, void *ctx)
{
    fj_sink *k = ctx;
    for (size_t bi = 0; bi < l->g.n; bi++) {
        const nbucket *b = &ns->b[bi];
        if (!b->samples)
            continue;
        fj_value v[22] = {
            fj_v_text(ns->name),
            fj_v_time(l->g.from + (int64_t)bi * l->g.step),
            fj_v_int(b->samples),
            fj_v_int(b->cores),
            avg_or_null(&b->cpu_util),
            max_or_null(&b->cpu_util),
            avg_or_null(&b->cpu_cores),
            avg_int_or_null(&b->mem),
            max_int_or_null(&b->mem),
            avg_or_null(&b->load1),
            max_or_null(&b->load1),
            avg_or_null(&b->load5),
            avg_or_null(&b->load15),
            fj_v_int(b->gpus),
            avg_or_null(&b->gpu_util),
            max_or_null(&b->gpu_util_card_max),
            avg_int_or_null(&b->gpu_mem),
            max_int_or_null(&b->gpu_mem),
            avg_or_null(&b->gpu_power),
            max_or_null(&b->gpu_power),
            avg_or_null(&b->gpu_temp),
            max_or_null(&b->gpu_temp_card_max),
        };
        fj_status rs = k->row(k, v);
        if (rs != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

fj_status fj_sq_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    if ((rs = load_begin(&x, &l)) == FJ_OK && (rs = k->table(k, &fj_qt_node_load)) == FJ_OK)
        rs = run_load(&l, emit_node, k);
    load_free(&l);
    return fj_sqq_end(&x, rs);
}

/* Cluster buckets: sums (busy cores, memory, GPU memory and power) or means (utilisation, load,
 * temperature) of the nodes' bucket averages; the _max columns are the highest node's maximum. */
typedef struct cbucket {
    int64_t nodes, cores, gpus;
    double cpu_busy, cpu_cap, mem_sum, gpu_mem_sum, gpu_power_sum;
    bool has_cpu, has_mem;
    fj_qm_acc cpu_util_max, mem_max, load1, load1_max, load5, load15;
    fj_qm_acc gpu_util, gpu_util_max, gpu_mem_max, gpu_power_max, gpu_temp, gpu_temp_max;
} cbucket;

static void fold(cbucket *c, const nbucket *b)
{
    double v;
    c->nodes++;
    c->cores += b->cores;
    if (fj_qm_avg(&b->cpu_cores, &v)) {
        c->cpu_busy += v;
        c->cpu_cap += (double)b->cores;
        c->has_cpu = true;
        fj_qm_add(&c->cpu_util_max, b->cpu_util.max);
    }
    if (fj_qm_avg(&b->mem, &v)) {
        c->mem_sum += v;
        c->has_mem = true;
        fj_qm_add(&c->mem_max, b->mem.max);
    }
    if (fj_qm_avg(&b->load1, &v)) {
        fj_qm_add(&c->load1, v);
        fj_qm_add(&c->load1_max, b->load1.max);
        if (fj_qm_avg(&b->load5, &v))
            fj_qm_add(&c->load5, v);
        if (fj_qm_avg(&b->load15, &v))
            fj_qm_add(&c->load15, v);
    }
    if (b->gpus && fj_qm_avg(&b->gpu_util, &v)) {
        c->gpus += b->gpus;
        fj_qm_addw(&c->gpu_util, v, (double)b->gpus);
        fj_qm_add(&c->gpu_util_max, b->gpu_util_card_max.max);
        if (fj_qm_avg(&b->gpu_mem, &v))
            c->gpu_mem_sum += v;
        fj_qm_add(&c->gpu_mem_max, b->gpu_mem.max);
        if (fj_qm_avg(&b->gpu_power, &v))
            c->gpu_power_sum += v;
        fj_qm_add(&c->gpu_power_max, b->gpu_power.max);
        if (fj_qm_avg(&b->gpu_temp, &v))
            fj_qm_addw(&c->gpu_temp, v, (double)b->gpus);
        fj_qm_add(&c->gpu_temp_max, b->gpu_temp_card_max.max);
    }
}

static fj_status fold_node(loadctx *l, nstate *ns, void *ctx)
{
    cbucket *cb = ctx;
    for (size_t bi = 0; bi < l->g.n; bi++)
        if (ns->b[bi].samples)
            fold(&cb[bi], &ns->b[bi]);
    return FJ_OK;
}

fj_status fj_sq_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    cbucket *cb = NULL;
    if ((rs = load_begin(&x, &l)) != FJ_OK || (rs = k->table(k, &fj_qt_cluster_load)) != FJ_OK)
        goto out;
    if (!(cb = fj_arena_calloc(x.a, l.g.n, sizeof *cb))) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rs = run_load(&l, fold_node, cb)) != FJ_OK)
        goto out;
    for (size_t bi = 0; bi < l.g.n; bi++) {
        const cbucket *c = &cb[bi];
        if (!c->nodes)
            continue;
        bool g = c->gpus > 0;
        fj_value v[21] = {
            fj_v_time(l.g.from + (int64_t)bi * l.g.step),
            fj_v_int(c->nodes),
            fj_v_int(c->cores),
            c->has_cpu && c->cpu_cap > 0 ? fj_v_real(c->cpu_busy / c->cpu_cap * 100.0) : fj_v_null(),
            max_or_null(&c->cpu_util_max),
            c->has_cpu ? fj_v_real(c->cpu_busy) : fj_v_null(),
            c->has_mem ? fj_v_int((int64_t)llround(c->mem_sum)) : fj_v_null(),
            max_int_or_null(&c->mem_max),
            avg_or_null(&c->load1),
            max_or_null(&c->load1_max),
            avg_or_null(&c->load5),
            avg_or_null(&c->load15),
            fj_v_int(c->gpus),
            g ? avg_or_null(&c->gpu_util) : fj_v_null(),
            g ? max_or_null(&c->gpu_util_max) : fj_v_null(),
            g ? fj_v_int((int64_t)llround(c->gpu_mem_sum)) : fj_v_null(),
            g ? max_int_or_null(&c->gpu_mem_max) : fj_v_null(),
            g ? fj_v_real(c->gpu_power_sum) : fj_v_null(),
            g ? max_or_null(&c->gpu_power_max) : fj_v_null(),
            g ? avg_or_null(&c->gpu_temp) : fj_v_null(),
            g ? max_or_null(&c->gpu_temp_max) : fj_v_null(),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
out:
    load_free(&l);
    return fj_sqq_end(&x, rs);
}

/* Per card: each wanted node's card readings in the window, by card, UUID and time, bucketed by
 * gpuload.h. */
fj_status fj_sq_q_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    sqlite3_stmt *st = NULL;
    fj_gl_series gs = {0};
    if ((rs = load_begin(&x, &l)) != FJ_OK || (rs = k->table(k, &fj_qt_gpu_load)) != FJ_OK)
        goto out;
    if ((rs = fj_gl_init(&gs, &l.g, k)) != FJ_OK) {
        rs = oom(&l);
        goto out;
    }
    if ((rs = fj_sqq_prepare(&x, "SELECT g.idx, u.s, s.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                 " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                                 " LEFT JOIN strings u ON u.id = g.uuid_id"
                                 " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3"
                                 " ORDER BY g.idx, u.s NULLS FIRST, s.time", &st)) != FJ_OK)
        goto out;
    for (size_t i = 0; rs == FJ_OK && i < l.n_ns; i++) {
        sqlite3_bind_int64(st, 1, l.ns[i].node_id);
        sqlite3_bind_int64(st, 2, l.from);
        sqlite3_bind_int64(st, 3, l.to);
        int r = SQLITE_DONE;
        while (rs == FJ_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
            double v[4];
            for (int c = 0; c < 4; c++)
                v[c] = sqlite3_column_type(st, c + 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c + 3);
            rs = fj_gl_add(&gs, l.ns[i].name, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
                           sqlite3_column_int64(st, 2), v[0], v[1], v[2], v[3]);
            if (rs == FJ_ENOMEM)
                rs = oom(&l);
        }
        sqlite3_reset(st);
        if (rs == FJ_OK && r != SQLITE_DONE)
            rs = fj_sqq_fail(&x, r, "gpu samples");
    }
    if (rs == FJ_OK)
        rs = fj_gl_flush(&gs);
out:
    fj_gl_free(&gs);
    sqlite3_finalize(st);
    load_free(&l);
    return fj_sqq_end(&x, rs);
}

/* The roll-up of (node, hour) as stored into *b and its last_time into *last; false when none. */
static fj_status stored_rollup(fj_sqq *x, sqlite3_stmt *st, int64_t node, fj_time hour, nbucket *b, fj_time *last,
                               bool *found)
{
    sqlite3_bind_int64(st, 1, node);
    sqlite3_bind_int64(st, 2, hour);
    int r = sqlite3_step(st);
    if ((*found = r == SQLITE_ROW)) {
        double v[FJ_LA_NCOLS];
        for (int c = 0; c < FJ_LA_NCOLS; c++)
            v[c] = sqlite3_column_double(st, c + 1);
        fj_la_from_row(b, v);
        *last = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return r == SQLITE_ROW || r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(x, r, "stored load roll-up");
}

/* Brings every (node, hour) of load_hourly_todo up to date with the query's own reading and
 * empties the table. Recomputed: a window of that hour, its first CPU interval opened by the
 * node's previous sample with counters, so the roll-up is what a query of that hour from the
 * samples answers. Appended (recompute 0: every new sample of the hour is later than the stored
 * roll-up's last_time): the samples after last_time, their first interval opened likewise, added
 * to the stored accumulators; the same figures up to the rounding of a sum taken in two parts.
 * Runs on the write connection inside the writer's transaction, after the buffered sample rows
 * went in. */
/* The drain's statements, prepared on first use and kept with the handle until
 * fj_sq_load_rollup_free: a write group drains whenever it adds samples, and preparing them for
 * every group was most of the roll-ups' writer cost at a steady rate (docs/benchmarks.md). */
struct fj_sq_rollup {
    loadctx l; /* only its statements are kept */
    sqlite3_stmt *todo, *get, *put, *del, *last, *clear;
};

enum { ROLLUP_NSTMTS = 13 };

static void rollup_stmts(struct fj_sq_rollup *r, sqlite3_stmt **all[ROLLUP_NSTMTS])
{
    sqlite3_stmt **p[ROLLUP_NSTMTS] = {&r->l.prev, &r->l.main, &r->l.gpu, &r->l.has_gpu, &r->l.count,
                                       &r->l.first, &r->l.last, &r->todo, &r->get, &r->put,
                                       &r->del, &r->last, &r->clear};
    memcpy(all, p, sizeof p);
}

void fj_sq_load_rollup_free(fj_store *s)
{
    struct fj_sq_rollup *r = s->rollup;
    if (!r)
        return;
    sqlite3_stmt **all[ROLLUP_NSTMTS];
    rollup_stmts(r, all);
    for (int i = 0; i < ROLLUP_NSTMTS; i++)
        sqlite3_finalize(*all[i]);
    fj_free(r);
    s->rollup = NULL;
}

static fj_status rollup_prepare(fj_sqq *x)
{
    fj_store *s = x->s;
    if (s->rollup)
        return FJ_OK;
    struct fj_sq_rollup *r = fj_calloc(1, sizeof *r);
    if (!r)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    s->rollup = r;
    r->l.x = x;
    fj_status rs;
    if ((rs = load_prepare(&r->l)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT node_id, hour, recompute FROM load_hourly_todo", &r->todo)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT last_time," FJ_LA_COLS_SQL " FROM load_hourly WHERE node_id = ?1 AND hour = ?2",
                             &r->get)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "INSERT OR REPLACE INTO load_hourly(node_id,hour,last_time," FJ_LA_COLS_SQL
                                ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             &r->put)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "DELETE FROM load_hourly WHERE node_id = ?1 AND hour = ?2", &r->del)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT max(time) FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3",
                             &r->last)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "DELETE FROM load_hourly_todo", &r->clear)) != FJ_OK) {
        fj_sq_load_rollup_free(s);
        return rs;
    }
    r->l.x = NULL; /* x is the caller's: only the statements are kept */
    return FJ_OK;
}

fj_status fj_sq_load_rollup_drain(fj_store *s, fj_err *err)
{
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_sqq x = {.s = s, .q = &q, .err = err};
    loadctx l;
    memset(&l, 0, sizeof l);
    l.x = &x;
    l.g.step = FJ_LA_ROLLUP_S;
    l.g.n = 1;
    l.b_hi = 1;
    nbucket b, old;
    nstate ns = {.b = &b};
    fj_status rs;
    if (!(x.a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if ((rs = rollup_prepare(&x)) != FJ_OK) {
        fj_arena_destroy(x.a);
        return rs;
    }
    struct fj_sq_rollup *cache = s->rollup;
    l.prev = cache->l.prev;
    l.main = cache->l.main;
    l.gpu = cache->l.gpu;
    l.has_gpu = cache->l.has_gpu;
    l.count = cache->l.count;
    l.first = cache->l.first;
    l.last = cache->l.last;
    sqlite3_stmt *todo = cache->todo, *get = cache->get, *put = cache->put, *del = cache->del, *last = cache->last;
    int r;
    while ((r = sqlite3_step(todo)) == SQLITE_ROW) {
        ns.node_id = sqlite3_column_int64(todo, 0);
        fj_time hour = sqlite3_column_int64(todo, 1), last_time = 0;
        bool found = false;
        if (!sqlite3_column_int(todo, 2) &&
            (rs = stored_rollup(&x, get, ns.node_id, hour, &old, &last_time, &found)) != FJ_OK)
            goto out;
        l.g.from = hour;
        l.from = found ? last_time + 1 : hour;
        l.to = hour + FJ_LA_ROLLUP_S - 1;
        if ((rs = node_alone(&l, &ns)) != FJ_OK)
            goto out;
        if (found) {
            fj_la_merge(&old, &b);
            b = old;
        }
        sqlite3_bind_int64(last, 1, ns.node_id);
        sqlite3_bind_int64(last, 2, hour);
        sqlite3_bind_int64(last, 3, l.to);
        int lr = sqlite3_step(last);
        last_time = lr == SQLITE_ROW ? sqlite3_column_int64(last, 0) : 0;
        sqlite3_reset(last);
        if (lr != SQLITE_ROW) {
            rs = fj_sqq_fail(&x, lr, "last sample of the hour");
            goto out;
        }
        sqlite3_stmt *st = b.samples ? put : del; /* no samples: the hour's rows went away */
        sqlite3_bind_int64(st, 1, ns.node_id);
        sqlite3_bind_int64(st, 2, hour);
        if (b.samples) {
            sqlite3_bind_int64(st, 3, last_time);
            double v[FJ_LA_NCOLS];
            fj_la_to_row(&b, v);
            for (int c = 0; c < FJ_LA_NCOLS; c++) {
                if (fj_la_col_is_int(c))
                    sqlite3_bind_int64(st, c + 4, (int64_t)v[c]);
                else
                    sqlite3_bind_double(st, c + 4, v[c]);
            }
        }
        int w = sqlite3_step(st);
        sqlite3_reset(st);
        if (w != SQLITE_DONE) {
            rs = fj_sqq_fail(&x, w, "write load roll-up");
            goto out;
        }
    }
    if (r != SQLITE_DONE) {
        rs = fj_sqq_fail(&x, r, "load roll-ups to do");
        goto out;
    }
    sqlite3_reset(todo);
    if ((r = sqlite3_step(cache->clear)) != SQLITE_DONE)
        rs = fj_sqq_fail(&x, r, "load roll-ups done");
out:;
    /* kept for the next group: reset, so no statement holds a read snapshot */
    sqlite3_stmt **all[ROLLUP_NSTMTS];
    rollup_stmts(cache, all);
    for (int i = 0; i < ROLLUP_NSTMTS; i++) {
        sqlite3_reset(*all[i]);
        sqlite3_clear_bindings(*all[i]);
    }
    fj_free(ns.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
