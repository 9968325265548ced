/* ingest/records/sonar.h — the typed records of Sonar's envelopes (ingest/sonar.h decodes them):
 * a node's sysinfo and samples (with its jobs and processes), Slurm job records, a cluster's
 * partitions and node states, and the error objects an envelope or a sample carries.
 *
 * Values are stored as they are meant, not as they were encoded: ExtendedUint fields are decoded
 * (FJ_XU_UNSET / FJ_XU_INFINITE / the value), Sonar's off-by-one performance_state is corrected,
 * `num_threads` stays as sent (threads - 1) and `rolledup` stays as sent (additional processes).
 * Strings and times as ingest/records/batch.h says. */
#ifndef FJ_RECORDS_SONAR_H
#define FJ_RECORDS_SONAR_H

#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decoded ExtendedUint: a plain value, or one of these two markers. */
#define FJ_XU_UNSET UINT64_MAX
#define FJ_XU_INFINITE (UINT64_MAX - 1)

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
    /* fjord-push's: the card's energy counter, millijoules since the driver loaded (NVML's total
     * energy consumption); 0 when absent, as Sonar omits zeros (docs/energy.md) */
    uint64_t energy_mj;
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

/* --- Errors ----------------------------------------------------------------------------- */

/* An ErrorObject: from an envelope's `errors` (hard) or a sample's attributes.errors (soft). */
typedef struct fj_error_rec {
    fj_time time;
    const char *cluster, *node, *detail;
} fj_error_rec;

#endif
