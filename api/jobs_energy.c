/* api/jobs_energy.c — the node, CPU and memory parts of the job rows' energy (docs/energy.md, "Node,
 * CPU, memory"): the ClusterCockpit power gauges and energy counters of each host of a job, read
 * from the metrics engine (with the writer's unsealed points) once the store's job query has
 * answered, since a metrics read cannot run inside the query's own snapshot. The rows are held,
 * completed and then handed to the answer's writer. A node's interval goes to the job by its
 * share of the node's CPU time in the node-sample that ends it (fj_store_job_node_cover); the
 * integration and sharing are storage/core/energy.h's. */
#include "api/jobs_energy.h"

#include "api/ccms_query.h"
#include "alloc.h"
#include "arena.h"
#include "json.h"
#include "storage/core/energy.h"
#include "storage/core/store_energy.h"
#include "storage/core/store_ts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NS 1000000000LL
/* Readings before a job's first sample: the interval ending at a node-sample starts before it. */
enum { LOOKBACK_S = 1800 };

/* The metrics read, what each is and which part it makes: cc-metric-collector's names, then
 * those a cluster.json marks (metric_list). */
typedef struct metric_def {
    const char *metric;
    bool counter; /* an energy counter in joules; else a power gauge in watts */
    fj_en_part part;
} metric_def;

static const metric_def defaults[] = {
    {"cpu_power", false, FJ_EP_CPU},        {"core_power", false, FJ_EP_CPU},
    {"rapl_pkg_power", false, FJ_EP_CPU},   {"cpu_energy", true, FJ_EP_CPU},
    {"rapl_pkg_energy", true, FJ_EP_CPU},   {"mem_power", false, FJ_EP_MEM},
    {"rapl_dram_power", false, FJ_EP_MEM},  {"mem_energy", true, FJ_EP_MEM},
    {"rapl_dram_energy", true, FJ_EP_MEM},  {"node_power", false, FJ_EP_NODE},
    {"ipmi_power", false, FJ_EP_NODE},      {"node_energy", true, FJ_EP_NODE},
};
#define N_DEFAULTS (sizeof defaults / sizeof defaults[0])
enum { MAX_METRICS = 64 };

/* A marked metric's part, by its name: acc_* GPU, mem_* memory, node_* and ipmi_* node, others CPU. */
static fj_en_part part_of(const char *name)
{
    if (!strncmp(name, "acc_", 4))
        return FJ_EP_GPU;
    if (!strncmp(name, "mem_", 4))
        return FJ_EP_MEM;
    if (!strncmp(name, "node_", 5) || !strncmp(name, "ipmi_", 5))
        return FJ_EP_NODE;
    return FJ_EP_CPU;
}

/* The defaults and the cluster.json's marked metrics not among them, into m; their count. */
static size_t metric_list(metric_def *m)
{
    size_t n = 0;
    for (size_t i = 0; i < N_DEFAULTS; i++)
        m[n++] = defaults[i];
    const char *name;
    bool counter;
    for (size_t i = 0; n < MAX_METRICS && fj_ccq_energy_metric(i, &name, &counter); i++) {
        bool known = false;
        for (size_t k = 0; k < n && !known; k++)
            known = !strcmp(m[k].metric, name);
        if (!known)
            m[n++] = (metric_def){name, counter, part_of(name)};
    }
    return n;
}

/* --- the held answer ---------------------------------------------------------------------------- */

/* One call the query made: a table (t) or a row of the current table (v). */
typedef struct held {
    const fj_qtable *t;
    fj_value *v;
} held;

typedef struct hold {
    fj_sink sink;
    fj_arena *a;
    held *h;
    size_t n, cap;
    const fj_qtable *cur;
} hold;

static char *keep_str(fj_arena *a, const char *s)
{
    return s ? fj_arena_strdup(a, s) : NULL;
}

static fj_status hold_table(fj_sink *k, const fj_qtable *t)
{
    hold *o = (hold *)k;
    if (o->n == o->cap) {
        size_t nc = o->cap ? 2 * o->cap : 64;
        held *g = fj_realloc(o->h, nc * sizeof *g);
        if (!g)
            return FJ_ENOMEM;
        o->h = g, o->cap = nc;
    }
    o->h[o->n++] = (held){t, NULL};
    o->cur = t;
    return FJ_OK;
}

static fj_status hold_row(fj_sink *k, const fj_value *v)
{
    hold *o = (hold *)k;
    fj_status rs = hold_table(k, o->cur);
    if (rs != FJ_OK)
        return rs;
    size_t nc = o->cur->n_cols;
    fj_value *c = fj_arena_alloc(o->a, nc * sizeof *c);
    if (!c)
        return FJ_ENOMEM;
    for (size_t i = 0; i < nc; i++) {
        c[i] = v[i];
        if (v[i].t == FJ_VT_TEXT || v[i].t == FJ_VT_JSON) {
            if (v[i].s && !(c[i].s = keep_str(o->a, v[i].s)))
                return FJ_ENOMEM;
        } else if (v[i].t == FJ_VT_LIST && v[i].n) {
            const char **l = fj_arena_alloc(o->a, v[i].n * sizeof *l);
            if (!l)
                return FJ_ENOMEM;
            for (size_t j = 0; j < v[i].n; j++)
                if (v[i].list[j] && !(l[j] = keep_str(o->a, v[i].list[j])))
                    return FJ_ENOMEM;
                else if (!v[i].list[j])
                    l[j] = NULL;
            c[i].list = l;
        }
    }
    o->h[o->n - 1].v = c;
    o->h[o->n - 1].t = NULL;
    return FJ_OK;
}

/* --- one job's parts -------------------------------------------------------------------------- */

/* The cluster's series of one metric: their ids and hosts, read once per request (a catalogue
 * look-up per metric name, not per job and host). */
typedef struct ids {
    uint32_t *v;
    char **host;
    size_t n, cap;
    fj_arena *a;
} ids;

static fj_status add_id(void *ud, uint32_t id, const fj_ts_key *key)
{
    ids *s = ud;
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 8;
        uint32_t *g = fj_realloc(s->v, nc * sizeof *g);
        if (!g)
            return FJ_ENOMEM;
        s->v = g;
        char **h = fj_realloc(s->host, nc * sizeof *h);
        if (!h)
            return FJ_ENOMEM;
        s->host = h, s->cap = nc;
    }
    char *h = fj_arena_alloc(s->a, key->host.n + 1);
    if (!h)
        return FJ_ENOMEM;
    if (key->host.n)
        memcpy(h, key->host.p, key->host.n);
    h[key->host.n] = '\0';
    s->host[s->n] = h;
    s->v[s->n++] = id;
    return FJ_OK;
}

/* What the ClusterCockpit parts of one job came to. */
typedef struct cc_parts {
    fj_en_sum sum[FJ_EP__COUNT];
    bool seen[FJ_EP__COUNT], shared[FJ_EP__COUNT];
} cc_parts;

static fj_status job_parts(fj_store *s, fj_ts_engine *live, const char *cluster, const metric_def *metrics,
                           size_t n_metrics, const ids *series, int64_t job_id,
                           fj_time first, fj_time last, const char *const *hosts, size_t n_hosts, cc_parts *p,
                           fj_err *err)
{
    fj_ts_points pts = {0};
    fj_en_reading *r = NULL;
    size_t cap_r = 0;
    fj_status rs = FJ_OK;
    for (size_t h = 0; h < n_hosts && rs == FJ_OK; h++) {
        fj_en_cover *cover = NULL;
        size_t n_cover = 0;
        bool have_cover = false;
        for (size_t m = 0; m < n_metrics && rs == FJ_OK; m++) {
            const ids *found = &series[m];
            for (size_t i = 0; i < found->n && rs == FJ_OK; i++) {
                if (!hosts[h] || strcmp(found->host[i], hosts[h]) != 0)
                    continue;
                if (!have_cover) { /* the job's shares of the node, once a series is there */
                    rs = fj_store_job_node_cover(s, cluster, job_id, hosts[h], first - LOOKBACK_S, last + LOOKBACK_S,
                                                 &cover, &n_cover, err);
                    have_cover = true;
                    if (rs == FJ_ENOTFOUND)
                        rs = FJ_OK, n_cover = 0;
                    if (rs != FJ_OK)
                        break;
                }
                if ((rs = fj_store_ts_read(s, live, found->v[i], (first - LOOKBACK_S) * NS, (last + LOOKBACK_S) * NS, &pts,
                                      err)) != FJ_OK)
                    break;
                if (pts.n > cap_r) {
                    fj_en_reading *g = fj_realloc(r, pts.n * sizeof *g);
                    if (!g) {
                        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                        break;
                    }
                    r = g, cap_r = pts.n;
                }
                for (size_t k = 0; k < pts.n; k++)
                    r[k] = (fj_en_reading){(double)pts.t[k] / (double)NS, pts.v[k]};
                fj_en_part part = metrics[m].part;
                p->seen[part] = true;
                fj_en_node_part(r, pts.n, metrics[m].counter, 0, cover, n_cover, -INFINITY, INFINITY, &p->sum[part],
                                &p->shared[part]);
            }
        }
        fj_free(cover);
    }
    fj_free(r);
    fj_ts_points_free(&pts);
    return rs;
}

/* --- the row completed ------------------------------------------------------------------------- */

static const char *const part_names[FJ_EP__COUNT] = {"gpu", "cpu", "mem", "node"};

/* The row's energy columns with the parts added: kWh, how (rebuilt from the row's and the parts),
 * co2e. */
static fj_status complete(fj_arena *a, const fj_query *q, const fj_qtable *t, fj_value *v, const cc_parts *p)
{
    int c_total = fj_qtable_col(t, "energy_kwh"), c_how = fj_qtable_col(t, "energy_how");
    int c_missing = fj_qtable_col(t, "energy_missing_s"), c_co2 = fj_qtable_col(t, "co2e_kg");
    double joules = 0, missing = 0;
    size_t gaps = 0;
    const char *gpu_how = NULL, *gpu_from = NULL;
    double gpu_idle = 0;
    bool any = false, changed = false;
    /* what the store said: the GPU part */
    if (v[c_how].t == FJ_VT_JSON && v[c_how].s) {
        fj_json *j = NULL;
        fj_err err = {0};
        if (fj_json_parse(a, v[c_how].s, strlen(v[c_how].s), NULL, &j, &err) == FJ_OK) {
            const fj_json *x;
            if ((x = fj_json_get(j, "gpu")) && x->type == FJ_JSON_STRING)
                gpu_how = x->v.s;
            if ((x = fj_json_get(j, "gpu_from")) && x->type == FJ_JSON_STRING)
                gpu_from = x->v.s;
            if ((x = fj_json_get(j, "gpu_idle_kwh")) && x->type == FJ_JSON_REAL)
                gpu_idle = x->v.d;
            if ((x = fj_json_get(j, "gaps")) && x->type == FJ_JSON_UINT)
                gaps = (size_t)x->v.u;
            if ((x = fj_json_get(j, "joules")) && (x->type == FJ_JSON_REAL || x->type == FJ_JSON_UINT))
                joules = x->type == FJ_JSON_UINT ? (double)x->v.u : x->v.d, any = true;
        }
        missing = v[c_missing].t == FJ_VT_INT ? (double)v[c_missing].i : 0;
    }
    const char *how[FJ_EP__COUNT] = {gpu_how, NULL, NULL, NULL};
    static const char *const part_cols[FJ_EP__COUNT] = {"energy_gpu_kwh", "energy_cpu_kwh", "energy_mem_kwh",
                                                         "energy_node_kwh"};
    for (int part = 0; part < FJ_EP__COUNT; part++) {
        int col = fj_qtable_col(t, part_cols[part]);
        /* a marked acc_* metric makes the GPU part only where the cards' own readings made none */
        if (!p->seen[part] || (part == FJ_EP_GPU && (v[col].t != FJ_VT_NULL || gpu_how)))
            continue;
        const fj_en_sum *s = &p->sum[part];
        missing += s->missing_s;
        gaps += s->gaps;
        if (s->covered_s > 0) {
            v[col] = (fj_value){.t = FJ_VT_REAL, .d = fj_en_kwh(s->joules)};
            joules += s->joules;
            any = true;
            how[part] = p->shared[part] ? "apportioned" : "measured";
            changed = true;
        } else if (s->missing_s > 0) {
            how[part] = "missing";
            changed = true;
        }
    }
    if (!changed)
        return FJ_OK;
    char buf[512];
    size_t len = 0;
    for (int part = 0; part < FJ_EP__COUNT; part++)
        if (how[part])
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s\"%s\":\"%s\"", len ? "," : "{", part_names[part],
                                    how[part]);
    if (gpu_from)
        len += (size_t)snprintf(buf + len, sizeof buf - len, ",\"gpu_from\":\"%s\"", gpu_from);
    if (gpu_idle > 0)
        len += (size_t)snprintf(buf + len, sizeof buf - len, ",\"gpu_idle_kwh\":%.9g", gpu_idle);
    snprintf(buf + len, sizeof buf - len, ",\"gaps\":%zu,\"joules\":%.17g}", gaps, joules);
    const char *json = fj_arena_strdup(a, buf);
    if (!json)
        return FJ_ENOMEM;
    v[c_how] = (fj_value){.t = FJ_VT_JSON, .s = json};
    v[c_missing] = (fj_value){.t = FJ_VT_INT, .i = (int64_t)llround(missing)};
    if (any) {
        double kwh = fj_en_kwh(joules), pue = q->pue > 0 ? q->pue : 1.0;
        v[c_total] = (fj_value){.t = FJ_VT_REAL, .d = kwh};
        if (q->carbon_g_per_kwh > 0)
            v[c_co2] = (fj_value){.t = FJ_VT_REAL, .d = kwh * pue * q->carbon_g_per_kwh / 1000.0};
    }
    return FJ_OK;
}

fj_status fj_api_jobs_energy(fj_store *s, fj_ts_engine *live, fj_query *q, fj_sink *k, fj_err *err, fj_qop op)
{
    if (q->no_energy)
        return op(s, q, k, err);
    hold o = {.sink = {hold_table, hold_row}, .a = fj_arena_create()};
    if (!o.a)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    metric_def metrics[MAX_METRICS];
    size_t n_metrics = metric_list(metrics);
    ids series[MAX_METRICS];
    memset(series, 0, sizeof series);
    bool any_series = false;
    fj_status rs = FJ_OK;
    for (size_t m = 0; m < n_metrics && rs == FJ_OK; m++) {
        series[m].a = o.a;
        fj_ts_sel sel = {q->cluster, NULL, metrics[m].metric};
        rs = fj_store_ts_series(s, &sel, add_id, &series[m], err);
        any_series |= series[m].n > 0;
    }
    if (rs != FJ_OK || !any_series) { /* no such metric in the cluster: the store's rows as they are */
        for (size_t m = 0; m < n_metrics; m++)
            fj_free(series[m].v), fj_free(series[m].host);
        fj_arena_destroy(o.a);
        return rs == FJ_OK ? op(s, q, k, err) : rs;
    }
    rs = op(s, q, &o.sink, err);
    if (rs == FJ_ENOMEM && !err->message[0])
        fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    const fj_qtable *cur = NULL;
    for (size_t i = 0; i < o.n && rs == FJ_OK; i++) {
        held *h = &o.h[i];
        if (h->t) {
            cur = h->t;
            rs = k->table(k, cur);
            continue;
        }
        int c_id = fj_qtable_col(cur, "id"), c_hosts = fj_qtable_col(cur, "hosts");
        int c_start = fj_qtable_col(cur, "start"), c_end = fj_qtable_col(cur, "end");
        int c_job = fj_qtable_col(cur, "job");
        if (c_id >= 0 && c_hosts >= 0 && c_start >= 0 && c_end >= 0 && c_job >= 0 &&
            fj_qtable_col(cur, "energy_how") >= 0 && h->v[c_job].t == FJ_VT_INT && h->v[c_job].i != 0 &&
            h->v[c_hosts].t == FJ_VT_LIST) {
            cc_parts p;
            memset(&p, 0, sizeof p);
            rs = job_parts(s, live, q->cluster, metrics, n_metrics, series, h->v[c_id].i, h->v[c_start].i, h->v[c_end].i, h->v[c_hosts].list,
                           h->v[c_hosts].n, &p, err);
            if (rs == FJ_OK && (rs = complete(o.a, q, cur, h->v, &p)) == FJ_ENOMEM)
                fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        }
        if (rs == FJ_OK)
            rs = k->row(k, h->v);
    }
    for (size_t m = 0; m < n_metrics; m++)
        fj_free(series[m].v), fj_free(series[m].host);
    fj_free(o.h);
    fj_arena_destroy(o.a);
    return rs;
}
