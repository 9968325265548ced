/* storage/sqlite/ts.c — line-protocol metrics in the SQLite backend: the request log, the time-series
 * engine (storage/ts/engine.h) and its tables, ClusterCockpit messages and jobs, startup replay, periodic
 * maintenance and the metric reads. The backend-neutral bookkeeping (lsn, when maintenance is due,
 * request-log records, replay of a logged request) is storage/ts/writer.h's; cc-backend's job rules and
 * the ClusterCockpit answers are storage/ts/cc_json.h's. Here: the SQL, and series ids made by the engine.
 *
 * Durability: a request's points go to request_log as one point record (storage/ts/request_log.h; the raw body
 * when request-log-keep archives them) in the same transaction as they are appended to the
 * engine, so an acknowledged point is either in a committed chunk or in a committed log row at or
 * after the durable lsn (ts_state), which startup replays. Order inside a write transaction, as the
 * engine asks: BEGIN; set_lsn; append; emit (series rows, then chunk rows); COMMIT then
 * committed(), or ROLLBACK then rolled_back(). A rolled-back group leaves its
 * points in the engine's buffers (there is no undo): reads may see them, a crash loses them, and
 * their client was answered 503 and retries. */
#include "storage/sqlite/int.h"
#include "storage/core/try.h"

#include "alloc.h"
#include "storage/ts/cc_json.h"
#include "log.h"
#include "storage/ts/strchunk.h"
#include "storage/ts/writer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define NS FJ_TSW_NS
#define APPEND_SLICE FJ_TSW_SLICE
/* Freed pages given back to the file system per maintenance pass: 8 MB of 4 KiB pages, a few
 * milliseconds of work, so a big trim never stalls ingest. */
#define RELEASE_PAGES_PER_PASS 2048

enum {
    ST_LOG_INS,
    ST_SERIES_INS,
    ST_CHUNK_INS,
    ST_CHUNK_DEL,
    ST_STATE_PUT,
    ST_MSG_INS,
    ST_JOB_DUP,
    ST_JOB_INS,
    ST_JOB_FIND,
    ST_JOB_STOP,
    ST_CHUNKS, /* reader */
    ST_SERIES, /* reader: ts_series by cluster, +1 with host, +2 with metric, +3 with both */
    ST_SERIES_HOST,
    ST_SERIES_METRIC,
    ST_SERIES_HOST_METRIC,
    ST_SERIES_FIND,  /* the lazy catalog: a key's id */
    ST_SERIES_KEY,   /* an id's key */
    ST_SERIES_COUNT, /* a cluster's series, for its quota */
    ST_HOST_ANY,     /* whether a host has any series stored */
    ST_STRING_INS,   /* a string point (docs/metrics.md, "Field types") */
    ST__COUNT
};

static const char *const st_sql[ST__COUNT] = {
    [ST_LOG_INS] = "INSERT INTO request_log(lsn,received,cluster,unit_ns,max_future_ns,size,body) "
                   "VALUES(?,?,?,?,?,?,?)",
    [ST_SERIES_INS] = "INSERT OR REPLACE INTO ts_series(id,cluster,host,metric,type,type_id,stype,stype_id,ftype) "
                      "VALUES(?,?,?,?,?,?,?,?,?)",
    [ST_CHUNK_INS] = "INSERT OR REPLACE INTO ts_chunk(series_id,t_last,seq,t_first,count,blob) VALUES(?,?,?,?,?,?)",
    [ST_CHUNK_DEL] = "DELETE FROM ts_chunk WHERE series_id=?1 AND t_last=?2 AND seq=?3",
    [ST_STATE_PUT] = "INSERT INTO ts_state(key,value) VALUES(?1,?2) ON CONFLICT(key) DO UPDATE SET value=?2",
    [ST_MSG_INS] = "INSERT OR IGNORE INTO cc_messages(cluster_id,time,kind,name,host,hash,tags,payload) "
                   "VALUES(?,?,?,?,?,?,?,?)",
    [ST_JOB_DUP] = "SELECT id FROM cc_jobs WHERE cluster_id=?1 AND job_id=?2 AND start_time>?3-86400 LIMIT 1",
    [ST_JOB_INS] = "INSERT INTO cc_jobs(cluster_id,job_id,start_time,state,user,project,partition,subcluster,"
                   "num_nodes,num_hwthreads,num_acc,hosts,payload) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_JOB_FIND] = "SELECT id,start_time,state FROM cc_jobs WHERE cluster_id=?1 AND job_id=?2 AND "
                    "(?3=0 OR start_time=?3) ORDER BY start_time DESC LIMIT 1",
    [ST_JOB_STOP] = "UPDATE cc_jobs SET stop_time=?2, state=?3 WHERE id=?1",
    [ST_CHUNKS] = "SELECT count,t_first,t_last,seq,blob FROM ts_chunk WHERE series_id=?1 AND t_last>=?2 "
                  "AND t_first<=?3",
#define SERIES_SQL(from, where)                                                                             \
    "SELECT id,cluster,host,metric,type,type_id,stype,stype_id,ftype FROM " from " WHERE cluster=?1" where     \
    " ORDER BY host,metric,type,type_id,stype,stype_id"
    [ST_SERIES] = SERIES_SQL("ts_series", ""),
    [ST_SERIES_HOST] = SERIES_SQL("ts_series", " AND host=?2"),
    /* by metric: without INDEXED BY the planner walks the whole cluster in host order (to save a
     * sort) instead of the few rows of one metric; for-all-nodes asks this on every query */
    [ST_SERIES_METRIC] = SERIES_SQL("ts_series INDEXED BY ts_series_metric", " AND metric=?3"),
    [ST_SERIES_HOST_METRIC] = SERIES_SQL("ts_series", " AND host=?2 AND metric=?3"),
#undef SERIES_SQL
    [ST_SERIES_FIND] = "SELECT id,ftype FROM ts_series INDEXED BY ts_series_key WHERE cluster=?1 AND host=?2 AND "
                       "metric=?3 AND type=?4 AND type_id=?5 AND stype=?6 AND stype_id=?7",
    [ST_SERIES_KEY] = "SELECT cluster,host,metric,type,type_id,stype,stype_id,ftype FROM ts_series WHERE id=?1",
    [ST_SERIES_COUNT] = "SELECT count(*) FROM ts_series WHERE cluster=?1",
    [ST_HOST_ANY] = "SELECT 1 FROM ts_series INDEXED BY ts_series_key WHERE cluster=?1 AND host=?2 LIMIT 1",
    [ST_STRING_INS] = FJ_TSW_STRING_UPSERT,
};

struct fj_sq_ts {
    sqlite3_stmt *st[ST__COUNT];
    /* writer: the bookkeeping (storage/ts/writer.h; w.own: in one of our own transactions, always
     * refresh ts_state) */
    fj_ts_writer w;
    bool incremental;      /* the database has auto_vacuum=INCREMENTAL (every database created by migrations) */
    bool free_pages_left;  /* the last release left freed pages in the file */
    bool wal_grew;         /* metrics were written since the WAL was last cut back */
    int64_t last_wal_cut;  /* when (monotonic ns) */
    fj_ts_point pts[APPEND_SLICE];
    uint32_t ids[APPEND_SLICE]; /* the series of pts, as the engine resolved them; 0: dropped */
    /* The lazy catalog (fj_ts_catalog): the key handed last, and, of the envelope being written,
     * the limit that refused a new series and the points dropped by it. */
    char key[FJ_TS_KEY_MAX + 8];
    fj_limit limit;
    uint64_t dropped;
    /* Hosts (cluster NUL host) looked at by cat_find: HOST_UNSTORED, the database had no series of
     * it then, so every one it has now is one the engine made and holds; HOST_STORED, it had. */
    fj_intern hosts;
    int64_t last_pack;     /* when (monotonic ns) string points were last packed; 0: not yet */
    /* reader */
    fj_ts_codec *codec;
};

/* --- helpers ------------------------------------------------------------------------------- */

static struct fj_sq_ts *ts_of(fj_store *s)
{
    if (!s->ts)
        s->ts = fj_calloc(1, sizeof *s->ts);
    return s->ts;
}

static sqlite3_stmt *stmt(fj_store *s, int id, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    if (t->st[id])
        return t->st[id];
    int rc = sqlite3_prepare_v3(s->db, st_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &t->st[id], NULL);
    if (rc != SQLITE_OK) {
        fj_sq_fail(s, rc, "prepare", err);
        t->st[id] = NULL;
    }
    return t->st[id];
}

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* A series key's field as a value: empty, never NULL, when absent. */
static fj_wval key_str(fj_ts_str v)
{
    return (fj_wval){.type = FJ_WV_TEXT, .u.s = {v.n ? v.p : "", v.n}};
}

/* Runs statement id of the metrics writer with the values v[0 .. n) bound from parameter 1 on. */
static fj_status run_vals(fj_store *s, int id, const fj_wval *v, size_t n, const char *what, fj_err *err)
{
    sqlite3_stmt *st = stmt(s, id, err);
    if (!st)
        return FJ_EIO;
    fj_sq_bind_vals(st, 1, v, n);
    return fj_sq_done(s, st, what, err);
}

/* --- engine's sink -------------------------------------------------------------------------- */

/* The engine's sinks answer with a status; the message is dropped. */
static fj_status sink_series(void *ud, uint32_t id, const fj_ts_key *k)
{
    const fj_wval v[] = {fj_wv_int(id),    key_str(k->cluster), key_str(k->host),  key_str(k->metric),
                         key_str(k->type), key_str(k->type_id), key_str(k->stype), key_str(k->stype_id),
                         fj_wv_int(k->ftype)};
    fj_err err = {0};
    return run_vals(ud, ST_SERIES_INS, v, sizeof v / sizeof v[0], "insert series", &err);
}

static fj_status sink_chunk(void *ud, const fj_ts_chunk *c)
{
    const fj_wval v[] = {fj_wv_int(c->series_id), fj_wv_int(c->t_last), fj_wv_int((int64_t)c->seq),
                         fj_wv_int(c->t_first),   fj_wv_int(c->count),
                         {.type = FJ_WV_BLOB, .u.s = {c->blob, c->len}}};
    fj_err err = {0};
    return run_vals(ud, ST_CHUNK_INS, v, sizeof v / sizeof v[0], "insert chunk", &err);
}

/* A checkpoint superseded (storage/ts/engine.h, fj_ts_engine_checkpoint). */
static fj_status sink_drop(void *ud, uint32_t series_id, int64_t t_last, uint64_t seq)
{
    const fj_wval v[] = {fj_wv_int(series_id), fj_wv_int(t_last), fj_wv_int((int64_t)seq)};
    fj_err err = {0};
    return run_vals(ud, ST_CHUNK_DEL, v, sizeof v / sizeof v[0], "delete checkpoint", &err);
}

static fj_status put_state(fj_store *s, const char *key, int64_t v, fj_err *err)
{
    const fj_wval kv[] = {fj_wv_text(key), fj_wv_int(v)};
    return run_vals(s, ST_STATE_PUT, kv, sizeof kv / sizeof kv[0], "ts_state", err);
}

fj_status fj_sq_ts_precommit(fj_store *s, fj_err *err)
{
    fj_ts_writer *w = s->ts ? &s->ts->w : NULL;
    if (!w || !w->eng || (!w->dirty && !w->own))
        return FJ_OK; /* a group without metrics: nothing of ours changed */
    s->ts->wal_grew = true;
    fj_ts_sink sink = {sink_series, sink_chunk, s, sink_drop};
    fj_status st = w->dirty ? fj_ts_engine_emit(w->eng, &sink) : FJ_OK;
    if (st != FJ_OK)
        return fj_err_set(err, st, "db", "storing sealed chunks failed: %s", sqlite3_errmsg(s->db));
    if (w->own && (st = fj_tsw_checkpoint(w, &sink, fj_mono_ns(), err)) != FJ_OK)
        return st;
    /* Conservative: chunks handed in this transaction still count until committed. */
    uint64_t d = fj_tsw_durable_of(w, fj_ts_engine_durable_lsn(w->eng));
    if (d != w->durable_saved && (st = put_state(s, "durable_lsn", (int64_t)d, err)) != FJ_OK)
        return st;
    if (w->next_lsn != w->next_saved && (st = put_state(s, "next_lsn", (int64_t)w->next_lsn, err)) != FJ_OK)
        return st;
    w->durable_saved = d;
    w->next_saved = w->next_lsn;
    return FJ_OK;
}

void fj_sq_ts_end(fj_store *s, bool committed)
{
    struct fj_sq_ts *t = s->ts;
    if (!t || !t->w.eng)
        return;
    fj_tsw_end(&t->w, committed);
    if (!committed)
        for (int i = 0; i < ST__COUNT; i++)
            if (t->st[i])
                sqlite3_reset(t->st[i]);
}

/* --- the write path ------------------------------------------------------------------------- */

/* A point the engine dropped: a type conflict when its series is held with another type, else
 * a quota's refusal. */
static void dropped_point(struct fj_sq_ts *t, const fj_ts_key *k, const fj_metric_point *q, fj_write_count *cnt)
{
    int stored = fj_ts_series_ftype(t->w.eng, k);
    if (stored >= 0 && !fj_ts_ftype_fits((uint8_t)stored, k->ftype))
        fj_tsw_note_conflict(cnt, q, stored);
    else
        t->dropped++;
}

/* Appends the points to the engine; with record, also adds them, as the engine resolved them, to
 * the point record begun by the caller. String points are not the engine's (write_strings). */
static fj_status append_points(struct fj_sq_ts *t, const fj_metric_point *p, size_t n, bool record,
                               fj_write_count *cnt, fj_err *err)
{
    uint32_t got[APPEND_SLICE];
    uint16_t at[APPEND_SLICE];
    for (size_t off = 0; off < n; off += APPEND_SLICE) {
        size_t k = n - off < APPEND_SLICE ? n - off : APPEND_SLICE, np = 0;
        for (size_t i = 0; i < k; i++) {
            const fj_metric_point *q = &p[off + i];
            if (q->ftype == FJ_FT_STRING)
                continue;
            at[np] = (uint16_t)i;
            t->pts[np++] = (fj_ts_point){.key = fj_tsw_key_of(q), .t = q->t, .v = q->v};
        }
        /* without strings (the common case) the engine's ids are the slice's */
        uint32_t *ids = np == k ? t->ids : got;
        fj_status st = np ? fj_ts_append(t->w.eng, t->pts, np, ids, NULL, err) : FJ_OK;
        if (st != FJ_OK)
            return st;
        if (np != k) {
            memset(t->ids, 0, k * sizeof *t->ids);
            for (size_t j = 0; j < np; j++)
                t->ids[at[j]] = got[j];
        }
        for (size_t j = 0; j < np; j++)
            if (!ids[j])
                dropped_point(t, &t->pts[j].key, &p[off + at[j]], cnt);
        if (record && (st = fj_tsw_record_add(&t->w, t->ids, p + off, k, err)) != FJ_OK)
            return st;
    }
    return FJ_OK;
}

/* The string points of m as rows (ts_strings), committed with the group: they need no request
 * log. Their series are the engine's, as every series (one id, one type). */
static fj_status write_strings(fj_store *s, const fj_metrics *m, fj_write_count *cnt, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    for (size_t i = 0; m->n_strings && i < m->n_points; i++) { /* no pass over a body without strings */
        const fj_metric_point *q = &m->points[i];
        if (q->ftype != FJ_FT_STRING)
            continue;
        fj_ts_key k = fj_tsw_key_of(q);
        uint32_t id = 0;
        fj_status st = fj_ts_series_get(t->w.eng, &k, true, &id);
        if (st == FJ_ELIMITED) {
            t->dropped++;
            continue;
        }
        if (st == FJ_ECONFLICT) {
            fj_tsw_note_conflict(cnt, q, fj_ts_series_ftype(t->w.eng, &k));
            continue;
        }
        if (st != FJ_OK)
            return fj_err_set(err, st, "db", "line %u: the series of field '%.*s' could not be made", q->line,
                              (int)(q->metric.n > 64 ? 64 : q->metric.n), q->metric.p);
        fj_mstr sv = fj_metric_string(m, q);
        const fj_wval v[] = {fj_wv_int(id), fj_wv_int(q->t), {.type = FJ_WV_BLOB, .u.s = {sv.n ? sv.p : "", sv.n}}};
        if ((st = run_vals(s, ST_STRING_INS, v, sizeof v / sizeof v[0], "insert string point", err)) != FJ_OK)
            return st;
    }
    return FJ_OK;
}

/* request-log-keep set: the raw body is logged, an archive that can be decoded again. */
static fj_status log_body(fj_store *s, const fj_metrics *m, fj_err *err)
{
    fj_ts_writer *w = &s->ts->w;
    const void *z;
    size_t zn;
    fj_status fs = fj_tsw_compress(w, m, &z, &zn, err);
    if (fs != FJ_OK)
        return fs;
    sqlite3_stmt *st = stmt(s, ST_LOG_INS, err);
    if (!st)
        return FJ_EIO;
    uint64_t lsn = w->next_lsn++;
    sqlite3_bind_int64(st, 1, (int64_t)lsn);
    sqlite3_bind_int64(st, 2, m->arrival_ns);
    if (m->default_cluster)
        sqlite3_bind_text(st, 3, m->default_cluster, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, m->unit_ns);
    sqlite3_bind_int64(st, 5, m->max_future_ns);
    sqlite3_bind_int64(st, 6, (int64_t)m->raw_len);
    sqlite3_bind_blob(st, 7, z, (int)zn, SQLITE_STATIC);
    fs = fj_sq_done(s, st, "request log", err);
    if (fs == FJ_OK)
        fj_ts_engine_set_lsn(w->eng, lsn);
    return fs;
}

/* The default: the points are appended and logged as one point record (storage/ts/request_log.h: ~5 bytes a
 * point, nothing to compress). size holds the number of points. */
static fj_status append_and_log_points(fj_store *s, const fj_metrics *m, fj_write_count *cnt, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    fj_status fs = fj_tsw_record_begin(&t->w, err);
    if (fs != FJ_OK)
        return fs;
    uint64_t lsn = t->w.next_lsn++;
    fj_ts_engine_set_lsn(t->w.eng, lsn);
    fs = append_points(t, m->points, m->n_points, true, cnt, err);
    const void *rec = NULL;
    size_t len = 0;
    if (fs == FJ_OK)
        fs = fj_tsw_record_finish(&t->w, &rec, &len, err);
    sqlite3_stmt *st = fs == FJ_OK ? stmt(s, ST_LOG_INS, err) : NULL;
    if (!st)
        return fs == FJ_OK ? FJ_EIO : fs;
    sqlite3_bind_int64(st, 1, (int64_t)lsn);
    sqlite3_bind_int64(st, 2, m->arrival_ns);
    sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, FJ_TSW_POINT_RECORD);
    sqlite3_bind_int64(st, 5, 0);
    sqlite3_bind_int64(st, 6, (int64_t)fj_ts_log_count(t->w.rec));
    sqlite3_bind_blob(st, 7, rec, (int)len, SQLITE_STATIC);
    return fj_sq_done(s, st, "request log", err);
}

static fj_status write_message(fj_store *s, const fj_cc_message *msg, fj_write_count *cnt, fj_err *err)
{
    static const char *const kinds[] = {"event", "log", "control"};
    int64_t cid;
    fj_status fs = fj_sq_cluster_id(s, msg->cluster, &cid, err);
    if (fs != FJ_OK)
        return fs;
    sqlite3_stmt *st = stmt(s, ST_MSG_INS, err);
    if (!st)
        return FJ_EIO;
    uint64_t h = fj_cc_message_hash(msg);
    sqlite3_bind_int64(st, 1, cid);
    sqlite3_bind_int64(st, 2, msg->time);
    sqlite3_bind_text(st, 3, kinds[msg->kind], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, msg->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, msg->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)h);
    sqlite3_bind_text(st, 7, msg->tags, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, msg->payload, (int)msg->payload_len, SQLITE_STATIC);
    if ((fs = fj_sq_done(s, st, "insert message", err)) != FJ_OK)
        return fs;
    if (sqlite3_changes(s->db) > 0)
        cnt->inserted++;
    else
        cnt->duplicates++;
    return FJ_OK;
}

/* cc-backend's rules (fj_cc_job_apply) on this database. */
typedef struct job_ctx {
    fj_store *s;
    int64_t cid; /* the cluster's id */
} job_ctx;

/* Statement id with the job's key bound (?1 cluster, ?2 job id, ?3 start time); NULL with err set. */
static sqlite3_stmt *job_stmt(job_ctx *x, int id, const fj_cc_job *j, fj_err *err)
{
    sqlite3_stmt *st = stmt(x->s, id, err);
    if (st) {
        sqlite3_bind_int64(st, 1, x->cid);
        sqlite3_bind_int64(st, 2, (int64_t)j->job_id);
        sqlite3_bind_int64(st, 3, j->start_time);
    }
    return st;
}

static fj_status job_find_recent(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    job_ctx *x = ud;
    sqlite3_stmt *dup = job_stmt(x, ST_JOB_DUP, j, err);
    if (!dup)
        return FJ_EIO;
    int rc = sqlite3_step(dup);
    *id = rc == SQLITE_ROW ? sqlite3_column_int64(dup, 0) : 0;
    sqlite3_reset(dup);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(x->s, rc, "find job", err);
}

static fj_status job_insert(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    job_ctx *x = ud;
    sqlite3_stmt *ins = job_stmt(x, ST_JOB_INS, j, err);
    if (!ins)
        return FJ_EIO;
    const fj_wval v[] = {fj_wv_text("running"), fj_wv_text(j->user), fj_wv_text(j->project),
                         fj_wv_text(j->partition), fj_wv_text(j->subcluster), fj_wv_int((int64_t)j->num_nodes),
                         fj_wv_int((int64_t)j->num_hwthreads), fj_wv_int((int64_t)j->num_acc),
                         fj_wv_text(j->hosts), fj_wv_text(j->payload)};
    fj_sq_bind_vals(ins, 4, v, sizeof v / sizeof v[0]);
    fj_status fs = fj_sq_done(x->s, ins, "insert job", err);
    if (fs == FJ_OK)
        *id = sqlite3_last_insert_rowid(x->s->db);
    return fs;
}

static fj_status job_find(void *ud, const fj_cc_job *j, int64_t *id, int64_t *start, char state[32], fj_err *err)
{
    job_ctx *x = ud;
    sqlite3_stmt *find = job_stmt(x, ST_JOB_FIND, j, err);
    if (!find)
        return FJ_EIO;
    int rc = sqlite3_step(find);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(find, 0);
        *start = sqlite3_column_int64(find, 1);
        snprintf(state, 32, "%s", (const char *)sqlite3_column_text(find, 2));
    }
    sqlite3_reset(find);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(x->s, rc, "find job", err);
}

static fj_status job_stop(void *ud, const fj_cc_job *j, int64_t id, bool *stopped, fj_err *err)
{
    job_ctx *x = ud;
    sqlite3_stmt *upd = stmt(x->s, ST_JOB_STOP, err);
    if (!upd)
        return FJ_EIO;
    sqlite3_bind_int64(upd, 1, id);
    sqlite3_bind_int64(upd, 2, j->stop_time);
    sqlite3_bind_text(upd, 3, j->state, -1, SQLITE_STATIC);
    fj_status fs = fj_sq_done(x->s, upd, "stop job", err);
    *stopped = fs == FJ_OK; /* the single writer: still running since the lookup */
    return fs;
}

static fj_status write_job(fj_store *s, const fj_cc_job *j, fj_write_count *cnt, fj_err *err)
{
    static const fj_cc_job_ops ops = {job_find_recent, job_insert, job_find, job_stop};
    job_ctx x = {.s = s};
    fj_status fs = fj_sq_cluster_id(s, j->cluster, &x.cid, err);
    if (fs != FJ_OK)
        return fs;
    bool added;
    if ((fs = fj_cc_job_apply(j, &ops, &x, &added, err)) != FJ_OK)
        return fs;
    if (added)
        cnt->inserted++;
    else
        cnt->duplicates++;
    return FJ_OK;
}

fj_status fj_sq_write_metrics(fj_store *s, const fj_envelope *e, fj_write_count *cnt, fj_err *err)
{
    fj_status st = fj_sq_ts_start(s, NULL, err);
    if (st != FJ_OK)
        return st;
    struct fj_sq_ts *t = s->ts;
    const fj_metrics *m = &e->u.metrics;
    t->w.dirty = true;
    t->limit = FJ_LIMIT_NONE;
    t->dropped = 0;
    if (m->n_points) {
        if (t->w.keep_ns && m->raw) {
            if ((st = log_body(s, m, err)) != FJ_OK ||
                (st = append_points(t, m->points, m->n_points, false, cnt, err)) != FJ_OK)
                return st;
        } else if ((st = append_and_log_points(s, m, cnt, err)) != FJ_OK) {
            return st;
        }
        if ((st = write_strings(s, m, cnt, err)) != FJ_OK)
            return st;
        cnt->inserted += m->n_points - t->dropped - cnt->conflicts;
        cnt->dropped = t->dropped;
        cnt->limit = t->dropped ? t->limit : FJ_LIMIT_NONE;
    }
    for (size_t i = 0; i < m->n_messages; i++)
        if ((st = write_message(s, &m->messages[i], cnt, err)) != FJ_OK)
            return st;
    for (size_t i = 0; i < m->n_jobs; i++)
        if ((st = write_job(s, &m->jobs[i], cnt, err)) != FJ_OK)
            return st;
    return FJ_OK;
}

/* --- startup: catalog, sequence, replay ------------------------------------------------------ */

/* The lazy catalog (storage/ts/engine.h, fj_ts_catalog): start-up reads no series; the engine
 * asks here on a series' first use. */

enum { HOST_UNSTORED = 1, HOST_STORED = 2 };
#define HOSTS_MAX (1u << 20) /* hosts remembered (some 100 MB at most); then the memory starts over */

/* Whether the host of k may have the series stored: false when the database had no series of
 * the host when first asked. That stays true without asking again, since this writer alone adds
 * series (SQLite has one writer), never deletes one, and the engine holds every series it made:
 * a series of such a host that the engine lacks is new. So the new series of a new node (its
 * first interval: hundreds) cost one probe of the index together, not one each. */
static fj_status host_may_have(fj_store *s, const fj_ts_key *k, bool *may, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    char hk[FJ_TS_KEY_MAX + 1];
    size_t n = k->cluster.n + 1 + k->host.n;
    *may = true;
    if (n > sizeof hk)
        return FJ_OK;
    if (k->cluster.n)
        memcpy(hk, k->cluster.p, k->cluster.n);
    hk[k->cluster.n] = '\0';
    if (k->host.n)
        memcpy(hk + k->cluster.n + 1, k->host.p, k->host.n);
    int64_t v = fj_intern_get(&t->hosts, 0, hk, n);
    if (v) {
        *may = v == HOST_STORED;
        return FJ_OK;
    }
    sqlite3_stmt *st = stmt(s, ST_HOST_ANY, err);
    if (!st)
        return FJ_EIO;
    const fj_wval vals[] = {key_str(k->cluster), key_str(k->host)};
    fj_sq_bind_vals(st, 1, vals, 2);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_status(rc);
    *may = rc == SQLITE_ROW;
    if (t->hosts.n >= HOSTS_MAX)
        fj_intern_clear(&t->hosts);
    if (fj_intern_put(&t->hosts, 0, hk, n, *may ? HOST_STORED : HOST_UNSTORED) != FJ_OK)
        return FJ_ENOMEM;
    return FJ_OK;
}

static fj_status cat_find(void *ud, const fj_ts_key *k, uint32_t *id, uint8_t *ftype)
{
    fj_store *s = ud;
    fj_err err = {0};
    bool may;
    fj_status hs = host_may_have(s, k, &may, &err);
    if (hs != FJ_OK)
        return hs;
    if (!may)
        return FJ_ENOTFOUND;
    sqlite3_stmt *st = stmt(s, ST_SERIES_FIND, &err);
    if (!st)
        return FJ_EIO;
    const fj_wval v[] = {key_str(k->cluster), key_str(k->host),  key_str(k->metric),  key_str(k->type),
                         key_str(k->type_id), key_str(k->stype), key_str(k->stype_id)};
    fj_sq_bind_vals(st, 1, v, sizeof v / sizeof v[0]);
    int rc = sqlite3_step(st);
    int64_t got = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc == SQLITE_ROW)
        *ftype = (uint8_t)sqlite3_column_int(st, 1);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_status(rc);
    if (rc == SQLITE_DONE)
        return FJ_ENOTFOUND;
    *id = got > 0 && got < UINT32_MAX ? (uint32_t)got : 0;
    return FJ_OK;
}

/* The key of id, copied (the statement is reset before the engine reads it). */
static fj_status cat_key(void *ud, uint32_t id, fj_ts_key *out)
{
    fj_store *s = ud;
    struct fj_sq_ts *t = s->ts;
    fj_err err = {0};
    sqlite3_stmt *st = stmt(s, ST_SERIES_KEY, &err);
    if (!st)
        return FJ_EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    fj_status fs = rc == SQLITE_ROW ? FJ_OK : rc == SQLITE_DONE ? FJ_ENOTFOUND : fj_sq_status(rc);
    fj_ts_str *f[7] = {&out->cluster, &out->host, &out->metric, &out->type, &out->type_id, &out->stype,
                       &out->stype_id};
    size_t used = 0;
    for (int i = 0; fs == FJ_OK && i < 7; i++) {
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        const unsigned char *p = sqlite3_column_text(st, i);
        if (used + n > sizeof t->key) {
            fs = FJ_ENOTFOUND; /* longer than any key the engine writes */
            break;
        }
        if (n)
            memcpy(t->key + used, p, n);
        *f[i] = (fj_ts_str){t->key + used, n};
        used += n;
    }
    if (fs == FJ_OK)
        out->ftype = (uint8_t)sqlite3_column_int(st, 7);
    sqlite3_reset(st);
    return fs;
}

/* How many series the cluster has, once per cluster for its max-series-per-cluster. */
static fj_status count_series(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)kind;
    fj_store *s = ud;
    fj_err err = {0};
    sqlite3_stmt *st = stmt(s, ST_SERIES_COUNT, &err);
    if (!st)
        return FJ_EIO;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? FJ_OK : fj_sq_status(rc);
}

/* Whether a series that exists nowhere may be created: the cluster's quota. A refusal is
 * remembered for the envelope's answer. */
static bool cat_admit(void *ud, const fj_ts_key *k)
{
    fj_store *s = ud;
    struct fj_sq_ts *t = s->ts;
    if (!t->w.started) /* replay: what was logged was admitted (docs/security.md, "Quotas") */
        return true;
    char cluster[FJ_TS_KEY_MAX + 1];
    memcpy(cluster, k->cluster.n ? k->cluster.p : "", k->cluster.n);
    cluster[k->cluster.n] = '\0';
    fj_status st = FJ_OK;
    fj_limit l = fj_quota_admit(s->quota, FJ_QUOTA_SERIES, cluster, fj_mono_ns(), count_series, s, &st);
    if (l != FJ_LIMIT_NONE)
        t->limit = l;
    return l == FJ_LIMIT_NONE;
}

static fj_status load_catalog(void *ud, fj_err *err)
{
    fj_store *s = ud;
    int64_t max_id = 0;
    fj_status st = fj_sq_query_i64(s, "SELECT coalesce(max(id),0) FROM ts_series", &max_id, err);
    if (st != FJ_OK)
        return st;
    if (max_id < 0 || max_id >= UINT32_MAX)
        return fj_err_set(err, FJ_EIO, "db", "ts_series ids run past 2^32");
    fj_ts_catalog cat = {cat_find, cat_key, fj_quota_limited(s->quota, FJ_QUOTA_SERIES) ? cat_admit : NULL, s};
    fj_ts_engine_set_catalog(s->ts->w.eng, &cat, (uint32_t)max_id + 1);
    return FJ_OK;
}

/* A logged request's decoded points: the engine finds (or creates) their series. */
static fj_status replay_append(void *ud, const fj_metrics *m, fj_err *err)
{
    /* string points were committed as rows with their log row: nothing to replay */
    return append_points(ud, m->points, m->n_points, false, NULL, err);
}

static fj_status replay(void *ud, uint64_t from_lsn, size_t *n_req, size_t *n_pts, fj_err *err)
{
    fj_store *s = ud;
    struct fj_sq_ts *t = s->ts;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT lsn,received,cluster,unit_ns,max_future_ns,size,body FROM request_log "
                                "WHERE lsn>=?1 ORDER BY lsn",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "replay", err);
    sqlite3_bind_int64(st, 1, (int64_t)from_lsn);
    fj_status fs = FJ_OK;
    fj_tsw_replay r = {0};
    while (fs == FJ_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        fj_tsw_logrow row = {.lsn = (uint64_t)sqlite3_column_int64(st, 0),
                             .received = sqlite3_column_int64(st, 1),
                             .cluster = (const char *)sqlite3_column_text(st, 2),
                             .unit_ns = sqlite3_column_int64(st, 3),
                             .max_future_ns = sqlite3_column_int64(st, 4),
                             .size = (size_t)sqlite3_column_int64(st, 5),
                             .body = sqlite3_column_blob(st, 6),
                             .body_len = (size_t)sqlite3_column_bytes(st, 6)};
        bool skipped = false;
        fs = fj_tsw_replay_row(&t->w, &r, &row, "", replay_append, t, &skipped, err);
        if (fs == FJ_OK && !skipped)
            (*n_req)++;
    }
    if (fs == FJ_OK && rc != SQLITE_DONE)
        fs = fj_sq_fail(s, rc, "replay", err);
    sqlite3_finalize(st);
    *n_pts += r.n_pts;
    fj_tsw_replay_done(&r);
    return fs;
}

/* One transaction of the writer's own: emit what is sealed, optionally more work in between. */
static fj_status own_txn(fj_store *s, fj_status (*more)(fj_store *s, fj_err *err), fj_err *err)
{
    fj_status st = fj_sq_exec(s, "BEGIN IMMEDIATE", err);
    if (st != FJ_OK)
        return st;
    s->ts->w.own = true;
    st = fj_sq_ts_precommit(s, err);
    s->ts->w.own = false;
    if (st == FJ_OK && more)
        st = more(s, err);
    if (st == FJ_OK)
        st = fj_sq_exec(s, "COMMIT", err);
    if (st != FJ_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    fj_sq_ts_end(s, st == FJ_OK);
    return st;
}

static fj_status first_commit(void *ud, fj_err *err)
{
    return own_txn(ud, NULL, err);
}

fj_status fj_sq_ts_start(fj_store *s, const fj_store_opts *o, fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "metrics need a writable handle");
    struct fj_sq_ts *t = ts_of(s);
    if (!t)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    if (t->w.started)
        return FJ_OK;
    int64_t max_seq = 0, durable = 0, next = 0, max_lsn = 0, auto_vacuum = 0;
    fj_status st;
    if ((st = fj_sq_query_i64(s, "SELECT coalesce(max(seq),0) FROM ts_chunk", &max_seq, err)) != FJ_OK ||
        (st = fj_sq_query_i64(s, "SELECT coalesce((SELECT value FROM ts_state WHERE key='durable_lsn'),0)", &durable,
                        err)) != FJ_OK ||
        (st = fj_sq_query_i64(s, "SELECT coalesce((SELECT value FROM ts_state WHERE key='next_lsn'),0)", &next, err)) !=
            FJ_OK ||
        (st = fj_sq_query_i64(s, "SELECT coalesce(max(lsn),0) FROM request_log", &max_lsn, err)) != FJ_OK ||
        (st = fj_sq_query_i64(s, "PRAGMA auto_vacuum", &auto_vacuum, err)) != FJ_OK)
        return st;
    t->incremental = auto_vacuum == 2;
    if ((st = fj_tsw_open(&t->w, o, (uint64_t)max_seq + 1, durable, next, max_lsn, fj_mono_ns(), err)) != FJ_OK)
        return st;
    static const fj_tsw_start_ops ops = {load_catalog, replay, first_commit};
    return fj_tsw_start(&t->w, &ops, s, (uint64_t)durable, "", err);
}

fj_ts_engine *fj_sq_ts_engine(fj_store *s)
{
    return s->ts && s->ts->w.started ? s->ts->w.eng : NULL;
}

/* --- maintenance ----------------------------------------------------------------------------- */

/* The request log is deleted about as fast as it is written, and SQLite keeps freed pages in the
 * file for reuse: without this the file stays at the log's high-water mark (several times the
 * size of the chunks). With auto_vacuum=INCREMENTAL, moves up to max_pages freed pages (0: all)
 * to the end of the file and truncates it. */
static fj_status release_free_pages(fj_store *s, int64_t max_pages, fj_err *err)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%lld)", (long long)max_pages);
    int64_t left = 0;
    fj_status st = fj_sq_exec(s, sql, err);
    if (st == FJ_OK)
        st = fj_sq_query_i64(s, "PRAGMA freelist_count", &left, err);
    s->ts->free_pages_left = left > 0;
    return st;
}

/* One DELETE with one or two int64 parameters (n). */
static fj_status delete_before(fj_store *s, const char *sql, int n, int64_t a, int64_t b, const char *what,
                               fj_err *err)
{
    sqlite3_stmt *del = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &del, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(del, 1, a);
        if (n > 1)
            sqlite3_bind_int64(del, 2, b);
        rc = sqlite3_step(del);
    }
    sqlite3_finalize(del);
    return rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(s, rc, what, err);
}

static fj_status retention(void *ud, int64_t before_ns, fj_err *err)
{
    fj_status st = delete_before(ud, "DELETE FROM ts_chunk WHERE t_last<?1", 1, before_ns, 0, "retention", err);
    if (st == FJ_OK)
        st = delete_before(ud, "DELETE FROM ts_string_chunk WHERE t_last<?1", 1, before_ns, 0, "retention", err);
    return st == FJ_OK ? delete_before(ud, "DELETE FROM ts_strings WHERE t<?1", 1, before_ns, 0, "retention", err) : st;
}

static fj_status trim(void *ud, uint64_t below_lsn, int64_t received_before, fj_err *err)
{
    return delete_before(ud, "DELETE FROM request_log WHERE lsn<?1 AND received<?2", 2, (int64_t)below_lsn,
                         received_before, "trim request log", err);
}

static fj_status retention_and_trim(fj_store *s, fj_err *err)
{
    static const fj_tsw_cleanup_ops ops = {retention, trim};
    struct fj_sq_ts *t = s->ts;
    fj_status st = fj_tsw_cleanup(&t->w, &ops, s, wall_ns(), fj_mono_ns(), err);
    if (st == FJ_OK && t->incremental)
        st = release_free_pages(s, RELEASE_PAGES_PER_PASS, err);
    return st;
}

static fj_status release_all_free_pages(fj_store *s, fj_err *err)
{
    return s->ts->incremental ? release_free_pages(s, 0, err) : FJ_OK;
}

/* Once writes pause, the WAL file is cut back to nothing: the backend's checkpoints keep it at
 * its high-water mark (up to journal_size_limit), which after a backlog outweighs what the
 * request log's trim and the checkpoints of the open buffers gave back. Only when no reader holds
 * an old snapshot (no waiting: the busy timeout is 0 for this call), at most every
 * FJ_TSW_CKPT_EVERY; a failure is no error (the next pause tries again). */
static void cut_wal(fj_store *s, int64_t now)
{
    struct fj_sq_ts *t = s->ts;
    if (!t->wal_grew || now - t->last_wal_cut < FJ_TSW_CKPT_EVERY || now - t->w.writes_seen_at < FJ_TSW_CKPT_IDLE)
        return;
    t->last_wal_cut = now;
    int64_t busy_ms = 0;
    fj_err ignored = {0};
    if (fj_sq_query_i64(s, "PRAGMA busy_timeout", &busy_ms, &ignored) != FJ_OK)
        return;
    sqlite3_busy_timeout(s->db, 0);
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(s->db, (int)busy_ms);
    if (rc == SQLITE_OK)
        t->wal_grew = false;
}

/* --- packing string points (docs/metrics.md, "Field types"; storage/ts/strchunk.h) ------------- */

#define PACK_EVERY (600 * FJ_TSW_NS) /* a pass at most this often (and once soon after the start) */
#define PACK_SERIES 256              /* series packed per pass */

static fj_status pack_fail(fj_store *s, sqlite3_stmt *a, sqlite3_stmt *b, int rc, fj_err *err)
{
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    return fj_sq_fail(s, rc, "pack string points", err);
}

/* One series: its rows older than cutoff merged over the chunks they overlap into one chunk. */
static fj_status pack_series(fj_store *s, int64_t id, int64_t cutoff, fj_ts_strs *rows, fj_ts_strs *old,
                             fj_ts_strs *tmp, fj_buf *blob, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    sqlite3_stmt *a = NULL, *b = NULL;
    rows->n = rows->data_len = old->n = old->data_len = 0;
    int rc = sqlite3_prepare_v2(s->db, "SELECT t, v FROM ts_strings WHERE series_id=?1 AND t<?2 ORDER BY t", -1, &a, NULL);
    if (rc != SQLITE_OK)
        return pack_fail(s, a, b, rc, err);
    sqlite3_bind_int64(a, 1, id);
    sqlite3_bind_int64(a, 2, cutoff);
    while ((rc = sqlite3_step(a)) == SQLITE_ROW)
        if (fj_ts_strs_add(rows, sqlite3_column_int64(a, 0), sqlite3_column_blob(a, 1),
                           (size_t)sqlite3_column_bytes(a, 1)) != FJ_OK)
            return sqlite3_finalize(a), fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    sqlite3_finalize(a);
    a = NULL;
    if (rc != SQLITE_DONE)
        return pack_fail(s, a, b, rc, err);
    if (rows->n < 2)
        return FJ_OK;
    int64_t lo = rows->t[0], hi = rows->t[rows->n - 1];
    rc = sqlite3_prepare_v2(s->db, "SELECT blob FROM ts_string_chunk WHERE series_id=?1 AND t_last>=?2 AND "
                                   "t_first<=?3 ORDER BY t_first", -1, &a, NULL);
    if (rc != SQLITE_OK)
        return pack_fail(s, a, b, rc, err);
    sqlite3_bind_int64(a, 1, id);
    sqlite3_bind_int64(a, 2, lo);
    sqlite3_bind_int64(a, 3, hi);
    fj_status st = FJ_OK;
    while (st == FJ_OK && (rc = sqlite3_step(a)) == SQLITE_ROW) {
        st = fj_ts_strchunk_decode(t->codec, sqlite3_column_blob(a, 0), (size_t)sqlite3_column_bytes(a, 0), tmp);
        for (size_t i = 0; st == FJ_OK && i < tmp->n; i++)
            st = fj_ts_strs_add(old, tmp->t[i], tmp->data + tmp->off[i], tmp->len[i]);
    }
    sqlite3_finalize(a);
    a = NULL;
    if (st != FJ_OK)
        return fj_err_set(err, st, "db", "packing the strings of series %lld: %s", (long long)id,
                          st == FJ_ENOMEM ? "out of memory" : "a stored chunk is corrupt");
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return pack_fail(s, a, b, rc, err);
    int64_t first, last;
    size_t n;
    blob->len = 0;
    if ((st = fj_ts_strchunk_merge(t->codec, old, rows, blob, &first, &last, &n)) != FJ_OK)
        return st == FJ_EINVAL ? FJ_OK : fj_err_set(err, st, "db", "out of memory"); /* too many: left as rows */
    const char *sql[] = {"DELETE FROM ts_string_chunk WHERE series_id=?1 AND t_last>=?2 AND t_first<=?3",
                         "DELETE FROM ts_strings WHERE series_id=?1 AND t<?4",
                         "INSERT INTO ts_string_chunk(series_id,t_last,t_first,count,blob) VALUES(?1,?5,?6,?7,?8)"};
    for (int k = 0; k < 3; k++) {
        if ((rc = sqlite3_prepare_v2(s->db, sql[k], -1, &b, NULL)) != SQLITE_OK)
            return pack_fail(s, a, b, rc, err);
        sqlite3_bind_int64(b, 1, id);
        sqlite3_bind_int64(b, 2, lo);
        sqlite3_bind_int64(b, 3, hi);
        sqlite3_bind_int64(b, 4, cutoff);
        sqlite3_bind_int64(b, 5, last);
        sqlite3_bind_int64(b, 6, first);
        sqlite3_bind_int64(b, 7, (int64_t)n);
        sqlite3_bind_blob(b, 8, blob->data, (int)blob->len, SQLITE_STATIC);
        rc = sqlite3_step(b);
        sqlite3_finalize(b);
        b = NULL;
        if (rc != SQLITE_DONE)
            return pack_fail(s, a, b, rc, err);
    }
    return FJ_OK;
}

/* The string points older than the flush interval, packed series by series (in the writer's own
 * transaction): a row each costs its text and some 27 bytes, a chunk about what zstd makes of
 * the texts. */
static fj_status pack_strings(fj_store *s, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    int64_t cutoff = wall_ns() - (t->w.flush_ns > 0 ? t->w.flush_ns : 12 * 3600 * FJ_TSW_NS);
    if (!t->codec && !(t->codec = fj_ts_codec_create()))
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    sqlite3_stmt *c = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT series_id FROM ts_strings WHERE t<?1 GROUP BY series_id "
                                       "HAVING count(*) >= 2 LIMIT 256", -1, &c, NULL); /* PACK_SERIES */
    if (rc != SQLITE_OK)
        return pack_fail(s, c, NULL, rc, err);
    sqlite3_bind_int64(c, 1, cutoff);
    int64_t ids[PACK_SERIES];
    size_t n = 0;
    while (n < PACK_SERIES && (rc = sqlite3_step(c)) == SQLITE_ROW)
        ids[n++] = sqlite3_column_int64(c, 0);
    sqlite3_finalize(c);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fj_sq_fail(s, rc, "pack string points", err);
    fj_ts_strs rows = {0}, old = {0}, tmp = {0};
    fj_buf blob;
    fj_buf_init(&blob, (size_t)1 << 30);
    fj_status st = FJ_OK;
    for (size_t i = 0; i < n && st == FJ_OK; i++)
        st = pack_series(s, ids[i], cutoff, &rows, &old, &tmp, &blob, err);
    fj_ts_strs_free(&rows);
    fj_ts_strs_free(&old);
    fj_ts_strs_free(&tmp);
    fj_buf_free(&blob);
    return st;
}

fj_status fj_sq_ts_maintain(fj_store *s, fj_err *err)
{
    struct fj_sq_ts *t = s->ts;
    if (!t)
        return FJ_OK;
    int64_t now = fj_mono_ns();
    fj_status st = fj_tsw_maintain(&t->w, now, t->free_pages_left) ? own_txn(s, retention_and_trim, err) : FJ_OK;
    if (st == FJ_OK && t->w.started && (!t->last_pack || now - t->last_pack >= PACK_EVERY)) {
        t->last_pack = now;
        st = own_txn(s, pack_strings, err);
    }
    if (st == FJ_OK && t->w.started && !t->free_pages_left)
        cut_wal(s, now);
    return st;
}

/* The writer's last transactions at close (fj_tsw_close): the free pages too. */
static fj_status last_txns(void *ud, fj_err *err)
{
    FJ_TRY(own_txn(ud, NULL, err));
    FJ_TRY(own_txn(ud, retention_and_trim, err));
    return own_txn(ud, release_all_free_pages, err);
}

void fj_sq_ts_close(fj_store *s)
{
    struct fj_sq_ts *t = s->ts;
    if (!t)
        return;
    fj_tsw_close(&t->w, last_txns, s);
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(t->st[i]);
    fj_ts_codec_destroy(t->codec);
    fj_intern_clear(&t->hosts);
    fj_free(t);
    s->ts = NULL;
}

/* --- reads ------------------------------------------------------------------------------------ */

typedef struct series_row {
    uint32_t id;
    uint8_t ftype;
    size_t off[7], len[7];
} series_row;

fj_status fj_sq_ts_series(fj_store *s, const fj_ts_sel *sel,
                          fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err)
{
    if (!sel || !sel->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    bool host = sel->host && *sel->host, metric = sel->metric && *sel->metric;
    if (!ts_of(s))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    sqlite3_stmt *st = stmt(s, ST_SERIES + host + 2 * metric, err);
    if (!st)
        return FJ_EIO;
    int rc;
    sqlite3_bind_text(st, 1, sel->cluster, -1, SQLITE_STATIC);
    if (host)
        sqlite3_bind_text(st, 2, sel->host, -1, SQLITE_STATIC);
    if (metric)
        sqlite3_bind_text(st, 3, sel->metric, -1, SQLITE_STATIC);
    /* Rows are collected first: the callback may read chunks, which must not share this
     * statement's snapshot. */
    fj_buf strs, rows;
    fj_buf_init(&strs, (size_t)1 << 30);
    fj_buf_init(&rows, (size_t)1 << 30);
    fj_status fs = FJ_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        series_row r = {.id = (uint32_t)sqlite3_column_int64(st, 0), .ftype = (uint8_t)sqlite3_column_int(st, 8)};
        for (int i = 0; i < 7; i++) {
            r.off[i] = strs.len;
            r.len[i] = (size_t)sqlite3_column_bytes(st, i + 1);
            const void *p = sqlite3_column_text(st, i + 1);
            if ((fs = fj_buf_append(&strs, p ? p : "", r.len[i])) != FJ_OK)
                break;
        }
        if (fs == FJ_OK)
            fs = fj_buf_append(&rows, &r, sizeof r);
        if (fs != FJ_OK)
            break;
    }
    if (fs == FJ_OK && rc != SQLITE_DONE)
        fs = fj_sq_fail(s, rc, "list series", err);
    else if (fs != FJ_OK)
        fj_err_set(err, fs, NULL, "too many series");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    size_t n = rows.len / sizeof(series_row);
    for (size_t i = 0; fs == FJ_OK && i < n; i++) {
        series_row r;
        memcpy(&r, rows.data + i * sizeof r, sizeof r);
        fj_ts_str f[7];
        for (int k = 0; k < 7; k++)
            f[k] = (fj_ts_str){strs.data ? strs.data + r.off[k] : "", r.len[k]};
        fj_ts_key key = {f[0], f[1], f[2], f[3], f[4], f[5], f[6], r.ftype};
        fs = cb(ud, r.id, &key);
    }
    fj_buf_free(&strs);
    fj_buf_free(&rows);
    return fs;
}

typedef struct chunk_iter {
    fj_store *s;
    sqlite3_stmt *st;
    uint32_t id;
    int64_t from, to;
    bool started;
} chunk_iter;

static fj_status next_chunk(void *ud, fj_ts_chunk *out)
{
    chunk_iter *it = ud;
    if (!it->started) { /* the snapshot starts here, after the engine's part was copied */
        sqlite3_bind_int64(it->st, 1, it->id);
        sqlite3_bind_int64(it->st, 2, it->from);
        sqlite3_bind_int64(it->st, 3, it->to);
        it->started = true;
    }
    int rc = sqlite3_step(it->st);
    if (rc == SQLITE_DONE)
        return FJ_ENOTFOUND;
    if (rc != SQLITE_ROW)
        return fj_sq_status(rc);
    *out = (fj_ts_chunk){.series_id = it->id,
                         .count = (uint32_t)sqlite3_column_int64(it->st, 0),
                         .t_first = sqlite3_column_int64(it->st, 1),
                         .t_last = sqlite3_column_int64(it->st, 2),
                         .seq = (uint64_t)sqlite3_column_int64(it->st, 3),
                         .blob = sqlite3_column_blob(it->st, 4),
                         .len = (size_t)sqlite3_column_bytes(it->st, 4)};
    return FJ_OK;
}

fj_status fj_sq_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                        fj_ts_points *out, fj_err *err)
{
    struct fj_sq_ts *t = ts_of(s);
    if (!t)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if (!t->codec && !(t->codec = fj_ts_codec_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    chunk_iter it = {.s = s, .st = stmt(s, ST_CHUNKS, err), .id = series_id, .from = from, .to = to};
    if (!it.st)
        return FJ_EIO;
    fj_status st = fj_ts_read(live, t->codec, series_id, from, to, next_chunk, &it, out, err);
    sqlite3_reset(it.st);
    if (st == FJ_EIO && err && !err->message[0])
        fj_err_set(err, FJ_EIO, "db", "reading chunks of series %u failed", series_id);
    return st;
}
