/* api/ccms_query.c — cc-metric-store's query API on fjord's time-series storage: GET|POST /api/query
 * and GET /api/healthcheck.
 *
 * A query names a metric of a host, optionally a type (hwthread, core, socket, ...) with type-ids
 * and a subtype with subtype-ids. Without a type the answer is node level. Series are read from
 * the catalog, merged with the live engine's unsealed points (ts_read_many: the series of all
 * results of a query together, so PostgreSQL reads them with a few statements), averaged into
 * buckets of `resolution` seconds and combined by sum or average (api/ccms_agg.h) — one result per query when
 * `aggreg` is set or no type is given, else one per type-id (and subtype-id). Where the requested
 * level has no series of its own, finer series are aggregated up hwthread -> core -> socket ->
 * node: with the topology of a cc-backend cluster.json (--cc-cluster-config) when the host
 * belongs to one of its subclusters (by its node list; a subcluster without one only when it is
 * the only one), else inferred from the host's stored series (hwthread h
 * belongs to core h mod n_cores, cores to sockets in contiguous blocks). Whether a metric is
 * summed or averaged, and its native interval, come from that configuration (cluster.json's
 * metricConfig or cc-metric-store's config.json "metrics"); without one a metric is averaged and
 * its interval is taken from the data. A host, metric or unit without data is left out of its
 * result list, as cc-metric-store does.
 *
 * The health check (cc-backend's body form) judges each requested metric of a node by the age of
 * the newest point of each of its series, with cc-metric-store's allowance of 5 missed intervals. */
#include "api/ccms_query.h"

#include "alloc.h"
#include "api/ccms_agg.h"
#include "json.h"
#include "ingest/metric_name.h"
#include "ingest/noderange.h"
#include "storage/core/store_ts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS 1000000000LL
#define MAX_BUCKETS 1000000
#define MAX_HW 4096

/* --- configuration ------------------------------------------------------------------------------ */

typedef enum { AGG_UNSET = 0, AGG_SUM, AGG_AVG, AGG_NONE } agg_kind;

typedef struct metric_cfg {
    const char *name;
    const char *unit; /* cluster.json's unit: prefix and base; NULL when none */
    int64_t freq_s;
    agg_kind agg;
    int energy; /* cluster.json's "energy": 0 none, 1 "power", 2 "energy" (docs/energy.md) */
} metric_cfg;

typedef struct subcluster {
    char **nodes; /* NULL: every host */
    size_t n_nodes;
    int hw_core[MAX_HW], hw_socket[MAX_HW]; /* -1 unknown */
    int n_hw;
} subcluster;

static struct {
    fj_arena *a;
    metric_cfg *metrics;
    size_t n_metrics;
    subcluster *sc;
    size_t n_sc;
} g_cfg;

static const metric_cfg *metric_conf(const char *name)
{
    for (size_t i = 0; i < g_cfg.n_metrics; i++)
        if (!strcmp(g_cfg.metrics[i].name, name))
            return &g_cfg.metrics[i];
    return NULL;
}

static agg_kind agg_of(const fj_json *v)
{
    if (!v || v->type == FJ_JSON_NULL)
        return AGG_NONE;
    if (v->type == FJ_JSON_STRING && !strcmp(v->v.s, "sum"))
        return AGG_SUM;
    if (v->type == FJ_JSON_STRING && !strcmp(v->v.s, "avg"))
        return AGG_AVG;
    return AGG_UNSET;
}

/* cc-backend's unit object {"prefix": "G", "base": "B/s"} as text ("GB/s"); NULL without a base. */
static const char *unit_text(const fj_json *u)
{
    const fj_json *base = fj_json_get(u, "base"), *prefix = fj_json_get(u, "prefix");
    if (!base || base->type != FJ_JSON_STRING)
        return NULL;
    const char *p = prefix && prefix->type == FJ_JSON_STRING ? prefix->v.s : "";
    size_t n = strlen(p) + strlen(base->v.s) + 1;
    char *t = fj_arena_alloc(g_cfg.a, n);
    if (t)
        snprintf(t, n, "%s%s", p, base->v.s);
    return t;
}

bool fj_ccq_metric_info(const char *name, const char **unit, int64_t *freq_s)
{
    const metric_cfg *c = metric_conf(name);
    *unit = c ? c->unit : NULL;
    *freq_s = c ? c->freq_s : 0;
    return c != NULL;
}

static void topo_fill(subcluster *sc, const fj_json *groups, int *map)
{
    if (!groups || groups->type != FJ_JSON_ARRAY)
        return;
    for (size_t g = 0; g < groups->len; g++) {
        const fj_json *ids = &groups->v.items[g];
        if (ids->type != FJ_JSON_ARRAY)
            continue;
        for (size_t k = 0; k < ids->len; k++)
            if (ids->v.items[k].type == FJ_JSON_UINT && ids->v.items[k].v.u < MAX_HW) {
                map[ids->v.items[k].v.u] = (int)g;
                if ((int)ids->v.items[k].v.u >= sc->n_hw)
                    sc->n_hw = (int)ids->v.items[k].v.u + 1;
            }
    }
}

fj_status fj_ccq_load_config(const char *path, fj_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fj_err_set(err, FJ_EINVAL, "cc-cluster-config", "cannot read %s", path);
    fj_buf b;
    fj_buf_init(&b, (size_t)64 << 20);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (fj_buf_append(&b, chunk, n) != FJ_OK)
            break;
    fclose(f);
    g_cfg.a = fj_arena_create();
    fj_json *root = NULL;
    fj_status st = g_cfg.a ? fj_json_parse(g_cfg.a, b.data ? b.data : "", b.len, NULL, &root, err) : FJ_ENOMEM;
    fj_buf_free(&b);
    if (st != FJ_OK)
        return fj_err_set(err, FJ_EINVAL, "cc-cluster-config", "%s: not JSON (%s at %s)", path, err->message, err->path);
    const fj_json *mc = fj_json_get(root, "metricConfig"), *ms = fj_json_get(root, "metrics");
    if (mc && mc->type == FJ_JSON_ARRAY) { /* cc-backend cluster.json */
        g_cfg.metrics = fj_arena_calloc(g_cfg.a, mc->len + 1, sizeof *g_cfg.metrics);
        for (size_t i = 0; g_cfg.metrics && i < mc->len; i++) {
            const fj_json *m = &mc->v.items[i], *name = fj_json_get(m, "name"), *ts = fj_json_get(m, "timestep");
            if (!name || name->type != FJ_JSON_STRING)
                continue;
            metric_cfg *c = &g_cfg.metrics[g_cfg.n_metrics++];
            c->name = name->v.s;
            c->freq_s = ts && ts->type == FJ_JSON_UINT ? (int64_t)ts->v.u : 0;
            c->agg = agg_of(fj_json_get(m, "aggregation"));
            c->unit = unit_text(fj_json_get(m, "unit"));
            const fj_json *en = fj_json_get(m, "energy");
            if (en && en->type == FJ_JSON_STRING)
                c->energy = !strcmp(en->v.s, "power") ? 1 : !strcmp(en->v.s, "energy") ? 2 : 0;
        }
        const fj_json *scs = fj_json_get(root, "subClusters");
        if (scs && scs->type == FJ_JSON_ARRAY) {
            g_cfg.sc = fj_arena_calloc(g_cfg.a, scs->len + 1, sizeof *g_cfg.sc);
            for (size_t i = 0; g_cfg.sc && i < scs->len; i++) {
                subcluster *sc = &g_cfg.sc[g_cfg.n_sc++];
                memset(sc->hw_core, -1, sizeof sc->hw_core);
                memset(sc->hw_socket, -1, sizeof sc->hw_socket);
                const fj_json *nodes = fj_json_get(&scs->v.items[i], "nodes");
                if (nodes && nodes->type == FJ_JSON_STRING && nodes->len)
                    fj_noderange_expand_list(g_cfg.a, nodes->v.s, 1000000, &sc->nodes, &sc->n_nodes, NULL);
                const fj_json *topo = fj_json_get(&scs->v.items[i], "topology");
                topo_fill(sc, fj_json_get(topo, "core"), sc->hw_core);
                topo_fill(sc, fj_json_get(topo, "socket"), sc->hw_socket);
            }
        }
    } else if (ms && ms->type == FJ_JSON_OBJECT) { /* cc-metric-store config.json */
        g_cfg.metrics = fj_arena_calloc(g_cfg.a, ms->len + 1, sizeof *g_cfg.metrics);
        for (size_t i = 0; g_cfg.metrics && i < ms->len; i++) {
            const fj_json *m = &ms->v.members[i].value, *fr = fj_json_get(m, "frequency");
            metric_cfg *c = &g_cfg.metrics[g_cfg.n_metrics++];
            c->name = ms->v.members[i].key;
            c->freq_s = fr && fr->type == FJ_JSON_UINT ? (int64_t)fr->v.u : 0;
            c->agg = agg_of(fj_json_get(m, "aggregation"));
        }
    } else {
        return fj_err_set(err, FJ_EINVAL, "cc-cluster-config",
                          "%s: neither a cc-backend cluster.json (metricConfig) nor a cc-metric-store config (metrics)",
                          path);
    }
    return FJ_OK;
}

bool fj_ccq_energy_metric(size_t i, const char **name, bool *counter)
{
    for (size_t k = 0; k < g_cfg.n_metrics; k++)
        if (g_cfg.metrics[k].energy && i-- == 0) {
            *name = g_cfg.metrics[k].name;
            *counter = g_cfg.metrics[k].energy == 2;
            return true;
        }
    return false;
}

/* The subcluster whose node list names host; one without a node list only when it is the only
 * subcluster (otherwise which one a host belongs to is unknown, and topology is inferred). */
static const subcluster *subcluster_of(const char *host)
{
    const subcluster *any = g_cfg.n_sc == 1 && !g_cfg.sc[0].nodes ? &g_cfg.sc[0] : NULL;
    for (size_t i = 0; i < g_cfg.n_sc; i++) {
        const subcluster *sc = &g_cfg.sc[i];
        if (!sc->nodes)
            continue;
        for (size_t k = 0; k < sc->n_nodes; k++)
            if (!strcmp(sc->nodes[k], host))
                return sc;
    }
    return any;
}

/* --- series of a host ------------------------------------------------------------------------- */

typedef struct qser {
    uint32_t id;
    char metric[128], type[32], type_id[64], stype[64], stype_id[64];
} qser;

typedef struct serlist {
    qser *v;
    size_t n, cap;
} serlist;

static void copy_field(char *dst, size_t cap, fj_ts_str s)
{
    size_t n = s.n < cap - 1 ? s.n : cap - 1;
    if (n)
        memcpy(dst, s.p, n);
    dst[n] = '\0';
}

static fj_status add_series(void *ud, uint32_t id, const fj_ts_key *k)
{
    serlist *l = ud;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        qser *nv = fj_realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return FJ_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    qser *q = &l->v[l->n++];
    q->id = id;
    copy_field(q->metric, sizeof q->metric, k->metric);
    copy_field(q->type, sizeof q->type, k->type);
    copy_field(q->type_id, sizeof q->type_id, k->type_id);
    copy_field(q->stype, sizeof q->stype, k->stype);
    copy_field(q->stype_id, sizeof q->stype_id, k->stype_id);
    return FJ_OK;
}

/* A ClusterCockpit metric's name as its series keys hold it: a name with a dot or backslash escaped
 * (ingest/metric_name.h), so that it is not read as a plain line's "measurement.field"; series
 * written before that rule hold the name bare, and are read too. NULL when the name needs no
 * escape (nearly all). */
static const char *metric_escaped(fj_arena *a, const char *metric)
{
    size_t n = strlen(metric);
    if (!fj_mname_needs_escape(metric, n, '.'))
        return NULL;
    char *e = fj_arena_alloc(a, 2 * n + 1);
    if (e)
        e[fj_mname_escape(metric, n, '.', false, e)] = '\0';
    return e;
}

/* ts_series of the metric under both of its names (metric_escaped). */
static fj_status metric_series(fj_store *s, fj_arena *a, const char *cluster, const char *host, const char *metric,
                               fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err)
{
    fj_ts_sel sl = {cluster, host, metric};
    fj_status st = fj_store_ts_series(s, &sl, cb, ud, err);
    const char *esc = st == FJ_OK ? metric_escaped(a, metric) : NULL;
    if (esc) {
        sl.metric = esc;
        st = fj_store_ts_series(s, &sl, cb, ud, err);
    }
    return st;
}

/* --- topology ----------------------------------------------------------------------------------- */

typedef struct topo {
    bool loaded;
    const subcluster *sc;
    int n_hw, n_cores, n_sockets;
} topo;

static int count_ids(const serlist *all, const char *type)
{
    int maxid = -1;
    for (size_t i = 0; i < all->n; i++)
        if (!strcmp(all->v[i].type, type)) {
            int id = atoi(all->v[i].type_id);
            if (id > maxid)
                maxid = id;
        }
    return maxid + 1;
}

static void topo_infer(topo *t, const serlist *all, const char *host)
{
    t->loaded = true;
    t->sc = subcluster_of(host);
    t->n_hw = count_ids(all, "hwthread");
    t->n_cores = count_ids(all, "core");
    t->n_sockets = count_ids(all, "socket");
    if (t->n_cores <= 0)
        t->n_cores = t->n_hw;
    if (t->n_sockets <= 0)
        t->n_sockets = 1;
}

/* The index of the `to` unit (core or socket) that contains unit `id` of type `from`, or -1. */
static int parent_of(const topo *t, const char *from, int id, const char *to)
{
    if (id < 0)
        return -1;
    if (t->sc && !strcmp(from, "hwthread") && id < MAX_HW) {
        if (!strcmp(to, "core"))
            return t->sc->hw_core[id];
        if (!strcmp(to, "socket"))
            return t->sc->hw_socket[id];
    }
    if (t->sc && !strcmp(from, "core") && !strcmp(to, "socket")) {
        for (int h = 0; h < t->sc->n_hw; h++) /* the socket of the core's first hwthread */
            if (t->sc->hw_core[h] == id)
                return t->sc->hw_socket[h];
        return -1;
    }
    int core = id;
    if (!strcmp(from, "hwthread")) {
        if (t->n_cores <= 0)
            return -1;
        core = id % t->n_cores;
        if (!strcmp(to, "core"))
            return core;
    } else if (strcmp(from, "core") != 0) {
        return -1;
    }
    if (!strcmp(to, "socket") && t->n_cores > 0)
        return (int)((int64_t)core * t->n_sockets / t->n_cores);
    return -1;
}

/* --- one result ----------------------------------------------------------------------------------- */

typedef struct qctx {
    fj_http_req *r;
    fj_arena *a; /* the request's */
    fj_store *s;
    fj_ts_engine *live;
    const char *cluster;
    int64_t from_s, to_s;
    bool with_stats, with_data, with_padding;
    fj_ts_points pts;
    fj_buf *out;
    const char *step_metric; /* native_step's cache */
    int64_t step;
} qctx;

typedef struct sel {
    const qser **v;
    size_t n, cap;
} sel;

static bool sel_add(sel *s, const qser *q)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == q)
            return true;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        const qser **nv = fj_realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return false;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = q;
    return true;
}

/* Numbers are written with up to 6 decimals (cc-metric-store writes 3), without printf where the
 * value allows: formatting dominated the cost of large answers. */
static void put_num(fj_buf *o, double v)
{
    if (isnan(v) || isinf(v)) {
        fj_buf_puts(o, "null");
        return;
    }
    double a = fabs(v);
    if (a >= 1e12 || (a < 1e-3 && v != 0)) {
        fj_buf_printf(o, "%.12g", v);
        return;
    }
    long long m = llround(v * 1e6);
    unsigned long long u = m < 0 ? (unsigned long long)-m : (unsigned long long)m;
    unsigned long long ip = u / 1000000, fp = u % 1000000;
    char buf[40], *p = buf + sizeof buf;
    int nd = 6;
    while (nd > 0 && fp % 10 == 0) {
        fp /= 10;
        nd--;
    }
    if (nd) {
        for (int i = 0; i < nd; i++) {
            *--p = (char)('0' + fp % 10);
            fp /= 10;
        }
        *--p = '.';
    }
    do {
        *--p = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    if (m < 0)
        *--p = '-';
    fj_buf_append(o, p, (size_t)(buf + sizeof buf - p));
}

static void put_error_result(qctx *c, const char *msg, int64_t res)
{
    fj_buf_printf(c->out, "{\"error\":");
    fj_buf_json_str(c->out, msg);
    fj_buf_printf(c->out, ",\"from\":%lld,\"to\":%lld,\"resolution\":%lld,\"avg\":null,\"min\":null,\"max\":null}",
                  (long long)c->from_s, (long long)c->to_s, (long long)res);
}

/* The resolution in seconds: asked, configured, or the median spacing of the first series. */
static int64_t native_step_uncached(qctx *c, const char *metric, const sel *s);

/* The last metric's step is remembered: for-all-nodes asks the same metric host after host. */
static int64_t native_step(qctx *c, const char *metric, const sel *s)
{
    if (c->step_metric && !strcmp(c->step_metric, metric))
        return c->step;
    c->step = native_step_uncached(c, metric, s);
    c->step_metric = metric;
    return c->step;
}

static int64_t native_step_uncached(qctx *c, const char *metric, const sel *s)
{
    const metric_cfg *mc = metric_conf(metric);
    if (mc && mc->freq_s > 0)
        return mc->freq_s;
    for (size_t i = 0; i < s->n && i < 4; i++) {
        fj_err err = {0};
        if (fj_store_ts_read(c->s, c->live, s->v[i]->id, c->from_s * NS, c->to_s * NS, &c->pts,
                                           &err) != FJ_OK ||
            c->pts.n < 2)
            continue;
        size_t k = c->pts.n < 64 ? c->pts.n : 64;
        int64_t best = INT64_MAX;
        for (size_t j = 1; j < k; j++)
            if (c->pts.t[j] - c->pts.t[j - 1] < best)
                best = c->pts.t[j] - c->pts.t[j - 1];
        if (best >= NS)
            return best / NS;
    }
    return 60;
}

/* One result being computed: its series, its grid and the buckets they add into. */
typedef struct result {
    const sel *s;
    int64_t step;
    bool too_many; /* the grid would exceed MAX_BUCKETS */
    fj_agg_grid g;
    double *sum;
    uint32_t *cnt;
} result;

static void result_free(result *r)
{
    fj_free(r->sum), fj_free(r->cnt);
    r->sum = NULL, r->cnt = NULL;
}

/* The step, grid and empty buckets of a result over s (none for an empty selection or too many
 * buckets, which result_put answers). FJ_ENOMEM only. */
static fj_status result_start(qctx *c, const char *metric, const sel *s, int64_t res_s, result *r)
{
    *r = (result){.s = s};
    if (s->n == 0)
        return FJ_OK;
    r->step = res_s > 0 ? res_s : native_step(c, metric, s);
    int64_t to_ns = c->to_s * NS - 1;
    if (fj_agg_grid_make(c->from_s * NS, to_ns < c->from_s * NS ? c->from_s * NS : to_ns, r->step * NS, MAX_BUCKETS,
                        &r->g) != FJ_OK) {
        r->too_many = true;
        return FJ_OK;
    }
    r->sum = fj_calloc(r->g.n, sizeof *r->sum);
    r->cnt = fj_calloc(r->g.n, sizeof *r->cnt);
    if (!r->sum || !r->cnt) {
        result_free(r);
        return FJ_ENOMEM;
    }
    return FJ_OK;
}

static bool has_buckets(const result *r)
{
    return r->s->n && !r->too_many;
}

static bool same_grid(const fj_agg_grid *a, const fj_agg_grid *b)
{
    return a->from == b->from && a->step == b->step && a->n == b->n;
}

/* Writes a result, after a comma unless it is the list's first; a selection without series (a
 * host, metric or unit without data) writes nothing, as cc-metric-store leaves it out. */
static void result_put(qctx *c, const char *metric, result *r, double scale, bool *first)
{
    if (r->s->n == 0)
        return;
    if (!*first)
        fj_buf_puts(c->out, ",");
    *first = false;
    if (r->too_many) {
        put_error_result(c, "too many buckets: raise resolution or narrow from/to", r->step);
        return;
    }
    const fj_agg_grid g = r->g;
    double *sum = r->sum;
    const metric_cfg *mc = metric_conf(metric);
    fj_agg_acc_finish(mc && mc->agg == AGG_SUM ? FJ_AGG_SUM : FJ_AGG_AVG, sum, r->cnt, g.n, sum);
    size_t lo = 0, hi = g.n;
    if (!c->with_padding) {
        while (lo < hi && isnan(sum[lo]))
            lo++;
        while (hi > lo && isnan(sum[hi - 1]))
            hi--;
    }
    double avg, mn, mx;
    fj_agg_summary(sum + lo, hi - lo, &avg, &mn, &mx);
    if (scale != 0 && scale != 1) {
        for (size_t i = lo; i < hi; i++)
            sum[i] *= scale;
        avg *= scale, mn *= scale, mx *= scale;
    }
    fj_buf *o = c->out;
    fj_buf_puts(o, "{");
    if (c->with_data) {
        fj_buf_puts(o, "\"data\":[");
        for (size_t i = lo; i < hi; i++) {
            if (i > lo)
                fj_buf_puts(o, ",");
            put_num(o, sum[i]);
        }
        fj_buf_puts(o, "],");
    }
    fj_buf_printf(o, "\"from\":%lld,\"to\":%lld,\"resolution\":%lld", (long long)((g.from + (int64_t)lo * g.step) / NS),
                  (long long)((g.from + (int64_t)hi * g.step) / NS), (long long)r->step);
    if (c->with_stats) {
        fj_buf_puts(o, ",\"avg\":");
        put_num(o, avg);
        fj_buf_puts(o, ",\"min\":");
        put_num(o, mn);
        fj_buf_puts(o, ",\"max\":");
        put_num(o, mx);
    }
    fj_buf_puts(o, "}");
}

/* Buckets of the results read together: at most this many (12 bytes each), unless one result
 * alone has more. Bounds memory, while a query's results share a few statements. */
#define GROUP_BUCKETS ((size_t)1 << 21)

/* The series of a group of results, flattened in result order, and the result each belongs to. */
typedef struct group_read {
    result *r;
    uint32_t *ids;
    size_t *owner;
    size_t n;
    double *tmp; /* one series resampled, before it is added */
} group_read;

static fj_status add_series_points(void *ud, size_t i, const fj_ts_points *pts)
{
    group_read *gr = ud;
    result *r = &gr->r[gr->owner[i]];
    fj_agg_resample_avg(&r->g, pts->t, pts->v, pts->n, gr->tmp);
    fj_agg_acc_add(r->sum, r->cnt, gr->tmp, r->g.n);
    return FJ_OK;
}

/* Reads the series of the results of r[0..n) that have buckets (all on one grid) with one
 * ts_read_many, so a backend where a statement is a round trip reads them with a few statements,
 * not one each. Each result's series are added in the order of its selection, as reading them one
 * by one would. */
static fj_status read_group(qctx *c, result *r, size_t n)
{
    size_t total = 0;
    const fj_agg_grid *g = NULL;
    for (size_t i = 0; i < n; i++)
        if (has_buckets(&r[i])) {
            total += r[i].s->n;
            g = g ? g : &r[i].g;
        }
    if (!total)
        return FJ_OK;
    group_read gr = {.r = r,
                     .ids = fj_malloc(total * sizeof *gr.ids),
                     .owner = fj_malloc(total * sizeof *gr.owner),
                     .tmp = fj_calloc(g->n, sizeof *gr.tmp)};
    fj_status st = FJ_ENOMEM;
    if (gr.ids && gr.owner && gr.tmp) {
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; has_buckets(&r[i]) && k < r[i].s->n; k++) {
                gr.ids[gr.n] = r[i].s->v[k]->id;
                gr.owner[gr.n++] = i;
            }
        fj_err err = {0};
        st = fj_store_ts_read_many(c->s, c->live, gr.ids, gr.n, g->from, g->from + (int64_t)g->n * g->step - 1,
                                   &c->pts, add_series_points, &gr, &err);
    }
    fj_free(gr.ids), fj_free(gr.owner), fj_free(gr.tmp);
    return st;
}

/* Starts the results over sels[i..) that fit one group (one grid, GROUP_BUCKETS in all, at least
 * one result); *end is one past the last started. */
static fj_status start_group(qctx *c, const char *metric, const sel *sels, size_t n, int64_t res_s, result *r,
                             size_t i, size_t *end)
{
    const fj_agg_grid *grid = NULL;
    size_t buckets = 0, k = i;
    fj_status st = FJ_OK;
    for (; k < n; k++) {
        if ((st = result_start(c, metric, &sels[k], res_s, &r[k])) != FJ_OK)
            break;
        if (!has_buckets(&r[k]))
            continue;
        if (grid && (buckets + r[k].g.n > GROUP_BUCKETS || !same_grid(&r[k].g, grid))) {
            result_free(&r[k]); /* started again by the next group */
            break;
        }
        grid = grid ? grid : &r[k].g;
        buckets += r[k].g.n;
    }
    *end = k;
    return st;
}

/* The results over sels[0..n), written comma-separated in order. */
static fj_status put_results(qctx *c, const char *metric, const sel *sels, size_t n, int64_t res_s, double scale)
{
    result *r = fj_calloc(n ? n : 1, sizeof *r);
    if (!r)
        return FJ_ENOMEM;
    fj_status st = FJ_OK;
    bool first = true;
    for (size_t i = 0, end = 0; st == FJ_OK && i < n; i = end) {
        st = start_group(c, metric, sels, n, res_s, r, i, &end);
        if (st == FJ_OK)
            st = read_group(c, r + i, end - i);
        for (size_t j = i; st == FJ_OK && j < end; j++)
            result_put(c, metric, &r[j], scale, &first);
        for (size_t j = i; j < end; j++)
            result_free(&r[j]);
    }
    fj_free(r);
    return st;
}

/* --- one query ------------------------------------------------------------------------------------- */

typedef struct query {
    const char *metric, *host, *type, *subtype;
    const char **type_ids, **subtype_ids;
    size_t n_type_ids, n_subtype_ids;
    int64_t resolution;
    bool aggreg;
    double scale;
} query;

static bool in_list(const char *v, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v, list[i]))
            return true;
    return false;
}

/* Series of unit (type, id) of the host's metric, subtype-filtered: its own when present (with
 * stype "" preferred when no subtype is asked), else the finer units' series inside it. */
static bool collect_unit(qctx *c, const serlist *ms, const serlist *all, topo *t, const query *q, const char *type,
                         const char *id, const char *stid, sel *out)
{
    size_t before = out->n;
    bool plain = false;
    for (size_t i = 0; i < ms->n; i++)
        if (!strcmp(ms->v[i].type, type) && !strcmp(ms->v[i].type_id, id) && !ms->v[i].stype[0])
            plain = true;
    for (size_t i = 0; i < ms->n; i++) {
        const qser *x = &ms->v[i];
        if (strcmp(x->type, type) || strcmp(x->type_id, id))
            continue;
        if (q->subtype) {
            if (strcmp(x->stype, q->subtype) || (stid && strcmp(x->stype_id, stid)) ||
                (!stid && q->n_subtype_ids && !in_list(x->stype_id, q->subtype_ids, q->n_subtype_ids)))
                continue;
        } else if (plain && x->stype[0]) {
            continue;
        }
        if (!sel_add(out, x))
            return false;
    }
    if (out->n > before || q->subtype)
        return true;
    /* nothing at this level: aggregate finer units up (the coarsest finer level with data) */
    static const char *const below_socket[] = {"core", "hwthread"}, *const below_core[] = {"hwthread"};
    const char *const *finer = !strcmp(type, "socket") ? below_socket : !strcmp(type, "core") ? below_core : NULL;
    size_t nf = finer == below_socket ? 2 : finer ? 1 : 0;
    if (nf && !t->loaded)
        topo_infer(t, all, q->host);
    int want = atoi(id);
    for (size_t f = 0; f < nf && out->n == before; f++)
        for (size_t i = 0; i < ms->n; i++) {
            const qser *x = &ms->v[i];
            if (strcmp(x->type, finer[f]) || x->stype[0])
                continue;
            if (parent_of(t, finer[f], atoi(x->type_id), type) == want && !sel_add(out, x))
                return false;
        }
    return true;
}

/* Node level: the host's node series, else every unit's own series. */
static bool collect_node(const serlist *ms, sel *out)
{
    for (size_t i = 0; i < ms->n; i++)
        if (!strcmp(ms->v[i].type, "node") && !ms->v[i].stype[0] && !sel_add(out, &ms->v[i]))
            return false;
    if (out->n)
        return true;
    for (size_t i = 0; i < ms->n; i++)
        if (!strcmp(ms->v[i].type, "node") && !sel_add(out, &ms->v[i]))
            return false;
    if (out->n)
        return true;
    /* no node series: the units' own series (those without a subtype; else all) */
    for (size_t i = 0; i < ms->n; i++)
        if (!ms->v[i].stype[0] && !sel_add(out, &ms->v[i]))
            return false;
    for (size_t i = 0; !out->n && i < ms->n; i++)
        if (!sel_add(out, &ms->v[i]))
            return false;
    return true;
}

static fj_status run_query(qctx *c, const query *q)
{
    serlist ms = {0}, all = {0};
    fj_err err = {0};
    fj_status st = metric_series(c->s, c->a, c->cluster, q->host, q->metric, add_series, &ms, &err);
    topo t = {0};
    sel s = {0}, *sels = NULL;
    size_t n_sels = 0;
    fj_buf_puts(c->out, "[");
    bool node_level = !q->type || !strcmp(q->type, "node");
    if (st == FJ_OK && !node_level) {
        fj_ts_sel sa = {c->cluster, q->host, NULL};
        st = fj_store_ts_series(c->s, &sa, add_series, &all, &err);
    }
    if (st != FJ_OK)
        goto out;
    if (node_level) {
        if (!collect_node(&ms, &s))
            st = FJ_ENOMEM;
        else
            st = put_results(c, q->metric, &s, 1, q->resolution, q->scale);
        goto out;
    }
    /* the ids asked, or every id of that type the host has */
    const char **ids = q->type_ids;
    size_t n_ids = q->n_type_ids;
    const char *found[MAX_HW];
    if (!n_ids) {
        for (size_t i = 0; i < all.n && n_ids < MAX_HW; i++)
            if (!strcmp(all.v[i].type, q->type) && !in_list(all.v[i].type_id, found, n_ids))
                found[n_ids++] = all.v[i].type_id;
        ids = found;
    }
    size_t n_st = q->subtype && q->n_subtype_ids ? q->n_subtype_ids : 1;
    if (q->aggreg) {
        for (size_t i = 0; i < n_ids; i++)
            if (!collect_unit(c, &ms, &all, &t, q, q->type, ids[i], NULL, &s)) {
                st = FJ_ENOMEM;
                goto out;
            }
        st = put_results(c, q->metric, &s, 1, q->resolution, q->scale);
        goto out;
    }
    /* one result per id (and subtype id): every selection first, so that they are read together */
    n_sels = n_ids * n_st;
    if (!(sels = fj_calloc(n_sels ? n_sels : 1, sizeof *sels))) {
        st = FJ_ENOMEM;
        goto out;
    }
    for (size_t i = 0; st == FJ_OK && i < n_ids; i++)
        for (size_t k = 0; st == FJ_OK && k < n_st; k++) {
            const char *stid = q->subtype && q->n_subtype_ids ? q->subtype_ids[k] : NULL;
            if (!collect_unit(c, &ms, &all, &t, q, q->type, ids[i], stid, &sels[i * n_st + k]))
                st = FJ_ENOMEM;
        }
    if (st == FJ_OK)
        st = put_results(c, q->metric, sels, n_sels, q->resolution, q->scale);
out:
    fj_buf_puts(c->out, "]");
    fj_free(ms.v);
    fj_free(all.v);
    fj_free(s.v);
    for (size_t i = 0; sels && i < n_sels; i++)
        fj_free(sels[i].v);
    fj_free(sels);
    return st;
}

/* --- the request ---------------------------------------------------------------------------------- */

static void bad_request(fj_http_req *r, const char *path, const char *msg)
{
    fj_err err = {0};
    fj_err_set(&err, FJ_EINVAL, path, "%s", msg);
    fj_http_reply_error(r, FJ_EINVAL, &err);
}

static bool str_list(fj_arena *a, const fj_json *v, const char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!v || v->type == FJ_JSON_NULL)
        return true;
    if (v->type != FJ_JSON_ARRAY)
        return false;
    *out = fj_arena_calloc(a, v->len + 1, sizeof **out);
    if (!*out && v->len)
        return false;
    for (size_t i = 0; i < v->len; i++) {
        const fj_json *x = &v->v.items[i];
        if (x->type == FJ_JSON_STRING)
            (*out)[i] = x->v.s;
        else if (x->type == FJ_JSON_UINT)
            (*out)[i] = fj_arena_printf(a, "%llu", (unsigned long long)x->v.u);
        else
            return false;
    }
    *n = v->len;
    return true;
}

static bool get_bool(const fj_json *o, const char *k, bool dflt)
{
    const fj_json *v = fj_json_get(o, k);
    if (!v)
        return dflt;
    return v->type == FJ_JSON_TRUE;
}

static bool get_int(const fj_json *o, const char *k, int64_t *out)
{
    const fj_json *v = fj_json_get(o, k);
    *out = 0;
    if (!v || v->type == FJ_JSON_NULL)
        return true;
    if (v->type == FJ_JSON_UINT && v->v.u <= (uint64_t)INT64_MAX / NS)
        *out = (int64_t)v->v.u;
    else if (v->type == FJ_JSON_INT && v->v.i >= INT64_MIN / NS)
        *out = v->v.i;
    else if (v->type == FJ_JSON_REAL && fabs(v->v.d) < 9e9)
        *out = (int64_t)v->v.d;
    else
        return false;
    return true;
}

static bool parse_query(fj_arena *a, const fj_json *o, query *q)
{
    memset(q, 0, sizeof *q);
    if (o->type != FJ_JSON_OBJECT)
        return false;
    const fj_json *v;
    if ((v = fj_json_get(o, "metric")) && v->type == FJ_JSON_STRING)
        q->metric = v->v.s;
    if ((v = fj_json_get(o, "host")) && v->type == FJ_JSON_STRING)
        q->host = v->v.s;
    if ((v = fj_json_get(o, "type")) && v->type == FJ_JSON_STRING)
        q->type = v->v.s;
    if ((v = fj_json_get(o, "subtype")) && v->type == FJ_JSON_STRING)
        q->subtype = v->v.s;
    if ((v = fj_json_get(o, "scale-by")))
        q->scale = v->type == FJ_JSON_REAL ? v->v.d : v->type == FJ_JSON_UINT ? (double)v->v.u
                                                  : v->type == FJ_JSON_INT ? (double)v->v.i : 0;
    q->aggreg = get_bool(o, "aggreg", false);
    return q->metric && q->host && get_int(o, "resolution", &q->resolution) && q->resolution >= 0 &&
           str_list(a, fj_json_get(o, "type-ids"), &q->type_ids, &q->n_type_ids) &&
           str_list(a, fj_json_get(o, "subtype-ids"), &q->subtype_ids, &q->n_subtype_ids);
}

static void put_query(fj_buf *o, const query *q)
{
    fj_buf_puts(o, "{\"metric\":");
    fj_buf_json_str(o, q->metric);
    fj_buf_puts(o, ",\"host\":");
    fj_buf_json_str(o, q->host);
    fj_buf_printf(o, ",\"resolution\":%lld,\"aggreg\":%s}", (long long)q->resolution, q->aggreg ? "true" : "false");
}

typedef struct hostset {
    const char **v;
    size_t n, cap;
    fj_arena *a;
} hostset;

static fj_status add_host(void *ud, uint32_t id, const fj_ts_key *k)
{
    hostset *h = ud;
    (void)id;
    if (h->n && strlen(h->v[h->n - 1]) == k->host.n && !memcmp(h->v[h->n - 1], k->host.p, k->host.n))
        return FJ_OK; /* rows come ordered by host */
    for (size_t i = 0; i < h->n; i++)
        if (strlen(h->v[i]) == k->host.n && !memcmp(h->v[i], k->host.p, k->host.n))
            return FJ_OK;
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        const char **nv = fj_arena_calloc(h->a, nc, sizeof *nv);
        if (!nv)
            return FJ_ENOMEM;
        if (h->n)
            memcpy(nv, h->v, h->n * sizeof *nv);
        h->v = nv;
        h->cap = nc;
    }
    h->v[h->n] = fj_arena_strndup(h->a, k->host.n ? k->host.p : "", k->host.n);
    return h->v[h->n++] ? FJ_OK : FJ_ENOMEM;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void fj_route_ccms_query(fj_http_req *r)
{
    fj_arena *a = fj_http_arena(r);
    size_t len;
    const char *body = fj_http_body(r, &len);
    fj_json *root = NULL;
    fj_err err = {0};
    if (fj_json_parse(a, body, len, NULL, &root, &err) != FJ_OK || root->type != FJ_JSON_OBJECT) {
        bad_request(r, err.path[0] ? err.path : "body", err.message[0] ? err.message : "the request must be a JSON object");
        return;
    }
    qctx c = {.r = r, .a = a};
    const fj_json *v = fj_json_get(root, "cluster");
    if (!v || v->type != FJ_JSON_STRING || !v->len) {
        bad_request(r, "cluster", "'cluster' is required");
        return;
    }
    c.cluster = v->v.s;
    if (!fj_auth_may_read(fj_http_principal(r), c.cluster)) {
        err = (fj_err){0};
        fj_err_set(&err, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", c.cluster);
        fj_http_reply_error(r, FJ_EFORBIDDEN, &err);
        return;
    }
    if (!get_int(root, "from", &c.from_s) || !get_int(root, "to", &c.to_s) || c.to_s < c.from_s) {
        bad_request(r, "from", "'from' and 'to' must be epoch seconds with from <= to");
        return;
    }
    c.with_stats = get_bool(root, "with-stats", true);
    c.with_data = get_bool(root, "with-data", true);
    c.with_padding = get_bool(root, "with-padding", true);
    c.s = fj_http_reader(r, &err);
    if (!c.s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    c.live = fj_http_ts_engine(r);

    /* queries: as given, then for-all-nodes (every host with the metric, in name order) */
    const fj_json *qs = fj_json_get(root, "queries"), *fan = fj_json_get(root, "for-all-nodes");
    size_t n_given = qs && qs->type == FJ_JSON_ARRAY ? qs->len : 0;
    if (qs && qs->type != FJ_JSON_ARRAY && qs->type != FJ_JSON_NULL) {
        bad_request(r, "queries", "'queries' must be an array");
        return;
    }
    query *list = NULL;
    size_t n = 0, cap = n_given + 16;
    list = fj_arena_calloc(a, cap, sizeof *list);
    for (size_t i = 0; list && i < n_given; i++) {
        if (!parse_query(a, &qs->v.items[i], &list[n++])) {
            char path[48];
            snprintf(path, sizeof path, "queries[%zu]", i);
            bad_request(r, path, "a query needs metric and host; type-ids/subtype-ids are arrays of strings");
            return;
        }
    }
    size_t first_fan = n;
    const char **fan_metrics = NULL;
    size_t n_fan = 0;
    if (!str_list(a, fan, &fan_metrics, &n_fan)) {
        bad_request(r, "for-all-nodes", "'for-all-nodes' must be an array of metric names");
        return;
    }
    if (n_fan) {
        hostset hs = {.a = a};
        for (size_t m = 0; m < n_fan; m++) {
            if (metric_series(c.s, a, c.cluster, NULL, fan_metrics[m], add_host, &hs, &err) != FJ_OK) {
                fj_http_reply_error(r, FJ_EIO, &err);
                return;
            }
        }
        if (hs.n)
            qsort(hs.v, hs.n, sizeof *hs.v, cmp_str);
        for (size_t h = 0; h < hs.n; h++)
            for (size_t m = 0; m < n_fan; m++) {
                if (n == cap) {
                    query *nl = fj_arena_calloc(a, cap * 2, sizeof *nl);
                    if (!nl)
                        break;
                    memcpy(nl, list, n * sizeof *nl);
                    list = nl;
                    cap *= 2;
                }
                list[n++] = (query){.metric = fan_metrics[m], .host = hs.v[h]};
            }
    }
    if (!list) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    c.out = &out;
    fj_buf_puts(&out, "{");
    if (n_fan) {
        fj_buf_puts(&out, "\"queries\":[");
        for (size_t i = first_fan; i < n; i++) {
            if (i > first_fan)
                fj_buf_puts(&out, ",");
            put_query(&out, &list[i]);
        }
        fj_buf_puts(&out, "],");
    }
    fj_buf_puts(&out, "\"results\":[");
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n; i++) {
        if (i)
            fj_buf_puts(&out, ",");
        st = run_query(&c, &list[i]);
    }
    fj_buf_puts(&out, "]}\n");
    fj_ts_points_free(&c.pts);
    if (st == FJ_OK && out.data)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, st == FJ_OK ? FJ_ETOOBIG : st, NULL);
    fj_buf_free(&out);
}

static fj_status count_one(void *ud, uint32_t id, const fj_ts_key *k)
{
    (void)id, (void)k;
    ++*(size_t *)ud;
    return FJ_OK;
}

/* --- the health check ----------------------------------------------------------------------------- */

/* cc-metric-store's staleness rule (its MaxMissingDataPoints): a series is fresh while the interval
 * of its newest point ended at most this many intervals ago, i.e. its newest point is at most
 * HEALTH_MISSED_INTERVALS + 1 intervals old. */
#define HEALTH_MISSED_INTERVALS 5

typedef enum { HEALTH_MISSING, HEALTH_DEGRADED, HEALTH_FRESH } metric_health;

static fj_status count_nonempty(void *ud, size_t i, const fj_ts_points *pts)
{
    (void)i;
    if (pts->n)
        ++*(size_t *)ud;
    return FJ_OK;
}

/* A metric of a host: missing without a series (at any level), degraded when one of its series has
 * no point since now - (HEALTH_MISSED_INTERVALS + 1) intervals, else fresh. The interval is the
 * metric's configured frequency, else the spacing of its data (native_step). */
static fj_status metric_health_of(qctx *c, const serlist *host_series, const char *metric, int64_t now_s,
                                  metric_health *out)
{
    sel s = {0};
    const char *esc = metric_escaped(c->a, metric);
    for (size_t i = 0; i < host_series->n; i++)
        if ((!strcmp(host_series->v[i].metric, metric) || (esc && !strcmp(host_series->v[i].metric, esc))) &&
            !sel_add(&s, &host_series->v[i])) {
            fj_free(s.v);
            return FJ_ENOMEM;
        }
    *out = HEALTH_MISSING;
    if (!s.n)
        return FJ_OK;
    uint32_t *ids = fj_malloc(s.n * sizeof *ids);
    if (!ids) {
        fj_free(s.v);
        return FJ_ENOMEM;
    }
    for (size_t i = 0; i < s.n; i++)
        ids[i] = s.v[i]->id;
    int64_t freq = native_step(c, metric, &s);
    int64_t since_s = freq > now_s / (HEALTH_MISSED_INTERVALS + 1) ? 0 : now_s - (HEALTH_MISSED_INTERVALS + 1) * freq;
    size_t fresh = 0;
    fj_err err = {0};
    fj_status st =
        fj_store_ts_read_many(c->s, c->live, ids, s.n, since_s * NS, INT64_MAX, &c->pts, count_nonempty, &fresh, &err);
    *out = fresh == s.n ? HEALTH_FRESH : HEALTH_DEGRADED;
    fj_free(ids);
    fj_free(s.v);
    return st;
}

/* One node's entry, as cc-metric-store's HealthCheckResult: State full (every metric fresh),
 * failed (the node unknown, or no metric fresh), else partial; HealthMetrics a JSON text
 * {"degraded":[...],"missing":[...]} (empty for an unknown node). */
static fj_status put_node_health(qctx *c, const char *node, const char **metrics, size_t n_metrics, int64_t now_s,
                                 fj_buf *tmp)
{
    serlist all = {0};
    fj_err err = {0};
    fj_ts_sel sl = {c->cluster, node, NULL};
    fj_status st = fj_store_ts_series(c->s, &sl, add_series, &all, &err);
    fj_buf_json_str(c->out, node);
    if (st == FJ_OK && !all.n) {
        fj_buf_puts(c->out, ":{\"State\":\"failed\",\"HealthMetrics\":\"\"}");
        fj_free(all.v);
        return FJ_OK;
    }
    metric_health *h = fj_calloc(n_metrics ? n_metrics : 1, sizeof *h);
    if (!h)
        st = FJ_ENOMEM;
    size_t n_fresh = 0;
    for (size_t i = 0; st == FJ_OK && i < n_metrics; i++)
        if ((st = metric_health_of(c, &all, metrics[i], now_s, &h[i])) == FJ_OK && h[i] == HEALTH_FRESH)
            n_fresh++;
    if (st == FJ_OK) {
        tmp->len = 0;
        static const char *const lists[] = {"degraded", "missing"};
        static const metric_health kinds[] = {HEALTH_DEGRADED, HEALTH_MISSING};
        for (int l = 0; l < 2; l++) {
            fj_buf_printf(tmp, "%s\"%s\":[", l ? "," : "{", lists[l]);
            bool first = true;
            for (size_t i = 0; i < n_metrics; i++)
                if (h[i] == kinds[l]) {
                    fj_buf_puts(tmp, first ? "" : ",");
                    fj_buf_json_str(tmp, metrics[i]);
                    first = false;
                }
            fj_buf_puts(tmp, "]");
        }
        fj_buf_puts(tmp, "}");
        const char *state = n_fresh == n_metrics ? "full" : n_fresh == 0 ? "failed" : "partial";
        fj_buf_printf(c->out, ":{\"State\":\"%s\",\"HealthMetrics\":", state);
        if (tmp->data)
            fj_buf_json_str(c->out, tmp->data);
        else
            st = FJ_ENOMEM;
        fj_buf_puts(c->out, "}");
    }
    fj_free(h);
    fj_free(all.v);
    return st;
}

/* GET /api/healthcheck with cc-backend's body {"cluster","nodes":[...],"metric-names":[...]}:
 * a map from node to its health (put_node_health), nodes in name order. */
static void health_of_nodes(fj_http_req *r, const char *body, size_t len)
{
    fj_arena *a = fj_http_arena(r);
    fj_json *root = NULL;
    fj_err err = {0};
    if (fj_json_parse(a, body, len, NULL, &root, &err) != FJ_OK || root->type != FJ_JSON_OBJECT) {
        bad_request(r, err.path[0] ? err.path : "body", err.message[0] ? err.message : "the request must be a JSON object");
        return;
    }
    const fj_json *v = fj_json_get(root, "cluster");
    if (!v || v->type != FJ_JSON_STRING || !v->len) {
        bad_request(r, "cluster", "'cluster' is required");
        return;
    }
    qctx c = {.r = r, .a = a, .cluster = v->v.s};
    const char **nodes, **metrics;
    size_t n_nodes, n_metrics;
    if (!str_list(a, fj_json_get(root, "nodes"), &nodes, &n_nodes)) {
        bad_request(r, "nodes", "'nodes' must be an array of host names");
        return;
    }
    if (!str_list(a, fj_json_get(root, "metric-names"), &metrics, &n_metrics)) {
        bad_request(r, "metric-names", "'metric-names' must be an array of metric names");
        return;
    }
    if (!fj_auth_may_read(fj_http_principal(r), c.cluster)) {
        fj_err_set(&err, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", c.cluster);
        fj_http_reply_error(r, FJ_EFORBIDDEN, &err);
        return;
    }
    if (!(c.s = fj_http_reader(r, &err))) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    c.live = fj_http_ts_engine(r);
    int64_t now_s = (int64_t)time(NULL);
    c.from_s = now_s - 86400; /* where native_step looks for the spacing of unconfigured metrics */
    c.to_s = now_s + 3600;
    if (n_nodes)
        qsort(nodes, n_nodes, sizeof *nodes, cmp_str);
    fj_buf out, tmp;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    fj_buf_init(&tmp, (size_t)1 << 24);
    c.out = &out;
    fj_buf_puts(&out, "{");
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n_nodes; i++) {
        if (i && !strcmp(nodes[i], nodes[i - 1]))
            continue; /* a map: one entry per node */
        if (i)
            fj_buf_puts(&out, ",");
        st = put_node_health(&c, nodes[i], metrics, n_metrics, now_s, &tmp);
    }
    fj_buf_puts(&out, "}\n");
    fj_ts_points_free(&c.pts);
    if (st == FJ_OK && out.data)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, st == FJ_OK ? FJ_ETOOBIG : st, NULL);
    fj_buf_free(&out);
    fj_buf_free(&tmp);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return true;
}

void fj_route_ccms_health(fj_http_req *r)
{
    size_t len;
    const char *body = fj_http_body(r, &len);
    if (body && !blank(body, len)) {
        health_of_nodes(r, body, len);
        return;
    }
    /* the older form: ?cluster=&node= */
    const char *cluster = fj_http_arg(r, "cluster"), *node = fj_http_arg(r, "node");
    if (!cluster || !node) {
        fj_http_reply(r, 200, NULL, "{\"status\":\"ok\"}\n", 16);
        return;
    }
    if (!fj_auth_may_read(fj_http_principal(r), cluster)) {
        fj_err err = {0};
        fj_err_set(&err, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", cluster);
        fj_http_reply_error(r, FJ_EFORBIDDEN, &err);
        return;
    }
    fj_err err = {0};
    fj_store *s = fj_http_reader(r, &err);
    if (!s) {
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    size_t n = 0;
    fj_ts_sel sl = {cluster, node, NULL};
    if (fj_store_ts_series(s, &sl, count_one, &n, &err) != FJ_OK) {
        fj_http_reply_error(r, FJ_EIO, &err);
        return;
    }
    if (!n) {
        fj_err_set(&err, FJ_ENOTFOUND, "node", "no metrics of node '%s' in cluster '%s'", node, cluster);
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    char answer[96];
    int alen = snprintf(answer, sizeof answer, "{\"status\":\"healthy\",\"series\":%zu}\n", n);
    fj_http_reply(r, 200, NULL, answer, (size_t)alen);
}
