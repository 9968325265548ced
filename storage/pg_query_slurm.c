/* pg_query_slurm.c — the Slurm view of the PostgreSQL backend (a port of sqlite_query_slurm.c): jobs and steps as sacct shows them
 * (slurm_jobs_current: the latest value of every field), partitions and node states from the
 * latest cluster envelope at or before a time. */
#include "pg_query_int.h"

#include <stdio.h>
#include <string.h>

#define RUNNING_STATES                                                                                 \
    "('RUNNING','PENDING','SUSPENDED','COMPLETING','CONFIGURING','REQUEUED','REQUEUE_HOLD',"          \
    "'REQUEUE_FED','RESIZING','SIGNALING','STAGE_OUT','STOPPED','RESV_DEL_HOLD')"

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

fj_status fj_pg_q_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgb b;
    fj_pgb_init(&b);
    fj_pgs *st = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK)
        goto out;
    fj_pgb_put(&b, slurm_select);
    fj_pgb_int(&b, x.cluster_id);
    const struct {
        const fj_strlist *l;
        const char *col;
    } sl[] = {{&q->users, "c.user_name"},
              {&q->states, "c.job_state"},
              {&q->partitions, "c.partition"},
              {&q->accounts, "c.account"}};
    for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++)
        if (sl[i].l->n) {
            fj_pgb_printf(&b, " AND %s IN ", sl[i].col);
            fj_pgb_text_list(&b, sl[i].l);
        }
    const struct {
        const fj_intlist *l;
        const char *col;
    } il[] = {{&q->jobs, "c.job_id"}, {&q->array_jobs, "c.array_job_id"}, {&q->het_jobs, "c.het_job_id"}};
    for (size_t i = 0; i < sizeof il / sizeof il[0]; i++)
        if (il[i].l->n) {
            fj_pgb_printf(&b, " AND %s IN ", il[i].col);
            fj_pgb_int_list(&b, il[i].l->v, il[i].l->n);
        }
    if (q->running == FJ_TRI_YES)
        fj_pgb_put(&b, " AND c.job_state IN " RUNNING_STATES);
    else if (q->running == FJ_TRI_NO)
        fj_pgb_put(&b, " AND c.job_state NOT IN " RUNNING_STATES);
    if (q->steps == FJ_TRI_NO)
        fj_pgb_put(&b, " AND c.job_step = ''");
    if (x.nodes.filtered) {
        fj_pgb_put(&b, " AND EXISTS (SELECT 1 FROM slurm_job_nodes n WHERE n.cluster_id = c.cluster_id"
                       " AND n.job_id = c.job_id AND n.job_step = c.job_step AND n.node_id IN ");
        fj_pgb_node_list(&b, &x);
        fj_pgb_put(&b, ")");
    }
    /* the window overlaps [start (or submit, or the record), end (open while unknown)] */
    if (q->to) {
        fj_pgb_put(&b, " AND coalesce(c.start_time, c.submit_time, c.time) <= ");
        fj_pgb_int(&b, q->to);
    }
    if (q->from) {
        fj_pgb_put(&b, " AND (c.end_time IS NULL OR c.end_time >= ");
        fj_pgb_int(&b, q->from);
        fj_pgb_put(&b, ")");
    }
    const char *dir = q->desc ? "DESC" : "ASC", *op = q->desc ? "<" : ">";
    if (q->after.set) {
        fj_pgb_printf(&b, " AND (c.job_id %s ", op);
        fj_pgb_int(&b, (int64_t)q->after.v);
        fj_pgb_put(&b, " OR (c.job_id = ");
        fj_pgb_int(&b, (int64_t)q->after.v);
        fj_pgb_printf(&b, " AND c.job_step COLLATE \"C\" %s ", op);
        fj_pgb_text(&b, q->after.s);
        fj_pgb_put(&b, "))");
    }
    fj_pgb_printf(&b, " ORDER BY c.job_id %s, c.job_step COLLATE \"C\" %s", dir, dir);
    if (q->limit) {
        fj_pgb_put(&b, " LIMIT ");
        fj_pgb_int(&b, (int64_t)q->limit + 1);
    }
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK || (rs = k->table(k, &fj_qt_slurm_jobs)) != FJ_OK)
        goto out;
    const fj_qtable *t = &fj_qt_slurm_jobs;
    fj_value v[64];
    if (t->n_cols > 64) {
        rs = fj_err_set(err, FJ_EINTERNAL, NULL, "too many columns");
        goto out;
    }
    int r;
    size_t n = 0;
    fj_qpos last = {0};
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        if (q->limit && n == q->limit) {
            q->next = last;
            break;
        }
        v[0] = fj_pv_text(q->cluster);
        for (size_t i = 1; i < t->n_cols; i++)
            v[i] = fj_pv_col(st, (int)i - 1, t->cols[i].type);
        v[2] = fj_pv_text(fj_pgs_text(st, 1)); /* '' is a value, not null */
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
        last.set = true;
        last.v = (double)fj_pgs_int(st, 0);
        const char *step = fj_pgs_text(st, 1);
        snprintf(last.s, sizeof last.s, "%s", step ? step : "");
        n++;
    }
    if (r != FJ_PGS_ROW && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "slurm jobs");
out:
    fj_pgs_finalize(st);
    fj_pgb_free(&b);
    return fj_pgq_end(&x, rs);
}

fj_status fj_pg_q_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *pt = NULL, *pn = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT p.name_id, x.s, p.time, p.n_nodes FROM partitions p JOIN strings x ON x.id = p.name_id"
                             " WHERE p.cluster_id = $1 AND p.time = (SELECT max(time) FROM partitions"
                             " WHERE cluster_id = $1 AND time <= $2) ORDER BY x.s COLLATE \"C\"",
                             &pt)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT node_id FROM partition_nodes WHERE cluster_id = $1 AND time = $2 AND name_id = $3",
                             &pn)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_partitions)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(pt, 1, x.cluster_id);
    fj_pgs_bind_int(pt, 2, q->to ? q->to : INT64_MAX);
    int r;
    while ((r = fj_pgs_step(pt)) == FJ_PGS_ROW) {
        fj_pgq_strv hosts = {0};
        fj_pgs_bind_int(pn, 1, x.cluster_id);
        fj_pgs_bind_int(pn, 2, fj_pgs_int(pt, 2));
        fj_pgs_bind_int(pn, 3, fj_pgs_int(pt, 0));
        int r2;
        while ((r2 = fj_pgs_step(pn)) == FJ_PGS_ROW) {
            const char *name = fj_pgq_node_name(&x, fj_pgs_int(pn, 0));
            if (name && (rs = fj_pgq_strv_push(&x, &hosts, name)) != FJ_OK) {
                fj_pgs_reset(pn);
                goto out;
            }
        }
        fj_pgs_reset(pn);
        if (r2 != FJ_PGS_DONE) {
            rs = fj_pgq_fail(&x, r2, "partition nodes");
            goto out;
        }
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
            fj_pv_text(q->cluster),
            fj_pv_text(fj_pgs_text(pt, 1)),
            fj_pv_time(fj_pgs_int(pt, 2)),
            fj_pv_int(fj_pgs_int(pt, 3)),
            fj_pv_list(hosts.v, hosts.n),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
    if (r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "partitions");
out:
    fj_pgs_finalize(pt);
    fj_pgs_finalize(pn);
    return fj_pgq_end(&x, rs);
}

fj_status fj_pg_q_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *tt = NULL, *sts = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT max(time) FROM node_states WHERE node_id = $1 AND time <= $2", &tt)) !=
            FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
                             " WHERE ns.node_id = $1 AND ns.time = $2 ORDER BY x.s COLLATE \"C\"",
                             &sts)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_node_states)) != FJ_OK)
        goto out;
    size_t *order = fj_arena_alloc(x.a, (x.nodes.n + 1) * sizeof *order), n = 0;
    if (!order) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x.nodes.n; i++)
        if (x.nodes.want[i]) {
            size_t j = n++;
            while (j > 0 && strcmp(x.nodes.names[order[j - 1]], x.nodes.names[i]) > 0) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }
    for (size_t oi = 0; oi < n; oi++) {
        size_t ni = order[oi];
        fj_pgs_bind_int(tt, 1, x.nodes.ids[ni]);
        fj_pgs_bind_int(tt, 2, q->to ? q->to : INT64_MAX);
        int r = fj_pgs_step(tt);
        int64_t t = r == FJ_PGS_ROW ? fj_pgs_int(tt, 0) : 0;
        fj_pgs_reset(tt);
        if (r != FJ_PGS_ROW) {
            rs = fj_pgq_fail(&x, r, "node states");
            goto out;
        }
        if (!t)
            continue;
        const char **l;
        size_t ln;
        fj_pgs_bind_int(sts, 2, t);
        if ((rs = fj_pgq_text_list(&x, sts, x.nodes.ids[ni], &l, &ln)) != FJ_OK)
            goto out;
        fj_value v[3] = {fj_pv_text(x.nodes.names[ni]), fj_pv_time(t), fj_pv_list(l, ln)};
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
out:
    fj_pgs_finalize(tt);
    fj_pgs_finalize(sts);
    return fj_pgq_end(&x, rs);
}
