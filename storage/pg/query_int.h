/* storage/pg/query_int.h — the PostgreSQL driver's statements (storage/pg/driver.c): a cursor in the
 * manner of sqlite3_step under the driver of storage/core/driver.h, used directly by the backend's
 * own files (its roll-up upkeep, storage/pg/rollup.c). The queries are written once
 * (storage/query/). Not a public header.
 *
 * Statements are sent with PQexecParams: the SQL text and the values travel apart, values are
 * never pasted into SQL (integer lists of node ids excepted, which are numbers we format). Each
 * result is read whole before the next statement runs, so statements may be nested freely. */
#ifndef FJ_PG_QUERY_INT_H
#define FJ_PG_QUERY_INT_H

#include "arena.h"
#include "storage/pg/int.h"
#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"
#include "storage/query/value.h"

#include <stdbool.h>
#include <stdint.h>

/* A running query (storage/query/qx.h), under the PostgreSQL files' name. */
typedef fj_qx fj_pgq;

/* --- statements ------------------------------------------------------------------------------ */

enum { FJ_PGS_ROW = 100, FJ_PGS_DONE = 101, FJ_PGS_ERR = 1 };

typedef struct fj_pgs fj_pgs;

/* A statement with $1..$n placeholders; parameters are bound by number (1-based) and keep their
 * values across fj_pgs_reset. Lives in the query's arena. */
fj_status fj_pgq_prepare(fj_pgq *x, const char *sql, fj_pgs **st);
/* The same for a statement the session runs over and over (the writer's upkeep): prepared on the
 * connection at its first run and kept there, so that PostgreSQL parses and plans it once, not at
 * every run. Not for SQL built from values: every text is kept until the connection closes. */
fj_status fj_pgq_prepare_kept(fj_pgq *x, const char *sql, fj_pgs **st);
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

/* The SQL part of the PostgreSQL driver (storage/pg/driver.c; contracts: storage/core/driver.h;
 * exec and rollback are fj_pg_exec and fj_pg_rollback), named by the driver's table at the top
 * (storage/pg/backend.c, fj_pg_driver), and its statement reader. */
fj_status fj_pg_driver_begin_read(fj_qx *x);
void fj_pg_driver_end_read(fj_qx *x, fj_status st);
fj_status fj_pg_driver_prepare(fj_qx *x, const char *sql, fj_qrows *r);
void fj_pg_driver_finalize(const fj_qrows *r);
bool fj_pg_driver_writable(const fj_store *s);
fj_status fj_pg_driver_run(fj_store *s, const char *sql, int n, const char *const *params,
                           void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                           int64_t *changed, const char *what, fj_err *err);
extern const fj_layout_sql fj_pg_driver_layout;
extern const fj_qrows_ops fj_pg_qrows_ops;

#endif
