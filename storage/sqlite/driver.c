/* storage/sqlite/driver.c — the SQLite driver at the bottom of the backend: status mapping of SQLite's
 * result codes, the cache of the write path's prepared statements (one per id, prepared on first
 * use with SQLITE_PREPARE_PERSISTENT), and the statement reader of storage/core/driver.h. Every file
 * of storage/sqlite/ calls down into it; it calls nothing of theirs (statement texts come through
 * the handle's stmt_text, which the backend's open fills). */
#include "storage/query/qx.h"
#include "storage/query/value.h"
#include "storage/sqlite/int.h"

#include <string.h>

/* --- errors ------------------------------------------------------------------------------- */

fj_status fj_sq_status(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return FJ_EBUSY;
    case SQLITE_NOMEM:
        return FJ_ENOMEM;
    default:
        return FJ_EIO;
    }
}

fj_status fj_sq_fail(fj_store *s, int rc, const char *what, fj_err *err)
{
    return fj_err_set(err, fj_sq_status(rc), "db", "sqlite: %s: %s", what,
                      s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

/* --- statements --------------------------------------------------------------------------- */

sqlite3_stmt *fj_sq_stmt(fj_store *s, fj_sq_stmt_id id, fj_err *err)
{
    if (s->stmts[id])
        return s->stmts[id];
    const char *sql = s->stmt_text(id);
    int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->stmts[id], NULL);
    if (rc != SQLITE_OK) {
        fj_sq_fail(s, rc, "prepare", err);
        s->stmts[id] = NULL;
        return NULL;
    }
    return s->stmts[id];
}

fj_status fj_sq_done(fj_store *s, sqlite3_stmt *st, const char *what, fj_err *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fj_sq_fail(s, rc, what, err);
    return FJ_OK;
}

fj_status fj_sq_insert(fj_store *s, sqlite3_stmt *st, const char *what, bool *added, fj_err *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, what, err);
    *added = sqlite3_changes(s->db) > 0;
    return FJ_OK;
}

/* --- binding ------------------------------------------------------------------------------ */

void fj_sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        sqlite3_bind_int64(st, i, (int64_t)v);
    else
        sqlite3_bind_double(st, i, (double)v);
}

int fj_sq_bind_vals(sqlite3_stmt *st, int i, const fj_wval *v, size_t n)
{
    for (size_t k = 0; k < n; k++, i++) {
        switch (v[k].type) {
        case FJ_WV_INT: sqlite3_bind_int64(st, i, v[k].u.i); break;
        case FJ_WV_U64: fj_sq_bind_u64(st, i, v[k].u.u); break;
        case FJ_WV_REAL: sqlite3_bind_double(st, i, v[k].u.r); break;
        case FJ_WV_TEXT: sqlite3_bind_text(st, i, v[k].u.s.p, (int)v[k].u.s.n, SQLITE_STATIC); break;
        case FJ_WV_BLOB: sqlite3_bind_blob(st, i, v[k].u.s.p, (int)v[k].u.s.n, SQLITE_STATIC); break;
        default: sqlite3_bind_null(st, i); break;
        }
    }
    return i;
}

/* --- statements outside the cache ---------------------------------------------------------- */

fj_status fj_sq_exec(fj_store *s, const char *sql, fj_err *err)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(s, rc, sql, err);
}

fj_status fj_sq_query_i64(fj_store *s, const char *sql, int64_t *out, fj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, sql, err);
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(s, rc, sql, err);
}

/* --- values ------------------------------------------------------------------------------------ */

fj_value fj_sq_value_col(sqlite3_stmt *st, int i, fj_vtype t)
{
    int ct = sqlite3_column_type(st, i);
    if (ct == SQLITE_NULL)
        return fj_value_null();
    switch (t) {
    case FJ_VT_INT:
        /* unsigned values past 2^63-1 are stored as REAL: show them as numbers all the same */
        if (ct == SQLITE_FLOAT)
            return fj_value_real(sqlite3_column_double(st, i));
        return fj_value_int(sqlite3_column_int64(st, i));
    case FJ_VT_BOOL: return fj_value_bool(sqlite3_column_int64(st, i) != 0);
    case FJ_VT_REAL: return fj_value_real(sqlite3_column_double(st, i));
    case FJ_VT_TIME: return fj_value_time(sqlite3_column_int64(st, i));
    case FJ_VT_JSON: return fj_value_json((const char *)sqlite3_column_text(st, i));
    default: return fj_value_text((const char *)sqlite3_column_text(st, i));
    }
}

/* --- the reader of storage/core/driver.h ---------------------------------------------------- */

static fj_status qrows_step(const fj_qrows *r, const char *what, bool *row)
{
    int rc = sqlite3_step(r->st);
    *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(((fj_qx *)r->x)->s, rc, what, ((fj_qx *)r->x)->err);
}

static void qrows_reset(const fj_qrows *r)
{
    sqlite3_reset(r->st);
}

static void qrows_bind_int(const fj_qrows *r, int i, int64_t v)
{
    sqlite3_bind_int64(r->st, i, v);
}

static void qrows_bind_real(const fj_qrows *r, int i, double v)
{
    sqlite3_bind_double(r->st, i, v);
}

static void qrows_bind_text(const fj_qrows *r, int i, const char *s)
{
    sqlite3_bind_text(r->st, i, s, -1, SQLITE_STATIC);
}

static bool qrows_is_null(const fj_qrows *r, int c)
{
    return sqlite3_column_type(r->st, c) == SQLITE_NULL;
}

static int64_t qrows_i64(const fj_qrows *r, int c)
{
    return sqlite3_column_int64(r->st, c);
}

static double qrows_dbl(const fj_qrows *r, int c)
{
    return sqlite3_column_double(r->st, c);
}

static void qrows_reals(const fj_qrows *r, int col, int n, double *v)
{
    for (int i = 0; i < n; i++)
        v[i] = sqlite3_column_double(r->st, col + i);
}

static const char *qrows_text(const fj_qrows *r, int c)
{
    return (const char *)sqlite3_column_text(r->st, c);
}

static fj_value qrows_value(const fj_qrows *r, int c, fj_vtype t)
{
    return fj_sq_value_col(r->st, c, t);
}

static const unsigned char *qrows_blob(const fj_qrows *r, int c, size_t *len)
{
    const unsigned char *p = sqlite3_column_blob(r->st, c);
    *len = (size_t)sqlite3_column_bytes(r->st, c);
    return p;
}

static fj_status qrows_json(const fj_qrows *r, int c, fj_buf *out)
{
    switch (sqlite3_column_type(r->st, c)) {
    case SQLITE_NULL: return fj_buf_puts(out, "null");
    case SQLITE_INTEGER: return fj_buf_printf(out, "%lld", (long long)sqlite3_column_int64(r->st, c));
    case SQLITE_FLOAT: return fj_buf_printf(out, "%.17g", sqlite3_column_double(r->st, c));
    default: return fj_buf_json_str(out, (const char *)sqlite3_column_text(r->st, c));
    }
}

const fj_qrows_ops fj_sq_qrows_ops = {qrows_step,      qrows_reset, qrows_bind_int, qrows_bind_real,
                                      qrows_bind_text, qrows_is_null, qrows_i64,  qrows_dbl, qrows_reals,
                                      qrows_text,      qrows_value, qrows_blob,     qrows_json};


/* --- the driver of storage/core/driver.h ----------------------------------------------------------- */

fj_status fj_sq_driver_begin_read(fj_qx *x)
{
    fj_store *s = x->s;
    /* Queries over days of samples read far past the 256 MB that sq_open maps; mapping up to
     * 16 GB on read handles saves a read() and a copy per page. Per connection, and a no-op
     * when unchanged (SQLite caps it at its compile-time maximum). */
    if (s->mode == FJ_STORE_READ)
        sqlite3_exec(s->db, "PRAGMA mmap_size=17179869184", NULL, NULL, NULL);
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(s, rc, "begin read", x->err);
}

/* A read transaction has nothing to undo: it is ended the same way after a failure. */
void fj_sq_driver_end_read(fj_qx *x, fj_status st)
{
    (void)st;
    if (!sqlite3_get_autocommit(x->s->db))
        sqlite3_exec(x->s->db, "COMMIT", NULL, NULL, NULL);
}

fj_status fj_sq_driver_prepare(fj_qx *x, const char *sql, fj_qrows *r)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(x->s->db, sql, -1, &st, NULL);
    *r = (fj_qrows){&fj_sq_qrows_ops, x, rc == SQLITE_OK ? st : NULL};
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(x->s, rc, "prepare query", x->err);
}

void fj_sq_driver_finalize(const fj_qrows *r)
{
    sqlite3_finalize(r->st);
}

/* A job's process rows in a window (fj_layout_sql's job_procs): one pass over the job's
 * node-samples and their process rows (and GPU rows when the job used a GPU), in node and time
 * order (a process's CPU needs the node's sample before); CROSS JOIN fixes the loop order:
 * job_samples, which carries the node, time and process range (migration 0007), then one range
 * seek into sample_procs. Rows of one process are adjacent. The range is the sample's whole job;
 * for a job of one process (job 0) its pid, ppid and cmd pick it out. ?3 (the epoch) is not
 * needed. */
#define JOB_PROCS(gpu_cols, gpu_join)                                                                  \
    "SELECT js.node_id, js.time, js.sample_id, p.id, p.pid, p.ppid, p.cmd_id, p.resident_kb,"          \
    " p.cpu_util_m, p.rolledup, p.cpu_time, p.cpu_avg_m, p.num_threads,"                               \
    " (SELECT CASE WHEN e.producer = 'fjord-push' THEN e.version END FROM jobs j CROSS JOIN envelopes e" \
    " ON e.cluster_id = j.cluster_id AND e.node_id = js.node_id AND e.kind = 'sample'"                 \
    " AND e.time = js.time WHERE j.id = ?1)" gpu_cols " FROM job_samples js"                        \
    " CROSS JOIN sample_procs p ON p.id >= js.proc_first AND p.id < js.proc_first + js.n_procs"        \
    gpu_join " WHERE js.rjob_id = ?1 AND js.time >= ?7 AND js.time <= ?8"                              \
    " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))"                   \
    " ORDER BY js.node_id, js.time, p.id"

/* A sample's GPU cards hang off the sample's id, and a job's processes in a sample are a range of
 * sample_procs' ids (sample_jobs). */
const fj_layout_sql fj_sq_driver_layout = {
    .uptime_cards = "SELECT s.time, g.idx, g.failing FROM samples s CROSS JOIN sample_gpus g"
                    " ON g.sample_id = s.id WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3"
                    " ORDER BY s.time, g.idx",
    .usage_samples = "SELECT id, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = ?1"
                     " ORDER BY time DESC LIMIT 2",
    .usage_gpus = "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus WHERE sample_id = ?2",
    /* the job's latest sample on a host at or before the job's end: one seek on job_samples' key
     * (rjob_id, node_id, time), migration 0013 */
    .job_last_sample = "SELECT sample_id FROM job_samples"
                       " WHERE rjob_id = ?1 AND node_id = ?2 AND time <= ?3 ORDER BY time DESC LIMIT 1",
    .job_usage = "SELECT sum(p.cpu_time), sum(p.data_read_kb), sum(p.data_written_kb)"
                 " FROM sample_jobs sj CROSS JOIN sample_procs p"
                 " ON p.id >= sj.proc_first AND p.id < sj.proc_first + sj.n_procs"
                 " WHERE sj.sample_id = ?1 AND sj.job = ?2 AND sj.epoch = ?3"
                 " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))",
    .job_procs = JOB_PROCS("", ""),
    .job_procs_gpu = JOB_PROCS(", g.gpu_util_m, g.gpu_memory_kb", " LEFT JOIN sample_proc_gpus g ON g.proc_id = p.id"),
    .load_gpus = "SELECT s.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                 " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                 " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3 ORDER BY s.time, g.idx",
    .gpu_load_cards = "SELECT g.idx, u.s, s.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                      " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                      " LEFT JOIN strings u ON u.id = g.uuid_id"
                      " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3"
                      " ORDER BY g.idx, u.s NULLS FIRST, s.time",
    .energy_card_use = "SELECT s.time, g.idx, sj.job, sj.epoch, sum(g.gpu_util_m)"
                       " FROM samples s CROSS JOIN sample_jobs sj ON sj.sample_id = s.id"
                       " CROSS JOIN sample_proc_gpus g ON g.proc_id >= sj.proc_first"
                       " AND g.proc_id < sj.proc_first + sj.n_procs"
                       " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3 AND sj.n_procs > 0"
                       " GROUP BY s.time, g.idx, sj.job, sj.epoch ORDER BY s.time, g.idx",
    .energy_cards = "SELECT g.idx, u.s, s.time, g.power, g.energy_mj"
                    " FROM samples s CROSS JOIN sample_gpus g ON g.sample_id = s.id"
                    " LEFT JOIN strings u ON u.id = g.uuid_id"
                    " WHERE s.node_id = ?1 AND s.time >= ?2 AND s.time <= ?3"
                    " ORDER BY g.idx, u.s NULLS FIRST, s.time",
    /* the request log is trimmed as it becomes durable, so its counts stay small; ts_series and
     * ts_chunk are counted on their smallest index */
    .stats = "SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()),"
             " (SELECT count(*) FROM ts_series), (SELECT count(*) FROM ts_chunk),"
             " (SELECT count(*) FROM request_log), (SELECT coalesce(sum(length(body)), 0) FROM request_log),"
             " (SELECT count(*) FROM request_log WHERE lsn >"
             "   coalesce((SELECT value FROM ts_state WHERE key = 'durable_lsn'), 0))",
};

/* The columns a row of fj_sq_driver_run() may have (the store's own statements read a few). */
#define RUN_MAX_COLS 16

fj_status fj_sq_driver_run(fj_store *s, const char *sql, int n, const char *const *params,
                     void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                     int64_t *changed, const char *what, fj_err *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "prepare", err);
    int ncols = sqlite3_column_count(st);
    if (ncols > RUN_MAX_COLS) {
        sqlite3_finalize(st);
        return fj_err_set(err, FJ_EINTERNAL, "db", "sqlite: %s: %d columns", what, ncols);
    }
    for (int i = 0; i < n; i++)
        sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *cells[RUN_MAX_COLS];
        for (int c = 0; c < ncols; c++)
            cells[c] = (const char *)sqlite3_column_text(st, c);
        if (row)
            row(ctx, ncols, cells);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, what, err);
    if (changed)
        *changed = sqlite3_changes64(s->db);
    return FJ_OK;
}

fj_status fj_sq_driver_exec(fj_store *s, const char *sql, const char *what, fj_err *err)
{
    (void)what;
    return fj_sq_exec(s, sql, err);
}

void fj_sq_driver_rollback(fj_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

bool fj_sq_driver_writable(const fj_store *s)
{
    return s->mode == FJ_STORE_WRITE;
}
