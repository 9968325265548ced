/* storage/ts/writer.h — the metrics writer's bookkeeping that does not depend on the database: the request
 * log's sequence (lsn) and what is saved of it, when maintenance is due (flush interval, durable
 * lsn, retention and request-log trim), the point records and archived bodies of the request log,
 * and the replay of one logged request into the engine. The backends (storage/sqlite/ts.c, storage/pg/ts.c) embed
 * an fj_ts_writer in their metrics state and keep their SQL, transactions and how a series gets
 * its id; what a maintenance pass deletes they run as callbacks (fj_tsw_cleanup_ops).
 *
 * The durability contract the backends implement with it (docs/metrics.md): a request's points go
 * to the request log under the next lsn in the same transaction as they are appended to the
 * engine (fj_ts_engine_set_lsn(eng, lsn) before the append); right before COMMIT the engine's
 * sealed chunks are stored and the durable lsn (fj_tsw_durable_lsn) saved; after COMMIT or
 * ROLLBACK fj_tsw_end. Startup replays the log from the saved durable lsn.
 *
 * Times: `now`/`mono` are monotonic ns (fj_mono_ns), `wall` is CLOCK_REALTIME ns. The schedule
 * functions are pure: they read the writer's fields and the time given, nothing else. One writer
 * thread per fj_ts_writer. */
#ifndef FJ_TS_WRITER_H
#define FJ_TS_WRITER_H

#include "ingest/records/metrics.h"
#include "storage/core/store.h"
#include "storage/ts/engine.h"
#include "storage/ts/request_log.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#define FJ_TSW_NS 1000000000LL
#define FJ_TSW_SLICE 1024           /* points handed to the engine or a point record per call */
#define FJ_TSW_POINT_RECORD (-1)    /* request_log.unit_ns of a point record (a raw body's: 0 or a unit) */
#define FJ_TSW_TRIM_EVERY (60 * FJ_TSW_NS) /* with request-log-keep: archived rows trimmed once a minute */
/* Checkpoints of the open buffers (fj_ts_engine_checkpoint), so the request log can be trimmed
 * long before the buffers seal: at most one every FJ_TSW_CKPT_EVERY, once the log written since
 * the last one (~FJ_TSW_LOG_POINT_BYTES a point) outweighs the open buffers (what a checkpoint
 * writes) FJ_TSW_CKPT_BUSY_RATIO times while writes go on, or once when writes have paused for
 * FJ_TSW_CKPT_IDLE (the end of a backlog; between a cluster's intervals). A checkpoint writes at
 * most what the log wrote since the last one, and re-encodes every buffered point: during a
 * backlog only every few times the buffers' size (each checkpoint there once cost the writer as
 * much as the points since the last one). */
#define FJ_TSW_CKPT_EVERY (10 * FJ_TSW_NS)
#define FJ_TSW_CKPT_IDLE (2 * FJ_TSW_NS)
#define FJ_TSW_CKPT_BUSY_RATIO 4
#define FJ_TSW_LOG_POINT_BYTES 5

typedef struct fj_ts_writer {
    fj_ts_engine *eng;
    bool started; /* startup (load, replay) done */
    bool dirty;   /* points or a flush since the last commit: emit sealed chunks */
    bool own;     /* in one of the writer's own transactions: always save the state */
    /* The request log: the next lsn to give, the durable and next lsn as last saved, and the lsn
     * below which this writer already trimmed (only without request-log-keep). */
    uint64_t next_lsn, durable_saved, next_saved, trimmed_below;
    /* Settings (ns; retention and keep 0: off) and when each task last ran (monotonic ns). */
    int64_t retention_ns, flush_ns, keep_ns;
    int64_t last_maint, last_flush, last_retention, last_trim;
    /* Checkpoints: whether this backend takes them, whether the coming maintenance transaction
     * should (set by fj_tsw_maintain), when the last one was taken, and the engine's count of
     * writes since then as last seen and since when it stood still. */
    bool checkpoints, ckpt_now;
    int64_t last_ckpt, writes_seen_at;
    /* Sharing (a backend whose database other servers read: PostgreSQL sets share_ns and its
     * drop_range after fj_tsw_open; share_ns 0: off): a share (fj_ts_engine_share) of the buffers
     * holding new writes at most every share_ns, whatever the log's size, so that other servers
     * read those points from the chunk table (docs/metrics.md, "Every server sees every point");
     * last_share: when the last was due. share_peers: whether another server reads the database
     * now (the backend's finding, renewed at each maintenance pass); without one nothing is shared
     * and checkpoints are as without share_ns, so a lone server pays nothing for it. */
    int64_t share_ns, last_share;
    bool share_peers;
    fj_ts_drop_range drop_range;
    size_t writes_seen;
    /* Buffers of the request log's rows. */
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    void *zbuf;
    size_t zcap;
    fj_ts_log *rec;
    uint32_t ids[FJ_TSW_SLICE];
    int64_t t[FJ_TSW_SLICE];
    double v[FJ_TSW_SLICE];
} fj_ts_writer;

/* --- the schedule (pure) --------------------------------------------------------------------- */

/* How often retention runs: a quarter of the retention, between 1 s and 10 min. */
int64_t fj_tsw_retention_every(int64_t retention_ns);

/* The first lsn to give at startup, from the saved next lsn and the log's largest lsn (both 0
 * when absent): never below 1, never one already in the log. */
uint64_t fj_tsw_first_lsn(int64_t next_saved, int64_t max_lsn);

/* The lsn that is durable once this transaction commits, from the engine's durable lsn:
 * UINT64_MAX (nothing buffered) means every lsn given so far. */
uint64_t fj_tsw_durable_of(const fj_ts_writer *w, uint64_t engine_durable);

/* Whether the flush interval has passed since the last flush. */
bool fj_tsw_flush_due(const fj_ts_writer *w, int64_t now);

/* Whether retention should run now. */
bool fj_tsw_retention_due(const fj_ts_writer *w, int64_t now);

/* Whether the request log should be trimmed now: the durable lsn moved past what was trimmed,
 * and with request-log-keep only once a minute. */
bool fj_tsw_trim_due(const fj_ts_writer *w, int64_t now);

/* Whether a checkpoint is due at now, with unckpt writes since the last one, open_bytes in the
 * open buffers, and idle true when writes have paused (FJ_TSW_CKPT_IDLE). */
bool fj_tsw_checkpoint_due(const fj_ts_writer *w, int64_t now, size_t unckpt, size_t open_bytes, bool idle);

/* Whether the writer shares now: share_ns set and another server reading (share_peers). */
bool fj_tsw_sharing(const fj_ts_writer *w);

/* Whether a share is due at now (fj_tsw_sharing), with unckpt writes since the last checkpoint. */
bool fj_tsw_share_due(const fj_ts_writer *w, int64_t now, size_t unckpt);

/* Whether a maintenance pass needs a transaction, given the durable lsn it would save: anything
 * to emit, a durable lsn to save, a trim or retention due, or `extra` (the backend's own work
 * pending). False: the pass does nothing at all. */
bool fj_tsw_txn_due(const fj_ts_writer *w, uint64_t durable, int64_t now, bool extra);

/* --- lifecycle ------------------------------------------------------------------------------- */

/* Opens the engine with the ts_* options of o (NULL: defaults), chunk seqs from seq_start, and
 * sets the lsn state from what the database saved (durable and next lsn, the log's largest lsn)
 * and the timers to now. FJ_OK, or the engine's failure in err. */
fj_status fj_tsw_open(fj_ts_writer *w, const fj_store_opts *o, uint64_t seq_start, int64_t durable, int64_t next,
                      int64_t max_lsn, int64_t now, fj_err *err);

/* Startup failed after fj_tsw_open: closes the engine, not started. */
void fj_tsw_abort(fj_ts_writer *w);

/* The steps of startup after fj_tsw_open that run the backend's statements. */
typedef struct fj_tsw_start_ops {
    /* Readies the series catalog: hands the engine its lazy catalog (fj_ts_engine_set_catalog),
     * or loads every stored series (fj_tsw_load_series per row). */
    fj_status (*catalog)(void *ud, fj_err *err);
    /* Replays the request log from from_lsn (fj_tsw_replay_row per row), counting requests and points. */
    fj_status (*replay)(void *ud, uint64_t from_lsn, size_t *n_req, size_t *n_pts, fj_err *err);
    /* The writer's own transaction: stores what the replay sealed and the state. */
    fj_status (*commit)(void *ud, fj_err *err);
} fj_tsw_start_ops;

/* Startup after fj_tsw_open, the same on every backend: the catalog, the replay from the saved
 * durable lsn, started, a first commit; `who` (e.g. "instance 'x' (3); ", or "") leads the log
 * line that says what was replayed. On failure the engine is closed (fj_tsw_abort). */
fj_status fj_tsw_start(fj_ts_writer *w, const fj_tsw_start_ops *ops, void *ud, uint64_t durable, const char *who,
                       fj_err *err);

/* One catalog row: series id and its seven key strings (cluster, host, metric, type, type_id,
 * stype, stype_id; NULL as empty). FJ_OK, or the engine's failure in err naming the id. */
fj_status fj_tsw_load_series(fj_ts_writer *w, int64_t id, const char *const f[7], const size_t n[7], int ftype,
                             fj_err *err);

/* After the transaction's COMMIT (committed) or ROLLBACK: the engine learns which, and after a
 * rollback what was saved is unknown (written again next time). */
void fj_tsw_end(fj_ts_writer *w, bool committed);

/* Closes the engine and frees the buffers; the struct may then be freed. */
void fj_tsw_free(fj_ts_writer *w);

/* At close: once started, flushes the engine and runs finish, the backend's last transactions
 * (what the flush sealed and the state, then retention and the trim), warning when they fail (the
 * request log replays what they did not store); then frees as fj_tsw_free. */
void fj_tsw_close(fj_ts_writer *w, fj_status (*finish)(void *ud, fj_err *err), void *ud);

/* --- maintenance ----------------------------------------------------------------------------- */

/* A maintenance pass at monotonic now: at most one a second; flushes the engine when the flush
 * interval passed, and sets ckpt_now when a checkpoint is due (w->checkpoints on) or a share is
 * (fj_tsw_share_due). True: the
 * backend runs its own transaction (emit, fj_tsw_checkpoint, save, fj_tsw_cleanup); false:
 * nothing to do. extra: the backend has work of its own pending. */
bool fj_tsw_maintain(fj_ts_writer *w, int64_t now, bool extra);

/* Inside the backend's own transaction, after emit: the checkpoint when ckpt_now (a share while
 * fj_tsw_sharing), else nothing. sink: the backend's, with drop. */
fj_status fj_tsw_checkpoint(fj_ts_writer *w, const fj_ts_sink *sink, int64_t now, fj_err *err);

/* What a maintenance transaction deletes, in the backend's SQL. */
typedef struct fj_tsw_cleanup_ops {
    /* Drops chunks whose newest point is before before_ns (wall clock). */
    fj_status (*retention)(void *ud, int64_t before_ns, fj_err *err);
    /* Drops request-log rows of lsn < below_lsn received before received_before (wall ns). */
    fj_status (*trim)(void *ud, uint64_t below_lsn, int64_t received_before, fj_err *err);
} fj_tsw_cleanup_ops;

/* Runs retention and the trim when due (wall and mono: the clocks now), recording that they ran. */
fj_status fj_tsw_cleanup(fj_ts_writer *w, const fj_tsw_cleanup_ops *ops, void *ud, int64_t wall, int64_t mono,
                         fj_err *err);

/* --- the request log's rows ------------------------------------------------------------------ */

/* Point records: begin, add the points (with their series ids; a point of id 0, dropped by a
 * quota, is left out, and so is a string point, committed as a row) slice by slice, finish. *rec is valid until the next record; FJ_ENOMEM in
 * err. */
fj_status fj_tsw_record_begin(fj_ts_writer *w, fj_err *err);
fj_status fj_tsw_record_add(fj_ts_writer *w, const uint32_t *ids, const fj_metric_point *p, size_t n, fj_err *err);
fj_status fj_tsw_record_finish(fj_ts_writer *w, const void **rec, size_t *len, fj_err *err);

/* An archived body (request-log-keep): m's raw body compressed into *z (valid until the next
 * call), *zn bytes. */
fj_status fj_tsw_compress(fj_ts_writer *w, const fj_metrics *m, const void **z, size_t *zn, fj_err *err);

/* Appends n points whose series ids are known, slice by slice; a point of id 0 (dropped by a
 * quota) is left out, and so is a string point (a row of ts_strings, never the engine's). */
fj_status fj_tsw_append_ids(fj_ts_writer *w, const fj_metric_point *p, const uint32_t *ids, size_t n,
                            fj_err *err);

/* --- field types (docs/metrics.md, "Field types") --------------------------------------------- */

/* The engine's key of point q, its type included (strings point into q). Inline: once a point. */
static inline fj_ts_key fj_tsw_key_of(const fj_metric_point *q)
{
    return (fj_ts_key){{q->cluster.p, q->cluster.n}, {q->host.p, q->host.n},       {q->metric.p, q->metric.n},
                       {q->type.p, q->type.n},       {q->type_id.p, q->type_id.n}, {q->stype.p, q->stype.n},
                       {q->stype_id.p, q->stype_id.n}, q->ftype};
}

/* A point refused because its series is of type stored, which p's type does not fit: counted in
 * cnt (may be NULL: replay), the first one's line, metric and types kept for the answer. */
void fj_tsw_note_conflict(fj_write_count *cnt, const fj_metric_point *p, int stored);

/* The upsert of a string point, in both dialects: ?1 series id, ?2 time (ns), ?3 the value (bytes).
 * Re-sending a point replaces it, as for numbers (last write wins). */
#define FJ_TSW_STRING_UPSERT                                                                                \
    "INSERT INTO ts_strings(series_id,t,v) VALUES(?1,?2,?3) ON CONFLICT(series_id,t) DO UPDATE SET v=excluded.v"

/* --- replay ---------------------------------------------------------------------------------- */

/* One request-log row as read back. body: the stored bytes (a point record, or a compressed raw
 * body of size bytes). */
typedef struct fj_tsw_logrow {
    uint64_t lsn;
    int64_t received, unit_ns, max_future_ns;
    const char *cluster; /* NULL: none */
    size_t size;
    const void *body;
    size_t body_len;
} fj_tsw_logrow;

/* State of one replay: a body buffer, and what was replayed. */
typedef struct fj_tsw_replay {
    char *buf;
    size_t cap;
    size_t n_pts;
} fj_tsw_replay;

/* Appends a decoded raw body's points (the backend finds their series ids). */
typedef fj_status (*fj_tsw_append_fn)(void *ud, const fj_metrics *m, fj_err *err);

/* Replays one row under its lsn: a point record by its ids, a raw body decoded and handed to
 * append. Moves next_lsn past the row. A corrupt row is warned about (`where` follows "request log
 * entry N" in the warning, e.g. " of instance 'x'"; "" for none) and skipped (*skipped, which may
 * be NULL); failures are out of memory or append's. */
fj_status fj_tsw_replay_row(fj_ts_writer *w, fj_tsw_replay *r, const fj_tsw_logrow *row, const char *where,
                            fj_tsw_append_fn append, void *ud, bool *skipped, fj_err *err);

/* Frees the replay's buffer. */
void fj_tsw_replay_done(fj_tsw_replay *r);

#endif
