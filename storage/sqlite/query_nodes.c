/* storage/sqlite/query_nodes.c — clusters, nodes, a node's sysinfo history and its topology renderings
 * for the SQLite backend: its statements and transaction; the rows are storage/query/nodes.c's. */
#include "storage/query/nodes.h"
#include "storage/sqlite/query_int.h"

#include <stdio.h>

#define GPUS_SQL FJ_QSYSINFO_GPUS_SELECT " WHERE node_id = ?1 AND time = ?2 ORDER BY idx"

/* --- clusters -------------------------------------------------------------------------------- */

fj_status fj_sq_q_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *cl = NULL, *parts = NULL;
    if ((rs = fj_sqq_prepare(&x,
                             "SELECT c.id, c.name, (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT max((SELECT max(time) FROM samples s WHERE s.node_id = n.id))"
                             "  FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT slurm FROM cluster_info ci WHERE ci.cluster_id = c.id ORDER BY time DESC LIMIT 1)"
                             " FROM clusters c ORDER BY c.name",
                             &cl)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT x.s FROM partitions p JOIN strings x ON x.id = p.name_id WHERE p.cluster_id = ?1"
                             " AND p.time = (SELECT max(time) FROM partitions WHERE cluster_id = ?1) ORDER BY x.s",
                             &parts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows cr = fj_sqq_rows(&x, cl), pr = fj_sqq_rows(&x, parts);
    rs = fj_qclusters_rows(&e, &cr, &pr);
out:
    sqlite3_finalize(cl);
    sqlite3_finalize(parts);
    return fj_sqq_end(&x, rs);
}

/* --- nodes ----------------------------------------------------------------------------------- */

fj_status fj_sq_q_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *pn = NULL, *last = NULL, *sys = NULL, *stt = NULL, *sts = NULL, *gpus = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, GPUS_SQL, &gpus)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT pn.node_id, x.s FROM partition_nodes pn JOIN strings x ON x.id = pn.name_id"
                             " WHERE pn.cluster_id = ?1 AND pn.time = (SELECT max(time) FROM partitions"
                             " WHERE cluster_id = ?1) ORDER BY x.s",
                             &pn)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT max(coalesce((SELECT max(time) FROM samples WHERE node_id = ?1), 0),"
                             " coalesce((SELECT max(time) FROM sysinfo WHERE node_id = ?1), 0))",
                             &last)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, FJ_QSYSINFO_SELECT " WHERE node_id = ?1 ORDER BY time DESC LIMIT 1", &sys)) !=
            FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT max(time) FROM node_states WHERE node_id = ?1", &stt)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
                             " WHERE ns.node_id = ?1 AND ns.time = ?2 ORDER BY x.s",
                             &sts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qnode_stmts st = {fj_sqq_rows(&x, pn),  fj_sqq_rows(&x, last), fj_sqq_rows(&x, sys),
                         fj_sqq_rows(&x, stt), fj_sqq_rows(&x, sts),  fj_sqq_rows(&x, gpus)};
    rs = fj_qnode_list_rows(&e, &st);
out:
    sqlite3_finalize(pn);
    sqlite3_finalize(last);
    sqlite3_finalize(sys);
    sqlite3_finalize(stt);
    sqlite3_finalize(sts);
    sqlite3_finalize(gpus);
    return fj_sqq_end(&x, rs);
}

/* --- sysinfo history ------------------------------------------------------------------------ */

fj_status fj_sq_q_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *st = NULL, *gpus = NULL;
    int64_t node = 0;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_one_node(&x, &node)) != FJ_OK || (rs = fj_sqq_prepare(&x, GPUS_SQL, &gpus)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, FJ_QSYSINFO_SELECT " WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
                             &st)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows rows = fj_sqq_rows(&x, st), gr = fj_sqq_rows(&x, gpus);
    rs = fj_qsysinfo_rows(&e, node, &rows, &gr);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(gpus);
    return fj_sqq_end(&x, rs);
}

/* --- topology ------------------------------------------------------------------------------ */

fj_status fj_sq_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err)
{
    fj_sqq x;
    fj_sink none = {0};
    fj_status rs = fj_sqq_begin(&x, s, q, &none, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *st = NULL, *bl = NULL;
    int64_t node = 0;
    char sql[256];
    const char *col = q->svg ? "topo_svg_blob" : "topo_text_blob";
    snprintf(sql, sizeof sql,
             "SELECT time, %s FROM sysinfo WHERE node_id = ?1 AND time <= ?2 AND %s IS NOT NULL"
             " ORDER BY time DESC LIMIT 1",
             col, col);
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_one_node(&x, &node)) != FJ_OK || (rs = fj_sqq_prepare(&x, sql, &st)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT codec, size, data FROM blobs WHERE id = ?1", &bl)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows latest = fj_sqq_rows(&x, st), blob = fj_sqq_rows(&x, bl);
    rs = fj_qtopology_read(&e, node, &latest, &blob, out, when);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(bl);
    return fj_sqq_end(&x, rs);
}
