/* api/influxql/sonar.c — Sonar's node and GPU figures as InfluxQL measurements, read from the Sonar
 * tables and their hourly roll-ups through the store's load queries (q_node_load, q_gpu_load), not
 * copied into the time-series engine:
 *
 *   sonar_node  tags cluster, node        fields: fj_qt_node_load's figures (cpu_util, mem_kb,
 *                                         load1, load5, load15, gpu_util, gpu_power_w, ...)
 *   sonar_gpu   tags cluster, node, card, fields: fj_qt_gpu_load's figures (gpu_util, gpu_mem_kb,
 *               uuid                      gpu_power_w, gpu_temp_c and their _max)
 *   sonar_job   tags cluster, id, job,    fields: fj_qt_profile's figures per host (cpu, mem_kb,
 *               user, node                gpu, gpumem_kb, processes and their _max)
 *
 * A point is one load bucket: the bucket is the statement's GROUP BY time interval when it is whole
 * seconds, else IQ_SONAR_STEP; the figures are those of /api/v1/load/nodes and /gpus for the same
 * buckets (CPU utilisation from counter differences, averages and highest values of the samples). */
#include "api/influxql/iq_int.h"

#include "storage/core/store_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IQ_SONAR_STEP 60
#define IQ_SONAR_MAX_JOBS 10000 /* jobs a catalog lists (the first by start time) */

/* The figure columns of a load table: after the key, time and samples columns. */
static size_t first_figure(const fj_qtable *t)
{
    size_t i = 0;
    while (i < t->n_cols && strcmp(t->cols[i].name, "samples"))
        i++;
    return i + 1;
}

const fj_qtable *iq_sonar_table(int src)
{
    return src == IQ_SRC_SONAR_NODE ? &fj_qt_node_load : src == IQ_SRC_SONAR_GPU ? &fj_qt_gpu_load : &fj_qt_profile;
}

static const char *meas_name(int src)
{
    return src == IQ_SRC_SONAR_NODE ? "sonar_node" : src == IQ_SRC_SONAR_GPU ? "sonar_gpu" : "sonar_job";
}

/* The index of column name in t (t->n_cols when absent). */
static size_t col_of(const fj_qtable *t, const char *name)
{
    size_t i = 0;
    while (i < t->n_cols && strcmp(t->cols[i].name, name))
        i++;
    return i;
}

/* --- the catalog: a series per node, and per GPU card seen in the last week ----------------------- */

typedef struct lister {
    iq_ctx *c;
    const char *db;
    int src;
    const fj_qtable *t;
    iq_fser_add add;
    void *ud;
    fj_status st;
    const char *last; /* gpu rows come per bucket: one series per node, card and uuid */
} lister;

static fj_status list_table(fj_sink *k, const fj_qtable *t)
{
    (void)k;
    (void)t;
    return FJ_OK;
}

static fj_status add_series(lister *l, iq_tag *tags, size_t n)
{
    size_t f0 = first_figure(l->t);
    for (size_t f = f0; f < l->t->n_cols; f++)
        if ((l->st = l->add(l->ud, l->src, meas_name(l->src), l->t->cols[f].name, tags, n)) != FJ_OK)
            return l->st;
    return FJ_OK;
}

typedef struct list_sink {
    fj_sink k;
    lister *l;
} list_sink;

static fj_status node_row(fj_sink *k, const fj_value *v)
{
    lister *l = ((list_sink *)k)->l;
    iq_tag tags[2] = {{"cluster", l->db}, {"node", fj_arena_strdup(l->c->a, v[1].s ? v[1].s : "")}};
    if (!tags[1].v)
        return FJ_ENOMEM;
    return add_series(l, tags, 2);
}

static fj_status gpu_row(fj_sink *k, const fj_value *v)
{
    lister *l = ((list_sink *)k)->l;
    char key[512];
    snprintf(key, sizeof key, "%s\x01%lld\x01%s", v[0].s ? v[0].s : "", (long long)v[1].i, v[2].s ? v[2].s : "");
    if (l->last && !strcmp(l->last, key))
        return FJ_OK;
    l->last = fj_arena_strdup(l->c->a, key);
    iq_tag tags[4] = {{"card", fj_arena_printf(l->c->a, "%lld", (long long)v[1].i)},
                      {"cluster", l->db},
                      {"node", fj_arena_strdup(l->c->a, v[0].s ? v[0].s : "")},
                      {"uuid", fj_arena_strdup(l->c->a, v[2].s ? v[2].s : "")}};
    if (!l->last || !tags[0].v || !tags[2].v || !tags[3].v)
        return FJ_ENOMEM;
    return add_series(l, tags, 4);
}

/* A job of the list: a series per host it ran on. */
static fj_status job_row(fj_sink *k, const fj_value *v)
{
    lister *l = ((list_sink *)k)->l;
    const fj_qtable *jt = &fj_qt_jobs;
    const fj_value *id = &v[col_of(jt, "id")], *job = &v[col_of(jt, "job")], *user = &v[col_of(jt, "user")],
                   *hosts = &v[col_of(jt, "hosts")];
    fj_arena *a = l->c->a;
    iq_tag tags[5] = {{"cluster", l->db},
                      {"id", fj_arena_printf(a, "%lld", (long long)id->i)},
                      {"job", fj_arena_printf(a, "%lld", (long long)job->i)},
                      {"node", NULL},
                      {"user", fj_arena_strdup(a, user->s ? user->s : "")}};
    if (!tags[1].v || !tags[2].v || !tags[4].v)
        return FJ_ENOMEM;
    for (size_t h = 0; hosts->t == FJ_VT_LIST && h < hosts->n; h++) {
        if (!(tags[3].v = fj_arena_strdup(a, hosts->list[h])))
            return FJ_ENOMEM;
        fj_status rs = add_series(l, tags, 5);
        if (rs != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

int iq_sonar_src(const char *meas)
{
    for (int src = IQ_SRC_SONAR_NODE; src <= IQ_SRC_SONAR_JOB; src++)
        if (!strcmp(meas, meas_name(src)))
            return src;
    return IQ_SRC_TS;
}

fj_status iq_sonar_catalog(iq_ctx *c, const char *db, unsigned mask, iq_fser_add add, void *ud, fj_err *err)
{
    lister l = {.c = c, .db = db, .src = IQ_SRC_SONAR_NODE, .t = &fj_qt_node_load, .add = add, .ud = ud};
    list_sink ks = {{list_table, node_row}, &l};
    fj_query q = {.cluster = db};
    fj_status rs = FJ_OK;
    if (mask & (1u << IQ_SRC_SONAR_NODE)) {
        rs = fj_store_query_nodes(c->s, &q, &ks.k, err);
        if (rs == FJ_ENOTFOUND)
            return FJ_OK; /* no Sonar data in this cluster */
        if (rs != FJ_OK)
            return l.st != FJ_OK ? l.st : rs;
    }
    l = (lister){.c = c, .db = db, .src = IQ_SRC_SONAR_GPU, .t = &fj_qt_gpu_load, .add = add, .ud = ud};
    ks = (list_sink){{list_table, gpu_row}, &l};
    fj_time now = (fj_time)(c->now_ns / 1000000000LL);
    fj_time to = c->window_to == IQ_NO_MAX ? now : (fj_time)(c->window_to / 1000000000LL);
    fj_time from = c->window_from == IQ_NO_MIN ? to - 7 * 86400 : (fj_time)(c->window_from / 1000000000LL);
    if (from < 1)
        from = 1;
    if (to < from)
        return FJ_OK;
    q = (fj_query){.cluster = db, .from = from, .to = to, .now = now, .bucket_s = to - from + 1};
    if (mask & (1u << IQ_SRC_SONAR_GPU)) {
        rs = fj_store_query_gpu_load(c->s, &q, &ks.k, err);
        if (rs != FJ_OK && rs != FJ_ENOTFOUND)
            return l.st != FJ_OK ? l.st : rs;
    }
    if (!(mask & (1u << IQ_SRC_SONAR_JOB)))
        return FJ_OK;
    l = (lister){.c = c, .db = db, .src = IQ_SRC_SONAR_JOB, .t = &fj_qt_profile, .add = add, .ud = ud};
    ks = (list_sink){{list_table, job_row}, &l};
    q = (fj_query){.cluster = db, .from = from, .to = to, .now = now, .limit = IQ_SONAR_MAX_JOBS};
    rs = fj_store_query_jobs(c->s, &q, &ks.k, err);
    if (l.st != FJ_OK)
        return l.st;
    return rs == FJ_ENOTFOUND ? FJ_OK : rs;
}

/* --- reading ------------------------------------------------------------------------------------ */

typedef struct want {
    const char *key; /* node, or node\x01card\x01uuid */
    size_t iser;     /* index into the reader's series */
} want;

static int cmp_want(const void *x, const void *y)
{
    return strcmp(((const want *)x)->key, ((const want *)y)->key);
}

typedef struct reader {
    fj_sink k;
    iq_ctx *c;
    int src;
    const fj_qtable *t;
    want *w;
    size_t nw;
    const char **need;
    size_t nneed;
    long *fcol;          /* per needed field: its column, or -1 */
    fj_ts_points **pts;  /* per series and needed field: where its points go (NULL: not read) */
    size_t *caps;
    int64_t from_ns, to_ns;
    int64_t job_id; /* sonar_job: the job whose profile is being read */
    fj_status st;
} reader;

static fj_status read_table(fj_sink *k, const fj_qtable *t)
{
    (void)k;
    (void)t;
    return FJ_OK;
}

static bool host_wanted(void *ctx, const char *name)
{
    reader *rd = ctx;
    if (rd->src == IQ_SRC_SONAR_NODE) {
        want key = {.key = name};
        return bsearch(&key, rd->w, rd->nw, sizeof *rd->w, cmp_want) != NULL;
    }
    size_t n = strlen(name);
    for (size_t i = 0; i < rd->nw; i++) /* gpu keys start with the node's name */
        if (!strncmp(rd->w[i].key, name, n) && rd->w[i].key[n] == '\x01')
            return true;
    return false;
}

static fj_status push(reader *rd, fj_ts_points *p, size_t *cap, int64_t t, double v)
{
    if (p->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        int64_t *nt = fj_arena_alloc(rd->c->a, nc * sizeof *nt);
        double *nv = fj_arena_alloc(rd->c->a, nc * sizeof *nv);
        if (!nt || !nv)
            return FJ_ENOMEM;
        if (p->n) {
            memcpy(nt, p->t, p->n * sizeof *nt);
            memcpy(nv, p->v, p->n * sizeof *nv);
        }
        p->t = nt;
        p->v = nv;
        *cap = nc;
    }
    p->t[p->n] = t;
    p->v[p->n++] = v;
    return FJ_OK;
}

static fj_status read_row(fj_sink *k, const fj_value *v)
{
    reader *rd = (reader *)k;
    char key[512];
    size_t tcol;
    if (rd->src == IQ_SRC_SONAR_NODE) {
        snprintf(key, sizeof key, "%s", v[0].s ? v[0].s : "");
        tcol = 1;
    } else if (rd->src == IQ_SRC_SONAR_JOB) {
        snprintf(key, sizeof key, "%lld\x01%s", (long long)rd->job_id, v[0].s ? v[0].s : "");
        tcol = col_of(rd->t, "time");
    } else {
        snprintf(key, sizeof key, "%s\x01%lld\x01%s", v[0].s ? v[0].s : "", (long long)v[1].i, v[2].s ? v[2].s : "");
        tcol = 3;
    }
    want probe = {.key = key};
    const want *w = bsearch(&probe, rd->w, rd->nw, sizeof *rd->w, cmp_want);
    if (!w)
        return FJ_OK;
    int64_t t = v[tcol].i * 1000000000LL;
    if (t < rd->from_ns || t > rd->to_ns)
        return FJ_OK;
    for (size_t j = 0; j < rd->nneed; j++) {
        fj_ts_points *p = rd->pts[w->iser * rd->nneed + j];
        long col = rd->fcol[j];
        if (!p || col < 0 || v[col].t == FJ_VT_NULL)
            continue;
        double x = v[col].t == FJ_VT_REAL ? v[col].d : (double)v[col].i;
        if ((rd->st = push(rd, p, &rd->caps[w->iser * rd->nneed + j], t, x)) != FJ_OK)
            return rd->st;
    }
    return FJ_OK;
}

fj_status iq_sonar_read(iq_ctx *c, int src, const iq_iser *const *isers, size_t n, const char **need, size_t nneed,
                        fj_ts_points **pts, int64_t from_ns, int64_t to_ns, int64_t every_ns, fj_err *err)
{
    reader rd = {.k = {read_table, read_row}, .c = c, .src = src, .t = iq_sonar_table(src), .need = need,
                 .nneed = nneed, .pts = pts, .from_ns = from_ns, .to_ns = to_ns};
    rd.w = fj_arena_calloc(c->a, n + 1, sizeof *rd.w);
    rd.fcol = fj_arena_calloc(c->a, nneed + 1, sizeof *rd.fcol);
    rd.caps = fj_arena_calloc(c->a, n * nneed + 1, sizeof *rd.caps);
    if (!rd.w || !rd.fcol || !rd.caps)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t j = 0; j < nneed; j++) {
        rd.fcol[j] = -1;
        for (size_t i = first_figure(rd.t); i < rd.t->n_cols; i++)
            if (!strcmp(rd.t->cols[i].name, need[j]))
                rd.fcol[j] = (long)i;
    }
    for (size_t i = 0; i < n; i++) {
        const char *node = iq_tag_value(isers[i], "node");
        rd.w[i].iser = i;
        rd.w[i].key = src == IQ_SRC_SONAR_NODE ? node
                      : src == IQ_SRC_SONAR_JOB
                          ? fj_arena_printf(c->a, "%s\x01%s", iq_tag_value(isers[i], "id"), node)
                          : fj_arena_printf(c->a, "%s\x01%s\x01%s", node, iq_tag_value(isers[i], "card"),
                                            iq_tag_value(isers[i], "uuid"));
        if (!rd.w[i].key)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    }
    rd.nw = n;
    qsort(rd.w, n, sizeof *rd.w, cmp_want);
    int64_t step = every_ns > 0 && every_ns % 1000000000LL == 0 ? every_ns / 1000000000LL : IQ_SONAR_STEP;
    fj_time now = (fj_time)(c->now_ns / 1000000000LL);
    fj_time to = to_ns == IQ_NO_MAX ? now : (fj_time)(to_ns / 1000000000LL);
    /* the store's window is whole seconds: the bucket holding from_ns starts at or before it */
    fj_time from = from_ns == IQ_NO_MIN ? to - 7 * 86400 : (fj_time)(from_ns / 1000000000LL);
    if (from < 1)
        from = 1;
    if (to < from)
        return FJ_OK;
    if ((to - from) / step > 100000)
        step = (to - from) / 100000 + 1;
    fj_status rs = FJ_OK;
    if (src == IQ_SRC_SONAR_JOB) { /* a profile per job (by host), jobs in key order */
        for (size_t i = 0; i < n && rs == FJ_OK; i++) {
            int64_t id = strtoll(iq_tag_value(isers[rd.w[i].iser], "id"), NULL, 10);
            if (i && id == rd.job_id)
                continue;
            rd.job_id = id;
            fj_query q = {.cluster = iq_tag_value(isers[0], "cluster"), .id = id, .from = from, .to = to,
                          .now = now, .bucket_s = step, .by_host = true};
            rs = fj_store_query_profile(c->s, &q, &rd.k, err);
            if (rs == FJ_ENOTFOUND)
                rs = FJ_OK;
        }
    } else {
        fj_query q = {.cluster = iq_tag_value(isers[0], "cluster"), .from = from, .to = to, .now = now,
                      .bucket_s = step, .host_match = host_wanted, .host_ctx = &rd};
        rs = src == IQ_SRC_SONAR_NODE ? fj_store_query_node_load(c->s, &q, &rd.k, err)
                                      : fj_store_query_gpu_load(c->s, &q, &rd.k, err);
    }
    if (rd.st != FJ_OK)
        return fj_err_set(err, rd.st, NULL, "out of memory");
    return rs == FJ_ENOTFOUND ? FJ_OK : rs;
}
