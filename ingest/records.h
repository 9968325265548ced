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
    FJ_KIND__COUNT
} fj_kind;

/* "sample", "sysinfo", "job", "cluster", "measurements". */
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
