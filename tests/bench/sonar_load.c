/* sonar_load.c — load generator for Sonar sample ingest (a benchmark tool, not a test).
 *
 * Posts sample envelopes shaped like a real ML-node sample (the template file: ~100 processes,
 * 3 GPUs) from many simulated nodes with time advancing, over keep-alive HTTP/1.1 connections,
 * exactly as Sonar's HTTP sink posts them (one envelope per request, Basic auth). Each request
 * is a new (node, time), so every envelope adds rows.
 *
 *   sonar_load --port P --secret S --template FILE [--nodes N] [--connections C]
 *              [--duration SEC] [--rate ENVELOPES_PER_S] [--seq-start N] [--node-offset N]
 *              [--envelopes N]   (stop after N envelopes, or at DURATION, whichever comes first)
 *
 * Without --rate it sends as fast as the server acknowledges (closed loop, C in flight). With
 * --rate each connection sends on a fixed schedule, so latency is measured at that load.
 * Envelope k is node k % nodes at step k / nodes; --seq-start lets a second run continue where a
 * first one stopped, so it sends new data rather than duplicates.
 * Prints one JSON object: envelopes, seconds, envelopes_per_s, process_records, p50_ms, p99_ms,
 * errors. */
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

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

typedef struct piece {
    const char *p;
    size_t n;
} piece;

static struct {
    int port;
    const char *secret, *cluster_hint;
    char auth[512];
    piece pre, mid, post; /* template split at the time value and the node value */
    int procs_per_env;
    int nodes, conns;
    long node_offset; /* the first node's number: two loads with disjoint offsets post disjoint nodes */
    long envelopes;   /* > 0: stop after envelopes 0 .. envelopes-1 (a fixed amount of data) */
    double duration, rate;
    int64_t t0;
} cfg;

static atomic_long next_seq;
static atomic_long n_ok, n_err;
static double *latencies;
static atomic_long n_lat;
static long lat_cap;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void b64(const char *in, char *out)
{
    size_t n = strlen(in), o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < n) v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)in[i + 2];
        out[o++] = b64chars[(v >> 18) & 63];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
    }
    out[o] = 0;
}

/* Removes whitespace outside strings, as Sonar sends compact JSON. */
static size_t minify(char *s, size_t n)
{
    size_t o = 0;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            s[o++] = c;
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
            s[o++] = c;
        } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            s[o++] = c;
        }
    }
    s[o] = 0;
    return o;
}

static int load_template(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) return -1;
    fclose(f);
    n = (long)minify(s, (size_t)n);
    /* "time":"...", then "node":"..." — the first occurrences are the envelope's. */
    char *t = strstr(s, "\"time\":\"");
    char *nd = strstr(s, "\"node\":\"");
    if (!t || !nd || nd < t) return -1;
    t += 8;
    char *t_end = strchr(t, '"');
    nd += 8;
    char *nd_end = strchr(nd, '"');
    cfg.pre = (piece){s, (size_t)(t - s)};
    cfg.mid = (piece){t_end, (size_t)(nd - t_end)};
    cfg.post = (piece){nd_end, (size_t)(s + n - nd_end)};
    for (char *p = s; (p = strstr(p, "\"pid\":")); p++)
        cfg.procs_per_env++;
    /* cluster name for the credential */
    char *c = strstr(s, "\"cluster\":\"");
    if (c) {
        c += 11;
        char *ce = strchr(c, '"');
        static char cl[256];
        snprintf(cl, sizeof cl, "%.*s", (int)(ce - c), c);
        cfg.cluster_hint = cl;
    }
    return 0;
}

static int connect_server(void)
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
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one response; returns the status code or -1. */
static int read_response(int fd, char *buf, size_t cap)
{
    size_t have = 0;
    char *hdr_end = NULL;
    while (!hdr_end) {
        ssize_t r = recv(fd, buf + have, cap - have - 1, 0);
        if (r <= 0) return -1;
        have += (size_t)r;
        buf[have] = 0;
        hdr_end = strstr(buf, "\r\n\r\n");
    }
    int status = atoi(buf + 9);
    char *cl = strcasestr(buf, "Content-Length:");
    size_t body = cl ? (size_t)atol(cl + 15) : 0;
    size_t need = (size_t)(hdr_end + 4 - buf) + body;
    while (have < need) {
        ssize_t r = recv(fd, buf + have, cap - have - 1, 0);
        if (r <= 0) return -1;
        have += (size_t)r;
    }
    return status;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    size_t cap = cfg.pre.n + cfg.mid.n + cfg.post.n + 1024;
    char *req = malloc(cap + 1024);
    char *resp = malloc(65536);
    int fd = connect_server();
    int64_t end = cfg.t0 + (int64_t)(cfg.duration * 1e9);
    double interval = cfg.rate > 0 ? cfg.conns / cfg.rate : 0;
    int64_t next = cfg.t0 + (int64_t)(interval * 1e9 * id / cfg.conns);
    while (fd >= 0) {
        int64_t now = now_ns();
        if (now >= end) break;
        if (interval > 0) {
            if (now < next) {
                struct timespec ts = {(time_t)((next - now) / 1000000000), (long)((next - now) % 1000000000)};
                nanosleep(&ts, NULL);
            }
            next += (int64_t)(interval * 1e9);
        }
        long seq = atomic_fetch_add(&next_seq, 1);
        if (cfg.envelopes > 0 && seq >= cfg.envelopes) break;
        long node = seq % cfg.nodes, step = seq / cfg.nodes;
        /* 30 s sampling interval from a fixed start; node names ml-bench-N. */
        time_t t = 1767225600 + step * 30;
        struct tm tm;
        gmtime_r(&t, &tm);
        char ts[32], nodename[64];
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(nodename, sizeof nodename, "bench%05ld", cfg.node_offset + node);
        size_t body_len = cfg.pre.n + strlen(ts) + cfg.mid.n + strlen(nodename) + cfg.post.n;
        int h = snprintf(req, 1024,
                         "POST /api/v1/insert/sample HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Basic %s\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                         cfg.port, cfg.auth, body_len);
        char *p = req + h;
        memcpy(p, cfg.pre.p, cfg.pre.n), p += cfg.pre.n;
        memcpy(p, ts, strlen(ts)), p += strlen(ts);
        memcpy(p, cfg.mid.p, cfg.mid.n), p += cfg.mid.n;
        memcpy(p, nodename, strlen(nodename)), p += strlen(nodename);
        memcpy(p, cfg.post.p, cfg.post.n), p += cfg.post.n;
        int64_t t_send = now_ns();
        int status = send_all(fd, req, (size_t)(p - req)) == 0 ? read_response(fd, resp, 65536) : -1;
        double ms = (double)(now_ns() - t_send) / 1e6;
        if (status == 200) {
            atomic_fetch_add(&n_ok, 1);
            long k = atomic_fetch_add(&n_lat, 1);
            if (k < lat_cap) latencies[k] = ms;
        } else {
            atomic_fetch_add(&n_err, 1);
            if (status < 0) {
                close(fd);
                fd = connect_server();
            }
        }
    }
    if (fd >= 0) close(fd);
    free(req);
    free(resp);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *tmpl = NULL;
    cfg.nodes = 1000;
    cfg.conns = 8;
    cfg.duration = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) cfg.port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--secret")) cfg.secret = argv[i + 1];
        else if (!strcmp(argv[i], "--template")) tmpl = argv[i + 1];
        else if (!strcmp(argv[i], "--nodes")) cfg.nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--connections")) cfg.conns = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--duration")) cfg.duration = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) cfg.rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seq-start")) atomic_store(&next_seq, atol(argv[i + 1]));
        else if (!strcmp(argv[i], "--node-offset")) cfg.node_offset = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--envelopes")) cfg.envelopes = atol(argv[i + 1]);
    }
    if (!cfg.port || !cfg.secret || !tmpl || load_template(tmpl) != 0) {
        fprintf(stderr, "usage: sonar_load --port P --secret S --template FILE [--nodes N] [--connections C] "
                        "[--duration SEC] [--rate N] [--seq-start N] [--node-offset N] [--envelopes N]\n");
        return 2;
    }
    char userpass[512];
    snprintf(userpass, sizeof userpass, "%s:%s", cfg.cluster_hint, cfg.secret);
    b64(userpass, cfg.auth);
    lat_cap = 10000000;
    latencies = malloc(sizeof(double) * (size_t)lat_cap);
    pthread_t th[256];
    if (cfg.conns > 256) cfg.conns = 256;
    cfg.t0 = now_ns();
    for (long i = 0; i < cfg.conns; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < cfg.conns; i++)
        pthread_join(th[i], NULL);
    double secs = (double)(now_ns() - cfg.t0) / 1e9;
    long n = atomic_load(&n_lat);
    if (n > lat_cap) n = lat_cap;
    qsort(latencies, (size_t)n, sizeof(double), cmp);
    double p50 = n ? latencies[n / 2] : 0, p99 = n ? latencies[(long)(n * 0.99)] : 0;
    long ok = atomic_load(&n_ok);
    printf("{\"envelopes\":%ld,\"seconds\":%.2f,\"envelopes_per_s\":%.1f,\"process_records\":%ld,"
           "\"process_records_per_s\":%.0f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"errors\":%ld}\n",
           ok, secs, ok / secs, ok * cfg.procs_per_env, ok * cfg.procs_per_env / secs, p50, p99,
           atomic_load(&n_err));
    return 0;
}
