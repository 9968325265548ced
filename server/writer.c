/* writer.c — writer threads, each owning a write connection; many requests share each transaction. */
#include "server/writer.h"

#include "alloc.h"
#include "server/config.h"
#include "log.h"
#include "server/prom.h"
#include "ratelog.h"
#include "timefmt.h"
#include "storage/core/store_ts.h"

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* Upper bound of batches in one transaction: keeps commit latency bounded under load. */
enum { GROUP_MAX = 256 };

/* Failures are logged at most once per 10 s per kind: during a database outage or with the disk
 * full every batch fails, and a line per batch (about 2,400 in a 3 s PostgreSQL restart) buried
 * what else the log said. The count held back is written with the next line, or alone
 * (maintain_logs) once the window is over. */
static fj_ratelog group_log = FJ_RATELOG_INIT("writer: group commit failed", 10);
static fj_ratelog batch_log = FJ_RATELOG_INIT("writer: batch failed on its own", 10);
static fj_ratelog commit_log = FJ_RATELOG_INIT("writer: commit failed", 10);
static fj_ratelog maint_log = FJ_RATELOG_INIT("writer: store maintenance failed", 10);

static void flush_logs(bool force)
{
    fj_ratelog *all[] = {&group_log, &batch_log, &commit_log, &maint_log};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        fj_ratelog_flush(all[i], FJ_LOG_ERROR, force);
}

typedef struct fj_write_queue {
    fj_write_req *head, *tail;
} fj_write_queue;

struct fj_writer;

/* One writer thread and the store handle it writes through. */
typedef struct writer_thread {
    struct fj_writer *w;
    fj_store *store;
    pthread_t thread;
    size_t index; /* 0: the first, which alone writes metrics and runs the store's maintenance */
} writer_thread;

struct fj_writer {
    writer_thread threads[FJ_WRITERS_MAX];
    size_t n_threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* batches with metric points (only the first thread's handle holds the metrics engine), and
     * all others (any thread) */
    fj_write_queue metrics, rest;
    size_t queued, queue_max;
    unsigned group_ms;
    bool stopping;
};

static bool has_metrics(const fj_batch *b)
{
    for (size_t i = 0; i < b->n_envs; i++)
        if (b->envs[i].kind == FJ_KIND_METRICS)
            return true;
    return false;
}

static void push(fj_write_queue *q, fj_write_req *r)
{
    r->next = NULL;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static fj_write_req *pop(fj_write_queue *q)
{
    fj_write_req *r = q->head;
    if (r && !(q->head = r->next))
        q->tail = NULL;
    return r;
}

/* One transaction for reqs[0..n); fills each request's status and counts, answers none. */
static fj_status write_group(writer_thread *w, fj_write_req **reqs, size_t n)
{
    fj_batch *batches[GROUP_MAX];
    size_t n_envs = 0;
    for (size_t i = 0; i < n; i++) {
        batches[i] = reqs[i]->batch;
        n_envs += reqs[i]->batch->n_envs;
    }
    fj_write_count *counts = fj_calloc(n_envs ? n_envs : 1, sizeof *counts);
    fj_err err = {0};
    fj_status st = counts ? fj_store_write(w->store, batches, n, counts, &err)
                          : fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory in writer");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        fj_write_req *r = reqs[i];
        r->status = st;
        r->err = err;
        for (size_t e = 0; e < r->batch->n_envs; e++, k++)
            if (st == FJ_OK && r->counts)
                r->counts[e] = counts[k];
    }
    fj_free(counts);
    return st;
}

static void commit_group(writer_thread *w, fj_write_req **reqs, size_t n)
{
    int64_t t0 = fj_mono_ns();
    fj_status st = write_group(w, reqs, n);
    fj_prom_commit(n, (double)(fj_mono_ns() - t0) / 1e9);
    if (st != FJ_OK && n > 1) {
        /* The group rolled back. Whatever one batch did wrong must not fail the requests that
         * shared its transaction: write each on its own, so only the culprit is refused. */
        fj_log_limited(&group_log, FJ_LOG_WARN, "%zu batches (%s); retrying them one by one", n,
                       reqs[0]->err.message);
        for (size_t i = 0; i < n; i++)
            if (write_group(w, &reqs[i], 1) != FJ_OK)
                fj_log_limited(&batch_log, FJ_LOG_ERROR, "%s", reqs[i]->err.message);
    } else if (st != FJ_OK) {
        fj_log_limited(&commit_log, FJ_LOG_ERROR, "%s", reqs[0]->err.message);
    }
    for (size_t i = 0; i < n; i++)
        reqs[i]->done(reqs[i]);
}

/* The store's periodic work (metrics: sealing, retention, request-log trimming) runs on this
 * thread between groups; the op is cheap when nothing is due. Called without w->mu. */
static void maintain(writer_thread *w)
{
    if (w->index)
        return;
    flush_logs(false); /* the first thread wakes at least once a second */
    fj_err err = {0};
    if (fj_store_ts_maintain(w->store, &err) != FJ_OK)
        fj_log_limited(&maint_log, FJ_LOG_WARN, "%s", err.message);
}

/* Whether thread t has work waiting: the first thread takes any batch, the others all but those
 * with metric points. */
static bool work_for(const fj_writer *w, const writer_thread *t)
{
    return w->rest.head || (t->index == 0 && w->metrics.head);
}

static void *writer_main(void *arg)
{
    writer_thread *t = arg;
    fj_writer *w = t->w;
    fj_write_req *group[GROUP_MAX];
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!work_for(w, t) && !w->stopping) {
            struct timespec tick; /* idle: wake once a second for maintenance */
            clock_gettime(CLOCK_REALTIME, &tick);
            tick.tv_sec += 1;
            if (pthread_cond_timedwait(&w->cv, &w->mu, &tick) != 0 && !work_for(w, t) && !w->stopping) {
                pthread_mutex_unlock(&w->mu);
                maintain(t);
                pthread_mutex_lock(&w->mu);
            }
        }
        if (!work_for(w, t) && w->stopping)
            break;
        /* A short wait lets concurrent requests join this transaction: one fsync for many. */
        if (w->group_ms && w->queued < 8 && !w->stopping) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (long)w->group_ms * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec += until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
            }
            pthread_cond_timedwait(&w->cv, &w->mu, &until);
        }
        size_t n = 0;
        for (fj_write_req *r; n < GROUP_MAX && t->index == 0 && (r = pop(&w->metrics)); w->queued--)
            group[n++] = r;
        for (fj_write_req *r; n < GROUP_MAX && (r = pop(&w->rest)); w->queued--)
            group[n++] = r;
        pthread_mutex_unlock(&w->mu);
        if (n) /* another thread may have taken what the wait saw */
            commit_group(t, group, n);
        maintain(t);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void join_threads(fj_writer *w)
{
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < w->n_threads; i++)
        pthread_join(w->threads[i].thread, NULL);
    flush_logs(true);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    fj_free(w);
}

fj_writer *fj_writer_start(fj_store *const *stores, size_t n_stores, size_t queue_max, unsigned group_ms)
{
    if (n_stores < 1 || n_stores > FJ_WRITERS_MAX)
        return NULL;
    fj_writer *w = fj_calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->queue_max = queue_max ? queue_max : 1;
    w->group_ms = group_ms;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (size_t i = 0; i < n_stores; i++) {
        w->threads[i] = (writer_thread){w, stores[i], 0, i};
        if (pthread_create(&w->threads[i].thread, NULL, writer_main, &w->threads[i]) != 0) {
            join_threads(w);
            return NULL;
        }
        w->n_threads++;
    }
    return w;
}

fj_status fj_writer_submit(fj_writer *w, fj_write_req *r)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->queued >= w->queue_max) {
        pthread_mutex_unlock(&w->mu);
        return FJ_EBUSY;
    }
    push(has_metrics(r->batch) ? &w->metrics : &w->rest, r);
    w->queued++;
    /* every thread: the one that may take it could be any of them */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return FJ_OK;
}

size_t fj_writer_queued(fj_writer *w)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->queued;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void fj_writer_stop(fj_writer *w)
{
    if (!w)
        return;
    join_threads(w); /* each thread commits what it may take before it ends */
}
