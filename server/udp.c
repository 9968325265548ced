/* udp.c — the UDP line-protocol listeners (see udp.h). A thread per listener waits for datagrams
 * (poll, so that a stop is seen within a tenth of a second), checks the source address before
 * anything else, and hands each accepted datagram to the writer as one batch, as an HTTP body or a
 * NATS message is; the request log makes what was taken durable. Nothing is answered, so nothing
 * is acknowledged: a datagram taken during a crash before its commit is lost, as with InfluxDB's
 * UDP input (whose batches wait in memory). */
#include "server/udp.h"

#include "alloc.h"
#include "ingest/cc.h"
#include "ingest/lp.h"
#include "log.h"
#include "ratelog.h"
#include "server/config.h"
#include "server/prom.h"
#include "server/writer.h"
#include "storage/core/quota.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- the setting --------------------------------------------------------------------------------- */

static fj_status bad_spec(fj_err *err, const char *what, size_t len, const char *why)
{
    return fj_err_set(err, FJ_EINVAL, "udp", "udp: listener '%.*s': %s", (int)(len > 200 ? 200 : len), what, why);
}

/* One listener's text (not NUL-terminated) into *o. */
static fj_status parse_one(const char *s, size_t len, fj_udp_spec *o, fj_err *err)
{
    char text[2048];
    if (len >= sizeof text)
        return bad_spec(err, s, len, "too long");
    memcpy(text, s, len);
    text[len] = '\0';
    memset(o, 0, sizeof *o);
    o->unit_ns = 1;
    bool have_allow = false;
    char *save = NULL;
    char *tok = strtok_r(text, " \t", &save);
    if (!tok)
        return bad_spec(err, s, len, "empty");
    fj_err aerr = {0};
    if (fj_config_split_addr("udp", tok, o->host, sizeof o->host, &o->port, &aerr) != FJ_OK)
        return bad_spec(err, s, len, aerr.message);
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        if (!strncmp(tok, "cluster=", 8) && tok[8]) {
            if (strlen(tok + 8) >= sizeof o->cluster)
                return bad_spec(err, s, len, "cluster name too long");
            snprintf(o->cluster, sizeof o->cluster, "%s", tok + 8);
        } else if (!strncmp(tok, "allow=", 6)) {
            fj_err perr = {0};
            if (fj_proxies_parse(tok + 6, &o->allow, &perr) != FJ_OK)
                return bad_spec(err, s, len, perr.message);
            have_allow = o->allow.n > 0;
        } else if (!strncmp(tok, "precision=", 10)) {
            if (fj_lp_precision_parse(tok + 10, &o->unit_ns) != FJ_OK || !tok[10])
                return bad_spec(err, s, len, "precision must be ns, us, ms, s, m or h");
        } else {
            return bad_spec(err, s, len, "expected cluster=, allow= or precision=");
        }
    }
    if (!o->cluster[0])
        return bad_spec(err, s, len, "cluster= is required: a port writes one cluster");
    if (!have_allow)
        return bad_spec(err, s, len,
                        "allow= is required: UDP carries no credential, so the accepted source addresses must be listed");
    return FJ_OK;
}

fj_status fj_udp_parse(const char *setting, fj_udp_spec *out, size_t *n, fj_err *err)
{
    *n = 0;
    const char *p = setting ? setting : "";
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t lead = 0;
        while (lead < len && (p[lead] == ' ' || p[lead] == '\t'))
            lead++;
        if (lead < len) {
            if (*n == FJ_UDP_MAX_LISTENERS)
                return fj_err_set(err, FJ_EINVAL, "udp", "udp: at most %d listeners", FJ_UDP_MAX_LISTENERS);
            fj_status st = parse_one(p + lead, len - lead, &out[*n], err);
            if (st != FJ_OK)
                return st;
            ++*n;
        }
        p += len + (end ? 1 : 0);
    }
    return FJ_OK;
}

/* --- the listeners ------------------------------------------------------------------------------- */

struct fj_udp;

typedef struct listener {
    fj_udp_spec spec;
    int fd;
    unsigned port;
    pthread_t thread;
    bool started;
    struct fj_udp *u;
    char *buf;             /* FJ_UDP_MAX_DATAGRAM + 1 */
    uint32_t kernel_drops; /* SO_RXQ_OVFL's count when last read */
} listener;

struct fj_udp {
    listener l[FJ_UDP_MAX_LISTENERS];
    size_t n;
    fj_server *srv;
    int64_t max_future_ns;
    atomic_bool stopping;
    atomic_size_t in_flight;
};

typedef struct ureq {
    fj_write_req w;
    fj_write_count count;
    struct fj_udp *u;
    const char *cluster;
    size_t n_points, n_bad;
} ureq;

/* Failures alike for every datagram until they are over: logged once per 10 s per kind. */
static fj_ratelog store_log = FJ_RATELOG_INIT("udp: a datagram could not be stored", 10);
static fj_ratelog queue_log = FJ_RATELOG_INIT("udp: writer queue full, datagram dropped", 10);
static fj_ratelog refused_log = FJ_RATELOG_INIT("udp: datagram refused", 10);

static void ureq_done(fj_write_req *w)
{
    ureq *q = w->ctx;
    if (w->status == FJ_OK) {
        fj_prom_accepted(FJ_PROM_POINTS, q->cluster, q->n_points - q->count.dropped);
        if (q->count.dropped)
            fj_prom_refused(FJ_PROM_POINTS, q->cluster, fj_limit_name(q->count.limit), q->count.dropped);
    } else {
        fj_log_limited(&store_log, FJ_LOG_WARN, "%s", w->err.message);
        fj_prom_refused(FJ_PROM_POINTS, q->cluster, w->err.code[0] ? w->err.code : fj_status_name(w->status),
                        q->n_points);
    }
    if (q->n_bad)
        fj_prom_refused(FJ_PROM_POINTS, q->cluster, "bad_line", q->n_bad);
    atomic_fetch_sub(&q->u->in_flight, 1);
    fj_batch_free(w->batch);
    fj_free(q);
}

static void on_bad(void *ud, size_t line, size_t column, const char *reason)
{
    ureq *q = ud;
    q->n_bad++;
    fj_debug("udp: bad line %zu, column %zu: %s", line, column, reason);
}

/* The datagram's lines must write the listener's cluster only, as a credential's must. */
static bool only_own_cluster(const listener *l, const fj_metrics *m)
{
    for (size_t i = 0; i < m->n_clusters; i++)
        if (strcmp(m->clusters[i], l->spec.cluster) != 0) {
            fj_log_limited(&refused_log, FJ_LOG_WARN, "port %u writes cluster '%s'; line %zu names '%s'", l->port,
                           l->spec.cluster, m->cluster_lines[i], m->clusters[i]);
            return false;
        }
    return true;
}

/* One datagram from an accepted source: decoded and submitted. */
static void take(listener *l, const char *data, size_t len)
{
    struct fj_udp *u = l->u;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fj_cc_opts o = {.default_cluster = l->spec.cluster,
                    .unit_ns = l->spec.unit_ns,
                    .arrival_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
                    .max_future_ns = u->max_future_ns,
                    .keep_raw = true};
    fj_batch *b = fj_batch_new();
    ureq *q = b ? fj_calloc(1, sizeof *q) : NULL;
    size_t good = 0;
    fj_err err = {0};
    if (!q || fj_cc_decode(data, len, &o, b, on_bad, q, &good, &err) != FJ_OK) {
        fj_log_limited(&store_log, FJ_LOG_WARN, "out of memory");
        fj_prom_udp(FJ_PROM_UDP_DROPPED, 1);
        fj_batch_free(b);
        fj_free(q);
        return;
    }
    const fj_metrics *m = &b->envs[0].u.metrics;
    if (!only_own_cluster(l, m)) {
        fj_prom_udp(FJ_PROM_UDP_REFUSED, 1);
        fj_batch_free(b);
        fj_free(q);
        return;
    }
    if (!good) {
        fj_prom_udp(FJ_PROM_UDP_BAD, 1);
        if (q->n_bad)
            fj_prom_refused(FJ_PROM_POINTS, l->spec.cluster, "bad_line", q->n_bad);
        fj_batch_free(b);
        fj_free(q);
        return;
    }
    q->u = u;
    q->cluster = l->spec.cluster;
    q->n_points = m->n_points;
    q->w = (fj_write_req){.batch = b, .counts = &q->count, .done = ureq_done, .ctx = q};
    atomic_fetch_add(&u->in_flight, 1);
    /* Back-pressure: wait a while for the writer's queue (the kernel buffers datagrams behind us),
     * then drop, as a full InfluxDB UDP input does. */
    for (int tries = 0; fj_writer_submit(fj_server_writer(u->srv), &q->w) != FJ_OK; tries++) {
        if (atomic_load(&u->stopping) || tries >= 1000) {
            fj_log_limited(&queue_log, FJ_LOG_WARN, "cluster %s", l->spec.cluster);
            fj_prom_udp(FJ_PROM_UDP_DROPPED, 1);
            atomic_fetch_sub(&u->in_flight, 1);
            fj_batch_free(b);
            fj_free(q);
            return;
        }
        usleep(1000);
    }
    fj_prom_udp(FJ_PROM_UDP_ACCEPTED, 1);
}

static void *run(void *arg)
{
    listener *l = arg;
    while (!atomic_load(&l->u->stopping)) {
        struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 100);
        if (pr <= 0)
            continue;
        struct sockaddr_storage from;
        struct iovec iov = {.iov_base = l->buf, .iov_len = FJ_UDP_MAX_DATAGRAM + 1};
        union {
            char buf[CMSG_SPACE(sizeof(uint32_t))];
            struct cmsghdr align;
        } ctl;
        struct msghdr mh = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1,
                            .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        ssize_t n = recvmsg(l->fd, &mh, MSG_DONTWAIT | MSG_TRUNC); /* MSG_TRUNC: the real length */
        if (n < 0)
            continue;
        socklen_t fl = mh.msg_namelen;
        /* SO_RXQ_OVFL: how many datagrams the kernel has dropped on this socket so far */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
                uint32_t drops;
                memcpy(&drops, CMSG_DATA(c), sizeof drops);
                if (drops != l->kernel_drops)
                    fj_prom_udp(FJ_PROM_UDP_OVERFLOWED, (uint32_t)(drops - l->kernel_drops));
                l->kernel_drops = drops;
            }
        /* the source first: nothing of a datagram from elsewhere is read */
        if (!fj_proxies_trust_sockaddr(&l->spec.allow, (const struct sockaddr *)&from)) {
            fj_prom_udp(FJ_PROM_UDP_REFUSED, 1);
            char host[NI_MAXHOST];
            if (getnameinfo((const struct sockaddr *)&from, fl, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0)
                snprintf(host, sizeof host, "?");
            fj_log_limited(&refused_log, FJ_LOG_WARN, "port %u: source %s is not in allow=", l->port, host);
            continue;
        }
        if (n > FJ_UDP_MAX_DATAGRAM || n == 0) { /* MSG_TRUNC: the datagram's real length */
            fj_prom_udp(FJ_PROM_UDP_BAD, 1);
            continue;
        }
        take(l, l->buf, (size_t)n);
    }
    return NULL;
}

static fj_status bind_one(listener *l, fj_err *err)
{
    char port[16];
    snprintf(port, sizeof port, "%u", l->spec.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    const char *host = l->spec.host[0] ? l->spec.host : NULL;
    int gr = getaddrinfo(host, port, &hints, &ai);
    if (gr != 0)
        return fj_err_set(err, FJ_EIO, "udp", "udp: %s:%u: %s", l->spec.host, l->spec.port, gai_strerror(gr));
    l->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int e = errno;
    if (l->fd >= 0) {
        int rcv = 4 << 20; /* room for bursts while the writer commits; the kernel caps it */
        setsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
        int on = 1; /* the kernel's drops, counted as overflowed */
        setsockopt(l->fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
        if (bind(l->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            e = errno;
            close(l->fd);
            l->fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (l->fd < 0)
        return fj_err_set(err, FJ_EIO, "udp", "udp: cannot bind %s:%u: %s", l->spec.host, l->spec.port, strerror(e));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    l->port = l->spec.port;
    if (getsockname(l->fd, (struct sockaddr *)&ss, &sl) == 0)
        l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
    return FJ_OK;
}

fj_status fj_udp_start(const char *setting, fj_server *srv, int64_t max_future_s, fj_udp **out, fj_err *err)
{
    *out = NULL;
    struct fj_udp *u = fj_calloc(1, sizeof *u);
    if (!u)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    fj_udp_spec specs[FJ_UDP_MAX_LISTENERS];
    fj_status st = fj_udp_parse(setting, specs, &u->n, err);
    u->srv = srv;
    u->max_future_ns = max_future_s * 1000000000;
    for (size_t i = 0; i < u->n; i++)
        u->l[i] = (listener){.spec = specs[i], .fd = -1, .u = u};
    for (size_t i = 0; st == FJ_OK && i < u->n; i++) {
        listener *l = &u->l[i];
        if (!(l->buf = fj_malloc(FJ_UDP_MAX_DATAGRAM + 1)))
            st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        else if ((st = bind_one(l, err)) == FJ_OK) {
            if (pthread_create(&l->thread, NULL, run, l) != 0)
                st = fj_err_set(err, FJ_EIO, "udp", "udp: cannot start a thread");
            else
                l->started = true;
        }
        if (st == FJ_OK)
            fj_info("udp: listening on %s:%u for cluster %s (%zu allowed address ranges)", l->spec.host, l->port,
                    l->spec.cluster, l->spec.allow.n);
    }
    if (st != FJ_OK) {
        fj_udp_stop(u);
        return st;
    }
    *out = u;
    return FJ_OK;
}

unsigned fj_udp_port(const fj_udp *u, size_t i)
{
    return u && i < u->n ? u->l[i].port : 0;
}

void fj_udp_stop(fj_udp *u)
{
    if (!u)
        return;
    atomic_store(&u->stopping, true);
    for (size_t i = 0; i < u->n; i++)
        if (u->l[i].started)
            pthread_join(u->l[i].thread, NULL);
    /* what was submitted is committed by the writer, which stops after us */
    for (int i = 0; i < 3000 && atomic_load(&u->in_flight) > 0; i++)
        usleep(1000);
    for (size_t i = 0; i < u->n; i++) {
        if (u->l[i].fd >= 0)
            close(u->l[i].fd);
        fj_free(u->l[i].buf);
    }
    fj_free(u);
}
