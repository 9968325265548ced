/* storage/query/usage.c — the latest utilisation of each node as every backend answers it (storage/query/usage.h). */
#include "storage/query/usage.h"
#include "storage/core/store_query.h"
#include "storage/query/sqlbuf.h"

#include "storage/query/qmath.h"
#include "storage/query/value.h"

enum { MAX_CORES = 8192 };

/* What the CPU interval needs of one sample. */
typedef struct reading {
    fj_time t, boot;
    uint64_t cores[MAX_CORES];
    size_t n;
} reading;

/* time, boot and the per-core counters (cpus, packed varints) of the samples row at hand;
 * counters that do not unpack count as none. */
static void read_cpu(const fj_qrows *samples, reading *r)
{
    r->t = fj_qr_i64(samples, 1);
    r->boot = fj_qr_i64(samples, 2);
    size_t len;
    const unsigned char *p = samples->ops->blob(samples, 5, &len);
    size_t got = p ? fj_qm_varints(p, len, r->cores, MAX_CORES) : 0;
    r->n = got == (size_t)-1 ? 0 : got;
}

/* The nodes to answer for, as indices into e->nodes: q->node alone when given (*one holds it),
 * else the wanted nodes by name. */
static fj_status nodes_to_answer(const fj_qenv *e, size_t *one, size_t **order, size_t *n)
{
    if (!e->q->node)
        return fj_qenv_wanted_by_name(e, order, n);
    int64_t id;
    fj_status rs = fj_qenv_one_node(e, &id);
    if (rs != FJ_OK)
        return rs;
    *one = (size_t)fj_qnodes_index(e->nodes, id); /* found: fj_qenv_one_node looked in e->nodes */
    *order = one;
    *n = 1;
    return FJ_OK;
}

/* The row of node i, when it has a sample. r: room for the latest two readings. */
static fj_status node_row(const fj_qenv *e, const fj_qrows *samples, const fj_qrows *gpus, reading r[2], size_t i)
{
    int64_t node = e->nodes->ids[i];
    bool row;
    fj_qr_bind(samples, 1, node);
    fj_status rs = fj_qr_step(samples, "latest samples", &row);
    if (rs != FJ_OK || !row) {
        fj_qr_reset(samples);
        return rs; /* no sample: nothing to say */
    }
    int64_t key = fj_qr_i64(samples, 0);
    fj_value mem = fj_qr_value(samples, 3, FJ_VT_INT), load = fj_qr_value(samples, 4, FJ_VT_REAL);
    read_cpu(samples, &r[1]);
    /* The older sample only makes the CPU interval: when it cannot be read there is none. */
    bool prev = fj_qr_step(samples, "latest samples", &row) == FJ_OK && row;
    if (prev)
        read_cpu(samples, &r[0]);
    fj_qr_reset(samples);
    fj_qm_cpu cpu;
    bool have_cpu = prev && fj_qm_cpu_interval(r[0].t, r[0].boot, r[0].cores, r[0].n, r[1].t, r[1].boot, r[1].cores,
                                               r[1].n, &cpu);

    fj_qr_bind(gpus, 1, node);
    fj_qr_bind(gpus, 2, key);
    rs = fj_qr_step(gpus, "sample gpus", &row); /* an aggregate: one row */
    int64_t n_gpus = rs == FJ_OK && row ? fj_qr_i64(gpus, 0) : 0;
    fj_value gpu_busy = n_gpus && !fj_qr_null(gpus, 1) ? fj_value_real(fj_qr_dbl(gpus, 1) / 100.0) : fj_value_null();
    fj_value gpu_mem = n_gpus ? fj_qr_value(gpus, 2, FJ_VT_INT) : fj_value_null();
    fj_qr_reset(gpus);
    if (rs != FJ_OK)
        return rs;

    fj_value v[9] = {
        fj_value_text(e->nodes->names[i]),
        fj_value_time(r[1].t),
        have_cpu ? fj_value_int((int64_t)cpu.seconds) : fj_value_null(),
        have_cpu ? fj_value_real(fj_qm_cpu_cores(&cpu)) : fj_value_null(),
        mem,
        load,
        fj_value_int(n_gpus),
        gpu_busy,
        gpu_mem,
    };
    return e->k->row(e->k, v);
}

fj_status fj_qusage_rows(const fj_qenv *e, const fj_qrows *samples, const fj_qrows *gpus)
{
    size_t one, *order = NULL, n = 0;
    fj_status rs = nodes_to_answer(e, &one, &order, &n);
    if (rs != FJ_OK || (rs = e->k->table(e->k, &fj_qt_node_usage)) != FJ_OK)
        return rs;
    reading *r = fj_arena_alloc(e->a, 2 * sizeof *r); /* 128 KiB: not on the stack */
    if (!r)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t k = 0; k < n && rs == FJ_OK; k++)
        rs = node_row(e, samples, gpus, r, order[k]);
    return rs;
}

/* --- the op of storage/core/store.h: its SQL (the layout's) and rows (fj_qx_run does the rest) -- */

fj_status fj_store_query_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    const fj_layout_sql *ly = fj_driver_of(s)->layout;
    const char *const sql[] = {ly->usage_samples, ly->usage_gpus, NULL};
    return fj_qx_run2(s, q, k, err, FJ_QX_NODES, sql, fj_qusage_rows);
}
