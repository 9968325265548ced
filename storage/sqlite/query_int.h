/* storage/sqlite/query_int.h — what the SQLite query-API files (sqlite_query_*.c) share: a query context
 * with its read transaction and scratch arena, an SQL builder with bound parameters, the node set
 * of a cluster (host filter applied), and value helpers. Not a public header. */
#ifndef FJ_SQLITE_QUERY_INT_H
#define FJ_SQLITE_QUERY_INT_H

#include "arena.h"
#include "storage/query/backend.h"
#include "storage/query/sqlbuf.h"
#include "storage/query/value.h"
#include "storage/sqlite/int.h"

#include <stdbool.h>
#include <stdint.h>

/* A cluster's nodes (storage/query/backend.h). */
typedef fj_qnodes fj_sqq_nodes;

/* A running query (storage/query/backend.h), under the SQLite files' name. */
typedef fj_qx fj_sqq;

/* Starts a query: a read transaction (one snapshot) and an arena. */
fj_status fj_sqq_begin(fj_sqq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* Ends the transaction, frees the arena; returns st. */
fj_status fj_sqq_end(fj_sqq *x, fj_status st);

/* Looks up q->cluster: FJ_EINVAL when absent, FJ_ENOTFOUND when unknown. */
fj_status fj_sqq_cluster(fj_sqq *x);
/* Loads the cluster's nodes and applies q->host_match. */
fj_status fj_sqq_load_nodes(fj_sqq *x);
/* Index of a node id in x->nodes, or -1. */
long fj_sqq_node_index(const fj_sqq *x, int64_t id);
/* Name of a node id, or NULL. */
const char *fj_sqq_node_name(const fj_sqq *x, int64_t id);
/* The node named q->node: FJ_EINVAL when absent, FJ_ENOTFOUND when unknown. */
fj_status fj_sqq_one_node(fj_sqq *x, int64_t *id);

fj_status fj_sqq_prepare(fj_sqq *x, const char *sql, sqlite3_stmt **st);
/* Maps a failed sqlite3_step result. */
fj_status fj_sqq_fail(fj_sqq *x, int rc, const char *what);

/* --- SQL builder: storage/query/sqlbuf.h with SQLite's ?N placeholders ------------------------------ */
typedef fj_qb fj_sqb;
void fj_sqb_init(fj_sqb *b);
/* The wanted node ids of x as a literal list. */
void fj_sqb_node_list(fj_sqb *b, const fj_sqq *x);
/* Prepares and binds. */
fj_status fj_sqb_prepare(fj_sqq *x, fj_sqb *b, sqlite3_stmt **st);

/* --- values -------------------------------------------------------------------------------- */

/* Strings of a one-column text query bound to one id, copied into the arena. */
fj_status fj_sqq_text_list(fj_sqq *x, sqlite3_stmt *st, int64_t id, const char ***out, size_t *n);

/* A growable array of strings in the arena (fj_qstrv). */
typedef fj_qstrv fj_sqq_strv;
fj_status fj_sqq_strv_push(fj_sqq *x, fj_sqq_strv *sv, const char *s);

/* --- the adapters of storage/query/backend.h (valid while x, b and st are) ------------------------- */
fj_qrows fj_sqq_rows(fj_sqq *x, sqlite3_stmt *st);
/* x after fj_sqq_cluster and fj_sqq_load_nodes. */
fj_qenv fj_sqq_env(fj_sqq *x);

/* The node and cluster load ops with the one-pass reader of many nodes (storage/sqlite/load.c). */
fj_status fj_sq_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
fj_status fj_sq_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

#endif
