/* storage/sqlite/query_usage.c — the latest utilisation of each node (q_node_usage) for the SQLite backend: its
 * statements and transaction; what the rows mean is storage/query/usage.c's. */
#include "storage/query/usage.h"
#include "storage/sqlite/chimbuko.h"
#include "storage/sqlite/query_int.h"

fj_status fj_sq_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *ss = NULL, *gs = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT id, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = ?1"
                             " ORDER BY time DESC LIMIT 2",
                             &ss)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus WHERE sample_id = ?2",
                             &gs)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows samples = fj_sqq_rows(&x, ss), gpus = fj_sqq_rows(&x, gs);
    rs = fj_qusage_rows(&e, &samples, &gpus);
out:
    sqlite3_finalize(ss);
    sqlite3_finalize(gs);
    return fj_sqq_end(&x, rs);
}
