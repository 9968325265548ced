/* storage/sqlite/query_slurm.c — the Slurm view of the SQLite backend: its statements and transaction;
 * the filters, paging and rows are storage/query/slurm.c's. */
#include "storage/query/slurm.h"
#include "storage/sqlite/query_int.h"

fj_status fj_sq_q_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_sqb b;
    fj_sqb_init(&b);
    sqlite3_stmt *st = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qslurm_jobs_sql(&b, &e, ""); /* SQLite compares text byte-wise by default */
    if ((rs = fj_sqb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    fj_qrows r = fj_sqq_rows(&x, st);
    rs = fj_qslurm_jobs_rows(&e, &r);
out:
    sqlite3_finalize(st);
    fj_qb_free(&b);
    return fj_sqq_end(&x, rs);
}

fj_status fj_sq_q_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *pt = NULL, *pn = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT p.name_id, x.s, p.time, p.n_nodes FROM partitions p JOIN strings x ON x.id = p.name_id"
                             " WHERE p.cluster_id = ?1 AND p.time = (SELECT max(time) FROM partitions"
                             " WHERE cluster_id = ?1 AND time <= ?2) ORDER BY x.s",
                             &pt)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT node_id FROM partition_nodes WHERE cluster_id = ?1 AND time = ?2 AND name_id = ?3",
                             &pn)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows parts = fj_sqq_rows(&x, pt), nodes = fj_sqq_rows(&x, pn);
    rs = fj_qslurm_partitions_rows(&e, &parts, &nodes);
out:
    sqlite3_finalize(pt);
    sqlite3_finalize(pn);
    return fj_sqq_end(&x, rs);
}

fj_status fj_sq_q_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *tt = NULL, *sts = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT max(time) FROM node_states WHERE node_id = ?1 AND time <= ?2", &tt)) !=
            FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
                             " WHERE ns.node_id = ?1 AND ns.time = ?2 ORDER BY x.s",
                             &sts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows latest = fj_sqq_rows(&x, tt), states = fj_sqq_rows(&x, sts);
    rs = fj_qslurm_node_states_rows(&e, &latest, &states);
out:
    sqlite3_finalize(tt);
    sqlite3_finalize(sts);
    return fj_sqq_end(&x, rs);
}
