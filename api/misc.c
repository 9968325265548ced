/* misc.c — GET /api/v1/clusters, /api/v1/uptime, /api/v1/errors and /api/v1/openapi.json. */
#include "api/api.h"
#include "api/api_int.h"
#include "storage/core/store_query.h"

static bool may_read(void *ctx, const char *cluster)
{
    return fj_auth_may_read(ctx, cluster);
}

void fj_api_clusters(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_clusters, NULL, &a))
        return;
    a.q.cluster_match = may_read;
    a.q.cluster_ctx = (void *)fj_http_principal(r);
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_clusters);
}

void fj_api_uptime(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_uptime, NULL, &a))
        return;
    const fj_pval *v = fj_param(&a.p, "interval");
    if (v->set) {
        if (v->i < 1) {
            fj_api_bad_param(r, "interval", "must be at least 1 second");
            return;
        }
        a.q.interval_s = v->i;
    }
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_uptime);
}

void fj_api_errors(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_errors, "errors", &a))
        return;
    a.q.sources = fj_api_strlist(&a, "source");
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_errors);
}

void fj_api_openapi(fj_http_req *r)
{
    fj_buf b;
    fj_buf_init(&b, (size_t)16 << 20);
    fj_status st = fj_openapi_write(&b);
    if (st == FJ_OK)
        fj_http_reply(r, 200, NULL, b.data, b.len);
    else
        fj_http_reply_error(r, st, NULL);
    fj_buf_free(&b);
}
