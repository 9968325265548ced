/* chimbuko.c — GET /api/v1/chimbuko/...: parameters declared per endpoint and parsed by the query
 * API's parser (params.h, through fj_api_begin), turned into an fj_cb_query, and one store op
 * (storage/core/store_chimbuko.h) written by the query API's JSON or CSV writer. */
#include "api/chimbuko_api.h"

#include "api/api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P_CLUSTER {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0}
#define P_RUN {"run", FJ_PT_STRING, "run label (the sender's ?run=; default: every run)", NULL, false, 0, 0}
#define P_APP {"app", FJ_PT_INT, "program index (Chimbuko's app or pid)", NULL, false, 0, INT64_MAX}
#define P_RANK {"rank", FJ_PT_INT, "MPI rank", NULL, false, 0, INT64_MAX}
#define P_FID {"fid", FJ_PT_INT, "function index", NULL, false, 0, INT64_MAX}
#define P_FUNC {"func", FJ_PT_STRING, "function name, exact", NULL, false, 0, 0}
#define P_COUNTER {"counter", FJ_PT_STRING, "counter name, exact", NULL, false, 0, 0}
#define P_STEP {"step", FJ_PT_STRING, "IO step, or a range lo-hi", NULL, false, 0, 0}
#define P_FROM(what) {"from", FJ_PT_TIME, what " (RFC 3339, epoch seconds, now or now-DURATION)", NULL, false, 0, 0}
#define P_TO {"to", FJ_PT_TIME, "end of the window, inclusive (same forms as from)", NULL, false, 0, 0}
#define P_LIMIT(def) {"limit", FJ_PT_INT, "rows (default " def ")", NULL, false, 1, 1000000}
#define P_FORMAT                                                                                       \
    {"format", FJ_PT_ENUM, "json (default) or csv; an Accept header of text/csv also selects CSV", "json|csv", \
     false, 0, 0}
#define P_END {NULL, 0, NULL, NULL, false, 0, 0}

static const fj_pspec runs_params[] = {P_CLUSTER, P_RUN, P_FORMAT, P_END};
static const fj_pspec ranks_params[] = {P_CLUSTER, P_RUN, P_APP, P_RANK, P_STEP,
                                        P_FROM("steps ending at or after"), P_TO, P_LIMIT("100000"), P_FORMAT, P_END};
static const fj_pspec functions_params[] = {P_CLUSTER, P_RUN, P_APP, P_FID, P_FUNC,
                                            P_FROM("packets created at or after"), P_TO, P_LIMIT("100000"),
                                            P_FORMAT, P_END};
static const fj_pspec metrics_params[] = {P_CLUSTER, P_RUN, P_APP, P_RANK, P_FID, P_FUNC,
                                          P_FROM("packets created at or after"), P_TO, P_LIMIT("100000"), P_FORMAT,
                                          P_END};
static const fj_pspec counters_params[] = {P_CLUSTER, P_RUN, P_APP, P_COUNTER,
                                           P_FROM("packets created at or after"), P_TO, P_LIMIT("100000"),
                                           P_FORMAT, P_END};
static const fj_pspec top_params[] = {P_CLUSTER, P_RUN, P_APP, P_RANK, P_FID, P_FUNC,
                                      P_FROM("start of the window"), P_TO, P_LIMIT("10, per table"), P_FORMAT,
                                      P_END};
static const fj_pspec events_params[] = {
    P_CLUSTER, P_RUN, P_APP, P_RANK, P_FID, P_FUNC, P_STEP,
    {"event", FJ_PT_STRING, "one event label rank:io_step:idx", NULL, false, 0, 0},
    P_FROM("entered at or after"), P_TO,
    {"brief", FJ_PT_BOOL, "leave out the large JSON columns (call stack, windows, model, counters, node state)", NULL,
     false, 0, 0},
    P_LIMIT("1000"),
    {"cursor", FJ_PT_CURSOR, "the next member of the previous page: continues the same listing", NULL, false, 0, 0},
    P_FORMAT, P_END};
static const fj_pspec metadata_params[] = {P_CLUSTER, P_RUN, P_APP, P_RANK, P_LIMIT("100000"), P_FORMAT, P_END};
static const fj_pspec profiles_params[] = {P_CLUSTER, P_RUN, P_APP, P_FID, P_FUNC, P_LIMIT("100000"), P_FORMAT, P_END};
static const fj_pspec final_counters_params[] = {P_CLUSTER, P_RUN, P_APP, P_COUNTER, P_LIMIT("100000"), P_FORMAT,
                                                 P_END};

static const fj_endpoint ep_runs = {
    "/api/v1/chimbuko/runs", "Chimbuko runs",
    "The run labels of a cluster with what was received for each.", NULL, NULL, runs_params, {&fj_qt_cb_runs},
    NULL, NULL, 0, NULL};
static const fj_endpoint ep_ranks = {
    "/api/v1/chimbuko/stats/ranks", "Anomalies per rank over time",
    "Every IO step with anomalies of each (run, app, rank), from the parameter server's packets.", NULL, NULL,
    ranks_params, {&fj_qt_cb_ranks}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_functions = {
    "/api/v1/chimbuko/stats/functions", "Function profiles over time",
    "Each (run, app, function)'s cumulative anomaly count and runtime statistics, one point per packet "
    "that changed it.",
    NULL, NULL, functions_params, {&fj_qt_cb_functions}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_metrics = {
    "/api/v1/chimbuko/stats/metrics", "Anomaly metrics per rank and function over time",
    "The parameter server's anomaly_metrics: each (run, app, rank, function) with anomalies, per packet.", NULL,
    NULL, metrics_params, {&fj_qt_cb_metrics}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_counters = {
    "/api/v1/chimbuko/stats/counters", "Counter statistics over time",
    "Each (run, app, counter)'s cumulative statistics, one point per packet that changed them.", NULL, NULL,
    counters_params, {&fj_qt_cb_counters}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_top = {
    "/api/v1/chimbuko/top", "Top ranks and functions by anomalies",
    "The ranks with most anomalies in IO steps overlapping the window, and the functions with most "
    "anomalies reported in packets of the window.",
    NULL, NULL, top_params, {&fj_qt_cb_top_ranks, &fj_qt_cb_top_functions}, NULL, "cluster,from,to", 0, NULL};
static const fj_endpoint ep_events = {
    "/api/v1/chimbuko/provenance/{collection}", "Provenance events",
    "Function executions of the provenance database in entry order: collection anomalies, normalexecs, "
    "or events (both).",
    "collection", "anomalies, normalexecs or events", events_params, {&fj_qt_cb_events}, NULL, NULL, FJ_EP_PAGED,
    NULL};
static const fj_endpoint ep_metadata = {
    "/api/v1/chimbuko/provenance/metadata", "Provenance metadata",
    "TAU metadata of each rank and thread (host, CPU, GPU properties).", NULL, NULL, metadata_params,
    {&fj_qt_cb_metadata}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_profiles = {
    "/api/v1/chimbuko/provenance/func_stats", "Final function profiles",
    "The global database's func_stats: every function's profile and anomaly metrics over the run.", NULL, NULL,
    profiles_params, {&fj_qt_cb_profiles}, NULL, NULL, 0, NULL};
static const fj_endpoint ep_final_counters = {
    "/api/v1/chimbuko/provenance/counter_stats", "Final counter statistics",
    "The global database's counter_stats.", NULL, NULL, final_counters_params, {&fj_qt_cb_final_counters}, NULL,
    NULL, 0, NULL};

const fj_endpoint *const fj_chimbuko_endpoints[] = {&ep_runs,   &ep_ranks,    &ep_functions, &ep_metrics,
                                                     &ep_counters, &ep_top,   &ep_events,    &ep_metadata,
                                                     &ep_profiles, &ep_final_counters, NULL};

typedef enum { OP_RUNS, OP_SERIES, OP_TOP, OP_RECORDS } op_kind;

/* "12" or "10-20" into the step range. */
static bool parse_steps(const char *s, fj_cb_query *q)
{
    char *end;
    if (!(*s >= '0' && *s <= '9'))
        return false;
    long long a = strtoll(s, &end, 10), b = a;
    if (*end == '-') {
        if (!(end[1] >= '0' && end[1] <= '9'))
            return false;
        b = strtoll(end + 1, &end, 10);
    }
    if (*end || b < a)
        return false;
    q->step_from = a;
    q->step_to = b;
    return true;
}

static int64_t int_param(const fj_apiq *a, const char *name)
{
    const fj_pval *v = fj_param(&a->p, name);
    return v->set ? v->i : -1;
}

static const char *str_param(const fj_apiq *a, const char *name)
{
    const fj_pval *v = fj_param(&a->p, name);
    return v->set ? v->s : NULL;
}

/* The fj_cb_query of the parsed parameters. false after answering. */
static bool make_query(fj_apiq *a, fj_cb_query *q, size_t def_limit)
{
    fj_cb_query_init(q);
    q->cluster = a->q.cluster;
    q->run = str_param(a, "run");
    q->app = int_param(a, "app");
    q->rank = int_param(a, "rank");
    q->fid = int_param(a, "fid");
    q->func = str_param(a, "func");
    if (!q->func)
        q->func = str_param(a, "counter");
    if (a->q.from)
        q->from_us = a->q.from * 1000000;
    if (a->q.to)
        q->to_us = a->q.to * 1000000 + 999999;
    const char *step = str_param(a, "step");
    if (step && !parse_steps(step, q)) {
        fj_api_bad_param(a->r, "step", "want an IO step or a range lo-hi");
        return false;
    }
    const char *event = str_param(a, "event");
    if (event) {
        unsigned long long rk, st, ix;
        char tail;
        if (sscanf(event, "%llu:%llu:%llu%c", &rk, &st, &ix, &tail) != 3 || !(event[0] >= '0' && event[0] <= '9')) {
            fj_api_bad_param(a->r, "event", "want an event label rank:io_step:idx");
            return false;
        }
        bool other_step = step && (q->step_from != (int64_t)st || q->step_to != (int64_t)st);
        if ((q->rank >= 0 && q->rank != (int64_t)rk) || other_step) {
            fj_api_bad_param(a->r, "event", "names another rank or IO step than the rank or step parameter");
            return false;
        }
        q->rank = (int64_t)rk;
        q->step_from = q->step_to = (int64_t)st;
        q->idx = (int64_t)ix;
    }
    const fj_pval *brief = fj_param(&a->p, "brief");
    q->brief = brief->set && brief->i;
    q->limit = fj_param(&a->p, "limit")->set ? a->q.limit : def_limit;
    q->after = a->q.after;
    return true;
}

static void run(fj_apiq *a, fj_cb_query *q, op_kind kind)
{
    fj_store *s = fj_api_store(a);
    if (!s)
        return;
    fj_status (*op)(fj_store *, fj_cb_query *, fj_sink *, fj_err *) = kind == OP_RUNS     ? fj_store_chimbuko_runs
                                                                     : kind == OP_SERIES ? fj_store_chimbuko_series
                                                                     : kind == OP_TOP    ? fj_store_chimbuko_top
                                                                                         : fj_store_chimbuko_records;
    fj_err err = {0};
    fj_buf body;
    fj_buf_init(&body, (size_t)1 << 30);
    fj_buf_set_budget(&body, fj_http_mem(a->r)); /* counts against query-memory */
    fj_out o;
    fj_out_init(&o, &body, a->csv);
    fj_status st = fj_out_meta_str(&o, "cluster", q->cluster);
    if (st == FJ_OK && kind == OP_TOP) { /* the window; null for an open end */
        st = a->q.from ? fj_out_meta_time(&o, "from", a->q.from) : fj_out_meta_str(&o, "from", NULL);
        if (st == FJ_OK)
            st = a->q.to ? fj_out_meta_time(&o, "to", a->q.to) : fj_out_meta_str(&o, "to", NULL);
    }
    if (st == FJ_OK)
        st = op(s, q, &o.sink, &err);
    if (st == FJ_OK && o.st != FJ_OK)
        st = o.st;
    char next[FJ_CURSOR_MAX] = "";
    bool paged = (a->ep->flags & FJ_EP_PAGED) != 0;
    if (st == FJ_OK) {
        if (q->next.set)
            fj_cursor_encode(a->tag, &q->next, next);
        st = fj_out_finish(&o, paged, next[0] ? next : NULL);
    }
    if (st == FJ_ETOOBIG) /* the answer's size, not the request's */
        st = fj_err_set(&err, FJ_EINVAL, NULL, "the answer is over 1 GiB: narrow the query or page it");
    if (st == FJ_OK) {
        if (next[0])
            fj_http_reply_header(a->r, "Fjord-Next-Cursor", next);
        fj_http_reply(a->r, 200, a->csv ? "text/csv; charset=utf-8" : NULL, body.data ? body.data : "", body.len);
    } else {
        fj_http_reply_error(a->r, st, &err);
    }
    fj_out_free(&o);
    fj_buf_free(&body);
}

void fj_api_chimbuko(fj_http_req *r)
{
    const char *rest = fj_http_path_rest(r);
    const fj_endpoint *ep = NULL;
    op_kind kind = OP_RECORDS;
    fj_cb_series series = FJ_CBS_RANKS;
    fj_cb_collection coll = FJ_CB_PACKET;
    size_t def_limit = 100000;
    if (!rest)
        rest = "";
    if (!strcmp(rest, "runs")) {
        ep = &ep_runs;
        kind = OP_RUNS;
    } else if (!strncmp(rest, "stats/", 6)) {
        static const struct {
            const char *name;
            const fj_endpoint *ep;
            fj_cb_series s;
        } map[] = {{"ranks", &ep_ranks, FJ_CBS_RANKS},
                   {"functions", &ep_functions, FJ_CBS_FUNCTIONS},
                   {"metrics", &ep_metrics, FJ_CBS_METRICS},
                   {"counters", &ep_counters, FJ_CBS_COUNTERS}};
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (!strcmp(rest + 6, map[i].name)) {
                ep = map[i].ep;
                series = map[i].s;
            }
        kind = OP_SERIES;
    } else if (!strcmp(rest, "top")) {
        ep = &ep_top;
        kind = OP_TOP;
        def_limit = 10;
    } else if (!strncmp(rest, "provenance/", 11)) {
        const char *c = rest + 11;
        if (!strcmp(c, "events") || !strcmp(c, "anomalies") || !strcmp(c, "normalexecs")) {
            ep = &ep_events;
            coll = !strcmp(c, "anomalies")     ? FJ_CB_ANOMALIES
                   : !strcmp(c, "normalexecs") ? FJ_CB_NORMALEXECS
                                               : FJ_CB_PACKET; /* events: both */
            def_limit = 1000;
        } else if (!strcmp(c, "metadata")) {
            ep = &ep_metadata;
            coll = FJ_CB_METADATA;
        } else if (!strcmp(c, "func_stats")) {
            ep = &ep_profiles;
            coll = FJ_CB_FUNC_STATS;
        } else if (!strcmp(c, "counter_stats")) {
            ep = &ep_final_counters;
            coll = FJ_CB_COUNTER_STATS;
        }
    }
    if (!ep) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ENOTFOUND, "path", "no such endpoint: %s (see docs/chimbuko.md)", fj_http_path(r));
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    char tag[48];
    snprintf(tag, sizeof tag, "chimbuko-%s", rest);
    fj_apiq a;
    if (!fj_api_begin(r, ep, tag, &a))
        return;
    fj_cb_query q;
    if (!make_query(&a, &q, def_limit))
        return;
    q.series = series;
    q.collection = coll;
    run(&a, &q, kind);
}
