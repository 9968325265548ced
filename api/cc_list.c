/* cc_list.c — the ClusterCockpit listings (cc_list.h): parameters, and the store's rows written as
 * cc-backend's JSON by a row sink. */
#include "api/cc_list.h"

#include "storage/core/store_ts.h"
#include "timefmt.h"

#include <stdlib.h>
#include <string.h>

#define NS 1000000000LL
#define MAX_ANSWER ((size_t)1 << 30)

static void reply_err(fj_http_req *r, fj_status st, const char *path, const char *msg)
{
    fj_err err = {0};
    fj_err_set(&err, st, path, "%s", msg);
    fj_http_reply_error(r, st, &err);
}

/* The common parameters of the ClusterCockpit listings; false when an answer was sent. */
static bool list_params(fj_http_req *r, fj_cc_msg_query *q)
{
    *q = (fj_cc_msg_query){.cluster = fj_http_arg(r, "cluster"), .limit = 10000};
    if (!q->cluster || !*q->cluster) {
        reply_err(r, FJ_EINVAL, "cluster", "parameter 'cluster' is required");
        return false;
    }
    if (!fj_auth_may_read(fj_http_principal(r), q->cluster)) {
        reply_err(r, FJ_EFORBIDDEN, "cluster", "this credential may not read this cluster");
        return false;
    }
    static const char *const tp[2] = {"from", "to"};
    for (int i = 0; i < 2; i++) {
        const char *v = fj_http_arg(r, tp[i]);
        fj_time t;
        if (!v)
            continue;
        if (fj_time_parse_param(v, &t) != FJ_OK) {
            reply_err(r, FJ_EINVAL, tp[i], "not an RFC 3339 time or epoch seconds");
            return false;
        }
        /* seconds to ns, saturated: a bound past year 2262 means "from the start" / "to the end" */
        const int64_t max_s = INT64_MAX / NS - 1;
        if (i == 0)
            q->from_ns = t > max_s ? INT64_MAX : t < -max_s ? INT64_MIN : t * NS;
        else
            q->to_ns = t > max_s ? INT64_MAX : t < -max_s ? INT64_MIN : t * NS + (NS - 1);
    }
    q->kind = fj_http_arg(r, "kind");
    if (q->kind && strcmp(q->kind, "event") && strcmp(q->kind, "log") && strcmp(q->kind, "control")) {
        reply_err(r, FJ_EINVAL, "kind", "kind must be event, log or control");
        return false;
    }
    q->name = fj_http_arg(r, "name");
    q->host = fj_http_arg(r, "host");
    const char *lim = fj_http_arg(r, "limit");
    if (lim) {
        char *end;
        long long n = strtoll(lim, &end, 10);
        if (*end || n < 1 || n > 1000000) {
            reply_err(r, FJ_EINVAL, "limit", "limit must be 1-1000000");
            return false;
        }
        q->limit = (size_t)n;
    }
    return true;
}

/* --- rows as cc-backend's JSON ---------------------------------------------------------------- */

typedef struct cc_out {
    fj_sink sink; /* first: the store calls it */
    fj_buf *b;
    const char *cluster;
    size_t rows;
} cc_out;

static void opt_str(fj_buf *out, const char *v)
{
    if (v)
        fj_buf_json_str(out, v);
    else
        fj_buf_puts(out, "null");
}

/* {"events":[ or {"jobs":[: the table's name is the member. */
static fj_status cc_table(fj_sink *k, const fj_qtable *t)
{
    cc_out *o = (cc_out *)k;
    fj_buf_puts(o->b, "{\"");
    fj_buf_puts(o->b, t->name);
    return fj_buf_puts(o->b, "\":[");
}

/* fj_qt_cc_events: kind, name, host, time_ns, tags, payload. */
static fj_status event_row(fj_sink *k, const fj_value *v)
{
    cc_out *o = (cc_out *)k;
    fj_buf *out = o->b;
    char when[21];
    fj_time_format(v[3].i / NS, when);
    fj_buf_puts(out, o->rows++ == 0 ? "{\"kind\":" : ",{\"kind\":");
    fj_buf_json_str(out, v[0].s);
    fj_buf_puts(out, ",\"name\":");
    fj_buf_json_str(out, v[1].s);
    fj_buf_puts(out, ",\"host\":");
    fj_buf_json_str(out, v[2].s);
    fj_buf_printf(out, ",\"time\":\"%s\",\"time_ns\":%lld,\"tags\":%s,\"payload\":", when, (long long)v[3].i,
                  v[4].s);
    fj_buf_json_str(out, v[5].s);
    return fj_buf_puts(out, "}");
}

/* fj_qt_cc_jobs: id, job_id, start_time, stop_time, state, user, project, partition, num_nodes,
 * hosts, sonar_instances, sonar_first, sonar_last, sonar_samples, slurm, slurm_state. */
static fj_status job_row(fj_sink *k, const fj_value *v)
{
    cc_out *o = (cc_out *)k;
    fj_buf *out = o->b;
    fj_buf_printf(out, "%s{\"id\":%lld,\"cluster\":", o->rows++ == 0 ? "" : ",", (long long)v[0].i);
    fj_buf_json_str(out, o->cluster);
    fj_buf_printf(out, ",\"jobId\":%lld,\"startTime\":%lld,\"stopTime\":", (long long)v[1].i, (long long)v[2].i);
    if (v[3].t != FJ_VT_NULL)
        fj_buf_printf(out, "%lld", (long long)v[3].i);
    else
        fj_buf_puts(out, "null");
    static const char *const names[] = {",\"jobState\":", ",\"user\":", ",\"project\":", ",\"partition\":"};
    for (int i = 0; i < 4; i++) {
        fj_buf_puts(out, names[i]);
        opt_str(out, v[4 + i].s);
    }
    fj_buf_printf(out, ",\"numNodes\":%lld,\"hosts\":%s,\"sonar\":", (long long)v[8].i, v[9].s ? v[9].s : "[]");
    if (v[10].i > 0) {
        char a[21], b[21];
        fj_time_format(v[11].i, a);
        fj_time_format(v[12].i, b);
        fj_buf_printf(out, "{\"instances\":%lld,\"first_seen\":\"%s\",\"last_seen\":\"%s\",\"samples\":%lld}",
                      (long long)v[10].i, a, b, (long long)v[13].i);
    } else {
        fj_buf_puts(out, "null");
    }
    fj_buf_puts(out, ",\"slurm\":");
    if (v[14].i) {
        fj_buf_puts(out, "{\"job_state\":");
        opt_str(out, v[15].s);
        fj_buf_puts(out, "}");
    } else {
        fj_buf_puts(out, "null");
    }
    return fj_buf_puts(out, "}");
}

/* --- the handlers ----------------------------------------------------------------------------- */

typedef fj_status (*cc_op)(fj_store *, const fj_cc_msg_query *, fj_sink *, fj_err *);

static void cc_list(fj_http_req *r, bool jobs)
{
    fj_cc_msg_query q;
    if (!list_params(r, &q))
        return;
    fj_err err = {0};
    fj_store *s = fj_http_reader(r, &err);
    if (!s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    cc_op op = jobs ? fj_store_ts_cc_jobs : fj_store_ts_cc_messages;
    fj_buf out;
    fj_buf_init(&out, MAX_ANSWER);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    cc_out o = {.sink = {cc_table, jobs ? job_row : event_row}, .b = &out, .cluster = q.cluster};
    fj_status st = op(s, &q, &o.sink, &err);
    if (st == FJ_OK)
        fj_buf_puts(&out, "]}\n");
    /* The buffer's failure sticks: an answer too large is refused whole, never cut short. */
    if (fj_buf_status(&out) != FJ_OK)
        st = fj_err_set(&err, FJ_ETOOBIG, NULL, "the answer is too large; narrow from/to or set limit");
    if (st == FJ_OK && out.data)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, st == FJ_OK ? FJ_ENOMEM : st, &err);
    fj_buf_free(&out);
}

void fj_api_cc_events(fj_http_req *r)
{
    cc_list(r, false);
}

void fj_api_cc_jobs(fj_http_req *r)
{
    cc_list(r, true);
}
