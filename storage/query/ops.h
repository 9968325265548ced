/* storage/query/ops.h — the query ops of storage/core/store.h that are written once over the thin
 * driver (storage/core/driver.h): a backend's ops table names them as they are. Their contracts
 * are the ops' in storage/core/store.h. Not a public header. */
#ifndef FJ_QUERY_OPS_H
#define FJ_QUERY_OPS_H

#include "storage/core/store.h"

fj_status fj_q_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err);
fj_status fj_q_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_job(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_profile(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err);
/* Chimbuko's (storage/chimbuko/query.c) */
fj_status fj_cb_q_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);

#endif
