/* storage/query/metric_catalog.c — the metrics of a cluster's line-protocol series
 * (storage/core/store_metric_catalog.h): two reads of ts_series, grouped by the database, walked
 * together in metric order. */
#include "storage/core/store_metric_catalog.h"

#include "storage/query/qx.h"

#include <string.h>

/* Per metric and type: the series and the first of them (by host: the probe). */
static const char types_sql[] =
    "SELECT metric, type, count(*), min(id) FROM ts_series WHERE cluster = ?1 GROUP BY metric, type"
    " ORDER BY metric{bytes}, type{bytes}";
/* Per metric, its hosts. */
static const char hosts_sql[] =
    "SELECT metric, host FROM ts_series WHERE cluster = ?1 GROUP BY metric, host ORDER BY metric{bytes}, host{bytes}";

static fj_status read_all(fj_qx *x, const char *cluster, fj_arena *a, const fj_qrows *types, const fj_qrows *hosts,
                          fj_metric_entry **out, size_t *n)
{
    fj_qr_bind_text(types, 1, cluster);
    fj_qr_bind_text(hosts, 1, cluster);
    fj_metric_entry *v = NULL;
    size_t cap = 0;
    bool row = false;
    fj_status st;
    while ((st = fj_qr_step(types, "metric catalogue", &row)) == FJ_OK && row) {
        const char *metric = fj_qr_text(types, 0), *type = fj_qr_text(types, 1);
        fj_metric_entry *e = *n ? &v[*n - 1] : NULL;
        if (!e || strcmp(e->metric, metric ? metric : "") != 0) {
            if ((st = fj_qgrow(a, x->err, &v, *n, &cap, sizeof *v, 32)) != FJ_OK)
                return st;
            e = &v[(*n)++];
            memset(e, 0, sizeof *e);
            if (!(e->metric = fj_arena_strdup(a, metric ? metric : "")))
                return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
            e->probe = (uint32_t)fj_qr_i64(types, 3);
        }
        size_t scap = e->n_scopes; /* grows by doubling from the count */
        const char **sv = fj_arena_alloc(a, (e->n_scopes + 1) * sizeof *sv);
        const char *t = fj_arena_strdup(a, type ? type : "");
        if (!sv || !t)
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        if (scap)
            memcpy(sv, e->scopes, scap * sizeof *sv);
        sv[e->n_scopes++] = t;
        e->scopes = sv;
        e->series += fj_qr_i64(types, 2);
    }
    if (st != FJ_OK)
        return st;
    /* the hosts, in the same metric order */
    size_t i = 0, hcap = 0;
    while ((st = fj_qr_step(hosts, "metric catalogue hosts", &row)) == FJ_OK && row) {
        const char *metric = fj_qr_text(hosts, 0), *host = fj_qr_text(hosts, 1);
        metric = metric ? metric : "";
        while (i < *n && strcmp(v[i].metric, metric) < 0)
            i++, hcap = 0;
        if (i == *n || strcmp(v[i].metric, metric) != 0)
            continue; /* a series written between the two reads */
        fj_metric_entry *e = &v[i];
        if ((st = fj_qgrow(a, x->err, &e->hosts, e->n_hosts, &hcap, sizeof *e->hosts, 16)) != FJ_OK)
            return st;
        if (!(e->hosts[e->n_hosts++] = fj_arena_strdup(a, host ? host : "")))
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    }
    *out = v;
    return st;
}

fj_status fj_store_metric_catalog(fj_store *s, const char *cluster, fj_arena *a, fj_metric_entry **out, size_t *n,
                                  fj_err *err)
{
    *out = NULL;
    *n = 0;
    fj_query q = {0};
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, &q, NULL, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows t = {0}, h = {0};
    if ((rs = fj_qx_prepare(&x, types_sql, &t)) == FJ_OK && (rs = fj_qx_prepare(&x, hosts_sql, &h)) == FJ_OK)
        rs = read_all(&x, cluster, a, &t, &h, out, n);
    fj_qx_finalize(&x, &t);
    fj_qx_finalize(&x, &h);
    return fj_qx_end(&x, rs);
}
