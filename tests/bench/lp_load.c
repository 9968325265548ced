/* lp_load.c — load generator for line-protocol ingest (a benchmark tool, not a test).
 *
 * Simulates a ClusterCockpit cluster shaped like cc-synthetic-fritz-2nodes-1interval.lp: per node
 * and 60 s interval 9 node metrics, 3 socket metrics x 2 sockets and 7 hwthread metrics x 72
 * hwthreads (519 lines), values random walks with few decimals, time advancing interval by
 * interval (all nodes of one interval, then the next). Every body is generated before the clock
 * starts: 5,000-line bodies in time order, nanosecond timestamps (the default of every peer).
 * Bodies are posted over C keep-alive HTTP/1.1 connections, each taking the next body.
 *
 *   lp_load --port P --path '/api/write?cluster=fritz' [--auth 'Bearer X'] [--nodes N]
 *           [--hours H] [--start EPOCH_S] [--connections C] [--lines L] [--host-prefix f]
 *
 * Prints one JSON object: points, bodies, bytes, seconds, points_per_s, p50_ms, p99_ms, errors. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct body {
    char *p;
    size_t n, lines;
} body;

static struct {
    int port, conns, nodes, lines;
    double hours;
    long start;
    const char *path, *auth, *prefix;
} cfg = {.conns = 2, .nodes = 50, .lines = 5000, .hours = 6, .path = "/api/write?cluster=fritz", .prefix = "f"};

static body *bodies;
static size_t n_bodies;
static atomic_size_t next_body;
static atomic_long n_err;
static double *lat;

static const char *node_metrics[] = {"cpu_load", "mem_used", "ib_recv", "ib_xmit", "ib_recv_pkts",
                                     "ib_xmit_pkts", "nfs4_read", "nfs4_write", "nfs4_total"};
static const char *socket_metrics[] = {"mem_bw", "cpu_power", "mem_power"};
static const char *hw_metrics[] = {"cpu_user", "flops_any", "flops_dp", "flops_sp", "ipc", "clock",
                                   "vectorization_ratio"};
#define NN (sizeof node_metrics / sizeof *node_metrics)
#define NS_ (sizeof socket_metrics / sizeof *socket_metrics)
#define NH (sizeof hw_metrics / sizeof *hw_metrics)
#define SERIES_PER_NODE (NN + NS_ * 2 + NH * 72)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double rnd(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One line; values are random walks clamped to [0, hi] with `dec` decimals. */
static size_t line(char *out, const char *metric, int node, const char *type, int id, double v, int dec, long long t)
{
    if (!strcmp(type, "node"))
        return (size_t)sprintf(out, "%s,cluster=fritz,hostname=%s%04d,type=node,type-id=0 value=%.*f %lld000000000\n",
                               metric, cfg.prefix, node, dec, v, t);
    return (size_t)sprintf(out, "%s,cluster=fritz,hostname=%s%04d,type=%s,type-id=%d value=%.*f %lld000000000\n",
                           metric, cfg.prefix, node, type, id, dec, v, t);
}

static void generate(void)
{
    long intervals = (long)(cfg.hours * 60);
    size_t total_lines = (size_t)intervals * (size_t)cfg.nodes * SERIES_PER_NODE;
    n_bodies = (total_lines + (size_t)cfg.lines - 1) / (size_t)cfg.lines;
    bodies = calloc(n_bodies, sizeof *bodies);
    size_t n_series = (size_t)cfg.nodes * SERIES_PER_NODE;
    double *val = malloc(n_series * sizeof *val);
    for (size_t i = 0; i < n_series; i++)
        val[i] = rnd() * 50;
    size_t b = 0, in_body = 0, cap = (size_t)cfg.lines * 140;
    bodies[0].p = malloc(cap);
    for (long k = 0; k < intervals; k++) {
        long long t = cfg.start + 60 * k;
        for (int n = 0; n < cfg.nodes; n++) {
            double *v = val + (size_t)n * SERIES_PER_NODE;
            for (size_t s = 0; s < SERIES_PER_NODE; s++) {
                v[s] += (rnd() - 0.5) * 4;
                if (v[s] < 0)
                    v[s] = -v[s];
                if (v[s] > 100)
                    v[s] = 200 - v[s];
                body *bd = &bodies[b];
                char *o = bd->p + bd->n;
                if (s < NN)
                    bd->n += line(o, node_metrics[s], n, "node", 0, v[s], 2, t);
                else if (s < NN + NS_ * 2)
                    bd->n += line(o, socket_metrics[(s - NN) / 2], n, "socket", (int)((s - NN) % 2), v[s], 3, t);
                else
                    bd->n += line(o, hw_metrics[(s - NN - NS_ * 2) / 72], n, "hwthread", (int)((s - NN - NS_ * 2) % 72),
                                  v[s], 2, t);
                bd->lines++;
                if (++in_body == (size_t)cfg.lines && b + 1 < n_bodies) {
                    in_body = 0;
                    bodies[++b].p = malloc(cap);
                }
            }
        }
    }
    free(val);
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one response; returns the status or -1. */
static int read_response(int fd)
{
    char buf[65536];
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end && have >= sizeof buf - 1)
            return -1;
    }
    int status = atoi(buf + 9);
    long clen = 0;
    char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (cl && cl < end)
        clen = atol(cl + 17);
    long got = (long)(have - (size_t)(end + 4 - buf));
    while (got < clen) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            return -1;
        got += r;
    }
    return status;
}

static void *worker(void *arg)
{
    (void)arg;
    int fd = connect_to();
    char head[1024];
    for (;;) {
        size_t i = atomic_fetch_add(&next_body, 1);
        if (i >= n_bodies)
            break;
        body *b = &bodies[i];
        int hn = snprintf(head, sizeof head,
                          "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                          cfg.path, cfg.auth ? "Authorization: " : "", cfg.auth ? cfg.auth : "", cfg.auth ? "\r\n" : "",
                          b->n);
        double t0 = now_s();
        int st = -1;
        for (int attempt = 0; attempt < 3 && st < 0; attempt++) {
            if (fd < 0)
                fd = connect_to();
            if (fd >= 0 && send_all(fd, head, (size_t)hn) == 0 && send_all(fd, b->p, b->n) == 0)
                st = read_response(fd);
            if (st < 0 && fd >= 0) {
                close(fd);
                fd = -1;
            }
        }
        lat[i] = now_s() - t0;
        if (st < 200 || st > 299) {
            if (atomic_fetch_add(&n_err, 1) < 5)
                fprintf(stderr, "lp_load: body %zu: status %d\n", i, st);
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    cfg.start = (long)time(NULL) - 6 * 3600;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--port")) cfg.port = atoi(v);
        else if (!strcmp(k, "--path")) cfg.path = v;
        else if (!strcmp(k, "--auth")) cfg.auth = v;
        else if (!strcmp(k, "--nodes")) cfg.nodes = atoi(v);
        else if (!strcmp(k, "--hours")) cfg.hours = atof(v);
        else if (!strcmp(k, "--start")) cfg.start = atol(v);
        else if (!strcmp(k, "--connections")) cfg.conns = atoi(v);
        else if (!strcmp(k, "--lines")) cfg.lines = atoi(v);
        else if (!strcmp(k, "--host-prefix")) cfg.prefix = v;
        else {
            fprintf(stderr, "lp_load: unknown option %s\n", k);
            return 2;
        }
    }
    if (!cfg.port || cfg.nodes < 1 || cfg.conns < 1 || cfg.lines < 1) {
        fprintf(stderr, "usage: lp_load --port P [--path P] [--auth A] [--nodes N] [--hours H] [--start S] "
                        "[--connections C] [--lines L]\n");
        return 2;
    }
    generate();
    lat = calloc(n_bodies, sizeof *lat);
    size_t points = 0, bytes = 0;
    for (size_t i = 0; i < n_bodies; i++)
        points += bodies[i].lines, bytes += bodies[i].n;
    pthread_t th[256];
    int nc = cfg.conns < 256 ? cfg.conns : 256;
    double t0 = now_s();
    for (int i = 0; i < nc; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < nc; i++)
        pthread_join(th[i], NULL);
    double secs = now_s() - t0;
    qsort(lat, n_bodies, sizeof *lat, cmp_d);
    printf("{\"points\":%zu,\"bodies\":%zu,\"bytes\":%zu,\"seconds\":%.3f,\"points_per_s\":%.0f,\"p50_ms\":%.2f,"
           "\"p99_ms\":%.2f,\"errors\":%ld,\"start\":%ld,\"end\":%ld}\n",
           points, n_bodies, bytes, secs, (double)points / secs, lat[n_bodies / 2] * 1e3,
           lat[(size_t)((double)n_bodies * 0.99)] * 1e3, atomic_load(&n_err), cfg.start,
           cfg.start + (long)(cfg.hours * 3600));
    return atomic_load(&n_err) ? 1 : 0;
}
