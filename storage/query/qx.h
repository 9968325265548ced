/* storage/query/qx.h — a running query (fj_qx, its functions fj_qx_*) over a backend's driver
 * (storage/core/driver.h): its read transaction, answer, scratch arena, cluster and node set, and
 * its statements, written once for every backend. The queries (storage/query/{nodes,slurm,misc,
 * usage,...}.c) begin an fj_qx, prepare SQL written with ?N placeholders and the dialect's
 * tokens, hand the readers to the shared row code and end it. A backend's own query files (its load and job SQL,
 * Chimbuko) use the same fj_qx under their own names (fj_sqq, fj_pgq). Not a public header. */
#ifndef FJ_QUERY_QX_H
#define FJ_QUERY_QX_H

#include "arena.h"
#include "buf.h"
#include "fj_status.h"
#include "storage/core/driver.h"
#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- a running query, backend aside ------------------------------------------------------------ */

typedef struct fj_sqlbuf fj_sqlbuf; /* storage/query/sqlbuf.h */

/* A cluster's nodes, sorted by id; `want` marks those the query's host filter accepts. */
typedef struct fj_qnodes {
    int64_t *ids;
    const char **names;
    bool *want;
    size_t n;
    size_t n_want;
    bool filtered; /* a host filter was given */
} fj_qnodes;

/* What shared query code reads and writes of a query a backend has begun (read transaction open,
 * cluster looked up, nodes loaded). Borrowed from the backend's query: valid until it ends. */
typedef struct fj_qenv {
    fj_query *q;
    fj_sink *k;
    fj_err *err;
    fj_arena *a; /* the query's scratch, freed when it ends */
    int64_t cluster_id;
    const fj_qnodes *nodes;
    int64_t node; /* fj_qx_run with FJ_QX_ONE_NODE: the id of the node named q->node; else 0 */
} fj_qenv;

/* Index of a node id in nodes, or -1. */
long fj_qnodes_index(const fj_qnodes *nodes, int64_t id);
/* Name of a node id, or NULL. */
const char *fj_qnodes_name(const fj_qnodes *nodes, int64_t id);
/* The node named q->node (any node, not only the wanted ones): FJ_EINVAL when absent,
 * FJ_ENOTFOUND when unknown. */
fj_status fj_qenv_one_node(const fj_qenv *e, int64_t *id);
/* The indices of the wanted nodes, sorted by name (byte-wise), into the arena. FJ_ENOMEM. */
fj_status fj_qenv_wanted_by_name(const fj_qenv *e, size_t **order, size_t *n);

/* Makes room for one more element in a growable array of the arena a: *(T **)arr holds n
 * elements of size elem in room for *cap; when full, an array of twice the room (first when
 * none) takes their copy (the old one stays in the arena until the query ends). FJ_ENOMEM with
 * err set when the arena has no room. One helper for the query code's many lists. */
fj_status fj_qgrow(fj_arena *a, fj_err *err, void *arr, size_t n, size_t *cap, size_t elem, size_t first);

/* A growable array of strings in the query's arena. */
typedef struct fj_qstrv {
    const char **v;
    size_t n, cap;
} fj_qstrv;
fj_status fj_qstrv_push(const fj_qenv *e, fj_qstrv *sv, const char *s);

/* The strings of a one-column text query with parameter 1 bound to id, copied into the arena
 * (NULLs skipped); the statement is reset after. */
fj_status fj_qenv_text_list(const fj_qenv *e, const fj_qrows *r, int64_t id, const char ***out, size_t *n);

/* --- a running query -------------------------------------------------------------------------- */

struct fj_qx {
    fj_store *s;
    const fj_driver *d;
    fj_query *q;
    fj_sink *k;
    fj_err *err;
    fj_arena *a;         /* the query's scratch: freed by fj_qx_end */
    int64_t cluster_id;  /* 0 until fj_qx_cluster */
    fj_qnodes nodes;     /* loaded by fj_qx_load_nodes */
    int64_t node;        /* set by fj_qx_run under FJ_QX_ONE_NODE */
    bool in_tx;
    fj_status fail;      /* PostgreSQL: the status of the last failed statement (err holds its message) */
    fj_qrows *open;      /* statements prepared through x and not finalized yet (in the arena) */
    size_t n_open, cap_open;
};

/* Starts a query on s: its read transaction (one snapshot) and arena; clears q->next. */
fj_status fj_qx_begin(fj_qx *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* Finalizes the statements still open, ends the transaction (committed after success, rolled
 * back after a failure), frees the arena; returns st. Safe after a failed fj_qx_begin. */
fj_status fj_qx_end(fj_qx *x, fj_status st);
/* Looks up q->cluster: FJ_EINVAL when absent, FJ_ENOTFOUND when unknown. */
fj_status fj_qx_cluster(fj_qx *x);
/* Loads the cluster's nodes (sorted by id) and applies q->host_match. */
fj_status fj_qx_load_nodes(fj_qx *x);
/* The node named q->node (storage/query/qx.h's fj_qenv_one_node). */
fj_status fj_qx_one_node(fj_qx *x, int64_t *id);
/* The shared env of x (after fj_qx_cluster and fj_qx_load_nodes). */
fj_qenv fj_qx_env(fj_qx *x);

/* Prepares shared SQL: ?N placeholders become the dialect's, {bytes} and {greatest} its texts
 * (storage/core/driver.h). On failure r->st is NULL, which fj_qx_finalize accepts. x keeps the
 * statement until fj_qx_finalize or fj_qx_end finalizes it, so an op need not finalize its own. */
fj_status fj_qx_prepare(fj_qx *x, const char *sql, fj_qrows *r);
/* Prepares a builder's SQL (storage/query/sqlbuf.h, made with the dialect's mark) and binds its
 * parameters. */
fj_status fj_qx_prepare_qb(fj_qx *x, fj_sqlbuf *b, fj_qrows *r);
void fj_qx_finalize(fj_qx *x, const fj_qrows *r);

/* --- a query op from its parts ---------------------------------------------------------------- */

/* What an op has looked up before its statements are prepared: only the read transaction; q->cluster
 * and its nodes (fj_qx_cluster, fj_qx_load_nodes); and also the node named q->node (e->node). */
typedef enum fj_qx_needs { FJ_QX_TX, FJ_QX_NODES, FJ_QX_ONE_NODE } fj_qx_needs;

enum { FJ_QX_MAX_STMTS = 8 };

/* An op's own part: reads its statements st (prepared from its texts, in their order) into the
 * sink, with arg the op's own; it may prepare more on x (fj_qx_end finalizes them). */
typedef fj_status (*fj_qx_rows_fn)(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg);

/* Runs a query op whose parts are what it needs, its statements' shared SQL (sql: at most
 * FJ_QX_MAX_STMTS texts, then NULL; NULL for none) and its rows: begins the read transaction,
 * looks up what it needs, prepares the texts, calls rows, and ends the query whatever happened.
 * Every op does these steps alike; written once here, an op is its SQL and its rows. */
fj_status fj_qx_run(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_needs needs, const char *const *sql,
                    fj_qx_rows_fn rows, void *arg);

/* An op whose rows read two statements, rows(e, the first, the second): most ops, whose shared
 * row code (storage/query/nodes.h, slurm.h, usage.h) it then calls as it is. */
typedef fj_status (*fj_qx_rows2_fn)(const fj_qenv *e, const fj_qrows *first, const fj_qrows *second);
fj_status fj_qx_run2(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_needs needs, const char *const sql[3],
                     fj_qx_rows2_fn rows);

/* An op of one statement whose SQL follows the query's filters (storage/query/sqlbuf.h): build
 * writes it for e (collate_c: the dialect's byte-wise order), rows reads it. Under FJ_QX_NODES. */
typedef void (*fj_qx_build_fn)(fj_sqlbuf *b, const fj_qenv *e, const char *collate_c);
typedef fj_status (*fj_qx_built_rows_fn)(const fj_qenv *e, const fj_qrows *r);
fj_status fj_qx_run_built(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_build_fn build,
                          fj_qx_built_rows_fn rows);

#endif
