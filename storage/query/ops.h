/* storage/query/ops.h — the query ops written once over the thin driver (storage/core/driver.h): a
 * backend's ops tables name them as they are. Their contracts are the ops' in
 * storage/core/store_query.h, store_ts.h, store_chimbuko.h and store_measure.h. Not a public
 * header. */
#ifndef FJ_QUERY_OPS_H
#define FJ_QUERY_OPS_H

#include "storage/core/store_query.h"
#include "storage/core/store.h"
#include "storage/core/store_chimbuko.h"
#include "storage/core/store_measure.h"
#include "storage/core/store_ts.h"
#include "storage/core/stats.h"
#include "storage/core/tokens.h"

/* The analysts' queries that hand rows to a sink: one signature (the ops' in
 * storage/core/store_query.h); the problem-jobs report is storage/query/problems.c and
 * storage/core/store_problems.h. */
typedef fj_status fj_q_rows_fn(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_q_rows_fn fj_q_clusters, fj_q_nodes, fj_q_sysinfo, fj_q_jobs, fj_q_job, fj_q_profile, fj_q_node_load,
    fj_q_cluster_load, fj_q_gpu_load, fj_q_slurm_jobs, fj_q_partitions, fj_q_node_states, fj_q_uptime, fj_q_errors,
    fj_q_node_usage, fj_q_problems;
fj_status fj_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err);
fj_status fj_q_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err);
/* Chimbuko's (storage/chimbuko/query.c) */
typedef fj_status fj_cb_q_fn(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_cb_q_fn fj_cb_q_runs, fj_cb_q_series, fj_cb_q_top, fj_cb_q_records;

/* jobs.last_day: last_seen / FJ_JOB_DAY_S, the UTC day of a job's latest sample, a column each
 * database keeps itself. PostgreSQL indexes it instead of last_seen, which every sample changes
 * (migrations/postgres/0013_jobs_last_day.sql), so a query's "j.last_seen >= from" is written with
 * "j.last_day >= fj_job_last_day(from)" beside it: implied by it, and what that index can find. */
#define FJ_JOB_DAY_S 86400
static inline int64_t fj_job_last_day(int64_t t) { return t / FJ_JOB_DAY_S; }

/* --- what both ops tables name ------------------------------------------------------------------ */

/* The query ops every backend names as they are: a backend's fj_store_query_ops starts with these,
 * then names its node and cluster load (fj_q_node_load and fj_q_cluster_load, or its own bulk
 * reader's: storage/sqlite/load.c). A new query op is named here, once, for every backend. */
#define FJ_Q_SHARED_QUERY_OPS                                                                         \
    .q_clusters = fj_q_clusters, .q_nodes = fj_q_nodes, .q_sysinfo = fj_q_sysinfo,                  \
    .q_topology = fj_q_topology, .q_jobs = fj_q_jobs, .q_job = fj_q_job, .q_profile = fj_q_profile, \
    .q_gpu_load = fj_q_gpu_load, .q_slurm_jobs = fj_q_slurm_jobs, .q_partitions = fj_q_partitions,  \
    .q_node_states = fj_q_node_states, .q_uptime = fj_q_uptime, .q_errors = fj_q_errors,            \
    .q_node_usage = fj_q_node_usage, .q_problems = fj_q_problems

/* The ClusterCockpit reads of fj_store_ts_ops, beside a backend's own metrics ops. */
#define FJ_Q_SHARED_CC_OPS .cc_messages = fj_q_cc_messages, .cc_jobs = fj_q_cc_jobs

/* The concerns whose every op is written once: a backend's fj_store_ops points to these tables. */
extern const fj_store_chimbuko_ops fj_cb_query_ops; /* storage/chimbuko/query.c */
extern const fj_store_measure_ops fj_q_measure_ops; /* storage/query/measure.c */

/* What every backend's fj_store_ops names as it is: the tokens (storage/core/tokens.h), the
 * monitoring figures (storage/core/stats.h) and the concerns written once. */
#define FJ_STORE_SHARED_OPS                                                                              \
    FJ_TOKENS_OPS, .chimbuko = &fj_cb_query_ops, .measure = &fj_q_measure_ops, .stats = fj_store_stats_read

#endif
