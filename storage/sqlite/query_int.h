/* storage/sqlite/query_int.h — what the SQLite backend answers its own way of the query ops
 * (storage/sqlite/load.c): the rest are written once (storage/query/ops.h). Not a public header. */
#ifndef FJ_SQLITE_QUERY_INT_H
#define FJ_SQLITE_QUERY_INT_H

#include "arena.h"
#include "storage/query/backend.h"
#include "storage/query/sqlbuf.h"
#include "storage/query/value.h"
#include "storage/sqlite/int.h"

#include <stdbool.h>
#include <stdint.h>

/* A running query (storage/query/backend.h), under the SQLite files' name. */
typedef fj_qx fj_sqq;

/* The node and cluster load ops with the one-pass reader of many nodes (storage/sqlite/load.c). */
fj_status fj_sq_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_sq_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

#endif
