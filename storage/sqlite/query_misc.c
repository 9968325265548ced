/* storage/sqlite/query_misc.c — uptime and error records of the SQLite backend: its statements and
 * transaction; what the rows mean is storage/query/misc.c's. */
#include "storage/query/misc.h"
#include "storage/sqlite/query_int.h"

fj_status fj_sq_q_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *ts = NULL, *gs = NULL, *hg = NULL;
    if ((rs = fj_quptime_window(q, err)) != FJ_OK || (rs = fj_sqq_cluster(&x)) != FJ_OK ||
        (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT time FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3"
                                 " ORDER BY time", &ts)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT s.time, g.idx, g.failing FROM samples s CROSS JOIN sample_gpus g"
                                 " ON g.sample_id = s.id WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3"
                                 " ORDER BY s.time, g.idx", &gs)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = ?1", &hg)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows times = fj_sqq_rows(&x, ts), cards = fj_sqq_rows(&x, gs), sysinfo = fj_sqq_rows(&x, hg);
    rs = fj_quptime_rows(&e, &times, &cards, &sysinfo);
out:
    sqlite3_finalize(ts);
    sqlite3_finalize(gs);
    sqlite3_finalize(hg);
    return fj_sqq_end(&x, rs);
}

fj_status fj_sq_q_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
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
    fj_qerrors_sql(&b, &e, ""); /* SQLite compares text byte-wise by default */
    if ((rs = fj_sqb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    fj_qrows r = fj_sqq_rows(&x, st);
    rs = fj_qerrors_rows(&e, &r);
out:
    sqlite3_finalize(st);
    fj_qb_free(&b);
    return fj_sqq_end(&x, rs);
}
