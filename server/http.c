/* http.c — libmicrohttpd integration. Requests that wait for the writer are suspended
 * (MHD_suspend_connection) rather than blocking a worker thread, so a few threads serve many
 * concurrent uploads and every one of them joins the next group commit. Reads are suspended too
 * and run on the read pool (read_pool.h) under a deadline and a memory budget, so a long query
 * never holds a worker thread that acknowledgements need. */
#include "server/http.h"

#include "alloc.h"
#include "server/codec.h"
#include "server/conn_guard.h"
#include "log.h"
#include "server/prom.h"
#include "server/proxy.h"
#include "server/read_pool.h"
#include "server/reqlog.h"
#include "timefmt.h"
#include "server/tls.h"
#include "storage/core/store_ts.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_READERS = 512 };

struct fj_server {
    struct MHD_Daemon *daemon;     /* plain HTTP (listen) */
    struct MHD_Daemon *daemon_tls; /* HTTPS (listen-tls); NULL when not configured */
    fj_tls *tls;                   /* its certificate, reloaded on SIGHUP */
    fj_proxies proxies;            /* trusted-proxies, forwarded-header */
    fj_config cfg;
    fj_store *store;
    fj_auth *auth;
    fj_writer *writer;
    const fj_route *routes;
    atomic_int in_flight;
    atomic_bool draining;
    fj_guard *guard;          /* deadlines and shedding of slow connections (conn_guard.h) */
    fj_reqlog *reqlog;        /* the refusal log */
    atomic_size_t body_bytes; /* bytes reserved by every request body in flight, together */
    fj_read_pool *reads;      /* where reads run (read-threads, read-queue) */
    fj_mem_pool read_mem;     /* what all reads in flight hold (query-memory-total) */
    unsigned port, tls_port;
    pthread_mutex_t readers_mu;
    fj_store *readers[MAX_READERS];
    size_t n_readers;
};

/* REQ_DEFERRED: a failed authentication over its limit, suspended until the guard resumes it
 * (slows guessing down without holding a worker thread). */
typedef enum { REQ_NEW, REQ_BODY, REQ_WAITING, REQ_READING, REQ_DEFERRED, REQ_ANSWERED } req_state;

struct fj_http_req {
    fj_server *srv;
    struct MHD_Connection *conn;
    const fj_route *route;
    const char *method, *path, *path_rest;
    req_state state;
    fj_guard_conn *gc;    /* the guard's record of this connection (may be NULL) */
    const char *client;   /* who sent it: the peer, or the client a trusted proxy names (arena) */
    const char *via;      /* the trusted proxy it came through; NULL when sent directly */
    fj_principal who;
    const char *cred_name; /* the Basic user presented (arena), for the refusal log */
    bool cred_known;       /* cred_name has a credential (a failure counts against its name) */
    int64_t start_ns;      /* headers in (monotonic), for the request log's duration */
    size_t body_in;        /* body bytes received */
    const char *reason;    /* error code of a refusal (arena), for the refusal log */
    size_t reserved;       /* bytes of the global body budget this request holds */
    unsigned defer_ms;     /* REQ_DEFERRED: how long */
    fj_arena *arena;
    /* a read (a route needing FJ_ACCESS_READ): run on the read pool, its arena and answer charged
     * to mem (query-memory, and the server's read_mem: query-memory-total) */
    bool is_read;
    fj_read_job job;
    fj_mem_budget mem;
    fj_buf raw;           /* body as received */
    fj_buf decoded;       /* body after Content-Encoding, when there was one */
    bool decoded_used;
    bool body_too_big;
    bool early;           /* answered from the headers, the body (if any) unread: the connection closes */
    /* the answer */
    int status;
    char *resp;
    size_t resp_len;
    size_t wire_len; /* the answer's body as sent (gzipped, when it was): what the log counts */
    const char *resp_type;
    /* extra answer headers (arena copies) */
    const char *hdr[8][2];
    int n_hdr;
    /* writer hand-off */
    fj_write_req wreq;
    void (*on_done)(fj_http_req *r, fj_write_req *w);
    void *submit_ctx;
};

static _Thread_local fj_store *tl_reader;

/* --- accessors ------------------------------------------------------------------------- */

const char *fj_http_method(const fj_http_req *r) { return r->method; }
const char *fj_http_path(const fj_http_req *r) { return r->path; }
const char *fj_http_path_rest(const fj_http_req *r) { return r->path_rest ? r->path_rest : ""; }
const fj_principal *fj_http_principal(const fj_http_req *r) { return &r->who; }
fj_arena *fj_http_arena(fj_http_req *r) { return r->arena; }
const fj_cancel *fj_http_cancel(const fj_http_req *r) { return r->is_read ? &r->job.cancel : NULL; }
fj_mem_budget *fj_http_mem(fj_http_req *r) { return r->is_read ? &r->mem : NULL; }
const fj_config *fj_http_config(const fj_http_req *r) { return &r->srv->cfg; }
void *fj_http_submit_ctx(const fj_http_req *r) { return r->submit_ctx; }

const char *fj_http_header(const fj_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *fj_http_arg(const fj_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct args_iter {
    bool (*fn)(void *ctx, const char *name, const char *value);
    void *ctx;
} args_iter;

static enum MHD_Result args_iter_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    args_iter *it = cls;
    return it->fn(it->ctx, key, value) ? MHD_YES : MHD_NO;
}

void fj_http_args_each(const fj_http_req *r, bool (*fn)(void *ctx, const char *name, const char *value),
                       void *ctx)
{
    args_iter it = {fn, ctx};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, args_iter_cb, &it);
}

void fj_http_reply_header(fj_http_req *r, const char *name, const char *value)
{
    if (r->n_hdr >= 8)
        return;
    const char *n = fj_arena_strdup(r->arena, name), *v = fj_arena_strdup(r->arena, value);
    if (!n || !v)
        return;
    r->hdr[r->n_hdr][0] = n;
    r->hdr[r->n_hdr][1] = v;
    r->n_hdr++;
}

const char *fj_http_body(const fj_http_req *r, size_t *len)
{
    const fj_buf *b = r->decoded_used ? &r->decoded : &r->raw;
    *len = b->len;
    return b->data ? b->data : "";
}

fj_store *fj_http_reader(fj_http_req *r, fj_err *err)
{
    if (tl_reader)
        return tl_reader;
    fj_server *s = r->srv;
    fj_store_opts opts = {.mode = FJ_STORE_READ, .job_gap_s = s->cfg.job_gap_s};
    fj_store *st = NULL;
    if (fj_store_open(s->cfg.db, &opts, &st, err) != FJ_OK)
        return NULL;
    pthread_mutex_lock(&s->readers_mu);
    if (s->n_readers < MAX_READERS) {
        s->readers[s->n_readers++] = st;
        tl_reader = st;
    }
    pthread_mutex_unlock(&s->readers_mu);
    if (!tl_reader) { /* registry full: do not cache, close after use is not possible here */
        fj_store_close(st);
        fj_err_set(err, FJ_EBUSY, NULL, "too many reader connections");
        return NULL;
    }
    return tl_reader;
}

fj_ts_engine *fj_http_ts_engine(fj_http_req *r)
{
    return fj_store_ts_engine(r->srv->store);
}

void fj_http_server_figures(const fj_http_req *r, fj_server_figures *out)
{
    fj_server *s = r->srv;
    *out = (fj_server_figures){.queued = fj_writer_queued(s->writer),
                               .queue_max = s->cfg.queue_max,
                               .connections = fj_guard_live(s->guard),
                               .in_flight = atomic_load(&s->in_flight),
                               .body_bytes = atomic_load(&s->body_bytes),
                               .read_mem_bytes = atomic_load(&s->read_mem.used),
                               .read_mem_refused_own = atomic_load(&s->read_mem.refused_own),
                               .read_mem_refused_pool = atomic_load(&s->read_mem.refused_pool)};
    fj_read_pool_stats_of(s->reads, &out->reads);
}

fj_writer *fj_server_writer(fj_server *s)
{
    return s->writer;
}

/* --- answers --------------------------------------------------------------------------- */

void fj_http_reply(fj_http_req *r, int status, const char *content_type, const char *body, size_t len)
{
    /* The answer was built within the budget; its copy must not be refused by what the query
     * itself used up (the handler frees its buffer right after). */
    if (r->is_read)
        fj_arena_set_budget(r->arena, NULL);
    r->status = status;
    r->resp_type = content_type ? content_type : "application/json";
    r->resp = fj_arena_strndup(r->arena, body, len);
    r->resp_len = r->resp ? len : 0;
    if (!r->resp)
        r->status = 503;
    r->state = REQ_ANSWERED;
}

/* A storage failure (path "db", a 5xx) is the server's business: its detail names the database's
 * host, port, user and name, which no client needs. The client is told that the database is
 * unavailable; the detail goes to the log (already redacted by the backends), one line per 10 s
 * with the number of answers since, so an outage does not flood the log. */
static bool storage_failure_hidden(fj_status st, const fj_err *err, fj_err *shown)
{
    if (!err || strcmp(err->path, "db") != 0 || fj_status_http(st) < 500)
        return false;
    static atomic_llong last_ns, since;
    atomic_fetch_add(&since, 1);
    long long now = fj_mono_ns(), last = atomic_load(&last_ns);
    if ((!last || now - last >= 10000000000LL) && atomic_compare_exchange_strong(&last_ns, &last, now)) {
        long long n = atomic_exchange(&since, 0);
        fj_warn("http: answered %lld request%s: %s", n, n == 1 ? "" : "s", err->message);
    }
    fj_err_set(shown, st, "db", "%s",
               st == FJ_EBUSY || st == FJ_EIO ? "the database is unavailable; retry later"
                                              : "database error; the server's log has the detail");
    return true;
}

void fj_http_reply_error(fj_http_req *r, fj_status st, const fj_err *err)
{
    fj_err hidden, limit;
    /* Whatever error a stopped read ran into (the sink's refusal, SQLite's interrupt, an
     * allocation refused), the reason it was stopped is the answer. */
    if (fj_http_read_limit(r, &limit)) {
        st = fj_http_read_limit_status(r);
        err = &limit;
    } else if (storage_failure_hidden(st, err, &hidden)) {
        err = &hidden;
    }
    fj_buf b;
    fj_buf_init(&b, 4096);
    if (r->route && r->route->errors == FJ_ERRORS_INFLUX) {
        /* one string: where (a line, a parameter) before what, as fjord's path says it */
        char msg[sizeof err->path + sizeof err->message + 4];
        snprintf(msg, sizeof msg, "%s%s%s", err && err->path[0] ? err->path : "", err && err->path[0] ? ": " : "",
                 err && err->message[0] ? err->message : fj_status_name(st));
        fj_buf_puts(&b, "{\"error\":");
        fj_buf_json_str(&b, msg);
        fj_buf_puts(&b, "}\n");
        fj_http_reply_header(r, "X-Influxdb-Version", "1.6.7");
    } else {
        fj_buf_puts(&b, "{\"error\":{\"code\":");
        fj_buf_json_str(&b, err && err->code[0] ? err->code : fj_status_name(st));
        fj_buf_puts(&b, ",\"message\":");
        fj_buf_json_str(&b, err && err->message[0] ? err->message : fj_status_name(st));
        if (err && err->path[0]) {
            fj_buf_puts(&b, ",\"path\":");
            fj_buf_json_str(&b, err->path);
        }
        fj_buf_puts(&b, "}}\n");
    }
    r->reason = fj_arena_strdup(r->arena, err && err->code[0] ? err->code : fj_status_name(st));
    fj_http_reply(r, fj_status_http(st), NULL, b.data ? b.data : "{}", b.len);
    fj_buf_free(&b);
}

bool fj_http_read_limit(fj_http_req *r, fj_err *err)
{
    if (!r->is_read)
        return false;
    fj_cancel_why why = fj_cancel_check(&r->job.cancel);
    if (why) {
        fj_cancel_err(why, r->srv->cfg.query_timeout_s, err);
        return true;
    }
    fj_mem_over over = fj_mem_over_of(&r->mem);
    if (over == FJ_MEM_OVER_OWN) {
        fj_err_set(err, FJ_ETOOBIG, "query-memory",
                   "the query needs more than %zu MiB (query-memory); ask for less: a shorter time range, fewer "
                   "series, wider buckets",
                   r->srv->cfg.query_memory >> 20);
        snprintf(err->code, sizeof err->code, "query_memory");
        return true;
    }
    if (over == FJ_MEM_OVER_POOL) {
        fj_err_set(err, FJ_EBUSY, "query-memory-total",
                   "the reads in flight hold all the memory reads may use (%zu MiB, query-memory-total); retry later",
                   r->srv->cfg.query_memory_total >> 20);
        snprintf(err->code, sizeof err->code, "query_memory_total");
        return true;
    }
    return false;
}

fj_status fj_http_read_limit_status(const fj_http_req *r)
{
    if (!r->is_read)
        return FJ_OK;
    if (fj_cancel_check(&r->job.cancel))
        return FJ_EBUSY;
    fj_mem_over over = fj_mem_over_of(&r->mem);
    return over == FJ_MEM_OVER_OWN ? FJ_ETOOBIG : over == FJ_MEM_OVER_POOL ? FJ_EBUSY : FJ_OK;
}

static void reply_simple(fj_http_req *r, fj_status st, const char *path, const char *fmt, const char *arg)
{
    fj_err err = {0};
    fj_err_set(&err, st, path, fmt, arg);
    fj_http_reply_error(r, st, &err);
}

/* Every answer goes to the counters and the request log (which writes refusals, and the rest
 * only with log-requests). */
static void log_answer(fj_http_req *r)
{
    char reason[32];
    if (!r->reason)
        snprintf(reason, sizeof reason, "http_%d", r->status);
    const char *cred = r->who.name[0] ? r->who.name : r->cred_name;
    fj_reqlog_entry e = {
        .client = r->client,
        .via = r->via,
        .credential = cred,
        .method = r->method,
        .path = r->path,
        .status = r->status,
        .reason = r->status >= 400 ? (r->reason ? r->reason : reason) : NULL,
        .bytes = r->wire_len,
        .bytes_in = r->body_in,
        .duration_us = r->start_ns ? (fj_mono_ns() - r->start_ns) / 1000 : -1,
    };
    fj_reqlog_answer(r->srv->reqlog, &e);
    fj_prom_request(r->route ? (int)(r->route - r->srv->routes) : -1, r->status, r->body_in, r->wire_len);
    /* Only names that have a credential: an unknown Basic user name must not grow a series. */
    if (r->status >= 400 && (r->who.name[0] || (r->cred_name && r->cred_known)))
        fj_prom_credential_refused(cred);
}

/* Does a Connection header's value hold "close" (the client ends the connection after this)? */
static bool names_close(const char *conn)
{
    for (const char *p = conn; p && *p; p++)
        if (strncasecmp(p, "close", 5) == 0)
            return true;
    return false;
}

static bool has_reply_header(const fj_http_req *r, const char *name)
{
    for (int i = 0; i < r->n_hdr; i++)
        if (strcasecmp(r->hdr[i][0], name) == 0)
            return true;
    return false;
}

/* Headers every answer carries. No answer of this server but the dashboard's pages is meant to
 * be rendered by a browser: one opened there anyway (a JSON error, a CSV, an SVG reached by a
 * link) runs no script, loads nothing and is not sniffed into HTML. The dashboard sets its own
 * strict policy (dashboard.c), which is kept. A connection kept alive is told how long it may
 * stay idle, so clients (fjord-push) reconnect before the server closes it under them. */
static void add_edge_headers(const fj_http_req *r, struct MHD_Response *resp)
{
    if (!has_reply_header(r, "Content-Security-Policy"))
        MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'; sandbox");
    if (!has_reply_header(r, "X-Content-Type-Options"))
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    const char *conn = fj_http_header(r, MHD_HTTP_HEADER_CONNECTION);
    if (!r->early && !has_reply_header(r, "Connection") && !names_close(conn)) {
        char ka[32];
        snprintf(ka, sizeof ka, "timeout=%u", r->srv->cfg.keepalive_timeout_s);
        MHD_add_response_header(resp, "Keep-Alive", ka);
    }
}

/* Answers smaller than this go as they are: gzip's header and a round trip's worth of bytes. */
#define GZIP_MIN_BYTES 1024

/* Whether answers of this type shrink under gzip (text; not images or what is already packed). */
static bool compressible(const char *type)
{
    return !type || !strncmp(type, "application/json", 16) || !strncmp(type, "text/", 5) ||
           !strncmp(type, "image/svg+xml", 13) || !strncmp(type, "application/x-ndjson", 20);
}

/* The answer's body gzipped (level 1: the JSON and CSV answers shrink some tenfold for little CPU)
 * when the client takes gzip and it is worth it; the handler's own encoding (the dashboard's
 * gzipped files) is left alone. *vary: the answer depends on Accept-Encoding. */
static const char *answer_body(fj_http_req *r, size_t *len, bool *gzipped, bool *vary)
{
    *len = r->resp_len;
    *gzipped = *vary = false;
    if (!r->resp || r->resp_len < GZIP_MIN_BYTES || !compressible(r->resp_type) ||
        has_reply_header(r, "Content-Encoding"))
        return r->resp;
    *vary = true;
    if (!fj_codec_accepts_gzip(fj_http_header(r, "Accept-Encoding")))
        return r->resp;
    size_t cap = fj_codec_gzip_bound(r->resp_len);
    char *gz = fj_arena_alloc(r->arena, cap);
    size_t n = gz ? fj_codec_gzip(r->resp, r->resp_len, 1, gz, cap) : 0;
    if (!n)
        return r->resp;
    *len = n;
    *gzipped = true;
    return gz;
}

static enum MHD_Result send_answer(fj_http_req *r)
{
    fj_guard_busy(r->gc);
    size_t len;
    bool gzipped, vary;
    const char *body = answer_body(r, &len, &gzipped, &vary);
    r->wire_len = len;
    log_answer(r);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body ? (char *)body : (char *)"",
                                                                MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->resp_type ? r->resp_type : "application/json");
    if (gzipped)
        MHD_add_response_header(resp, "Content-Encoding", "gzip");
    if (vary)
        MHD_add_response_header(resp, "Vary", "Accept-Encoding");
    bool retry_after = false;
    for (int i = 0; i < r->n_hdr; i++) {
        MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
        retry_after |= strcasecmp(r->hdr[i][0], "Retry-After") == 0;
    }
    if ((r->status == 503 || r->status == 429) && !retry_after)
        MHD_add_response_header(resp, "Retry-After", "5");
    add_edge_headers(r, resp);
    fj_guard_answering(r->gc);
    /* A script that says so (the dashboard: X-Requested-With) gets no Basic challenge, so the
     * browser does not put its own login dialog over the page's. */
    if (r->status == 401 && !fj_http_header(r, "X-Requested-With"))
        MHD_add_response_header(resp, "WWW-Authenticate", "Basic realm=\"fjord\"");
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* --- writer hand-off ------------------------------------------------------------------- */

static void write_done(fj_write_req *w)
{
    fj_http_req *r = w->ctx;
    r->on_done(r, w);
    if (r->state != REQ_ANSWERED)
        fj_http_reply_error(r, FJ_EINTERNAL, NULL);
    fj_batch_free(w->batch);
    w->batch = NULL;
    MHD_resume_connection(r->conn);
}

void fj_http_submit(fj_http_req *r, fj_batch *batch, fj_write_count *counts,
                    void (*on_done)(fj_http_req *r, fj_write_req *w), void *ctx)
{
    r->on_done = on_done;
    r->submit_ctx = ctx;
    r->wreq = (fj_write_req){.batch = batch, .counts = counts, .done = write_done, .ctx = r};
    r->state = REQ_WAITING;
    /* Suspend before submitting: the writer may finish and resume before we return. */
    MHD_suspend_connection(r->conn);
    if (fj_writer_submit(r->srv->writer, &r->wreq) != FJ_OK) {
        fj_batch_free(batch);
        r->wreq.batch = NULL;
        reply_simple(r, FJ_EBUSY, NULL, "%s", "the write queue is full; retry later");
        MHD_resume_connection(r->conn);
    }
}

/* --- pipeline -------------------------------------------------------------------------- */

static bool method_allowed(const char *methods, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = methods; (p = strstr(p, method)); p += n)
        if ((p == methods || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

static const fj_route *find_route(fj_server *s, const char *path, const char *method, const char **rest,
                                  bool *path_known)
{
    *path_known = false;
    for (const fj_route *rt = s->routes; rt->path; rt++) {
        size_t n = strlen(rt->path);
        bool match;
        if (n && rt->path[n - 1] == '*') {
            match = strncmp(path, rt->path, n - 1) == 0 && path[n - 1] != '\0';
            if (match)
                *rest = path + n - 1;
        } else {
            match = strcmp(path, rt->path) == 0;
            /* Tolerate one trailing slash: cc-backend clients post to /api/jobs/start_job/. */
            if (!match && strncmp(path, rt->path, n) == 0 && path[n] == '/' && path[n + 1] == '\0')
                match = true;
            if (match)
                *rest = NULL;
        }
        if (!match)
            continue;
        *path_known = true;
        if (method_allowed(rt->methods, method))
            return rt;
    }
    return NULL;
}

/* Content-Length above 0, or any Transfer-Encoding (chunked: length unknown). */
static bool request_has_body(const fj_http_req *r)
{
    const char *len = fj_http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (len && strtoull(len, NULL, 10) > 0)
        return true;
    return fj_http_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* Takes n bytes of the budget shared by every request body in flight (body-memory). */
static bool reserve_body(fj_http_req *r, size_t n)
{
    fj_server *s = r->srv;
    size_t before = atomic_fetch_add(&s->body_bytes, n);
    if (before + n > s->cfg.body_memory || before + n < before) {
        atomic_fetch_sub(&s->body_bytes, n);
        return false;
    }
    r->reserved += n;
    return true;
}

static void release_body(fj_http_req *r)
{
    atomic_fetch_sub(&r->srv->body_bytes, r->reserved);
    r->reserved = 0;
}

/* Route, limits, authentication and admission, from the headers alone. Leaves r answered (the
 * answer is sent before any body is read, and libmicrohttpd then closes the connection without
 * reading it), deferred (an answer held back: failed authentication over its limit) or in
 * REQ_BODY (admitted). */
/* The TLS session of an HTTPS request; NULL for plain HTTP. */
static gnutls_session_t tls_session(const fj_http_req *r)
{
    if (!r->srv->daemon_tls) /* (a thread pool's connections name their worker, not this daemon) */
        return NULL;
    const union MHD_ConnectionInfo *t = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return t ? (gnutls_session_t)t->tls_session : NULL;
}

/* Did a proxy relay this request? Any proxy, trusted or not: dev mode's "from this host" must not
 * extend to whoever a proxy on this host relays for. */
static bool relayed(const fj_http_req *r)
{
    return r->via || fj_http_header(r, "X-Forwarded-For") || fj_http_header(r, "Forwarded") ||
           fj_http_header(r, "X-Real-IP");
}

typedef struct header_join {
    fj_buf *out;
    const char *name;
} header_join;

static enum MHD_Result join_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    header_join *j = cls;
    if (value && !strcasecmp(key, j->name)) {
        if (j->out->len)
            fj_buf_puts(j->out, ", ");
        fj_buf_puts(j->out, value);
    }
    return MHD_YES;
}

/* Names the client: the peer, or, when the peer is a trusted proxy, the client its forwarded
 * header names (proxy.h). A header repeated on several lines is one list, in order. */
static void name_client(fj_http_req *r)
{
    fj_server *s = r->srv;
    const union MHD_ConnectionInfo *ad = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char peer[INET6_ADDRSTRLEN] = "-";
    const struct sockaddr *sa = ad ? ad->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, peer, sizeof peer);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, peer, sizeof peer);
    r->client = fj_arena_strdup(r->arena, peer);
    if (!r->client)
        r->client = "-";
    if (!s->proxies.n || !fj_proxies_trust_text(&s->proxies, peer))
        return;
    fj_buf joined;
    fj_buf_init(&joined, s->cfg.conn_memory ? s->cfg.conn_memory : 65536);
    header_join j = {&joined, s->proxies.header == FJ_FWD_FORWARDED ? "Forwarded" : "X-Forwarded-For"};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, join_header, &j);
    char client[INET6_ADDRSTRLEN];
    if (joined.data && fj_proxies_client(&s->proxies, joined.data, client, sizeof client)) {
        const char *c = fj_arena_strdup(r->arena, client);
        if (c) {
            r->via = r->client;
            r->client = c;
        }
    }
    fj_buf_free(&joined);
}

/* A read gets its budget from here on (the arena's chunks so far included) and its deadline,
 * counted from its headers. */
static void mark_read(fj_http_req *r)
{
    const fj_config *cfg = &r->srv->cfg;
    r->is_read = true;
    r->mem.limit = cfg->query_memory;
    r->mem.pool = &r->srv->read_mem;
    fj_arena_set_budget(r->arena, &r->mem);
    r->job.fd = -1;
    r->job.deadline_ns = cfg->query_timeout_s ? r->start_ns + (int64_t)cfg->query_timeout_s * 1000000000LL : 0;
}

/* RFC 9112 §6.1 and §6.3: a request with both Content-Length and Transfer-Encoding, or with a
 * transfer coding other than chunked, has no framing two parties agree on (request smuggling
 * through a proxy that reads it the other way). libmicrohttpd 0.9.75 lets Transfer-Encoding win
 * and keeps the connection; it is refused here, and the early answer closes the connection. */
static bool refuse_framing(fj_http_req *r)
{
    const char *te = fj_http_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (!te)
        return false;
    fj_err err = {0};
    if (fj_http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH))
        fj_err_set(&err, FJ_EINVAL, "Transfer-Encoding", "%s",
                   "a request with both Content-Length and Transfer-Encoding is refused (RFC 9112)");
    else if (strcasecmp(te, "chunked") != 0)
        fj_err_set(&err, FJ_EINVAL, "Transfer-Encoding", "%s", "the only transfer coding understood is chunked");
    else
        return false;
    snprintf(err.code, sizeof err.code, "bad_framing");
    fj_http_reply_error(r, FJ_EINVAL, &err);
    fj_http_reply_header(r, "Connection", "close");
    return true;
}

static void admit(fj_http_req *r)
{
    fj_server *s = r->srv;
    if (refuse_framing(r))
        return;
    if (atomic_load(&s->draining)) {
        reply_simple(r, FJ_EBUSY, NULL, "%s", "server is shutting down; retry later");
        return;
    }
    if (r->via && !fj_guard_forwarded(s->guard, r->gc, r->client)) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ELIMITED, "client", "%s has %u requests in progress through the proxy (max-per-ip)",
                   r->client, s->cfg.max_per_ip);
        snprintf(err.code, sizeof err.code, "per_ip_limit");
        fj_http_reply_error(r, FJ_ELIMITED, &err);
        return;
    }
    gnutls_session_t tls = tls_session(r);
    if (tls && fj_tls_wants_client_cert(s->tls)) {
        fj_err err = {0};
        fj_status st = fj_tls_verify_client(s->tls, tls, &err);
        if (st != FJ_OK) {
            snprintf(err.code, sizeof err.code, "client_certificate");
            fj_http_reply_error(r, st, &err);
            return;
        }
    }
    bool known = false;
    r->route = find_route(s, r->path, r->method, &r->path_rest, &known);
    if (!r->route) {
        if (known)
            reply_simple(r, FJ_EMETHOD, NULL, "method %s not allowed here", r->method);
        else
            reply_simple(r, FJ_ENOTFOUND, NULL, "no such endpoint: %s", r->path);
        return;
    }
    bool body = request_has_body(r);
    if (body && r->route->body == FJ_NO_BODY) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ETOOBIG, "body", "%s takes no request body", r->route->path);
        fj_http_reply_error(r, FJ_ETOOBIG, &err);
        return;
    }
    const char *len = fj_http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (len && strtoull(len, NULL, 10) > s->cfg.max_body) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ETOOBIG, "body", "body of %s bytes exceeds the limit of %zu", len, s->cfg.max_body);
        fj_http_reply_error(r, FJ_ETOOBIG, &err);
        return;
    }
    if (r->route->access != FJ_ACCESS_NONE) {
        fj_credential cred;
        fj_err err = {0};
        const char *authz = fj_http_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
        const char *xtok = authz ? NULL : fj_http_header(r, "X-Auth-Token"); /* cc-metric-store's header */
        char bearer[2100];
        if (xtok && strlen(xtok) < sizeof bearer - 8) {
            snprintf(bearer, sizeof bearer, "Bearer %s", xtok);
            authz = bearer;
        }
        fj_status st = fj_auth_parse_header(authz, &cred);
        if (st == FJ_OK && cred.kind == FJ_CRED_NONE) {
            /* InfluxDB 1.x clients send credentials as u/p query parameters. */
            const char *u = fj_http_arg(r, "u"), *p = fj_http_arg(r, "p");
            if (u && p && strlen(u) < sizeof cred.user && strlen(p) < sizeof cred.secret) {
                cred.kind = FJ_CRED_BASIC;
                snprintf(cred.user, sizeof cred.user, "%s", u);
                snprintf(cred.secret, sizeof cred.secret, "%s", p);
            }
        }
        if (st != FJ_OK) {
            fj_prom_auth_failure("malformed");
            reply_simple(r, FJ_EAUTH, "Authorization", "%s", "malformed Authorization header");
            return;
        }
        if (cred.kind == FJ_CRED_BASIC)
            r->cred_name = fj_arena_strdup(r->arena, cred.user);
        bool metrics = r->route->access == FJ_ACCESS_METRICS;
        fj_auth_verdict verdict = {0};
        if (metrics && cred.kind == FJ_CRED_BEARER && s->cfg.metrics_token[0] &&
            fj_auth_secret_equal(cred.secret, s->cfg.metrics_token)) {
            snprintf(r->who.name, sizeof r->who.name, "%s", "metrics-token");
            r->who.read_only = true;
        } else if (cred.kind == FJ_CRED_NONE && s->cfg.dev_mode && !metrics && relayed(r)) {
            reply_simple(r, FJ_EAUTH, "Authorization", "%s",
                         "dev-mode accepts requests without credentials only from this host, and this one was "
                         "relayed by a proxy (it carries X-Forwarded-For, Forwarded or X-Real-IP)");
            return;
        } else if (cred.kind == FJ_CRED_NONE && s->cfg.dev_mode && !metrics) {
            r->who.anonymous = true;
        } else if ((st = fj_auth_check_from(s->auth, &cred, r->client, &r->who, &err, &verdict)) !=
                   FJ_OK) {
            fj_prom_auth_failure(st == FJ_ELIMITED ? "rate_limited" : "unauthorized");
            r->cred_known = cred.kind == FJ_CRED_BASIC && fj_auth_name_known(s->auth, cred.user);
            fj_http_reply_error(r, st, &err);
            if (st == FJ_ELIMITED) {
                char retry[16];
                snprintf(retry, sizeof retry, "%u", verdict.retry_after_s);
                fj_http_reply_header(r, "Retry-After", retry);
                fj_http_reply_header(r, "Connection", "close"); /* the guesser's slot is freed */
                if (verdict.delay_ms) {
                    r->state = REQ_DEFERRED;
                    r->defer_ms = verdict.delay_ms;
                }
            }
            return;
        }
        if (metrics && !r->who.read_only && !r->who.any_cluster) {
            reply_simple(r, FJ_EFORBIDDEN, NULL, "%s", "/metrics needs a read credential or the metrics-token");
            return;
        }
        if (r->route->access == FJ_ACCESS_WRITE && r->who.read_only) {
            reply_simple(r, FJ_EFORBIDDEN, NULL, "%s", "a read-only credential cannot write");
            return;
        }
        if (r->route->access == FJ_ACCESS_WRITE && fj_writer_queued(s->writer) >= s->cfg.queue_max) {
            reply_simple(r, FJ_EBUSY, NULL, "%s", "the write queue is full; retry later");
            return;
        }
    }
    if (r->route->access == FJ_ACCESS_READ)
        mark_read(r);
    /* A known length is reserved whole now; a chunked body as it arrives. */
    const char *body_len = body ? len : NULL;
    if (body_len && !reserve_body(r, (size_t)strtoull(body_len, NULL, 10))) {
        reply_simple(r, FJ_EBUSY, "body", "%s", "too many request bodies in flight (body-memory); retry later");
        return;
    }
    r->state = REQ_BODY;
}

/* --- the raw request line --------------------------------------------------------------- */

/* libmicrohttpd decodes the path and the query in place, and two things get lost on the way: a
 * %00 in the path cuts it short (/api/v1/jobs/%00/profile would be served as /api/v1/jobs/), and
 * when a query's parameters do not fit in the connection's memory pool, 0.9.75 queues a 431 and
 * then loses it (parse_initial_message_line ignores the failure): the client gets no answer at
 * all. Both are judged on the raw URI, before libmicrohttpd decodes or parses it (its URI log
 * callback); the verdict reaches on_request as the connection's first context: NULL, or one of
 * these marks. */
typedef struct uri_mark {
    int http;
    const char *path, *message;
} uri_mark;

enum {
    MAX_QUERY_ARGS = 256,    /* no endpoint takes more than a few dozen */
    QUERY_ARG_POOL_COST = 64 /* libmicrohttpd's record per parameter: 56 bytes on 64-bit */
};
static const uri_mark MARK_NUL_PATH = {400, "path", "the path holds a NUL byte (%00)"};
static const uri_mark MARK_MANY_ARGS = {414, "query", "more than 256 query parameters"};
static const uri_mark MARK_ARGS_MEMORY = {414, "query",
                                          "the query's parameters need more memory than a connection has "
                                          "(connection-memory)"};

/* A request begins (its line is in): a kept-alive connection is no longer idle, and
 * libmicrohttpd's own idle timeout is the request's again (on_completed raised it). */
static void request_line_in(const fj_server *s, struct MHD_Connection *conn)
{
    fj_guard_request_line(fj_guard_of(conn));
    MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)s->cfg.timeout_s);
}

static bool is_uri_mark(const void *p)
{
    return p == &MARK_NUL_PATH || p == &MARK_MANY_ARGS || p == &MARK_ARGS_MEMORY;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    const fj_server *s = cls;
    request_line_in(s, conn);
    const char *q = strchr(uri, '?');
    size_t path_len = q ? (size_t)(q - uri) : strlen(uri), n_args = 0;
    const uri_mark *m = NULL;
    for (const char *p = uri; !m && (p = memchr(p, '%', path_len - (size_t)(p - uri))); p++)
        if (p + 2 < uri + path_len && p[1] == '0' && p[2] == '0')
            m = &MARK_NUL_PATH;
    for (const char *p = q; p; p = strchr(p + 1, '&'))
        n_args++; /* at most: libmicrohttpd splits at '&' and skips nothing else */
    size_t pool = s->cfg.conn_memory ? s->cfg.conn_memory : 32 * 1024; /* libmicrohttpd's default */
    if (!m && n_args > MAX_QUERY_ARGS)
        m = &MARK_MANY_ARGS;
    else if (!m && q && strlen(uri) + n_args * QUERY_ARG_POOL_COST > pool / 4 * 3)
        m = &MARK_ARGS_MEMORY;
    if (m && q) /* refused: the query is not parsed, and its memory stays free for the answer */
        ((char *)uri)[q - uri + 1] = '\0';
    return (void *)m;
}

static enum MHD_Result find_nul_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                    const char *value, size_t value_size)
{
    (void)kind;
    if (memchr(key, '\0', key_size) || (value && memchr(value, '\0', value_size))) {
        *(const char **)cls = key;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Answers a request refused for the shape of its URI (a mark, or a query parameter holding a
 * NUL byte after decoding); false when there is none. */
static bool refuse_uri(fj_http_req *r, const uri_mark *mark)
{
    fj_err err = {0};
    if (mark) {
        fj_err_set(&err, FJ_EINVAL, mark->path, "%s", mark->message);
        fj_http_reply_error(r, FJ_EINVAL, &err);
        if (r->status == 400)
            r->status = mark->http; /* 414 has no fj_status of its own */
        return true;
    }
    const char *nul_key = NULL;
    MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, find_nul_arg, &nul_key);
    if (!nul_key)
        return false;
    fj_err_set(&err, FJ_EINVAL, nul_key, "query parameter '%.100s' holds a NUL byte (%%00)", nul_key);
    fj_http_reply_error(r, FJ_EINVAL, &err);
    return true;
}

static void read_run(fj_read_job *j)
{
    fj_http_req *r = (fj_http_req *)((char *)j - offsetof(fj_http_req, job));
    fj_err err;
    if (fj_http_read_limit(r, &err)) /* cancelled while it waited: the drain, or its client left */
        fj_http_reply_error(r, fj_http_read_limit_status(r), &err);
    else
        r->route->handle(r);
    if (r->state != REQ_ANSWERED)
        fj_http_reply_error(r, FJ_EINTERNAL, NULL);
}

static void read_done(fj_read_job *j)
{
    fj_http_req *r = (fj_http_req *)((char *)j - offsetof(fj_http_req, job));
    MHD_resume_connection(r->conn); /* on_request sends the answer */
}

/* Hands a read to the read pool, its connection suspended until it is answered; a full queue is
 * answered 503 at once. True when handed over: the connection is then the pool's until resumed. */
static bool hand_to_readers(fj_http_req *r)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->job.fd = ci ? ci->connect_fd : -1;
    r->job.run = read_run;
    r->job.done = read_done;
    r->state = REQ_READING;
    /* Suspend before submitting: the read may end and resume before we return. */
    MHD_suspend_connection(r->conn);
    if (fj_read_pool_submit(r->srv->reads, &r->job) == FJ_OK)
        return true;
    MHD_resume_connection(r->conn);
    r->state = REQ_BODY;
    fj_err err = {0};
    fj_err_set(&err, FJ_EBUSY, "read-queue", "%u reads are waiting already (read-queue); retry later",
               r->srv->cfg.read_queue);
    snprintf(err.code, sizeof err.code, "read_queue");
    fj_http_reply_error(r, FJ_EBUSY, &err);
    return false;
}

/* Decodes the body and runs the handler, or hands a read to the read pool; true when handed over
 * (the request is answered from there, after its connection is resumed). */
static bool run_handler(fj_http_req *r)
{
    const char *enc = fj_http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (enc && *enc && strcasecmp(enc, "identity") != 0) {
        fj_err err = {0};
        fj_buf_init(&r->decoded, r->srv->cfg.max_decoded);
        fj_status st = fj_codec_decode(enc, r->raw.data ? r->raw.data : "", r->raw.len, &r->decoded, &err);
        if (st != FJ_OK) {
            fj_http_reply_error(r, st, &err);
            return false;
        }
        r->decoded_used = true;
        fj_buf_free(&r->raw);
        if (!reserve_body(r, r->decoded.len)) {
            reply_simple(r, FJ_EBUSY, "body", "%s", "too many request bodies in flight (body-memory); retry later");
            return false;
        }
    }
    if (r->is_read)
        return hand_to_readers(r);
    r->route->handle(r);
    return false;
}

/* Holds a refused request's answer back (REQ_DEFERRED) until the guard resumes it; answers at
 * once when the guard is stopping. */
static enum MHD_Result defer_answer(fj_http_req *r)
{
    MHD_suspend_connection(r->conn);
    if (fj_guard_defer(r->srv->guard, r->gc, r->defer_ms))
        return MHD_YES;
    MHD_resume_connection(r->conn);
    r->state = REQ_ANSWERED;
    return send_answer(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    fj_server *s = cls;
    fj_http_req *r = *con_cls;
    const uri_mark *mark = NULL;
    if (is_uri_mark(r)) {
        mark = (const uri_mark *)r;
        r = NULL;
    }
    if (!r) {
        r = fj_calloc(1, sizeof *r);
        fj_arena *a = r ? fj_arena_create() : NULL;
        if (!a) {
            fj_free(r);
            return MHD_NO; /* out of memory: drop the connection, the client retries */
        }
        r->arena = a;
        r->srv = s;
        r->conn = conn;
        r->method = method;
        r->path = url;
        r->gc = fj_guard_of(conn);
        r->start_ns = fj_mono_ns();
        name_client(r);
        fj_buf_init(&r->raw, s->cfg.max_body);
        atomic_fetch_add(&s->in_flight, 1);
        *con_cls = r;
        if (!refuse_uri(r, mark))
            admit(r);
        /* A refusal is answered now, from the headers: libmicrohttpd then neither reads nor
         * hands over the body, and closes the connection after the answer; a body still on its
         * way is read and discarded for a while first (the lingering close), or the client could
         * get a connection reset instead of the answer. */
        if (r->state == REQ_ANSWERED || r->state == REQ_DEFERRED) {
            r->early = true;
            if (request_has_body(r))
                fj_guard_linger(r->gc);
        }
        if (r->state == REQ_ANSWERED)
            return send_answer(r);
        if (r->state == REQ_DEFERRED)
            return defer_answer(r);
        fj_guard_request_started(r->gc, request_has_body(r));
        return MHD_YES;
    }
    if (r->state == REQ_DEFERRED) { /* resumed by the guard */
        r->state = REQ_ANSWERED;
        return send_answer(r);
    }
    if (*upload_size) {
        fj_guard_body_bytes(r->gc, *upload_size);
        r->body_in += *upload_size;
        if (r->state == REQ_BODY && !r->body_too_big) {
            /* A chunked body takes its share of the budget as it grows; past it the connection
             * is closed (no answer can be queued in the middle of an upload). */
            size_t need = r->raw.len + *upload_size;
            if (need > r->reserved && need <= s->cfg.max_body && !reserve_body(r, need - r->reserved)) {
                fj_reqlog_entry e = {.client = r->client, .via = r->via, .credential = r->who.name, .method = r->method,
                                     .path = r->path, .reason = "body_memory", .duration_us = -1};
                fj_reqlog_refusal(s->reqlog, &e);
                return MHD_NO;
            }
            fj_status st = fj_buf_append(&r->raw, upload_data, *upload_size);
            if (st == FJ_ETOOBIG) {
                r->body_too_big = true;
                fj_buf_free(&r->raw);
            } else if (st != FJ_OK) {
                reply_simple(r, FJ_ENOMEM, NULL, "%s", "out of memory; retry later");
            }
        }
        *upload_size = 0; /* consumed (or discarded after an early answer) */
        return MHD_YES;
    }
    if (r->state == REQ_BODY) {
        fj_guard_busy(r->gc);
        if (r->body_too_big) {
            fj_err err = {0};
            fj_err_set(&err, FJ_ETOOBIG, "body", "body exceeds the limit of %zu bytes", s->cfg.max_body);
            fj_http_reply_error(r, FJ_ETOOBIG, &err);
        } else if (run_handler(r)) {
            return MHD_YES; /* the read pool's now; it resumes the connection once answered */
        }
    }
    if (r->state == REQ_WAITING)
        return MHD_YES; /* suspended; resumed by the writer */
    if (r->state == REQ_ANSWERED)
        return send_answer(r);
    return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    fj_server *s = cls;
    fj_http_req *r = *con_cls;
    fj_guard_request_done(fj_guard_of(conn));
    /* Between requests the guard closes an idle connection at keepalive-timeout, quietly;
     * libmicrohttpd's own idle timeout (`timeout`) must not close it first. */
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                  (unsigned)(s->cfg.keepalive_timeout_s > s->cfg.timeout_s
                                                 ? s->cfg.keepalive_timeout_s + 1 : s->cfg.timeout_s));
    if (!r || is_uri_mark(r)) { /* a mark: refused before on_request saw it, nothing allocated */
        *con_cls = NULL;
        return;
    }
    release_body(r);
    fj_buf_free(&r->raw);
    fj_buf_free(&r->decoded);
    fj_arena_destroy(r->arena);
    /* What a handler left charged (a buffer not freed) goes back to the reads' pool. */
    fj_mem_uncharge(&r->mem, fj_mem_used(&r->mem));
    fj_free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&s->in_flight, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    fj_warn("http: %s", line);
}

static void flush_reqlog(void *ctx)
{
    fj_reqlog_flush(ctx);
}

/* Enough descriptors for every connection libmicrohttpd may hold, plus the database's: the soft
 * limit is often 1024, below the default connection limit. */
static void raise_fd_limit(unsigned connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)connections + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        fj_warn("open files limited to %llu, below the %llu that %u connections need: raise LimitNOFILE",
                (unsigned long long)rl.rlim_cur, (unsigned long long)want, connections);
}

/* An address as libmicrohttpd binds it; "localhost" is 127.0.0.1. */
static fj_status bind_addr(const char *opt, const char *value, struct sockaddr_storage *ss, unsigned *flags,
                           unsigned *port, fj_err *err)
{
    char host[256];
    fj_status st = fj_config_split_addr(opt, value, host, sizeof host, port, err);
    if (st != FJ_OK)
        return st;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)*port);
    } else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)*port);
        *flags |= MHD_USE_IPv6;
    } else {
        return fj_err_set(err, FJ_EINVAL, opt, "%s host '%s' is not an IP address", opt, host);
    }
    return FJ_OK;
}

/* One listener. Both share the handlers, the guard (so max-connections counts both) and the
 * writer; the HTTPS one asks tls.c for its certificate at every handshake. */
static fj_status start_daemon(fj_server *s, bool tls, unsigned hard_limit, struct MHD_Daemon **out, unsigned *bound,
                              fj_err *err)
{
    const fj_config *cfg = &s->cfg;
    const char *opt = tls ? "listen-tls" : "listen", *addr = tls ? cfg->listen_tls : cfg->listen;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    struct sockaddr_storage ss;
    unsigned port;
    fj_status st = bind_addr(opt, addr, &ss, &flags, &port, err);
    if (st != FJ_OK)
        return st;
    /* The TLS options go in an array, empty for plain HTTP: libmicrohttpd warns about TLS options
     * given to a daemon without MHD_USE_TLS. MHD_OPTION_HTTPS_MEM_TRUST only makes it ask clients
     * for a certificate; tls.c verifies it against the client CA in force. */
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)fj_tls_retrieve_cert},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)cfg->tls_priorities},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)fj_tls_client_ca_pem(s->tls)},
        {MHD_OPTION_END, 0, NULL},
    };
    if (tls) {
        flags |= MHD_USE_TLS;
        if (!fj_tls_client_ca_pem(s->tls))
            tls_opts[2].option = MHD_OPTION_END;
    }
    *out = MHD_start_daemon(flags, (uint16_t)port, fj_guard_accept, s->guard, on_request, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, as MHD asks */
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads,
                            MHD_OPTION_CONNECTION_LIMIT, hard_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->conn_memory,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, fj_guard_notify, s->guard,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
                            MHD_OPTION_ARRAY, tls ? tls_opts : tls_opts + 3,
                            MHD_OPTION_END);
    if (!*out)
        return fj_err_set(err, FJ_EIO, opt, "cannot listen on %s (in use or not permitted%s)", addr,
                          tls ? ", or the TLS settings were refused: see the lines above" : "");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(*out, MHD_DAEMON_INFO_BIND_PORT);
    *bound = info ? info->port : port;
    return FJ_OK;
}

static void free_server(fj_server *s)
{
    if (s->daemon_tls)
        MHD_stop_daemon(s->daemon_tls);
    fj_read_pool_stop(s->reads); /* before the daemons: every suspended read is resumed first */
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    fj_writer_stop(s->writer);
    fj_guard_free(s->guard); /* after the daemons: their CLOSED notifications empty the guard's table */
    fj_reqlog_free(s->reqlog);
    fj_tls_free(s->tls);
    pthread_mutex_destroy(&s->readers_mu);
    fj_free(s);
}

fj_status fj_server_start(const fj_config *cfg, fj_store *const *stores, size_t n_stores, fj_auth *auth,
                          const fj_route *routes, fj_server **out, fj_err *err)
{
    fj_server *s = fj_calloc(1, sizeof *s);
    if (!s)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    s->cfg = *cfg;
    s->store = stores[0];
    s->auth = auth;
    s->routes = routes;
    pthread_mutex_init(&s->readers_mu, NULL);
    fj_status st;
    if ((st = fj_proxies_set_header(&s->proxies, cfg->forwarded_header, err)) != FJ_OK ||
        (st = fj_proxies_parse(cfg->trusted_proxies, &s->proxies, err)) != FJ_OK) {
        free_server(s);
        return st;
    }
    if (cfg->listen_tls[0]) {
        if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
            free_server(s);
            return fj_err_set(err, FJ_EINVAL, "listen-tls", "this libmicrohttpd is built without TLS");
        }
        fj_tls_files files = {cfg->tls_cert, cfg->tls_key, cfg->tls_client_ca};
        if ((st = fj_tls_new(&files, &s->tls, err)) != FJ_OK) {
            free_server(s);
            return st;
        }
    }
    fj_auth_limits lim = {cfg->auth_fail_burst, cfg->auth_fail_rate, cfg->auth_fail_delay_ms};
    fj_auth_set_limits(auth, &lim);
    fj_reqlog_opts lo = {.burst = cfg->refusal_log_burst,
                         .window_s = 60,
                         .format = strcmp(cfg->log_request_format, "json") ? FJ_REQLOG_LOGFMT : FJ_REQLOG_JSON,
                         .every_request = cfg->log_requests};
    s->reqlog = fj_reqlog_new(&lo);
    fj_prom_init(routes);
    fj_guard_limits glim = {.max_connections = cfg->max_connections,
                            .header_timeout_s = cfg->header_timeout_s,
                            .keepalive_timeout_s = cfg->keepalive_timeout_s,
                            .body_timeout_s = cfg->body_timeout_s,
                            .body_min_rate = cfg->body_min_rate,
                            .max_per_ip = cfg->max_per_ip,
                            .proxies = &s->proxies,
                            .linger_timeout_s = cfg->linger_timeout_s,
                            .linger_bytes = cfg->linger_bytes};
    s->guard = s->reqlog ? fj_guard_start(&glim, s->reqlog, flush_reqlog, s->reqlog) : NULL;
    s->writer = s->guard ? fj_writer_start(stores, n_stores, cfg->queue_max, fj_config_group_commit_ms(cfg)) : NULL;
    if (!s->writer) {
        free_server(s);
        return fj_err_set(err, FJ_ENOMEM, NULL, "cannot start the writer thread");
    }
    s->read_mem.limit = cfg->query_memory_total;
    s->reads = fj_read_pool_start(cfg->read_threads ? cfg->read_threads : 4, cfg->read_queue);
    if (!s->reads) {
        free_server(s);
        return fj_err_set(err, FJ_ENOMEM, NULL, "cannot start the read threads");
    }
    /* The guard keeps live connections at max-connections by shedding the oldest idle one for
     * each new one (conn_guard.h); libmicrohttpd's own limit sits above it, for connections shed
     * but not closed yet, and stops accepting only if those pile up. The guard also applies
     * max-per-ip, which libmicrohttpd could not: a trusted proxy's connections are exempt. */
    unsigned hard_limit = cfg->max_connections + (cfg->max_connections / 4 > 16 ? cfg->max_connections / 4 : 16);
    /* Lingering sockets (linger.h) hold descriptors of their own, up to max-connections. */
    raise_fd_limit((cfg->listen_tls[0] ? 2 * hard_limit : hard_limit) +
                   (cfg->linger_timeout_s ? cfg->max_connections : 0));
    if ((st = start_daemon(s, false, hard_limit, &s->daemon, &s->port, err)) != FJ_OK ||
        (cfg->listen_tls[0] && (st = start_daemon(s, true, hard_limit, &s->daemon_tls, &s->tls_port, err)) != FJ_OK)) {
        free_server(s);
        return st;
    }
    *out = s;
    return FJ_OK;
}

unsigned fj_server_port(const fj_server *s)
{
    return s->port;
}

void fj_server_stop(fj_server *s, unsigned timeout_s)
{
    if (!s)
        return;
    atomic_store(&s->draining, true);
    /* Stop accepting new connections; requests already read are finished below. */
    struct MHD_Daemon *daemons[] = {s->daemon, s->daemon_tls};
    for (size_t i = 0; i < 2; i++) {
        MHD_socket lsock = daemons[i] ? MHD_quiesce_daemon(daemons[i]) : MHD_INVALID_SOCKET;
        if (lsock != MHD_INVALID_SOCKET)
            close(lsock);
    }
    fj_guard_stop(s->guard); /* deferred answers go out now */
    fj_read_pool_cancel_all(s->reads, FJ_CANCEL_SHUTDOWN); /* reads answer 503 at their next check */
    for (unsigned waited = 0; atomic_load(&s->in_flight) > 0 && waited < timeout_s * 100; waited++)
        usleep(10000);
    fj_writer_stop(s->writer); /* commits whatever is still queued and answers it */
    for (unsigned waited = 0; atomic_load(&s->in_flight) > 0 && waited < 200; waited++)
        usleep(10000);
    fj_read_pool_stop(s->reads); /* every read resumed and answered: no suspended connection left */
    s->reads = NULL;
    for (size_t i = 0; i < 2; i++)
        if (daemons[i])
            MHD_stop_daemon(daemons[i]);
    s->daemon = s->daemon_tls = NULL;
    s->writer = NULL; /* stopped above */
    for (size_t i = 0; i < s->n_readers; i++)
        fj_store_close(s->readers[i]);
    free_server(s);
}

unsigned fj_server_tls_port(const fj_server *s)
{
    return s->daemon_tls ? s->tls_port : 0;
}

fj_status fj_server_reload_tls(fj_server *s, fj_err *err)
{
    if (!s->tls)
        return FJ_OK;
    fj_status st = fj_tls_reload(s->tls, err);
    if (st == FJ_OK) {
        char desc[512];
        fj_tls_describe(s->tls, desc, sizeof desc);
        fj_info("tls: certificate reloaded: %s", desc);
    }
    return st;
}

void fj_server_tls_describe(fj_server *s, char *out, size_t cap)
{
    if (s->tls)
        fj_tls_describe(s->tls, out, cap);
    else if (cap)
        out[0] = '\0';
}
