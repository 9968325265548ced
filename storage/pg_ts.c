/* pg_ts.c — line-protocol metrics in the PostgreSQL backend, writer side: this server's instance
 * (identity, advisory lock, request log, durable lsn), the time-series engine fed with series ids
 * from the database, the metrics part of a group commit, startup replay and maintenance. Reads are
 * in pg_ts_read.c; the schema in migrations/postgres/0002_metrics.sql.
 *
 * Durability is sqlite_ts.c's: a request's points go to request_log as a point record (rows of
 * this instance; ts_log.h) in the same transaction as they enter the engine, so an acknowledged point is in a committed
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
#include "pg_ts.h"

#include "alloc.h"
#include "cc.h"
#include "cc_json.h"
#include "log.h"
#include "timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL
#define DEFAULT_FLUSH_S (12 * 3600)
#define DEFAULT_MAX_BUFFERED ((size_t)16 << 20)
#define ZSTD_LEVEL 1        /* archived raw bodies (request-log-keep): speed first */
#define SEQ_SHIFT 40        /* chunk seq = (instance id << SEQ_SHIFT) + n */
#define MAX_INSTANCE_ID ((int64_t)1 << 22)
#define CHUNK_BATCH_BYTES ((size_t)32 << 20) /* hex of sealed chunks sent per statement, at most */
#define LOG_PAGE 64         /* request-log rows per replay query (TS_LOG_READ's LIMIT) */

#define TRY(expr)                                                                                        \
    do {                                                                                                 \
        fj_status try_st_ = (expr);                                                                      \
        if (try_st_ != FJ_OK)                                                                            \
            return try_st_;                                                                              \
    } while (0)

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
    TRY(fj_pg_run(s, FJ_PG_TS_INST_LOCK, 1, vals, &r, "take the instance lock", err));
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
    return (fj_ts_key){{q->cluster.p, q->cluster.n}, {q->host.p, q->host.n},       {q->metric.p, q->metric.n},
                       {q->type.p, q->type.n},       {q->type_id.p, q->type_id.n}, {q->stype.p, q->stype.n},
                       {q->stype_id.p, q->stype_id.n}};
}

/* Loads rows (id, cluster, host, metric, type, type_id, stype, stype_id) into the engine. */
static fj_status load_rows(struct fj_pg_ts *t, const PGresult *r, fj_err *err)
{
    for (int i = 0; i < PQntuples(r); i++) {
        fj_ts_str f[7];
        for (int k = 0; k < 7; k++)
            f[k] = (fj_ts_str){PQgetvalue(r, i, k + 1), (size_t)PQgetlength(r, i, k + 1)};
        fj_ts_key key = {f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
        fj_status st = fj_ts_engine_load_series(t->eng, (uint32_t)fj_pg_int(r, i, 0), &key);
        if (st != FJ_OK)
            return fj_err_set(err, st, "db", "loading series %lld failed", (long long)fj_pg_int(r, i, 0));
    }
    return FJ_OK;
}

/* First pass: ids[i] for the points the engine knows, 0 for the others, whose distinct keys are
 * added as rows of t->cols (7 text columns, reset by the caller). */
static fj_status collect_unknown(struct fj_pg_ts *t, const fj_metric_point *p, size_t n, uint32_t *ids,
                                 size_t *n_unknown, fj_err *err)
{
    fj_pg_cols *c = &t->cols;
    for (size_t i = 0; i < n; i++) {
        fj_ts_key k = key_of(&p[i]);
        if (fj_ts_series_find(t->eng, &k, &ids[i]) == FJ_OK)
            continue;
        ids[i] = 0;
        const fj_ts_str *f = &k.cluster;
        size_t total = 0;
        fj_buf_reset(&t->kbuf);
        for (int j = 0; j < 7; j++) {
            unsigned char len[2] = {(unsigned char)(f[j].n >> 8), (unsigned char)f[j].n};
            total += f[j].n;
            if (total > FJ_TS_KEY_MAX)
                return fj_err_set(err, FJ_EINVAL, "db", "the series key of metric '%.*s' is longer than %d bytes",
                                  (int)(k.metric.n > 64 ? 64 : k.metric.n), k.metric.p, FJ_TS_KEY_MAX);
            if (fj_buf_append(&t->kbuf, len, 2) != FJ_OK || (f[j].n && fj_buf_append(&t->kbuf, f[j].p, f[j].n) != FJ_OK))
                return oom(err);
        }
        if (fj_pg_map_get(&t->keys, 0, t->kbuf.data, t->kbuf.len))
            continue;
        if (fj_pg_map_put(&t->keys, 0, t->kbuf.data, t->kbuf.len, 1) != FJ_OK)
            return oom(err);
        for (int j = 0; j < 7; j++)
            fj_pg_textn(c, j, f[j].n ? f[j].p : "", f[j].n);
        fj_pg_row(c, 0);
        ++*n_unknown;
    }
    return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
}

/* Adds the keys collected in t->cols (committed on their own: outside any transaction), reads
 * their ids back, whoever added them, and loads them into the engine. */
static fj_status fetch_unknown(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    const char *vals[7];
    if (fj_pg_cols_finish(&t->cols, vals) != FJ_OK)
        return cols_failed(&t->cols, err);
    TRY(fj_pg_ts_run1(s, FJ_PG_TS_SERIES_ADD, 7, vals, NULL, "add series", err));
    PGresult *r;
    TRY(fj_pg_ts_run1(s, FJ_PG_TS_SERIES_GET, 7, vals, &r, "look up series", err));
    fj_status st = load_rows(t, r, err);
    PQclear(r);
    return st;
}

/* Second pass: the ids of the points that were unknown. */
static fj_status fill_unknown(struct fj_pg_ts *t, const fj_metric_point *p, size_t n, uint32_t *ids, fj_err *err)
{
    for (size_t i = 0; i < n; i++) {
        fj_ts_key k = key_of(&p[i]);
        if (!ids[i] && fj_ts_series_find(t->eng, &k, &ids[i]) != FJ_OK)
            return fj_err_set(err, FJ_EINTERNAL, "db", "series of metric '%.*s' not found after adding it",
                              (int)(k.metric.n > 64 ? 64 : k.metric.n), k.metric.p);
    }
    return FJ_OK;
}

/* ids for the points of one decoded body (replay). */
static fj_status resolve_points(fj_store *s, const fj_metric_point *p, size_t n, uint32_t *ids, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    size_t unknown = 0;
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = 7;
    fj_pg_map_clear(&t->keys);
    TRY(collect_unknown(t, p, n, ids, &unknown, err));
    if (unknown)
        TRY(fetch_unknown(s, err));
    return unknown ? fill_unknown(t, p, n, ids, err) : FJ_OK;
}

static fj_status append_points(struct fj_pg_ts *t, const fj_metric_point *p, const uint32_t *ids, size_t n,
                               fj_err *err)
{
    for (size_t off = 0; off < n; off += FJ_PG_TS_SLICE) {
        size_t k = n - off < FJ_PG_TS_SLICE ? n - off : FJ_PG_TS_SLICE;
        for (size_t i = 0; i < k; i++) {
            t->t[i] = p[off + i].t;
            t->v[i] = p[off + i].v;
        }
        fj_status st = fj_ts_append_ids(t->eng, ids + off, t->t, t->v, k, NULL);
        if (st != FJ_OK)
            return fj_err_set(err, st, "db", "appending metric points failed");
    }
    return FJ_OK;
}

static fj_status grow_ids(struct fj_pg_ts *t, size_t need, fj_err *err)
{
    if (need <= t->cap_ids)
        return FJ_OK;
    size_t cap = t->cap_ids ? t->cap_ids : 1024;
    while (cap < need)
        cap *= 2;
    uint32_t *v = fj_realloc(t->ids, cap * sizeof *v);
    if (!v)
        return oom(err);
    t->ids = v;
    t->cap_ids = cap;
    return FJ_OK;
}

/* --- clusters of messages and jobs ----------------------------------------------------------- */

static int64_t cluster_id(fj_store *s, const char *name)
{
    return fj_pg_map_get(&s->names, FJ_PG_NS_CLUSTER, name, strlen(name));
}

static void need_cluster(fj_store *s, const char *name)
{
    struct fj_pg_ts *t = s->ts;
    size_t len = strlen(name);
    if (cluster_id(s, name) || fj_pg_map_get(&t->keys, FJ_PG_NS_CLUSTER, name, len))
        return;
    if (fj_pg_map_put(&t->keys, FJ_PG_NS_CLUSTER, name, len, 1) != FJ_OK) {
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
    fj_pg_map_clear(&t->keys);
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
    const char *vals[1];
    if (fj_pg_cols_finish(&t->cols, vals) != FJ_OK)
        return cols_failed(&t->cols, err);
    TRY(fj_pg_ts_run1(s, FJ_PG_CLUSTER_INS, 1, vals, NULL, "intern clusters", err));
    PGresult *r;
    TRY(fj_pg_ts_run1(s, FJ_PG_CLUSTER_GET, 1, vals, &r, "look up clusters", err));
    fj_status st = FJ_OK;
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 1);
        if (fj_pg_map_put(&s->names, FJ_PG_NS_CLUSTER, name, strlen(name), fj_pg_int(r, i, 0)) != FJ_OK)
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
    TRY(fj_pg_ts_start(s, NULL, err));
    struct fj_pg_ts *t = s->ts;
    t->n_ids = 0;
    TRY(grow_ids(t, n_points + 1, err));
    TRY(intern_clusters(s, batches, n_batches, err));
    /* Every unknown key of the group in one statement. */
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = 7;
    fj_pg_map_clear(&t->keys);
    size_t unknown = 0, off = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            TRY(collect_unknown(t, e->u.metrics.points, e->u.metrics.n_points, t->ids + off, &unknown, err));
            off += e->u.metrics.n_points;
        }
    if (unknown) {
        TRY(fetch_unknown(s, err));
        off = 0;
        for (size_t b = 0; b < n_batches; b++)
            for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++) {
                const fj_envelope *e = &batches[b]->envs[i];
                if (e->kind != FJ_KIND_METRICS)
                    continue;
                TRY(fill_unknown(t, e->u.metrics.points, e->u.metrics.n_points, t->ids + off, err));
                off += e->u.metrics.n_points;
            }
    }
    t->n_ids = n_points;
    return FJ_OK;
}

/* request_log.unit_ns of a point record (a raw body's is 0 or a positive unit). */
#define POINT_RECORD (-1)

/* Adds one request-log row to t->cols (7 columns) under the next lsn: by default a point record of
 * the envelope's points and their series ids (ts_log.h; size holds the number of points), with
 * request-log-keep the raw body (an archive that can be decoded again). As in sqlite_ts.c. */
static fj_status log_row(struct fj_pg_ts *t, const fj_metrics *m, const uint32_t *ids, uint64_t *lsn,
                         fj_err *err)
{
    if (!(t->keep_ns && m->raw)) {
        if (!t->rec && !(t->rec = fj_ts_log_create()))
            return oom(err);
        fj_ts_log_begin(t->rec);
        for (size_t off = 0; off < m->n_points; off += FJ_PG_TS_SLICE) {
            size_t k = m->n_points - off < FJ_PG_TS_SLICE ? m->n_points - off : FJ_PG_TS_SLICE;
            for (size_t i = 0; i < k; i++) {
                t->t[i] = m->points[off + i].t;
                t->v[i] = m->points[off + i].v;
            }
            if (fj_ts_log_add(t->rec, ids + off, t->t, t->v, k) != FJ_OK)
                return oom(err);
        }
        const void *rec;
        size_t len;
        if (fj_ts_log_finish(t->rec, &rec, &len) != FJ_OK)
            return oom(err);
        fj_pg_cols *c = &t->cols;
        *lsn = t->next_lsn++;
        fj_pg_u64(c, 0, *lsn);
        fj_pg_i64(c, 1, m->arrival_ns);
        fj_pg_text(c, 2, NULL);
        fj_pg_i64(c, 3, POINT_RECORD);
        fj_pg_i64(c, 4, 0);
        fj_pg_u64(c, 5, m->n_points);
        fj_pg_bytea(c, 6, rec, len);
        fj_pg_row(c, 0);
        return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
    }
    size_t bound = ZSTD_compressBound(m->raw_len);
    if (bound > t->zcap) {
        void *nb = fj_realloc(t->zbuf, bound);
        if (!nb)
            return oom(err);
        t->zbuf = nb;
        t->zcap = bound;
    }
    if (!t->zc && !(t->zc = ZSTD_createCCtx()))
        return oom(err);
    size_t zn = ZSTD_compressCCtx(t->zc, t->zbuf, t->zcap, m->raw, m->raw_len, ZSTD_LEVEL);
    if (ZSTD_isError(zn))
        return fj_err_set(err, FJ_EINTERNAL, "db", "zstd: %s", ZSTD_getErrorName(zn));
    fj_pg_cols *c = &t->cols;
    *lsn = t->next_lsn++;
    fj_pg_u64(c, 0, *lsn);
    fj_pg_i64(c, 1, m->arrival_ns);
    fj_pg_text(c, 2, m->default_cluster);
    fj_pg_i64(c, 3, m->unit_ns);
    fj_pg_i64(c, 4, m->max_future_ns);
    fj_pg_u64(c, 5, m->raw_len);
    fj_pg_bytea(c, 6, t->zbuf, zn);
    fj_pg_row(c, 0);
    return c->st == FJ_OK ? FJ_OK : cols_failed(c, err);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
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
                uint64_t h = fnv1a(1469598103934665603ull, msg->tags, strlen(msg->tags));
                h = fnv1a(h, "\0", 1);
                h = fnv1a(h, msg->payload, msg->payload_len);
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
    TRY(fj_pg_run(s, FJ_PG_CC_MSG_INS, 8, vals, &r, "insert events", err));
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

/* cc-backend's rules, as sqlite_ts.c applies them: a start is a duplicate when the job id already
 * started on the cluster less than a day before; a stop needs the job (its latest start, or the
 * given startTime) running and stopTime >= startTime. Outcomes go to the record's result; the
 * transaction goes on either way. Statement by statement: a stop may follow its start in the
 * same group. Two servers starting one job at once: the unique key takes one, the other is a
 * duplicate; a stop racing another is refused by the state check of the UPDATE. */
static fj_status write_job(fj_store *s, const fj_cc_job *j, fj_write_count *cnt, fj_err *err)
{
    int64_t cid = cluster_id(s, j->cluster);
    if (!cid)
        return fj_err_set(err, FJ_EINTERNAL, "db", "cluster '%s' was not interned", j->cluster);
    fj_cc_job_result *res = j->result;
    char bc[24], bj[24], bt[24];
    PGresult *r;
    if (j->op == FJ_CC_JOB_START) {
        const char *dv[] = {num(bc, cid), num(bj, (int64_t)j->job_id), num(bt, j->start_time)};
        TRY(fj_pg_run(s, FJ_PG_CC_JOB_DUP, 3, dv, &r, "find job", err));
        int64_t old = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
        PQclear(r);
        if (!old) {
            char b1[24], b2[24], b3[24];
            const char *iv[] = {bc, bj, bt, j->user, j->project, j->partition, j->subcluster,
                                num(b1, (int64_t)j->num_nodes), num(b2, (int64_t)j->num_hwthreads),
                                num(b3, (int64_t)j->num_acc), j->hosts, j->payload};
            TRY(fj_pg_run(s, FJ_PG_CC_JOB_INS, 12, iv, &r, "insert job", err));
            int64_t id = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
            PQclear(r);
            if (id) {
                cnt->inserted++;
                if (res) {
                    res->status = FJ_OK;
                    res->id = id;
                    res->start_time = j->start_time;
                    snprintf(res->state, sizeof res->state, "running");
                }
                return FJ_OK;
            }
        }
        cnt->duplicates++;
        fj_cc_job_duplicate(res, j, old);
        return FJ_OK;
    }
    const char *fv[] = {num(bc, cid), num(bj, (int64_t)j->job_id), num(bt, j->start_time)};
    TRY(fj_pg_run(s, FJ_PG_CC_JOB_FIND, 3, fv, &r, "find job", err));
    if (!PQntuples(r)) {
        PQclear(r);
        cnt->duplicates++;
        fj_cc_job_unknown(res, j);
        return FJ_OK;
    }
    int64_t id = fj_pg_int(r, 0, 0), start = fj_pg_int(r, 0, 1);
    char state[32];
    snprintf(state, sizeof state, "%s", PQgetvalue(r, 0, 2));
    PQclear(r);
    if (res) {
        res->id = id;
        res->start_time = start;
        snprintf(res->state, sizeof res->state, "%s", state);
    }
    if (strcmp(state, "running") != 0) {
        cnt->duplicates++;
        fj_cc_job_not_running(res, j, state);
        return FJ_OK;
    }
    if (j->stop_time < start) {
        cnt->duplicates++;
        fj_cc_job_stop_before_start(res, j);
        return FJ_OK;
    }
    char bs[24];
    const char *uv[] = {num(bc, id), num(bs, j->stop_time), j->state};
    TRY(fj_pg_run(s, FJ_PG_CC_JOB_STOP, 3, uv, &r, "stop job", err));
    bool stopped = PQntuples(r) == 1;
    PQclear(r);
    if (!stopped) { /* another server stopped it since the lookup */
        cnt->duplicates++;
        fj_cc_job_not_running(res, j, "stopped");
        return FJ_OK;
    }
    cnt->inserted++;
    if (res) {
        res->status = FJ_OK;
        res->stop_time = j->stop_time;
        snprintf(res->state, sizeof res->state, "%s", j->state);
    }
    return FJ_OK;
}

/* --- sealed chunks and the instance's state, right before COMMIT ----------------------------- */

static fj_status send_chunks(fj_store *s, fj_err *err)
{
    fj_pg_cols *c = &s->ts->cols;
    if (!c->nrows)
        return FJ_OK;
    const char *vals[6];
    if (fj_pg_cols_finish(c, vals) != FJ_OK)
        return cols_failed(c, err);
    fj_status st = fj_pg_run(s, FJ_PG_TS_CHUNK_INS, 6, vals, NULL, "insert chunks", err);
    fj_pg_cols_reset(c);
    c->ncols = 6;
    return st;
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

static fj_status precommit(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t || !t->eng || (!t->dirty && !t->own))
        return FJ_OK; /* nothing of ours changed */
    if (t->dirty) {
        fj_pg_cols_reset(&t->cols);
        t->cols.ncols = 6;
        sink_ctx x = {s, err};
        fj_ts_sink sink = {sink_series, sink_chunk, &x};
        TRY(fj_ts_engine_emit(t->eng, &sink));
        TRY(send_chunks(s, err));
    }
    /* Conservative: chunks handed in this transaction still count until committed. */
    uint64_t d = fj_ts_engine_durable_lsn(t->eng);
    if (d == UINT64_MAX)
        d = t->next_lsn;
    if (d == t->durable_saved && t->next_lsn == t->next_saved && t->seq_max == t->seq_saved)
        return FJ_OK;
    char b0[24], b1[24], b2[24], b3[24];
    const char *vals[] = {num(b0, t->instance_id), num(b1, (int64_t)d), num(b2, (int64_t)t->next_lsn),
                          num(b3, (int64_t)t->seq_max)};
    TRY(fj_pg_run(s, FJ_PG_TS_INST_PUT, 4, vals, NULL, "save the durable lsn", err));
    t->durable_saved = d;
    t->next_saved = t->next_lsn;
    t->seq_saved = t->seq_max;
    return FJ_OK;
}

fj_status fj_pg_ts_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                         fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    size_t n_points;
    if (!has_metrics(batches, n_batches, &n_points)) {
        if (!t || !t->started || !t->dirty)
            return FJ_OK;
        /* chunks sealed by a group that rolled back: they go with this one */
        TRY(ensure_lock(s, FJ_EBUSY, err));
        return precommit(s, err);
    }
    if (!t || !t->started || t->n_ids != n_points)
        return fj_err_set(err, FJ_EINTERNAL, "db", "metrics written without fj_pg_ts_prepare");
    TRY(ensure_lock(s, FJ_EBUSY, err));
    t->dirty = true;
    /* Request-log rows of the whole group in one statement; points into the engine, each
     * envelope's tagged with its row's lsn. */
    fj_pg_cols_reset(&t->cols);
    t->cols.ncols = 7;
    size_t k = 0, off = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            if (e->kind != FJ_KIND_METRICS)
                continue;
            const fj_metrics *m = &e->u.metrics;
            if (m->n_points) {
                uint64_t lsn = 0;
                TRY(log_row(t, m, t->ids + off, &lsn, err));
                fj_ts_engine_set_lsn(t->eng, lsn);
            }
            TRY(append_points(t, m->points, t->ids + off, m->n_points, err));
            off += m->n_points;
            counts[k].inserted += m->n_points;
        }
    if (t->cols.nrows) {
        const char *vals[8];
        char bi[24];
        vals[0] = num(bi, t->instance_id);
        if (fj_pg_cols_finish(&t->cols, vals + 1) != FJ_OK)
            return cols_failed(&t->cols, err);
        TRY(fj_pg_run(s, FJ_PG_TS_LOG_INS, 8, vals, NULL, "request log", err));
    }
    TRY(write_messages(s, batches, n_batches, counts, err));
    k = 0;
    for (size_t b = 0; b < n_batches; b++)
        for (size_t i = 0; batches[b] && i < batches[b]->n_envs; i++, k++) {
            const fj_envelope *e = &batches[b]->envs[i];
            for (size_t j = 0; e->kind == FJ_KIND_METRICS && j < e->u.metrics.n_jobs; j++)
                TRY(write_job(s, &e->u.metrics.jobs[j], &counts[k], err));
        }
    return precommit(s, err);
}

void fj_pg_ts_end(fj_store *s, bool committed)
{
    struct fj_pg_ts *t = s->ts;
    if (!t || !t->eng)
        return;
    t->n_ids = 0;
    if (committed) {
        if (t->dirty)
            fj_ts_engine_committed(t->eng);
        t->dirty = false;
    } else {
        fj_ts_engine_rolled_back(t->eng);
        t->durable_saved = t->next_saved = t->seq_saved = 0; /* unknown: write them again */
    }
}

/* One transaction of the writer's own: emit what is sealed, optionally more work in between. */
static fj_status own_txn(fj_store *s, fj_status (*more)(fj_store *s, fj_err *err), fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    fj_status st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = ensure_lock(s, FJ_EBUSY, err);
    if (st == FJ_OK) {
        t->own = true;
        st = precommit(s, err);
        t->own = false;
    }
    if (st == FJ_OK && more)
        st = more(s, err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, "COMMIT", "commit", err);
    if (st != FJ_OK)
        fj_pg_rollback(s);
    fj_pg_ts_end(s, st == FJ_OK);
    return st;
}

/* --- startup: instance, catalog, replay ------------------------------------------------------ */

/* A point record back into the engine: its series were committed before it (fj_pg_ts_prepare)
 * and loaded with the catalog. */
static fj_status replay_points(fj_store *s, const PGresult *r, int i, uint64_t lsn, size_t *n_pts, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (lsn >= t->next_lsn)
        t->next_lsn = lsn + 1;
    if (!t->rec && !(t->rec = fj_ts_log_create()))
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    size_t zlen = 0;
    unsigned char *z = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 6), &zlen);
    if (!z)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    const uint32_t *ids;
    const int64_t *times;
    const double *values;
    size_t n = 0, done = 0;
    fj_status st = fj_ts_log_decode(t->rec, z, zlen, &ids, &times, &values, &n);
    PQfreemem(z);
    if (st == FJ_ENOMEM)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    fj_ts_engine_set_lsn(t->eng, lsn);
    if (st == FJ_OK)
        st = fj_ts_append_ids(t->eng, ids, times, values, n, &done);
    *n_pts += done;
    if (st == FJ_ENOMEM)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    if (st != FJ_OK)
        fj_warn("metrics: request log entry %llu of instance '%s' is corrupt or names an unknown series; %zu of "
                "its points replayed", (unsigned long long)lsn, t->instance, done);
    return FJ_OK;
}

/* Decodes one request-log row's body and appends its points under its lsn. */
static fj_status replay_row(fj_store *s, const PGresult *r, int i, char **body, size_t *cap, size_t *n_pts,
                            fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    uint64_t lsn = (uint64_t)fj_pg_int(r, i, 0);
    if (fj_pg_int(r, i, 3) == POINT_RECORD)
        return replay_points(s, r, i, lsn, n_pts, err);
    size_t size = (size_t)fj_pg_int(r, i, 5);
    if (size + 1 > *cap) {
        char *nb = fj_realloc(*body, size + 1);
        if (!nb)
            return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
        *body = nb;
        *cap = size + 1;
    }
    size_t zlen = 0;
    unsigned char *z = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 6), &zlen);
    if (!z)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    size_t got = ZSTD_decompressDCtx(t->zd, *body, *cap, z, zlen);
    PQfreemem(z);
    if (lsn >= t->next_lsn)
        t->next_lsn = lsn + 1;
    if (ZSTD_isError(got) || got != size) {
        fj_warn("metrics: request log entry %llu of instance '%s' is corrupt; skipped", (unsigned long long)lsn,
                t->instance);
        return FJ_OK;
    }
    fj_cc_opts o = {.default_cluster = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
                    .unit_ns = fj_pg_int(r, i, 3),
                    .arrival_ns = fj_pg_int(r, i, 1),
                    .max_future_ns = fj_pg_int(r, i, 4),
                    .points_only = true};
    fj_batch *b = fj_batch_new();
    if (!b || fj_cc_decode(*body, got, &o, b, NULL, NULL, NULL, err) != FJ_OK) {
        fj_batch_free(b);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory replaying the request log");
    }
    const fj_metrics *m = &b->envs[0].u.metrics;
    fj_status st = grow_ids(t, m->n_points + 1, err);
    if (st == FJ_OK)
        st = resolve_points(s, m->points, m->n_points, t->ids, err);
    if (st == FJ_OK) {
        fj_ts_engine_set_lsn(t->eng, lsn);
        st = append_points(t, m->points, t->ids, m->n_points, err);
    }
    *n_pts += m->n_points;
    fj_batch_free(b);
    return st;
}

static fj_status replay(fj_store *s, uint64_t from_lsn, size_t *n_req, size_t *n_pts, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t->zd && !(t->zd = ZSTD_createDCtx()))
        return oom(err);
    char *body = NULL;
    size_t cap = 0;
    fj_status st = FJ_OK;
    for (uint64_t lsn = from_lsn; st == FJ_OK;) {
        char b0[24], b1[24];
        const char *vals[] = {num(b0, t->instance_id), num(b1, (int64_t)lsn)};
        PGresult *r;
        if ((st = fj_pg_ts_run1(s, FJ_PG_TS_LOG_READ, 2, vals, &r, "replay", err)) != FJ_OK)
            break;
        int rows = PQntuples(r);
        for (int i = 0; st == FJ_OK && i < rows; i++) {
            st = replay_row(s, r, i, &body, &cap, n_pts, err);
            lsn = (uint64_t)fj_pg_int(r, i, 0) + 1;
            ++*n_req;
        }
        PQclear(r);
        if (rows < LOG_PAGE)
            break;
    }
    fj_free(body);
    return st;
}

/* Registers the instance (first start) and reads its state; takes its lock. */
static fj_status open_instance(fj_store *s, int64_t *durable, int64_t *next, int64_t *seq, int64_t *max_lsn,
                               fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    const char *vals[] = {t->instance};
    TRY(fj_pg_ts_run1(s, FJ_PG_TS_INST_ADD, 1, vals, NULL, "register the instance", err));
    PGresult *r;
    TRY(fj_pg_ts_run1(s, FJ_PG_TS_INST_GET, 1, vals, &r, "read the instance", err));
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
    if (t->started)
        return FJ_OK;
    static const fj_store_opts defaults = {0};
    if (!o)
        o = &defaults;
    fj_free(t->instance);
    t->instance = o->ts_instance && *o->ts_instance ? fj_strdup(o->ts_instance) : default_instance();
    if (!t->instance)
        return oom(err);
    t->lock_pid = 0;
    int64_t durable = 0, next = 0, seq = 0, max_lsn = 0;
    TRY(open_instance(s, &durable, &next, &seq, &max_lsn, err));
    int64_t base = t->instance_id << SEQ_SHIFT;
    fj_ts_opts eo = {
        .seal_points = o->ts_seal_points,
        .seal_age_ns = o->ts_seal_age_s > 0 ? o->ts_seal_age_s * NS : 0,
        .max_buffered_points = o->ts_max_buffered_points ? o->ts_max_buffered_points : DEFAULT_MAX_BUFFERED,
        .seq_start = (uint64_t)(seq > base ? seq : base) + 1,
    };
    fj_status st = fj_ts_engine_open(&eo, &t->eng);
    if (st != FJ_OK)
        return fj_err_set(err, st, "metrics", "cannot open the time-series engine (bad options?)");
    t->retention_ns = o->ts_retention_s > 0 ? o->ts_retention_s * NS : 0;
    t->flush_ns = (o->ts_flush_interval_s > 0 ? o->ts_flush_interval_s : DEFAULT_FLUSH_S) * NS;
    t->keep_ns = o->ts_log_keep_s > 0 ? o->ts_log_keep_s * NS : 0;
    t->next_lsn = (uint64_t)(next > max_lsn ? next : max_lsn + 1);
    if (t->next_lsn < 1)
        t->next_lsn = 1;
    t->durable_saved = (uint64_t)durable;
    t->next_saved = (uint64_t)next;
    t->seq_max = t->seq_saved = (uint64_t)seq;
    t->last_maint = t->last_flush = t->last_retention = fj_mono_ns();
    PGresult *r = NULL;
    size_t n_req = 0, n_pts = 0;
    if ((st = fj_pg_ts_run1(s, FJ_PG_TS_SERIES_ALL, 0, NULL, &r, "load series", err)) != FJ_OK ||
        (st = load_rows(t, r, err)) != FJ_OK)
        goto fail;
    PQclear(r);
    r = NULL;
    if ((st = replay(s, (uint64_t)durable, &n_req, &n_pts, err)) != FJ_OK)
        goto fail;
    t->started = true;
    t->dirty = true;
    if ((st = own_txn(s, NULL, err)) != FJ_OK)
        goto fail;
    fj_ts_stats ss;
    fj_ts_engine_stats(t->eng, &ss);
    fj_info("metrics: instance '%s' (%lld); %zu series; replayed %zu logged requests (%zu points) from lsn %lld",
            t->instance, (long long)t->instance_id, ss.series, n_req, n_pts, (long long)durable);
    return FJ_OK;
fail:
    PQclear(r);
    t->started = false;
    fj_ts_engine_close(t->eng);
    t->eng = NULL;
    return st;
}

fj_ts_engine *fj_pg_ts_engine(fj_store *s)
{
    return s->ts && s->ts->started ? s->ts->eng : NULL;
}

/* --- maintenance ----------------------------------------------------------------------------- */

/* How often retention runs: a quarter of the retention, between 1 s and 10 min. */
static int64_t retention_every(const struct fj_pg_ts *t)
{
    int64_t every = t->retention_ns / 4;
    return every > 600 * NS ? 600 * NS : every < NS ? NS : every;
}

/* Retention drops every server's old chunks (any server may: the DELETE is idempotent); the
 * request log is trimmed for this instance only. */
static fj_status retention_and_trim(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    int64_t now = wall_ns(), mono = fj_mono_ns();
    char b0[24], b1[24], b2[24];
    if (t->retention_ns && mono - t->last_retention >= retention_every(t)) {
        t->last_retention = mono;
        const char *vals[] = {num(b0, now - t->retention_ns)};
        TRY(fj_pg_run(s, FJ_PG_TS_RETENTION, 1, vals, NULL, "retention", err));
    }
    if (t->durable_saved > t->trimmed_below && (!t->keep_ns || mono - t->last_trim >= 60 * NS)) {
        t->last_trim = mono;
        const char *vals[] = {num(b0, t->instance_id), num(b1, (int64_t)t->durable_saved),
                              num(b2, t->keep_ns ? now - t->keep_ns : INT64_MAX)};
        TRY(fj_pg_run(s, FJ_PG_TS_LOG_TRIM, 3, vals, NULL, "trim request log", err));
        if (!t->keep_ns)
            t->trimmed_below = t->durable_saved;
    }
    return FJ_OK;
}

fj_status fj_pg_ts_maintain(fj_store *s, fj_err *err)
{
    struct fj_pg_ts *t = s->ts;
    if (!t || !t->started)
        return FJ_OK;
    int64_t now = fj_mono_ns();
    if (now - t->last_maint < NS)
        return FJ_OK;
    t->last_maint = now;
    if (now - t->last_flush >= t->flush_ns) {
        t->last_flush = now;
        fj_ts_engine_flush(t->eng); /* what could not be sealed for lack of memory stays buffered */
        t->dirty = true;
    }
    /* Nothing sealed, the durable lsn unchanged and no retention due: no transaction at all. */
    uint64_t d = fj_ts_engine_durable_lsn(t->eng);
    if (d == UINT64_MAX)
        d = t->next_lsn;
    bool retention_due = t->retention_ns && now - t->last_retention >= retention_every(t);
    bool keep_due = t->keep_ns && now - t->last_trim >= 60 * NS; /* archived rows: trim once a minute */
    if (!t->dirty && d == t->durable_saved && (t->keep_ns || t->durable_saved <= t->trimmed_below) && !retention_due &&
        !keep_due)
        return FJ_OK;
    return own_txn(s, retention_and_trim, err);
}

void fj_pg_ts_close(fj_store *s)
{
    struct fj_pg_ts *t = s->ts;
    if (!t)
        return;
    if (t->eng && t->started) {
        fj_err err = {0};
        fj_ts_engine_flush(t->eng);
        t->dirty = true;
        if (own_txn(s, NULL, &err) != FJ_OK || own_txn(s, retention_and_trim, &err) != FJ_OK)
            fj_warn("metrics: final flush failed (the request log replays it): %s", err.message);
    }
    fj_ts_engine_close(t->eng);
    fj_pg_map_clear(&t->keys);
    fj_pg_cols_free(&t->cols);
    fj_buf_free(&t->kbuf);
    ZSTD_freeCCtx(t->zc);
    fj_ts_log_destroy(t->rec);
    ZSTD_freeDCtx(t->zd);
    fj_free(t->zbuf);
    fj_free(t->ids);
    fj_free(t->instance);
    fj_ts_codec_destroy(t->codec);
    fj_free(t->blob);
    fj_free(t);
    s->ts = NULL;
}
