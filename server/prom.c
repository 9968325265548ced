/* prom.c — the counters behind GET /metrics and the text they are written as. Process figures
 * come from /proc/self at scrape time; storage figures from the reader connection's stats op,
 * at most once every STORE_EVERY_S seconds whatever the scrape rate. */
#include "prom.h"

#include "alloc.h"
#include "buf.h"
#include "storage/ts/engine.h"
#include "timefmt.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_ROUTES = 64,  /* labelled routes; row MAX_ROUTES is "no route" (404s, refused URIs) */
    MAX_NAMES = 256,  /* clusters and credential names; index MAX_NAMES is "_other" */
    MAX_REASONS = 32, /* error codes; index MAX_REASONS is "other" */
    NAME_LEN = 64,
    STORE_EVERY_S = 10,
};

static const int statuses[] = {200, 201, 204, 400, 401, 403, 404, 405, 408, 409,
                               413, 414, 415, 422, 429, 500, 501, 503};
#define N_STATUS (sizeof statuses / sizeof statuses[0] + 1) /* the last: any other */

/* Commit histograms' upper bounds: batches in one transaction, seconds one took. */
static const double size_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
static const double latency_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_SIZE_B (sizeof size_bounds / sizeof size_bounds[0])
#define N_LAT_B (sizeof latency_bounds / sizeof latency_bounds[0])

typedef atomic_uint_fast64_t counter;

/* A bounded set of names: read without a lock (an entry is published by its `used` flag, with
 * release order, after its name is written), added to under mu. */
typedef struct name_table {
    pthread_mutex_t mu;
    atomic_bool used[MAX_NAMES];
    char names[MAX_NAMES][NAME_LEN];
    atomic_uint n;
    unsigned cap;
} name_table;

typedef struct per_unit {
    counter accepted[MAX_NAMES + 1];
    counter refused[MAX_NAMES + 1][MAX_REASONS + 1];
} per_unit;

static struct {
    const fj_route *routes;
    unsigned n_routes;
    double start_s; /* process start, Unix seconds */
    counter requests[MAX_ROUTES + 1][N_STATUS];
    counter bytes_in[MAX_ROUTES + 1][N_STATUS];
    counter bytes_out[MAX_ROUTES + 1][N_STATUS];
    name_table reasons, names;
    counter auth_fail[3];
    per_unit units[2];
    atomic_int_fast64_t last_accepted[MAX_NAMES + 1]; /* Unix ms; 0 = never */
    atomic_int_fast64_t last_refused[MAX_NAMES + 1];
    /* group commits (writer thread): histograms as cumulative-to-be buckets */
    counter commit_size[N_SIZE_B + 1], commit_latency[N_LAT_B + 1], commits, commit_batches;
    atomic_uint_fast64_t commit_seconds_us;
    /* the storage figures' cache */
    pthread_mutex_t store_mu;
    int64_t store_at_ns;
    bool store_ok;
    fj_store_stats store;
} P = {
    .reasons = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = MAX_REASONS},
    .names = {.mu = PTHREAD_MUTEX_INITIALIZER, .cap = MAX_NAMES},
    .store_mu = PTHREAD_MUTEX_INITIALIZER,
};

#define ADD(c, v) atomic_fetch_add_explicit(&(c), (uint_fast64_t)(v), memory_order_relaxed)
#define GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The index of name in t, added when there is room; t->cap ("other") when there is none. */
static unsigned name_index(name_table *t, const char *name)
{
    if (!name || !*name)
        name = "-";
    size_t len = strlen(name);
    if (len >= NAME_LEN)
        return t->cap;
    unsigned start = (unsigned)(name_hash(name) % t->cap);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < t->cap; i++) {
            unsigned k = (start + i) % t->cap;
            if (!atomic_load_explicit(&t->used[k], memory_order_acquire))
                break; /* slots fill in probe order: the name is not further on */
            if (!strcmp(t->names[k], name))
                return k;
        }
        if (pass)
            break;
        pthread_mutex_lock(&t->mu);
        unsigned found = t->cap;
        for (unsigned i = 0; i < t->cap; i++) {
            unsigned k = (start + i) % t->cap;
            if (!atomic_load_explicit(&t->used[k], memory_order_acquire)) {
                memcpy(t->names[k], name, len + 1);
                atomic_store_explicit(&t->used[k], true, memory_order_release);
                atomic_fetch_add(&t->n, 1);
                found = k;
                break;
            }
            if (!strcmp(t->names[k], name)) {
                found = k;
                break;
            }
        }
        pthread_mutex_unlock(&t->mu);
        return found;
    }
    return t->cap;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process's start from /proc/self/stat (field 22, in clock ticks since boot) and the boot
 * time from /proc/stat: what ps shows, whenever fj_prom_init is called. */
static double process_start_s(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ticks = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &ticks) != 1)
        return wall_s();
    unsigned long long btime = 0;
    char line[256];
    if ((f = fopen("/proc/stat", "r"))) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "btime %llu", &btime) == 1)
                break;
        fclose(f);
    }
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? (double)btime + (double)ticks / (double)hz : wall_s();
}

void fj_prom_init(const fj_route *routes)
{
    P.routes = routes;
    P.n_routes = 0;
    while (routes && routes[P.n_routes].path)
        P.n_routes++;
    P.start_s = process_start_s();
}

static unsigned status_index(int status)
{
    for (unsigned i = 0; i < N_STATUS - 1; i++)
        if (statuses[i] == status)
            return i;
    return N_STATUS - 1;
}

void fj_prom_request(int route, int status, size_t bytes_in, size_t bytes_out)
{
    unsigned ri = route < 0 || (unsigned)route >= P.n_routes || route >= MAX_ROUTES ? MAX_ROUTES : (unsigned)route;
    unsigned si = status_index(status);
    ADD(P.requests[ri][si], 1);
    ADD(P.bytes_in[ri][si], bytes_in);
    ADD(P.bytes_out[ri][si], bytes_out);
}

static const char *const auth_reasons[3] = {"unauthorized", "rate_limited", "malformed"};

void fj_prom_auth_failure(const char *reason)
{
    for (unsigned i = 0; i < 3; i++)
        if (!strcmp(reason, auth_reasons[i]))
            ADD(P.auth_fail[i], 1);
}

static int64_t wall_ms(void)
{
    return (int64_t)(wall_s() * 1000.0);
}

void fj_prom_accepted(fj_prom_unit unit, const char *cluster, uint64_t n)
{
    unsigned c = name_index(&P.names, cluster);
    ADD(P.units[unit].accepted[c], n);
    atomic_store_explicit(&P.last_accepted[c], wall_ms(), memory_order_relaxed);
}

void fj_prom_refused(fj_prom_unit unit, const char *cluster, const char *reason, uint64_t n)
{
    unsigned c = name_index(&P.names, cluster), why = name_index(&P.reasons, reason);
    ADD(P.units[unit].refused[c][why], n);
}

void fj_prom_credential_refused(const char *name)
{
    atomic_store_explicit(&P.last_refused[name_index(&P.names, name)], wall_ms(), memory_order_relaxed);
}

void fj_prom_commit(size_t batches, double seconds)
{
    unsigned b = 0;
    while (b < N_SIZE_B && (double)batches > size_bounds[b])
        b++;
    ADD(P.commit_size[b], 1);
    unsigned l = 0;
    while (l < N_LAT_B && seconds > latency_bounds[l])
        l++;
    ADD(P.commit_latency[l], 1);
    ADD(P.commits, 1);
    ADD(P.commit_batches, batches);
    ADD(P.commit_seconds_us, (uint64_t)(seconds * 1e6));
}

/* --- the exposition -------------------------------------------------------------------- */

static void header(fj_buf *b, const char *name, const char *type, const char *help)
{
    fj_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped, as the format asks. */
static void label_value(fj_buf *b, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            fj_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            fj_buf_puts(b, "\\n");
        else
            fj_buf_printf(b, "%c", *p);
    }
}

static const char *name_at(const name_table *t, unsigned i, const char *other)
{
    return i == t->cap ? other : t->names[i];
}

static bool name_used(name_table *t, unsigned i)
{
    return i == t->cap || atomic_load_explicit(&t->used[i], memory_order_acquire);
}

static void route_label(fj_buf *b, unsigned ri)
{
    fj_buf_puts(b, "route=\"");
    if (ri == MAX_ROUTES) {
        fj_buf_puts(b, "none");
    } else {
        fj_buf_puts(b, P.routes[ri].methods);
        fj_buf_puts(b, " ");
        label_value(b, P.routes[ri].path);
    }
    fj_buf_puts(b, "\"");
}

static void put_requests(fj_buf *b)
{
    static const char *const names[3] = {"fjord_http_requests_total", "fjord_http_request_bytes_total",
                                         "fjord_http_response_bytes_total"};
    static const char *const helps[3] = {"HTTP requests answered, by route template and status.",
                                         "Request body bytes received, by route template and status.",
                                         "Answer body bytes sent, by route template and status."};
    counter(*tabs[3])[N_STATUS] = {P.requests, P.bytes_in, P.bytes_out};
    unsigned n_rows = P.n_routes < MAX_ROUTES ? P.n_routes : MAX_ROUTES;
    for (unsigned k = 0; k < 3; k++) {
        header(b, names[k], "counter", helps[k]);
        for (unsigned ri = 0; ri <= MAX_ROUTES; ri++) {
            if (ri >= n_rows && ri != MAX_ROUTES)
                continue;
            for (unsigned si = 0; si < N_STATUS; si++) {
                uint64_t v = GET(tabs[k][ri][si]);
                if (!v)
                    continue;
                fj_buf_printf(b, "%s{", names[k]);
                route_label(b, ri);
                if (si == N_STATUS - 1)
                    fj_buf_puts(b, ",status=\"other\"}");
                else
                    fj_buf_printf(b, ",status=\"%d\"}", statuses[si]);
                fj_buf_printf(b, " %llu\n", (unsigned long long)v);
            }
        }
    }
}

static void put_units(fj_buf *b)
{
    static const char *const unit_names[2] = {"envelopes", "points"};
    for (unsigned u = 0; u < 2; u++) {
        char name[64], help[160];
        snprintf(name, sizeof name, "fjord_%s_accepted_total", unit_names[u]);
        snprintf(help, sizeof help, "%s%s committed, by cluster.", u ? "Line-protocol " : "Sonar ", unit_names[u]);
        header(b, name, "counter", help);
        for (unsigned c = 0; c <= MAX_NAMES; c++) {
            uint64_t v = GET(P.units[u].accepted[c]);
            if (!v || !name_used(&P.names, c))
                continue;
            fj_buf_printf(b, "%s{cluster=\"", name);
            label_value(b, name_at(&P.names, c, "_other"));
            fj_buf_printf(b, "\"} %llu\n", (unsigned long long)v);
        }
        snprintf(name, sizeof name, "fjord_%s_refused_total", unit_names[u]);
        snprintf(help, sizeof help, "%s%s refused, by cluster (the credential's) and reason (error code).",
                 u ? "Line-protocol " : "Sonar ", u ? "points (a bad line counts one)" : unit_names[u]);
        header(b, name, "counter", help);
        for (unsigned c = 0; c <= MAX_NAMES; c++) {
            if (!name_used(&P.names, c))
                continue;
            for (unsigned w = 0; w <= MAX_REASONS; w++) {
                uint64_t v = GET(P.units[u].refused[c][w]);
                if (!v || !name_used(&P.reasons, w))
                    continue;
                fj_buf_printf(b, "%s{cluster=\"", name);
                label_value(b, name_at(&P.names, c, "_other"));
                fj_buf_puts(b, "\",reason=\"");
                label_value(b, name_at(&P.reasons, w, "other"));
                fj_buf_printf(b, "\"} %llu\n", (unsigned long long)v);
            }
        }
    }
}

static void put_last_times(fj_buf *b, const char *name, const char *label, const char *help,
                           atomic_int_fast64_t *t)
{
    header(b, name, "gauge", help);
    for (unsigned c = 0; c <= MAX_NAMES; c++) {
        int64_t ms = atomic_load_explicit(&t[c], memory_order_relaxed);
        if (!ms || !name_used(&P.names, c))
            continue;
        fj_buf_printf(b, "%s{%s=\"", name, label);
        label_value(b, name_at(&P.names, c, "_other"));
        fj_buf_printf(b, "\"} %.3f\n", (double)ms / 1000.0);
    }
}

static void put_histogram(fj_buf *b, const char *name, const char *help, const double *bounds, size_t n_bounds,
                          counter *buckets, double sum)
{
    header(b, name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < n_bounds; i++) {
        cum += GET(buckets[i]);
        fj_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    cum += GET(buckets[n_bounds]);
    fj_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name,
                  sum, name, (unsigned long long)cum);
}

static void gauge(fj_buf *b, const char *name, const char *help, double v)
{
    header(b, name, "gauge", help);
    fj_buf_printf(b, "%s %.17g\n", name, v);
}

static void counter_value(fj_buf *b, const char *name, const char *help, double v)
{
    header(b, name, "counter", help);
    fj_buf_printf(b, "%s %.17g\n", name, v);
}

/* RSS, CPU seconds, open descriptors, their limit: what the Prometheus client libraries call
 * process_*, read from /proc/self as they do. */
static void put_process(fj_buf *b)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) != 2)
            size = resident = 0;
        fclose(f);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    unsigned fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.')
                fds++;
        closedir(d);
        fds--; /* the directory's own descriptor */
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    counter_value(b, "process_cpu_seconds_total", "User and system CPU time spent, in seconds.", cpu);
    gauge(b, "process_resident_memory_bytes", "Resident memory size in bytes.", (double)resident * (double)page);
    gauge(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.", (double)size * (double)page);
    gauge(b, "process_open_fds", "Open file descriptors.", fds);
    gauge(b, "process_max_fds", "The limit of open file descriptors.",
          rl.rlim_cur == RLIM_INFINITY ? -1.0 : (double)rl.rlim_cur);
    gauge(b, "process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", P.start_s);
}

/* The storage figures, refreshed on this request's reader connection when older than
 * STORE_EVERY_S; false when none could be read (the series are then left out). */
static bool store_figures(fj_http_req *r, fj_store_stats *out)
{
    int64_t now = fj_mono_ns();
    pthread_mutex_lock(&P.store_mu);
    bool due = !P.store_at_ns || now - P.store_at_ns >= (int64_t)STORE_EVERY_S * 1000000000LL;
    if (due) {
        P.store_at_ns = now; /* one scrape refreshes; the others take the last figures */
        pthread_mutex_unlock(&P.store_mu);
        fj_err err = {0};
        fj_store *st = fj_http_reader(r, &err);
        const fj_store_ops *ops = st ? fj_store_ops_of(st) : NULL;
        fj_store_stats s = {0};
        bool ok = ops && ops->stats && ops->stats(st, &s, &err) == FJ_OK;
        pthread_mutex_lock(&P.store_mu);
        P.store_ok = ok;
        if (ok)
            P.store = s;
    }
    bool ok = P.store_ok;
    *out = P.store;
    pthread_mutex_unlock(&P.store_mu);
    return ok;
}

/* The read pool (server/read_pool.h) and the reads' memory (docs/security.md, "Reads"). */
static void put_reads(fj_buf *b, const fj_server_figures *sf)
{
    const fj_read_pool_stats *n = &sf->reads;
    gauge(b, "fjord_reads_running", "Reads running on the read threads (read-threads).", (double)n->running);
    gauge(b, "fjord_reads_queued", "Reads waiting for a read thread (read-queue).", (double)n->queued);
    gauge(b, "fjord_query_memory_bytes", "Query memory held by the reads in flight (query-memory-total).",
          (double)sf->read_mem_bytes);
    header(b, "fjord_reads_refused_total", "counter",
           "Reads refused or stopped by a limit: the queue full (read-queue), memory (query-memory, "
           "query-memory-total).");
    fj_buf_printf(b, "fjord_reads_refused_total{limit=\"read-queue\"} %llu\n", (unsigned long long)n->queue_full);
    fj_buf_printf(b, "fjord_reads_refused_total{limit=\"query-memory\"} %llu\n", (unsigned long long)sf->read_mem_refused_own);
    fj_buf_printf(b, "fjord_reads_refused_total{limit=\"query-memory-total\"} %llu\n",
                  (unsigned long long)sf->read_mem_refused_pool);
    header(b, "fjord_reads_cancelled_total", "counter",
           "Reads stopped by the watch: past their deadline (query-timeout), or their client left.");
    fj_buf_printf(b, "fjord_reads_cancelled_total{reason=\"deadline\"} %llu\n",
                  (unsigned long long)n->cancelled_deadline);
    fj_buf_printf(b, "fjord_reads_cancelled_total{reason=\"client_gone\"} %llu\n",
                  (unsigned long long)n->cancelled_client_gone);
}

void fj_route_prom_metrics(fj_http_req *r)
{
    fj_buf b;
    fj_buf_init(&b, (size_t)16 << 20);
    put_requests(&b);
    header(&b, "fjord_auth_failures_total", "counter", "Failed authentications, by reason.");
    for (unsigned i = 0; i < 3; i++)
        fj_buf_printf(&b, "fjord_auth_failures_total{reason=\"%s\"} %llu\n", auth_reasons[i],
                      (unsigned long long)GET(P.auth_fail[i]));
    put_units(&b);
    put_last_times(&b, "fjord_cluster_last_accepted_timestamp_seconds", "cluster",
                   "When data of the cluster was last committed (Unix seconds).", P.last_accepted);
    put_last_times(&b, "fjord_credential_last_refusal_timestamp_seconds", "credential",
                   "When a request with the credential was last refused (Unix seconds).", P.last_refused);

    fj_server_figures sf;
    fj_http_server_figures(r, &sf);
    gauge(&b, "fjord_write_queue_batches", "Batches waiting for the writer.", (double)sf.queued);
    gauge(&b, "fjord_write_queue_max_batches", "The write queue's length beyond which ingest answers 503 (queue-max).",
          (double)sf.queue_max);
    gauge(&b, "fjord_connections_open", "Client connections open.", sf.connections);
    gauge(&b, "fjord_requests_in_flight", "Requests being read, handled or waiting for a commit.", sf.in_flight);
    gauge(&b, "fjord_request_body_bytes_in_flight", "Bytes held by request bodies in flight (body-memory).",
          (double)sf.body_bytes);
    put_reads(&b, &sf);

    double sum_batches = (double)GET(P.commit_batches);
    put_histogram(&b, "fjord_commit_batches", "Batches (requests) committed in one transaction (group commit).",
                  size_bounds, N_SIZE_B, P.commit_size, sum_batches);
    put_histogram(&b, "fjord_commit_duration_seconds", "Time one group commit took, writing included.",
                  latency_bounds, N_LAT_B, P.commit_latency, (double)GET(P.commit_seconds_us) / 1e6);

    fj_ts_engine *eng = fj_http_ts_engine(r);
    if (eng) { /* the catalog is read on first use: what start-up and ingest have read of it */
        size_t held = 0, loaded = 0;
        fj_ts_engine_series_held(eng, &held, &loaded);
        gauge(&b, "fjord_metrics_series_in_memory", "Line-protocol series the engine holds (read or made since start).",
              (double)held);
        gauge(&b, "fjord_metrics_series_loaded", "Of those, series read from the database's catalog on first use.",
              (double)loaded);
    }
    fj_store_stats st;
    if (store_figures(r, &st)) {
        gauge(&b, "fjord_database_bytes", "Size of the database (SQLite: its file's pages).", (double)st.db_bytes);
        gauge(&b, "fjord_metrics_series", "Line-protocol series in the catalog.", (double)st.series);
        gauge(&b, "fjord_metrics_chunks", "Line-protocol chunks stored.", (double)st.chunks);
        gauge(&b, "fjord_request_log_rows", "Rows of the metrics request log (not yet trimmed).",
              (double)st.request_log_rows);
        gauge(&b, "fjord_request_log_bytes", "Stored bytes of the metrics request log.", (double)st.request_log_bytes);
        gauge(&b, "fjord_replay_pending_requests",
              "Logged requests past the last checkpoint (durable lsn): what a start would replay.",
              (double)st.replay_pending);
    }
    put_process(&b);
    if (b.data)
        fj_http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    else
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
    fj_buf_free(&b);
}
