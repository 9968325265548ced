/* metrics_catalog.c — GET /api/v1/metrics/catalog: per metric of a cluster's line-protocol series
 * its scopes, hosts and series (storage/core/store_metric_catalog.h), its interval measured from
 * the points of one series in the window, and its unit where the ClusterCockpit cluster
 * configuration (--cc-cluster-config) names one. */
#include "api/metrics_catalog.h"

#include "api/api_int.h"
#include "api/ccms_query.h"
#include "storage/core/store_metric_catalog.h"
#include "storage/core/store_ts.h"

#include <stdlib.h>
#include <string.h>

#define NS 1000000000LL
#define P_END {NULL, 0, NULL, NULL, false, 0, 0}

static const fj_qcol cols[] = {
    {"metric", FJ_VT_TEXT, "metric name (a ClusterCockpit metric; measurement.field for a generic line)"},
    {"unit", FJ_VT_TEXT,
     "unit from the ClusterCockpit cluster configuration (--cc-cluster-config: metricConfig's prefix and base); "
     "null when it does not name the metric"},
    {"scopes", FJ_VT_LIST, "the series' types: node, socket, core, hwthread, accelerator, memoryDomain, ..."},
    {"frequency_s", FJ_VT_REAL,
     "seconds between points: the median interval of one series of the metric in the window; else the "
     "configuration's timestep; null when neither"},
    {"hosts", FJ_VT_LIST, "hosts with series of the metric"},
    {"n_hosts", FJ_VT_INT, "how many"},
    {"series", FJ_VT_INT, "series of the metric (host, type, type-id, sub-type)"},
};
static const fj_qtable qt_catalog = {"metrics", cols, sizeof cols / sizeof cols[0], 0};

static const fj_pspec params[] = {
    {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0},
    {"from", FJ_PT_TIME, "start of the window the interval is measured in (default: to - 1 day; RFC 3339, epoch "
                         "seconds, now or now-DURATION)", NULL, false, 0, 0},
    {"to", FJ_PT_TIME, "its end (default: now; same forms as from)", NULL, false, 0, 0},
    {"format", FJ_PT_ENUM, "json (default) or csv; an Accept header of text/csv also selects CSV", "json|csv", false,
     0, 0},
    P_END};

static const fj_endpoint ep_catalog = {
    "/api/v1/metrics/catalog", "The metric catalogue",
    "Every line-protocol (ClusterCockpit) metric the cluster has sent, by name: its scopes, hosts, series, the "
    "interval between its points, and its unit where the ClusterCockpit cluster configuration names one. From "
    "the series catalogue; a cluster without series has no rows. See docs/metrics.md.",
    NULL, NULL, params, {&qt_catalog}, NULL, "from,to", 0, NULL};

const fj_endpoint *const fj_metrics_catalog_endpoints[] = {&ep_catalog, NULL};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median interval of pts in seconds; 0 with fewer than two points. */
static double median_interval(const fj_ts_points *pts, int64_t *scratch)
{
    if (pts->n < 2)
        return 0;
    size_t n = pts->n - 1;
    for (size_t i = 0; i < n; i++)
        scratch[i] = pts->t[i + 1] - pts->t[i];
    qsort(scratch, n, sizeof *scratch, cmp_i64);
    int64_t m = n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
    return (double)m / (double)NS;
}

static fj_status catalog_op(fj_store *s, fj_query *q, void *ctx, fj_sink *k, fj_err *err)
{
    fj_http_req *r = ctx;
    fj_arena *a = fj_http_arena(r);
    q->to = q->to ? q->to : q->now;
    q->from = q->from ? q->from : q->to - 86400;
    fj_metric_entry *m = NULL;
    size_t n = 0;
    fj_status st = fj_store_metric_catalog(s, q->cluster, a, &m, &n, err);
    if (st == FJ_OK)
        st = k->table(k, &qt_catalog);
    fj_ts_points pts = {0};
    int64_t *scratch = NULL;
    fj_ts_engine *live = fj_http_ts_engine(r);
    for (size_t i = 0; i < n && st == FJ_OK; i++) {
        double freq = 0;
        fj_err rerr = {0};
        if (fj_store_ts_read(s, live, m[i].probe, q->from * NS, q->to * NS, &pts, &rerr) == FJ_OK && pts.n >= 2) {
            scratch = fj_arena_alloc(a, pts.n * sizeof *scratch);
            if (!scratch) {
                st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            freq = median_interval(&pts, scratch);
        }
        const char *unit = NULL;
        int64_t conf_s = 0;
        fj_ccq_metric_info(m[i].metric, &unit, &conf_s);
        if (freq <= 0 && conf_s > 0)
            freq = (double)conf_s;
        fj_value v[7] = {0};
        v[0] = (fj_value){.t = FJ_VT_TEXT, .s = m[i].metric};
        v[1] = unit ? (fj_value){.t = FJ_VT_TEXT, .s = unit} : (fj_value){.t = FJ_VT_NULL};
        v[2] = (fj_value){.t = FJ_VT_LIST, .list = m[i].scopes, .n = m[i].n_scopes};
        v[3] = freq > 0 ? (fj_value){.t = FJ_VT_REAL, .d = freq} : (fj_value){.t = FJ_VT_NULL};
        v[4] = (fj_value){.t = FJ_VT_LIST, .list = m[i].hosts, .n = m[i].n_hosts};
        v[5] = (fj_value){.t = FJ_VT_INT, .i = (int64_t)m[i].n_hosts};
        v[6] = (fj_value){.t = FJ_VT_INT, .i = m[i].series};
        st = k->row(k, v);
    }
    fj_ts_points_free(&pts);
    return st;
}

void fj_api_metrics_catalog(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &ep_catalog, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run_ctx(&a, s, catalog_op, r);
}
