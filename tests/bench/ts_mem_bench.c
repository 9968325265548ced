/* ts_mem_bench.c — memory of the time-series engine per active series (a benchmark tool, not a
 * test): a ClusterCockpit cluster of NODES nodes x 519 series (tests/bench/lp_load.c's shape and
 * values: random walks with 2-3 decimals, steps up to +-2, one point a series every 60 s) is
 * appended for HOURS of data, interval by interval, 519 points per call as one request would,
 * with the writer's settings (seal at 720 points or 12 h, no memory limit), nothing sealed
 * being forgotten (emit and commit after every interval, as the writer does).
 *
 *   ts_mem_bench [NODES] [HOURS]        (defaults: 3000 1)
 *
 * Prints one JSON object: series, points, the engine's own count of its memory (fj_ts_stats:
 * open buffers, series table, index, keys), the process's resident memory added by the engine
 * (VmRSS after minus before, the keys of the load generator excluded), both per series, the
 * open buffers' bytes per buffered point, what one more point costs (the second half's growth: a
 * buffer's first points carry its header and a full time and value), and the projection to a
 * 12 h seal age for 3,000 nodes x 519 series: per series, today's memory plus the points up to 720
 * at the marginal cost. */
#define _GNU_SOURCE
#include "storage/ts/engine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS INT64_C(1000000000)

static const char *node_metrics[] = {"cpu_load", "mem_used", "ib_recv", "ib_xmit", "ib_recv_pkts",
                                     "ib_xmit_pkts", "nfs4_read", "nfs4_write", "nfs4_total"};
static const char *socket_metrics[] = {"mem_bw", "cpu_power", "mem_power"};
static const char *hw_metrics[] = {"cpu_user", "flops_any", "flops_dp", "flops_sp", "ipc", "clock",
                                   "vectorization_ratio"};
#define NN 9
#define NSK 3
#define NH 7
#define PER_NODE (NN + NSK * 2 + NH * 72)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static fj_status no_series(void *ud, uint32_t id, const fj_ts_key *k)
{
    (void)ud, (void)id, (void)k;
    return FJ_OK;
}

static fj_status no_chunk(void *ud, const fj_ts_chunk *c)
{
    (void)ud, (void)c;
    return FJ_OK;
}

static fj_ts_str str(const char *s)
{
    return (fj_ts_str){s, strlen(s)};
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 3000;
    double hours = argc > 2 ? atof(argv[2]) : 1;
    size_t n_series = (size_t)nodes * PER_NODE;
    long intervals = (long)(hours * 60);
    /* the load generator's keys and values, allocated before the baseline */
    char *hosts = malloc((size_t)nodes * 16), ids[72][4];
    fj_ts_point *pts = malloc(PER_NODE * sizeof *pts);
    double *val = malloc(n_series * sizeof *val);
    for (int i = 0; i < 72; i++)
        snprintf(ids[i], sizeof ids[i], "%d", i);
    for (int n = 0; n < nodes; n++)
        snprintf(hosts + n * 16, 16, "f%04d", n % 100000);
    for (size_t i = 0; i < n_series; i++)
        val[i] = rnd() * 50;
    long rss0 = rss_kb();
    fj_ts_engine *e;
    fj_ts_opts o = {0}; /* the writer's: 720 points, 12 h, and no limit here */
    if (fj_ts_engine_open(&o, &e) != FJ_OK)
        return 1;
    fj_ts_sink sink = {no_series, no_chunk, NULL, NULL};
    int64_t t0 = (int64_t)1764000000 * NS;
    double c0 = cpu_s();
    fj_ts_stats half = {0};
    for (long k = 0; k < intervals; k++) {
        if (k == intervals / 2)
            fj_ts_engine_stats(e, &half);
        for (int n = 0; n < nodes; n++) {
            double *v = val + (size_t)n * PER_NODE;
            for (size_t s = 0; s < PER_NODE; s++) {
                v[s] += (rnd() - 0.5) * 4;
                if (v[s] < 0)
                    v[s] = -v[s];
                if (v[s] > 100)
                    v[s] = 200 - v[s];
                fj_ts_point *p = &pts[s];
                *p = (fj_ts_point){.t = t0 + k * 60 * NS};
                p->key.cluster = str("fritz");
                p->key.host = str(hosts + n * 16);
                int dec = s < NN ? 2 : s < NN + NSK * 2 ? 3 : 2;
                double scale = dec == 2 ? 100 : 1000;
                p->v = (double)(int64_t)(v[s] * scale + (v[s] >= 0 ? 0.5 : -0.5)) / scale; /* as "%.*f" */
                if (s < NN) {
                    p->key.metric = str(node_metrics[s]);
                    p->key.type = str("node");
                } else if (s < NN + NSK * 2) {
                    p->key.metric = str(socket_metrics[(s - NN) / 2]);
                    p->key.type = str("socket");
                    p->key.type_id = str(ids[(s - NN) % 2]);
                } else {
                    p->key.metric = str(hw_metrics[(s - NN - NSK * 2) / 72]);
                    p->key.type = str("hwthread");
                    p->key.type_id = str(ids[(s - NN - NSK * 2) % 72]);
                }
            }
            if (fj_ts_append(e, pts, PER_NODE, NULL, NULL, NULL) != FJ_OK)
                return 1;
        }
        fj_ts_engine_emit(e, &sink);
        fj_ts_engine_committed(e);
    }
    double cpu = cpu_s() - c0;
    fj_ts_stats st;
    fj_ts_engine_stats(e, &st);
    long rss1 = rss_kb();
    size_t pts_total = (size_t)intervals * n_series;
    /* the open buffers alone: the engine's total less its series table, index and keys */
    size_t fixed = st.buffer_bytes, open_bytes = 0;
    {
        /* fj_ts_stats counts buffers and fixed structures together; a second engine with the
         * catalog only gives the fixed part */
        fj_ts_engine *e2;
        if (fj_ts_engine_open(&o, &e2) != FJ_OK)
            return 1;
        for (int n = 0; n < nodes; n++) {
            for (size_t s = 0; s < PER_NODE; s++) {
                fj_ts_key k = {.cluster = str("fritz"), .host = str(hosts + n * 16)};
                if (s < NN) {
                    k.metric = str(node_metrics[s]);
                    k.type = str("node");
                } else if (s < NN + NSK * 2) {
                    k.metric = str(socket_metrics[(s - NN) / 2]);
                    k.type = str("socket");
                    k.type_id = str(ids[(s - NN) % 2]);
                } else {
                    k.metric = str(hw_metrics[(s - NN - NSK * 2) / 72]);
                    k.type = str("hwthread");
                    k.type_id = str(ids[(s - NN - NSK * 2) % 72]);
                }
                uint32_t id;
                if (fj_ts_series_get(e2, &k, true, &id) != FJ_OK)
                    return 1;
            }
        }
        fj_ts_stats s2;
        fj_ts_engine_stats(e2, &s2);
        fixed = s2.buffer_bytes;
        open_bytes = st.buffer_bytes - fixed;
        fj_ts_engine_close(e2);
    }
    double per_point = st.buffered_points ? (double)open_bytes / (double)st.buffered_points : 0;
    /* what one more buffered point costs: the second half's growth (a buffer's first points carry
     * its header and the first time and value in full) */
    double marginal = st.buffered_points > half.buffered_points
                          ? (double)(st.buffer_bytes - half.buffer_bytes) /
                                (double)(st.buffered_points - half.buffered_points)
                          : per_point;
    double fixed_per_series = (double)fixed / (double)n_series;
    double rss_per_series = (double)(rss1 - rss0) * 1024 / (double)n_series;
    double proj_series = (double)(3000 * PER_NODE);
    double pts_per_series = (double)st.buffered_points / (double)n_series;
    double proj = proj_series * (fixed_per_series + (double)open_bytes / (double)n_series +
                                 (720 - pts_per_series) * marginal);
    printf("{\"nodes\":%d,\"hours\":%g,\"series\":%zu,\"points\":%zu,\"buffered_points\":%zu,"
           "\"sealed_points\":%llu,\"engine_bytes\":%zu,\"engine_bytes_per_series\":%.0f,"
           "\"rss_added_bytes_per_series\":%.0f,\"fixed_bytes_per_series\":%.0f,"
           "\"open_buffer_bytes_per_point\":%.3f,\"marginal_bytes_per_point\":%.3f,\"points_per_cpu_s\":%.0f,"
           "\"projection_12h_1557000_series_gib\":%.2f}\n",
           nodes, hours, n_series, pts_total, st.buffered_points, (unsigned long long)st.sealed_points,
           st.buffer_bytes, (double)st.buffer_bytes / (double)n_series, rss_per_series, fixed_per_series, per_point, marginal,
           (double)pts_total / cpu, proj / (1024.0 * 1024 * 1024));
    fj_ts_engine_close(e);
    free(hosts);
    free(pts);
    free(val);
    return 0;
}
