/* storage/core/store_chimbuko.h — Chimbuko's part of the storage engine (docs/chimbuko.md): query
 * descriptions and result tables whose column lists (storage/chimbuko/cols.c) its queries emit,
 * through the row sink of storage/core/store_query.h and under its contract, and the queries
 * (fj_store_chimbuko_*). */
#ifndef FJ_STORE_CHIMBUKO_H
#define FJ_STORE_CHIMBUKO_H

#include "ingest/records/chimbuko.h"
#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The series of cb_series, each grouped (n_key) so that the API nests points under their key. */
typedef enum fj_cb_series {
    FJ_CBS_RANKS = 0, /* fj_qt_cb_ranks: anomalies per IO step of each (run, app, rank) */
    FJ_CBS_FUNCTIONS, /* fj_qt_cb_functions: cumulative profile of each (run, app, function) */
    FJ_CBS_METRICS,   /* fj_qt_cb_metrics: anomaly metrics of each (run, app, rank, function) */
    FJ_CBS_COUNTERS   /* fj_qt_cb_counters: cumulative statistics of each (run, app, counter) */
} fj_cb_series;

/* Every Chimbuko query takes one of these; each op's comment below says which fields it
 * reads. Times are microseconds since 1970 (Chimbuko's resolution); packet times (created_at, in
 * milliseconds) are compared at that resolution. */
typedef struct fj_cb_query {
    const char *cluster;          /* required: FJ_EINVAL without, FJ_ENOTFOUND when unknown */
    const char *run;              /* a run label; NULL: every run */
    int64_t app, rank, fid, idx;  /* -1: any (idx: the third part of an event label) */
    const char *func;             /* a function name, exact; NULL: any */
    int64_t step_from, step_to;   /* IO steps, inclusive; -1: open */
    int64_t from_us, to_us;       /* time window, inclusive; 0: open */
    fj_cb_series series;          /* cb_series */
    fj_cb_collection collection;  /* cb_records: FJ_CB_ANOMALIES, FJ_CB_NORMALEXECS, FJ_CB_METADATA,
                                   * FJ_CB_FUNC_STATS, FJ_CB_COUNTER_STATS; FJ_CB_PACKET selects the
                                   * events of both event collections */
    bool brief;                   /* cb_records events: null for the large JSON columns (call_stack,
                                   * counter_events, event_window, node_state, algo_params, gpu_parent) */
    size_t limit;                 /* rows (per table for cb_top); 0: no limit */
    fj_qpos after;                /* cb_records events: rows after this (v: entry_us, id: row) */
    /* out */
    fj_qpos next;                 /* set when more rows follow: the position of the last row sent */
} fj_cb_query;

/* A cb_query that filters nothing. */
void fj_cb_query_init(fj_cb_query *q);

/* The result tables (storage/chimbuko/cols.c). */
extern const fj_qtable fj_qt_cb_runs, fj_qt_cb_ranks, fj_qt_cb_functions, fj_qt_cb_metrics, fj_qt_cb_counters,
    fj_qt_cb_top_ranks, fj_qt_cb_top_functions, fj_qt_cb_events, fj_qt_cb_metadata, fj_qt_cb_profiles,
    fj_qt_cb_final_counters;

/* Chimbuko's queries (written once: storage/chimbuko/query.c) over what write stored (kind
 * FJ_KIND_CHIMBUKO). They follow the query API's contract (storage/core/store_query.h: rows into
 * a sink, one read snapshot; FJ_ENOTFOUND for an unknown cluster). */
/* fj_qt_cb_runs: cluster, run. */
fj_status fj_store_chimbuko_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
/* The table of q->series, ordered by its key then time: cluster, run, app, and per series rank,
 * step_from/to, from/to (ranks: steps overlapping the window); fid, func (functions, metrics);
 * rank (metrics); func as the counter name (counters); limit. */
fj_status fj_store_chimbuko_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
/* fj_qt_cb_top_ranks then fj_qt_cb_top_functions, most anomalies first: cluster, run, app,
 * rank, fid, func (functions), from/to, limit (per table). */
fj_status fj_store_chimbuko_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
/* The provenance records of q->collection: fj_qt_cb_events (entry order, keyset pages: after,
 * limit, next; filters run, app, rank, fid, func, idx, step_from/to, from/to, brief),
 * fj_qt_cb_metadata (run, app, rank), fj_qt_cb_profiles (run, app, fid, func),
 * fj_qt_cb_final_counters (run, app, func as the counter name). */
fj_status fj_store_chimbuko_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);

#endif
