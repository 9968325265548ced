/* storage/core/driver.h — the one table a backend implements (fj_driver): what differs from one
 * database to the other, and nothing else. Every other function of the engine is written once and
 * called directly (storage/core/store.h, store_query.h, store_ts.h, store_chimbuko.h,
 * store_measure.h, tokens.h, stats.h), reaching the backend through this table (fj_driver_of).
 *
 * Its parts: the SQL driver under the code written once (storage/query/, storage/chimbuko/,
 * storage/core/tokens.c, migrate.c, stats.c): a read transaction, statements (prepare, bind, step,
 * read a column, reset, finalize), a small dialect, and one-off statements outside a query (exec,
 * rollback; run: rows as texts, changed rows); the backend itself (its URLs, open and close, its
 * embedded migrations, the file's upkeep where the database has none of its own); what is still
 * written per backend (the Sonar writer; the metrics engine's chunk I/O and request log); and the
 * named fast paths a backend really has (SQLite's bulk reader of many nodes' load). The backend's
 * own files call its driver functions directly, typed. Not a public header.
 *
 * Every entry is required unless its comment says "optional". The engine answers the absence of
 * an optional capability in one way (storage/core/store.c: FJ_EINVAL, "the <backend> backend
 * does not <what>: <own_tools>"), and a fast path's absence by the shared way.
 *
 * Writers' batch insert (COPY on PostgreSQL, multi-row INSERT on SQLite) stays with the backend's
 * writers for now (storage/pg/copy.c); a `batch` entry here is where it would join the contract,
 * and with it one Sonar writer over this table (docs/architecture.md). */
#ifndef FJ_STORE_DRIVER_H
#define FJ_STORE_DRIVER_H

#include "buf.h"
#include "fj_status.h"
#include "storage/core/store.h"
#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- the dialect ------------------------------------------------------------------------------ */

/* What differs in the SQL text of the two databases. Shared SQL is written with ?N placeholders
 * and the tokens below; fj_qx_prepare (storage/query/qx.h) turns it into the backend's text. */
typedef struct fj_dialect {
    char mark;            /* placeholders: '?' (?N, SQLite) or '$' ($N, PostgreSQL) */
    const char *bytewise; /* {bytes}: after a text in ORDER BY, byte-wise order ("" on SQLite,
                           * whose default collation is byte-wise; COLLATE "C" on PostgreSQL) */
    const char *greatest; /* {greatest}: the larger of its arguments ("max" or "greatest") */
    const char *cross;    /* {cross}: a join whose left side is read first ("CROSS JOIN" on SQLite,
                           * whose planner takes it as the loop order; "JOIN" on PostgreSQL) */
    const char *real;     /* {real}: after a parenthesised number, what makes it a double ("" on
                           * SQLite, whose division already gives one; "::float8" on PostgreSQL,
                           * whose gives a numeric) */
    bool glob_regex;      /* a command glob (*, ?, [...], SQLite's GLOB) is matched as a POSIX
                           * regular expression with ~ (PostgreSQL) rather than with GLOB */
    /* For the writers (not used by queries yet): how an insert that ignores a duplicate key is
     * written, before the table and after the values. */
    const char *insert_ignore_head; /* "INSERT OR IGNORE INTO" or "INSERT INTO" */
    const char *insert_ignore_tail; /* "" or " ON CONFLICT DO NOTHING" */
    const char *blob_type;          /* "BLOB" or "bytea" */
} fj_dialect;

/* --- a statement's reader --------------------------------------------------------------------- */

/* Over one prepared statement st of the running query x, used by one thread.
 * - step moves to the next row: *row false at the end; a failure is mapped at the backend's edge
 *   (what names the query in the message). reset lets the statement run again.
 * - bind_* bind parameter i (1-based), which keeps its value across reset. text must outlive the
 *   statement's next step. Shared code binds the parameters its statement contracts name; SQL
 *   that does not need one may leave it out only where binding it is harmless (SQLite ignores
 *   it; PostgreSQL counts it).
 * - The column functions read the current row by 0-based index. text stays valid until the next
 *   step (NULL for NULL); value gives a column as an fj_value of type t or null, with the
 *   backend's own conversions; blob gives a binary column's bytes (NULL and 0 for NULL), valid
 *   until the next step or blob call; reals reads a run of columns as doubles with one call
 *   (fj_qr_dbl each); json appends a column to out as a JSON null, number or
 *   string as the backend stores it (failing as out does).
 * The hot loops of a backend's own bulk readers read their statement directly, not through these
 * indirect calls (storage/sqlite/load.c). */
typedef struct fj_qrows fj_qrows;
typedef struct fj_qrows_ops {
    fj_status (*step)(const fj_qrows *r, const char *what, bool *row);
    void (*reset)(const fj_qrows *r);
    void (*bind_int)(const fj_qrows *r, int i, int64_t v);
    void (*bind_real)(const fj_qrows *r, int i, double v);
    void (*bind_text)(const fj_qrows *r, int i, const char *s);
    bool (*is_null)(const fj_qrows *r, int col);
    int64_t (*i64)(const fj_qrows *r, int col);
    double (*dbl)(const fj_qrows *r, int col);
    /* n columns from col on as doubles into v (0 for NULL), in one call: for rows of many values */
    void (*reals)(const fj_qrows *r, int col, int n, double *v);
    const char *(*text)(const fj_qrows *r, int col);
    fj_value (*value)(const fj_qrows *r, int col, fj_vtype t);
    const unsigned char *(*blob)(const fj_qrows *r, int col, size_t *len);
    fj_status (*json)(const fj_qrows *r, int col, fj_buf *out);
} fj_qrows_ops;

struct fj_qrows {
    const fj_qrows_ops *ops;
    void *x;  /* the running query (fj_qx) */
    void *st; /* the backend's statement; NULL when none was prepared */
};

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
static inline void fj_qr_bind_real(const fj_qrows *r, int i, double v)
{
    r->ops->bind_real(r, i, v);
}
static inline void fj_qr_bind_text(const fj_qrows *r, int i, const char *s)
{
    r->ops->bind_text(r, i, s);
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
static inline void fj_qr_reals(const fj_qrows *r, int col, int n, double *v)
{
    r->ops->reals(r, col, n, v);
}
static inline const char *fj_qr_text(const fj_qrows *r, int col)
{
    return r->ops->text(r, col);
}
static inline fj_value fj_qr_value(const fj_qrows *r, int col, fj_vtype t)
{
    return r->ops->value(r, col, t);
}

/* --- where the layouts differ ---------------------------------------------------------------- */

/* The SQL of the few shared queries that read a table the backends lay out differently (a
 * sample's GPU cards: SQLite keys them by the sample's id, PostgreSQL by node and time), in the
 * shared form (?N, tokens). Each gives the columns its query expects. */
typedef struct fj_layout_sql {
    const char *uptime_cards;  /* ?1 node, ?2 from, ?3 to: time, idx, failing; by time, idx */
    const char *usage_samples; /* ?1 node: key, time, boot, used_memory_kb, load1, cpus; the
                                * latest two, newest first (key: what usage_gpus's ?2 takes) */
    const char *usage_gpus;    /* ?1 node, ?2 a sample's key: count(*), sum(ce_util), sum(memory_kb) */
    /* A job's samples (storage/query/jobs.h's fj_qjob_stmts and fj_qprofile_rows say the
     * columns): the key of job ?1's latest sample on node ?2 at or before time ?3; the usage of
     * its processes in one sample; its process rows in a window, without and with GPU columns. */
    const char *job_last_sample;
    const char *job_usage;
    const char *job_procs;
    const char *job_procs_gpu;
    /* A node's cards (storage/query/load.h's fj_qload_stmts and fj_qload_gpu_rows say the
     * columns): node ?1's card readings in times ?2..?3 by time and index; and with the card's
     * index and uuid first, by index, uuid (NULL first) and time. */
    const char *load_gpus;
    const char *gpu_load_cards;
    /* Who used node ?1's cards in times ?2..?3 (storage/query/energy.h): per node-sample, card and
     * sample job, time, idx, job, epoch and the summed gpu_util_m of its processes on the card;
     * by time and index. */
    const char *energy_card_use;
    /* node ?1's card power and energy counters in times ?2..?3: idx, uuid, time, power (W),
     * energy_mj; by index, uuid (NULL first) and time */
    const char *energy_cards;
    /* The monitoring figures (storage/core/stats.c), one row: the database's size in bytes, the
     * metrics' series and chunks, the request log's rows and bytes, and its rows past the durable
     * lsn. */
    const char *stats;
} fj_layout_sql;

/* --- the driver ------------------------------------------------------------------------------- */

typedef struct fj_qx fj_qx; /* a running query (storage/query/qx.h) */
struct fj_qload_bulk;       /* a bulk reader of many nodes' load (storage/query/load.h) */

typedef struct fj_driver {
    const char *name;
    fj_dialect dialect;
    const fj_layout_sql *layout;
    /* Opens x's read transaction on x->s: one snapshot for the whole query, never blocking the
     * writer. FJ_OK, or x->err filled. */
    fj_status (*begin_read)(fj_qx *x);
    /* Ends it: committed after success (st FJ_OK), rolled back after a failure. */
    void (*end_read)(fj_qx *x, fj_status st);
    /* Prepares sql (in the backend's own text: its placeholders) as a statement of x into *r,
     * statements living until finalize or the end of x. FJ_OK, or x->err filled and r->st NULL.
     * Statements of one query may be stepped interleaved. */
    fj_status (*prepare)(fj_qx *x, const char *sql, fj_qrows *r);
    /* Frees r's statement (nothing for NULL). */
    void (*finalize)(const fj_qrows *r);

    /* Outside any query: the store's own statements (tokens, storage/core/tokens.c; migrations' bookkeeping, storage/core/migrate.c), on the
     * handle's connection as it stands (no transaction of their own). */
    /* Runs sql once, as it is (the backend's own text; several statements allowed, no
     * parameters, no rows): migration texts, BEGIN, COMMIT. A failure names `what` (SQLite names
     * the statement's text instead, as its messages always have). */
    fj_status (*exec)(fj_store *s, const char *sql, const char *what, fj_err *err);
    /* Rolls back the transaction open on s, if any; a failure is ignored. */
    void (*rollback)(fj_store *s);
    /* Whether s was opened for writing (FJ_STORE_WRITE). */
    bool (*writable)(const fj_store *s);
    /* Runs one statement sql in the shared form (?N placeholders, no tokens) with n parameters
     * given as texts (each column converts it: SQLite by the column's affinity, PostgreSQL by
     * the parameter's inferred type). Each result row goes to row(ctx, ncols, cells), cells as
     * texts (NULL for NULL) valid during the call; row may be NULL when no rows are wanted.
     * *changed (when not NULL) gets how many rows the statement inserted, updated or deleted.
     * PostgreSQL connects first and, when the connection was lost, reconnects once and runs it
     * again. A failure names `what`. */
    fj_status (*run)(fj_store *s, const char *sql, int n, const char *const *params,
                     void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                     int64_t *changed, const char *what, fj_err *err);

    /* --- the backend: its URLs, a handle, its schema, its file (contracts: storage/core/store.h) */
    /* Does this backend handle the URL? ("postgres://", a file path, ...) */
    bool (*accepts)(const char *url);
    /* A handle on url; the handle starts with a pointer to this table (fj_driver_of). */
    fj_status (*open)(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err);
    void (*close)(fj_store *s);
    fj_status (*migrate_status)(fj_store *s, fj_migration_info *out, fj_err *err);
    fj_status (*migrate_up)(fj_store *s, int *applied, fj_err *err);
    /* Optional, NULL where the database manages them itself (PostgreSQL): the file's free pages
     * given back, a consistent copy of the file. own_tools says what to use instead. */
    fj_status (*compact)(fj_store *s, fj_compact_info *out, fj_err *err);
    fj_status (*backup)(fj_store *s, const char *dest, fj_backup_info *out, fj_err *err);
    const char *own_tools;

    /* --- the Sonar writer: the write of a group of batches, one per backend for now (their
     * statements, rectification's bookkeeping and roll-ups; docs/architecture.md) */
    fj_status (*write)(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                       fj_err *err);

    /* --- the metrics engine's stored side: its start, upkeep, catalog and chunk reads
     * (contracts: storage/core/store_ts.h) */
    fj_status (*ts_start)(fj_store *s, const fj_store_opts *opts, fj_err *err);
    fj_ts_engine *(*ts_engine)(fj_store *s);
    fj_status (*ts_maintain)(fj_store *s, fj_err *err);
    fj_status (*ts_series)(fj_store *s, const fj_ts_sel *sel,
                           fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);
    fj_status (*ts_read)(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                         fj_ts_points *out, fj_err *err);
    /* Optional (NULL: ts_read series by series): many series in a few statements, for a
     * database where a statement is a round trip. */
    fj_status (*ts_read_many)(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                              int64_t to, fj_ts_points *pts,
                              fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err);

    /* --- named fast paths --- */
    /* Optional (NULL: node by node): sets up x's bulk reader of many nodes' load for the node and
     * cluster load queries (storage/query/load.h's fj_qload_bulk; SQLite's storage/sqlite/load.c). */
    fj_status (*load_bulk)(fj_qx *x, struct fj_qload_bulk *b);
} fj_driver;

/* The backends compiled in (each defined at the top of its folder: storage/sqlite/backend.c,
 * storage/pg/backend.c); storage/backends.c chooses among them. */
extern const fj_driver fj_sqlite_driver;
#ifdef FJ_HAVE_PG
extern const fj_driver fj_pg_driver; /* postgres:// and postgresql:// URLs (libpq) */
#endif

/* The driver of a store: every backend's handle starts with a pointer to its driver. Inline, so
 * that shared code finds the driver without calling up into storage/core/store.c. */
static inline const fj_driver *fj_driver_of(const fj_store *s)
{
    return *(const fj_driver *const *)(const void *)s;
}

#endif
