/* api.c — the query endpoints of the foundation: jobs and nodes. */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FJ_VERSION
#define FJ_VERSION "dev"
#endif

static void bad_param(fj_http_req *r, const char *name, const char *why)
{
    fj_err err = {0};
    fj_err_set(&err, FJ_EINVAL, name, "parameter '%s': %s", name, why);
    fj_http_reply_error(r, FJ_EINVAL, &err);
}

/* The cluster parameter, checked against the credential. NULL when an answer was sent. */
static const char *readable_cluster(fj_http_req *r)
{
    const char *cluster = fj_http_arg(r, "cluster");
    if (!cluster || !*cluster) {
        bad_param(r, "cluster", "required");
        return NULL;
    }
    if (!fj_auth_may_read(fj_http_principal(r), cluster)) {
        fj_err err = {0};
        fj_err_set(&err, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", cluster);
        fj_http_reply_error(r, FJ_EFORBIDDEN, &err);
        return NULL;
    }
    return cluster;
}

static bool time_param(fj_http_req *r, const char *name, fj_time *out)
{
    const char *v = fj_http_arg(r, name);
    *out = 0;
    if (!v)
        return true;
    if (fj_time_parse_param(v, out) != FJ_OK) {
        bad_param(r, name, "not an RFC 3339 time or epoch seconds");
        return false;
    }
    return true;
}

static void reply_buf(fj_http_req *r, fj_status st, fj_buf *out, const fj_err *err)
{
    if (st == FJ_OK)
        fj_http_reply(r, 200, NULL, out->data ? out->data : "{}", out->len);
    else
        fj_http_reply_error(r, st, err);
    fj_buf_free(out);
}

void fj_api_jobs(fj_http_req *r)
{
    fj_job_query q = {.limit = 10000};
    if (!(q.cluster = readable_cluster(r)) || !time_param(r, "from", &q.from) || !time_param(r, "to", &q.to))
        return;
    const char *limit = fj_http_arg(r, "limit");
    if (limit) {
        char *end;
        long long n = strtoll(limit, &end, 10);
        if (*end || n < 1 || n > 1000000) {
            bad_param(r, "limit", "must be 1-1000000");
            return;
        }
        q.limit = (size_t)n;
    }
    fj_err err = {0};
    fj_store *s = fj_http_reader(r, &err);
    if (!s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_status st = fj_store_ops_of(s)->query_jobs(s, &q, &out, &err);
    reply_buf(r, st, &out, &err);
}

void fj_api_nodes(fj_http_req *r)
{
    const char *cluster = readable_cluster(r);
    if (!cluster)
        return;
    fj_err err = {0};
    fj_store *s = fj_http_reader(r, &err);
    if (!s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_status st = fj_store_ops_of(s)->query_nodes(s, cluster, &out, &err);
    reply_buf(r, st, &out, &err);
}

void fj_api_health(fj_http_req *r)
{
    char body[128];
    int n = snprintf(body, sizeof body, "{\"status\":\"ok\",\"version\":\"%s\"}\n", FJ_VERSION);
    fj_http_reply(r, 200, NULL, body, (size_t)n);
}
