/* storage/query/load.h — node load, cluster load and GPU load per card as every backend answers them: the
 * window and its grid, each node's samples in time buckets (storage/query/loadagg.h), the hourly roll-ups that
 * answer the whole hours of a whole-hour width, the node rows, the cluster's fold of them, and
 * the per-card series (storage/query/gpuload.h), and the queries themselves (fj_store_query_node_load,
 * _cluster_load, _gpu_load: storage/core/store_query.h), their
 * SQL written once in the driver's dialect and a sample's cards read in the backend's layout
 * (fj_layout_sql). A backend may read many nodes at once its own way (fj_qload_bulk, which its
 * driver's load_bulk sets up) with the per-sample functions at the end; node by node is the
 * default. Not
 * thread-safe: one fj_qload per thread. Not a public header. */
#ifndef FJ_QUERY_LOAD_H
#define FJ_QUERY_LOAD_H

#include "storage/query/loadagg.h"
#include "storage/query/qmath.h"
#include "storage/query/qx.h"

/* One node being read. */
typedef struct fj_qload_node {
    int64_t id;
    const char *name;
    fj_loadagg_bucket *b;    /* the grid's buckets (g.n, or the one of fj_qload_hour_init); borrowed */
    /* counters of the next CPU interval's start; c grows with fj_realloc and is freed by the
     * fj_qload_*_rows that read the node (a roll-up writer frees its own) */
    fj_qm_cpustate cpu;
} fj_qload_node;

/* The statements of one node's reading, with node $1 and times $2..$3 (both included) bound here
 * as far as each names them. */
typedef struct fj_qload_stmts {
    fj_qrows prev;     /* (time, boot, cpus) of the latest sample with counters before $2 */
    fj_qrows samples;  /* (time, boot, used_memory_kb, load1, load5, load15, cpus), by time */
    fj_qrows gpus;     /* (time, ce_util, memory_kb, power, temperature) of each card, by time, index */
    fj_qrows has_gpus; /* (sysinfo rows, most cards) of node $1 only */
} fj_qload_stmts;

/* The statements of the hourly and daily roll-ups (tables load_hourly, load_daily). */
typedef struct fj_qload_rollups {
    fj_qrows pending; /* a row while roll-ups are still to be computed (load_hourly_todo) */
    fj_qrows hourly;  /* (hour, FJ_LOADAGG_COLS_SQL) of node $1, hours $2 <= hour < $3 */
    fj_qrows daily;   /* (day, FJ_LOADAGG_COLS_SQL) of node $1, days $2 <= day < $3 */
} fj_qload_rollups;

typedef struct fj_qload fj_qload;

/* A backend's reading of many nodes at once, used instead of node by node when there are at least
 * min_nodes and the buckets of all of them take at most max_bytes. read fills the buckets
 * [b_lo, b_hi) of every node of l from the samples of [l->from, l->to], with the same figures as
 * fj_qload_read_node would give; it may change l's fields while it runs but restores them. done
 * (when not NULL) frees ctx's statements at the query's end. */
typedef struct fj_qload_bulk {
    size_t min_nodes;
    size_t max_bytes;
    fj_status (*read)(fj_qload *l, void *ctx);
    void (*done)(void *ctx);
    void *ctx;
} fj_qload_bulk;

/* A load query being answered. Set by fj_qload_begin; a backend's bulk reader may narrow the
 * window to a part of the grid (from, to, b_lo, b_hi: [from, to] covers exactly those buckets). */
struct fj_qload {
    fj_qenv e; /* err and the arena are used */
    fj_qm_grid g;
    fj_time from, to;
    size_t b_lo, b_hi;
    fj_qload_node *ns; /* the wanted nodes, by name */
    size_t n_ns;
    fj_qload_stmts st;            /* the backend's, prepared after fj_qload_begin */
    const fj_qload_bulk *bulk;    /* NULL: node by node */
};

/* Resolves q's window in place (to: now; from: a day before to; bucket: fj_qm_default_bucket) so
 * that the answer shows what was used, makes the grid and lists the wanted nodes by name (arena).
 * FJ_EINVAL for from after to or too many buckets, FJ_ENOMEM. e: cluster and nodes loaded. */
fj_status fj_qload_begin(fj_qload *l, const fj_qenv *e);
/* Emits table fj_qt_node_load: the wanted nodes' buckets with samples, by name and time. */
fj_status fj_qload_node_rows(fj_qload *l, const fj_qload_rollups *ru);
/* Emits table fj_qt_cluster_load: the nodes' buckets folded, by time. */
fj_status fj_qload_cluster_rows(fj_qload *l, const fj_qload_rollups *ru);
/* Emits table fj_qt_gpu_load. cards: (card index, uuid, time, ce_util, memory_kb, power,
 * temperature) of node $1's cards in times $2..$3, by index, uuid (NULL first) and time. */
fj_status fj_qload_gpu_rows(fj_qload *l, const fj_qrows *cards);

/* The per-node statements (fj_qload_stmts) prepared in x, with the cards' SQL of x's layout;
 * fj_qload_stmts_free frees them (also after a failure here). The load queries and the writers'
 * roll-up upkeep use them alike. */
fj_status fj_qload_stmts_prepare(fj_qx *x, fj_qload_stmts *st);
void fj_qload_stmts_free(fj_qx *x, fj_qload_stmts *st);

/* --- the hourly roll-ups' writer ------------------------------------------------------------- */

/* Sets l up to read one node's hours into one bucket with st (not owned). */
void fj_qload_hour_init(fj_qload *l, const fj_qenv *e, const fj_qload_stmts *st);
/* Reads node n's samples of [from, hour + FJ_LOADAGG_ROLLUP_S) into its one bucket n->b: from the
 * hour's start, what the hour's roll-up holds (any window containing the hour sees the same CPU
 * intervals: the first opens at the node's latest sample with counters); from after a stored
 * roll-up's last sample, what it lacks (fj_loadagg_merge adds it). */
fj_status fj_qload_read_hour(fj_qload *l, fj_qload_node *n, fj_time hour, fj_time from);

/* --- the per-sample functions, for a backend's own reading ----------------------------------- */

/* One sample row of a node, as read. */
typedef struct fj_qload_sample {
    fj_time t, boot;
    bool has_mem, has_load;
    double mem_kb, load1, load5, load15;
    const void *cpus; /* cumulative per-core counters (storage/query/qmath.h), NULL or empty for none */
    size_t cpus_len;
} fj_qload_sample;

/* The cards of one sample time, summed card by card before they go into the time's bucket. */
typedef struct fj_qload_cards {
    fj_time t;
    int64_t n;
    double util_sum, util_max, mem, power, temp_sum, temp_max;
} fj_qload_cards;

/* Clears n's buckets [b_lo, b_hi) and opens its first CPU interval (statement prev). */
fj_status fj_qload_node_start(fj_qload *l, fj_qload_node *n);
/* Adds a sample of n; a node's samples must come in time order, after fj_qload_node_start.
 * FJ_ENOMEM. */
fj_status fj_qload_add_sample(fj_qload *l, fj_qload_node *n, const fj_qload_sample *s);
/* Adds one card's reading to the cards of c->t. */
void fj_qload_card_add(fj_qload_cards *c, double util, double mem, double power, double temp);
/* Adds the cards of c->t (if any) to n's bucket of that time and clears c. */
void fj_qload_cards_flush(const fj_qload *l, fj_qload_node *n, fj_qload_cards *c);
/* Reads node n alone with l->st: fj_qload_node_start, its samples, and its cards when it reports
 * GPUs (or never sent a sysinfo). */
fj_status fj_qload_read_node(fj_qload *l, fj_qload_node *n);

#endif
