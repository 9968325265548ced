/* server/prom_int.h — what the counters (prom.c) and the page that shows them (prom_page.c)
 * share: the counters' shape and the one set of them. Not for other files: they count through
 * prom.h. */
#ifndef FJ_SERVER_PROM_INT_H
#define FJ_SERVER_PROM_INT_H

#include "server/prom.h"

#include "storage/core/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    MAX_ROUTES = 64,  /* labelled routes; row MAX_ROUTES is "no route" (404s, refused URIs) */
    MAX_NAMES = 256,  /* clusters and credential names; index MAX_NAMES is "_other" */
    MAX_REASONS = 32, /* error codes; index MAX_REASONS is "other" */
    NAME_LEN = 64,
    STORE_EVERY_S = 10,
};

static const int statuses[] = {200, 201, 204, 400, 401, 403, 404, 405, 408, 409,
                               413, 414, 415, 422, 429, 500, 501, 503};
#define N_STATUS (sizeof statuses / sizeof statuses[0] + 1) /* the last: any other */

/* Commit histograms' upper bounds: batches in one transaction, seconds one took. */
static const double size_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
static const double latency_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_SIZE_B (sizeof size_bounds / sizeof size_bounds[0])
#define N_LAT_B (sizeof latency_bounds / sizeof latency_bounds[0])

typedef atomic_uint_fast64_t counter;

/* A bounded set of names: read without a lock (an entry is published by its `used` flag, with
 * release order, after its name is written), added to under mu. */
typedef struct name_table {
    pthread_mutex_t mu;
    atomic_bool used[MAX_NAMES];
    char names[MAX_NAMES][NAME_LEN];
    atomic_uint n;
    unsigned cap;
} name_table;

typedef struct per_unit {
    counter accepted[MAX_NAMES + 1];
    counter refused[MAX_NAMES + 1][MAX_REASONS + 1];
} per_unit;

static const char *const auth_reasons[3] = {"unauthorized", "rate_limited", "malformed"};
static const char *const udp_results[5] = {"accepted", "refused", "bad", "dropped", "overflowed"}; /* fj_prom_udp_result */

/* Every counter of the process, written by the request threads and the writer, read by the page. */
struct fj_prom_state {
    const fj_route *routes;
    unsigned n_routes;
    double start_s; /* process start, Unix seconds */
    counter requests[MAX_ROUTES + 1][N_STATUS];
    counter bytes_in[MAX_ROUTES + 1][N_STATUS];
    counter bytes_out[MAX_ROUTES + 1][N_STATUS];
    name_table reasons, names;
    counter auth_fail[3];
    counter udp[5];
    per_unit units[2];
    atomic_int_fast64_t last_accepted[MAX_NAMES + 1]; /* Unix ms; 0 = never */
    atomic_int_fast64_t last_refused[MAX_NAMES + 1];
    /* group commits (writer thread): histograms as cumulative-to-be buckets */
    counter commit_size[N_SIZE_B + 1], commit_latency[N_LAT_B + 1], commits, commit_batches;
    atomic_uint_fast64_t commit_seconds_us;
    /* the storage figures' cache */
    pthread_mutex_t store_mu;
    int64_t store_at_ns;
    bool store_ok;
    fj_store_stats store;
};
extern struct fj_prom_state fj_prom;

#define ADD(c, v) atomic_fetch_add_explicit(&(c), (uint_fast64_t)(v), memory_order_relaxed)
#define GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

#endif
