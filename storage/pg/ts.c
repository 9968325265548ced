/* storage/pg/ts.c — line-protocol metrics in the PostgreSQL backend, writer side: this server's instance
 * (identity, advisory lock, request log, durable lsn), the time-series engine fed with series ids
 * from the database, the metrics part of a group commit, startup replay and maintenance. Reads are
 * in storage/pg/ts_read.c; the schema in migrations/postgres/0002_metrics.sql. The backend-neutral
 * bookkeeping (lsn, when maintenance is due, request-log records, replay of a logged request) is
 * storage/ts/writer.h's, cc-backend's job rules storage/ts/cc_json.h's.
 *
 * Durability is storage/sqlite/ts.c's: a request's points go to request_log as a point record (rows of
 * this instance; storage/ts/request_log.h) in the same transaction as they enter the engine, so an acknowledged point is in a committed
 * chunk or in a committed log row at or after this instance's durable lsn, which startup replays.
 * A rolled-back group leaves its points in the engine (there is no undo); its clients got 503.
 *
 * What sharing the database with other servers changes:
 * - Series ids: fj_pg_ts_prepare looks up each point's key in the engine; the keys it does not
 *   know are inserted in one statement (ON CONFLICT DO NOTHING: another server may add the same
 *   key at once), read back with their ids and loaded into the engine, all before the group's
 *   BEGIN and committed on their own (an orphan series row without points is harmless). Points
 *   are then appended by id, so the engine never creates an id itself.
 * - Chunk seq: (instance id << 40) + n, continued from ts_instances.chunk_seq, so two servers'
 *   chunks never collide; for one series, a later write through the same server wins.
 * - The instance's session advisory lock, held on the writer connection (taken again after a
 *   reconnection), keeps a second server with the same identity from writing the same log. */
#include "storage/pg/ts.h"
#include "storage/core/grow.h"
#include "storage/core/try.h"

#include "alloc.h"
#include "ingest/cc.h"
#include "storage/ts/cc_json.h"
#include "storage/ts/strchunk.h"
#include "log.h"
#include "timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS FJ_TSW_NS
#define SEQ_SHIFT 40        /* chunk seq = (instance id << SEQ_SHIFT) + n */
#define MAX_INSTANCE_ID ((int64_t)1 << 22)
#define CHUNK_BATCH_BYTES ((size_t)32 << 20) /* hex of sealed chunks sent per statement, at most */
#define LOG_PAGE 64         /* request-log rows per replay query (TS_LOG_READ's LIMIT) */
#define DEFAULT_SHARE_S 1   /* metrics-share-interval */

static fj_status oom(fj_err *err)
{
    return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
}

static const char *num(char buf[24], int64_t v)
{
    snprintf(buf, 24, "%lld", (long long)v);
    return buf;
}

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static struct fj_pg_ts *ts_of(fj_store *s)
{
    if (!s->ts && (s->ts = fj_calloc(1, sizeof *s->ts))) {
        fj_pg_cols_init(&s->ts->cols, 0);
        fj_pg_cols_init(&s->ts->drops, 0);
        fj_pg_cols_init(&s->ts->strs, 0);
        fj_buf_init(&s->ts->kbuf, FJ_TS_KEY_MAX + 64);
    }
    return s->ts;
}

static fj_status cols_failed(const fj_pg_cols *c, fj_err *err)
{
    if (c->st == FJ_ETOOBIG)
        return fj_err_set(err, FJ_ETOOBIG, "db", "a group commit holds more metrics data than one statement takes");
    return oom(err);
}

fj_status fj_pg_ts_run1(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res,
                        const char *what, fj_err *err)
{
    if (res)
        *res = NULL;
    fj_status st = fj_pg_connect(s, err);
    if (st == FJ_OK)
        st = fj_pg_run(s, id, n, vals, res, what, err);
    if (st == FJ_EBUSY && PQstatus(s->conn) != CONNECTION_OK && fj_pg_connect(s, err) == FJ_OK)
        st = fj_pg_run(s, id, n, vals, res, what, err);
    return st;
}

/* --- the instance ---------------------------------------------------------------------------- */

/* Takes this instance's advisory lock on the current session unless it holds it already (a new
 * session after a reconnection does not). fail: the status when another session holds it. */
static fj_status ensure_lock(fj_store *s, fj_status fail, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    int pid = s->conn ? PQbackendPID(s->conn) : 0;
    if (pid && pid == t->lock_pid)
        return FJ_OK;
    char b[24];
    const char *vals[] = {num(b, t->instance_id)};
    PGresult *r;
    FJ_TRY(fj_pg_run(s, FJ_PG_TS_INST_LOCK, 1, vals, &r, "take the instance lock", err));
    bool got = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    int holder = PQntuples(r) == 1 ? (int)fj_pg_int(r, 0, 1) : 0;
    PQclear(r);
    if (!got)
        return fj_err_set(err, fail, "instance",
                          "metrics instance '%s' is in use by another fjord server on this database: give every "
                          "server its own `instance`",
                          t->instance);
    t->lock_pid = holder;
    return FJ_OK;
}

/* --- series ids from the database ------------------------------------------------------------ */

static fj_ts_key key_of(const fj_metric_point *q)
{
    return fj_tsw_key_of(q);
}

/* Loads rows (id, cluster, host, metric, type, type_id, stype, stype_id, ftype) into the engine. */
static fj_status load_rows(struct fj_pg_ts *t, const PGresult *r, fj_err *err)
{
    for (int i = 0; i < PQntuples(r); i++) {
        const char *f[7];
        size_t n[7];
        for (int k = 0; k < 7; k++) {
            f[k] = PQgetvalue(r, i, k + 1);
            n[k] = (size_t)PQgetlength(r, i, k + 1);
        }
        FJ_TRY(fj_tsw_load_series(&t->w, fj_pg_int(r, i, 0), f, n, (int)fj_pg_int(r, i, 8), err));
    }
    return FJ_OK;
}

/* What t->keys holds for a key of the group the engine did not know: pending, admitted by the
 * quota, or refused by limit l (KEY_REFUSED + l). */
enum { KEY_PENDING = 1, KEY_ADMITTED = 2, KEY_REFUSED = 16 };
enum { KEY_COLS = 8 }; /* a key's row: its 7 strings and its type */

/* The key serialised into t->kbuf (each field's length, then its bytes). */
static fj_status serial_key(struct fj_pg_ts *t, const fj_ts_key *k, fj_err *err)
{
    const fj_ts_str *f = &k->cluster;
    size_t total = 0;
    fj_buf_reset(&t->kbuf);
    for (int j = 0; j < 7; j++) {
        unsigned char len[2] = {(unsigned char)(f[j].n >> 8), (unsigned char)f[j].n};
        total += f[j].n;
        if (total > FJ_TS_KEY_MAX)
            return fj_err_set(err, FJ_EINVAL, "db", "the series key of metric '%.*s' is longer than %d bytes",
                              (int)(k->metric.n > 64 ? 64 : k->metric.n), k->metric.p, FJ_TS_KEY_MAX);
        if (fj_buf_append(&t->kbuf, len, 2) != FJ_OK || (f[j].n && fj_buf_append(&t->kbuf, f[j].p, f[j].n) != FJ_OK))
            return oom(err);
    }
    return FJ_OK;
}

/* A key's row: its 7 strings and the type a new series gets (of the first point naming it). */
static void add_key_row(fj_pg_cols *c, const fj_ts_key *k)
{
    const fj_ts_str *f = &k->cluster;
    for (int j = 0; j < 7; j++)
        fj_pg_textn(c, j, f[j].n ? f[j].p : "", f[j].n);
    fj_pg_i64(c, 7, k->ftype);
    fj_pg_row(c, 0);
}

/* First pass: ids[i] for the points the engine knows, 0 for the others, whose distinct keys are
 * added as rows of t->cols (KEY_COLS columns, reset by the caller); 0 too for a point whose type
 * its series' does not fit (fill_unknown counts it). */
static fj_status collect_unknown(struct fj_pg_ts *t, const fj_metric_point *p, size_t n, uint32_t *ids,
                                 size_t *n_unknown, fj_err *err)
{
    fj_pg_cols *c = &t->cols;
    for (size_t i = 0; i < n; i++) {
        fj_ts_key k = key_of(&p[i]);
        fj_status fs = fj_ts_series_find(t->w.eng, &k, &ids[i]);
        if (fs == FJ_OK)
            continue;
        ids[i] = 0;
        if (fs == FJ_ECONFLICT)
            continue;
        FJ_TRY(serial_key(t, &k, err));
        if (fj_intern_get(&t->keys, 0, t->kbuf.data, t->kbuf.len))
            continue;
        if (fj_intern_put(&t->keys, 0, t->kbuf.data, t->kbuf.len, KEY_PENDING) != FJ_OK)
            return oom(err);
        add_key_row(c, &k);
        ++*n_unknown;
    }
    return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
}

/* Interning the rows collected in c (ncols columns, one parameter each), two statements each
 * committed on its own: add inserts the missing ones, get reads the ids of all of them back,
 * whoever added them, into *r (for PQclear). */
static fj_status add_then_get(fj_store *s, fj_pg_cols *c, int ncols, fj_pg_stmt_id add, const char *add_what,
                              fj_pg_stmt_id get, const char *get_what, PGresult **r, fj_err *err)
{
    const char *vals[FJ_PG_MAXCOLS];
    if (fj_pg_cols_finish(c, vals) != FJ_OK)
        return cols_failed(c, err);
    FJ_TRY(fj_pg_ts_run1(s, add, ncols, vals, NULL, add_what, err));
    return fj_pg_ts_run1(s, get, ncols, vals, r, get_what, err);
}

/* Adds the keys collected in t->cols (committed on their own: outside any transaction), reads
 * their ids back, whoever added them, and loads them into the engine. */
static fj_status fetch_unknown(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    PGresult *r;
    FJ_TRY(add_then_get(s, &t->cols, KEY_COLS, FJ_PG_TS_SERIES_ADD, "add series", FJ_PG_TS_SERIES_GET, "look up series", &r,
                        err));
    fj_status st = load_rows(t, r, err);
    PQclear(r);
    return st;
}

/* Second pass: the ids of the points that were unknown; a point whose series a quota refused
 * keeps id 0 and is counted in cnt (NULL when no quota applies: replay), and so does a point of a
 * type its series' does not fit (docs/metrics.md, "Field types"). */
static fj_status fill_unknown(struct fj_pg_ts *t, const fj_metric_point *p, size_t n, uint32_t *ids,
                              fj_write_count *cnt, fj_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i])
            continue;
        fj_ts_key k = key_of(&p[i]);
        fj_status fs = fj_ts_series_find(t->w.eng, &k, &ids[i]);
        if (fs == FJ_OK)
            continue;
        if (fs == FJ_ECONFLICT) {
            ids[i] = 0;
            fj_tsw_note_conflict(cnt, &p[i], fj_ts_series_ftype(t->w.eng, &k));
            continue;
        }
        int64_t v = 0;
        if (cnt) {
            FJ_TRY(serial_key(t, &k, err));
            v = fj_intern_get(&t->keys, 0, t->kbuf.data, t->kbuf.len);
        }
        if (v < KEY_REFUSED)
            return fj_err_set(err, FJ_EINTERNAL, "db", "series of metric '%.*s' not found after adding it",
                              (int)(k.metric.n > 64 ? 64 : k.metric.n), k.metric.p);
        ids[i] = 0;
        cnt->dropped++;
        cnt->limit = (fj_limit)(v - KEY_REFUSED);
    }
    return FJ_OK;
}

/* With a series quota: the group's unknown keys (t->cols) that the database has are read and
 * loaded first; each key left is new and asks its cluster's quota, in the order of the points,
 * and only the admitted ones are added (then read back and loaded like any). */
static fj_status admit_unknown(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    const char *vals[KEY_COLS];
    if (fj_pg_cols_finish(&t->cols, vals) != FJ_OK)
        return cols_failed(&t->cols, err);
    PGresult *r;
    FJ_TRY(fj_pg_ts_run1(s, FJ_PG_TS_SERIES_GET, KEY_COLS, vals, &r, "look up series", err));
    fj_status st = load_rows(t, r, err);
    PQclear(r);
    FJ_TRY(st);
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = KEY_COLS;
    char cluster[FJ_TS_KEY_MAX + 1];
    size_t off = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            for (size_t j = 0; j < e->u.metrics.n_points; j++) {
                fj_ts_key k = key_of(&e->u.metrics.points[j]);
                uint32_t id;
                if (t->ids[off + j] || fj_ts_series_find(t->w.eng, &k, &id) != FJ_ENOTFOUND)
                    continue;
                FJ_TRY(serial_key(t, &k, err));
                if (fj_intern_get(&t->keys, 0, t->kbuf.data, t->kbuf.len) != KEY_PENDING)
                    continue;
                memcpy(cluster, k.cluster.n ? k.cluster.p : "", k.cluster.n);
                cluster[k.cluster.n] = '\0';
                fj_limit l;
                FJ_TRY(fj_pg_quota_series(s, cluster, &l, err));
                if (fj_intern_put(&t->keys, 0, t->kbuf.data, t->kbuf.len,
                                  l == FJ_LIMIT_NONE ? KEY_ADMITTED : KEY_REFUSED + (int64_t)l) != FJ_OK)
                    return oom(err);
                if (l == FJ_LIMIT_NONE)
                    add_key_row(&t->cols, &k);
            }
            off += e->u.metrics.n_points;
        }
    if (t->cols.st != FJ_OK)
        return cols_failed(&t->cols, err);
    return t->cols.nrows ? fetch_unknown(s, err) : FJ_OK;
}

/* ids for the points of one decoded body (replay). */
static fj_status resolve_points(fj_store *s, const fj_metric_point *p, size_t n, uint32_t *ids, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    size_t unknown = 0;
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = KEY_COLS;
    fj_intern_clear(&t->keys);
    FJ_TRY(collect_unknown(t, p, n, ids, &unknown, err));
    if (unknown)
        FJ_TRY(fetch_unknown(s, err));
    return fill_unknown(t, p, n, ids, NULL, err);
}

static fj_status grow_ids(struct fj_pg_ts *t, size_t need, fj_err *err)
{
    return fj_grow(&t->ids, &t->cap_ids, need, sizeof *t->ids, 1024) ? FJ_OK : oom(err);
}

/* --- clusters of messages and jobs ----------------------------------------------------------- */

static int64_t cluster_id(fj_store *s, const char *name)
{
    return fj_intern_get(&s->names, FJ_PG_NS_CLUSTER, name, strlen(name));
}

static void need_cluster(fj_store *s, const char *name)
{
    struct fj_pg_ts *t = s->ts;
    size_t len = strlen(name);
    if (cluster_id(s, name) || fj_intern_get(&t->keys, FJ_PG_NS_CLUSTER, name, len))
        return;
    if (fj_intern_put(&t->keys, FJ_PG_NS_CLUSTER, name, len, 1) != FJ_OK) {
        t->cols.st = FJ_ENOMEM;
        return;
    }
    fj_pg_textn(&t->cols, 0, name, len);
    fj_pg_row(&t->cols, 0);
}

/* Interns the clusters that messages and jobs name, outside the group's transaction (as series:
 * an unused cluster row is harmless), into the handle's name cache. */
static fj_status intern_clusters(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = 1;
    fj_intern_clear(&t->keys);
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            for (size_t k = 0; k < e->u.metrics.n_messages; k++)
                need_cluster(s, e->u.metrics.messages[k].cluster);
            for (size_t k = 0; k < e->u.metrics.n_jobs; k++)
                need_cluster(s, e->u.metrics.jobs[k].cluster);
        }
    if (t->cols.st != FJ_OK)
        return cols_failed(&t->cols, err);
    if (!t->cols.nrows)
        return FJ_OK;
    PGresult *r;
    FJ_TRY(add_then_get(s, &t->cols, 1, FJ_PG_CLUSTER_INS, "intern clusters", FJ_PG_CLUSTER_GET, "look up clusters",
                        &r, err));
    fj_status st = FJ_OK;
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 1);
        if (fj_intern_put(&s->names, FJ_PG_NS_CLUSTER, name, strlen(name), fj_pg_int(r, i, 0)) != FJ_OK)
            st = oom(err);
    }
    PQclear(r);
    return st;
}

/* --- the group commit ------------------------------------------------------------------------ */

static bool has_metrics(fj_batch *const *batches, size_t n_batches, size_t *n_points)
{
    bool any = false;
    *n_points = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++)
            if (batches[b]->envs[i].kind == FJ_KIND_METRICS) {
                any = true;
                *n_points += batches[b]->envs[i].u.metrics.n_points;
            }
    return any;
}

fj_status fj_pg_ts_prepare(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_err *err)
{
    size_t n_points;
    if (!has_metrics(batches, n_batches, &n_points))
        return FJ_OK;
    FJ_TRY(fj_pg_ts_start(s, NULL, err));
    struct fj_pg_ts *t = s->ts;
    t->n_ids = 0;
    FJ_TRY(grow_ids(t, n_points + 1, err));
    FJ_TRY(intern_clusters(s, batches, n_batches, err));
    /* Every unknown key of the group in one statement. */
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = KEY_COLS;
    fj_intern_clear(&t->keys);
    size_t unknown = 0, off = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            FJ_TRY(collect_unknown(t, e->u.metrics.points, e->u.metrics.n_points, t->ids + off, &unknown, err));
            off += e->u.metrics.n_points;
        }
    size_t n_envs = 0;
    for (size_t b = 0; b < n_batches; b++)
        n_envs += batches[b] ? batches[b]->n_envs : 0;
    if (!fj_grow(&t->refused, &t->cap_refused, n_envs + 1, sizeof *t->refused, 64))
        return oom(err);
    memset(t->refused, 0, (n_envs + 1) * sizeof *t->refused);
    if (unknown)
        FJ_TRY(fj_pg_quota_limited(s, FJ_QUOTA_SERIES) ? admit_unknown(s, batches, n_batches, err)
                                                        : fetch_unknown(s, err));
    off = 0;
    size_t k = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            FJ_TRY(fill_unknown(t, e->u.metrics.points, e->u.metrics.n_points, t->ids + off, &t->refused[k], err));
            off += e->u.metrics.n_points;
        }
    t->n_ids = n_points;
    return FJ_OK;
}

/* Adds one request-log row to t->cols (7 columns) under the next lsn: by default a point record of
 * the envelope's points and their series ids (storage/ts/request_log.h; size holds the number of points), with
 * request-log-keep the raw body (an archive that can be decoded again). As in storage/sqlite/ts.c. */
static fj_status log_row(struct fj_pg_ts *t, const fj_metrics *m, const uint32_t *ids, uint64_t *lsn,
                         fj_err *err)
{
    fj_ts_writer *w = &t->w;
    fj_pg_cols *c = &t->cols;
    if (!(w->keep_ns && m->raw)) {
        const void *rec;
        size_t len;
        FJ_TRY(fj_tsw_record_begin(w, err));
        FJ_TRY(fj_tsw_record_add(w, ids, m->points, m->n_points, err));
        FJ_TRY(fj_tsw_record_finish(w, &rec, &len, err));
        *lsn = w->next_lsn++;
        fj_pg_u64(c, 0, *lsn);
        fj_pg_i64(c, 1, m->arrival_ns);
        fj_pg_text(c, 2, NULL);
        fj_pg_i64(c, 3, FJ_TSW_POINT_RECORD);
        fj_pg_i64(c, 4, 0);
        fj_pg_u64(c, 5, m->n_points);
        fj_pg_bytea(c, 6, rec, len);
        fj_pg_row(c, 0);
        return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
    }
    const void *z;
    size_t zn;
    FJ_TRY(fj_tsw_compress(w, m, &z, &zn, err));
    *lsn = w->next_lsn++;
    fj_pg_u64(c, 0, *lsn);
    fj_pg_i64(c, 1, m->arrival_ns);
    fj_pg_text(c, 2, m->default_cluster);
    fj_pg_i64(c, 3, m->unit_ns);
    fj_pg_i64(c, 4, m->max_future_ns);
    fj_pg_u64(c, 5, m->raw_len);
    fj_pg_bytea(c, 6, z, zn);
    fj_pg_row(c, 0);
    return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
}

/* One statement for every message of the group; each envelope counts the rows it added (the
 * first copy of a message repeated in the group adds it) and the rest as duplicates. */
static fj_status write_messages(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                                fj_err *err)
{
    static const char *const kinds[] = {"event", "log", "control"};
    fj_pg_cols *c = &s->ts->cols;
    fj_pg_cols_reset(c);
    c->ncols = 8;
    size_t k = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            for (size_t j = 0; j < e->u.metrics.n_messages; j++) {
                const fj_cc_message *msg = &e->u.metrics.messages[j];
                uint64_t h = fj_cc_message_hash(msg);
                int64_t cid = cluster_id(s, msg->cluster);
                if (!cid)
                    return fj_err_set(err, FJ_EINTERNAL, "db", "cluster '%s' was not interned", msg->cluster);
                fj_pg_i64(c, 0, cid);
                fj_pg_i64(c, 1, msg->time);
                fj_pg_text(c, 2, kinds[msg->kind]);
                fj_pg_text(c, 3, msg->name);
                fj_pg_text(c, 4, msg->host);
                fj_pg_i64(c, 5, (int64_t)h);
                fj_pg_text(c, 6, msg->tags);
                /* text cannot hold NUL: stored up to the first one (SQLite answers the same) */
                fj_pg_textn(c, 7, msg->payload, strnlen(msg->payload, msg->payload_len));
                fj_pg_row(c, k);
                counts[k].duplicates++;
            }
        }
    if (!c->nrows)
        return FJ_OK;
    const char *vals[8];
    if (fj_pg_cols_finish(c, vals) != FJ_OK)
        return cols_failed(c, err);
    PGresult *r;
    FJ_TRY(fj_pg_run(s, FJ_PG_CC_MSG_INS, 8, vals, &r, "insert events", err));
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t o = fj_pg_int(r, i, 0);
        if (o >= 1 && (size_t)o <= c->nrows) {
            fj_write_count *cnt = &counts[c->env[o - 1]];
            cnt->duplicates--;
            cnt->inserted++;
        }
    }
    PQclear(r);
    return FJ_OK;
}

/* cc-backend's rules (fj_cc_job_apply) on this database. Statement by statement: a stop may
 * follow its start in the same group. Two servers starting one job at once: the unique key takes
 * one, the other is a duplicate; a stop racing another is refused by the state check of the
 * UPDATE. */
typedef struct job_ctx {
    fj_store *s;
    char cid[24]; /* the cluster's id */
} job_ctx;

static fj_status job_find_recent(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    job_ctx *x = ud;
    char bj[24], bt[24];
    const char *vals[] = {x->cid, num(bj, (int64_t)j->job_id), num(bt, j->start_time)};
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_CC_JOB_DUP, 3, vals, &r, "find job", err));
    *id = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    return FJ_OK;
}

static fj_status job_insert(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    job_ctx *x = ud;
    char bj[24], bt[24], b1[24], b2[24], b3[24];
    const char *vals[] = {x->cid, num(bj, (int64_t)j->job_id), num(bt, j->start_time), j->user, j->project,
                          j->partition, j->subcluster, num(b1, (int64_t)j->num_nodes),
                          num(b2, (int64_t)j->num_hwthreads), num(b3, (int64_t)j->num_acc), j->hosts, j->payload};
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_CC_JOB_INS, 12, vals, &r, "insert job", err));
    *id = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    return FJ_OK;
}

static fj_status job_find(void *ud, const fj_cc_job *j, int64_t *id, int64_t *start, char state[32], fj_err *err)
{
    job_ctx *x = ud;
    char bj[24], bt[24];
    const char *vals[] = {x->cid, num(bj, (int64_t)j->job_id), num(bt, j->start_time)};
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_CC_JOB_FIND, 3, vals, &r, "find job", err));
    if (PQntuples(r)) {
        *id = fj_pg_int(r, 0, 0);
        *start = fj_pg_int(r, 0, 1);
        snprintf(state, 32, "%s", PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    return FJ_OK;
}

static fj_status job_stop(void *ud, const fj_cc_job *j, int64_t id, bool *stopped, fj_err *err)
{
    job_ctx *x = ud;
    char bi[24], bs[24];
    const char *vals[] = {num(bi, id), num(bs, j->stop_time), j->state};
    PGresult *r;
    FJ_TRY(fj_pg_run(x->s, FJ_PG_CC_JOB_STOP, 3, vals, &r, "stop job", err));
    *stopped = PQntuples(r) == 1;
    PQclear(r);
    return FJ_OK;
}

static fj_status write_job(fj_store *s, const fj_cc_job *j, fj_write_count *cnt, fj_err *err)
{
    static const fj_cc_job_ops ops = {job_find_recent, job_insert, job_find, job_stop};
    int64_t cid = cluster_id(s, j->cluster);
    if (!cid)
        return fj_err_set(err, FJ_EINTERNAL, "db", "cluster '%s' was not interned", j->cluster);
    job_ctx x = {.s = s};
    num(x.cid, cid);
    bool added;
    FJ_TRY(fj_cc_job_apply(j, &ops, &x, &added, err));
    if (added)
        cnt->inserted++;
    else
        cnt->duplicates++;
    return FJ_OK;
}

/* --- sealed chunks and the instance's state, right before COMMIT ----------------------------- */

/* Runs statement id over the rows collected in c (ncols columns, one parameter each) and starts c
 * over. */
static fj_status send_rows(fj_store *s, fj_pg_cols *c, fj_pg_stmt_id id, int ncols, const char *what, fj_err *err)
{
    if (!c->nrows)
        return FJ_OK;
    const char *vals[FJ_PG_MAXCOLS];
    if (fj_pg_cols_finish(c, vals) != FJ_OK)
        return cols_failed(c, err);
    fj_status st = fj_pg_run(s, id, ncols, vals, NULL, what, err);
    fj_pg_cols_reset(c);
    c->ncols = ncols;
    return st;
}

/* The sealed chunks collected by sink_chunk. */
static fj_status send_chunks(fj_store *s, fj_err *err)
{
    return send_rows(s, &s->ts->cols, FJ_PG_TS_CHUNK_INS, 6, "insert chunks", err);
}

#define DROP_BATCH 65536 /* superseded checkpoints deleted per statement */

/* The superseded checkpoints collected by sink_drop. */
static fj_status send_drops(fj_store *s, fj_err *err)
{
    return send_rows(s, &s->ts->drops, FJ_PG_TS_CHUNK_DEL, 5, "delete checkpoints", err);
}

typedef struct sink_ctx {
    fj_store *s;
    fj_err *err;
} sink_ctx;

static fj_status sink_series(void *ud, uint32_t id, const fj_ts_key *k)
{
    (void)k;
    sink_ctx *x = ud;
    return fj_err_set(x->err, FJ_EINTERNAL, "db", "the engine created series %u itself", id);
}

static fj_status sink_chunk(void *ud, const fj_ts_chunk *ch)
{
    sink_ctx *x = ud;
    struct fj_pg_ts *t = x->s->ts;
    fj_pg_cols *c = &t->cols;
    fj_pg_i64(c, 0, ch->series_id);
    fj_pg_i64(c, 1, ch->t_last);
    fj_pg_u64(c, 2, ch->seq);
    fj_pg_i64(c, 3, ch->t_first);
    fj_pg_i64(c, 4, ch->count);
    fj_pg_bytea(c, 5, ch->blob, ch->len);
    fj_pg_row(c, 0);
    if (c->st != FJ_OK)
        return cols_failed(c, x->err);
    if (ch->seq > t->seq_max)
        t->seq_max = ch->seq;
    return c->c[5].b.len >= CHUNK_BATCH_BYTES ? send_chunks(x->s, x->err) : FJ_OK;
}

/* A shared buffer's checkpoint and pieces superseded (storage/ts/engine.h, fj_ts_engine_share):
 * deleted with the chunks, by ranges of t_last and seq within the series (the primary key's order). */
static fj_status sink_drop_range(void *ud, uint32_t series_id, int64_t t_lo, int64_t t_hi, uint64_t seq_lo,
                                 uint64_t seq_hi)
{
    sink_ctx *x = ud;
    fj_pg_cols *c = &x->s->ts->drops;
    fj_pg_i64(c, 0, series_id);
    fj_pg_i64(c, 1, t_lo);
    fj_pg_i64(c, 2, t_hi);
    fj_pg_u64(c, 3, seq_lo);
    fj_pg_u64(c, 4, seq_hi);
    fj_pg_row(c, 0);
    if (c->st != FJ_OK)
        return cols_failed(c, x->err);
    return c->nrows >= DROP_BATCH ? send_drops(x->s, x->err) : FJ_OK;
}

/* A checkpoint superseded (storage/ts/engine.h, fj_ts_engine_checkpoint): deleted with the chunks. */
static fj_status sink_drop(void *ud, uint32_t series_id, int64_t t_last, uint64_t seq)
{
    return sink_drop_range(ud, series_id, t_last, t_last, seq, seq);
}

static fj_status precommit(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t || !t->w.eng || (!t->w.dirty && !t->w.own))
        return FJ_OK; /* nothing of ours changed */
    fj_ts_writer *w = &t->w;
    if (w->dirty || (w->own && w->ckpt_now)) {
        bool emit = w->dirty;
        fj_pg_cols_reset(&t->cols);
        t->cols.ncols = 6;
        fj_pg_cols_reset(&t->drops);
        t->drops.ncols = 5;
        sink_ctx x = {s, err};
        fj_ts_sink sink = {sink_series, sink_chunk, &x, sink_drop};
        if (emit)
            FJ_TRY(fj_ts_engine_emit(w->eng, &sink));
        if (w->own)
            FJ_TRY(fj_tsw_checkpoint(w, &sink, fj_mono_ns(), err));
        FJ_TRY(send_chunks(s, err));
        FJ_TRY(send_drops(s, err));
    }
    /* Conservative: chunks handed in this transaction still count until committed. */
    uint64_t d = fj_tsw_durable_of(w, fj_ts_engine_durable_lsn(w->eng));
    if (d == w->durable_saved && w->next_lsn == w->next_saved && t->seq_max == t->seq_saved)
        return FJ_OK;
    char b0[24], b1[24], b2[24], b3[24];
    const char *vals[] = {num(b0, t->instance_id), num(b1, (int64_t)d), num(b2, (int64_t)w->next_lsn),
                          num(b3, (int64_t)t->seq_max)};
    FJ_TRY(fj_pg_run(s, FJ_PG_TS_INST_PUT, 4, vals, NULL, "save the durable lsn", err));
    w->durable_saved = d;
    w->next_saved = w->next_lsn;
    t->seq_saved = t->seq_max;
    return FJ_OK;
}

/* The string points of m into t->strs (docs/metrics.md, "Field types": rows, committed with the
 * group, so neither logged nor the engine's): their ids become 0 for what follows. */
static void take_strings(struct fj_pg_ts *t, const fj_metrics *m, uint32_t *ids)
{
    for (size_t i = 0; m->n_strings && i < m->n_points; i++) { /* no pass over a body without strings */
        const fj_metric_point *q = &m->points[i];
        if (q->ftype != FJ_FT_STRING)
            continue;
        if (ids[i]) {
            fj_pg_i64(&t->strs, 0, ids[i]);
            fj_pg_i64(&t->strs, 1, q->t);
            fj_mstr sv = fj_metric_string(m, q);
            fj_pg_bytea(&t->strs, 2, (const unsigned char *)(sv.n ? sv.p : ""), sv.n);
            fj_pg_row(&t->strs, 0);
        }
        ids[i] = 0;
    }
}

fj_status fj_pg_ts_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                         fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    size_t n_points;
    if (!has_metrics(batches, n_batches, &n_points)) {
        if (!t || !t->w.started || !t->w.dirty)
            return FJ_OK;
        /* chunks sealed by a group that rolled back: they go with this one */
        FJ_TRY(ensure_lock(s, FJ_EBUSY, err));
        return precommit(s, err);
    }
    if (!t || !t->w.started || t->n_ids != n_points)
        return fj_err_set(err, FJ_EINTERNAL, "db", "metrics written without fj_pg_ts_prepare");
    FJ_TRY(ensure_lock(s, FJ_EBUSY, err));
    t->w.dirty = true;
    /* Request-log rows of the whole group in one statement; points into the engine, each
     * envelope's tagged with its row's lsn. */
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = 7;
    fj_pg_cols_reset(&t->strs);
    t->strs.ncols = 3;
    size_t k = 0, off = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            const fj_metrics *m = &e->u.metrics;
            take_strings(t, m, t->ids + off);
            if (m->n_points) {
                uint64_t lsn = 0;
                FJ_TRY(log_row(t, m, t->ids + off, &lsn, err));
                fj_ts_engine_set_lsn(t->w.eng, lsn);
            }
            FJ_TRY(fj_tsw_append_ids(&t->w, m->points, t->ids + off, m->n_points, err));
            off += m->n_points;
            const fj_write_count *rc = &t->refused[k];
            counts[k].inserted += m->n_points - rc->dropped - rc->conflicts;
            counts[k].dropped = rc->dropped;
            counts[k].limit = rc->dropped ? rc->limit : FJ_LIMIT_NONE;
            counts[k].conflicts = rc->conflicts;
            counts[k].conflict_line = rc->conflict_line;
            counts[k].conflict_sent = rc->conflict_sent;
            counts[k].conflict_stored = rc->conflict_stored;
            memcpy(counts[k].conflict_metric, rc->conflict_metric, sizeof rc->conflict_metric);
        }
    if (t->cols.nrows) {
        const char *vals[8];
        char bi[24];
        vals[0] = num(bi, t->instance_id);
        if (fj_pg_cols_finish(&t->cols, vals + 1) != FJ_OK)
            return cols_failed(&t->cols, err);
        FJ_TRY(fj_pg_run(s, FJ_PG_TS_LOG_INS, 8, vals, NULL, "request log", err));
    }
    if (t->strs.st != FJ_OK)
        return cols_failed(&t->strs, err);
    if (t->strs.nrows)
        FJ_TRY(send_rows(s, &t->strs, FJ_PG_TS_STRING_INS, 3, "insert string points", err));
    FJ_TRY(write_messages(s, batches, n_batches, counts, err));
    k = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            for (size_t j = 0; e->kind == FJ_KIND_METRICS && j < e->u.metrics.n_jobs; j++)
                FJ_TRY(write_job(s, &e->u.metrics.jobs[j], &counts[k], err));
        }
    return precommit(s, err);
}

void fj_pg_ts_end(fj_store *s, bool committed)
{
    struct fj_pg_ts *t = s->ts;
    if (!t || !t->w.eng)
        return;
    t->n_ids = 0;
    fj_tsw_end(&t->w, committed);
    if (!committed)
        t->seq_saved = 0; /* unknown: write it again */
}

/* One transaction of the writer's own: emit what is sealed, optionally more work in between. */
static fj_status own_txn(fj_store *s, fj_status (*more)(fj_store *s, fj_err *err), fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    fj_status st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = ensure_lock(s, FJ_EBUSY, err);
    /* A share acknowledges nothing: its points are durable in the request log already. Without
     * waiting for the WAL's flush it no longer holds up the groups behind it (ingest on
     * PostgreSQL ran at half speed). Lost in a crash, it is lost whole, the durable lsn saved with it
     * included, so the log still holds its points; and every later synchronous commit flushes it. */
    if (st == FJ_OK && t->w.ckpt_now && fj_tsw_sharing(&t->w))
        st = fj_pg_exec(s, "SET LOCAL synchronous_commit TO off", "share without waiting for the WAL", err);
    if (st == FJ_OK) {
        t->w.own = true;
        st = precommit(s, err);
        t->w.own = false;
    }
    if (st == FJ_OK && more)
        st = more(s, err);
    if (st == FJ_OK)
        st = fj_pg_commit(s, err);
    if (st != FJ_OK)
        fj_pg_rollback(s);
    fj_pg_ts_end(s, st == FJ_OK);
    return st;
}

/* --- startup: instance, catalog, replay ------------------------------------------------------ */

/* A logged request's decoded points: their series ids from the database (point records need
 * none: their series were committed before them, fj_pg_ts_prepare, and loaded with the catalog). */
static fj_status replay_append(void *ud, const fj_metrics *m, fj_err *err)
{
    fj_store *s = ud;
    struct fj_pg_ts *t = s->ts;
    FJ_TRY(grow_ids(t, m->n_points + 1, err));
    FJ_TRY(resolve_points(s, m->points, m->n_points, t->ids, err));
    return fj_tsw_append_ids(&t->w, m->points, t->ids, m->n_points, err);
}

/* One request-log row back into the engine under its lsn. */
static fj_status replay_row(fj_store *s, fj_tsw_replay *rp, const PGresult *r, int i, const char *where,
                            fj_err *err)
{
    size_t zlen = 0;
    unsigned char *z = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 6), &zlen);
    if (!z)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    fj_tsw_logrow row = {.lsn = (uint64_t)fj_pg_int(r, i, 0),
                         .received = fj_pg_int(r, i, 1),
                         .cluster = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
                         .unit_ns = fj_pg_int(r, i, 3),
                         .max_future_ns = fj_pg_int(r, i, 4),
                         .size = (size_t)fj_pg_int(r, i, 5),
                         .body = z,
                         .body_len = zlen};
    fj_status st = fj_tsw_replay_row(&s->ts->w, rp, &row, where, replay_append, s, NULL, err);
    PQfreemem(z);
    return st;
}

static fj_status replay(void *ud, uint64_t from_lsn, size_t *n_req, size_t *n_pts, fj_err *err)
{
    fj_store *s = ud;
    struct fj_pg_ts *t = s->ts;
    size_t wn = strlen(t->instance) + sizeof " of instance ''";
    char *where = fj_malloc(wn);
    if (!where)
        return oom(err);
    snprintf(where, wn, " of instance '%s'", t->instance);
    fj_tsw_replay rp = {0};
    fj_status st = FJ_OK;
    for (uint64_t lsn = from_lsn; st == FJ_OK;) {
        char b0[24], b1[24];
        const char *vals[] = {num(b0, t->instance_id), num(b1, (int64_t)lsn)};
        PGresult *r;
        if ((st = fj_pg_ts_run1(s, FJ_PG_TS_LOG_READ, 2, vals, &r, "replay", err)) != FJ_OK)
            break;
        int rows = PQntuples(r);
        for (int i = 0; st == FJ_OK && i < rows; i++) {
            st = replay_row(s, &rp, r, i, where, err);
            lsn = (uint64_t)fj_pg_int(r, i, 0) + 1;
            ++*n_req;
        }
        PQclear(r);
        if (rows < LOG_PAGE)
            break;
    }
    *n_pts += rp.n_pts;
    fj_tsw_replay_done(&rp);
    fj_free(where);
    return st;
}

/* Registers the instance (first start) and reads its state; takes its lock. */
static fj_status open_instance(fj_store *s, int64_t *durable, int64_t *next, int64_t *seq, int64_t *max_lsn,
                               fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    const char *vals[] = {t->instance};
    FJ_TRY(fj_pg_ts_run1(s, FJ_PG_TS_INST_ADD, 1, vals, NULL, "register the instance", err));
    PGresult *r;
    FJ_TRY(fj_pg_ts_run1(s, FJ_PG_TS_INST_GET, 1, vals, &r, "read the instance", err));
    if (PQntuples(r) != 1) {
        PQclear(r);
        return fj_err_set(err, FJ_EIO, "db", "metrics instance '%s' vanished", t->instance);
    }
    t->instance_id = fj_pg_int(r, 0, 0);
    *durable = fj_pg_int(r, 0, 1);
    *next = fj_pg_int(r, 0, 2);
    *seq = fj_pg_int(r, 0, 3);
    *max_lsn = fj_pg_int(r, 0, 4);
    PQclear(r);
    if (t->instance_id < 1 || t->instance_id >= MAX_INSTANCE_ID)
        return fj_err_set(err, FJ_EINVAL, "instance", "metrics instance id %lld is out of range",
                          (long long)t->instance_id);
    return ensure_lock(s, FJ_ECONFLICT, err);
}

/* The lazy catalog (storage/ts/engine.h, fj_ts_catalog): an id's key, for a logged point at
 * replay. Keys reach the engine otherwise through fj_pg_ts_prepare, which looks every key the
 * engine does not hold up in ts_series (adding the new ones) anyway, so no series is read at
 * start. */
static fj_status cat_key(void *ud, uint32_t id, fj_ts_key *out)
{
    fj_store *s = ud;
    struct fj_pg_ts *t = s->ts;
    PQclear(t->key_res);
    t->key_res = NULL;
    char b[24];
    const char *vals[] = {num(b, id)};
    fj_err err = {0};
    FJ_TRY(fj_pg_ts_run1(s, FJ_PG_TS_SERIES_BY_ID, 1, vals, &t->key_res, "look up a series", &err));
    if (PQntuples(t->key_res) != 1)
        return FJ_ENOTFOUND;
    fj_ts_str *f[7] = {&out->cluster, &out->host, &out->metric, &out->type, &out->type_id, &out->stype,
                       &out->stype_id};
    for (int k = 0; k < 7; k++)
        *f[k] = (fj_ts_str){PQgetvalue(t->key_res, 0, k + 1), (size_t)PQgetlength(t->key_res, 0, k + 1)};
    out->ftype = (uint8_t)fj_pg_int(t->key_res, 0, 8);
    return FJ_OK;
}

static fj_status load_catalog(void *ud, fj_err *err)
{
    (void)err;
    fj_store *s = ud;
    fj_ts_catalog cat = {.key = cat_key, .ud = s};
    fj_ts_engine_set_catalog(s->ts->w.eng, &cat, 0);
    return FJ_OK;
}

/* Whether another fjord server uses this database now, into w.share_peers: every running server
 * holds its instance's advisory lock (ensure_lock) on its writer session for as long as it runs,
 * and PostgreSQL releases it when that session ends, a killed server's included. So the lock is
 * the announcement: no table of servers, no heartbeat rows to expire. Only with sharing on
 * (docs/metrics.md, "Every server sees every point"), at most once a second. */
static fj_status look_for_peers(fj_store *s, int64_t now, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t->w.share_ns || (t->peers_at && now - t->peers_at < NS))
        return FJ_OK;
    t->peers_at = now;
    FJ_TRY(ensure_lock(s, FJ_EBUSY, err)); /* a new session after a reconnection announces us again */
    char b[24];
    const char *vals[] = {num(b, t->instance_id)};
    PGresult *r;
    FJ_TRY(fj_pg_ts_run1(s, FJ_PG_TS_PEERS, 1, vals, &r, "look for other servers", err));
    int64_t n = PQntuples(r) == 1 ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    if (n > 0 && !t->w.share_peers)
        fj_info("metrics: %lld other fjord server(s) on this database: sharing the open buffers every %llds",
                (long long)n, (long long)(t->w.share_ns / NS));
    else if (n == 0 && t->w.share_peers)
        fj_info("metrics: no other fjord server on this database now: sharing stops");
    t->w.share_peers = n > 0;
    return FJ_OK;
}

static fj_status first_commit(void *ud, fj_err *err)
{
    return own_txn(ud, NULL, err);
}

static char *default_instance(void)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    return fj_strdup(host);
}

fj_status fj_pg_ts_start(fj_store *s, const fj_store_opts *o, fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "metrics need a writable handle");
    struct fj_pg_ts *t = ts_of(s);
    if (!t)
        return oom(err);
    if (t->w.started)
        return FJ_OK;
    fj_free(t->instance);
    t->instance = o && o->ts_instance && *o->ts_instance ? fj_strdup(o->ts_instance) : default_instance();
    if (!t->instance)
        return oom(err);
    t->lock_pid = 0;
    int64_t durable = 0, next = 0, seq = 0, max_lsn = 0;
    FJ_TRY(open_instance(s, &durable, &next, &seq, &max_lsn, err));
    int64_t base = t->instance_id << SEQ_SHIFT;
    FJ_TRY(fj_tsw_open(&t->w, o, (uint64_t)(seq > base ? seq : base) + 1, durable, next, max_lsn, fj_mono_ns(), err));
    t->seq_max = t->seq_saved = (uint64_t)seq;
    /* Other servers read this database: the open buffers' new points go where they read them
     * (docs/metrics.md, "Every server sees every point"). */
    int64_t share_s = o && o->ts_share_interval_s ? o->ts_share_interval_s : DEFAULT_SHARE_S;
    t->w.share_ns = share_s > 0 ? share_s * NS : 0;
    t->w.drop_range = sink_drop_range;
    t->peers_at = 0;
    FJ_TRY(look_for_peers(s, fj_mono_ns(), err));
    static const fj_tsw_start_ops ops = {load_catalog, replay, first_commit};
    char who[300];
    snprintf(who, sizeof who, "instance '%.250s' (%lld); ", t->instance, (long long)t->instance_id);
    return fj_tsw_start(&t->w, &ops, s, (uint64_t)durable, who, err);
}

fj_ts_engine *fj_pg_ts_engine(fj_store *s)
{
    return s->ts && s->ts->w.started ? s->ts->w.eng : NULL;
}

/* --- maintenance ----------------------------------------------------------------------------- */

/* Retention drops every server's old chunks (any server may: the DELETE is idempotent); the
 * request log is trimmed for this instance only. */
static fj_status retention(void *ud, int64_t before_ns, fj_err *err)
{
    char b0[24];
    const char *vals[] = {num(b0, before_ns)};
    FJ_TRY(fj_pg_run(ud, FJ_PG_TS_RETENTION, 1, vals, NULL, "retention", err));
    FJ_TRY(fj_pg_run(ud, FJ_PG_TS_STRING_CHUNKS_RETENTION, 1, vals, NULL, "retention of string chunks", err));
    return fj_pg_run(ud, FJ_PG_TS_STRINGS_RETENTION, 1, vals, NULL, "retention of string points", err);
}

static fj_status trim(void *ud, uint64_t below_lsn, int64_t received_before, fj_err *err)
{
    fj_store *s = ud;
    char b0[24], b1[24], b2[24];
    const char *vals[] = {num(b0, s->ts->instance_id), num(b1, (int64_t)below_lsn), num(b2, received_before)};
    return fj_pg_run(s, FJ_PG_TS_LOG_TRIM, 3, vals, NULL, "trim request log", err);
}

static fj_status retention_and_trim(fj_store *s, fj_err *err)
{
    static const fj_tsw_cleanup_ops ops = {retention, trim};
    return fj_tsw_cleanup(&s->ts->w, &ops, s, wall_ns(), fj_mono_ns(), err);
}

/* --- packing string points (docs/metrics.md, "Field types"; storage/ts/strchunk.h) ------------- */

#define PACK_EVERY (600 * FJ_TSW_NS) /* a pass at most this often (and once soon after the start) */

/* A bytea cell's bytes (hex text in text mode) added to s as the point at t. */
static fj_status add_bytea(fj_ts_strs *s, int64_t t, const PGresult *r, int row, int col, fj_err *err)
{
    size_t n = 0;
    unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
    fj_status st = b ? fj_ts_strs_add(s, t, (const char *)b, n) : FJ_ENOMEM;
    PQfreemem(b);
    return st == FJ_OK ? FJ_OK : oom(err);
}

/* One series: its rows older than cutoff (locked: a server re-sending one waits, then writes a
 * new row, the later write) merged over the chunks they overlap into one chunk. */
static fj_status pack_series(fj_store *s, const char *id, int64_t cutoff, fj_ts_strs *rows, fj_ts_strs *old,
                             fj_ts_strs *tmp, fj_buf *blob, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    char b1[24], b2[24], b3[24];
    const char *rv[] = {id, num(b1, cutoff)};
    PGresult *r;
    rows->n = rows->data_len = old->n = old->data_len = 0;
    FJ_TRY(fj_pg_run(s, FJ_PG_TS_PACK_ROWS, 2, rv, &r, "read string points to pack", err));
    fj_buf ts;
    fj_buf_init(&ts, (size_t)1 << 30);
    fj_status st = fj_buf_puts(&ts, "{");
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        int64_t tt = fj_pg_int(r, i, 0);
        st = add_bytea(rows, tt, r, i, 1, err);
        if (st == FJ_OK)
            st = fj_buf_printf(&ts, "%s%lld", i ? "," : "", (long long)tt);
    }
    PQclear(r);
    if (st == FJ_OK)
        st = fj_buf_puts(&ts, "}");
    if (st != FJ_OK || rows->n < 2) {
        fj_buf_free(&ts);
        return st == FJ_OK ? FJ_OK : oom(err);
    }
    const char *cv[] = {id, num(b1, rows->t[0]), num(b2, rows->t[rows->n - 1])};
    if ((st = fj_pg_run(s, FJ_PG_TS_PACK_CHUNKS, 3, cv, &r, "read string chunks to pack", err)) == FJ_OK) {
        for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
            size_t n = 0;
            unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 0), &n);
            st = b ? fj_ts_strchunk_decode(t->codec, b, n, tmp) : FJ_ENOMEM;
            PQfreemem(b);
            for (size_t k = 0; st == FJ_OK && k < tmp->n; k++)
                st = fj_ts_strs_add(old, tmp->t[k], tmp->data + tmp->off[k], tmp->len[k]);
            if (st != FJ_OK)
                st = fj_err_set(err, st, "db", "packing the strings of series %s: %s", id,
                                st == FJ_ENOMEM ? "out of memory" : "a stored chunk is corrupt");
        }
        PQclear(r);
    }
    int64_t first = 0, last = 0;
    size_t n = 0;
    blob->len = 0;
    fj_status ms = st == FJ_OK ? fj_ts_strchunk_merge(t->codec, old, rows, blob, &first, &last, &n) : st;
    if (st == FJ_OK && ms != FJ_OK && ms != FJ_EINVAL)
        st = oom(err);
    if (st == FJ_OK && ms == FJ_OK) { /* FJ_EINVAL: too many points for one chunk, left as rows */
        fj_buf hex;
        fj_buf_init(&hex, (size_t)1 << 31);
        st = fj_buf_puts(&hex, "\\x");
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; st == FJ_OK && i < blob->len; i++) {
            unsigned char c = (unsigned char)blob->data[i];
            char two[2] = {digits[c >> 4], digits[c & 15]};
            st = fj_buf_append(&hex, two, 2);
        }
        const char *dr[] = {id, ts.data};
        const char *iv[] = {id, num(b1, last), num(b2, first), num(b3, (int64_t)n), hex.data};
        if (st != FJ_OK)
            st = oom(err);
        else if ((st = fj_pg_run(s, FJ_PG_TS_PACK_DEL_CHUNKS, 3, cv, NULL, "delete packed string chunks", err)) ==
                     FJ_OK &&
                 (st = fj_pg_run(s, FJ_PG_TS_PACK_DEL_ROWS, 2, dr, NULL, "delete packed string points", err)) == FJ_OK)
            st = fj_pg_run(s, FJ_PG_TS_PACK_INS, 5, iv, NULL, "insert a string chunk", err);
        fj_buf_free(&hex);
    }
    fj_buf_free(&ts);
    return st;
}

/* The string points older than the flush interval, packed series by series, in the writer's own
 * transaction; one server at a time (an advisory lock; the others skip the pass). */
static fj_status pack_strings(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t->codec && !(t->codec = fj_ts_codec_create()))
        return oom(err);
    PGresult *r;
    FJ_TRY(fj_pg_run(s, FJ_PG_TS_PACK_LOCK, 0, NULL, &r, "take the packing lock", err));
    bool got = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!got)
        return FJ_OK;
    char b[24];
    const char *vals[] = {num(b, wall_ns() - (t->w.flush_ns > 0 ? t->w.flush_ns : 12 * 3600 * FJ_TSW_NS))};
    FJ_TRY(fj_pg_run(s, FJ_PG_TS_PACK_SERIES, 1, vals, &r, "find string points to pack", err));
    int n = PQntuples(r);
    char (*ids)[24] = fj_calloc((size_t)n + 1, sizeof *ids);
    for (int i = 0; ids && i < n; i++)
        snprintf(ids[i], sizeof ids[i], "%s", PQgetvalue(r, i, 0));
    PQclear(r);
    if (!ids)
        return oom(err);
    fj_ts_strs rows = {0}, old = {0}, tmp = {0};
    fj_buf blob;
    fj_buf_init(&blob, (size_t)1 << 30);
    fj_status st = FJ_OK;
    int64_t cutoff = strtoll(vals[0], NULL, 10);
    for (int i = 0; i < n && st == FJ_OK; i++)
        st = pack_series(s, ids[i], cutoff, &rows, &old, &tmp, &blob, err);
    fj_ts_strs_free(&rows);
    fj_ts_strs_free(&old);
    fj_ts_strs_free(&tmp);
    fj_buf_free(&blob);
    fj_free(ids);
    return st;
}

fj_status fj_pg_ts_maintain(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t)
        return FJ_OK;
    int64_t now = fj_mono_ns();
    if (t->w.started)
        FJ_TRY(look_for_peers(s, now, err));
    fj_status st = fj_tsw_maintain(&t->w, now, false) ? own_txn(s, retention_and_trim, err) : FJ_OK;
    if (st == FJ_OK && t->w.started && (!t->last_pack || now - t->last_pack >= PACK_EVERY)) {
        t->last_pack = now;
        st = own_txn(s, pack_strings, err);
    }
    return st;
}

/* The writer's last transactions at close (fj_tsw_close). */
static fj_status last_txns(void *ud, fj_err *err)
{
    FJ_TRY(own_txn(ud, NULL, err));
    return own_txn(ud, retention_and_trim, err);
}

void fj_pg_ts_close(fj_store *s)
{
    struct fj_pg_ts *t = s->ts;
    if (!t)
        return;
    fj_tsw_close(&t->w, last_txns, s);
    fj_intern_clear(&t->keys);
    fj_pg_cols_free(&t->cols);
    fj_pg_cols_free(&t->drops);
    fj_pg_cols_free(&t->strs);
    fj_buf_free(&t->kbuf);
    PQclear(t->key_res);
    fj_free(t->ids);
    fj_free(t->refused);
    fj_free(t->instance);
    fj_ts_codec_destroy(t->codec);
    fj_free(t->blob);
    fj_free(t);
    s->ts = NULL;
}
