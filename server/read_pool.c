/* read_pool.c — read threads with a bounded queue, and the watch thread that cancels reads whose
 * deadline passed or whose client left (read_pool.h). One mutex guards both lists; the watch
 * holds it while it polls, so a job's socket stays open (its connection suspended) for as long as
 * the job is on a list: a job leaves the list under the mutex before its done() resumes it.
 *
 * A cancelled running job's token hook (a PostgreSQL cancel request: a connection to the database
 * server, which can wait on the network) is called with the mutex released, so that submissions
 * and the other threads never wait on it; the job is marked `firing` meanwhile and its thread
 * waits for the mark to go before the job leaves the list. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "server/read_pool.h"

#include "alloc.h"
#include "log.h"
#include "timefmt.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { WATCH_MS = 100, READ_NICE = 5, MAX_THREADS = 256 };

typedef struct job_list {
    fj_read_job *head, *tail;
    size_t n;
} job_list;

struct fj_read_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, watch_cv, fired;
    fj_read_job **fire;  /* the watch's list of jobs whose hook it calls (n_threads at most) */
    job_list queued, running;
    unsigned queue_max;
    int cancel_all;  /* fj_cancel_why given to every job from now on; 0: none */
    bool stopping;
    pthread_t *threads, watcher;
    unsigned n_threads;
    bool watcher_started;
    fj_read_pool_stats n; /* the counters (running and queued are the lists'), under mu */
};

static void list_push(job_list *l, fj_read_job *j)
{
    j->next = NULL;
    j->prev = l->tail;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->n++;
}

static void list_unlink(job_list *l, fj_read_job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        l->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        l->tail = j->prev;
    j->prev = j->next = NULL;
    l->n--;
}

/* The client closed (FIN: POLLRDHUP), reset (POLLERR/POLLHUP) or the descriptor is gone. Bytes
 * waiting (a pipelined request) are not a close. */
static bool client_gone(int fd)
{
    if (fd < 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Calls the hooks of the cancelled running jobs (a statement they wait for is stopped), with the
 * mutex released meanwhile; called and returns with it held. */
static void fire_cancelled(fj_read_pool *p)
{
    size_t n = 0;
    for (fj_read_job *j = p->running.head; j && n < p->n_threads; j = j->next)
        if (fj_cancel_check(&j->cancel)) {
            j->firing = 1;
            p->fire[n++] = j;
        }
    if (!n)
        return;
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++)
        fj_cancel_fire(&p->fire[i]->cancel);
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < n; i++)
        p->fire[i]->firing = 0;
    pthread_cond_broadcast(&p->fired);
}

static void watch_list(fj_read_pool *p, const job_list *l, int64_t now)
{
    for (fj_read_job *j = l->head; j; j = j->next) {
        if (fj_cancel_check(&j->cancel))
            continue;
        if (j->deadline_ns && now >= j->deadline_ns) {
            fj_cancel_set(&j->cancel, FJ_CANCEL_TIMEOUT);
            p->n.cancelled_deadline++;
        } else if (client_gone(j->fd)) {
            fj_cancel_set(&j->cancel, FJ_CANCEL_CLIENT_GONE);
            p->n.cancelled_client_gone++;
        }
    }
}

static void *watch_main(void *arg)
{
    fj_read_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WATCH_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->watch_cv, &p->mu, &until);
        int64_t now = fj_mono_ns();
        watch_list(p, &p->queued, now);
        watch_list(p, &p->running, now);
        fire_cancelled(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *read_main(void *arg)
{
    fj_read_pool *p = arg;
    /* On Linux a nice value is per thread: only this thread yields to the acknowledgements. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, (id_t)tid);
    if (errno == 0)
        setpriority(PRIO_PROCESS, (id_t)tid, nice_now + READ_NICE);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->queued.head && !p->stopping)
            pthread_cond_wait(&p->work, &p->mu);
        fj_read_job *j = p->queued.head;
        if (!j)
            break; /* stopping and nothing left */
        list_unlink(&p->queued, j);
        list_push(&p->running, j);
        pthread_mutex_unlock(&p->mu);
        fj_cancel_set_current(&j->cancel);
        j->run(j);
        fj_cancel_set_current(NULL);
        pthread_mutex_lock(&p->mu);
        while (j->firing) /* the watch is sending its cancel request: j must live until it is sent */
            pthread_cond_wait(&p->fired, &p->mu);
        list_unlink(&p->running, j);
        pthread_mutex_unlock(&p->mu);
        j->done(j); /* j may be freed from here on */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void join_all(fj_read_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_cond_broadcast(&p->watch_cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    if (p->watcher_started)
        pthread_join(p->watcher, NULL);
}

static void free_pool(fj_read_pool *p)
{
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->watch_cv);
    pthread_cond_destroy(&p->fired);
    fj_free(p->fire);
    fj_free(p->threads);
    fj_free(p);
}

fj_read_pool *fj_read_pool_start(unsigned threads, unsigned queue_max)
{
    if (threads < 1 || threads > MAX_THREADS)
        return NULL;
    fj_read_pool *p = fj_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = fj_calloc(threads, sizeof *p->threads);
    p->fire = fj_calloc(threads, sizeof *p->fire);
    if (!p->threads || !p->fire) {
        fj_free(p->threads);
        fj_free(p->fire);
        fj_free(p);
        return NULL;
    }
    p->queue_max = queue_max;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->watch_cv, NULL);
    pthread_cond_init(&p->fired, NULL);
    for (; p->n_threads < threads; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, read_main, p) != 0)
            break;
    p->watcher_started = p->n_threads == threads && pthread_create(&p->watcher, NULL, watch_main, p) == 0;
    if (!p->watcher_started) {
        fj_error("read pool: cannot start its threads");
        join_all(p);
        free_pool(p);
        return NULL;
    }
    return p;
}

fj_status fj_read_pool_submit(fj_read_pool *p, fj_read_job *j)
{
    pthread_mutex_lock(&p->mu);
    bool full = p->stopping || p->queued.n >= p->queue_max;
    if (!full) {
        if (p->cancel_all)
            fj_cancel_set(&j->cancel, (fj_cancel_why)p->cancel_all);
        list_push(&p->queued, j);
        pthread_cond_signal(&p->work);
    } else {
        p->n.queue_full++;
    }
    pthread_mutex_unlock(&p->mu);
    return full ? FJ_EBUSY : FJ_OK;
}

void fj_read_pool_cancel_all(fj_read_pool *p, fj_cancel_why why)
{
    pthread_mutex_lock(&p->mu);
    p->cancel_all = (int)why;
    for (fj_read_job *j = p->queued.head; j; j = j->next)
        fj_cancel_set(&j->cancel, why);
    for (fj_read_job *j = p->running.head; j; j = j->next)
        fj_cancel_set(&j->cancel, why);
    pthread_cond_signal(&p->watch_cv); /* the watch stops their statements now */
    pthread_mutex_unlock(&p->mu);
}

void fj_read_pool_stats_of(fj_read_pool *p, fj_read_pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->n;
    out->running = p->running.n;
    out->queued = p->queued.n;
    pthread_mutex_unlock(&p->mu);
}

void fj_read_pool_stop(fj_read_pool *p)
{
    if (!p)
        return;
    fj_read_pool_cancel_all(p, FJ_CANCEL_SHUTDOWN);
    join_all(p);
    free_pool(p);
}
