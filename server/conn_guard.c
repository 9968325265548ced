/* conn_guard.c — the connection table, the accept policy at the limit, the deadline thread. */
#include "server/conn_guard.h"

#include "alloc.h"
#include "log.h"
#include "timefmt.h"

#include <arpa/inet.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received, which glibc's lacks */
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* PH_IDLE: a kept-alive connection between requests, before any byte of the next one. */
typedef enum { PH_HEADERS, PH_BODY, PH_BUSY, PH_DEFERRED, PH_IDLE } phase;

struct fj_guard_conn {
    struct MHD_Connection *conn;
    int fd;
    char client[INET6_ADDRSTRLEN];
    char fwd[INET6_ADDRSTRLEN];  /* the forwarded client of the request in progress; "" = none (under g->mu) */
    fj_guard *g;
    fj_guard_conn *prev, *next; /* the table, under g->mu */
    bool shed;                  /* shut down; waiting for libmicrohttpd to close it (under g->mu) */
    _Atomic bool linger;        /* its answer went out before the body was read: lingering close */
    _Atomic uint64_t rx_mark;   /* bytes received when it last went idle (under g->mu) */
    _Atomic uint64_t rx_answer; /* bytes received when the request's answer was queued; 0: none */
    int64_t next_peek_ns;       /* PH_IDLE: when the sweep next looks for a request begun (under g->mu) */
    _Atomic int phase;
    _Atomic int64_t since_ns;   /* when the phase began */
    _Atomic size_t body_bytes;
    _Atomic int64_t due_ns;     /* PH_DEFERRED: when to resume */
    _Atomic int64_t begun_ns;   /* PH_IDLE: when the sweep saw bytes of a next request; 0 = none yet */
};

struct fj_guard {
    fj_guard_limits lim;
    fj_reqlog *log;
    void (*tick)(void *);
    void *tick_ctx;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    fj_guard_conn *head, *tail; /* oldest first */
    fj_linger *linger;          /* lingering close of connections answered early (NULL: none) */
    unsigned live;              /* in the table and not shed */
    bool stopping;
    bool started;
    pthread_t thread;
};

static void addr_text(const struct sockaddr *a, char *out, size_t cap)
{
    out[0] = '\0';
    if (!a)
        return;
    if (a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)a)->sin_addr, out, (socklen_t)cap);
    else if (a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr, out, (socklen_t)cap);
}

static void log_event(fj_guard *g, const char *client, const char *via, const char *reason)
{
    fj_reqlog_entry e = {.client = client, .via = via, .reason = reason, .duration_us = -1};
    fj_reqlog_refusal(g->log, &e);
}

/* Shuts gc's socket down so libmicrohttpd closes the connection; called with g->mu held, which
 * keeps gc (and so its descriptor) registered. reason NULL: an idle connection closed, which is
 * no refusal and is not logged. */
static void shed(fj_guard *g, fj_guard_conn *gc, const char *reason)
{
    if (gc->shed)
        return;
    gc->shed = true;
    g->live--;
    shutdown(gc->fd, SHUT_RDWR);
    if (!reason)
        return;
    if (gc->fwd[0])
        log_event(g, gc->fwd, gc->client, reason);
    else
        log_event(g, gc->client, NULL, reason);
}

/* Bytes the peer has sent on gc's socket so far, from the kernel (TCP_INFO): libmicrohttpd reads
 * a request's first bytes into its own buffer and says nothing until its request line is whole.
 * false when the kernel does not say. Only while gc's descriptor is its own: from its connection's
 * thread, or with g->mu held. */
static bool rx_bytes(const fj_guard_conn *gc, uint64_t *out)
{
    struct tcp_info ti;
    socklen_t n = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (gc->fd < 0 || getsockopt(gc->fd, IPPROTO_TCP, TCP_INFO, &ti, &n) != 0 ||
        n < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        return false;
    *out = ti.tcpi_bytes_received;
    return true;
}

/* Has gc's client sent anything since it last went idle? When the kernel cannot say: yes, so that
 * a stalled request is never taken for an idle connection. */
static bool request_begun(const fj_guard_conn *gc)
{
    uint64_t rx;
    return !rx_bytes(gc, &rx) || rx > atomic_load(&gc->rx_mark);
}

/* --- libmicrohttpd hooks --------------------------------------------------------------- */

/* Is gc's body arriving slower than the minimum rate (so far)? */
static bool body_slow(const fj_guard *g, fj_guard_conn *gc, int64_t now)
{
    int64_t age = now - atomic_load(&gc->since_ns);
    return (double)atomic_load(&gc->body_bytes) < (double)g->lim.body_min_rate * (double)age / 1e9;
}

/* At the limit, one connection makes room, in this order: the one idle longest (waiting for
 * headers, or sending a body slower than the minimum rate: a fresh connection is the youngest
 * and so the last to go); failing that the oldest deferred answer is resumed now (its connection
 * closes after it); failing that the oldest upload. Returns true when room was made; *resume is
 * the deferred connection to resume after unlocking. Called with g->mu held. */
static bool make_room(fj_guard *g, struct MHD_Connection **resume)
{
    int64_t now = fj_mono_ns();
    fj_guard_conn *best[3] = {NULL, NULL, NULL};
    for (fj_guard_conn *gc = g->head; gc; gc = gc->next) {
        if (gc->shed)
            continue;
        int ph = atomic_load(&gc->phase);
        int slot = ph == PH_HEADERS || ph == PH_IDLE ? 0 : ph == PH_DEFERRED ? 1 : ph == PH_BODY ? 2 : -1;
        if (slot == 2 && body_slow(g, gc, now))
            slot = 0;
        if (slot >= 0 && (!best[slot] || atomic_load(&gc->since_ns) < atomic_load(&best[slot]->since_ns)))
            best[slot] = gc;
    }
    if (best[0]) {
        shed(g, best[0], "shed_oldest_idle");
        return true;
    }
    if (best[1]) {
        atomic_store(&best[1]->phase, PH_BUSY);
        *resume = best[1]->conn;
        return true;
    }
    if (best[2]) {
        shed(g, best[2], "shed_oldest_upload");
        return true;
    }
    return false;
}

/* Live connections from this peer address, or forwarded for this client when fwd; called with
 * g->mu held. A walk of the table: it is at most max-connections long, and this runs once per
 * accept or proxied request. */
static unsigned count_from(const fj_guard *g, const char *addr, bool fwd)
{
    unsigned n = 0;
    for (const fj_guard_conn *gc = g->head; gc; gc = gc->next)
        n += !gc->shed && !strcmp(fwd ? gc->fwd : gc->client, addr);
    return n;
}

enum MHD_Result fj_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    fj_guard *g = cls;
    struct MHD_Connection *resume = NULL;
    bool ok = true;
    const char *reason = "connection_limit";
    char client[INET6_ADDRSTRLEN];
    addr_text(addr, client, sizeof client);
    bool per_ip = g->lim.max_per_ip && !fj_proxies_trust_sockaddr(g->lim.proxies, addr);
    pthread_mutex_lock(&g->mu);
    if (per_ip && count_from(g, client, false) >= g->lim.max_per_ip) {
        ok = false;
        reason = "per_ip_limit";
    } else if (g->lim.max_connections && g->live >= g->lim.max_connections) {
        ok = make_room(g, &resume);
    }
    pthread_mutex_unlock(&g->mu);
    if (resume)
        MHD_resume_connection(resume);
    if (!ok)
        log_event(g, client, NULL, reason);
    return ok ? MHD_YES : MHD_NO;
}

bool fj_guard_forwarded(fj_guard *g, fj_guard_conn *gc, const char *client)
{
    if (!gc)
        return true;
    pthread_mutex_lock(&g->mu);
    bool ok = !g->lim.max_per_ip || count_from(g, client, true) < g->lim.max_per_ip;
    if (ok)
        snprintf(gc->fwd, sizeof gc->fwd, "%s", client);
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void fj_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code)
{
    fj_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        fj_guard_conn *gc = fj_calloc(1, sizeof *gc);
        *socket_context = gc;
        if (!gc)
            return; /* served, just not guarded */
        gc->conn = c;
        gc->g = g;
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ad = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        gc->fd = fd ? fd->connect_fd : -1;
        addr_text(ad ? ad->client_addr : NULL, gc->client, sizeof gc->client);
        atomic_store(&gc->phase, PH_HEADERS);
        atomic_store(&gc->since_ns, fj_mono_ns());
        pthread_mutex_lock(&g->mu);
        gc->prev = g->tail;
        if (g->tail)
            g->tail->next = gc;
        else
            g->head = gc;
        g->tail = gc;
        g->live++;
        pthread_mutex_unlock(&g->mu);
        return;
    }
    fj_guard_conn *gc = *socket_context;
    if (!gc)
        return;
    pthread_mutex_lock(&g->mu);
    if (gc->prev)
        gc->prev->next = gc->next;
    else
        g->head = gc->next;
    if (gc->next)
        gc->next->prev = gc->prev;
    else
        g->tail = gc->prev;
    if (!gc->shed)
        g->live--;
    /* libmicrohttpd closes its descriptor right after this notification; a duplicate keeps the
     * socket open for the lingering close (linger.h). */
    int dup_fd = atomic_load(&gc->linger) && !gc->shed && g->linger && gc->fd >= 0
                     ? fcntl(gc->fd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_mutex_unlock(&g->mu);
    if (dup_fd >= 0)
        fj_linger_add(g->linger, dup_fd);
    fj_free(gc);
    *socket_context = NULL;
}

fj_guard_conn *fj_guard_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? (fj_guard_conn *)i->socket_context : NULL;
}

const char *fj_guard_client(const fj_guard_conn *gc)
{
    return gc && gc->client[0] ? gc->client : "-";
}

/* --- phases ---------------------------------------------------------------------------- */

static void enter(fj_guard_conn *gc, phase ph)
{
    if (!gc)
        return;
    atomic_store(&gc->since_ns, fj_mono_ns());
    atomic_store(&gc->phase, ph);
}

void fj_guard_request_started(fj_guard_conn *gc, bool has_body)
{
    if (gc)
        atomic_store(&gc->body_bytes, 0);
    enter(gc, has_body ? PH_BODY : PH_BUSY);
}

void fj_guard_body_bytes(fj_guard_conn *gc, size_t n)
{
    if (gc)
        atomic_fetch_add(&gc->body_bytes, n);
}

void fj_guard_busy(fj_guard_conn *gc)
{
    if (gc && atomic_load(&gc->phase) != PH_BUSY)
        enter(gc, PH_BUSY);
}

void fj_guard_answering(fj_guard_conn *gc)
{
    uint64_t rx;
    if (gc && rx_bytes(gc, &rx))
        atomic_store(&gc->rx_answer, rx ? rx : 1);
}

void fj_guard_request_line(fj_guard_conn *gc)
{
    if (gc && atomic_load(&gc->phase) == PH_IDLE)
        enter(gc, PH_HEADERS);
}

void fj_guard_request_done(fj_guard_conn *gc)
{
    if (!gc)
        return;
    if (gc->fwd[0]) {
        pthread_mutex_lock(&gc->g->mu);
        gc->fwd[0] = '\0';
        pthread_mutex_unlock(&gc->g->mu);
    }
    /* what the client had sent when its answer went out: a client that waits for its answer
     * (not pipelining) sends its next request after that, and those bytes may be in before this
     * call is; taken as the old request's, a next request that stalled would pass for idle */
    uint64_t rx = atomic_exchange(&gc->rx_answer, 0);
    if (!rx)
        rx_bytes(gc, &rx);
    atomic_store(&gc->rx_mark, rx);
    atomic_store(&gc->begun_ns, 0);
    enter(gc, PH_IDLE);
}

void fj_guard_linger(fj_guard_conn *gc)
{
    if (gc)
        atomic_store(&gc->linger, true);
}

bool fj_guard_defer(fj_guard *g, fj_guard_conn *gc, unsigned delay_ms)
{
    if (!gc)
        return false;
    pthread_mutex_lock(&g->mu);
    bool ok = !g->stopping;
    if (ok) {
        atomic_store(&gc->due_ns, fj_mono_ns() + (int64_t)delay_ms * 1000000LL);
        enter(gc, PH_DEFERRED);
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

unsigned fj_guard_live(fj_guard *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->live;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* --- the housekeeping thread ----------------------------------------------------------- */

enum { RESUME_BATCH = 256 };

/* A kept-alive connection between requests. Silent past keepalive-timeout: closed without a log
 * line (keep-alive is no refusal). Once bytes of a next request arrive (looked at once a second;
 * a whole request line moves it to PH_HEADERS sooner, fj_guard_request_line) it has
 * header-timeout from then like any request, and is a header_deadline refusal past it. Called
 * with g->mu held. */
static void sweep_idle(fj_guard *g, fj_guard_conn *gc, int64_t now, int64_t age)
{
    const int64_t s = 1000000000LL;
    int64_t begun = atomic_load(&gc->begun_ns);
    if (begun) {
        if (g->lim.header_timeout_s && now - begun > (int64_t)g->lim.header_timeout_s * s)
            shed(g, gc, "header_deadline");
        return;
    }
    bool past = g->lim.keepalive_timeout_s && age > (int64_t)g->lim.keepalive_timeout_s * s;
    if (!past && now < gc->next_peek_ns)
        return;
    gc->next_peek_ns = now + s;
    if (request_begun(gc))
        atomic_store(&gc->begun_ns, now);
    else if (past)
        shed(g, gc, NULL);
}

/* One pass: sheds connections past a deadline and collects deferred ones that are due (or all of
 * them when stopping) into resume. Called with g->mu held; returns how many were collected. */
static size_t sweep(fj_guard *g, int64_t now, struct MHD_Connection **resume, bool *more)
{
    const int64_t s = 1000000000LL;
    size_t n = 0;
    *more = false;
    for (fj_guard_conn *gc = g->head; gc; gc = gc->next) {
        if (gc->shed)
            continue;
        int ph = atomic_load(&gc->phase);
        int64_t age = now - atomic_load(&gc->since_ns);
        if (ph == PH_DEFERRED && (g->stopping || now >= atomic_load(&gc->due_ns))) {
            if (n == RESUME_BATCH) {
                *more = true;
                continue;
            }
            atomic_store(&gc->phase, PH_BUSY);
            resume[n++] = gc->conn;
        } else if (ph == PH_HEADERS && g->lim.header_timeout_s && age > (int64_t)g->lim.header_timeout_s * s) {
            /* A new connection that never sent a byte is closed too (its place is wanted), but it
             * refused nothing: no log line. */
            shed(g, gc, request_begun(gc) ? "header_deadline" : NULL);
        } else if (ph == PH_IDLE) {
            sweep_idle(g, gc, now, age);
        } else if (ph == PH_BODY) {
            if (g->lim.body_timeout_s && age > (int64_t)g->lim.body_timeout_s * s) {
                shed(g, gc, "body_deadline");
            } else if (g->lim.body_min_rate && age > (int64_t)g->lim.header_timeout_s * s && body_slow(g, gc, now)) {
                shed(g, gc, "body_too_slow");
            }
        }
    }
    return n;
}

static void *guard_main(void *arg)
{
    fj_guard *g = arg;
    struct MHD_Connection *resume[RESUME_BATCH];
    int64_t last_tick = fj_mono_ns();
    pthread_mutex_lock(&g->mu);
    for (;;) {
        bool stopping = g->stopping, more;
        size_t n = sweep(g, fj_mono_ns(), resume, &more);
        pthread_mutex_unlock(&g->mu);
        /* Outside the lock: MHD_resume_connection takes libmicrohttpd's own locks. A deferred
         * connection is suspended, so libmicrohttpd cannot close it before this resumes it. */
        for (size_t i = 0; i < n; i++)
            MHD_resume_connection(resume[i]);
        int64_t now = fj_mono_ns();
        if (g->tick && now - last_tick >= 1000000000LL) {
            g->tick(g->tick_ctx);
            last_tick = now;
        }
        pthread_mutex_lock(&g->mu);
        if (stopping && !more)
            break;
        if (more)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!g->stopping)
            pthread_cond_timedwait(&g->wake, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

fj_guard *fj_guard_start(const fj_guard_limits *lim, fj_reqlog *log, void (*tick)(void *), void *tick_ctx)
{
    fj_guard *g = fj_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->lim = *lim;
    g->log = log;
    g->tick = tick;
    g->tick_ctx = tick_ctx;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (lim->linger_timeout_s) {
        fj_linger_limits ll = {lim->linger_timeout_s * 1000u, lim->linger_bytes,
                               lim->max_connections ? lim->max_connections : 1024};
        if (!(g->linger = fj_linger_start(&ll))) {
            fj_guard_free(g);
            return NULL;
        }
    }
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        fj_guard_free(g);
        return NULL;
    }
    g->started = true;
    return g;
}

void fj_guard_stop(fj_guard *g)
{
    if (!g || !g->started)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    g->started = false;
}

void fj_guard_free(fj_guard *g)
{
    if (!g)
        return;
    fj_guard_stop(g);
    fj_linger_free(g->linger); /* after the daemons: their last closes may hand sockets over */
    /* Connections still in the table belong to a stopped daemon, which freed them. */
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->wake);
    fj_free(g);
}
