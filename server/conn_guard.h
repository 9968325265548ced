/* conn_guard.h — what libmicrohttpd 0.9.75 does not do for slow clients: deadlines for a
 * request's headers and for its whole body (with a minimum rate), and shedding the oldest idle
 * connection when a new one arrives at the connection limit, so idle or slowloris connections
 * cannot lock other clients out.
 *
 * libmicrohttpd's own timeout is an idle timeout that every byte resets, and it cannot close a
 * connection on request. The guard keeps its own table of connections (registered and removed
 * through MHD_OPTION_NOTIFY_CONNECTION) and closes one by shutdown(2) on its socket: libmicrohttpd
 * then reads end-of-file and closes it as if the client had gone. A socket is shut down only
 * while its connection is in the table, under the table's lock, and libmicrohttpd removes it
 * (the CLOSED notification) before closing the descriptor, so a reused descriptor number is never
 * touched. A housekeeping thread enforces the deadlines every 100 ms and also resumes
 * connections whose answer is deferred (fj_guard_defer).
 *
 * Connection phases: waiting for headers (from accept, or from the first byte of a kept-alive
 * connection's next request), idle (kept alive between requests: keepalive-timeout, closed
 * without a refusal), receiving a body, busy (the handler runs, the writer commits, the answer is sent: never shed),
 * deferred (a suspended answer to resume later; at the limit it is resumed early instead). */
#ifndef FJ_CONN_GUARD_H
#define FJ_CONN_GUARD_H

#include "server/linger.h"
#include "server/proxy.h"
#include "server/reqlog.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct fj_guard fj_guard;
typedef struct fj_guard_conn fj_guard_conn;

typedef struct fj_guard_limits {
    unsigned max_connections;  /* live connections; a new one past this sheds the oldest idle */
    /* A new connection's headers complete within this of accept; a kept-alive connection's within
     * this of the first byte of its next request; 0 = off. */
    unsigned header_timeout_s;
    /* A kept-alive connection sending nothing between requests is closed after this (quietly:
     * no refusal); 0 = off. */
    unsigned keepalive_timeout_s;
    unsigned body_timeout_s;   /* whole body within this of the headers; 0 = off */
    size_t body_min_rate;      /* bytes/s averaged over the body, after header_timeout_s; 0 = off */
    /* Connections from one address; 0 = off. A trusted proxy's connections are not counted
     * (they carry every client behind it): its clients are limited by fj_guard_forwarded. */
    unsigned max_per_ip;
    const fj_proxies *proxies; /* may be NULL; must outlive the guard */
    /* Lingering close (linger.h) of connections marked with fj_guard_linger, at most
     * max_connections at once; linger_timeout_s 0 = off (closed at once). */
    unsigned linger_timeout_s;
    size_t linger_bytes;
} fj_guard_limits;

/* Starts the housekeeping thread. tick(tick_ctx) is called from it about once a second (the
 * refusal log's flush). Sheds and refusals at the limit are logged to log (may be NULL).
 * NULL when out of memory or the thread cannot start. */
fj_guard *fj_guard_start(const fj_guard_limits *lim, fj_reqlog *log, void (*tick)(void *), void *tick_ctx);

/* Stops the thread and resumes every deferred connection at once. Call before
 * MHD_stop_daemon; fj_guard_free after it. */
void fj_guard_stop(fj_guard *g);
void fj_guard_free(fj_guard *g);

/* libmicrohttpd hooks, with the guard as their cls: MHD_OPTION_ACCEPT_POLICY_CALLBACK and
 * MHD_OPTION_NOTIFY_CONNECTION. */
enum MHD_Result fj_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void fj_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);

/* The guard's record of c (NULL if it has none, e.g. out of memory at accept). Valid until the
 * connection's CLOSED notification. */
fj_guard_conn *fj_guard_of(struct MHD_Connection *c);

/* The peer's address as text ("127.0.0.5", "::1"): the client, or the proxy it came through. */
const char *fj_guard_client(const fj_guard_conn *gc);

/* The request now on gc came through a trusted proxy for `client` (its address as text): sheds
 * and refusals of this connection name it until fj_guard_request_done. false when `client`
 * already has max_per_ip requests in progress through proxies (the request is then to be
 * refused, and gc is not marked): behind a proxy a client's requests in progress stand for the
 * connections it would hold on its own. gc NULL: true. */
bool fj_guard_forwarded(fj_guard *g, fj_guard_conn *gc, const char *client);

/* Phase changes, from the connection's own thread. gc may be NULL (then they do nothing). */
void fj_guard_request_started(fj_guard_conn *gc, bool has_body); /* headers are in */
void fj_guard_body_bytes(fj_guard_conn *gc, size_t n);
void fj_guard_busy(fj_guard_conn *gc);
void fj_guard_answering(fj_guard_conn *gc);      /* its answer is queued: what came in is the request's */
void fj_guard_request_line(fj_guard_conn *gc);  /* a request line is in (idle -> headers) */
void fj_guard_request_done(fj_guard_conn *gc);  /* kept alive: idle until the next request */
/* The answer goes out before the request's body was read: when libmicrohttpd closes the
 * connection, its socket lingers (linger.h) instead of being closed with the body unread. */
void fj_guard_linger(fj_guard_conn *gc);

/* The caller has suspended gc's connection (MHD_suspend_connection); the guard resumes it after
 * delay_ms, or sooner when a new connection needs its place. false when the guard is stopping or
 * gc is NULL: the caller resumes it itself. */
bool fj_guard_defer(fj_guard *g, fj_guard_conn *gc, unsigned delay_ms);

/* Live connections now (for tests and logs). */
unsigned fj_guard_live(fj_guard *g);

#endif
