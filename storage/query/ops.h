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
fj_status fj_q_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err);
/* Chimbuko's (storage/chimbuko/query.c) */
fj_status fj_cb_q_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
fj_status fj_cb_q_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);

#endif
