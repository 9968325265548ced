/* http.c — libmicrohttpd integration. Requests that wait for the writer are suspended
 * (MHD_suspend_connection) rather than blocking a worker thread, so a few threads serve many
 * concurrent uploads and every one of them joins the next group commit. */
#include "http.h"

#include "alloc.h"
#include "codec.h"
#include "log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_READERS = 512 };

struct fj_server {
    struct MHD_Daemon *daemon;
    fj_config cfg;
    fj_store *store;
    fj_auth *auth;
    fj_writer *writer;
    const fj_route *routes;
    atomic_int in_flight;
    atomic_bool draining;
    unsigned port;
    pthread_mutex_t readers_mu;
    fj_store *readers[MAX_READERS];
    size_t n_readers;
};

typedef enum { REQ_NEW, REQ_BODY, REQ_WAITING, REQ_ANSWERED } req_state;

struct fj_http_req {
    fj_server *srv;
    struct MHD_Connection *conn;
    const fj_route *route;
    const char *method, *path, *path_rest;
    req_state state;
    fj_principal who;
    fj_arena *arena;
    fj_buf raw;           /* body as received */
    fj_buf decoded;       /* body after Content-Encoding, when there was one */
    bool decoded_used;
    bool body_too_big;
    /* the answer */
    int status;
    char *resp;
    size_t resp_len;
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
    const fj_store_ops *ops = fj_store_ops_of(r->srv->store);
    return ops->ts_engine ? ops->ts_engine(r->srv->store) : NULL;
}

fj_writer *fj_server_writer(fj_server *s)
{
    return s->writer;
}

/* --- answers --------------------------------------------------------------------------- */

void fj_http_reply(fj_http_req *r, int status, const char *content_type, const char *body, size_t len)
{
    r->status = status;
    r->resp_type = content_type ? content_type : "application/json";
    r->resp = fj_arena_strndup(r->arena, body, len);
    r->resp_len = r->resp ? len : 0;
    if (!r->resp)
        r->status = 503;
    r->state = REQ_ANSWERED;
}

void fj_http_reply_error(fj_http_req *r, fj_status st, const fj_err *err)
{
    fj_buf b;
    fj_buf_init(&b, 4096);
    fj_buf_puts(&b, "{\"error\":{\"code\":");
    fj_buf_json_str(&b, err && err->code[0] ? err->code : fj_status_name(st));
    fj_buf_puts(&b, ",\"message\":");
    fj_buf_json_str(&b, err && err->message[0] ? err->message : fj_status_name(st));
    if (err && err->path[0]) {
        fj_buf_puts(&b, ",\"path\":");
        fj_buf_json_str(&b, err->path);
    }
    fj_buf_puts(&b, "}}\n");
    fj_http_reply(r, fj_status_http(st), NULL, b.data ? b.data : "{}", b.len);
    fj_buf_free(&b);
}

static void reply_simple(fj_http_req *r, fj_status st, const char *path, const char *fmt, const char *arg)
{
    fj_err err = {0};
    fj_err_set(&err, st, path, fmt, arg);
    fj_http_reply_error(r, st, &err);
}

static enum MHD_Result send_answer(fj_http_req *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (char *)"", MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->resp_type ? r->resp_type : "application/json");
    for (int i = 0; i < r->n_hdr; i++)
        MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
    if (r->status == 503 || r->status == 429)
        MHD_add_response_header(resp, "Retry-After", "5");
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

static void admit(fj_http_req *r)
{
    fj_server *s = r->srv;
    if (atomic_load(&s->draining)) {
        reply_simple(r, FJ_EBUSY, NULL, "%s", "server is shutting down; retry later");
        return;
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
            reply_simple(r, FJ_EAUTH, "Authorization", "%s", "malformed Authorization header");
            return;
        }
        if (cred.kind == FJ_CRED_NONE && s->cfg.dev_mode) {
            r->who.anonymous = true;
        } else if (fj_auth_check(s->auth, &cred, &r->who, &err) != FJ_OK) {
            fj_http_reply_error(r, FJ_EAUTH, &err);
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
    r->state = REQ_BODY;
}

static void run_handler(fj_http_req *r)
{
    const char *enc = fj_http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (enc && *enc && strcasecmp(enc, "identity") != 0) {
        fj_err err = {0};
        fj_buf_init(&r->decoded, r->srv->cfg.max_decoded);
        fj_status st = fj_codec_decode(enc, r->raw.data ? r->raw.data : "", r->raw.len, &r->decoded, &err);
        if (st != FJ_OK) {
            fj_http_reply_error(r, st, &err);
            return;
        }
        r->decoded_used = true;
        fj_buf_free(&r->raw);
    }
    r->route->handle(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    fj_server *s = cls;
    fj_http_req *r = *con_cls;
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
        fj_buf_init(&r->raw, s->cfg.max_body);
        atomic_fetch_add(&s->in_flight, 1);
        *con_cls = r;
        admit(r);
        return MHD_YES;
    }
    if (*upload_size) {
        if (r->state == REQ_BODY && !r->body_too_big) {
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
        if (r->body_too_big) {
            fj_err err = {0};
            fj_err_set(&err, FJ_ETOOBIG, "body", "body exceeds the limit of %zu bytes", s->cfg.max_body);
            fj_http_reply_error(r, FJ_ETOOBIG, &err);
        } else {
            run_handler(r);
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
    if (!r)
        return;
    fj_buf_free(&r->raw);
    fj_buf_free(&r->decoded);
    fj_arena_destroy(r->arena);
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

fj_status fj_server_start(const fj_config *cfg, fj_store *store, fj_auth *auth, const fj_route *routes,
                          fj_server **out, fj_err *err)
{
    char host[256];
    unsigned port;
    fj_status st = fj_config_listen_addr(cfg, host, sizeof host, &port, err);
    if (st != FJ_OK)
        return st;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        flags |= MHD_USE_IPv6;
    } else {
        return fj_err_set(err, FJ_EINVAL, "listen", "listen host '%s' is not an IP address", host);
    }

    fj_server *s = fj_calloc(1, sizeof *s);
    if (!s)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    s->cfg = *cfg;
    s->store = store;
    s->auth = auth;
    s->routes = routes;
    pthread_mutex_init(&s->readers_mu, NULL);
    s->writer = fj_writer_start(store, cfg->queue_max, cfg->group_commit_ms);
    if (!s->writer) {
        fj_free(s);
        return fj_err_set(err, FJ_ENOMEM, NULL, "cannot start the writer thread");
    }
    s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, as MHD asks */
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_per_ip,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->conn_memory,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        fj_writer_stop(s->writer);
        fj_free(s);
        return fj_err_set(err, FJ_EIO, "listen", "cannot listen on %s (in use or not permitted)", cfg->listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
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
    MHD_socket lsock = MHD_quiesce_daemon(s->daemon);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
    for (unsigned waited = 0; atomic_load(&s->in_flight) > 0 && waited < timeout_s * 100; waited++)
        usleep(10000);
    fj_writer_stop(s->writer); /* commits whatever is still queued and answers it */
    for (unsigned waited = 0; atomic_load(&s->in_flight) > 0 && waited < 200; waited++)
        usleep(10000);
    MHD_stop_daemon(s->daemon);
    for (size_t i = 0; i < s->n_readers; i++)
        fj_store_close(s->readers[i]);
    pthread_mutex_destroy(&s->readers_mu);
    fj_free(s);
}
