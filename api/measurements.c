/* measurements.c — GET /api/v1/nodes/{node}/measurements: a node's latest aicr snapshot, or one
 * value of it named by an aicr constraint path (resolved by ingest/aicr.c, a pure function over
 * the stored normalised snapshot). */
#include "api/measurements.h"

#include "ingest/aicr.h"
#include "storage/core/store_measure.h"

#include <string.h>

static void reply_err(fj_http_req *r, fj_status st, const char *path, const char *msg, const char *arg)
{
    fj_err err = {0};
    fj_err_set(&err, st, path, msg, arg);
    fj_http_reply_error(r, st, &err);
}

void fj_api_node_measurements(fj_http_req *r)
{
    fj_arena *a = fj_http_arena(r);
    const char *rest = fj_http_path_rest(r);
    const char *slash = strchr(rest, '/');
    if (!slash || slash == rest || strcmp(slash + 1, "measurements") != 0) {
        reply_err(r, FJ_ENOTFOUND, "path", "no such endpoint: %s", fj_http_path(r));
        return;
    }
    const char *node = fj_arena_strndup(a, rest, (size_t)(slash - rest));
    const char *cluster = fj_http_arg(r, "cluster");
    if (!node) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    if (!cluster || !*cluster) {
        reply_err(r, FJ_EINVAL, "cluster", "parameter '%s': required", "cluster");
        return;
    }
    if (!fj_auth_may_read(fj_http_principal(r), cluster)) {
        reply_err(r, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", cluster);
        return;
    }
    fj_err err = {0};
    const char *pathq = fj_http_arg(r, "path");
    fj_aicr_path path;
    fj_status st;
    if (pathq && (st = fj_aicr_path_parse(a, pathq, &path, &err)) != FJ_OK) {
        fj_http_reply_error(r, st, &err);
        return;
    }
    fj_store *s = fj_http_reader(r, &err);
    if (!s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    fj_buf snap, out;
    fj_buf_init(&snap, (size_t)1 << 30);
    fj_buf_set_budget(&snap, fj_http_mem(r)); /* counts against query-memory */
    fj_buf_init(&out, (size_t)1 << 30);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    fj_time t = 0;
    char ts[21];
    if ((st = fj_store_measure_latest(s, cluster, node, &t, &snap, &err)) != FJ_OK)
        goto out;
    fj_time_format(t, ts);
    fj_buf_puts(&out, "{\"cluster\":");
    fj_buf_json_str(&out, cluster);
    fj_buf_puts(&out, ",\"node\":");
    fj_buf_json_str(&out, node);
    fj_buf_printf(&out, ",\"time\":\"%s\",", ts);
    if (!pathq) {
        fj_buf_puts(&out, "\"snapshot\":");
        fj_buf_append(&out, snap.data, snap.len);
    } else {
        fj_aicr_snapshot *sn;
        fj_aicr_result res;
        if ((st = fj_aicr_decode(a, snap.data, snap.len, FJ_AICR_JSON, &sn, &err)) != FJ_OK) {
            /* what we stored no longer decodes: a bug, not the client's fault */
            st = fj_err_set(&err, FJ_EINTERNAL, NULL, "stored snapshot does not decode: %s", err.message);
            goto out;
        }
        if ((st = fj_aicr_resolve(a, sn, &path, &res, &err)) != FJ_OK)
            goto out;
        fj_buf_puts(&out, "\"path\":");
        fj_buf_json_str(&out, pathq);
        fj_buf_puts(&out, ",\"value\":");
        fj_buf_json_str(&out, res.value);
        fj_buf_puts(&out, ",\"reading\":");
        if (res.reading)
            fj_aicr_reading_json(res.reading, &out);
        else
            fj_buf_json_str(&out, res.value);
        if (res.reading && res.reading->unit) {
            fj_buf_puts(&out, ",\"unit\":");
            fj_buf_json_str(&out, res.reading->unit);
        }
        fj_buf_puts(&out, ",\"from\":");
        fj_buf_json_str(&out, res.from);
    }
    if (fj_buf_puts(&out, "}\n") != FJ_OK || !out.data)
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "the answer does not fit in memory");
out:
    if (st == FJ_OK)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, st, &err);
    fj_buf_free(&snap);
    fj_buf_free(&out);
}
