/* storage/query/ops.h — the query ops of storage/core/store.h that are written once over the thin
 * driver (storage/core/driver.h): a backend's ops table names them as they are. Their contracts
 * are the ops' in storage/core/store_query.h and storage/core/store_ts.h. Not a public header. */
#ifndef FJ_QUERY_OPS_H
#define FJ_QUERY_OPS_H

#include "storage/core/store_query.h"
#include "storage/core/store.h"
#include "storage/core/store_ts.h"

fj_status fj_q_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err);
fj_status fj_q_slurm_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_partitions(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_node_states(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_uptime(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_errors(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_node_usage(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
fj_status fj_q_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);

#endif
