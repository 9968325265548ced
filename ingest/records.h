/* records.h — the typed records between decoders and storage.
 *
 * Decoders turn request bodies into an fj_batch of these records and never touch storage; storage
 * backends consume batches and never parse. Everything a batch points to lives in the batch's
 * arena and is freed with it (fj_batch_free). Strings are NUL-terminated UTF-8; an optional string
 * that was absent or empty is NULL. Times are fj_time (seconds since 1970 UTC), 0 = unknown.
 *
 * Values are stored as they are meant, not as they were encoded: ExtendedUint fields are decoded
 * (FJ_XU_UNSET / FJ_XU_INFINITE / the value), Sonar's off-by-one performance_state is corrected,
 * `num_threads` stays as sent (threads - 1) and `rolledup` stays as sent (additional processes). */
#ifndef FJ_RECORDS_H
#define FJ_RECORDS_H

#include "arena.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decoded ExtendedUint: a plain value, or one of these two markers. */
#define FJ_XU_UNSET UINT64_MAX
#define FJ_XU_INFINITE (UINT64_MAX - 1)

typedef enum fj_kind {
    FJ_KIND_SAMPLE = 0,
    FJ_KIND_SYSINFO,
    FJ_KIND_JOB,      /* Slurm job records (Sonar DataType "job", also "jobs") */
    FJ_KIND_CLUSTER,
    FJ_KIND_MEASUREMENTS, /* an NVIDIA aicr snapshot (ingest/aicr.h) */
    FJ_KIND_METRICS,  /* line protocol: metric points, ClusterCockpit messages and jobs (ingest/cc.h) */
    FJ_KIND_CHIMBUKO, /* Chimbuko pserver packets and provenance records (ingest/chimbuko.h) */
    FJ_KIND__COUNT
} fj_kind;

/* "sample", "sysinfo", "job", "cluster", "measurements", "metrics". */
const char *fj_kind_name(fj_kind k);

/* --- Sysinfo --------------------------------------------------------------------------- */

typedef struct fj_gpu_card {
    uint64_t index;
    const char *uuid, *address, *manufacturer, *model, *architecture, *driver, *firmware;
    uint64_t memory_kb, power_limit, max_power_limit, min_power_limit, max_ce_clock, max_memory_clock;
} fj_gpu_card;

typedef struct fj_sysinfo {
    const char *os_name, *os_release, *architecture, *cpu_model;
    uint64_t numa_nodes, sockets, cores_per_socket, threads_per_core, memory_kb;
    const char *topo_svg, *topo_text; /* base64 as sent (validated as base64), or NULL */
    fj_gpu_card *cards;
    size_t n_cards;
    uint64_t *distances; /* distances_dim x distances_dim, row-major; NULL when not sent */
    size_t distances_dim;
} fj_sysinfo;

/* --- Samples --------------------------------------------------------------------------- */

typedef struct fj_sample_gpu {
    uint64_t index;
    const char *uuid;
    uint64_t failing, fan;
    const char *compute_mode;
    uint64_t performance_state; /* FJ_XU_UNSET when unknown, else the real P-state */
    uint64_t memory_kb, ce_util, memory_util;
    int64_t temperature;
    uint64_t power, power_limit, ce_clock, memory_clock;
} fj_sample_gpu;

typedef struct fj_sample_disk {
    const char *name;
    uint64_t major, minor;
    uint64_t *stats;
    size_t n_stats;
} fj_sample_disk;

typedef struct fj_proc_gpu {
    uint64_t index;
    const char *uuid;
    double gpu_util;
    uint64_t gpu_memory_kb;
    double gpu_memory_util;
} fj_proc_gpu;

typedef struct fj_sample_proc {
    uint64_t pid, ppid;
    const char *cmd;
    uint64_t resident_kb, virtual_kb;
    bool in_container;
    uint64_t num_threads; /* threads - 1, as sent */
    double cpu_avg, cpu_util;
    uint64_t cpu_time, data_read_kb, data_written_kb, data_cancelled_kb;
    uint64_t rolledup;    /* additional processes merged into this record */
    bool synthetic_pid;   /* pid 0 or above pid_max: a rolled-up group, not a real process */
    fj_proc_gpu *gpus;
    size_t n_gpus;
} fj_sample_proc;

typedef struct fj_sample_job {
    uint64_t job, epoch; /* epoch 0: a Slurm job */
    const char *user;
    fj_sample_proc *procs;
    size_t n_procs;
} fj_sample_job;

typedef struct fj_sample {
    bool has_system;      /* the `system` object was present */
    fj_time boot;         /* 0 when absent (before Sonar 0.17) */
    uint64_t *cpus;       /* cumulative CPU-seconds per core */
    size_t n_cpus;
    fj_sample_gpu *gpus;
    size_t n_gpus;
    fj_sample_disk *disks;
    size_t n_disks;
    uint64_t used_memory_kb;
    double load1, load5, load15;
    uint64_t runnable_entities, existing_entities;
    fj_sample_job *jobs;
    size_t n_jobs;
} fj_sample;

/* --- Slurm jobs ------------------------------------------------------------------------ */

typedef struct fj_sacct {
    const char *alloc_tres;
    uint64_t ave_cpu, ave_disk_read, ave_disk_write, ave_rss, ave_vmsize, elapsed_raw, max_rss,
        max_vmsize, min_cpu, system_cpu, user_cpu;
} fj_sacct;

typedef struct fj_slurm_job {
    uint64_t job_id;
    const char *job_step; /* "" for the job itself; never NULL */
    const char *job_name;
    const char *job_state;     /* normalised: first word ("CANCELLED by 7205" -> "CANCELLED") */
    const char *job_state_raw; /* as sent, when it differed from job_state; else NULL */
    uint64_t array_job_id, array_task_id, het_job_id, het_job_offset;
    const char *user_name, *account, *partition, *reservation, *distribution;
    fj_time submit_time, start_time, end_time; /* 0 = unknown (missing or "") */
    uint64_t time_limit_s; /* seconds; FJ_XU_UNSET or FJ_XU_INFINITE */
    uint64_t priority;     /* FJ_XU_UNSET or FJ_XU_INFINITE possible */
    char **nodes;          /* expanded host names; "None assigned" gives none */
    size_t n_nodes;
    const char *nodes_raw; /* the ranges as sent, joined with ','; NULL when none */
    const char *requested_resources, *allocated_resources;
    uint64_t requested_cpus, requested_memory_per_node_kb, requested_node_count, minimum_cpus_per_node;
    uint64_t suspend_time_s, exit_code;
    const fj_sacct *sacct; /* NULL when not sent */
} fj_slurm_job;

typedef struct fj_jobs {
    fj_slurm_job *jobs;
    size_t n_jobs;
} fj_jobs;

/* --- Cluster --------------------------------------------------------------------------- */

typedef struct fj_partition {
    const char *name;
    char **nodes; /* expanded */
    size_t n_nodes;
} fj_partition;

typedef struct fj_node_state {
    const char *node; /* one expanded host name */
    char **states;    /* upper-case */
    size_t n_states;
} fj_node_state;

typedef struct fj_cluster_info {
    bool slurm;
    fj_partition *partitions;
    size_t n_partitions;
    fj_node_state *nodes; /* one per expanded host */
    size_t n_nodes;
} fj_cluster_info;

/* --- aicr measurements ---------------------------------------------------------------- */

/* One subtype of an aicr snapshot as stored, addressed by (type, instance, subtype). */
typedef struct fj_measure_row {
    const char *type;    /* canonical type name (K8s, GPU, OS, SystemD, NodeTopology, NetworkTopology)
                          * or, for a type aicr does not define yet, as sent */
    uint32_t instance;   /* 0 for the first measurement of this type in the snapshot, 1 for the next */
    const char *subtype;
    const char *json;    /* the normalised subtype, compact JSON */
} fj_measure_row;

/* A decoded, validated and normalised aicr snapshot (see ingest/aicr.h). Storage keeps the whole
 * snapshot and one row per subtype, and never parses either. */
typedef struct fj_measurements {
    const char *json;      /* the normalised snapshot, compact JSON */
    bool arrival_time;     /* no metadata.timestamp: the envelope time is when it arrived; a
                            * snapshot equal to the node's latest one is a duplicate, and a new one
                            * is stored after the node's latest (so it becomes the latest) */
    fj_time *stored_time;  /* out, may be NULL: the time storage keeps the snapshot under (for an
                            * arrival-time duplicate, the time of the equal latest snapshot) */
    size_t n_measurements;
    fj_measure_row *rows;  /* one per subtype */
    size_t n_rows;
} fj_measurements;

/* --- Line-protocol metrics and ClusterCockpit messages (ingest/cc.h) ------------------- */

/* A string of a metric record: p[0..n), NOT NUL-terminated (it points into the batch's copy of
 * the body, or into the arena for unescaped or composed values). n == 0 means absent. */
typedef struct fj_mstr {
    const char *p;
    size_t n;
} fj_mstr;

/* One metric point and its series key (as the time-series engine keys series). */
typedef struct fj_metric_point {
    fj_mstr cluster, host, metric, type, type_id, stype, stype_id;
    int64_t t; /* nanoseconds since 1970 UTC */
    double v;
} fj_metric_point;

typedef enum fj_cc_msg_kind { FJ_CC_MSG_EVENT, FJ_CC_MSG_LOG, FJ_CC_MSG_CONTROL } fj_cc_msg_kind;

/* A ClusterCockpit event, log or control message, stored as a row. */
typedef struct fj_cc_message {
    fj_cc_msg_kind kind;
    const char *cluster;
    const char *host;    /* hostname/host tag, "" when absent */
    const char *name;    /* the measurement: event class, component id or control class */
    const char *tags;    /* every tag as a compact JSON object */
    const char *payload; /* the event/log/control string (may hold NUL bytes) */
    size_t payload_len;
    int64_t time;        /* nanoseconds */
} fj_cc_message;

typedef enum fj_cc_job_op { FJ_CC_JOB_START, FJ_CC_JOB_STOP } fj_cc_job_op;

/* What storage did with a job start/stop, for cc-backend's REST answers (FJ_OK; FJ_ECONFLICT for
 * a duplicate start or a stop of a job that is not running; FJ_ENOTFOUND for a stop of an unknown
 * job; FJ_EINVAL for a stop before the start). Written by the writer thread before `done`. */
typedef struct fj_cc_job_result {
    fj_status status;
    char message[256];
    int64_t id;        /* the stored job's row id */
    fj_time start_time;
    char state[32];
    fj_time stop_time;
} fj_cc_job_result;

/* A ClusterCockpit job start or stop (cc-backend's start_job/stop_job payloads). */
typedef struct fj_cc_job {
    fj_cc_job_op op;
    const char *cluster;
    uint64_t job_id;
    fj_time start_time;  /* start: required; stop: 0 = the job's latest start */
    fj_time stop_time;   /* stop only */
    const char *state;   /* start: "running"; stop: as sent, "completed" when absent */
    const char *user, *project, *partition, *subcluster; /* start; NULL when absent */
    uint64_t num_nodes, num_hwthreads, num_acc;
    const char *hosts;   /* start: JSON array of the resources' host names */
    const char *payload; /* the payload as received (JSON text) */
    fj_cc_job_result *result; /* out, may be NULL */
} fj_cc_job;

/* Everything one line-protocol body decoded to. raw (when not NULL) is the body as received,
 * which storage appends to its request log before the points, so that points not yet sealed
 * into chunks survive a crash: replay decodes raw again with the same default_cluster, unit_ns
 * and arrival_ns. */
typedef struct fj_metrics {
    const char *raw;
    size_t raw_len;
    const char *default_cluster; /* ?cluster=, db, bucket or the credential's cluster; may be NULL */
    int64_t unit_ns;             /* ns per timestamp unit; 0 = inferred per timestamp */
    int64_t arrival_ns;          /* wall clock at arrival: time of lines without a timestamp */
    int64_t max_future_ns;       /* lines later than arrival_ns + this were refused; 0 = no limit */
    const char **clusters;       /* the distinct clusters written (for credential checks): the lines' */
    size_t *cluster_lines;       /* and the job payloads'; with the first line (1-based) naming each */
    size_t n_clusters;
    fj_metric_point *points;
    size_t n_points;
    fj_cc_message *messages;
    size_t n_messages;
    fj_cc_job *jobs;
    size_t n_jobs;
} fj_metrics;

/* --- Chimbuko (ingest/chimbuko.h) ----------------------------------------------------- */

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

/* --- Errors and notes ------------------------------------------------------------------ */

/* An ErrorObject: from an envelope's `errors` (hard) or a sample's attributes.errors (soft). */
typedef struct fj_error_rec {
    fj_time time;
    const char *cluster, *node, *detail;
} fj_error_rec;

/* Something the decoder accepted but normalised or ignored, recorded for operators. */
typedef struct fj_note {
    const char *path;   /* JSON path, e.g. data.attributes.slurm_jobs[2].job_state */
    const char *kind;   /* short tag: "state_suffix", "none_assigned", "unknown_field", ... */
    const char *detail; /* the original value or a short explanation */
} fj_note;

/* --- Envelope and batch ---------------------------------------------------------------- */

typedef struct fj_envelope {
    fj_kind kind;
    const char *producer, *version; /* meta */
    uint64_t format;
    fj_time time;
    const char *cluster;
    const char *node;  /* NULL for job and cluster envelopes */
    bool is_error;     /* carried `errors` instead of `data`: only `errors` below is set */
    fj_error_rec *errors; /* hard errors (is_error) or a sample's soft errors */
    size_t n_errors;
    union {
        fj_sample sample;
        fj_sysinfo sysinfo;
        fj_jobs jobs;
        fj_cluster_info cluster_info;
        fj_measurements measurements;
        fj_metrics metrics;
        fj_chimbuko chimbuko;
    } u;
    fj_note *notes;
    size_t n_notes;
    size_t unknown_fields; /* fields not in the spec, ignored */
} fj_envelope;

/* A batch: everything one request (or one imported file) decoded to. Owned by one thread at a
 * time; handed whole to the writer. */
typedef struct fj_batch {
    fj_arena *arena;
    fj_envelope *envs;
    size_t n_envs, cap_envs;
} fj_batch;

/* A new empty batch with its own arena, or NULL on out-of-memory. */
fj_batch *fj_batch_new(void);

/* Appends a zeroed envelope and returns it, or NULL on out-of-memory. The envelope array may
 * move: a pointer returned earlier is valid only until the next fj_batch_add. */
fj_envelope *fj_batch_add(fj_batch *b);

/* Frees the batch and everything in its arena. NULL is a no-op. */
void fj_batch_free(fj_batch *b);

#endif
