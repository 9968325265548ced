/* server/prom_page.c — GET /metrics: the counters of prom.c written in Prometheus's text format,
 * with the process's figures from /proc/self at scrape time and the storage figures from the
 * reader connection's stats op, at most once every STORE_EVERY_S seconds whatever the scrape
 * rate. */
#include "server/prom_int.h"

#include "buf.h"
#include "storage/core/stats.h"
#include "storage/ts/engine.h"
#include "timefmt.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

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
        fj_buf_puts(b, fj_prom.routes[ri].methods);
        fj_buf_puts(b, " ");
        label_value(b, fj_prom.routes[ri].path);
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
    counter(*tabs[3])[N_STATUS] = {fj_prom.requests, fj_prom.bytes_in, fj_prom.bytes_out};
    unsigned n_rows = fj_prom.n_routes < MAX_ROUTES ? fj_prom.n_routes : MAX_ROUTES;
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
            uint64_t v = GET(fj_prom.units[u].accepted[c]);
            if (!v || !name_used(&fj_prom.names, c))
                continue;
            fj_buf_printf(b, "%s{cluster=\"", name);
            label_value(b, name_at(&fj_prom.names, c, "_other"));
            fj_buf_printf(b, "\"} %llu\n", (unsigned long long)v);
        }
        snprintf(name, sizeof name, "fjord_%s_refused_total", unit_names[u]);
        snprintf(help, sizeof help, "%s%s refused, by cluster (the credential's) and reason (error code).",
                 u ? "Line-protocol " : "Sonar ", u ? "points (a bad line counts one)" : unit_names[u]);
        header(b, name, "counter", help);
        for (unsigned c = 0; c <= MAX_NAMES; c++) {
            if (!name_used(&fj_prom.names, c))
                continue;
            for (unsigned w = 0; w <= MAX_REASONS; w++) {
                uint64_t v = GET(fj_prom.units[u].refused[c][w]);
                if (!v || !name_used(&fj_prom.reasons, w))
                    continue;
                fj_buf_printf(b, "%s{cluster=\"", name);
                label_value(b, name_at(&fj_prom.names, c, "_other"));
                fj_buf_puts(b, "\",reason=\"");
                label_value(b, name_at(&fj_prom.reasons, w, "other"));
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
        if (!ms || !name_used(&fj_prom.names, c))
            continue;
        fj_buf_printf(b, "%s{%s=\"", name, label);
        label_value(b, name_at(&fj_prom.names, c, "_other"));
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
    gauge(b, "process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", fj_prom.start_s);
}

/* The storage figures, refreshed on this request's reader connection when older than
 * STORE_EVERY_S; false when none could be read (the series are then left out). */
static bool store_figures(fj_http_req *r, fj_store_stats *out)
{
    int64_t now = fj_mono_ns();
    pthread_mutex_lock(&fj_prom.store_mu);
    bool due = !fj_prom.store_at_ns || now - fj_prom.store_at_ns >= (int64_t)STORE_EVERY_S * 1000000000LL;
    if (due) {
        fj_prom.store_at_ns = now; /* one scrape refreshes; the others take the last figures */
        pthread_mutex_unlock(&fj_prom.store_mu);
        fj_err err = {0};
        fj_store *st = fj_http_reader(r, &err);
        fj_store_stats s = {0};
        bool ok = st && fj_stats_read(st, &s, &err) == FJ_OK;
        pthread_mutex_lock(&fj_prom.store_mu);
        fj_prom.store_ok = ok;
        if (ok)
            fj_prom.store = s;
    }
    bool ok = fj_prom.store_ok;
    *out = fj_prom.store;
    pthread_mutex_unlock(&fj_prom.store_mu);
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
                      (unsigned long long)GET(fj_prom.auth_fail[i]));
    header(&b, "fjord_udp_datagrams_total", "counter",
           "Datagrams of the UDP line-protocol listeners, by what became of them (docs/metrics.md, UDP).");
    for (unsigned i = 0; i < 5; i++)
        fj_buf_printf(&b, "fjord_udp_datagrams_total{result=\"%s\"} %llu\n", udp_results[i],
                      (unsigned long long)GET(fj_prom.udp[i]));
    put_units(&b);
    put_last_times(&b, "fjord_cluster_last_accepted_timestamp_seconds", "cluster",
                   "When data of the cluster was last committed (Unix seconds).", fj_prom.last_accepted);
    put_last_times(&b, "fjord_credential_last_refusal_timestamp_seconds", "credential",
                   "When a request with the credential was last refused (Unix seconds).", fj_prom.last_refused);

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

    double sum_batches = (double)GET(fj_prom.commit_batches);
    put_histogram(&b, "fjord_commit_batches", "Batches (requests) committed in one transaction (group commit).",
                  size_bounds, N_SIZE_B, fj_prom.commit_size, sum_batches);
    put_histogram(&b, "fjord_commit_duration_seconds", "Time one group commit took, writing included.",
                  latency_bounds, N_LAT_B, fj_prom.commit_latency, (double)GET(fj_prom.commit_seconds_us) / 1e6);

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
