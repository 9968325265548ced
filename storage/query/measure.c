/* storage/query/measure.c — the read of a node's latest aicr snapshot (the measurement_latest op of
 * storage/core/store.h), written once over the driver: one statement in the query's read
 * snapshot. The write of a snapshot envelope is each backend's writer's. */
#include "storage/query/backend.h"
#include "storage/query/ops.h"

#include <string.h>

fj_status fj_q_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err)
{
    if (!cluster || !node)
        return fj_err_set(err, FJ_EINVAL, cluster ? "node" : "cluster", "a cluster and a node are required");
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_sink none = {0};
    fj_qx x;
    fj_status st = fj_qx_begin(&x, s, &q, &none, err);
    if (st != FJ_OK)
        return st;
    fj_qrows r = {0};
    bool row = false;
    if ((st = fj_qx_prepare(&x,
                            "SELECT m.time, m.snapshot FROM measurement_snapshots m"
                            " JOIN clusters c ON c.id = m.cluster_id"
                            " JOIN nodes n ON n.id = m.node_id AND n.cluster_id = c.id"
                            " WHERE c.name = ?1 AND n.name = ?2 ORDER BY m.time DESC LIMIT 1",
                            &r)) == FJ_OK) {
        fj_qr_bind_text(&r, 1, cluster);
        fj_qr_bind_text(&r, 2, node);
        st = fj_qr_step(&r, "query measurements", &row);
    }
    if (st == FJ_OK && row) {
        *time = fj_qr_i64(&r, 0);
        const char *snap = fj_qr_text(&r, 1);
        st = fj_buf_append(out, snap ? snap : "", snap ? strlen(snap) : 0);
        if (st != FJ_OK)
            fj_err_set(err, st, NULL, "snapshot does not fit the response buffer");
    } else if (st == FJ_OK) {
        st = fj_err_set(err, FJ_ENOTFOUND, "node", "no measurements of node '%s' in cluster '%s'", node, cluster);
    }
    fj_qx_finalize(&x, &r);
    return fj_qx_end(&x, st);
}
