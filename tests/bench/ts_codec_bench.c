/* ts_codec_bench.c — bytes per point and ingest speed of the time-series engine on
 * ClusterCockpit-like data (a benchmark tool, not a test).
 *
 * The data has the shape of the shared data's lineproto/cc-synthetic-fritz-2nodes-1interval.lp:
 * per node 9 node metrics, 3 socket metrics x 2 sockets, 7 hwthread metrics x 72 hwthreads
 * (519 series), one point per series every 60 s, timestamps in whole seconds (2% of node intervals
 * 1 s late). Values follow a job model: each node alternates idle periods and jobs (exponential
 * durations, mean 2 h); a job has its own level per metric (compute- or memory-bound, all or half
 * of the hwthreads busy) and each point is that level plus noise, rounded to the 1-3 decimals
 * collectors send. --random instead draws every value independently and uniformly like the
 * synthetic file (the worst case for any codec: no structure to find).
 *
 *   ts_codec_bench [--nodes N] [--hours H] [--seal-points P] [--random] [--seed S]
 *                  [--codec-only] [--scale-nodes M]
 *
 * Default: the engine ingests the data interval by interval, one 519-point append per node (as
 * one request would), emitting and committing after each, then flushes; every 13th series is read
 * back and compared bit for bit. It runs twice, appending by key and by id (keys resolved first).
 * --scale-nodes M replays the N nodes' data under M host names (M x 519 series) to see the
 * engine with a large catalog. --codec-only encodes every series in chunks of P points with no
 * engine. Prints one JSON object per run: points, chunks, bytes_per_point (blobs only),
 * bytes_per_point_with_rows (plus an estimated 40 bytes of table row and index per chunk),
 * points_per_cpu_s (CPU time of engine calls only), and the read-back result. */
#define _GNU_SOURCE
#include "alloc.h"
#include "buf.h"
#include "storage/ts/codec.h"
#ifndef TS_BENCH_CODEC_ONLY
#include "storage/ts/engine.h"
#endif

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- deterministic randomness ----------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(void)
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

static double gauss(void)
{
    double u = unif(), v = unif();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static double expo(double mean)
{
    return -mean * log(1.0 - unif());
}

/* What a collector sends: the value printed with `dec` decimals and read back. */
static double quant(double x, int dec)
{
    char b[64];
    snprintf(b, sizeof b, "%.*f", dec, x);
    return strtod(b, NULL);
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- the cluster ------------------------------------------------------------------------ */

enum scope { S_NODE, S_SOCKET, S_HWTHREAD };

typedef struct metric_def {
    const char *name;
    enum scope scope;
    int dec; /* decimals sent */
} metric_def;

static const metric_def metrics[] = {
    {"cpu_load", S_NODE, 2},     {"mem_used", S_NODE, 3},     {"ib_recv", S_NODE, 3},
    {"ib_xmit", S_NODE, 3},      {"ib_recv_pkts", S_NODE, 1}, {"ib_xmit_pkts", S_NODE, 1},
    {"nfs4_read", S_NODE, 3},    {"nfs4_write", S_NODE, 3},   {"nfs4_total", S_NODE, 3},
    {"mem_bw", S_SOCKET, 3},     {"cpu_power", S_SOCKET, 3},  {"mem_power", S_SOCKET, 3},
    {"cpu_user", S_HWTHREAD, 2}, {"clock", S_HWTHREAD, 3},    {"flops_any", S_HWTHREAD, 3},
    {"flops_dp", S_HWTHREAD, 3}, {"flops_sp", S_HWTHREAD, 3}, {"ipc", S_HWTHREAD, 3},
    {"vectorization_ratio", S_HWTHREAD, 2},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])
#define N_HWT 72
#define N_SOCK 2

typedef struct node_state {
    bool busy;
    double until;        /* seconds since start when the current period ends */
    bool membound;
    int busy_threads;    /* 36 or 72 */
    double flops_lvl, dp_frac, ipc_lvl, vec_lvl, clock_lvl, mem_lvl, ib_lvl, bw_lvl, pw_lvl;
    double load;         /* smoothed */
    double thread_scale[N_HWT];
} node_state;

static void new_period(node_state *s, double now)
{
    s->busy = unif() < 0.7;
    s->until = now + expo(s->busy ? 7200 : 2400);
    s->membound = unif() < 0.4;
    s->busy_threads = unif() < 0.6 ? 36 : 72;
    s->flops_lvl = s->membound ? 0.3 + unif() * 1.5 : 2 + unif() * 18;
    s->dp_frac = unif();
    s->ipc_lvl = s->membound ? 0.4 + unif() * 0.6 : 1.0 + unif() * 1.6;
    s->vec_lvl = unif() * 100;
    s->clock_lvl = 2000 + unif() * 1000;
    s->mem_lvl = s->busy ? 20 + unif() * 200 : 4 + unif() * 3;
    s->ib_lvl = s->busy ? unif() * unif() * 3000 : 0.01;
    s->bw_lvl = s->busy ? (s->membound ? 80 + unif() * 60 : 5 + unif() * 30) : 0.2;
    s->pw_lvl = s->busy ? 150 + unif() * 100 : 60 + unif() * 20;
    for (int i = 0; i < N_HWT; i++)
        s->thread_scale[i] = 0.9 + 0.2 * unif();
}

/* One series' value at this interval. */
static double value(node_state *s, const metric_def *m, int id, bool random)
{
    if (random) {
        /* like the synthetic file: uniform in [0,10) for hwthreads, [0,300) else */
        return quant(unif() * (m->scope == S_HWTHREAD ? 10 : 300), m->dec + 1);
    }
    bool tb = s->busy && (m->scope != S_HWTHREAD || id < s->busy_threads);
    double ts = m->scope == S_HWTHREAD ? s->thread_scale[id] : 1.0;
    double x = 0;
    const char *n = m->name;
    if (!strcmp(n, "cpu_load")) {
        double target = s->busy ? s->busy_threads : 0.05;
        s->load += (target - s->load) * 0.6 + gauss() * 0.05;
        x = fmax(s->load, 0);
    } else if (!strcmp(n, "mem_used")) {
        x = s->mem_lvl + gauss() * 0.002 * s->mem_lvl;
        s->mem_lvl += gauss() * 0.01;
    } else if (!strncmp(n, "ib_", 3)) {
        double k = strstr(n, "pkts") ? 300 : 1;
        x = s->ib_lvl * k * exp(gauss() * 0.3);
    } else if (!strncmp(n, "nfs4_", 5)) {
        x = unif() < 0.1 ? expo(5) : 0;
    } else if (!strcmp(n, "mem_bw")) {
        x = s->bw_lvl * (1 + gauss() * 0.05);
    } else if (!strcmp(n, "cpu_power")) {
        x = s->pw_lvl + gauss() * 3;
    } else if (!strcmp(n, "mem_power")) {
        x = (s->busy ? 25 : 8) + gauss() * 1.5;
    } else if (!strcmp(n, "cpu_user")) {
        x = tb ? clampd(99 + gauss() * 0.8, 0, 100) : fabs(gauss() * 0.1);
    } else if (!strcmp(n, "clock")) {
        x = tb ? s->clock_lvl + gauss() * 3 : 1200 + fabs(gauss() * 300);
    } else if (!strcmp(n, "flops_any")) {
        x = tb ? s->flops_lvl * ts * (1 + gauss() * 0.04) : fabs(gauss() * 0.001);
    } else if (!strcmp(n, "flops_dp")) {
        x = tb ? s->flops_lvl * ts * s->dp_frac / 2 * (1 + gauss() * 0.04) : 0;
    } else if (!strcmp(n, "flops_sp")) {
        x = tb ? s->flops_lvl * ts * (1 - s->dp_frac) * (1 + gauss() * 0.04) : 0;
    } else if (!strcmp(n, "ipc")) {
        x = tb ? s->ipc_lvl * ts * (1 + gauss() * 0.03) : 0.3 + unif() * 0.7;
    } else if (!strcmp(n, "vectorization_ratio")) {
        x = tb ? clampd(s->vec_lvl + gauss() * 2, 0, 100) : 0;
    }
    return quant(fmax(x, 0), m->dec);
}

typedef struct series_def {
    int node, metric, id;
    char host[16], type_id[8];
} series_def;

typedef struct dataset {
    size_t n_series, n_t;
    series_def *series;
    int64_t *t; /* [n_series][n_t] */
    double *v;
} dataset;

static void generate(dataset *d, int nodes, double hours, bool random)
{
    size_t per_node = 0;
    for (size_t m = 0; m < N_METRICS; m++)
        per_node += metrics[m].scope == S_NODE ? 1 : metrics[m].scope == S_SOCKET ? N_SOCK : N_HWT;
    d->n_series = per_node * (size_t)nodes;
    d->n_t = (size_t)(hours * 60);
    d->series = calloc(d->n_series, sizeof *d->series);
    d->t = malloc(d->n_series * d->n_t * sizeof *d->t);
    d->v = malloc(d->n_series * d->n_t * sizeof *d->v);
    node_state *ns = calloc((size_t)nodes, sizeof *ns);
    size_t si = 0;
    for (int nd = 0; nd < nodes; nd++)
        for (size_t m = 0; m < N_METRICS; m++) {
            int cnt = metrics[m].scope == S_NODE ? 1 : metrics[m].scope == S_SOCKET ? N_SOCK : N_HWT;
            for (int id = 0; id < cnt; id++, si++) {
                series_def *s = &d->series[si];
                s->node = nd;
                s->metric = (int)m;
                s->id = id;
                snprintf(s->host, sizeof s->host, "f%04d", 101 + nd);
                snprintf(s->type_id, sizeof s->type_id, "%d", id);
            }
        }
    const int64_t t0 = INT64_C(1700000040);
    for (int nd = 0; nd < nodes; nd++) {
        new_period(&ns[nd], -expo(3600));
        size_t base = (size_t)nd * per_node;
        for (size_t k = 0; k < d->n_t; k++) {
            double now = (double)k * 60;
            while (now >= ns[nd].until)
                new_period(&ns[nd], ns[nd].until);
            int64_t ts = (t0 + (int64_t)k * 60 + (unif() < 0.02 ? 1 : 0)) * INT64_C(1000000000);
            for (size_t j = 0; j < per_node; j++) {
                series_def *s = &d->series[base + j];
                d->t[(base + j) * d->n_t + k] = ts;
                d->v[(base + j) * d->n_t + k] = value(&ns[nd], &metrics[s->metric], s->id, random);
            }
        }
    }
    free(ns);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- codec only: every series encoded as chunks of P points ------------------------------ */

static int codec_only(const dataset *d, size_t P)
{
    fj_ts_codec *c = fj_ts_codec_create();
    fj_buf b;
    fj_buf_init(&b, SIZE_MAX);
    size_t chunks = 0, bytes = 0, points = 0;
    double per_metric[N_METRICS] = {0};
    size_t per_metric_pts[N_METRICS] = {0};
    double t0 = cpu_now();
    for (size_t s = 0; s < d->n_series; s++) {
        for (size_t k = 0; k < d->n_t; k += P) {
            size_t n = d->n_t - k < P ? d->n_t - k : P;
            fj_buf_reset(&b);
            if (fj_ts_chunk_encode(c, d->t + s * d->n_t + k, d->v + s * d->n_t + k, n, &b) != FJ_OK) {
                fprintf(stderr, "encode failed\n");
                return 1;
            }
            chunks++;
            bytes += b.len;
            points += n;
            per_metric[d->series[s].metric] += (double)b.len;
            per_metric_pts[d->series[s].metric] += n;
        }
    }
    double t1 = cpu_now();
    /* decode check and speed */
    int64_t *tt = malloc(P * sizeof *tt);
    double *vv = malloc(P * sizeof *vv);
    size_t bad = 0;
    double dt = 0;
    for (size_t s = 0; s < d->n_series; s += 7) {
        for (size_t k = 0; k < d->n_t; k += P) {
            size_t n = d->n_t - k < P ? d->n_t - k : P, got;
            fj_buf_reset(&b);
            fj_ts_chunk_encode(c, d->t + s * d->n_t + k, d->v + s * d->n_t + k, n, &b);
            double a = cpu_now();
            if (fj_ts_chunk_decode(c, b.data, b.len, tt, vv, P, &got) != FJ_OK || got != n ||
                memcmp(tt, d->t + s * d->n_t + k, n * 8) || memcmp(vv, d->v + s * d->n_t + k, n * 8))
                bad++;
            dt += cpu_now() - a;
        }
    }
    printf("{\"mode\": \"codec\", \"points\": %zu, \"chunks\": %zu, \"chunk_points\": %zu, "
           "\"bytes_per_point\": %.4f, \"bytes_per_point_with_rows\": %.4f, "
           "\"encode_points_per_cpu_s\": %.0f, \"decode_check_failures\": %zu, \"per_metric\": {",
           points, chunks, P, (double)bytes / (double)points,
           (double)(bytes + 40 * chunks) / (double)points, (double)points / (t1 - t0), bad);
    for (size_t m = 0; m < N_METRICS; m++)
        printf("%s\"%s\": %.3f", m ? ", " : "", metrics[m].name,
               per_metric[m] / (double)per_metric_pts[m]);
    printf("}}\n");
    (void)dt;
    free(tt);
    free(vv);
    fj_buf_free(&b);
    fj_ts_codec_destroy(c);
    return bad ? 1 : 0;
}

#ifndef TS_BENCH_CODEC_ONLY
/* ---- engine: append + seal + emit, as the writer thread would run it --------------------- */

typedef struct store {
    size_t chunks, bytes, cap;
    fj_ts_chunk *rows; /* kept for the read-back check */
} store;

static fj_status sink_chunk(void *ud, const fj_ts_chunk *c)
{
    store *st = ud;
    if (st->chunks == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 1024;
        st->rows = realloc(st->rows, st->cap * sizeof *st->rows);
    }
    fj_ts_chunk *r = &st->rows[st->chunks++];
    *r = *c;
    void *b = malloc(c->len);
    memcpy(b, c->blob, c->len);
    r->blob = b;
    st->bytes += c->len;
    return FJ_OK;
}

static void store_free(store *st)
{
    for (size_t i = 0; i < st->chunks; i++)
        free((void *)st->rows[i].blob);
    free(st->rows);
}

typedef struct iter {
    const store *st;
    uint32_t id;
    size_t i;
} iter;

static fj_status next_chunk(void *ud, fj_ts_chunk *out)
{
    iter *it = ud;
    while (it->i < it->st->chunks) {
        const fj_ts_chunk *c = &it->st->rows[it->i++];
        if (c->series_id == it->id) {
            *out = *c;
            return FJ_OK;
        }
    }
    return FJ_ENOTFOUND;
}

static const char *scope_name(enum scope sc)
{
    return sc == S_NODE ? "node" : sc == S_SOCKET ? "socket" : "hwthread";
}

/* Ingests interval by interval, node by node (one request of 519 lines each), emitting and
 * committing after each request, as the writer thread would. total_nodes may exceed the
 * dataset's nodes: node nd then sends the values of dataset node nd % data_nodes under its own
 * host name (same compression, real catalog size). Only engine calls are timed, not the filling
 * of the request's point array. by_id: keys resolved beforehand. */
static int run_engine(const dataset *d, uint32_t seal_points, bool by_id, int data_nodes,
                      int total_nodes, bool quiet)
{
    fj_ts_opts o = {.seal_points = seal_points};
    fj_ts_engine *e;
    if (fj_ts_engine_open(&o, &e) != FJ_OK)
        return 1;
    store st = {0};
    fj_ts_sink sink = {NULL, sink_chunk, &st, NULL};
    size_t per_node = d->n_series / (size_t)data_nodes, n_all = per_node * (size_t)total_nodes;
    /* time-major copies, so the loop reads the data sequentially */
    double *vt = malloc(d->n_series * d->n_t * sizeof *vt);
    int64_t *tt = malloc((size_t)data_nodes * d->n_t * sizeof *tt);
    for (size_t s = 0; s < d->n_series; s++)
        for (size_t k = 0; k < d->n_t; k++)
            vt[k * d->n_series + s] = d->v[s * d->n_t + k];
    for (int nd = 0; nd < data_nodes; nd++)
        for (size_t k = 0; k < d->n_t; k++)
            tt[k * (size_t)data_nodes + (size_t)nd] = d->t[(size_t)nd * per_node * d->n_t + k];
    char(*hosts)[16] = malloc((size_t)total_nodes * sizeof *hosts);
    fj_ts_key *keys = malloc(n_all * sizeof *keys);
    for (int nd = 0; nd < total_nodes; nd++) {
        snprintf(hosts[nd], sizeof hosts[nd], "f%05d", 101 + nd);
        for (size_t j = 0; j < per_node; j++) {
            const series_def *sd = &d->series[j];
            const metric_def *m = &metrics[sd->metric];
            const char *type = scope_name(m->scope);
            keys[(size_t)nd * per_node + j] =
                (fj_ts_key){{"fritz", 5},          {hosts[nd], strlen(hosts[nd])},
                            {m->name, strlen(m->name)}, {type, strlen(type)},
                            {sd->type_id, strlen(sd->type_id)}, {"", 0}, {"", 0}, FJ_TS_FLOAT};
        }
    }
    fj_ts_point *batch = malloc(per_node * sizeof *batch);
    uint32_t *ids = malloc(n_all * sizeof *ids);
    int64_t *bt = malloc(per_node * sizeof *bt);
    double *bv = malloc(per_node * sizeof *bv);
    if (by_id)
        for (size_t s = 0; s < n_all; s++)
            fj_ts_series_get(e, &keys[s], true, &ids[s]);
    size_t points = 0;
    fj_ts_stats mem = {0};
    double busy = 0;
    for (size_t k = 0; k < d->n_t; k++) {
        for (int nd = 0; nd < total_nodes; nd++) {
            size_t base = (size_t)nd * per_node, dn = (size_t)(nd % data_nodes);
            const double *src = vt + k * d->n_series + dn * per_node;
            int64_t ts = tt[k * (size_t)data_nodes + dn];
            fj_status rc;
            double a;
            if (by_id) {
                for (size_t j = 0; j < per_node; j++) {
                    bt[j] = ts;
                    bv[j] = src[j];
                }
                a = cpu_now();
                rc = fj_ts_append_ids(e, ids + base, bt, bv, per_node, NULL);
            } else {
                for (size_t j = 0; j < per_node; j++) {
                    batch[j].key = keys[base + j];
                    batch[j].t = ts;
                    batch[j].v = src[j];
                }
                a = cpu_now();
                rc = fj_ts_append(e, batch, per_node, NULL, NULL, NULL);
            }
            if (rc != FJ_OK || fj_ts_engine_emit(e, &sink) != FJ_OK) {
                fprintf(stderr, "append failed\n");
                return 1;
            }
            fj_ts_engine_committed(e);
            busy += cpu_now() - a;
            points += per_node;
        }
        if (k == d->n_t - 1)
            fj_ts_engine_stats(e, &mem);
    }
    double a = cpu_now();
    fj_ts_engine_flush(e);
    fj_ts_engine_emit(e, &sink);
    fj_ts_engine_committed(e);
    busy += cpu_now() - a;

    /* read back every 13th series of the dataset's nodes and of the last node */
    size_t bad = 0, checked = 0;
    fj_ts_points p = {0};
    fj_ts_codec *c = fj_ts_codec_create();
    for (size_t s = 0; s < n_all; s += (s < d->n_series ? 13 : 1)) {
        if (s >= d->n_series && s < n_all - per_node)
            s = n_all - per_node;
        size_t ds = s % d->n_series;
        uint32_t id;
        fj_ts_series_find(e, &keys[s], &id);
        iter it = {&st, id, 0};
        checked++;
        if (fj_ts_read(e, c, id, INT64_MIN, INT64_MAX, next_chunk, &it, &p, NULL) != FJ_OK ||
            p.n != d->n_t || memcmp(p.t, d->t + ds * d->n_t, p.n * 8) ||
            memcmp(p.v, d->v + ds * d->n_t, p.n * 8))
            bad++;
    }
    fj_ts_points_free(&p);
    fj_ts_codec_destroy(c);
    if (!quiet)
        printf("{\"mode\": \"engine%s\", \"points\": %zu, \"series\": %zu, \"seal_points\": %u, "
               "\"chunks\": %zu, \"avg_chunk_points\": %.1f, \"chunk_bytes\": %zu, "
               "\"bytes_per_point\": %.4f, \"bytes_per_point_with_rows\": %.4f, "
               "\"append_seal_cpu_s\": %.3f, \"points_per_cpu_s\": %.0f, "
               "\"engine_bytes_per_series_at_end\": %.0f, \"buffered_points_at_end\": %zu, "
               "\"readback_checked\": %zu, \"readback_failures\": %zu}\n",
               by_id ? "_by_id" : "_by_key", points, n_all, seal_points, st.chunks,
               (double)points / (double)st.chunks, st.bytes, (double)st.bytes / (double)points,
               (double)(st.bytes + 40 * st.chunks) / (double)points, busy,
               (double)points / busy, (double)mem.buffer_bytes / (double)n_all,
               mem.buffered_points, checked, bad);
    store_free(&st);
    free(batch);
    free(ids);
    free(bt);
    free(bv);
    free(keys);
    free(hosts);
    free(vt);
    free(tt);
    fj_ts_engine_close(e);
    return bad ? 1 : 0;
}
#endif

int main(int argc, char **argv)
{
    int nodes = 8, total_nodes = 0;
    double hours = 6;
    uint32_t seal_points = 720;
    bool random = false, only_codec = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--scale-nodes") && i + 1 < argc)
            total_nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hours") && i + 1 < argc)
            hours = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seal-points") && i + 1 < argc)
            seal_points = (uint32_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--random"))
            random = true;
        else if (!strcmp(argv[i], "--codec-only"))
            only_codec = true;
        else {
            fprintf(stderr, "usage: %s [--nodes N] [--hours H] [--seal-points P] [--random] "
                            "[--seed S] [--codec-only] [--scale-nodes N]\n", argv[0]);
            return 2;
        }
    }
    if (nodes < 1 || hours <= 0 || seal_points < 1)
        return 2;
    dataset d;
    generate(&d, nodes, hours, random);
    int rc;
#ifdef TS_BENCH_CODEC_ONLY
    only_codec = true;
#endif
    if (only_codec) {
        rc = codec_only(&d, seal_points);
    } else {
#ifndef TS_BENCH_CODEC_ONLY
        /* a warm-up run first, so neither measured run pays for the heap's first growth */
        if (total_nodes < nodes)
            total_nodes = nodes;
        rc = run_engine(&d, seal_points, true, nodes, nodes, true);
        rc |= run_engine(&d, seal_points, false, nodes, total_nodes, false);
        rc |= run_engine(&d, seal_points, true, nodes, total_nodes, false);
#else
        rc = 2;
#endif
    }
    free(d.series);
    free(d.t);
    free(d.v);
    return rc;
}
