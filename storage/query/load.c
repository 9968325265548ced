/* storage/query/load.c — the load queries every backend shares (storage/query/load.h). CPU utilisation comes from
 * the cumulative per-core counters (storage/query/qmath.h: a decreasing counter is no use, a duplicate timestamp
 * no interval); the sample before the window opens the first interval. Each node is bucketed on
 * its own (storage/query/loadagg.h) and answered or folded into the cluster's buckets before the next one is
 * read, unless a backend's bulk reader fills all nodes at once. Hourly roll-ups (load_hourly)
 * answer the whole hours inside the window when the bucket width is whole hours; the writers keep
 * them with this file's per-node reading (fj_qload_read_hour), so either way of answering gives
 * the same figures. */
#include "storage/query/load.h"

#include "alloc.h"
#include "storage/query/gpuload.h"
#include "storage/core/store_query.h"
#include "storage/query/value.h"

#include <math.h>
#include <string.h>

static fj_status oom(const fj_qload *l)
{
    return fj_err_set(l->e.err, FJ_ENOMEM, NULL, "out of memory");
}

fj_status fj_qload_begin(fj_qload *l, const fj_qenv *e)
{
    fj_query *q = e->q;
    memset(l, 0, sizeof *l);
    l->e = *e;
    l->to = q->to ? q->to : q->now;
    l->from = q->from ? q->from : l->to - 86400;
    if (l->from > l->to)
        return fj_err_set(e->err, FJ_EINVAL, "from", "parameter 'from': after 'to'");
    int64_t step = q->bucket_s > 0 ? q->bucket_s : fj_qm_default_bucket(l->from, l->to);
    if (fj_qm_grid_make(l->from, l->to, step, FJ_QM_MAX_BUCKETS, &l->g) != FJ_OK)
        return fj_err_set(e->err, FJ_EINVAL, "bucket", "parameter 'bucket': more than %d buckets",
                          FJ_QM_MAX_BUCKETS);
    q->from = l->from; /* what was used, for the answer */
    q->to = l->to;
    q->bucket_s = step;
    l->b_lo = 0;
    l->b_hi = l->g.n;
    size_t *order, n;
    fj_status rs = fj_qenv_wanted_by_name(e, &order, &n);
    if (rs != FJ_OK)
        return rs;
    if (!(l->ns = fj_arena_calloc(e->a, n + 1, sizeof *l->ns)))
        return oom(l);
    for (size_t i = 0; i < n; i++) {
        l->ns[i].id = e->nodes->ids[order[i]];
        l->ns[i].name = e->nodes->names[order[i]];
    }
    l->n_ns = n;
    return FJ_OK;
}

/* --- one node's samples ------------------------------------------------------------------------ */

/* Room in the node's counter storage for a blob of len bytes (at most len counters). */
static fj_status cpu_room(const fj_qload *l, fj_qload_node *n, size_t len)
{
    if (len <= n->cpu.cap)
        return FJ_OK;
    size_t nc = len < 128 ? 128 : len;
    uint64_t *v = fj_realloc(n->cpu.c, nc * sizeof *v);
    if (!v)
        return oom(l);
    n->cpu.c = v;
    n->cpu.cap = nc;
    return FJ_OK;
}

/* Feeds a sample's counters to the node's CPU state; *ok when they formed an interval. */
static fj_status cpu_step(const fj_qload *l, fj_qload_node *n, fj_time t, fj_time boot, const unsigned char *blob,
                          size_t len, fj_qm_cpu *cpu, bool *ok)
{
    *ok = false;
    if (!blob || !len)
        return FJ_OK;
    fj_status rs = cpu_room(l, n, len);
    if (rs == FJ_OK)
        *ok = fj_qm_cpu_step(&n->cpu, t, boot, blob, len, cpu) == 1; /* malformed: no figure */
    return rs;
}

static void bind_node_window(const fj_qrows *st, int64_t node, fj_time from, fj_time to)
{
    fj_qr_bind(st, 1, node);
    fj_qr_bind(st, 2, from);
    fj_qr_bind(st, 3, to);
}

fj_status fj_qload_node_start(fj_qload *l, fj_qload_node *n)
{
    memset(n->b + l->b_lo, 0, (l->b_hi - l->b_lo) * sizeof *n->b);
    n->cpu.have = false;
    n->cpu.n = 0;
    const fj_qrows *st = &l->st.prev;
    fj_qr_bind(st, 1, n->id);
    fj_qr_bind(st, 2, l->from);
    bool row = false;
    fj_status rs = fj_qr_step(st, "previous sample", &row);
    if (rs == FJ_OK && row) {
        fj_qm_cpu cpu;
        bool ok;
        size_t len;
        const unsigned char *blob = st->ops->blob(st, 2, &len);
        rs = cpu_step(l, n, fj_qr_i64(st, 0), fj_qr_i64(st, 1), blob, len, &cpu, &ok);
    }
    fj_qr_reset(st);
    return rs;
}

fj_status fj_qload_add_sample(fj_qload *l, fj_qload_node *n, const fj_qload_sample *s)
{
    fj_qm_cpu cpu;
    bool ok;
    fj_status rs = cpu_step(l, n, s->t, s->boot, s->cpus, s->cpus_len, &cpu, &ok);
    if (rs != FJ_OK)
        return rs;
    long bi = fj_qm_bucket(&l->g, s->t);
    if (bi < 0)
        return FJ_OK;
    fj_loadagg_bucket *b = &n->b[bi];
    b->samples++;
    if (n->cpu.have && n->cpu.t == s->t && (int64_t)n->cpu.n > b->cores)
        b->cores = (int64_t)n->cpu.n;
    if (ok) {
        fj_qm_addw(&b->cpu_util, fj_qm_cpu_util(&cpu), cpu.seconds);
        fj_qm_addw(&b->cpu_cores, fj_qm_cpu_cores(&cpu), cpu.seconds);
    }
    if (s->has_mem)
        fj_qm_add(&b->mem, s->mem_kb);
    if (s->has_load) {
        fj_qm_add(&b->load1, s->load1);
        fj_qm_add(&b->load5, s->load5);
        fj_qm_add(&b->load15, s->load15);
    }
    return FJ_OK;
}

void fj_qload_card_add(fj_qload_cards *c, double util, double mem, double power, double temp)
{
    if (c->n == 0 || util > c->util_max)
        c->util_max = util;
    if (c->n == 0 || temp > c->temp_max)
        c->temp_max = temp;
    c->util_sum += util;
    c->temp_sum += temp;
    c->mem += mem;
    c->power += power;
    c->n++;
}

void fj_qload_cards_flush(const fj_qload *l, fj_qload_node *n, fj_qload_cards *c)
{
    long bi = c->n ? fj_qm_bucket(&l->g, c->t) : -1;
    if (bi >= 0) {
        fj_loadagg_bucket *b = &n->b[bi];
        if (c->n > b->gpus)
            b->gpus = c->n;
        fj_qm_add(&b->gpu_util, c->util_sum / (double)c->n);
        fj_qm_add(&b->gpu_util_card_max, c->util_max);
        fj_qm_add(&b->gpu_mem, c->mem);
        fj_qm_add(&b->gpu_power, c->power);
        fj_qm_add(&b->gpu_temp, c->temp_sum / (double)c->n);
        fj_qm_add(&b->gpu_temp_card_max, c->temp_max);
    }
    memset(c, 0, sizeof *c);
}

/* A row of statement samples. */
static void read_sample(const fj_qrows *st, fj_qload_sample *s)
{
    s->t = fj_qr_i64(st, 0);
    s->boot = fj_qr_i64(st, 1);
    s->cpus = st->ops->blob(st, 6, &s->cpus_len);
    s->has_mem = !fj_qr_null(st, 2);
    s->mem_kb = s->has_mem ? fj_qr_dbl(st, 2) : 0;
    s->has_load = !fj_qr_null(st, 3);
    s->load1 = s->has_load ? fj_qr_dbl(st, 3) : 0;
    s->load5 = s->has_load ? fj_qr_dbl(st, 4) : 0;
    s->load15 = s->has_load ? fj_qr_dbl(st, 5) : 0;
}

static fj_status read_samples(fj_qload *l, fj_qload_node *n)
{
    const fj_qrows *st = &l->st.samples;
    bind_node_window(st, n->id, l->from, l->to);
    fj_qload_sample s;
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(st, "samples", &row)) == FJ_OK && row) {
        read_sample(st, &s);
        if ((rs = fj_qload_add_sample(l, n, &s)) != FJ_OK)
            break;
    }
    fj_qr_reset(st);
    return rs;
}

/* Whether a node may have cards: it reports some, or never sent a sysinfo. */
static fj_status may_have_gpus(fj_qload *l, fj_qload_node *n, bool *gpus)
{
    const fj_qrows *st = &l->st.has_gpus;
    fj_qr_bind(st, 1, n->id);
    bool row = false;
    fj_status rs = fj_qr_step(st, "sysinfo gpus", &row);
    *gpus = rs == FJ_OK && row && (fj_qr_i64(st, 0) == 0 || fj_qr_i64(st, 1) > 0);
    fj_qr_reset(st);
    return rs;
}

static fj_status read_cards(fj_qload *l, fj_qload_node *n)
{
    const fj_qrows *st = &l->st.gpus;
    bind_node_window(st, n->id, l->from, l->to);
    fj_qload_cards c = {0};
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(st, "gpu samples", &row)) == FJ_OK && row) {
        fj_time t = fj_qr_i64(st, 0);
        if (t != c.t)
            fj_qload_cards_flush(l, n, &c);
        c.t = t;
        fj_qload_card_add(&c, fj_qr_dbl(st, 1), fj_qr_dbl(st, 2), fj_qr_dbl(st, 3), fj_qr_dbl(st, 4));
    }
    fj_qload_cards_flush(l, n, &c);
    fj_qr_reset(st);
    return rs;
}

fj_status fj_qload_read_node(fj_qload *l, fj_qload_node *n)
{
    bool gpus = false;
    fj_status rs;
    if ((rs = fj_qload_node_start(l, n)) != FJ_OK || (rs = read_samples(l, n)) != FJ_OK ||
        (rs = may_have_gpus(l, n, &gpus)) != FJ_OK || !gpus)
        return rs;
    return read_cards(l, n);
}

/* --- all wanted nodes -------------------------------------------------------------------------- */

/* What is done with each node once its buckets are complete. */
typedef fj_status (*node_done_fn)(fj_qload *l, fj_qload_node *n, void *ctx);

/* Whether the backend's bulk reader takes all nodes at once: their buckets then stay in memory
 * until all are read. */
static bool bulk_wanted(const fj_qload *l)
{
    return l->bulk && l->n_ns >= l->bulk->min_nodes &&
           l->g.n * sizeof(fj_loadagg_bucket) * l->n_ns <= l->bulk->max_bytes;
}

static void free_counters(fj_qload *l)
{
    for (size_t i = 0; i < l->n_ns; i++) {
        fj_free(l->ns[i].cpu.c);
        l->ns[i].cpu.c = NULL;
        l->ns[i].cpu.cap = 0;
    }
}

/* The whole hours [*r0, *r1) inside the window that roll-ups answer, when the width is whole hours
 * (buckets are aligned to multiples of it, so no hour straddles two buckets); the rest of the
 * window, less than an hour at either end, is read from samples. None (*r0 == *r1) for other
 * widths, or while roll-ups are pending (right after the migration, until its backfill is done). */
static fj_status rollup_span(fj_qload *l, const fj_qload_rollups *ru, fj_time *r0, fj_time *r1)
{
    *r0 = *r1 = 0;
    fj_time a = fj_loadagg_hour(l->from + FJ_LOADAGG_ROLLUP_S - 1), b = fj_loadagg_hour(l->to + 1);
    if (l->g.step % FJ_LOADAGG_ROLLUP_S || b <= a)
        return FJ_OK;
    bool row = false;
    fj_status rs = fj_qr_step(&ru->pending, "load roll-ups pending", &row);
    fj_qr_reset(&ru->pending);
    if (rs == FJ_OK && !row) {
        *r0 = a;
        *r1 = b;
    }
    return rs;
}

/* Reads the samples of [from, to], a part of one bucket, into edge (one bucket per node: all of
 * them with the bulk reader when one is NULL, else the one node), then adds them to that bucket of
 * the nodes. The read runs on a grid of that one bucket, so the nodes' other buckets are left
 * alone. */
static fj_status read_edge(fj_qload *l, fj_loadagg_bucket *edge, fj_qload_node *one, fj_time from, fj_time to)
{
    if (from > to)
        return FJ_OK;
    fj_qm_grid g = l->g;
    fj_time lfrom = l->from, lto = l->to;
    long bi = fj_qm_bucket(&g, from);
    if (bi < 0) /* from is inside the window, so never */
        return fj_err_set(l->e.err, FJ_EINTERNAL, NULL, "load: edge outside the grid");
    size_t first = one ? (size_t)(one - l->ns) : 0, end = one ? first + 1 : l->n_ns;
    fj_loadagg_bucket **keep = fj_malloc((end - first) * sizeof *keep);
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
    }
    fj_status rs = one ? fj_qload_read_node(l, one) : l->bulk->read(l, l->bulk->ctx);
    for (size_t i = first; i < end; i++) {
        l->ns[i].b = keep[i - first];
        if (rs == FJ_OK)
            fj_loadagg_merge(&l->ns[i].b[bi], &edge[i - first]);
    }
    l->g = g;
    l->b_hi = g.n;
    l->from = lfrom;
    l->to = lto;
    fj_free(keep);
    return rs;
}

/* Merges the rows of st (the node's roll-ups of [r0, r1): hourly or daily) into its buckets. */
static fj_status merge_rows(fj_qload *l, const fj_qrows *st, fj_qload_node *n, fj_time r0, fj_time r1)
{
    if (r1 <= r0)
        return FJ_OK;
    bind_node_window(st, n->id, r0, r1);
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(st, "load roll-ups", &row)) == FJ_OK && row) {
        long bi = fj_qm_bucket(&l->g, fj_qr_i64(st, 0));
        if (bi < 0)
            continue;
        double v[FJ_LOADAGG_NCOLS];
        fj_qr_reals(st, 1, FJ_LOADAGG_NCOLS, v); /* one call a row: a week's cluster load reads millions */
        fj_loadagg_bucket h;
        fj_loadagg_from_row(&h, v);
        fj_loadagg_merge(&n->b[bi], &h);
    }
    fj_qr_reset(st);
    return rs;
}

/* Merges node n's stored roll-ups of the hours [r0, r1) into its buckets: when the buckets are
 * whole UTC days, the days inside [r0, r1) from the daily roll-ups (a day never straddles two
 * buckets then) and the hours at either end from the hourly ones; otherwise every hour. */
static fj_status add_rollups(fj_qload *l, const fj_qload_rollups *ru, fj_qload_node *n, fj_time r0, fj_time r1)
{
    fj_time d0 = fj_loadagg_day(r0 + FJ_LOADAGG_DAY_S - 1), d1 = fj_loadagg_day(r1);
    if (l->g.step % FJ_LOADAGG_DAY_S || fj_loadagg_day(l->g.from) != l->g.from || d1 <= d0)
        return merge_rows(l, &ru->hourly, n, r0, r1);
    fj_status rs;
    if ((rs = merge_rows(l, &ru->hourly, n, r0, d0)) != FJ_OK || (rs = merge_rows(l, &ru->daily, n, d0, d1)) != FJ_OK)
        return rs;
    return merge_rows(l, &ru->hourly, n, d1, r1);
}

/* Roll-ups for the hours [r0, r1), samples for the rest of the window; with the bulk reader the
 * window's ends are read for all nodes at once each, otherwise node by node. */
static fj_status run_rollup(fj_qload *l, const fj_qload_rollups *ru, fj_time r0, fj_time r1, node_done_fn done,
                            void *ctx)
{
    bool all = bulk_wanted(l);
    fj_loadagg_bucket *mem = fj_calloc(all ? l->n_ns * l->g.n : l->g.n, sizeof *mem);
    fj_loadagg_bucket *edge = fj_calloc(all ? l->n_ns : 1, sizeof *edge);
    fj_status rs = mem && edge ? FJ_OK : oom(l);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
        l->ns[i].b = all ? mem + i * l->g.n : mem;
    if (rs == FJ_OK && all && (rs = read_edge(l, edge, NULL, l->from, r0 - 1)) == FJ_OK)
        rs = read_edge(l, edge, NULL, r1, l->to);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++) {
        fj_qload_node *n = &l->ns[i];
        if (!all) {
            memset(mem, 0, l->g.n * sizeof *mem);
            if ((rs = read_edge(l, edge, n, l->from, r0 - 1)) != FJ_OK ||
                (rs = read_edge(l, edge, n, r1, l->to)) != FJ_OK)
                break;
        }
        if ((rs = add_rollups(l, ru, n, r0, r1)) == FJ_OK)
            rs = done(l, n, ctx);
    }
    free_counters(l);
    fj_free(edge);
    fj_free(mem);
    return rs;
}

/* Buckets every wanted node and calls done for each, in name order. */
static fj_status run_load(fj_qload *l, const fj_qload_rollups *ru, node_done_fn done, void *ctx)
{
    fj_time r0, r1;
    fj_status rs = rollup_span(l, ru, &r0, &r1);
    if (rs != FJ_OK)
        return rs;
    if (r1 > r0)
        return run_rollup(l, ru, r0, r1, done, ctx);
    bool all = bulk_wanted(l);
    fj_loadagg_bucket *mem = fj_calloc(all ? l->n_ns * l->g.n : l->g.n, sizeof *mem);
    if (!mem)
        return oom(l);
    for (size_t i = 0; i < l->n_ns; i++)
        l->ns[i].b = all ? mem + i * l->g.n : mem;
    if (all) {
        rs = l->bulk->read(l, l->bulk->ctx);
        for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
            rs = done(l, &l->ns[i], ctx);
    } else { /* one bucket array for all: each node is answered before the next is read */
        for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
            if ((rs = fj_qload_read_node(l, &l->ns[i])) == FJ_OK)
                rs = done(l, &l->ns[i], ctx);
    }
    free_counters(l);
    fj_free(mem);
    return rs;
}

/* --- node load ------------------------------------------------------------------------------- */

static fj_status emit_node(fj_qload *l, fj_qload_node *n, void *ctx)
{
    fj_sink *k = ctx;
    for (size_t bi = 0; bi < l->g.n; bi++) {
        const fj_loadagg_bucket *b = &n->b[bi];
        if (!b->samples)
            continue;
        fj_value v[22] = {
            fj_value_text(n->name),
            fj_value_time(l->g.from + (int64_t)bi * l->g.step),
            fj_value_int(b->samples),
            fj_value_int(b->cores),
            fj_value_acc_avg(&b->cpu_util),
            fj_value_acc_max(&b->cpu_util),
            fj_value_acc_avg(&b->cpu_cores),
            fj_value_acc_avg_int(&b->mem),
            fj_value_acc_max_int(&b->mem),
            fj_value_acc_avg(&b->load1),
            fj_value_acc_max(&b->load1),
            fj_value_acc_avg(&b->load5),
            fj_value_acc_avg(&b->load15),
            fj_value_int(b->gpus),
            fj_value_acc_avg(&b->gpu_util),
            fj_value_acc_max(&b->gpu_util_card_max),
            fj_value_acc_avg_int(&b->gpu_mem),
            fj_value_acc_max_int(&b->gpu_mem),
            fj_value_acc_avg(&b->gpu_power),
            fj_value_acc_max(&b->gpu_power),
            fj_value_acc_avg(&b->gpu_temp),
            fj_value_acc_max(&b->gpu_temp_card_max),
        };
        fj_status rs = k->row(k, v);
        if (rs != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

fj_status fj_qload_node_rows(fj_qload *l, const fj_qload_rollups *ru)
{
    fj_sink *k = l->e.k;
    fj_status rs = k->table(k, &fj_qt_node_load);
    return rs == FJ_OK ? run_load(l, ru, emit_node, k) : rs;
}

/* --- cluster load ---------------------------------------------------------------------------- */

/* Cluster buckets: sums (busy cores, memory, GPU memory and power) or means (utilisation, load,
 * temperature) of the nodes' bucket averages; the _max columns are the highest node's maximum. */
typedef struct cbucket {
    int64_t nodes, cores, gpus;
    double cpu_busy, cpu_cap, mem_sum, gpu_mem_sum, gpu_power_sum;
    bool has_cpu, has_mem;
    fj_qm_acc cpu_util_max, mem_max, load1, load1_max, load5, load15;
    fj_qm_acc gpu_util, gpu_util_max, gpu_mem_max, gpu_power_max, gpu_temp, gpu_temp_max;
} cbucket;

static void fold(cbucket *c, const fj_loadagg_bucket *b)
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

static fj_status fold_node(fj_qload *l, fj_qload_node *n, void *ctx)
{
    cbucket *cb = ctx;
    for (size_t bi = 0; bi < l->g.n; bi++)
        if (n->b[bi].samples)
            fold(&cb[bi], &n->b[bi]);
    return FJ_OK;
}

static fj_status emit_cluster_bucket(const fj_qload *l, size_t bi, const cbucket *c)
{
    bool g = c->gpus > 0;
    fj_value v[21] = {
        fj_value_time(l->g.from + (int64_t)bi * l->g.step),
        fj_value_int(c->nodes),
        fj_value_int(c->cores),
        c->has_cpu && c->cpu_cap > 0 ? fj_value_real(c->cpu_busy / c->cpu_cap * 100.0) : fj_value_null(),
        fj_value_acc_max(&c->cpu_util_max),
        c->has_cpu ? fj_value_real(c->cpu_busy) : fj_value_null(),
        c->has_mem ? fj_value_int((int64_t)llround(c->mem_sum)) : fj_value_null(),
        fj_value_acc_max_int(&c->mem_max),
        fj_value_acc_avg(&c->load1),
        fj_value_acc_max(&c->load1_max),
        fj_value_acc_avg(&c->load5),
        fj_value_acc_avg(&c->load15),
        fj_value_int(c->gpus),
        g ? fj_value_acc_avg(&c->gpu_util) : fj_value_null(),
        g ? fj_value_acc_max(&c->gpu_util_max) : fj_value_null(),
        g ? fj_value_int((int64_t)llround(c->gpu_mem_sum)) : fj_value_null(),
        g ? fj_value_acc_max_int(&c->gpu_mem_max) : fj_value_null(),
        g ? fj_value_real(c->gpu_power_sum) : fj_value_null(),
        g ? fj_value_acc_max(&c->gpu_power_max) : fj_value_null(),
        g ? fj_value_acc_avg(&c->gpu_temp) : fj_value_null(),
        g ? fj_value_acc_max(&c->gpu_temp_max) : fj_value_null(),
    };
    return l->e.k->row(l->e.k, v);
}

fj_status fj_qload_cluster_rows(fj_qload *l, const fj_qload_rollups *ru)
{
    fj_status rs = l->e.k->table(l->e.k, &fj_qt_cluster_load);
    if (rs != FJ_OK)
        return rs;
    cbucket *cb = fj_arena_calloc(l->e.a, l->g.n, sizeof *cb);
    if (!cb)
        return oom(l);
    if ((rs = run_load(l, ru, fold_node, cb)) != FJ_OK)
        return rs;
    for (size_t bi = 0; bi < l->g.n; bi++)
        if (cb[bi].nodes && (rs = emit_cluster_bucket(l, bi, &cb[bi])) != FJ_OK)
            return rs;
    return FJ_OK;
}

/* --- GPU load per card ------------------------------------------------------------------------- */

/* Feeds one node's card readings to the series. */
static fj_status node_cards(fj_qload *l, const fj_qrows *cards, const fj_qload_node *n, fj_gl_series *gs)
{
    bind_node_window(cards, n->id, l->from, l->to);
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(cards, "gpu samples", &row)) == FJ_OK && row) {
        double v[4];
        for (int c = 0; c < 4; c++)
            v[c] = fj_qr_null(cards, c + 3) ? NAN : fj_qr_dbl(cards, c + 3);
        rs = fj_gl_add(gs, n->name, fj_qr_i64(cards, 0), fj_qr_text(cards, 1), fj_qr_i64(cards, 2), v[0], v[1],
                       v[2], v[3]);
        if (rs == FJ_ENOMEM)
            rs = oom(l);
        if (rs != FJ_OK)
            break;
    }
    fj_qr_reset(cards);
    return rs;
}

fj_status fj_qload_gpu_rows(fj_qload *l, const fj_qrows *cards)
{
    fj_status rs = l->e.k->table(l->e.k, &fj_qt_gpu_load);
    if (rs != FJ_OK)
        return rs;
    fj_gl_series gs = {0};
    if (fj_gl_init(&gs, &l->g, l->e.k) != FJ_OK)
        rs = oom(l);
    for (size_t i = 0; rs == FJ_OK && i < l->n_ns; i++)
        rs = node_cards(l, cards, &l->ns[i], &gs);
    if (rs == FJ_OK)
        rs = fj_gl_flush(&gs);
    fj_gl_free(&gs);
    return rs;
}

/* --- the hourly roll-ups' writer --------------------------------------------------------------- */

void fj_qload_hour_init(fj_qload *l, const fj_qenv *e, const fj_qload_stmts *st)
{
    memset(l, 0, sizeof *l);
    l->e = *e;
    l->st = *st;
    l->g.step = FJ_LOADAGG_ROLLUP_S;
    l->g.n = 1;
    l->b_hi = 1;
}

fj_status fj_qload_read_hour(fj_qload *l, fj_qload_node *n, fj_time hour, fj_time from)
{
    l->g.from = hour;
    l->from = from;
    l->to = hour + FJ_LOADAGG_ROLLUP_S - 1;
    return fj_qload_read_node(l, n);
}

/* --- the statements and the ops -------------------------------------------------------------- */

fj_status fj_qload_stmts_prepare(fj_qx *x, fj_qload_stmts *st)
{
    *st = (fj_qload_stmts){0};
    fj_status rs;
    /* The first interval starts at the latest sample with counters, as inside the window (a
     * sample without counters interrupts no interval), so an hour's roll-up and any window that
     * contains the hour see the same intervals. */
    if ((rs = fj_qx_prepare(x, "SELECT time, boot, cpus FROM samples WHERE node_id = ?1 AND time < ?2"
                               " AND cpus IS NOT NULL ORDER BY time DESC LIMIT 1", &st->prev)) != FJ_OK ||
        (rs = fj_qx_prepare(x, "SELECT time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                               " WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
                            &st->samples)) != FJ_OK ||
        (rs = fj_qx_prepare(x, x->d->layout->load_gpus, &st->gpus)) != FJ_OK)
        return rs;
    return fj_qx_prepare(x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = ?1", &st->has_gpus);
}

void fj_qload_stmts_free(fj_qx *x, fj_qload_stmts *st)
{
    fj_qx_finalize(x, &st->prev);
    fj_qx_finalize(x, &st->samples);
    fj_qx_finalize(x, &st->gpus);
    fj_qx_finalize(x, &st->has_gpus);
    *st = (fj_qload_stmts){0};
}

typedef struct load_op {
    fj_status (*rows)(fj_qload *l, const fj_qload_rollups *ru);
    fj_status (*bulk_setup)(fj_qx *x, fj_qload_bulk *b);
} load_op;

static fj_status load(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)st;
    const load_op *op = arg;
    fj_qload l;
    fj_qload_stmts ls = {0};
    fj_qload_bulk bulk = {0};
    fj_qload_rollups ru = {{0}, {0}, {0}};
    fj_status rs;
    if ((rs = fj_qload_begin(&l, e)) == FJ_OK && (rs = fj_qload_stmts_prepare(x, &ls)) == FJ_OK &&
        (!op->bulk_setup || (rs = op->bulk_setup(x, &bulk)) == FJ_OK) &&
        (rs = fj_qx_prepare(x, "SELECT 1 FROM load_hourly_todo LIMIT 1", &ru.pending)) == FJ_OK &&
        (rs = fj_qx_prepare(x, "SELECT hour," FJ_LOADAGG_COLS_SQL " FROM load_hourly"
                               " WHERE node_id = ?1 AND hour >= ?2 AND hour < ?3", &ru.hourly)) == FJ_OK &&
        (rs = fj_qx_prepare(x, "SELECT day," FJ_LOADAGG_COLS_SQL " FROM load_daily"
                               " WHERE node_id = ?1 AND day >= ?2 AND day < ?3", &ru.daily)) == FJ_OK) {
        l.st = ls;
        l.bulk = bulk.read ? &bulk : NULL;
        rs = op->rows(&l, &ru);
    }
    if (bulk.done) /* the bulk reader's own statements, before the query ends */
        bulk.done(bulk.ctx);
    return rs;
}

/* The node or cluster load query (rows: fj_qload_node_rows or fj_qload_cluster_rows), with the
 * backend's bulk reader where its driver has one (fj_driver.load_bulk). */
static fj_status load_query(fj_store *s, fj_query *q, fj_sink *k, fj_err *err,
                            fj_status (*rows)(fj_qload *l, const fj_qload_rollups *ru))
{
    load_op op = {rows, fj_driver_of(s)->load_bulk};
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, NULL, load, &op);
}

fj_status fj_store_query_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return load_query(s, q, k, err, fj_qload_node_rows);
}

fj_status fj_store_query_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return load_query(s, q, k, err, fj_qload_cluster_rows);
}

static fj_status gpu_load(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x, (void)arg;
    fj_qload l;
    fj_status rs = fj_qload_begin(&l, e);
    return rs == FJ_OK ? fj_qload_gpu_rows(&l, &st[0]) : rs;
}

fj_status fj_store_query_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    const char *const sql[] = {fj_driver_of(s)->layout->gpu_load_cards, NULL};
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, gpu_load, NULL);
}
