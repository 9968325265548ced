/* pg_query_usage.c — the latest utilisation of each node (q_node_usage) for the PostgreSQL backend,
 * a port of sqlite_usage.c: CPU
 * cores busy between the node's last two samples, memory, load and GPU use at the latest one.
 * The SSS export (api/sss.c) reads it for its Available and Utilized categories. */
#include "pg_query_int.h"
#include "qmath.h"

#include <string.h>

enum { MAX_CORES = 8192 };

typedef struct reading {
    fj_time t, boot;
    uint64_t cores[MAX_CORES];
    size_t n;
} reading;

static void unpack(fj_pgs *st, int col, reading *r)
{
    size_t len;
    const unsigned char *p = fj_pgs_blob(st, col, &len);
    size_t got = p ? fj_qm_varints(p, len, r->cores, MAX_CORES) : 0;
    r->n = got == (size_t)-1 ? 0 : got;
}

fj_status fj_pg_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *samples = NULL, *gpus = NULL;
    reading *r = NULL;
    int64_t only = 0;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK)
        goto out;
    if (q->node && (rs = fj_pgq_one_node(&x, &only)) != FJ_OK)
        goto out;
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT time, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = $1"
                             " ORDER BY time DESC LIMIT 2",
                             &samples)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus"
                                 " WHERE node_id = $1 AND time = $2",
                             &gpus)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_node_usage)) != FJ_OK)
        goto out;
    if (!(r = fj_arena_alloc(x.a, 2 * sizeof *r))) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    /* Names in order, as the node list answers. */
    size_t n = x.nodes.n;
    size_t *order = fj_arena_alloc(x.a, (n ? n : 1) * sizeof *order);
    if (!order) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (only ? x.nodes.ids[i] == only : x.nodes.want[i])
            order[m++] = i;
    for (size_t a = 1; a < m; a++) { /* insertion sort by name: node lists are short */
        size_t v = order[a], b = a;
        for (; b > 0 && strcmp(x.nodes.names[order[b - 1]], x.nodes.names[v]) > 0; b--)
            order[b] = order[b - 1];
        order[b] = v;
    }
    for (size_t a = 0; a < m && rs == FJ_OK; a++) {
        size_t i = order[a];
        fj_pgs_bind_int(samples, 1, x.nodes.ids[i]);
        int rc = fj_pgs_step(samples);
        if (rc != FJ_PGS_ROW) {
            fj_pgs_reset(samples);
            if (rc != FJ_PGS_DONE)
                rs = fj_pgq_fail(&x, rc, "latest samples");
            continue; /* no sample: nothing to say */
        }
        int64_t sample_time = fj_pgs_int(samples, 0); /* the sample is (node, time) */
        r[1].t = fj_pgs_int(samples, 1);
        r[1].boot = fj_pgs_int(samples, 2);
        fj_value mem = fj_pv_col(samples, 3, FJ_VT_INT), load = fj_pv_col(samples, 4, FJ_VT_REAL);
        unpack(samples, 5, &r[1]);
        bool prev = (rc = fj_pgs_step(samples)) == FJ_PGS_ROW;
        if (prev) {
            r[0].t = fj_pgs_int(samples, 1);
            r[0].boot = fj_pgs_int(samples, 2);
            unpack(samples, 5, &r[0]);
        }
        fj_pgs_reset(samples);
        fj_qm_cpu cpu;
        bool have_cpu = prev && fj_qm_cpu_interval(r[0].t, r[0].boot, r[0].cores, r[0].n, r[1].t, r[1].boot,
                                                   r[1].cores, r[1].n, &cpu);
        fj_pgs_bind_int(gpus, 1, x.nodes.ids[i]);
        fj_pgs_bind_int(gpus, 2, sample_time);
        rc = fj_pgs_step(gpus);
        int64_t n_gpus = rc == FJ_PGS_ROW ? fj_pgs_int(gpus, 0) : 0;
        fj_value gpu_busy = n_gpus && !fj_pgs_isnull(gpus, 1)
                                ? fj_v_real(fj_pgs_double(gpus, 1) / 100.0)
                                : fj_v_null();
        fj_value gpu_mem = n_gpus ? fj_pv_col(gpus, 2, FJ_VT_INT) : fj_v_null();
        fj_pgs_reset(gpus);
        if (rc != FJ_PGS_ROW) {
            rs = fj_pgq_fail(&x, rc, "sample gpus");
            break;
        }
        fj_value v[9] = {
            fj_v_text(x.nodes.names[i]),
            fj_v_time(r[1].t),
            have_cpu ? fj_v_int((int64_t)cpu.seconds) : fj_v_null(),
            have_cpu ? fj_v_real(fj_qm_cpu_cores(&cpu)) : fj_v_null(),
            mem,
            load,
            fj_v_int(n_gpus),
            gpu_busy,
            gpu_mem,
        };
        rs = k->row(k, v);
    }
out:
    fj_pgs_finalize(samples);
    fj_pgs_finalize(gpus);
    return fj_pgq_end(&x, rs);
}
