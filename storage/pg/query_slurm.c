/* storage/pg/query_slurm.c — the Slurm view of the PostgreSQL backend: its statements and transaction;
 * the filters, paging and rows are storage/query/slurm.c's. */
#include "storage/query/slurm.h"
#include "storage/pg/query_int.h"

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
    fj_qenv e = fj_pgq_env(&x);
    fj_qslurm_jobs_sql(&b, &e, " COLLATE \"C\"");
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    fj_qrows r = fj_pgq_rows(&x, st);
    rs = fj_qslurm_jobs_rows(&e, &r);
out:
    fj_pgs_finalize(st);
    fj_qb_free(&b);
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
                             &pn)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows parts = fj_pgq_rows(&x, pt), nodes = fj_pgq_rows(&x, pn);
    rs = fj_qslurm_partitions_rows(&e, &parts, &nodes);
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
                             &sts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows latest = fj_pgq_rows(&x, tt), states = fj_pgq_rows(&x, sts);
    rs = fj_qslurm_node_states_rows(&e, &latest, &states);
out:
    fj_pgs_finalize(tt);
    fj_pgs_finalize(sts);
    return fj_pgq_end(&x, rs);
}
