/* storage/query/slurm.c — the Slurm view every backend shares (storage/query/slurm.h). */
#include "storage/query/slurm.h"
#include "storage/core/store_query.h"
#include "storage/query/sqlbuf.h"

#include "storage/query/value.h"

#include <stdio.h>
#include <string.h>

/* In fj_qt_slurm_jobs order, after its "cluster" column. */
static const char slurm_select[] =
    "SELECT c.job_id, c.job_step, c.time, c.job_name, c.job_state, c.job_state_raw, c.user_name, c.account,"
    " c.partition, c.reservation, c.array_job_id, c.array_task_id, c.het_job_id, c.het_job_offset,"
    " c.submit_time, c.start_time, c.end_time, c.time_limit_s, c.priority, c.nodes, c.requested_cpus,"
    " c.requested_memory_per_node_kb, c.requested_node_count, c.minimum_cpus_per_node,"
    " c.requested_resources, c.allocated_resources, c.exit_code, c.suspend_time_s, c.sacct_elapsed_raw,"
    " c.sacct_ave_cpu, c.sacct_min_cpu, c.sacct_user_cpu, c.sacct_system_cpu, c.sacct_ave_rss,"
    " c.sacct_max_rss, c.sacct_ave_vmsize, c.sacct_max_vmsize, c.sacct_ave_disk_read,"
    " c.sacct_ave_disk_write, c.sacct_alloc_tres FROM slurm_jobs_current c WHERE c.cluster_id = ";

void fj_qslurm_jobs_sql(fj_sqlbuf *b, const fj_qenv *e, const char *collate_c)
{
    const fj_query *q = e->q;
    fj_sqlbuf_put(b, slurm_select);
    fj_sqlbuf_int(b, e->cluster_id);
    fj_sqlbuf_and_in_texts(b, "c.user_name", &q->users);
    fj_sqlbuf_and_in_texts(b, "c.job_state", &q->states);
    fj_sqlbuf_and_in_texts(b, "c.partition", &q->partitions);
    fj_sqlbuf_and_in_texts(b, "c.account", &q->accounts);
    fj_sqlbuf_and_in_ints(b, "c.job_id", &q->jobs);
    fj_sqlbuf_and_in_ints(b, "c.array_job_id", &q->array_jobs);
    fj_sqlbuf_and_in_ints(b, "c.het_job_id", &q->het_jobs);
    if (q->running == FJ_TRI_YES)
        fj_sqlbuf_put(b, " AND c.job_state IN " FJ_QSLURM_RUNNING_STATES);
    else if (q->running == FJ_TRI_NO)
        fj_sqlbuf_put(b, " AND c.job_state NOT IN " FJ_QSLURM_RUNNING_STATES);
    if (q->steps == FJ_TRI_NO)
        fj_sqlbuf_put(b, " AND c.job_step = ''");
    if (e->nodes->filtered) {
        fj_sqlbuf_put(b, " AND EXISTS (SELECT 1 FROM slurm_job_nodes n WHERE n.cluster_id = c.cluster_id"
                           " AND n.job_id = c.job_id AND n.job_step = c.job_step AND n.node_id IN ");
        fj_sqlbuf_node_list(b, e->nodes);
        fj_sqlbuf_put(b, ")");
    }
    /* the window overlaps [start (or submit, or the record), end (open while unknown)] */
    fj_sqlbuf_bound(b, " AND coalesce(c.start_time, c.submit_time, c.time) <= ", q->to);
    if (q->from) {
        fj_sqlbuf_put(b, " AND (c.end_time IS NULL OR c.end_time >= ");
        fj_sqlbuf_int(b, q->from);
        fj_sqlbuf_put(b, ")");
    }
    /* pages follow (job id, step), steps compared byte-wise as they are ordered */
    const char *dir = q->desc ? "DESC" : "ASC", *op = q->desc ? "<" : ">";
    if (q->after.set) {
        fj_sqlbuf_printf(b, " AND (c.job_id %s ", op);
        fj_sqlbuf_int(b, (int64_t)q->after.v);
        fj_sqlbuf_put(b, " OR (c.job_id = ");
        fj_sqlbuf_int(b, (int64_t)q->after.v);
        fj_sqlbuf_printf(b, " AND c.job_step%s %s ", collate_c, op);
        fj_sqlbuf_text(b, q->after.s);
        fj_sqlbuf_put(b, "))");
    }
    fj_sqlbuf_printf(b, " ORDER BY c.job_id %s, c.job_step%s %s", dir, collate_c, dir);
    fj_sqlbuf_page(b, q->limit);
}

fj_status fj_qslurm_jobs_rows(const fj_qenv *e, const fj_qrows *r)
{
    fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = k->table(k, &fj_qt_slurm_jobs);
    if (rs != FJ_OK)
        return rs;
    const fj_qtable *t = &fj_qt_slurm_jobs;
    fj_value v[64];
    if (t->n_cols > 64)
        return fj_err_set(e->err, FJ_EINTERNAL, NULL, "too many columns");
    size_t n = 0;
    fj_qpos last = {0};
    bool row = false;
    while ((rs = fj_qr_step(r, "slurm jobs", &row)) == FJ_OK && row) {
        if (q->limit && n == q->limit) {
            q->next = last;
            break;
        }
        v[0] = fj_value_text(q->cluster);
        for (size_t i = 1; i < t->n_cols; i++)
            v[i] = fj_qr_value(r, (int)i - 1, t->cols[i].type);
        v[2] = fj_value_text(fj_qr_text(r, 1)); /* '' is a value, not null */
        if ((rs = k->row(k, v)) != FJ_OK)
            return rs;
        last.set = true;
        last.v = (double)fj_qr_i64(r, 0);
        const char *step = fj_qr_text(r, 1);
        snprintf(last.s, sizeof last.s, "%s", step ? step : "");
        n++;
    }
    return rs;
}

fj_status fj_qslurm_partitions_rows(const fj_qenv *e, const fj_qrows *parts, const fj_qrows *nodes)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = k->table(k, &fj_qt_partitions);
    if (rs != FJ_OK)
        return rs;
    fj_qr_bind(parts, 1, e->cluster_id);
    fj_qr_bind(parts, 2, q->to ? q->to : INT64_MAX);
    bool row = false;
    while ((rs = fj_qr_step(parts, "partitions", &row)) == FJ_OK && row) {
        fj_qstrv hosts = {0};
        fj_qr_bind(nodes, 1, e->cluster_id);
        fj_qr_bind(nodes, 2, fj_qr_i64(parts, 2));
        fj_qr_bind(nodes, 3, fj_qr_i64(parts, 0));
        bool nrow = false;
        while ((rs = fj_qr_step(nodes, "partition nodes", &nrow)) == FJ_OK && nrow) {
            const char *name = fj_qnodes_name(e->nodes, fj_qr_i64(nodes, 0));
            if (name && (rs = fj_qstrv_push(e, &hosts, name)) != FJ_OK)
                break;
        }
        fj_qr_reset(nodes);
        if (rs != FJ_OK)
            return rs;
        /* by name */
        for (size_t i = 1; i < hosts.n; i++) {
            const char *t = hosts.v[i];
            size_t j = i;
            while (j > 0 && strcmp(hosts.v[j - 1], t) > 0) {
                hosts.v[j] = hosts.v[j - 1];
                j--;
            }
            hosts.v[j] = t;
        }
        fj_value v[5] = {
            fj_value_text(q->cluster),
            fj_value_text(fj_qr_text(parts, 1)),
            fj_value_time(fj_qr_i64(parts, 2)),
            fj_value_int(fj_qr_i64(parts, 3)),
            fj_value_list(hosts.v, hosts.n),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            return rs;
    }
    return rs;
}

fj_status fj_qslurm_node_states_rows(const fj_qenv *e, const fj_qrows *latest, const fj_qrows *states)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = k->table(k, &fj_qt_node_states);
    size_t *order = NULL, n = 0;
    if (rs != FJ_OK || (rs = fj_qenv_wanted_by_name(e, &order, &n)) != FJ_OK)
        return rs;
    for (size_t oi = 0; oi < n; oi++) {
        size_t ni = order[oi];
        fj_qr_bind(latest, 1, e->nodes->ids[ni]);
        fj_qr_bind(latest, 2, q->to ? q->to : INT64_MAX);
        bool row = false;
        rs = fj_qr_step(latest, "node states", &row);
        int64_t t = rs == FJ_OK && row ? fj_qr_i64(latest, 0) : 0;
        fj_qr_reset(latest);
        if (rs != FJ_OK)
            return rs;
        if (!row) /* an aggregate without a group has its row */
            return fj_err_set(e->err, FJ_EINTERNAL, NULL, "node states: no row");
        if (!t)
            continue;
        const char **l;
        size_t ln;
        fj_qr_bind(states, 2, t);
        if ((rs = fj_qenv_text_list(e, states, e->nodes->ids[ni], &l, &ln)) != FJ_OK)
            return rs;
        fj_value v[3] = {fj_value_text(e->nodes->names[ni]), fj_value_time(t), fj_value_list(l, ln)};
        if ((rs = k->row(k, v)) != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

/* --- the ops of storage/core/store.h: their SQL and rows (fj_qx_run does the rest) ------------- */

fj_status fj_store_query_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_qx_run_built(s, q, k, err, fj_qslurm_jobs_sql, fj_qslurm_jobs_rows);
}

fj_status fj_store_query_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    static const char *const sql[] = {
        /* the partitions of the latest envelope at or before ?2, by name */
        "SELECT p.name_id, x.s, p.time, p.n_nodes FROM partitions p JOIN strings x ON x.id = p.name_id"
        " WHERE p.cluster_id = ?1 AND p.time = (SELECT max(time) FROM partitions"
        " WHERE cluster_id = ?1 AND time <= ?2) ORDER BY x.s{bytes}",
        /* a partition's nodes */
        "SELECT node_id FROM partition_nodes WHERE cluster_id = ?1 AND time = ?2 AND name_id = ?3",
        NULL,
    };
    return fj_qx_run2(s, q, k, err, FJ_QX_NODES, sql, fj_qslurm_partitions_rows);
}

fj_status fj_store_query_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    static const char *const sql[] = {
        "SELECT max(time) FROM node_states WHERE node_id = ?1 AND time <= ?2",
        "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
        " WHERE ns.node_id = ?1 AND ns.time = ?2 ORDER BY x.s{bytes}",
        NULL,
    };
    return fj_qx_run2(s, q, k, err, FJ_QX_NODES, sql, fj_qslurm_node_states_rows);
}
