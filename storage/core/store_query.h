/* storage/core/store_query.h — the analysts' queries of the storage engine (storage/core/store.h):
 * the functions callers call (fj_store_query_*, at the end), one query description (fj_query),
 * result tables whose column lists are fixed and shared by every backend (fj_qtable, defined in
 * storage/query/cols.c), and a row sink through which the engine hands over rows.
 * The API layer implements the sink and writes JSON or CSV from the same rows, and builds its
 * OpenAPI document from the same column lists, so a backend cannot drift from the documentation.
 *
 * Contract of every query (fj_store_query_* below, and the other rooms' row queries): it reads one
 * snapshot (a read transaction), calls
 * sink->table once per result table, in the order its comment lists them, then sink->row once per
 * row with exactly the table's columns in order. A value is either FJ_VT_NULL or the column's
 * type. Strings and lists in a value are borrowed for the duration of the call. A sink error stops
 * the query and is returned as is. Tables with n_key > 0 deliver their rows ordered by the first
 * n_key columns (a series key), so a writer can nest the other columns under each key. */
#ifndef FJ_STORE_QUERY_H
#define FJ_STORE_QUERY_H

#include "buf.h"
#include "fj_status.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_vtype {
    FJ_VT_NULL = 0,
    FJ_VT_INT,   /* i */
    FJ_VT_REAL,  /* d */
    FJ_VT_BOOL,  /* i: 0 or 1 */
    FJ_VT_TEXT,  /* s */
    FJ_VT_TIME,  /* i: seconds since 1970 UTC, written as RFC 3339 */
    FJ_VT_LIST,  /* list[0..n): strings */
    FJ_VT_JSON   /* s: a JSON text (array or object), written as is in JSON, as text in CSV */
} fj_vtype;

typedef struct fj_value {
    fj_vtype t;
    int64_t i;
    double d;
    const char *s;
    const char *const *list;
    size_t n;
} fj_value;

typedef struct fj_qcol {
    const char *name;
    fj_vtype type;   /* every non-null value of the column has this type */
    const char *doc; /* one line for docs/api.md and the OpenAPI document */
} fj_qcol;

typedef struct fj_qtable {
    const char *name; /* the JSON member holding the rows: "jobs", "load"... */
    const fj_qcol *cols;
    size_t n_cols;
    size_t n_key;     /* leading columns that form a series key (0: a flat table) */
} fj_qtable;

/* The result tables (storage/query/cols.c). */
extern const fj_qtable fj_qt_clusters, fj_qt_nodes, fj_qt_sysinfo, fj_qt_jobs, fj_qt_job, fj_qt_job_hosts,
    fj_qt_profile, fj_qt_node_load, fj_qt_cluster_load, fj_qt_gpu_load, fj_qt_slurm_jobs, fj_qt_partitions,
    fj_qt_node_states, fj_qt_uptime, fj_qt_errors;
/* The latest utilisation of nodes (q_node_usage), for the SSS export's Available and Utilized
 * categories. */
extern const fj_qtable fj_qt_node_usage;

/* The index of a column of t by name, or -1. */
int fj_qtable_col(const fj_qtable *t, const char *name);

typedef struct fj_sink fj_sink;
struct fj_sink {
    fj_status (*table)(fj_sink *k, const fj_qtable *t);
    fj_status (*row)(fj_sink *k, const fj_value *v);
};

/* --- the query ---------------------------------------------------------------------------- */

typedef enum { FJ_TRI_ANY = 0, FJ_TRI_YES, FJ_TRI_NO } fj_tri;

typedef struct fj_strlist {
    const char *const *v;
    size_t n;
} fj_strlist;

typedef struct fj_intlist {
    const int64_t *v;
    size_t n;
} fj_intlist;

/* The job-list columns that take min_/max_ filters (and sort), in fj_qt_jobs units. The
 * efficiencies (docs/storage.md, "Usage and efficiency") are null without a Slurm allocation: their
 * filters leave such jobs out, their sort puts them first ascending. */
#define FJ_JOB_METRICS(X)                                                                         \
    X(CPU_AVG, "cpu_avg") X(CPU_PEAK, "cpu_peak") X(MEM_AVG, "mem_avg_kb") X(MEM_PEAK, "mem_peak_kb") \
    X(GPU_AVG, "gpu_avg") X(GPU_PEAK, "gpu_peak") X(GPUMEM_AVG, "gpumem_avg_kb")                  \
    X(GPUMEM_PEAK, "gpumem_peak_kb") X(CPU_EFF, "cpu_eff") X(MEM_EFF, "mem_eff") X(GPU_EFF, "gpu_eff")
typedef enum fj_job_metric {
#define FJ_JM_ENUM(id, name) FJ_JM_##id,
    FJ_JOB_METRICS(FJ_JM_ENUM)
#undef FJ_JM_ENUM
    FJ_JM__COUNT
} fj_job_metric;
extern const char *const fj_job_metric_names[FJ_JM__COUNT];

/* Sort keys of the job list: start, end, duration, job, then the metrics. */
typedef enum fj_job_sort {
    FJ_JS_START = 0,
    FJ_JS_END,
    FJ_JS_DURATION,
    FJ_JS_JOB,
    FJ_JS_METRIC0 /* FJ_JS_METRIC0 + fj_job_metric */
} fj_job_sort;
#define FJ_JS__COUNT (FJ_JS_METRIC0 + FJ_JM__COUNT)
/* "start", "end", "duration", "job", then the metric names. */
const char *fj_job_sort_name(int sort);

/* Keyset position: the sort value and the row id of the last row of a page (and a text key for
 * tables keyed by text). The API layer makes it an opaque cursor. */
typedef struct fj_qpos {
    bool set;
    double v;
    int64_t id;
    char s[96];
} fj_qpos;

/* Every query takes one of these; each op's comment below says which fields it reads. Unset
 * fields are zero: an empty list or FJ_TRI_ANY filters nothing, time 0 is an open end. */
typedef struct fj_query {
    const char *cluster;   /* every query but q_clusters */
    const char *node;      /* one node by name (sysinfo history, topology) */
    int64_t id;            /* one rectified job (job detail, profile) */
    fj_time from, to;      /* time window, inclusive; 0 = open */
    fj_time now;           /* the wall clock, for open windows that need an end (uptime) */
    /* Host filter: when set, only nodes whose name it accepts. Called once per node of the
     * cluster, from the calling thread. */
    bool (*host_match)(void *ctx, const char *name);
    void *host_ctx;
    /* Cluster filter of q_clusters: when set, only clusters it accepts. */
    bool (*cluster_match)(void *ctx, const char *name);
    void *cluster_ctx;
    fj_strlist users, commands, states, partitions, accounts, sources;
    fj_intlist jobs;       /* job ids (Slurm job id or process group id) */
    fj_intlist array_jobs; /* Slurm array_job_id */
    fj_intlist het_jobs;   /* Slurm het_job_id */
    fj_tri running;        /* jobs, Slurm jobs: still running (YES) or finished (NO) */
    fj_tri gpu;            /* jobs: used some GPU (YES) or none (NO) */
    fj_tri steps;          /* Slurm jobs: include steps (default YES) */
    int64_t min_runtime_s;
    bool has_min[FJ_JM__COUNT], has_max[FJ_JM__COUNT];
    double min[FJ_JM__COUNT], max[FJ_JM__COUNT];
    int sort;              /* fj_job_sort */
    bool desc;
    fj_qpos after;         /* keyset pagination: rows after this position */
    size_t limit;          /* rows per page; 0 = no limit */
    int64_t bucket_s;      /* load, profile: bucket width; 0 = max(60 s, span / 120) */
    int64_t interval_s;    /* uptime: longest gap between samples that still counts as up */
    bool svg;              /* topology: the SVG (true) or the text rendering (false) */
    bool by_host;          /* profile: one series per host (processes summed), not per process */
    const struct fj_problem_rules *problems; /* q_problems: its rules (storage/core/store_problems.h) */
    /* jobs, job: the cluster's carbon intensity (g CO2e per kWh; 0: none, no co2e_kg) and the
     * power usage effectiveness applied before it (0 counts as 1); docs/energy.md */
    double carbon_g_per_kwh, pue;
    bool no_energy;        /* jobs: energy columns null, nothing read for them */
    struct fj_ts_engine *ts_live; /* jobs, job: the writer's metrics engine (api/jobs_energy.c), or NULL */
    /* out: q_profile, q_node_load, q_cluster_load and q_uptime write back the from, to, bucket_s
     * and interval_s they used (defaults resolved) */
    fj_qpos next;          /* set when more rows follow: the position of the last row sent */
} fj_query;

/* --- the queries -------------------------------------------------------------------------- */

typedef struct fj_store fj_store; /* storage/core/store.h */

/* The analysts' queries, written once over the driver (storage/core/driver.h) in storage/query/
 * (jobs.c: jobs, job, profile; nodes.c: clusters, nodes, sysinfo, topology; load.c: node,
 * cluster and GPU load; slurm.c; misc.c: uptime, errors; usage.c: node usage; problems.c): rows
 * into a sink under the contract above; FJ_EINVAL with err->path naming the query field for a
 * query that cannot be answered; FJ_ENOTFOUND for an unknown cluster, node or job where one is
 * named. Each reads the fields of fj_query listed. A new query is a function here, its rows and
 * SQL in storage/query/. */
/* fj_qt_clusters; cluster_match (when set) picks the clusters shown. */
fj_status fj_store_query_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_nodes: cluster, host_match. */
fj_status fj_store_query_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_sysinfo, oldest first: cluster, node, from, to. */
fj_status fj_store_query_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* The latest topology of a node (cluster, node, to, svg) decoded into out; *when its time. */
fj_status fj_store_query_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err);
/* fj_qt_jobs: cluster, from, to, host_match, users, commands, states, partitions, accounts,
 * jobs, running, gpu, min_runtime_s, min/max, sort, desc, after, limit; sets next. */
fj_status fj_store_query_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_job (one row: fj_qt_jobs's columns and the joined ClusterCockpit job), then
 * fj_qt_job_hosts: cluster, id. */
fj_status fj_store_query_job(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_profile: cluster, id, from, to, host_match, bucket_s, by_host. */
fj_status fj_store_query_profile(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_node_load: cluster, host_match, from, to, bucket_s. */
fj_status fj_store_query_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_cluster_load: cluster, host_match, from, to, bucket_s. */
fj_status fj_store_query_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_gpu_load, per node and card: cluster, host_match, from, to, bucket_s. */
fj_status fj_store_query_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_slurm_jobs: cluster, from, to, users, states, partitions, accounts, jobs, array_jobs,
 * het_jobs, running, steps, host_match, after, limit; sets next. */
fj_status fj_store_query_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_partitions: cluster, to (the latest cluster envelope at or before it). */
fj_status fj_store_query_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_node_states: cluster, host_match, to. */
fj_status fj_store_query_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_uptime: cluster, host_match, from, to (0: now), interval_s. */
fj_status fj_store_query_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_errors, oldest first: cluster, host_match, from, to, sources, after, limit; sets next. */
fj_status fj_store_query_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_node_usage, by node name: cluster, host_match, node (that node only; FJ_ENOTFOUND when
 * unknown). Nodes without samples are left out. */
fj_status fj_store_query_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* fj_qt_problems, or fj_qt_problem_users when problems->by_user (storage/core/store_problems.h):
 * cluster, from, to (jobs seen in the window; resolved and written back: to = now, from = to - 1
 * day when unset), users, problems. */
fj_status fj_store_query_problems(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

#endif
