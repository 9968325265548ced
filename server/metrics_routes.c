/* metrics_routes.c — line-protocol write paths, ClusterCockpit events and cc-backend's job API.
 * Decoding runs on the request thread (ingest/cc.h); the writer commits the request-log row,
 * the points and the messages in one group transaction and only then is the request answered. */
#include "server/metrics_routes.h"

#include "server/prom.h"

#include "ingest/cc.h"
#include "storage/core/store_ts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BAD_LISTED 100

typedef enum { LP_CC, LP_V1, LP_V2 } lp_flavor;

typedef struct bad_line {
    size_t line, column;
    char reason[120];
} bad_line;

typedef struct lp_ctx {
    fj_http_req *r;
    lp_flavor fl;
    size_t n_bad, n_good, n_points;
    const char *cluster; /* the request's cluster parameter, if any (for the counters) */
    bad_line *bad; /* the first MAX_BAD_LISTED */
    fj_write_count count;
} lp_ctx;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_bad(void *ud, size_t line, size_t column, const char *reason)
{
    lp_ctx *c = ud;
    if (c->n_bad < MAX_BAD_LISTED && c->bad) {
        bad_line *b = &c->bad[c->n_bad];
        b->line = line;
        b->column = column;
        snprintf(b->reason, sizeof b->reason, "%s", reason);
    }
    c->n_bad++;
}

static void reply_err(fj_http_req *r, fj_status st, const char *path, const char *msg)
{
    fj_err err = {0};
    fj_err_set(&err, st, path, "%s", msg);
    fj_http_reply_error(r, st, &err);
}

/* The value of the setting behind a quota refusal. */
static unsigned limit_value(fj_http_req *r, fj_limit l)
{
    const fj_config *cfg = fj_http_config(r);
    switch (l) {
    case FJ_LIMIT_SERIES_TOTAL: return cfg->max_series_per_cluster;
    case FJ_LIMIT_SERIES_RATE: return cfg->max_new_series_per_minute;
    default: return 0;
    }
}

/* A partial write, as InfluxDB's: 400 with every bad line listed (the first 100), and the points
 * a cluster's series quota dropped (count.dropped), the message naming the limit in InfluxDB's
 * words ("partial write: max-series-per-database limit exceeded: (N) dropped=K"). Points dropped
 * by the rate of new series make it 429 with Retry-After: sent again later, they are taken. */
/* The first type conflict of the write, in InfluxDB's words: 'field type conflict: input field
 * "f" on measurement "m" is type integer, already exists as type float' (a metric m.f is
 * measurement m, field f; a ClusterCockpit metric m is field "value"). */
static const char *ftype_name(int t)
{
    static const char *const names[] = {"float", "integer", "string", "boolean", "float"}; /* fj_ftype */
    return t >= 0 && t <= FJ_FT_UNTYPED ? names[t] : "unknown";
}

static void conflict_reason(const fj_write_count *n, char *out, size_t cap)
{
    const char *m = n->conflict_metric, *dot = strchr(m, '.');
    snprintf(out, cap, "field type conflict: input field \"%s\" on measurement \"%.*s\" is type %s, already exists as type %s",
             dot ? dot + 1 : "value", (int)(dot ? (size_t)(dot - m) : strlen(m)), m,
             ftype_name(n->conflict_sent), ftype_name(n->conflict_stored));
}

static void reply_bad_lines(lp_ctx *c, size_t stored)
{
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 24);
    char msg[512], why[320] = "";
    fj_limit l = c->count.dropped ? c->count.limit : FJ_LIMIT_NONE;
    int status = 400;
    if (c->count.conflicts)
        conflict_reason(&c->count, why, sizeof why);
    if (l == FJ_LIMIT_NONE && c->count.conflicts) { /* InfluxDB's message, with the bad lines' count */
        int n = snprintf(msg, sizeof msg, "partial write: %s dropped=%llu", why, (unsigned long long)c->count.conflicts);
        if (c->n_bad && n > 0 && (size_t)n < sizeof msg)
            snprintf(msg + n, sizeof msg - (size_t)n, "; %zu bad line%s rejected", c->n_bad, c->n_bad == 1 ? "" : "s");
    } else if (l != FJ_LIMIT_NONE) {
        int n = snprintf(msg, sizeof msg, "partial write: %s limit exceeded: (%u) dropped=%llu", fj_limit_name(l),
                         limit_value(c->r, l), (unsigned long long)c->count.dropped);
        if (c->n_bad && n > 0 && (size_t)n < sizeof msg)
            snprintf(msg + n, sizeof msg - (size_t)n, "; %zu bad line%s rejected", c->n_bad, c->n_bad == 1 ? "" : "s");
        if (fj_limit_is_rate(l)) { /* when the bucket holds a token again */
            unsigned per_min = limit_value(c->r, l), wait = per_min >= 60 ? 1 : (60 + per_min - 1) / per_min;
            char ra[16];
            snprintf(ra, sizeof ra, "%u", wait);
            status = 429;
            fj_http_reply_header(c->r, "Retry-After", ra);
        }
    } else if (c->n_good) {
        snprintf(msg, sizeof msg, "partial write: %zu bad line%s rejected, %zu stored", c->n_bad,
                 c->n_bad == 1 ? "" : "s", c->n_good);
    } else {
        snprintf(msg, sizeof msg, "no valid line: %zu bad line%s, nothing stored", c->n_bad, c->n_bad == 1 ? "" : "s");
    }
    fj_buf_printf(&out, "{\"error\":{\"code\":\"%s\",\"message\":", l ? "limit_exceeded" : "invalid");
    fj_buf_json_str(&out, msg);
    if (l != FJ_LIMIT_NONE) {
        fj_buf_puts(&out, ",\"path\":");
        fj_buf_json_str(&out, fj_limit_name(l));
    } else if (c->n_bad && c->bad) {
        char path[64];
        snprintf(path, sizeof path, "line %zu, column %zu", c->bad[0].line, c->bad[0].column);
        fj_buf_puts(&out, ",\"path\":");
        fj_buf_json_str(&out, path);
    } else if (c->count.conflicts) {
        char path[64];
        snprintf(path, sizeof path, "line %u", (unsigned)c->count.conflict_line);
        fj_buf_puts(&out, ",\"path\":");
        fj_buf_json_str(&out, path);
    }
    fj_buf_printf(&out,
                  "},\"stored_lines\":%zu,\"stored_points\":%zu,\"dropped\":%llu,\"conflicts\":%llu,\"rejected\":%zu,"
                  "\"lines\":[",
                  c->n_good, stored, (unsigned long long)c->count.dropped, (unsigned long long)c->count.conflicts,
                  c->n_bad);
    bool listed = false;
    if (c->count.conflicts) { /* the first conflict: its line, and what its field is */
        fj_buf_printf(&out, "{\"line\":%u,\"column\":1,\"reason\":", (unsigned)c->count.conflict_line);
        fj_buf_json_str(&out, why);
        fj_buf_puts(&out, "}");
        listed = true;
    }
    for (size_t i = 0; c->bad && i < c->n_bad && i < MAX_BAD_LISTED; i++) {
        fj_buf_printf(&out, "%s{\"line\":%zu,\"column\":%zu,\"reason\":", i || listed ? "," : "", c->bad[i].line,
                      c->bad[i].column);
        fj_buf_json_str(&out, c->bad[i].reason);
        fj_buf_puts(&out, "}");
    }
    fj_buf_puts(&out, "]}\n");
    if (out.data)
        fj_http_reply(c->r, status, NULL, out.data, out.len);
    else
        fj_http_reply_error(c->r, FJ_ENOMEM, NULL);
    fj_buf_free(&out);
}

/* The credential's cluster, as the points' label: an upload credential's name, else the
 * request's cluster parameter. */
static const char *count_cluster(const lp_ctx *c)
{
    const fj_principal *who = fj_http_principal(c->r);
    return who->any_cluster || who->anonymous ? c->cluster : who->name;
}

static void lp_done(fj_http_req *r, fj_write_req *w)
{
    lp_ctx *c = fj_http_submit_ctx(r);
    uint64_t refused = c->count.dropped + c->count.conflicts;
    if (w->status == FJ_OK)
        fj_prom_accepted(FJ_PROM_POINTS, count_cluster(c), c->n_points - refused);
    else
        fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), w->err.code[0] ? w->err.code : fj_status_name(w->status),
                        c->n_points);
    if (c->n_bad)
        fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), "bad_line", c->n_bad);
    if (w->status == FJ_OK && c->count.dropped)
        fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), fj_limit_name(c->count.limit), c->count.dropped);
    if (w->status == FJ_OK && c->count.conflicts)
        fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), "field_type_conflict", c->count.conflicts);
    if (w->status != FJ_OK) {
        fj_http_reply_error(r, w->status == FJ_EIO ? FJ_EBUSY : w->status, &w->err);
        return;
    }
    if (c->n_bad || refused) {
        reply_bad_lines(c, c->n_points - refused);
        return;
    }
    if (c->fl != LP_CC) {
        fj_http_reply(r, 204, NULL, "", 0);
        return;
    }
    char body[160];
    int n = snprintf(body, sizeof body, "{\"lines\":%zu,\"points\":%zu,\"inserted\":%llu}\n", c->n_good, c->n_points,
                     (unsigned long long)c->count.inserted);
    fj_http_reply(r, 200, NULL, body, (size_t)n);
}

static void reply_not_covered(fj_http_req *r, const fj_principal *who, const char *cluster)
{
    char msg[400];
    snprintf(msg, sizeof msg, "credential '%s' may not write data of cluster '%s'; nothing stored", who->name, cluster);
    reply_err(r, FJ_EAUTH, "cluster", msg);
}

/* A body without a line (empty, blank lines, comments) writes nothing and is no error: InfluxDB
 * 1.x and VictoriaMetrics answer 204 on their paths, cc-metric-store its usual 200. Each path
 * answers its own success, with nothing to commit. */
static void reply_nothing_written(lp_ctx *c)
{
    if (c->fl != LP_CC) {
        fj_http_reply(c->r, 204, NULL, "", 0);
        return;
    }
    static const char body[] = "{\"lines\":0,\"points\":0,\"inserted\":0}\n";
    fj_http_reply(c->r, 200, NULL, body, sizeof body - 1);
}

/* A storage backend without the time-series ops (metrics_setup did not start an engine). */
static bool no_metrics(fj_http_req *r)
{
    if (fj_http_ts_engine(r))
        return false;
    static const char body[] = "{\"error\":{\"code\":\"not_implemented\",\"message\":\"this storage backend does "
                               "not store line-protocol metrics or ClusterCockpit records\"}}\n";
    fj_http_reply(r, 501, NULL, body, sizeof body - 1);
    return true;
}

static void lp_ingest(fj_http_req *r, lp_flavor fl, const char *cluster, const char *precision)
{
    if (no_metrics(r))
        return;
    fj_arena *a = fj_http_arena(r);
    lp_ctx *c = fj_arena_calloc(a, 1, sizeof *c);
    if (!c || !(c->bad = fj_arena_calloc(a, MAX_BAD_LISTED, sizeof *c->bad))) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    c->r = r;
    c->fl = fl;
    int64_t unit = fl == LP_CC ? 0 : 1;
    if (precision && *precision) {
        if (fj_lp_precision_parse(precision, &unit) != FJ_OK) {
            reply_err(r, FJ_EINVAL, "precision", "unknown precision: use ns, us, ms or s (1.x also m, h)");
            return;
        }
    }
    const fj_principal *who = fj_http_principal(r);
    if ((!cluster || !*cluster) && !who->anonymous && !who->any_cluster)
        cluster = who->name; /* an upload credential is named after its cluster */
    c->cluster = cluster;
    const fj_config *cfg = fj_http_config(r);
    fj_cc_opts o = {.default_cluster = cluster && *cluster ? cluster : NULL,
                    .unit_ns = unit,
                    .arrival_ns = now_ns(),
                    .max_future_ns = cfg->metrics_max_future_s * 1000000000,
                    .keep_raw = true};
    size_t len;
    const char *body = fj_http_body(r, &len);
    fj_batch *b = fj_batch_new();
    fj_err err = {0};
    if (!b || fj_cc_decode(body, len, &o, b, on_bad, c, &c->n_good, &err) != FJ_OK) {
        fj_batch_free(b);
        fj_http_reply_error(r, FJ_ENOMEM, &err);
        return;
    }
    const fj_metrics *m = &b->envs[0].u.metrics;
    c->n_points = m->n_points;
    if (!c->n_good) {
        fj_batch_free(b);
        if (c->n_bad)
            fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), "bad_line", c->n_bad);
        if (c->n_bad)
            reply_bad_lines(c, 0);
        else if (o.default_cluster && !fj_auth_may_write(who, o.default_cluster))
            reply_not_covered(r, who, o.default_cluster); /* as a line of that cluster would be */
        else
            reply_nothing_written(c); /* empty, or comments and blank lines only */
        return;
    }
    /* Every cluster the body names, in a tag, the request or a job payload, or the request is
     * refused whole: a cross-cluster line is not a bad line that a partial write could skip. */
    for (size_t i = 0; i < m->n_clusters; i++) {
        if (!fj_auth_may_write(who, m->clusters[i])) {
            char where[40];
            snprintf(where, sizeof where, "line %zu", m->cluster_lines[i]);
            fj_err_set(&err, FJ_EAUTH, where, "credential '%s' may not write data of cluster '%s' (first named on %s); "
                       "nothing stored", who->name, m->clusters[i], where);
            fj_prom_refused(FJ_PROM_POINTS, count_cluster(c), err.code, c->n_points);
            fj_batch_free(b);
            fj_http_reply_error(r, FJ_EAUTH, &err);
            return;
        }
    }
    fj_http_submit(r, b, &c->count, lp_done, c);
}

void fj_route_ccms_write(fj_http_req *r)
{
    lp_ingest(r, LP_CC, fj_http_arg(r, "cluster"), fj_http_arg(r, "precision"));
}

void fj_route_lp_ingest(fj_http_req *r)
{
    lp_ingest(r, LP_CC, fj_http_arg(r, "cluster"), fj_http_arg(r, "precision"));
}

void fj_route_influx1_write(fj_http_req *r)
{
    const char *db = fj_http_arg(r, "db");
    if (!db || !*db) {
        reply_err(r, FJ_EINVAL, "db", "database is required (db names the cluster)");
        return;
    }
    lp_ingest(r, LP_V1, db, fj_http_arg(r, "precision"));
}

void fj_route_influx2_write(fj_http_req *r)
{
    const char *bucket = fj_http_arg(r, "bucket");
    if (!bucket || !*bucket) {
        reply_err(r, FJ_EINVAL, "bucket", "bucket is required (it names the cluster)");
        return;
    }
    lp_ingest(r, LP_V2, bucket, fj_http_arg(r, "precision"));
}

/* --- cc-backend's job API --------------------------------------------------------------------- */

typedef struct job_ctx {
    fj_cc_job *job;
    fj_cc_job_result res;
    fj_write_count count;
} job_ctx;

static void job_done(fj_http_req *r, fj_write_req *w)
{
    job_ctx *c = fj_http_submit_ctx(r);
    if (w->status != FJ_OK) {
        fj_http_reply_error(r, w->status == FJ_EIO ? FJ_EBUSY : w->status, &w->err);
        return;
    }
    if (c->res.status != FJ_OK) {
        fj_err err = {0};
        fj_err_set(&err, c->res.status, NULL, "%s", c->res.message);
        fj_http_reply_error(r, c->res.status, &err);
        return;
    }
    char body[512];
    int n;
    if (c->job->op == FJ_CC_JOB_START) {
        n = snprintf(body, sizeof body, "{\"msg\":\"success\",\"id\":%lld}\n", (long long)c->res.id);
        fj_http_reply(r, 201, NULL, body, (size_t)n);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, 4096);
    fj_buf_printf(&out, "{\"id\":%lld,\"jobId\":%llu,\"cluster\":", (long long)c->res.id,
                  (unsigned long long)c->job->job_id);
    fj_buf_json_str(&out, c->job->cluster);
    fj_buf_printf(&out, ",\"startTime\":%lld,\"stopTime\":%lld,\"duration\":%lld,\"jobState\":",
                  (long long)c->res.start_time, (long long)c->res.stop_time,
                  (long long)(c->res.stop_time - c->res.start_time));
    fj_buf_json_str(&out, c->res.state);
    fj_buf_puts(&out, "}\n");
    fj_http_reply(r, 200, NULL, out.data ? out.data : "{}", out.data ? out.len : 2);
    fj_buf_free(&out);
}

static void job_api(fj_http_req *r, fj_cc_job_op op)
{
    if (no_metrics(r))
        return;
    size_t len;
    const char *body = fj_http_body(r, &len);
    fj_batch *b = fj_batch_new();
    job_ctx *c = fj_arena_calloc(fj_http_arena(r), 1, sizeof *c);
    fj_envelope *e = b && c ? fj_batch_add(b) : NULL;
    fj_cc_job *j = e ? fj_arena_calloc(b->arena, 1, sizeof *j) : NULL;
    if (!j) {
        fj_batch_free(b);
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    fj_err err = {0};
    const fj_principal *who = fj_http_principal(r);
    const char *dflt = !who->anonymous && !who->any_cluster ? who->name : NULL;
    fj_status st = fj_cc_job_parse(b->arena, op, body, len, op == FJ_CC_JOB_STOP ? dflt : NULL, j, &err);
    if (st != FJ_OK) {
        fj_batch_free(b);
        fj_http_reply_error(r, st, &err);
        return;
    }
    if (!fj_auth_may_write(who, j->cluster)) {
        char msg[400];
        snprintf(msg, sizeof msg, "credential '%s' may not write jobs of cluster '%s'", who->name, j->cluster);
        fj_batch_free(b); /* j lives in its arena */
        reply_err(r, FJ_EAUTH, "cluster", msg);
        return;
    }
    c->job = j;
    j->result = &c->res;
    c->res.status = FJ_EINTERNAL;
    e->kind = FJ_KIND_METRICS;
    e->cluster = j->cluster;
    e->u.metrics.jobs = j;
    e->u.metrics.n_jobs = 1;
    e->u.metrics.clusters = &e->cluster;
    e->u.metrics.n_clusters = 1;
    fj_http_submit(r, b, &c->count, job_done, c);
}

void fj_route_cc_start_job(fj_http_req *r)
{
    job_api(r, FJ_CC_JOB_START);
}

void fj_route_cc_stop_job(fj_http_req *r)
{
    job_api(r, FJ_CC_JOB_STOP);
}
