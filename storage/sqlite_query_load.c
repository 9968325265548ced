/* sqlite_query_load.c — node and cluster load of the SQLite backend: each node's samples in the
 * window (one index range on samples(node_id, time), plus the sample before the window for the
 * first CPU interval), bucketed in C. CPU utilisation comes from the cumulative per-core counters
 * (qmath.h: a decreasing counter is no use, a duplicate timestamp no interval); the GPU rows are
 * read only for nodes that have reported GPUs. Cluster load folds the nodes' buckets. */
#include "sqlite_query_int.h"

#include "alloc.h"
#include "qmath.h"

#include <math.h>
#include <string.h>

typedef struct nbucket {
    int64_t samples, cores, gpus;
    fj_qm_acc cpu_util, cpu_cores; /* weighted by interval seconds */
    fj_qm_acc mem, load1, load5, load15;
    fj_qm_acc gpu_util, gpu_util_card_max, gpu_mem, gpu_power, gpu_temp, gpu_temp_card_max;
} nbucket;

typedef struct loadctx {
    fj_sqq *x;
    fj_qm_grid g;
    fj_time from, to;
    sqlite3_stmt *prev, *main, *gpu, *has_gpu;
    uint64_t *buf[2]; /* per-core counters: the interval's start and end sample, by index */
    size_t cap;
    nbucket *b;       /* g.n buckets of the node being read */
} loadctx;

static fj_status ensure_cap(loadctx *l, size_t n)
{
    if (n <= l->cap)
        return FJ_OK;
    size_t nc = n < 256 ? 256 : n;
    for (int i = 0; i < 2; i++) {
        uint64_t *a = fj_realloc(l->buf[i], nc * sizeof *a);
        if (!a)
            return fj_err_set(l->x->err, FJ_ENOMEM, NULL, "out of memory");
        l->buf[i] = a;
    }
    l->cap = nc;
    return FJ_OK;
}

/* Unpacks the cpus blob in column col of st into buf[which]; *n is the number of cores (0 when
 * absent or malformed: such a sample has no CPU figure). */
static fj_status unpack(loadctx *l, sqlite3_stmt *st, int col, int which, size_t *n)
{
    *n = 0;
    const unsigned char *p = sqlite3_column_blob(st, col);
    size_t len = (size_t)sqlite3_column_bytes(st, col);
    if (!p || !len)
        return FJ_OK;
    fj_status rs = ensure_cap(l, len);
    if (rs != FJ_OK)
        return rs;
    size_t got = fj_qm_varints(p, len, l->buf[which], l->cap);
    *n = got == (size_t)-1 ? 0 : got;
    return FJ_OK;
}

static fj_status load_prepare(loadctx *l)
{
    fj_sqq *x = l->x;
    fj_status rs;
    if ((rs = fj_sqq_prepare(x, "SELECT time, boot, cpus FROM samples WHERE node_id = ?1 AND time < ?2"
                                " ORDER BY time DESC LIMIT 1", &l->prev)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                                " WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
                             &l->main)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT s.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                                " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3 ORDER BY s.time, g.idx",
                             &l->gpu)) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = ?1", &l->has_gpu)) !=
            FJ_OK)
        return rs;
    return FJ_OK;
}

static void load_free(loadctx *l)
{
    sqlite3_finalize(l->prev);
    sqlite3_finalize(l->main);
    sqlite3_finalize(l->gpu);
    sqlite3_finalize(l->has_gpu);
    fj_free(l->buf[0]);
    fj_free(l->buf[1]);
}

/* One GPU sample (all cards of one sample time) into its bucket. */
static void gpu_sample(loadctx *l, fj_time t, int64_t cards, double util_sum, double util_max, double mem,
                       double power, double temp_sum, double temp_max)
{
    long bi = fj_qm_bucket(&l->g, t);
    if (bi < 0 || cards == 0)
        return;
    nbucket *b = &l->b[bi];
    if (cards > b->gpus)
        b->gpus = cards;
    fj_qm_add(&b->gpu_util, util_sum / (double)cards);
    fj_qm_add(&b->gpu_util_card_max, util_max);
    fj_qm_add(&b->gpu_mem, mem);
    fj_qm_add(&b->gpu_power, power);
    fj_qm_add(&b->gpu_temp, temp_sum / (double)cards);
    fj_qm_add(&b->gpu_temp_card_max, temp_max);
}

/* Fills l->b (zeroed first) with the buckets of one node. */
static fj_status node_buckets(loadctx *l, int64_t node_id)
{
    fj_sqq *x = l->x;
    memset(l->b, 0, l->g.n * sizeof *l->b);
    fj_status rs;
    int r;

    /* the sample before the window opens the first interval */
    bool have_prev = false;
    fj_time t0 = 0, boot0 = 0;
    size_t n0 = 0;
    int pi = 0; /* buf[pi] holds the interval's start */
    sqlite3_bind_int64(l->prev, 1, node_id);
    sqlite3_bind_int64(l->prev, 2, l->from);
    r = sqlite3_step(l->prev);
    if (r == SQLITE_ROW) {
        t0 = sqlite3_column_int64(l->prev, 0);
        boot0 = sqlite3_column_int64(l->prev, 1);
        if ((rs = unpack(l, l->prev, 2, pi, &n0)) != FJ_OK) {
            sqlite3_reset(l->prev);
            return rs;
        }
        have_prev = n0 > 0;
    }
    sqlite3_reset(l->prev);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return fj_sqq_fail(x, r, "previous sample");

    sqlite3_stmt *st = l->main;
    sqlite3_bind_int64(st, 1, node_id);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        fj_time t = sqlite3_column_int64(st, 0), boot = sqlite3_column_int64(st, 1);
        long bi = fj_qm_bucket(&l->g, t);
        size_t n1 = 0;
        if ((rs = unpack(l, st, 6, 1 - pi, &n1)) != FJ_OK) {
            sqlite3_reset(st);
            return rs;
        }
        if (bi >= 0) {
            nbucket *b = &l->b[bi];
            b->samples++;
            if ((int64_t)n1 > b->cores)
                b->cores = (int64_t)n1;
            fj_qm_cpu c;
            if (have_prev && n1 && fj_qm_cpu_interval(t0, boot0, l->buf[pi], n0, t, boot, l->buf[1 - pi], n1, &c)) {
                fj_qm_addw(&b->cpu_util, fj_qm_cpu_util(&c), c.seconds);
                fj_qm_addw(&b->cpu_cores, fj_qm_cpu_cores(&c), c.seconds);
            }
            if (sqlite3_column_type(st, 2) != SQLITE_NULL)
                fj_qm_add(&b->mem, sqlite3_column_double(st, 2));
            if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
                fj_qm_add(&b->load1, sqlite3_column_double(st, 3));
                fj_qm_add(&b->load5, sqlite3_column_double(st, 4));
                fj_qm_add(&b->load15, sqlite3_column_double(st, 5));
            }
        }
        /* this sample starts the next interval; one without counters, or a repeated time, does not */
        if (n1 && (!have_prev || t > t0)) {
            t0 = t;
            boot0 = boot;
            n0 = n1;
            pi = 1 - pi;
            have_prev = true;
        }
    }
    sqlite3_reset(st);
    if (r != SQLITE_DONE)
        return fj_sqq_fail(x, r, "samples");

    /* GPUs: only for nodes whose sysinfo reports cards, or that never sent a sysinfo */
    sqlite3_bind_int64(l->has_gpu, 1, node_id);
    r = sqlite3_step(l->has_gpu);
    bool gpus = r == SQLITE_ROW &&
                (sqlite3_column_int64(l->has_gpu, 0) == 0 || sqlite3_column_int64(l->has_gpu, 1) > 0);
    sqlite3_reset(l->has_gpu);
    if (r != SQLITE_ROW)
        return fj_sqq_fail(x, r, "sysinfo gpus");
    if (!gpus)
        return FJ_OK;
    st = l->gpu;
    sqlite3_bind_int64(st, 1, node_id);
    sqlite3_bind_int64(st, 2, l->from);
    sqlite3_bind_int64(st, 3, l->to);
    fj_time cur = 0;
    int64_t cards = 0;
    double usum = 0, umax = 0, mem = 0, power = 0, tsum = 0, tmax = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        fj_time t = sqlite3_column_int64(st, 0);
        if (t != cur) {
            gpu_sample(l, cur, cards, usum, umax, mem, power, tsum, tmax);
            cur = t;
            cards = 0;
            usum = umax = mem = power = tsum = tmax = 0;
        }
        double u = sqlite3_column_double(st, 1), tc = sqlite3_column_double(st, 4);
        if (cards == 0 || u > umax)
            umax = u;
        if (cards == 0 || tc > tmax)
            tmax = tc;
        usum += u;
        tsum += tc;
        mem += sqlite3_column_double(st, 2);
        power += sqlite3_column_double(st, 3);
        cards++;
    }
    gpu_sample(l, cur, cards, usum, umax, mem, power, tsum, tmax);
    sqlite3_reset(st);
    return r == SQLITE_DONE ? FJ_OK : fj_sqq_fail(x, r, "gpu samples");
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

/* Starts a load query: cluster, nodes, window, grid, statements. */
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
    l->b = fj_arena_calloc(x->a, l->g.n, sizeof *l->b);
    if (!l->b)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    return load_prepare(l);
}

/* Node order for output: by name. */
static int cmp_idx_name(const void *a, const void *b, void *ctx)
{
    const fj_sqq *x = ctx;
    return strcmp(x->nodes.names[*(const size_t *)a], x->nodes.names[*(const size_t *)b]);
}

/* A small insertion-free sort with context (qsort_r is a GNU extension; keep portable). */
static void sort_idx(size_t *v, size_t n, const fj_sqq *x)
{
    for (size_t i = 1; i < n; i++) {
        size_t t = v[i], j = i;
        while (j > 0 && cmp_idx_name(&v[j - 1], &t, (void *)x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = t;
    }
}

static fj_status wanted_by_name(fj_sqq *x, size_t **out, size_t *n)
{
    size_t *v = fj_arena_alloc(x->a, (x->nodes.n + 1) * sizeof *v);
    if (!v)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < x->nodes.n; i++)
        if (x->nodes.want[i])
            v[k++] = i;
    sort_idx(v, k, x);
    *out = v;
    *n = k;
    return FJ_OK;
}

fj_status fj_sq_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    loadctx l;
    size_t *order = NULL, n = 0;
    if ((rs = load_begin(&x, &l)) != FJ_OK || (rs = wanted_by_name(&x, &order, &n)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_node_load)) != FJ_OK)
        goto out;
    for (size_t oi = 0; oi < n; oi++) {
        size_t ni = order[oi];
        if ((rs = node_buckets(&l, x.nodes.ids[ni])) != FJ_OK)
            goto out;
        for (size_t bi = 0; bi < l.g.n; bi++) {
            const nbucket *b = &l.b[bi];
            if (!b->samples)
                continue;
            fj_value v[22] = {
                fj_v_text(x.nodes.names[ni]),
                fj_v_time(l.g.from + (int64_t)bi * l.g.step),
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
            if ((rs = k->row(k, v)) != FJ_OK)
                goto out;
        }
    }
out:
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
    for (size_t ni = 0; ni < x.nodes.n; ni++) {
        if (!x.nodes.want[ni])
            continue;
        if ((rs = node_buckets(&l, x.nodes.ids[ni])) != FJ_OK)
            goto out;
        for (size_t bi = 0; bi < l.g.n; bi++)
            if (l.b[bi].samples)
                fold(&cb[bi], &l.b[bi]);
    }
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
