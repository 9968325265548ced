/* storage/pg/query_nodes.c — clusters, nodes, a node's sysinfo history and its topology renderings
 * for the PostgreSQL backend: its statements and transaction (names sort byte-wise, COLLATE "C",
 * as in SQLite); the rows are storage/query/nodes.c's. */
#include "storage/query/nodes.h"
#include "storage/pg/query_int.h"

#include <stdio.h>

#define GPUS_SQL FJ_QSYSINFO_GPUS_SELECT " WHERE node_id = $1 AND time = $2 ORDER BY idx"

/* --- clusters -------------------------------------------------------------------------------- */

fj_status fj_pg_q_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *cl = NULL, *parts = NULL;
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT c.id, c.name, (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT max((SELECT max(time) FROM samples s WHERE s.node_id = n.id))"
                             "  FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT slurm FROM cluster_info ci WHERE ci.cluster_id = c.id ORDER BY time DESC LIMIT 1)"
                             " FROM clusters c ORDER BY c.name COLLATE \"C\"",
                             &cl)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT x.s FROM partitions p JOIN strings x ON x.id = p.name_id WHERE p.cluster_id = $1"
                             " AND p.time = (SELECT max(time) FROM partitions WHERE cluster_id = $1) ORDER BY x.s COLLATE \"C\"",
                             &parts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows cr = fj_pgq_rows(&x, cl), pr = fj_pgq_rows(&x, parts);
    rs = fj_qclusters_rows(&e, &cr, &pr);
out:
    fj_pgs_finalize(cl);
    fj_pgs_finalize(parts);
    return fj_pgq_end(&x, rs);
}

/* --- nodes ----------------------------------------------------------------------------------- */

fj_status fj_pg_q_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *pn = NULL, *last = NULL, *sys = NULL, *stt = NULL, *sts = NULL, *gpus = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, GPUS_SQL, &gpus)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT pn.node_id, x.s FROM partition_nodes pn JOIN strings x ON x.id = pn.name_id"
                             " WHERE pn.cluster_id = $1 AND pn.time = (SELECT max(time) FROM partitions"
                             " WHERE cluster_id = $1) ORDER BY x.s COLLATE \"C\"",
                             &pn)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT greatest(coalesce((SELECT max(time) FROM samples WHERE node_id = $1), 0),"
                             " coalesce((SELECT max(time) FROM sysinfo WHERE node_id = $1), 0))",
                             &last)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, FJ_QSYSINFO_SELECT " WHERE node_id = $1 ORDER BY time DESC LIMIT 1", &sys)) !=
            FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT max(time) FROM node_states WHERE node_id = $1", &stt)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
                             " WHERE ns.node_id = $1 AND ns.time = $2 ORDER BY x.s COLLATE \"C\"",
                             &sts)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qnode_stmts st = {fj_pgq_rows(&x, pn),  fj_pgq_rows(&x, last), fj_pgq_rows(&x, sys),
                         fj_pgq_rows(&x, stt), fj_pgq_rows(&x, sts),  fj_pgq_rows(&x, gpus)};
    rs = fj_qnode_list_rows(&e, &st);
out:
    fj_pgs_finalize(pn);
    fj_pgs_finalize(last);
    fj_pgs_finalize(sys);
    fj_pgs_finalize(stt);
    fj_pgs_finalize(sts);
    fj_pgs_finalize(gpus);
    return fj_pgq_end(&x, rs);
}

/* --- sysinfo history ------------------------------------------------------------------------ */

fj_status fj_pg_q_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *st = NULL, *gpus = NULL;
    int64_t node = 0;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_one_node(&x, &node)) != FJ_OK || (rs = fj_pgq_prepare(&x, GPUS_SQL, &gpus)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, FJ_QSYSINFO_SELECT " WHERE node_id = $1 AND time >= $2 AND time <= $3 ORDER BY time",
                             &st)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows rows = fj_pgq_rows(&x, st), gr = fj_pgq_rows(&x, gpus);
    rs = fj_qsysinfo_rows(&e, node, &rows, &gr);
out:
    fj_pgs_finalize(st);
    fj_pgs_finalize(gpus);
    return fj_pgq_end(&x, rs);
}

/* --- topology ------------------------------------------------------------------------------ */

fj_status fj_pg_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err)
{
    fj_pgq x;
    fj_sink none = {0};
    fj_status rs = fj_pgq_begin(&x, s, q, &none, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *st = NULL, *bl = NULL;
    int64_t node = 0;
    char sql[256];
    const char *col = q->svg ? "topo_svg_blob" : "topo_text_blob";
    snprintf(sql, sizeof sql,
             "SELECT time, %s FROM sysinfo WHERE node_id = $1 AND time <= $2 AND %s IS NOT NULL"
             " ORDER BY time DESC LIMIT 1",
             col, col);
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_one_node(&x, &node)) != FJ_OK || (rs = fj_pgq_prepare(&x, sql, &st)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT codec, size, data FROM blobs WHERE id = $1", &bl)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    fj_qrows latest = fj_pgq_rows(&x, st), blob = fj_pgq_rows(&x, bl);
    rs = fj_qtopology_read(&e, node, &latest, &blob, out, when);
out:
    fj_pgs_finalize(st);
    fj_pgs_finalize(bl);
    return fj_pgq_end(&x, rs);
}
