/* storage/pg/query_int.h — what the PostgreSQL query-API files (pg_query_*.c) share: a query context with
 * its read transaction (one REPEATABLE READ snapshot) and scratch arena, statements with a cursor
 * in the manner of sqlite3_step (so that these files follow storage/sqlite_query_*.c closely), an
 * SQL builder with typed parameters, the node set of a cluster, and value helpers. Not a public
 * header.
 *
 * Statements are sent with PQexecParams: the SQL text and the values travel apart, values are
 * never pasted into SQL (integer lists of node ids excepted, which are numbers we format). Each
 * result is read whole before the next statement runs, so statements may be nested freely. */
#ifndef FJ_PG_QUERY_INT_H
#define FJ_PG_QUERY_INT_H

#include "arena.h"
#include "storage/pg/int.h"
#include "storage/query/backend.h"
#include "storage/query/sqlbuf.h"
#include "storage/query/value.h"

#include <stdbool.h>
#include <stdint.h>

/* A cluster's nodes (storage/query/backend.h). */
typedef fj_qnodes fj_pgq_nodes;

/* A running query (storage/query/backend.h), under the PostgreSQL files' name. */
typedef fj_qx fj_pgq;

fj_status fj_pgq_begin(fj_pgq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
/* Ends the transaction (COMMIT after success, ROLLBACK after a failure), frees the arena; returns st. */
fj_status fj_pgq_end(fj_pgq *x, fj_status st);
fj_status fj_pgq_cluster(fj_pgq *x);
fj_status fj_pgq_load_nodes(fj_pgq *x);
long fj_pgq_node_index(const fj_pgq *x, int64_t id);
const char *fj_pgq_node_name(const fj_pgq *x, int64_t id);
fj_status fj_pgq_one_node(fj_pgq *x, int64_t *id);
/* The indices of the wanted nodes, by name (arena). */
fj_status fj_pgq_wanted_by_name(fj_pgq *x, size_t **order, size_t *n);

/* --- statements ------------------------------------------------------------------------------ */

enum { FJ_PGS_ROW = 100, FJ_PGS_DONE = 101, FJ_PGS_ERR = 1 };

typedef struct fj_pgs fj_pgs;

/* A statement with $1..$n placeholders; parameters are bound by number (1-based) and keep their
 * values across fj_pgs_reset. Lives in the query's arena. */
fj_status fj_pgq_prepare(fj_pgq *x, const char *sql, fj_pgs **st);
void fj_pgs_bind_int(fj_pgs *st, int i, int64_t v);
/* How many parameters are bound (fewer than bound when an allocation failed). */
int fj_pgs_nparams(const fj_pgs *st);
void fj_pgs_bind_real(fj_pgs *st, int i, double v);
void fj_pgs_bind_text(fj_pgs *st, int i, const char *s); /* s must outlive the next step */
/* Runs the statement on the first call after prepare/reset, then walks its rows. */
int fj_pgs_step(fj_pgs *st);
void fj_pgs_reset(fj_pgs *st);
void fj_pgs_finalize(fj_pgs *st);
/* The current row's columns. */
bool fj_pgs_isnull(fj_pgs *st, int c);
int64_t fj_pgs_int(fj_pgs *st, int c);   /* also booleans (1/0) and numerics (truncated) */
double fj_pgs_double(fj_pgs *st, int c);
const char *fj_pgs_text(fj_pgs *st, int c); /* NULL for NULL; valid until the next step */
bool fj_pgs_is_number(fj_pgs *st, int c);  /* an integer or floating-point column */
/* A bytea column decoded; valid until the next call for this statement. NULL for NULL. */
const unsigned char *fj_pgs_blob(fj_pgs *st, int c, size_t *len);
/* The status of a failed step (err is filled). */
fj_status fj_pgq_fail(fj_pgq *x, int r, const char *what);

/* The PostgreSQL driver (storage/pg/driver.c, storage/core/driver.h) and its statement reader. */
extern const fj_driver fj_pg_driver;
extern const fj_qrows_ops fj_pg_qrows_ops;

/* --- SQL builder: storage/query/sqlbuf.h with PostgreSQL's $N placeholders ---------------------------- */

typedef fj_qb fj_pgb;
void fj_pgb_init(fj_pgb *b);
void fj_pgb_node_list(fj_pgb *b, const fj_pgq *x);
fj_status fj_pgb_prepare(fj_pgq *x, fj_pgb *b, fj_pgs **st);

/* --- values ------------------------------------------------------------------------------------ */

/* Column i of the current row: null, or the given type. Text is valid until the next step. */
fj_value fj_pv_col(fj_pgs *st, int i, fj_vtype t);

typedef fj_qstrv fj_pgq_strv;
fj_status fj_pgq_strv_push(fj_pgq *x, fj_pgq_strv *sv, const char *s);
/* Strings of a one-column text query bound to one id ($1), copied into the arena. */
fj_status fj_pgq_text_list(fj_pgq *x, fj_pgs *st, int64_t id, const char ***out, size_t *n);

/* --- the adapters of storage/query/backend.h (valid while x, b and st are) ---------------------------- */
fj_qrows fj_pgq_rows(fj_pgq *x, fj_pgs *st);
/* x after fj_pgq_cluster and fj_pgq_load_nodes. */
fj_qenv fj_pgq_env(fj_pgq *x);


#endif
