/* http.h — the HTTP front: libmicrohttpd setup, the route table, and the fixed request pipeline
 * (admit() in http.c, in this order; docs/architecture.md draws the same):
 *
 *   framing -> draining check -> per-client limit behind a proxy -> client certificate -> route
 *     -> body rule and length cap -> auth (before the body) -> admission -> body (capped)
 *     -> content decoding (capped) -> handler -> response
 *
 * A handler runs once the whole body is in. It answers at once (fj_http_reply*) or hands a batch
 * to the writer (fj_http_submit) and is answered from the writer thread after the commit. A read
 * (a route needing FJ_ACCESS_READ) runs on the read pool (read_pool.h), its connection suspended,
 * under a deadline and a memory budget (the "For reads" functions below). */
#ifndef FJ_HTTP_H
#define FJ_HTTP_H

#include "server/auth.h"
#include "buf.h"
#include "cancel.h"
#include "server/config.h"
#include "membudget.h"
#include "server/read_pool.h"
#include "storage/ts/engine.h"
#include "storage/core/store.h"
#include "server/writer.h"

#include <stdbool.h>

typedef struct fj_server fj_server;
typedef struct fj_http_req fj_http_req;

/* FJ_ACCESS_METRICS: a credential that reads every cluster (read-only or a JWT without a
 * cluster), or the `metrics-token` setting as a Bearer token; never open, not even in dev mode. */
typedef enum { FJ_ACCESS_NONE, FJ_ACCESS_READ, FJ_ACCESS_WRITE, FJ_ACCESS_METRICS } fj_access;

/* Whether a route reads a request body. A body sent to an FJ_NO_BODY route is answered 413 at
 * once and the connection closed, without reading or decoding it. */
typedef enum { FJ_NO_BODY, FJ_BODY } fj_body_rule;

/* The shape of a route's error answers: fjord's {"error":{"code","message","path"}}, or InfluxDB's
 * {"error":"message"} on the paths InfluxDB's clients call (their CLI prints only a string). */
typedef enum { FJ_ERRORS_FJORD = 0, FJ_ERRORS_INFLUX } fj_error_form;

typedef struct fj_route {
    const char *methods; /* "POST", "GET", "GET,POST" */
    const char *path;    /* exact, or a prefix ending in '*' */
    fj_access access;
    fj_body_rule body;
    void (*handle)(fj_http_req *r);
    fj_error_form errors; /* also for the refusals before the handler (credential, limits) */
} fj_route;

/* --- For handlers ---------------------------------------------------------------------- */

const char *fj_http_method(const fj_http_req *r);
const char *fj_http_path(const fj_http_req *r);
/* The part of the path matched by a prefix route's '*'. */
const char *fj_http_path_rest(const fj_http_req *r);
const char *fj_http_header(const fj_http_req *r, const char *name);
const char *fj_http_arg(const fj_http_req *r, const char *name);
/* Calls fn(ctx, name, value) for every query parameter in order (value NULL for a bare name);
 * stops early when fn returns false. */
void fj_http_args_each(const fj_http_req *r, bool (*fn)(void *ctx, const char *name, const char *value),
                       void *ctx);
/* The decoded body (NUL-terminated; may contain NULs). */
const char *fj_http_body(const fj_http_req *r, size_t *len);
const fj_principal *fj_http_principal(const fj_http_req *r);
fj_arena *fj_http_arena(fj_http_req *r);
const fj_config *fj_http_config(const fj_http_req *r);
/* A read-only store handle for this thread (opened on first use), or NULL with err filled. */
fj_store *fj_http_reader(fj_http_req *r, fj_err *err);
/* --- For reads (routes needing FJ_ACCESS_READ run on the read pool: read_pool.h) ----------- */

/* The read's cancellation token (also fj_cancel_current() on its thread): its loops poll it and
 * stop when set (query-timeout, client gone, drain). NULL for other requests. */
const fj_cancel *fj_http_cancel(const fj_http_req *r);
/* The read's memory budget (query-memory within query-memory-total); its arena is charged
 * already. A read builds its answer in a buffer charged to it too (fj_buf_set_budget), so the
 * answer counts. NULL for other requests. */
fj_mem_budget *fj_http_mem(fj_http_req *r);
/* Whether the read was stopped by a limit (its token set, or its budget refused memory); err
 * then says which, in the error shape (code query_timeout, query_memory, query_memory_total,
 * shutting_down, client_gone; path the setting), and fj_http_read_limit_status gives its status
 * (413 for query-memory, 503 with Retry-After for the others). fj_http_reply_error answers this
 * error instead of its own when there is one, whatever failed on the way. */
bool fj_http_read_limit(fj_http_req *r, fj_err *err);
fj_status fj_http_read_limit_status(const fj_http_req *r);

/* The writer store's time-series engine, for reading unsealed points (NULL when the backend has
 * none). Safe from any thread (storage/ts/engine.h's "any thread" functions). */
fj_ts_engine *fj_http_ts_engine(fj_http_req *r);

/* The server's own figures now, for GET /metrics. */
typedef struct fj_server_figures {
    size_t queued, queue_max; /* write batches waiting; the limit beyond which ingest answers 503 */
    unsigned connections;     /* client connections open */
    int in_flight;            /* requests being read, handled or waiting for a commit */
    size_t body_bytes;        /* held by request bodies in flight */
    fj_read_pool_stats reads; /* the read pool: running, queued, refused, cancelled */
    size_t read_mem_bytes;    /* query memory held by reads in flight (query-memory-total's count) */
    size_t read_mem_refused_own, read_mem_refused_pool; /* reads a memory limit stopped: query-memory,
                                                         * query-memory-total (counted once a statement) */
} fj_server_figures;
void fj_http_server_figures(const fj_http_req *r, fj_server_figures *out);

/* Answers with status and a body (copied); content_type NULL means application/json. */
void fj_http_reply(fj_http_req *r, int status, const char *content_type, const char *body, size_t len);
/* Adds a header to the answer (name and value copied; at most 8 per request, more are dropped).
 * Call before fj_http_reply. */
void fj_http_reply_header(fj_http_req *r, const char *name, const char *value);
/* Answers with the error shape {"error":{"code","message","path"}} and the status of st. */
void fj_http_reply_error(fj_http_req *r, fj_status st, const fj_err *err);

/* Hands batch (ownership passes) to the writer. on_done runs on the writer thread after the
 * commit, with w->status set, and must answer with fj_http_reply*. A full queue answers 503 with
 * Retry-After at once (on_done not called). */
void fj_http_submit(fj_http_req *r, fj_batch *batch, fj_write_count *counts,
                    void (*on_done)(fj_http_req *r, fj_write_req *w), void *ctx);
void *fj_http_submit_ctx(const fj_http_req *r);

/* --- For main -------------------------------------------------------------------------- */

/* Starts listening with the given routes (terminated by a zeroed entry). stores: writer-mode
 * handles of the database, one per writer thread (writer.h), stores[0] the one routes read
 * through and whose metrics engine is started; they and auth are not owned. */
fj_status fj_server_start(const fj_config *cfg, fj_store *const *stores, size_t n_stores, fj_auth *auth,
                          const fj_route *routes, fj_server **out, fj_err *err);

/* The writer, for other producers than HTTP (the NATS subscriber). */
fj_writer *fj_server_writer(fj_server *s);

/* The port actually bound (useful with port 0). */
unsigned fj_server_port(const fj_server *s);

/* The HTTPS listener's port actually bound; 0 when there is none. */
unsigned fj_server_tls_port(const fj_server *s);

/* Reads the HTTPS certificate, key and client CA files again (SIGHUP): new handshakes get the
 * new certificate, open connections keep theirs, nothing stops listening. On error the old
 * certificate stays in force and err says what is wrong with the files. FJ_OK without HTTPS. */
fj_status fj_server_reload_tls(fj_server *s, fj_err *err);

/* The certificate in force, for the log (tls.h, fj_tls_describe); "" without HTTPS. */
void fj_server_tls_describe(fj_server *s, char *out, size_t cap);

/* Graceful stop: stop accepting, let in-flight requests finish (up to timeout_s), commit what is
 * queued, free everything. */
void fj_server_stop(fj_server *s, unsigned timeout_s);

#endif
