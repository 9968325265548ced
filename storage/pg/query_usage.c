/* storage/pg/query_usage.c — the latest utilisation of each node (q_node_usage) for the PostgreSQL backend:
 * its statements and transaction; what the rows mean is storage/query/usage.c's. */
#include "storage/pg/query_int.h"
#include "storage/query/usage.h"

fj_status fj_pg_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *ss = NULL, *gs = NULL;
    /* A sample is (node, time): its time is the key the GPU statement is given. */
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT time, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = $1"
                             " ORDER BY time DESC LIMIT 2",
                             &ss)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus"
                                 " WHERE node_id = $1 AND time = $2",
                             &gs)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows samples = fj_pgq_rows(&x, ss), gpus = fj_pgq_rows(&x, gs);
    rs = fj_qusage_rows(&e, &samples, &gpus);
out:
    fj_pgs_finalize(ss);
    fj_pgs_finalize(gs);
    return fj_pgq_end(&x, rs);
}
