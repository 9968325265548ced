/* storage/pg/query_misc.c — uptime and error records of the PostgreSQL backend: its statements and
 * transaction; what the rows mean is storage/query/misc.c's. */
#include "storage/query/misc.h"
#include "storage/pg/query_int.h"

fj_status fj_pg_q_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *ts = NULL, *gs = NULL, *hg = NULL;
    if ((rs = fj_quptime_window(q, err)) != FJ_OK || (rs = fj_pgq_cluster(&x)) != FJ_OK ||
        (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT time FROM samples WHERE node_id = $1 AND time >= $2 AND time <= $3"
                                 " ORDER BY time", &ts)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT g.time, g.idx, g.failing FROM sample_gpus g"
                                 " WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                 " ORDER BY g.time, g.idx", &gs)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = $1", &hg)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows times = fj_pgq_rows(&x, ts), cards = fj_pgq_rows(&x, gs), sysinfo = fj_pgq_rows(&x, hg);
    rs = fj_quptime_rows(&e, &times, &cards, &sysinfo);
out:
    fj_pgs_finalize(ts);
    fj_pgs_finalize(gs);
    fj_pgs_finalize(hg);
    return fj_pgq_end(&x, rs);
}

fj_status fj_pg_q_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
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
    fj_qerrors_sql(&b, &e, " COLLATE \"C\"");
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    fj_qrows r = fj_pgq_rows(&x, st);
    rs = fj_qerrors_rows(&e, &r);
out:
    fj_pgs_finalize(st);
    fj_qb_free(&b);
    return fj_pgq_end(&x, rs);
}
