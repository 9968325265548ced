/* sqlite_usage.c — the latest utilisation of each node (q_node_usage) for the SQLite backend: CPU
 * cores busy between the node's last two samples, memory, load and GPU use at the latest one.
 * The SSS export (api/sss.c) reads it for its Available and Utilized categories. */
#include "sqlite_chimbuko.h"

#include "qmath.h"
#include "sqlite_query_int.h"

#include <string.h>

enum { MAX_CORES = 8192 };

typedef struct reading {
    fj_time t, boot;
    uint64_t cores[MAX_CORES];
    size_t n;
} reading;

static void unpack(sqlite3_stmt *st, int col, reading *r)
{
    const unsigned char *p = sqlite3_column_blob(st, col);
    size_t len = (size_t)sqlite3_column_bytes(st, col);
    size_t got = p ? fj_qm_varints(p, len, r->cores, MAX_CORES) : 0;
    r->n = got == (size_t)-1 ? 0 : got;
}

fj_status fj_sq_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *samples = NULL, *gpus = NULL;
    reading *r = NULL;
    int64_t only = 0;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK)
        goto out;
    if (q->node && (rs = fj_sqq_one_node(&x, &only)) != FJ_OK)
        goto out;
    if ((rs = fj_sqq_prepare(&x,
                             "SELECT id, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = ?1"
                             " ORDER BY time DESC LIMIT 2",
                             &samples)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus WHERE sample_id = ?1",
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
        sqlite3_bind_int64(samples, 1, x.nodes.ids[i]);
        int rc = sqlite3_step(samples);
        if (rc != SQLITE_ROW) {
            sqlite3_reset(samples);
            if (rc != SQLITE_DONE)
                rs = fj_sqq_fail(&x, rc, "latest samples");
            continue; /* no sample: nothing to say */
        }
        int64_t sample_id = sqlite3_column_int64(samples, 0);
        r[1].t = sqlite3_column_int64(samples, 1);
        r[1].boot = sqlite3_column_int64(samples, 2);
        fj_value mem = fj_v_col(samples, 3, FJ_VT_INT), load = fj_v_col(samples, 4, FJ_VT_REAL);
        unpack(samples, 5, &r[1]);
        bool prev = (rc = sqlite3_step(samples)) == SQLITE_ROW;
        if (prev) {
            r[0].t = sqlite3_column_int64(samples, 1);
            r[0].boot = sqlite3_column_int64(samples, 2);
            unpack(samples, 5, &r[0]);
        }
        sqlite3_reset(samples);
        fj_qm_cpu cpu;
        bool have_cpu = prev && fj_qm_cpu_interval(r[0].t, r[0].boot, r[0].cores, r[0].n, r[1].t, r[1].boot,
                                                   r[1].cores, r[1].n, &cpu);
        sqlite3_bind_int64(gpus, 1, sample_id);
        rc = sqlite3_step(gpus);
        int64_t n_gpus = rc == SQLITE_ROW ? sqlite3_column_int64(gpus, 0) : 0;
        fj_value gpu_busy = n_gpus && sqlite3_column_type(gpus, 1) != SQLITE_NULL
                                ? fj_v_real(sqlite3_column_double(gpus, 1) / 100.0)
                                : fj_v_null();
        fj_value gpu_mem = n_gpus ? fj_v_col(gpus, 2, FJ_VT_INT) : fj_v_null();
        sqlite3_reset(gpus);
        if (rc != SQLITE_ROW) {
            rs = fj_sqq_fail(&x, rc, "sample gpus");
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
    sqlite3_finalize(samples);
    sqlite3_finalize(gpus);
    return fj_sqq_end(&x, rs);
}
