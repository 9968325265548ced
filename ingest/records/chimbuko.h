/* ingest/records/chimbuko.h — the typed records of Chimbuko (ingest/chimbuko.h decodes them;
 * docs/chimbuko.md): the parameter server's packets and the provenance database's collections. */
#ifndef FJ_RECORDS_CHIMBUKO_H
#define FJ_RECORDS_CHIMBUKO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Chimbuko's timestamps are TAU trace times in microseconds since 1970 (the pserver's created_at
 * in milliseconds): kept at that resolution (_us, _ms), never rounded to fj_time. */

/* A RunStats block. count is a whole number (Chimbuko writes it as a double). A value sent as
 * null, and the minimum/maximum of an empty RunStats (count 0: DBL_MAX/DBL_MIN sentinels), are
 * NAN. json: the same block as compact canonical JSON (null for NAN), for storage to keep whole. */
typedef struct fj_cb_stats {
    uint64_t count;
    double accumulate, minimum, maximum, mean, stddev, skewness, kurtosis;
    const char *json;
} fj_cb_stats;

/* A function's aggregated anomaly metrics (pserver anomaly_metrics new_data/all_data; global
 * func_stats anomaly_metrics with its anomaly_count as count). json: the object, canonical. */
typedef struct fj_cb_metrics {
    fj_cb_stats count, score, severity;
    uint64_t first_io_step, last_io_step;
    int64_t min_ts_us, max_ts_us;
    const char *json;
} fj_cb_metrics;

/* pserver anomaly_stats.anomaly[*].data[*]: one IO step of one rank with anomalies. */
typedef struct fj_cb_step {
    uint64_t app, rank, step, n_anomalies;
    int64_t min_ts_us, max_ts_us;
    fj_cb_stats scores; /* json NULL when the packet had no outlier_scores (before 2021-05) */
} fj_cb_step;

/* pserver anomaly_stats.anomaly[*]: a rank's anomalies per IO step since the run began. */
typedef struct fj_cb_rank {
    uint64_t app, rank; /* from key "app:rank" */
    fj_cb_stats stats;
    fj_cb_step *steps;
    size_t n_steps;
} fj_cb_rank;

/* pserver anomaly_stats.func[*]: a function's cumulative profile. */
typedef struct fj_cb_func {
    uint64_t app, fid;
    const char *name;
    fj_cb_stats anomalies, inclusive, exclusive;
} fj_cb_func;

/* counter_stats (pserver packet and global provenance DB). */
typedef struct fj_cb_counter {
    uint64_t app;
    const char *counter;
    fj_cb_stats stats;
} fj_cb_counter;

/* pserver anomaly_metrics[*]: one (app, rank, function) with anomalies since the last send. */
typedef struct fj_cb_func_metrics {
    uint64_t app, rank, fid;
    const char *fname;
    fj_cb_metrics new_data, all_data;
} fj_cb_func_metrics;

/* One pserver packet (POST /api/anomalydata). Arrays are empty when their payload was absent. */
typedef struct fj_cb_packet {
    int64_t version;          /* 0: absent (packets before Chimbuko's version 2) */
    int64_t created_at_ms;
    int64_t stats_created_at_ms; /* anomaly_stats.created_at; 0 when absent */
    fj_cb_rank *ranks;
    size_t n_ranks;
    fj_cb_func *funcs;
    size_t n_funcs;
    fj_cb_counter *counters;
    size_t n_counters;
    fj_cb_func_metrics *metrics;
    size_t n_metrics;
} fj_cb_packet;

/* A function execution of the provenance DB (collections anomalies and normalexecs). Its event
 * label is "rid:io_step:idx"; JSON members are canonical compact JSON, NULL when absent or null. */
typedef struct fj_cb_event {
    int64_t version;          /* 0: a record before schema version 2 (no version member) */
    uint64_t pid, rid, tid, io_step, idx, fid;
    const char *func;
    int64_t entry_us, exit_us; /* exit 0: had not exited */
    int64_t runtime_total_us, runtime_exclusive_us, io_step_tstart_us, io_step_tend_us;
    double outlier_score, outlier_severity; /* NAN when absent (before version 2) */
    const char *hostname;
    int is_gpu_event;         /* 1, 0, or -1 when absent */
    bool has_gpu_location;
    uint64_t gpu_thread, gpu_device, gpu_context, gpu_stream;
    const char *gpu_parent_event; /* the launching CPU event's label; NULL when none */
    uint64_t gpu_parent_tid;
    const char *gpu_parent_error; /* gpu_parent sent as a "Chimbuko error: ..." string */
    const char *algo;         /* "sstd" (RunStats model; also a legacy func_stats), "histogram"
                               * (HBOS/COPOD), NULL without a model */
    const char *algo_params, *call_stack, *counter_events, *event_window, *node_state, *gpu_parent;
    size_t n_call_stack, n_counter_events, n_exec_window, n_comm_window;
} fj_cb_event;

/* A metadata record (TAU metadata item of a rank/thread); value is always a string. */
typedef struct fj_cb_meta {
    uint64_t pid, rid, tid; /* pid 0 when absent (before Oct 2020) */
    const char *descr, *value;
} fj_cb_meta;

/* A global-DB func_stats record: a function's final profile and anomaly metrics. */
typedef struct fj_cb_profile {
    uint64_t app, fid;
    const char *fname;
    bool has_runtime;        /* runtime_profile was not null */
    fj_cb_stats inclusive, exclusive;
    bool has_anomalies;      /* anomaly_metrics was not null (the function had anomalies) */
    fj_cb_metrics anomalies;
} fj_cb_profile;

typedef enum fj_cb_collection {
    FJ_CB_PACKET = 0,  /* a pserver packet */
    FJ_CB_ANOMALIES,
    FJ_CB_NORMALEXECS,
    FJ_CB_METADATA,
    FJ_CB_FUNC_STATS,
    FJ_CB_COUNTER_STATS,
    FJ_CB__COUNT
} fj_cb_collection;

/* One request's Chimbuko data: a packet, or records of one provenance collection. */
typedef struct fj_chimbuko {
    fj_cb_collection collection;
    const char *run;          /* the run label the sender chose (?run=); never NULL */
    fj_cb_packet packet;
    fj_cb_event *events;      /* anomalies, normalexecs */
    size_t n_events;
    fj_cb_meta *meta;
    size_t n_meta;
    fj_cb_profile *profiles;  /* func_stats */
    size_t n_profiles;
    fj_cb_counter *counters;  /* global counter_stats */
    size_t n_counters;
} fj_chimbuko;

#endif
