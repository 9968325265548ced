/* ingest_routes.c — from request body to committed batch, and the answers producers expect. */
#include "server/ingest_routes.h"

#include "server/prom.h"

#include "ingest/aicr.h"
#include "server/measure_routes.h"
#include "server/metrics_routes.h"
#include "ingest/sonar.h"

#include <stdio.h>
#include <string.h>

/* Outcome of one envelope of a request. */
typedef struct item {
    fj_status st;
    fj_err err;
    fj_kind kind;
    const char *cluster, *node;
    fj_time time;
    long env_index; /* in the batch, or -1 when rejected */
} item;

typedef struct sonar_ctx {
    fj_http_req *r;
    item *items;
    size_t n_items, cap_items;
    fj_batch *batch;
    fj_write_count *counts;
    bool single; /* answer as the insert path does */
    bool adapt;  /* /ingest: answer one envelope as the insert path, several as the bulk path */
} sonar_ctx;

static void on_item(void *p, size_t index, fj_status st, const fj_err *err, const fj_envelope *env)
{
    sonar_ctx *c = p;
    if (c->n_items == c->cap_items) {
        size_t cap = c->cap_items ? c->cap_items * 2 : 8;
        item *items = fj_arena_calloc(fj_http_arena(c->r), cap, sizeof *items);
        if (!items)
            return; /* out of memory: the item is not reported; the batch decides the answer */
        if (c->n_items)
            memcpy(items, c->items, c->n_items * sizeof *items);
        c->items = items;
        c->cap_items = cap;
    }
    item *it = &c->items[c->n_items++];
    it->st = st;
    it->env_index = -1;
    if (err)
        it->err = *err;
    if (st == FJ_OK && env) {
        it->kind = env->kind;
        it->cluster = env->cluster;
        it->node = env->node;
        it->time = env->time;
        it->env_index = (long)c->batch->n_envs - 1;
    }
}

/* Envelopes for a cluster the credential does not cover are taken out of the batch: sonalyze
 * answers 401 when the Basic-auth user differs from the cluster in the data. So are envelopes
 * older than their kind's retention (400, code "expired"): stored again, a record whose raw rows
 * are gone would be counted twice (storage/core/retention.h). */
static void drop_refused(sonar_ctx *c)
{
    const fj_principal *who = fj_http_principal(c->r);
    const fj_retention keep = fj_config_retention(fj_http_config(c->r), NULL);
    const fj_time now = fj_time_now();
    fj_batch *b = c->batch;
    size_t kept = 0;
    for (size_t i = 0; i < c->n_items; i++) {
        item *it = &c->items[i];
        if (it->env_index < 0)
            continue;
        fj_envelope *env = &b->envs[it->env_index];
        if ((!env->cluster || !*env->cluster) && !who->anonymous) {
            /* An error envelope may name no cluster (the spec's own test data does): it belongs
             * to the cluster whose credential sent it. */
            env->cluster = fj_arena_strdup(b->arena, who->name);
            it->cluster = env->cluster;
        }
        if (!fj_auth_may_write(who, it->cluster) || !it->cluster) {
            it->st = fj_err_set(&it->err, FJ_EAUTH, "data.attributes.cluster",
                                "credential '%s' may not write data of cluster '%s'", who->name,
                                it->cluster ? it->cluster : "");
            it->env_index = -1;
            continue;
        }
        if ((it->st = fj_retention_admit(&keep, env, now, &it->err)) != FJ_OK) {
            it->env_index = -1;
            continue;
        }
        b->envs[kept] = b->envs[it->env_index];
        it->env_index = (long)kept++;
    }
    b->n_envs = kept;
}

static void put_item_ok(fj_buf *out, const item *it, const fj_write_count *cnt)
{
    char t[21];
    fj_time_format(it->time, t);
    fj_buf_puts(out, "{\"cluster\":");
    fj_buf_json_str(out, it->cluster ? it->cluster : "");
    fj_buf_puts(out, ",\"node\":");
    fj_buf_json_str(out, it->node ? it->node : "");
    fj_buf_printf(out, ",\"topic\":\"%s\",\"time\":\"%s\"", fj_kind_name(it->kind), t);
    if (cnt)
        fj_buf_printf(out, ",\"inserted\":%llu,\"duplicates\":%llu", (unsigned long long)cnt->inserted,
                      (unsigned long long)cnt->duplicates);
    fj_buf_puts(out, "}");
}

static void put_error(fj_buf *out, const item *it)
{
    fj_buf_puts(out, "{\"code\":");
    fj_buf_json_str(out, it->err.code[0] ? it->err.code : fj_status_name(it->st));
    fj_buf_puts(out, ",\"message\":");
    fj_buf_json_str(out, it->err.message);
    if (it->err.path[0]) {
        fj_buf_puts(out, ",\"path\":");
        fj_buf_json_str(out, it->err.path);
    }
    fj_buf_puts(out, "}");
}

/* Each envelope to the counters: accepted under the cluster it named (one its credential may
 * write), refused under the credential's and the error's code. */
static void count_envelopes(const sonar_ctx *c, const fj_write_req *w)
{
    const fj_principal *who = fj_http_principal(c->r);
    for (size_t i = 0; i < c->n_items; i++) {
        const item *it = &c->items[i];
        if (it->st == FJ_OK && (!w || w->status == FJ_OK))
            fj_prom_accepted(FJ_PROM_ENVELOPES, it->cluster, 1);
        else if (it->st == FJ_OK)
            fj_prom_refused(FJ_PROM_ENVELOPES, who->name, w->err.code[0] ? w->err.code : fj_status_name(w->status), 1);
        else
            fj_prom_refused(FJ_PROM_ENVELOPES, who->name, it->err.code[0] ? it->err.code : fj_status_name(it->st), 1);
    }
}

/* Envelopes that a cluster's node or job quota refused in the writer (storage/sqlite/quota.c)
 * become rejected items: 400 for the cap, which needs the operator, 429 for the rate of new jobs,
 * which passes (Retry-After: the bucket refills by the second). */
static void apply_quotas(sonar_ctx *c, const fj_write_req *w)
{
    if (!w || w->status != FJ_OK || !c->counts)
        return;
    const fj_config *cfg = fj_http_config(c->r);
    for (size_t i = 0; i < c->n_items; i++) {
        item *it = &c->items[i];
        fj_limit l = it->st == FJ_OK ? c->counts[it->env_index].limit : FJ_LIMIT_NONE;
        if (l == FJ_LIMIT_NONE)
            continue;
        bool rate = fj_limit_is_rate(l);
        unsigned v = l == FJ_LIMIT_NODES_TOTAL ? cfg->max_nodes_per_cluster : cfg->max_new_jobs_per_minute;
        it->st = rate ? FJ_ELIMITED : FJ_EINVAL;
        fj_err_set(&it->err, it->st, fj_limit_name(l), "%s limit exceeded: (%u) cluster '%s' %s; envelope not stored",
                   fj_limit_name(l), v, it->cluster ? it->cluster : "",
                   rate ? "started too many new jobs this minute" : "has as many nodes as it may");
        snprintf(it->err.code, sizeof it->err.code, "limit_exceeded");
        if (rate)
            fj_http_reply_header(c->r, "Retry-After", "1");
    }
}

static void answer(sonar_ctx *c, fj_write_req *w)
{
    fj_http_req *r = c->r;
    apply_quotas(c, w);
    count_envelopes(c, w);
    if (w && w->status != FJ_OK) {
        fj_http_reply_error(r, w->status == FJ_EIO ? FJ_EBUSY : w->status, &w->err);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    if (c->single || (c->adapt && c->n_items == 1)) {
        const item *it = c->n_items ? &c->items[0] : NULL;
        if (!it || it->st != FJ_OK) {
            fj_http_reply_error(r, it ? it->st : FJ_EINVAL, it ? &it->err : NULL);
            return;
        }
        put_item_ok(&out, it, w ? &c->counts[it->env_index] : NULL);
        fj_buf_puts(&out, "\n");
        fj_http_reply(r, 200, NULL, out.data, out.len);
        fj_buf_free(&out);
        return;
    }
    size_t accepted = 0, rejected = 0;
    int worst = 200;
    for (size_t i = 0; i < c->n_items; i++) {
        if (c->items[i].st == FJ_OK) {
            accepted++;
        } else {
            rejected++;
            int h = fj_status_http(c->items[i].st);
            if (worst == 200 || (h == 401 && worst != 401))
                worst = h;
        }
    }
    /* Some rejected: the answer is the rejection (4xx, which no client retries) and says which
     * envelopes were committed, as InfluxDB's partial write does. */
    fj_buf_printf(&out, "{\"accepted\":%zu,\"rejected\":%zu,\"items\":[", accepted, rejected);
    for (size_t i = 0; i < c->n_items; i++) {
        const item *it = &c->items[i];
        fj_buf_printf(&out, "%s{\"index\":%zu,\"status\":\"%s\"", i ? "," : "", i,
                      it->st == FJ_OK ? "accepted" : "rejected");
        if (it->st == FJ_OK) {
            fj_buf_puts(&out, ",\"envelope\":");
            put_item_ok(&out, it, w ? &c->counts[it->env_index] : NULL);
        } else {
            fj_buf_puts(&out, ",\"error\":");
            put_error(&out, it);
        }
        fj_buf_puts(&out, "}");
    }
    fj_buf_puts(&out, "]}\n");
    if (out.data)
        fj_http_reply(r, worst, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
    fj_buf_free(&out);
}

static void on_committed(fj_http_req *r, fj_write_req *w)
{
    answer(fj_http_submit_ctx(r), w);
}

static void ingest_sonar(fj_http_req *r, int expect, bool single, bool adapt)
{
    sonar_ctx *c = fj_arena_calloc(fj_http_arena(r), 1, sizeof *c);
    fj_batch *b = c ? fj_batch_new() : NULL;
    if (!b) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    c->r = r;
    c->batch = b;
    c->single = single;
    c->adapt = adapt;
    size_t len;
    const char *body = fj_http_body(r, &len);
    fj_err err = {0};
    fj_status st = fj_sonar_decode_body(body, len, expect, b, on_item, c, &err);
    if (st == FJ_ENOMEM) {
        fj_batch_free(b);
        fj_http_reply_error(r, st, &err);
        return;
    }
    if (single && c->n_items > 1) {
        fj_batch_free(b);
        fj_err_set(&err, FJ_EINVAL, "body", "this path takes exactly one envelope; use /api/v1/ingest/sonar for many");
        fj_http_reply_error(r, FJ_EINVAL, &err);
        return;
    }
    if (c->n_items == 0) {
        fj_batch_free(b);
        if (st == FJ_OK)
            fj_err_set(&err, FJ_EINVAL, "body", "empty body: no envelope");
        fj_http_reply_error(r, FJ_EINVAL, &err);
        return;
    }
    drop_refused(c);
    if (b->n_envs == 0) {
        fj_batch_free(b);
        answer(c, NULL);
        return;
    }
    c->counts = fj_arena_calloc(fj_http_arena(r), b->n_envs, sizeof *c->counts);
    if (!c->counts) {
        fj_batch_free(b);
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    fj_http_submit(r, b, c->counts, on_committed, c);
}

/* "sample", "sysinfo", "job", "jobs", "cluster", optionally behind "<prefix>." */
static int kind_from_topic(const char *topic)
{
    const char *dot = strrchr(topic, '.');
    const char *t = dot ? dot + 1 : topic;
    if (!strcmp(t, "sample"))
        return FJ_KIND_SAMPLE;
    if (!strcmp(t, "sysinfo"))
        return FJ_KIND_SYSINFO;
    if (!strcmp(t, "job") || !strcmp(t, "jobs"))
        return FJ_KIND_JOB;
    if (!strcmp(t, "cluster"))
        return FJ_KIND_CLUSTER;
    return -1;
}

void fj_route_sonar_insert(fj_http_req *r)
{
    int kind = kind_from_topic(fj_http_path_rest(r));
    if (kind < 0) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ENOTFOUND, "path", "unknown topic '%s' (sample, sysinfo, job, cluster)",
                   fj_http_path_rest(r));
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    ingest_sonar(r, kind, true, false);
}

void fj_route_sonar_bulk(fj_http_req *r)
{
    ingest_sonar(r, -1, false, false);
}

/* Sonar JSON unless the body says otherwise: JSON starts with '{' after optional whitespace. */
static bool looks_like_json(const char *body, size_t len, const char *ctype)
{
    if (ctype && (strstr(ctype, "json") != NULL))
        return true;
    for (size_t i = 0; i < len; i++) {
        char ch = body[i];
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        return ch == '{';
    }
    return false;
}

void fj_route_ingest_any(fj_http_req *r)
{
    size_t len;
    const char *body = fj_http_body(r, &len);
    const char *ctype = fj_http_header(r, "Content-Type");
    if (fj_aicr_content_type_is_yaml(ctype) || fj_aicr_json_is_snapshot(body, len)) {
        fj_route_measurements_ingest(r); /* an aicr snapshot (YAML, or JSON with "kind":"Snapshot") */
        return;
    }
    if (looks_like_json(body, len, ctype)) {
        ingest_sonar(r, -1, false, true);
        return;
    }
    if (!ctype || !*ctype || !strncmp(ctype, "text/plain", 10) || !strncmp(ctype, "application/octet-stream", 24)) {
        fj_route_lp_ingest(r); /* line protocol (server/metrics_routes.c) */
        return;
    }
    fj_err err = {0};
    fj_err_set(&err, FJ_EUNSUPPORTED, "Content-Type",
               "unrecognised body (Content-Type '%s'): send Sonar JSON envelopes or an aicr snapshot", ctype ? ctype : "");
    fj_http_reply_error(r, FJ_EUNSUPPORTED, &err);
}
