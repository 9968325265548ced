/* read_pool.h — the threads that run reads, and the watch that stops them.
 *
 * A read (a route that needs a read credential: InfluxQL, the query API, CSV, cc-metric-store's
 * /api/query) runs here with its connection suspended, never on libmicrohttpd's worker threads.
 * Those threads are what uploads need to be decoded and acknowledged; in libmicrohttpd's thread
 * pool a connection belongs to one worker, so a read that ran on a worker would stall every
 * connection of that worker until it ended. At most `threads` reads run at once; `queue_max` more
 * may wait (submit answers FJ_EBUSY beyond). Pool threads run at a lower CPU priority (nice +5),
 * so on a busy host acknowledgements get the CPU before long scans.
 *
 * Every 100 ms a watch thread sets a job's cancellation token when its deadline has passed or its
 * client has closed the connection (poll(2) on the suspended socket: POLLRDHUP, POLLHUP, POLLERR);
 * the job's loops see the token and stop, and a statement it waits for is stopped through the
 * token's hook (fj_cancel_hook), called again every round while the job still runs. Thread-safe. */
#ifndef FJ_READ_POOL_H
#define FJ_READ_POOL_H

#include "cancel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fj_read_pool fj_read_pool;

typedef struct fj_read_job fj_read_job;
struct fj_read_job {
    void (*run)(fj_read_job *j);  /* on a pool thread, with fj_cancel_current() == &cancel */
    void (*done)(fj_read_job *j); /* then, on the same thread, once the pool no longer watches j:
                                   * resumes the connection (j may be freed from then on) */
    fj_cancel cancel;             /* zeroed by the submitter */
    int fd;                       /* the client's socket, watched until done; -1: not watched */
    int64_t deadline_ns;          /* CLOCK_MONOTONIC (fj_mono_ns); 0: none */
    fj_read_job *prev, *next;     /* private */
    int firing;                   /* private: the watch is calling its token's hook */
};

/* threads: 1-256 running at once; queue_max: waiting beyond them. NULL on failure. */
fj_read_pool *fj_read_pool_start(unsigned threads, unsigned queue_max);

/* Queues j. FJ_EBUSY when queue_max jobs wait already or the pool is stopping (j not taken). A
 * job submitted after fj_read_pool_cancel_all starts cancelled with the same reason. */
fj_status fj_read_pool_submit(fj_read_pool *p, fj_read_job *j);

/* Sets every queued and running job's token (and those submitted later): SIGTERM's drain. */
void fj_read_pool_cancel_all(fj_read_pool *p, fj_cancel_why why);

/* What the pool has done since it started, and does now (GET /metrics). */
typedef struct fj_read_pool_stats {
    size_t running, queued;          /* now */
    uint64_t queue_full;             /* submissions refused: read-queue jobs were waiting */
    uint64_t cancelled_deadline;     /* jobs the watch stopped at their deadline (query-timeout) */
    uint64_t cancelled_client_gone;  /* jobs the watch stopped because their client left */
} fj_read_pool_stats;
void fj_read_pool_stats_of(fj_read_pool *p, fj_read_pool_stats *out);

/* Cancels everything, lets the threads finish what is queued (each job still gets run and done,
 * so every suspended connection is resumed and answered), joins them and frees the pool. */
void fj_read_pool_stop(fj_read_pool *p);

#endif
