/* storage/query/measure.c — the read of a node's latest aicr snapshot (fj_store_measure_latest,
 * storage/core/store_measure.h), written once over the driver: one statement in the query's read
 * snapshot. The write of a snapshot envelope is each backend's writer's. */
#include "storage/query/qx.h"
#include "storage/core/store_measure.h"

#include <string.h>

typedef struct latest {
    const char *cluster, *node;
    fj_time *time;
    fj_buf *out;
} latest;

static fj_status latest_rows(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    const latest *l = arg;
    const fj_qrows *r = &st[0];
    fj_qr_bind_text(r, 1, l->cluster);
    fj_qr_bind_text(r, 2, l->node);
    bool row = false;
    fj_status rs = fj_qr_step(r, "query measurements", &row);
    if (rs != FJ_OK)
        return rs;
    if (!row)
        return fj_err_set(e->err, FJ_ENOTFOUND, "node", "no measurements of node '%s' in cluster '%s'", l->node,
                          l->cluster);
    *l->time = fj_qr_i64(r, 0);
    const char *snap = fj_qr_text(r, 1);
    rs = fj_buf_append(l->out, snap ? snap : "", snap ? strlen(snap) : 0);
    if (rs != FJ_OK)
        fj_err_set(e->err, rs, NULL, "snapshot does not fit the response buffer");
    return rs;
}

fj_status fj_store_measure_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err)
{
    if (!cluster || !node)
        return fj_err_set(err, FJ_EINVAL, cluster ? "node" : "cluster", "a cluster and a node are required");
    static const char *const sql[] = {
        "SELECT m.time, m.snapshot FROM measurement_snapshots m"
        " JOIN clusters c ON c.id = m.cluster_id"
        " JOIN nodes n ON n.id = m.node_id AND n.cluster_id = c.id"
        " WHERE c.name = ?1 AND n.name = ?2 ORDER BY m.time DESC LIMIT 1",
        NULL,
    };
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_sink none = {0};
    latest l = {cluster, node, time, out};
    return fj_qx_run(s, &q, &none, err, FJ_QX_TX, sql, latest_rows, &l);
}
