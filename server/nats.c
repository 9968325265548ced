/* nats.c — the optional NATS subscriber (see nats.h). libnats delivers messages on its own threads;
 * each message becomes one batch for the writer, exactly as an HTTP request's body would, so the
 * request log makes what was taken durable. Nothing is acknowledged to NATS (core NATS has no
 * acknowledgement): a message taken during a crash before its commit is lost, as with
 * cc-metric-store. */
#include "server/nats.h"

#include "alloc.h"
#include "ingest/cc.h"
#include "log.h"
#include "ratelog.h"
#include "redact.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FJ_HAVE_NATS
#include <nats/nats.h>

#define N_SUBS 3

struct fj_nats {
    natsConnection *conn;
    natsSubscription *subs[N_SUBS];
    fj_server *srv;
    size_t max_msg;
    int64_t max_future_ns;
    atomic_size_t messages, bad_lines, cross_cluster, in_flight;
    atomic_bool stopping;
};

typedef struct nreq {
    fj_write_req w;
    fj_write_count count;
    struct fj_nats *n;
} nreq;

/* A message's failure is the writer's (an outage, a full disk) or the queue's: logged once per 10 s
 * per kind (common/ratelog.h), as every message fails alike until it is over. */
static fj_ratelog store_log = FJ_RATELOG_INIT("nats: a message could not be stored", 10);
static fj_ratelog queue_log = FJ_RATELOG_INIT("nats: writer queue full", 10);

static void nreq_done(fj_write_req *w)
{
    nreq *q = w->ctx;
    if (w->status != FJ_OK)
        fj_log_limited(&store_log, FJ_LOG_WARN, "%s", w->err.message);
    atomic_fetch_sub(&q->n->in_flight, 1);
    fj_batch_free(w->batch);
    fj_free(q);
}

static void on_bad(void *ud, size_t line, size_t column, const char *reason)
{
    struct fj_nats *n = ud;
    atomic_fetch_add(&n->bad_lines, 1);
    fj_debug("nats: bad line %zu, column %zu: %s", line, column, reason);
}

/* NATS has no credentials of fjord's: a subject's first token is the only claim a publisher makes,
 * so a message may write that cluster and no other. A line naming another cluster (in its cluster
 * tag or a job payload) makes the whole message refused, as /api/write refuses the whole request
 * with 401. Logged for the first and then every 1000th, so a publisher cannot flood the log. */
static bool only_subject_cluster(struct fj_nats *n, const char *subject, const char *cluster, const fj_metrics *m)
{
    for (size_t i = 0; i < m->n_clusters; i++) {
        if (strcmp(m->clusters[i], cluster) == 0)
            continue;
        size_t k = atomic_fetch_add(&n->cross_cluster, 1);
        if (k % 1000 == 0)
            fj_warn("nats: a message on '%s' names cluster '%s' (line %zu); the whole message is dropped "
                    "(%zu such messages so far)", subject, m->clusters[i], m->cluster_lines[i], k + 1);
        return false;
    }
    return true;
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    struct fj_nats *n = closure;
    (void)nc, (void)sub;
    const char *subject = natsMsg_GetSubject(msg);
    const char *data = natsMsg_GetData(msg);
    int len = natsMsg_GetDataLength(msg);
    char cluster[256];
    const char *dot = strchr(subject, '.');
    size_t cn = dot ? (size_t)(dot - subject) : strlen(subject);
    if (len <= 0 || (size_t)len > n->max_msg || cn == 0 || cn >= sizeof cluster || atomic_load(&n->stopping)) {
        natsMsg_Destroy(msg);
        return;
    }
    memcpy(cluster, subject, cn);
    cluster[cn] = '\0';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fj_cc_opts o = {.default_cluster = cluster,
                    .arrival_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
                    .max_future_ns = n->max_future_ns,
                    .keep_raw = true};
    fj_batch *b = fj_batch_new();
    nreq *q = b ? fj_calloc(1, sizeof *q) : NULL;
    size_t good = 0;
    fj_err err = {0};
    if (!q || fj_cc_decode(data, (size_t)len, &o, b, on_bad, n, &good, &err) != FJ_OK || !good ||
        !only_subject_cluster(n, subject, cluster, &b->envs[0].u.metrics)) {
        fj_batch_free(b);
        fj_free(q);
        natsMsg_Destroy(msg);
        return;
    }
    natsMsg_Destroy(msg);
    atomic_fetch_add(&n->messages, 1);
    q->n = n;
    q->w = (fj_write_req){.batch = b, .counts = &q->count, .done = nreq_done, .ctx = q};
    atomic_fetch_add(&n->in_flight, 1);
    /* Back-pressure: wait while the writer's queue is full (NATS buffers behind us). */
    for (int tries = 0; fj_writer_submit(fj_server_writer(n->srv), &q->w) != FJ_OK; tries++) {
        if (atomic_load(&n->stopping) || tries > 30000) {
            fj_log_limited(&queue_log, FJ_LOG_WARN, "message dropped");
            atomic_fetch_sub(&n->in_flight, 1);
            fj_batch_free(b);
            fj_free(q);
            return;
        }
        usleep(1000);
    }
}

fj_status fj_nats_start(const char *url, fj_server *srv, size_t max_msg, int64_t max_future_s, fj_nats **out,
                        fj_err *err)
{
    *out = NULL;
    struct fj_nats *n = fj_calloc(1, sizeof *n);
    if (!n)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    n->srv = srv;
    n->max_msg = max_msg;
    n->max_future_ns = max_future_s * 1000000000;
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK)
        s = natsOptions_SetURL(opts, url);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(opts, -1); /* keep trying forever */
    if (s == NATS_OK)
        s = natsConnection_Connect(&n->conn, opts);
    natsOptions_Destroy(opts);
    char shown[1024];
    fj_redact_conn(url, shown, sizeof shown);
    static const char *const subjects[N_SUBS] = {"*.metrics", "*.events.>", "*.log.>"};
    for (int i = 0; s == NATS_OK && i < N_SUBS; i++)
        s = natsConnection_Subscribe(&n->subs[i], n->conn, subjects[i], on_msg, n);
    if (s == NATS_OK)
        s = natsConnection_Flush(n->conn);
    if (s != NATS_OK) {
        fj_nats_stop(n);
        return fj_err_set(err, FJ_EIO, "nats", "NATS %s: %s", shown, natsStatus_GetText(s));
    }
    fj_info("nats: subscribed to *.metrics, *.events.>, *.log.> at %s", shown);
    *out = n;
    return FJ_OK;
}

void fj_nats_stop(fj_nats *n)
{
    if (!n)
        return;
    atomic_store(&n->stopping, true);
    for (int i = 0; i < N_SUBS; i++)
        if (n->subs[i]) {
            natsSubscription_Unsubscribe(n->subs[i]);
            natsSubscription_Destroy(n->subs[i]);
        }
    for (int i = 0; i < 3000 && atomic_load(&n->in_flight) > 0; i++)
        usleep(1000);
    if (n->conn) {
        natsConnection_Close(n->conn);
        natsConnection_Destroy(n->conn);
    }
    fj_free(n);
}

void fj_nats_counts(const fj_nats *n, size_t *messages, size_t *bad_lines)
{
    *messages = n ? atomic_load(&((struct fj_nats *)n)->messages) : 0;
    *bad_lines = n ? atomic_load(&((struct fj_nats *)n)->bad_lines) : 0;
}

#else /* no libnats */

fj_status fj_nats_start(const char *url, fj_server *srv, size_t max_msg, int64_t max_future_s, fj_nats **out,
                        fj_err *err)
{
    (void)url, (void)srv, (void)max_msg, (void)max_future_s;
    *out = NULL;
    return fj_err_set(err, FJ_EUNSUPPORTED, "nats", "this fjord was built without libnats (install libnats-dev)");
}

void fj_nats_stop(fj_nats *n)
{
    (void)n;
}

void fj_nats_counts(const fj_nats *n, size_t *messages, size_t *bad_lines)
{
    (void)n;
    *messages = *bad_lines = 0;
}

#endif
