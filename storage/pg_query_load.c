/* pg_query_load.c — node and cluster load of the PostgreSQL backend, bucketed in C: a port of
 * sqlite_query_load.c (see there for the arithmetic). Every node is read by its index range on
 * samples(node_id, time) and its GPU rows; SQLite's one-pass read of a rowid range has no
 * counterpart here (PostgreSQL has no rowid order to rely on). Cluster load folds the nodes'
 * buckets. Hourly roll-ups answer the buckets of whole hours inside the window, as in SQLite, and
 * are recomputed here (fj_pg_load_rollup_drain) with the same per-node reading. */
#include "pg_query_int.h"

#include "alloc.h"
#include "gpuload.h"
#include "loadagg.h"
#include "qmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef fj_la_bucket nbucket;

/* One node being read. */
typedef struct nstate {
    int64_t node_id;
    const char *name;
    nbucket *b;        /* g.n buckets */
    fj_qm_cpustate cpu; /* counters of the next interval's start */
} nstate;

typedef struct loadctx {
    fj_pgq *x;
    fj_qm_grid g;
    fj_time from, to;
    fj_pgs *prev, *main, *gpu, *has_gpu;
    size_t b_lo, b_hi; /* the buckets being read: [from, to] covers exactly them */
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
    fj_pgs *st = l->prev;
    fj_pgs_bind_int(st, 1, ns->node_id);
    fj_pgs_bind_int(st, 2, l->from);
    int r = fj_pgs_step(st);
    fj_status rs = FJ_OK;
    if (r == FJ_PGS_ROW) {
        fj_qm_cpu cpu;
        bool ok;
        size_t len;
        const unsigned char *blob = fj_pgs_blob(st, 2, &len);
        rs = cpu_step(l, ns, fj_pgs_int(st, 0), fj_pgs_int(st, 1), blob, len, &cpu, &ok);
    }
    fj_pgs_reset(st);
    if (rs == FJ_OK && r != FJ_PGS_ROW && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(l->x, r, "previous sample");
    return rs;
}

/* One sample row of a node: columns time, boot, used_memory_kb, load1, load5, load15, cpus from
 * column `c` of st on. Rows of one node must come in time order. */
static fj_status node_row(loadctx *l, nstate *ns, fj_pgs *st, int c)
{
    fj_time t = fj_pgs_int(st, c), boot = fj_pgs_int(st, c + 1);
    fj_qm_cpu cpu;
    bool ok;
    size_t len;
    const unsigned char *blob = fj_pgs_blob(st, c + 6, &len);
    fj_status rs = cpu_step(l, ns, t, boot, blob, len, &cpu, &ok);
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
    if (!fj_pgs_isnull(st, c + 2))
        fj_qm_add(&b->mem, fj_pgs_double(st, c + 2));
    if (!fj_pgs_isnull(st, c + 3)) {
        fj_qm_add(&b->load1, fj_pgs_double(st, c + 3));
        fj_qm_add(&b->load5, fj_pgs_double(st, c + 4));
        fj_qm_add(&b->load15, fj_pgs_double(st, c + 5));
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
    fj_pgs *st = l->main;
    fj_pgs_bind_int(st, 1, ns->node_id);
    fj_pgs_bind_int(st, 2, l->from);
    fj_pgs_bind_int(st, 3, l->to);
    int r;
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW)
        if ((rs = node_row(l, ns, st, 0)) != FJ_OK)
            break;
    fj_pgs_reset(st);
    if (rs != FJ_OK)
        return rs;
    if (r != FJ_PGS_DONE)
        return fj_pgq_fail(l->x, r, "samples");

    fj_pgs_bind_int(l->has_gpu, 1, ns->node_id);
    r = fj_pgs_step(l->has_gpu);
    bool gpus = r == FJ_PGS_ROW &&
                (fj_pgs_int(l->has_gpu, 0) == 0 || fj_pgs_int(l->has_gpu, 1) > 0);
    fj_pgs_reset(l->has_gpu);
    if (r != FJ_PGS_ROW)
        return fj_pgq_fail(l->x, r, "sysinfo gpus");
    if (!gpus)
        return FJ_OK;
    st = l->gpu;
    fj_pgs_bind_int(st, 1, ns->node_id);
    fj_pgs_bind_int(st, 2, l->from);
    fj_pgs_bind_int(st, 3, l->to);
    gsum g = {0};
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        fj_time t = fj_pgs_int(st, 0);
        if (t != g.t)
            gsum_flush(l, ns, &g);
        g.t = t;
        gsum_add(&g, fj_pgs_double(st, 1), fj_pgs_double(st, 2), fj_pgs_double(st, 3),
                 fj_pgs_double(st, 4));
    }
    gsum_flush(l, ns, &g);
    fj_pgs_reset(st);
    return r == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(l->x, r, "gpu samples");
}

typedef fj_status (*node_done_fn)(loadctx *l, nstate *ns, void *ctx);

/* --- hourly roll-ups (loadagg.h, migrations/postgres/0004); as in sqlite_query_load.c -------- */

/* The whole hours [*r0, *r1) inside the window that roll-ups answer, when the width is whole
 * hours and no roll-up is pending; the rest of the window is read from samples. */
static fj_status rollup_span(loadctx *l, fj_time *r0, fj_time *r1)
{
    *r0 = *r1 = 0;
    fj_time a = fj_la_hour(l->from + FJ_LA_ROLLUP_S - 1), b = fj_la_hour(l->to + 1);
    if (l->g.step % FJ_LA_ROLLUP_S || b <= a)
        return FJ_OK;
    fj_pgs *st;
    fj_status rs = fj_pgq_prepare(l->x, "SELECT 1 FROM load_hourly_todo LIMIT 1", &st);
    if (rs != FJ_OK)
        return rs;
    int r = fj_pgs_step(st);
    fj_pgs_finalize(st);
    if (r == FJ_PGS_DONE) {
        *r0 = a;
        *r1 = b;
    }
    return r == FJ_PGS_ROW || r == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(l->x, r, "load roll-ups pending");
}

/* Reads a node's samples of [from, to], a part of one bucket, on a grid of that one bucket (so
 * its other buckets are left alone) and adds them to that bucket. */
static fj_status read_edge(loadctx *l, nstate *ns, fj_time from, fj_time to)
{
    if (from > to)
        return FJ_OK;
    fj_qm_grid g = l->g;
    fj_time lfrom = l->from, lto = l->to;
    long bi = fj_qm_bucket(&g, from);
    if (bi < 0) /* from is inside the window, so never */
        return fj_err_set(l->x->err, FJ_EINTERNAL, NULL, "load: edge outside the grid");
    nbucket edge, *keep = ns->b;
    l->g = (fj_qm_grid){.from = g.from + bi * g.step, .step = g.step, .n = 1};
    l->b_lo = 0;
    l->b_hi = 1;
    l->from = from;
    l->to = to;
    ns->b = &edge;
    fj_status rs = node_alone(l, ns);
    ns->b = keep;
    if (rs == FJ_OK)
        fj_la_merge(&ns->b[bi], &edge);
    l->g = g;
    l->b_hi = g.n;
    l->from = lfrom;
    l->to = lto;
    return rs;
}

/* Node by node: roll-ups for the hours [r0, r1), samples for the rest of the window. */
static fj_status run_rollup(loadctx *l, fj_time r0, fj_time r1, node_done_fn done, void *ctx)
{
    fj_pgq *x = l->x;
    nbucket *mem = fj_calloc(l->g.n, sizeof *mem);
    if (!mem)
        return oom(l);
    fj_pgs *st = NULL;
    fj_status rs = fj_pgq_prepare(x, "SELECT hour," FJ_LA_COLS_SQL " FROM load_hourly"
                                     " WHERE node_id = $1 AND hour >= $2 AND hour < $3", &st);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++) {
        nstate *ns = &l->ns[i];
        ns->b = mem;
        memset(mem, 0, l->g.n * sizeof *mem);
        if ((rs = read_edge(l, ns, l->from, r0 - 1)) != FJ_OK || (rs = read_edge(l, ns, r1, l->to)) != FJ_OK)
            break;
        fj_pgs_bind_int(st, 1, ns->node_id);
        fj_pgs_bind_int(st, 2, r0);
        fj_pgs_bind_int(st, 3, r1);
        int r;
        while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
            long bi = fj_qm_bucket(&l->g, fj_pgs_int(st, 0));
            if (bi < 0)
                continue;
            double v[FJ_LA_NCOLS];
            for (int c = 0; c < FJ_LA_NCOLS; c++)
                v[c] = fj_pgs_double(st, c + 1);
            nbucket h;
            fj_la_from_row(&h, v);
            fj_la_merge(&mem[bi], &h);
        }
        fj_pgs_reset(st);
        if (r != FJ_PGS_DONE)
            rs = fj_pgq_fail(x, r, "load roll-ups");
        else
            rs = done(l, ns, ctx);
    }
    fj_pgs_finalize(st);
    for (size_t i = 0; i < l->n_ns; i++)
        fj_free(l->ns[i].cpu.c);
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
    nbucket *mem = fj_calloc(l->g.n, sizeof *mem);
    if (!mem)
        return oom(l);
    for (size_t i = 0; i < l->n_ns; i++)
        l->ns[i].b = mem;
    for (size_t i = 0; i < l->n_ns; i++) {
        nstate *ns = &l->ns[i];
        if ((rs = node_alone(l, ns)) != FJ_OK)
            goto out;
        if ((rs = done(l, ns, ctx)) != FJ_OK)
            goto out;
    }
    rs = FJ_OK;
out:
    for (size_t i = 0; i < l->n_ns; i++)
        fj_free(l->ns[i].cpu.c);
    fj_free(mem);
    return rs;
}

static fj_status load_prepare(loadctx *l)
{
    fj_pgq *x = l->x;
    fj_status rs;
    /* the latest sample with counters, as in sqlite_query_load.c */
    if ((rs = fj_pgq_prepare(x, "SELECT time, boot, cpus FROM samples WHERE node_id = $1 AND time < $2"
                                " AND cpus IS NOT NULL ORDER BY time DESC LIMIT 1", &l->prev)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                                " WHERE node_id = $1 AND time >= $2 AND time <= $3 ORDER BY time",
                             &l->main)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                " FROM sample_gpus g WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                " ORDER BY g.time, g.idx",
                             &l->gpu)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = $1", &l->has_gpu)) !=
            FJ_OK)
        return rs;
    return FJ_OK;
}

static void load_free(loadctx *l)
{
    fj_pgs_finalize(l->prev);
    fj_pgs_finalize(l->main);
    fj_pgs_finalize(l->gpu);
    fj_pgs_finalize(l->has_gpu);
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
static fj_status load_begin(fj_pgq *x, loadctx *l)
{
    fj_query *q = x->q;
    memset(l, 0, sizeof *l);
    l->x = x;
    fj_status rs;
    if ((rs = fj_pgq_cluster(x)) != FJ_OK || (rs = fj_pgq_load_nodes(x)) != FJ_OK)
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

fj_status fj_pg_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    if ((rs = load_begin(&x, &l)) == FJ_OK && (rs = k->table(k, &fj_qt_node_load)) == FJ_OK)
        rs = run_load(&l, emit_node, k);
    load_free(&l);
    return fj_pgq_end(&x, rs);
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

fj_status fj_pg_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
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
    return fj_pgq_end(&x, rs);
}

/* Per card: each wanted node's card readings in the window, by card, UUID and time, bucketed by
 * gpuload.h. */
fj_status fj_pg_q_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    fj_pgs *st = NULL;
    fj_gl_series gs = {0};
    if ((rs = load_begin(&x, &l)) != FJ_OK || (rs = k->table(k, &fj_qt_gpu_load)) != FJ_OK)
        goto out;
    if ((rs = fj_gl_init(&gs, &l.g, k)) != FJ_OK) {
        rs = oom(&l);
        goto out;
    }
    if ((rs = fj_pgq_prepare(&x, "SELECT g.idx, u.s, g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                 " FROM sample_gpus g LEFT JOIN strings u ON u.id = g.uuid_id"
                                 " WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                 " ORDER BY g.idx, u.s NULLS FIRST, g.time", &st)) != FJ_OK)
        goto out;
    for (size_t i = 0; rs == FJ_OK && i < l.n_ns; i++) {
        fj_pgs_bind_int(st, 1, l.ns[i].node_id);
        fj_pgs_bind_int(st, 2, l.from);
        fj_pgs_bind_int(st, 3, l.to);
        int r = FJ_PGS_DONE;
        while (rs == FJ_OK && (r = fj_pgs_step(st)) == FJ_PGS_ROW) {
            double v[4];
            for (int c = 0; c < 4; c++)
                v[c] = fj_pgs_isnull(st, c + 3) ? NAN : fj_pgs_double(st, c + 3);
            rs = fj_gl_add(&gs, l.ns[i].name, fj_pgs_int(st, 0), fj_pgs_text(st, 1), fj_pgs_int(st, 2), v[0], v[1],
                           v[2], v[3]);
            if (rs == FJ_ENOMEM)
                rs = oom(&l);
        }
        fj_pgs_reset(st);
        if (rs == FJ_OK && r != FJ_PGS_DONE)
            rs = fj_pgq_fail(&x, r, "gpu samples");
    }
    if (rs == FJ_OK)
        rs = fj_gl_flush(&gs);
out:
    fj_gl_free(&gs);
    fj_pgs_finalize(st);
    load_free(&l);
    return fj_pgq_end(&x, rs);
}

/* Recomputes the roll-up of every (node, hour) in load_hourly_todo with the query's own reading
 * and empties the table; on the write connection, inside the writer's transaction. */
fj_status fj_pg_load_rollup_drain(fj_store *s, fj_err *err)
{
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_pgq x = {.s = s, .q = &q, .err = err};
    loadctx l;
    memset(&l, 0, sizeof l);
    l.x = &x;
    l.g.step = FJ_LA_ROLLUP_S;
    l.g.n = 1;
    l.b_hi = 1;
    nbucket b;
    nstate ns = {.b = &b};
    fj_pgs *todo = NULL, *put = NULL, *clear = NULL;
    char sql[1024];
    /* last_time is kept for SQLite's appending; this backend always recomputes the hour */
    int w = snprintf(sql, sizeof sql,
                     "INSERT INTO load_hourly(node_id,hour,last_time," FJ_LA_COLS_SQL ") VALUES($1,$2,"
                     "(SELECT max(time) FROM samples WHERE node_id = $1 AND time >= $2 AND time < $2 + 3600)");
    for (int c = 0; c < FJ_LA_NCOLS && w > 0 && (size_t)w < sizeof sql; c++)
        w += snprintf(sql + w, sizeof sql - (size_t)w, ",$%d", c + 3);
    if (w <= 0 || (size_t)w + 2 > sizeof sql)
        return fj_err_set(err, FJ_EINTERNAL, "db", "roll-up statement too long");
    memcpy(sql + w, ")", 2);
    fj_status rs;
    if (!(x.a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if ((rs = load_prepare(&l)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT node_id, hour FROM load_hourly_todo", &todo)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, sql, &put)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "DELETE FROM load_hourly h USING load_hourly_todo t"
                                 " WHERE h.node_id = t.node_id AND h.hour = t.hour", &clear)) != FJ_OK)
        goto out;
    int r = fj_pgs_step(clear); /* each listed roll-up is written anew below, or not at all */
    if (r != FJ_PGS_DONE && r != FJ_PGS_ROW) {
        rs = fj_pgq_fail(&x, r, "clear load roll-ups");
        goto out;
    }
    while ((r = fj_pgs_step(todo)) == FJ_PGS_ROW) {
        ns.node_id = fj_pgs_int(todo, 0);
        l.g.from = l.from = fj_pgs_int(todo, 1);
        l.to = l.from + FJ_LA_ROLLUP_S - 1;
        if ((rs = node_alone(&l, &ns)) != FJ_OK)
            goto out;
        if (!b.samples) /* the hour's samples went away */
            continue;
        double v[FJ_LA_NCOLS];
        fj_la_to_row(&b, v);
        fj_pgs_bind_int(put, 1, ns.node_id);
        fj_pgs_bind_int(put, 2, l.from);
        for (int c = 0; c < FJ_LA_NCOLS; c++) {
            if (fj_la_col_is_int(c))
                fj_pgs_bind_int(put, c + 3, (int64_t)v[c]);
            else
                fj_pgs_bind_real(put, c + 3, v[c]);
        }
        int pr = fj_pgs_step(put);
        fj_pgs_reset(put);
        if (pr != FJ_PGS_DONE && pr != FJ_PGS_ROW) {
            rs = fj_pgq_fail(&x, pr, "write load roll-up");
            goto out;
        }
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "load roll-ups to do");
        goto out;
    }
    rs = fj_pg_exec(s, "DELETE FROM load_hourly_todo", "load roll-ups done", err);
out:
    fj_pgs_finalize(todo);
    fj_pgs_finalize(put);
    fj_pgs_finalize(clear);
    load_free(&l);
    fj_free(ns.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
