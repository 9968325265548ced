/* storage/ts/writer.c — the metrics writer's backend-neutral bookkeeping (storage/ts/writer.h). */
#include "storage/ts/writer.h"

#include "alloc.h"
#include "ingest/cc.h"
#include "log.h"

#include <string.h>

#define NS FJ_TSW_NS
#define DEFAULT_FLUSH_S (12 * 3600)
#define DEFAULT_MAX_BUFFERED ((size_t)16 << 20)
#define ZSTD_LEVEL 1 /* archived raw bodies (request-log-keep), compressed by the writer: speed first */

static fj_status oom(fj_err *err)
{
    return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
}

static fj_status replay_oom(fj_err *err)
{
    return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
}

/* --- the schedule ---------------------------------------------------------------------------- */

int64_t fj_tsw_retention_every(int64_t retention_ns)
{
    int64_t every = retention_ns / 4;
    return every > 600 * NS ? 600 * NS : every < NS ? NS : every;
}

uint64_t fj_tsw_first_lsn(int64_t next_saved, int64_t max_lsn)
{
    uint64_t lsn = (uint64_t)(next_saved > max_lsn ? next_saved : max_lsn + 1);
    return lsn < 1 ? 1 : lsn;
}

uint64_t fj_tsw_durable_of(const fj_ts_writer *w, uint64_t engine_durable)
{
    return engine_durable == UINT64_MAX ? w->next_lsn : engine_durable;
}

bool fj_tsw_flush_due(const fj_ts_writer *w, int64_t now)
{
    return now - w->last_flush >= w->flush_ns;
}

bool fj_tsw_retention_due(const fj_ts_writer *w, int64_t now)
{
    return w->retention_ns && now - w->last_retention >= fj_tsw_retention_every(w->retention_ns);
}

bool fj_tsw_trim_due(const fj_ts_writer *w, int64_t now)
{
    return w->durable_saved > w->trimmed_below && (!w->keep_ns || now - w->last_trim >= FJ_TSW_TRIM_EVERY);
}

bool fj_tsw_checkpoint_due(const fj_ts_writer *w, int64_t now, size_t unckpt, size_t open_bytes, bool idle)
{
    if (!unckpt || now - w->last_ckpt < FJ_TSW_CKPT_EVERY)
        return false;
    double log_bytes = (double)unckpt * FJ_TSW_LOG_POINT_BYTES;
    return log_bytes >= (double)open_bytes * (idle ? 1 : FJ_TSW_CKPT_BUSY_RATIO);
}

bool fj_tsw_sharing(const fj_ts_writer *w)
{
    return w->share_ns > 0 && w->share_peers;
}

bool fj_tsw_share_due(const fj_ts_writer *w, int64_t now, size_t unckpt)
{
    return fj_tsw_sharing(w) && unckpt && now - w->last_share >= w->share_ns;
}

bool fj_tsw_txn_due(const fj_ts_writer *w, uint64_t durable, int64_t now, bool extra)
{
    bool keep_due = w->keep_ns && now - w->last_trim >= FJ_TSW_TRIM_EVERY;
    return w->dirty || durable != w->durable_saved || (!w->keep_ns && w->durable_saved > w->trimmed_below) ||
           fj_tsw_retention_due(w, now) || keep_due || extra;
}

/* --- lifecycle ------------------------------------------------------------------------------- */

fj_status fj_tsw_open(fj_ts_writer *w, const fj_store_opts *o, uint64_t seq_start, int64_t durable, int64_t next,
                      int64_t max_lsn, int64_t now, fj_err *err)
{
    static const fj_store_opts defaults = {0};
    if (!o)
        o = &defaults;
    fj_ts_opts eo = {
        .seal_points = o->ts_seal_points,
        .seal_age_ns = o->ts_seal_age_s > 0 ? o->ts_seal_age_s * NS : 0,
        /* the setting counts points of 16 bytes, what a buffered point took before open buffers were
         * compressed: it is now the open buffers' memory, so the same setting holds ~10x the points */
        .max_buffered_bytes = (o->ts_max_buffered_points ? o->ts_max_buffered_points : DEFAULT_MAX_BUFFERED) * 16,
        .seq_start = seq_start,
    };
    fj_status st = fj_ts_engine_open(&eo, &w->eng);
    if (st != FJ_OK)
        return fj_err_set(err, st, "metrics", "cannot open the time-series engine (bad options?)");
    w->retention_ns = o->ts_retention_s > 0 ? o->ts_retention_s * NS : 0;
    w->flush_ns = (o->ts_flush_interval_s > 0 ? o->ts_flush_interval_s : DEFAULT_FLUSH_S) * NS;
    w->keep_ns = o->ts_log_keep_s > 0 ? o->ts_log_keep_s * NS : 0;
    w->next_lsn = fj_tsw_first_lsn(next, max_lsn);
    w->durable_saved = (uint64_t)durable;
    w->next_saved = (uint64_t)next;
    w->last_maint = w->last_flush = w->last_retention = w->last_ckpt = w->writes_seen_at = w->last_share = now;
    /* with request-log-keep the log is an archive kept anyway: checkpoints would only add writes */
    w->checkpoints = !w->keep_ns;
    return FJ_OK;
}

void fj_tsw_abort(fj_ts_writer *w)
{
    w->started = false;
    fj_ts_engine_close(w->eng);
    w->eng = NULL;
}

fj_status fj_tsw_start(fj_ts_writer *w, const fj_tsw_start_ops *ops, void *ud, uint64_t durable, const char *who,
                       fj_err *err)
{
    size_t n_req = 0, n_pts = 0;
    fj_status st = ops->catalog(ud, err);
    if (st == FJ_OK)
        st = ops->replay(ud, durable, &n_req, &n_pts, err);
    if (st == FJ_OK) {
        w->started = true;
        w->dirty = true;
        st = ops->commit(ud, err);
    }
    if (st != FJ_OK) {
        fj_tsw_abort(w);
        return st;
    }
    fj_ts_stats ss;
    fj_ts_engine_stats(w->eng, &ss);
    fj_info("metrics: %s%zu series; replayed %zu logged requests (%zu points) from lsn %llu", who, ss.series, n_req,
            n_pts, (unsigned long long)durable);
    return FJ_OK;
}

fj_status fj_tsw_load_series(fj_ts_writer *w, int64_t id, const char *const f[7], const size_t n[7], int ftype,
                             fj_err *err)
{
    fj_ts_str s[7];
    for (int i = 0; i < 7; i++)
        s[i] = (fj_ts_str){f[i] ? f[i] : "", f[i] ? n[i] : 0};
    fj_ts_key k = {s[0], s[1], s[2], s[3], s[4], s[5], s[6], (uint8_t)ftype};
    fj_status st = id > 0 && id <= UINT32_MAX ? fj_ts_engine_load_series(w->eng, (uint32_t)id, &k) : FJ_EINVAL;
    return st == FJ_OK ? FJ_OK : fj_err_set(err, st, "db", "loading series %lld failed", (long long)id);
}

void fj_tsw_end(fj_ts_writer *w, bool committed)
{
    if (committed) {
        if (w->dirty)
            fj_ts_engine_committed(w->eng);
        w->dirty = false;
    } else {
        fj_ts_engine_rolled_back(w->eng);
        w->durable_saved = w->next_saved = 0; /* unknown: write them again */
    }
}

void fj_tsw_free(fj_ts_writer *w)
{
    fj_ts_engine_close(w->eng);
    w->eng = NULL;
    ZSTD_freeCCtx(w->zc);
    ZSTD_freeDCtx(w->zd);
    fj_ts_log_destroy(w->rec);
    fj_free(w->zbuf);
    w->zc = NULL;
    w->zd = NULL;
    w->rec = NULL;
    w->zbuf = NULL;
    w->zcap = 0;
}

void fj_tsw_close(fj_ts_writer *w, fj_status (*finish)(void *ud, fj_err *err), void *ud)
{
    if (w->eng && w->started) {
        fj_err err = {0};
        fj_ts_engine_flush(w->eng);
        w->dirty = true;
        if (finish(ud, &err) != FJ_OK)
            fj_warn("metrics: final flush failed (the request log replays it): %s", err.message);
    }
    fj_tsw_free(w);
}

/* --- maintenance ----------------------------------------------------------------------------- */

bool fj_tsw_maintain(fj_ts_writer *w, int64_t now, bool extra)
{
    if (!w->started || now - w->last_maint < NS)
        return false;
    w->last_maint = now;
    if (fj_tsw_flush_due(w, now)) {
        w->last_flush = now;
        fj_ts_engine_flush(w->eng); /* what could not be sealed for lack of memory stays buffered */
        w->dirty = true;
    }
    fj_ts_stats st;
    fj_ts_engine_stats(w->eng, &st);
    if (st.unckpt_writes != w->writes_seen) {
        w->writes_seen = st.unckpt_writes;
        w->writes_seen_at = now;
    }
    w->ckpt_now = w->checkpoints && fj_tsw_checkpoint_due(w, now, st.unckpt_writes, st.open_bytes,
                                                          now - w->writes_seen_at >= FJ_TSW_CKPT_IDLE);
    /* a share is a checkpoint too: timed from when it was due, not from when its transaction ran,
     * so that a one-second interval is met by passes a second apart */
    if (fj_tsw_share_due(w, now, st.unckpt_writes)) {
        w->last_share = now;
        w->ckpt_now = true;
    }
    if (w->ckpt_now)
        return true;
    /* Nothing sealed, the durable lsn unchanged and nothing due: no transaction at all. */
    return fj_tsw_txn_due(w, fj_tsw_durable_of(w, fj_ts_engine_durable_lsn(w->eng)), now, extra);
}

fj_status fj_tsw_checkpoint(fj_ts_writer *w, const fj_ts_sink *sink, int64_t now, fj_err *err)
{
    if (!w->ckpt_now)
        return FJ_OK;
    w->ckpt_now = false;
    w->last_ckpt = now;
    w->dirty = true; /* the engine learns of the commit */
    /* sharing: every second, so only what was written since (fj_ts_engine_share); a buffer never
     * shared (all of them when the first other server came) is stored whole */
    fj_status st = fj_tsw_sharing(w) ? fj_ts_engine_share(w->eng, sink, w->drop_range) : fj_ts_engine_checkpoint(w->eng, sink);
    return st == FJ_OK ? FJ_OK : fj_err_set(err, st, "db", "checkpoint of the open buffers failed");
}

fj_status fj_tsw_cleanup(fj_ts_writer *w, const fj_tsw_cleanup_ops *ops, void *ud, int64_t wall, int64_t mono,
                         fj_err *err)
{
    fj_status st;
    if (fj_tsw_retention_due(w, mono)) {
        w->last_retention = mono;
        if ((st = ops->retention(ud, wall - w->retention_ns, err)) != FJ_OK)
            return st;
    }
    if (fj_tsw_trim_due(w, mono)) {
        w->last_trim = mono;
        if ((st = ops->trim(ud, w->durable_saved, w->keep_ns ? wall - w->keep_ns : INT64_MAX, err)) != FJ_OK)
            return st;
        if (!w->keep_ns)
            w->trimmed_below = w->durable_saved;
    }
    return FJ_OK;
}

/* --- the request log's rows ------------------------------------------------------------------ */

fj_status fj_tsw_record_begin(fj_ts_writer *w, fj_err *err)
{
    if (!w->rec && !(w->rec = fj_ts_log_create()))
        return oom(err);
    fj_ts_log_begin(w->rec);
    return FJ_OK;
}

fj_status fj_tsw_record_add(fj_ts_writer *w, const uint32_t *ids, const fj_metric_point *p, size_t n, fj_err *err)
{
    for (size_t off = 0; off < n; off += FJ_TSW_SLICE) {
        size_t k = n - off < FJ_TSW_SLICE ? n - off : FJ_TSW_SLICE, m = 0;
        for (size_t i = 0; i < k; i++) {
            if (!ids[off + i] || p[off + i].ftype == FJ_FT_STRING) /* dropped by a quota: not stored, so not
                                                                      logged; strings are rows of their own */
                continue;
            w->ids[m] = ids[off + i];
            w->t[m] = p[off + i].t;
            w->v[m] = p[off + i].v;
            m++;
        }
        if (m && fj_ts_log_add(w->rec, w->ids, w->t, w->v, m) != FJ_OK)
            return oom(err);
    }
    return FJ_OK;
}

fj_status fj_tsw_record_finish(fj_ts_writer *w, const void **rec, size_t *len, fj_err *err)
{
    return fj_ts_log_finish(w->rec, rec, len) == FJ_OK ? FJ_OK : oom(err);
}

fj_status fj_tsw_compress(fj_ts_writer *w, const fj_metrics *m, const void **z, size_t *zn, fj_err *err)
{
    size_t bound = ZSTD_compressBound(m->raw_len);
    if (bound > w->zcap) {
        void *nb = fj_realloc(w->zbuf, bound);
        if (!nb)
            return oom(err);
        w->zbuf = nb;
        w->zcap = bound;
    }
    if (!w->zc && !(w->zc = ZSTD_createCCtx()))
        return oom(err);
    size_t n = ZSTD_compressCCtx(w->zc, w->zbuf, w->zcap, m->raw, m->raw_len, ZSTD_LEVEL);
    if (ZSTD_isError(n))
        return fj_err_set(err, FJ_EINTERNAL, "db", "zstd: %s", ZSTD_getErrorName(n));
    *z = w->zbuf;
    *zn = n;
    return FJ_OK;
}

fj_status fj_tsw_append_ids(fj_ts_writer *w, const fj_metric_point *p, const uint32_t *ids, size_t n,
                            fj_err *err)
{
    for (size_t off = 0; off < n; off += FJ_TSW_SLICE) {
        size_t k = n - off < FJ_TSW_SLICE ? n - off : FJ_TSW_SLICE, m = 0;
        for (size_t i = 0; i < k; i++) {
            if (!ids[off + i] || p[off + i].ftype == FJ_FT_STRING) /* dropped by a quota; a string is a row */
                continue;
            w->ids[m] = ids[off + i];
            w->t[m] = p[off + i].t;
            w->v[m] = p[off + i].v;
            m++;
        }
        fj_status st = m ? fj_ts_append_ids(w->eng, w->ids, w->t, w->v, m, NULL) : FJ_OK;
        if (st != FJ_OK)
            return fj_err_set(err, st, "db", "appending metric points failed");
    }
    return FJ_OK;
}

/* --- replay ---------------------------------------------------------------------------------- */

/* A point record: its series are in the catalog, written in (or before) the transaction that
 * wrote the record. */
static fj_status replay_points(fj_ts_writer *w, fj_tsw_replay *r, const fj_tsw_logrow *row, const char *where,
                               fj_err *err)
{
    if (!w->rec && !(w->rec = fj_ts_log_create()))
        return replay_oom(err);
    const uint32_t *ids;
    const int64_t *times;
    const double *values;
    size_t n = 0, done = 0;
    fj_status st = fj_ts_log_decode(w->rec, row->body, row->body_len, &ids, &times, &values, &n);
    if (st == FJ_ENOMEM)
        return replay_oom(err);
    fj_ts_engine_set_lsn(w->eng, row->lsn);
    if (st == FJ_OK)
        st = fj_ts_append_ids(w->eng, ids, times, values, n, &done);
    r->n_pts += done;
    if (st == FJ_ENOMEM)
        return replay_oom(err);
    if (st != FJ_OK)
        fj_warn("metrics: request log entry %llu%s is corrupt or names an unknown series; %zu of its points "
                "replayed",
                (unsigned long long)row->lsn, where, done);
    return FJ_OK;
}

fj_status fj_tsw_replay_row(fj_ts_writer *w, fj_tsw_replay *r, const fj_tsw_logrow *row, const char *where,
                            fj_tsw_append_fn append, void *ud, bool *skipped, fj_err *err)
{
    if (skipped)
        *skipped = false;
    if (row->lsn >= w->next_lsn)
        w->next_lsn = row->lsn + 1;
    if (row->unit_ns == FJ_TSW_POINT_RECORD)
        return replay_points(w, r, row, where, err);
    if (!w->zd && !(w->zd = ZSTD_createDCtx()))
        return oom(err);
    if (row->size + 1 > r->cap) {
        char *nb = fj_realloc(r->buf, row->size + 1);
        if (!nb)
            return replay_oom(err);
        r->buf = nb;
        r->cap = row->size + 1;
    }
    size_t got = ZSTD_decompressDCtx(w->zd, r->buf, r->cap, row->body, row->body_len);
    if (ZSTD_isError(got) || got != row->size) {
        fj_warn("metrics: request log entry %llu%s is corrupt; skipped", (unsigned long long)row->lsn, where);
        if (skipped)
            *skipped = true;
        return FJ_OK;
    }
    fj_cc_opts o = {.default_cluster = row->cluster,
                    .unit_ns = row->unit_ns,
                    .arrival_ns = row->received,
                    .max_future_ns = row->max_future_ns,
                    .points_only = true};
    fj_batch *b = fj_batch_new();
    if (!b || fj_cc_decode(r->buf, got, &o, b, NULL, NULL, NULL, err) != FJ_OK) {
        fj_batch_free(b);
        return replay_oom(err);
    }
    const fj_metrics *m = &b->envs[0].u.metrics;
    fj_ts_engine_set_lsn(w->eng, row->lsn);
    fj_status st = append(ud, m, err);
    r->n_pts += m->n_points;
    fj_batch_free(b);
    return st;
}

void fj_tsw_replay_done(fj_tsw_replay *r)
{
    fj_free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

/* --- field types ------------------------------------------------------------------------------ */

_Static_assert(FJ_FT_FLOAT == (int)FJ_TS_FLOAT && FJ_FT_INTEGER == (int)FJ_TS_INTEGER &&
                   FJ_FT_STRING == (int)FJ_TS_STRING && FJ_FT_BOOLEAN == (int)FJ_TS_BOOLEAN &&
                   FJ_FT_UNTYPED == (int)FJ_TS_UNTYPED,
               "a record's field type is the engine's");

void fj_tsw_note_conflict(fj_write_count *cnt, const fj_metric_point *p, int stored)
{
    if (!cnt)
        return;
    if (!cnt->conflicts++) {
        cnt->conflict_line = p->line;
        cnt->conflict_sent = p->ftype;
        cnt->conflict_stored = (uint8_t)stored;
        size_t n = p->metric.n < sizeof cnt->conflict_metric - 1 ? p->metric.n : sizeof cnt->conflict_metric - 1;
        if (n)
            memcpy(cnt->conflict_metric, p->metric.p, n);
        cnt->conflict_metric[n] = '\0';
    }
}
