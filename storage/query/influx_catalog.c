/* storage/query/influx_catalog.c — the clusters holding line-protocol series, for InfluxQL's
 * SHOW DATABASES (storage/query/influx_catalog.h). */
#include "storage/query/influx_catalog.h"

#include "storage/query/backend.h"

#include <string.h>

fj_status fj_q_ts_clusters(fj_store *s, fj_arena *a, const char ***out, size_t *n, fj_err *err)
{
    *out = NULL;
    *n = 0;
    fj_query q = {0};
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, &q, NULL, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows r = {0};
    if ((rs = fj_qx_prepare(&x, "SELECT c FROM (SELECT DISTINCT cluster AS c FROM ts_series) d ORDER BY c{bytes}", &r)) != FJ_OK)
        goto out;
    size_t cap = 0;
    for (;;) {
        bool row = false;
        if ((rs = fj_qr_step(&r, "list the clusters of ts_series", &row)) != FJ_OK || !row)
            break;
        const char *c = fj_qr_text(&r, 0);
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            const char **nv = fj_arena_calloc(a, cap, sizeof *nv);
            if (!nv) {
                rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            if (*n)
                memcpy(nv, *out, *n * sizeof *nv);
            *out = nv;
        }
        if (!((*out)[*n] = fj_arena_strdup(a, c ? c : ""))) {
            rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        (*n)++;
    }
out:
    fj_qx_finalize(&x, &r);
    return fj_qx_end(&x, rs);
}
