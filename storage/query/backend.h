/* storage/query/backend.h — what the backend-neutral query code (storage/chimbuko/query.c, query_*.c) asks of a
 * backend: a statement reader over the backend's own statement type, and the part of a running
 * query that does not depend on the backend (its answer, scratch arena, cluster and node set).
 * Each backend implements the reader once, in its *_query_common.c; SQL is built with the shared
 * builder of storage/query/sqlbuf.h. The shared code holds what a query means (filters, row assembly,
 * maths) and the backend keeps its SQL, statements and transactions. Not a public header. */
#ifndef FJ_QUERY_BACKEND_H
#define FJ_QUERY_BACKEND_H

#include "arena.h"
#include "buf.h"
#include "fj_status.h"
#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- a backend's statement reader ------------------------------------------------------------- */

/* Over one prepared statement st of the backend's query x, used by one thread.
 * - step moves to the next row: *row false at the end; a failure is mapped at the backend's edge
 *   (what names the query in the message). reset lets the statement run again.
 * - bind_int binds parameter i (1-based), which keeps its value across reset. Shared code binds
 *   the parameters its statement contracts name; SQL that does not need one may leave it out
 *   only where binding it is harmless (SQLite ignores it; PostgreSQL counts it).
 * - The column functions read the current row by 0-based index. text stays valid until the next
 *   step (NULL for NULL); value gives a column as an fj_value of type t or null, with the
 *   backend's own conversions; blob gives a binary column's bytes (NULL and 0 for NULL), valid
 *   until the next step or blob call; json appends a column to out as a JSON null, number or
 *   string as the backend stores it (failing as out does). */
typedef struct fj_qrows fj_qrows;
typedef struct fj_qrows_ops {
    fj_status (*step)(const fj_qrows *r, const char *what, bool *row);
    void (*reset)(const fj_qrows *r);
    void (*bind_int)(const fj_qrows *r, int i, int64_t v);
    bool (*is_null)(const fj_qrows *r, int col);
    int64_t (*i64)(const fj_qrows *r, int col);
    double (*dbl)(const fj_qrows *r, int col);
    const char *(*text)(const fj_qrows *r, int col);
    fj_value (*value)(const fj_qrows *r, int col, fj_vtype t);
    const unsigned char *(*blob)(const fj_qrows *r, int col, size_t *len);
    fj_status (*json)(const fj_qrows *r, int col, fj_buf *out);
} fj_qrows_ops;

struct fj_qrows {
    const fj_qrows_ops *ops;
    void *x;  /* the backend's query (fj_sqq, fj_pgq) */
    void *st; /* the backend's statement */
};

/* Shorthands for the shared code. */
static inline fj_status fj_qr_step(const fj_qrows *r, const char *what, bool *row)
{
    return r->ops->step(r, what, row);
}
static inline void fj_qr_reset(const fj_qrows *r)
{
    r->ops->reset(r);
}
static inline void fj_qr_bind(const fj_qrows *r, int i, int64_t v)
{
    r->ops->bind_int(r, i, v);
}
static inline bool fj_qr_null(const fj_qrows *r, int col)
{
    return r->ops->is_null(r, col);
}
static inline int64_t fj_qr_i64(const fj_qrows *r, int col)
{
    return r->ops->i64(r, col);
}
static inline double fj_qr_dbl(const fj_qrows *r, int col)
{
    return r->ops->dbl(r, col);
}
static inline const char *fj_qr_text(const fj_qrows *r, int col)
{
    return r->ops->text(r, col);
}
static inline fj_value fj_qr_value(const fj_qrows *r, int col, fj_vtype t)
{
    return r->ops->value(r, col, t);
}

/* --- a running query, backend aside ------------------------------------------------------------ */

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

/* A growable array of strings in the query's arena. */
typedef struct fj_qstrv {
    const char **v;
    size_t n, cap;
} fj_qstrv;
fj_status fj_qstrv_push(const fj_qenv *e, fj_qstrv *sv, const char *s);

/* The strings of a one-column text query with parameter 1 bound to id, copied into the arena
 * (NULLs skipped); the statement is reset after. */
fj_status fj_qenv_text_list(const fj_qenv *e, const fj_qrows *r, int64_t id, const char ***out, size_t *n);

#endif
