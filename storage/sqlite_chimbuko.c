/* sqlite_chimbuko.c — Chimbuko in the SQLite backend (schema: migrations/sqlite/0005_chimbuko.sql):
 * the write of one envelope (a pserver packet, or provenance records of one collection) inside
 * the writer's group-commit transaction, and the query ops (runs, series, top, records). Statements
 * are prepared once per envelope or query: a packet a second does not need a cache. */
#include "sqlite_chimbuko.h"

#include "sqlite_query_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* --- writing ------------------------------------------------------------------------------- */

enum {
    W_NOTE,
    W_PACKET,
    W_RANK,
    W_STEP,
    W_FUNC_PREV,
    W_FUNC,
    W_COUNTER_PREV,
    W_COUNTER,
    W_METRICS,
    W_EVENT,
    W_META,
    W_PROFILE,
    W_FINAL_COUNTER,
    W__COUNT
};

static const char *const wsql[W__COUNT] = {
    [W_NOTE] = "INSERT OR IGNORE INTO notes(cluster_id,node_id,kind,time,path,note,detail) VALUES(?,0,?,?,?,?,?)",
    [W_PACKET] = "INSERT OR IGNORE INTO chimbuko_packets(cluster_id,run_id,created_at_ms,version,received,n_ranks,"
                 "n_steps,n_funcs,n_counters,n_metrics) VALUES(?,?,?,?,?,?,?,?,?,?)",
    [W_RANK] = "INSERT OR IGNORE INTO chimbuko_rank_stats(cluster_id,run_id,app,rank,created_at_ms,anomalies,steps,"
               "stats) VALUES(?,?,?,?,?,?,?,?)",
    [W_STEP] = "INSERT OR IGNORE INTO chimbuko_rank_steps(cluster_id,run_id,app,rank,step,created_at_ms,min_ts_us,"
               "max_ts_us,n_anomalies,score_max,score_mean,scores) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
    [W_FUNC_PREV] = "SELECT name_id,anomaly_stats,inclusive,exclusive FROM chimbuko_func_stats WHERE cluster_id=?1 "
                    "AND run_id=?2 AND app=?3 AND fid=?4 AND created_at_ms<=?5 ORDER BY created_at_ms DESC LIMIT 1",
    [W_FUNC] = "INSERT OR IGNORE INTO chimbuko_func_stats(cluster_id,run_id,app,fid,created_at_ms,name_id,anomalies,"
               "calls,anomaly_stats,inclusive,exclusive) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
    [W_COUNTER_PREV] = "SELECT stats FROM chimbuko_counter_stats WHERE cluster_id=?1 AND run_id=?2 AND app=?3 AND "
                       "counter_id=?4 AND created_at_ms<=?5 ORDER BY created_at_ms DESC LIMIT 1",
    [W_COUNTER] = "INSERT OR IGNORE INTO chimbuko_counter_stats(cluster_id,run_id,app,counter_id,created_at_ms,count,"
                  "total,stats) VALUES(?,?,?,?,?,?,?,?)",
    [W_METRICS] = "INSERT OR IGNORE INTO chimbuko_func_metrics(cluster_id,run_id,app,rank,fid,created_at_ms,name_id,"
                  "anomalies,score_max,severity_total,first_io_step,last_io_step,min_ts_us,max_ts_us,new_data,"
                  "all_data) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [W_EVENT] = "INSERT OR IGNORE INTO chimbuko_events(cluster_id,run_id,anomaly,pid,rid,io_step,idx,version,tid,fid,"
                "func_id,entry_us,exit_us,runtime_total_us,runtime_exclusive_us,io_step_tstart_us,io_step_tend_us,"
                "outlier_score,outlier_severity,host_id,is_gpu,gpu_thread,gpu_device,gpu_context,gpu_stream,"
                "gpu_parent_event,gpu_parent_tid,gpu_parent_error,algo,algo_params,call_stack,counter_events,"
                "event_window,node_state,gpu_parent) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [W_META] = "INSERT OR IGNORE INTO chimbuko_metadata(cluster_id,run_id,pid,rid,tid,descr_id,value) "
               "VALUES(?,?,?,?,?,?,?)",
    [W_PROFILE] = "INSERT OR IGNORE INTO chimbuko_profiles(cluster_id,run_id,app,fid,name_id,anomalies,"
                  "exclusive_total_us,inclusive,exclusive,anomaly_metrics) VALUES(?,?,?,?,?,?,?,?,?,?)",
    [W_FINAL_COUNTER] = "INSERT OR IGNORE INTO chimbuko_counters(cluster_id,run_id,app,counter_id,count,total,stats) "
                        "VALUES(?,?,?,?,?,?,?)",
};

enum { NOTE_DETAIL_MAX = 200 };

typedef struct cw {
    fj_store *s;
    fj_err *err;
    fj_write_count *cnt;
    int64_t cluster_id, run_id;
    sqlite3_stmt *st[W__COUNT];
} cw;

static sqlite3_stmt *stmt(cw *w, int id)
{
    if (!w->st[id]) {
        int rc = sqlite3_prepare_v2(w->s->db, wsql[id], -1, &w->st[id], NULL);
        if (rc != SQLITE_OK) {
            fj_sq_fail(w->s, rc, "prepare chimbuko statement", w->err);
            return NULL;
        }
    }
    sqlite3_reset(w->st[id]);
    sqlite3_clear_bindings(w->st[id]);
    return w->st[id];
}

#define STMT(var, id)                                                                                  \
    sqlite3_stmt *var = stmt(w, id);                                                                   \
    if (!var)                                                                                          \
        return FJ_EIO

#define TRY(x)                                                                                         \
    do {                                                                                               \
        fj_status st_ = (x);                                                                           \
        if (st_ != FJ_OK)                                                                              \
            return st_;                                                                                \
    } while (0)

/* Unsigned values past 2^63-1 are stored as REAL, as everywhere in the schema. */
static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX)
        sqlite3_bind_int64(st, i, (int64_t)v);
    else
        sqlite3_bind_double(st, i, (double)v);
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

/* Steps an insert; counts the row (counted: a row of the sender's records). */
static fj_status run_ins(cw *w, sqlite3_stmt *st, const char *what, bool counted, bool *added)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return fj_sq_fail(w->s, rc, what, w->err);
    bool a = sqlite3_changes(w->s->db) > 0;
    if (counted) {
        if (a)
            w->cnt->inserted++;
        else
            w->cnt->duplicates++;
    }
    if (added)
        *added = a;
    return FJ_OK;
}

static fj_status string_id(cw *w, const char *s, int64_t *id)
{
    return fj_sq_string_id(w->s, s ? s : "", false, id, w->err);
}

static fj_status write_notes(cw *w, const fj_envelope *e)
{
    for (size_t i = 0; i < e->n_notes; i++) {
        const fj_note *n = &e->notes[i];
        STMT(st, W_NOTE);
        sqlite3_bind_int64(st, 1, w->cluster_id);
        sqlite3_bind_text(st, 2, fj_kind_name(e->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, e->time);
        sqlite3_bind_text(st, 4, n->path ? n->path : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, n->kind ? n->kind : "", -1, SQLITE_STATIC);
        if (n->detail) {
            size_t len = strlen(n->detail);
            if (len > NOTE_DETAIL_MAX) { /* cut at a UTF-8 character boundary */
                len = NOTE_DETAIL_MAX;
                while (len > 0 && ((unsigned char)n->detail[len] & 0xC0) == 0x80)
                    len--;
            }
            sqlite3_bind_text(st, 6, n->detail, (int)len, SQLITE_STATIC);
        }
        TRY(run_ins(w, st, "insert note", false, NULL));
    }
    return FJ_OK;
}

static uint64_t packet_rows(const fj_cb_packet *p)
{
    uint64_t n = 1 + p->n_ranks + p->n_funcs + p->n_counters + p->n_metrics;
    for (size_t i = 0; i < p->n_ranks; i++)
        n += p->ranks[i].n_steps;
    return n;
}

/* Is the text in column col of st equal to s? */
static bool same_text(sqlite3_stmt *st, int col, const char *s)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t && s && strcmp(t, s) == 0;
}

static fj_status write_func(cw *w, int64_t at, const fj_cb_func *f)
{
    int64_t name_id;
    TRY(string_id(w, f->name, &name_id));
    /* Every packet repeats every function's cumulative profile: keep a point only when it
     * changed since the point before it. */
    STMT(prev, W_FUNC_PREV);
    sqlite3_bind_int64(prev, 1, w->cluster_id);
    sqlite3_bind_int64(prev, 2, w->run_id);
    bind_u64(prev, 3, f->app);
    bind_u64(prev, 4, f->fid);
    sqlite3_bind_int64(prev, 5, at);
    int rc = sqlite3_step(prev);
    bool same = rc == SQLITE_ROW && sqlite3_column_int64(prev, 0) == name_id &&
                same_text(prev, 1, f->anomalies.json) && same_text(prev, 2, f->inclusive.json) &&
                same_text(prev, 3, f->exclusive.json);
    sqlite3_reset(prev);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_fail(w->s, rc, "find previous function point", w->err);
    if (same) {
        w->cnt->duplicates++;
        return FJ_OK;
    }
    STMT(st, W_FUNC);
    sqlite3_bind_int64(st, 1, w->cluster_id);
    sqlite3_bind_int64(st, 2, w->run_id);
    bind_u64(st, 3, f->app);
    bind_u64(st, 4, f->fid);
    sqlite3_bind_int64(st, 5, at);
    sqlite3_bind_int64(st, 6, name_id);
    bind_real(st, 7, f->anomalies.accumulate);
    bind_u64(st, 8, f->inclusive.count);
    bind_text(st, 9, f->anomalies.json);
    bind_text(st, 10, f->inclusive.json);
    bind_text(st, 11, f->exclusive.json);
    return run_ins(w, st, "insert chimbuko function point", true, NULL);
}

static fj_status write_counter_point(cw *w, int64_t at, const fj_cb_counter *c)
{
    int64_t counter_id;
    TRY(string_id(w, c->counter, &counter_id));
    STMT(prev, W_COUNTER_PREV);
    sqlite3_bind_int64(prev, 1, w->cluster_id);
    sqlite3_bind_int64(prev, 2, w->run_id);
    bind_u64(prev, 3, c->app);
    sqlite3_bind_int64(prev, 4, counter_id);
    sqlite3_bind_int64(prev, 5, at);
    int rc = sqlite3_step(prev);
    bool same = rc == SQLITE_ROW && same_text(prev, 0, c->stats.json);
    sqlite3_reset(prev);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_fail(w->s, rc, "find previous counter point", w->err);
    if (same) {
        w->cnt->duplicates++;
        return FJ_OK;
    }
    STMT(st, W_COUNTER);
    sqlite3_bind_int64(st, 1, w->cluster_id);
    sqlite3_bind_int64(st, 2, w->run_id);
    bind_u64(st, 3, c->app);
    sqlite3_bind_int64(st, 4, counter_id);
    sqlite3_bind_int64(st, 5, at);
    bind_u64(st, 6, c->stats.count);
    bind_real(st, 7, c->stats.accumulate);
    bind_text(st, 8, c->stats.json);
    return run_ins(w, st, "insert chimbuko counter point", true, NULL);
}

static fj_status write_packet(cw *w, const fj_cb_packet *p)
{
    const int64_t at = p->created_at_ms;
    size_t n_steps = 0;
    for (size_t i = 0; i < p->n_ranks; i++)
        n_steps += p->ranks[i].n_steps;
    STMT(pk, W_PACKET);
    sqlite3_bind_int64(pk, 1, w->cluster_id);
    sqlite3_bind_int64(pk, 2, w->run_id);
    sqlite3_bind_int64(pk, 3, at);
    sqlite3_bind_int64(pk, 4, p->version);
    sqlite3_bind_int64(pk, 5, fj_time_now());
    sqlite3_bind_int64(pk, 6, (int64_t)p->n_ranks);
    sqlite3_bind_int64(pk, 7, (int64_t)n_steps);
    sqlite3_bind_int64(pk, 8, (int64_t)p->n_funcs);
    sqlite3_bind_int64(pk, 9, (int64_t)p->n_counters);
    sqlite3_bind_int64(pk, 10, (int64_t)p->n_metrics);
    bool added;
    TRY(run_ins(w, pk, "insert chimbuko packet", false, &added));
    if (!added) { /* this packet was committed before, with everything in it */
        w->cnt->duplicates += packet_rows(p);
        return FJ_OK;
    }
    w->cnt->inserted++;

    for (size_t i = 0; i < p->n_ranks; i++) {
        const fj_cb_rank *r = &p->ranks[i];
        STMT(rs, W_RANK);
        sqlite3_bind_int64(rs, 1, w->cluster_id);
        sqlite3_bind_int64(rs, 2, w->run_id);
        bind_u64(rs, 3, r->app);
        bind_u64(rs, 4, r->rank);
        sqlite3_bind_int64(rs, 5, at);
        bind_real(rs, 6, r->stats.accumulate);
        bind_u64(rs, 7, r->stats.count);
        bind_text(rs, 8, r->stats.json);
        TRY(run_ins(w, rs, "insert chimbuko rank stats", true, NULL));
        for (size_t j = 0; j < r->n_steps; j++) {
            const fj_cb_step *s = &r->steps[j];
            STMT(ss, W_STEP);
            sqlite3_bind_int64(ss, 1, w->cluster_id);
            sqlite3_bind_int64(ss, 2, w->run_id);
            bind_u64(ss, 3, s->app);
            bind_u64(ss, 4, s->rank);
            bind_u64(ss, 5, s->step);
            sqlite3_bind_int64(ss, 6, at);
            sqlite3_bind_int64(ss, 7, s->min_ts_us);
            sqlite3_bind_int64(ss, 8, s->max_ts_us);
            bind_u64(ss, 9, s->n_anomalies);
            if (s->scores.json) {
                bind_real(ss, 10, s->scores.maximum);
                bind_real(ss, 11, s->scores.mean);
            }
            bind_text(ss, 12, s->scores.json);
            TRY(run_ins(w, ss, "insert chimbuko rank step", true, NULL));
        }
    }
    for (size_t i = 0; i < p->n_funcs; i++)
        TRY(write_func(w, at, &p->funcs[i]));
    for (size_t i = 0; i < p->n_counters; i++)
        TRY(write_counter_point(w, at, &p->counters[i]));
    for (size_t i = 0; i < p->n_metrics; i++) {
        const fj_cb_func_metrics *m = &p->metrics[i];
        int64_t name_id;
        TRY(string_id(w, m->fname, &name_id));
        STMT(ms, W_METRICS);
        sqlite3_bind_int64(ms, 1, w->cluster_id);
        sqlite3_bind_int64(ms, 2, w->run_id);
        bind_u64(ms, 3, m->app);
        bind_u64(ms, 4, m->rank);
        bind_u64(ms, 5, m->fid);
        sqlite3_bind_int64(ms, 6, at);
        sqlite3_bind_int64(ms, 7, name_id);
        bind_real(ms, 8, m->new_data.count.accumulate);
        bind_real(ms, 9, m->new_data.score.maximum);
        bind_real(ms, 10, m->new_data.severity.accumulate);
        bind_u64(ms, 11, m->new_data.first_io_step);
        bind_u64(ms, 12, m->new_data.last_io_step);
        sqlite3_bind_int64(ms, 13, m->new_data.min_ts_us);
        sqlite3_bind_int64(ms, 14, m->new_data.max_ts_us);
        bind_text(ms, 15, m->new_data.json ? m->new_data.json : "null");
        bind_text(ms, 16, m->all_data.json ? m->all_data.json : "null");
        TRY(run_ins(w, ms, "insert chimbuko function metrics", true, NULL));
    }
    return FJ_OK;
}

static fj_status write_event(cw *w, bool anomaly, const fj_cb_event *e)
{
    int64_t func_id, host_id = 0;
    TRY(string_id(w, e->func, &func_id));
    if (e->hostname)
        TRY(string_id(w, e->hostname, &host_id));
    STMT(st, W_EVENT);
    int i = 1;
    sqlite3_bind_int64(st, i++, w->cluster_id);
    sqlite3_bind_int64(st, i++, w->run_id);
    sqlite3_bind_int(st, i++, anomaly ? 1 : 0);
    bind_u64(st, i++, e->pid);
    bind_u64(st, i++, e->rid);
    bind_u64(st, i++, e->io_step);
    bind_u64(st, i++, e->idx);
    sqlite3_bind_int64(st, i++, e->version);
    bind_u64(st, i++, e->tid);
    bind_u64(st, i++, e->fid);
    sqlite3_bind_int64(st, i++, func_id);
    sqlite3_bind_int64(st, i++, e->entry_us);
    if (e->exit_us)
        sqlite3_bind_int64(st, i, e->exit_us);
    i++;
    sqlite3_bind_int64(st, i++, e->runtime_total_us);
    sqlite3_bind_int64(st, i++, e->runtime_exclusive_us);
    sqlite3_bind_int64(st, i++, e->io_step_tstart_us);
    sqlite3_bind_int64(st, i++, e->io_step_tend_us);
    bind_real(st, i++, e->outlier_score);
    bind_real(st, i++, e->outlier_severity);
    if (host_id)
        sqlite3_bind_int64(st, i, host_id);
    i++;
    if (e->is_gpu_event >= 0)
        sqlite3_bind_int(st, i, e->is_gpu_event);
    i++;
    if (e->has_gpu_location) {
        bind_u64(st, i, e->gpu_thread);
        bind_u64(st, i + 1, e->gpu_device);
        bind_u64(st, i + 2, e->gpu_context);
        bind_u64(st, i + 3, e->gpu_stream);
    }
    i += 4;
    bind_text(st, i++, e->gpu_parent_event);
    if (e->gpu_parent_event)
        bind_u64(st, i, e->gpu_parent_tid);
    i++;
    bind_text(st, i++, e->gpu_parent_error);
    bind_text(st, i++, e->algo);
    bind_text(st, i++, e->algo_params);
    bind_text(st, i++, e->call_stack);
    bind_text(st, i++, e->counter_events);
    bind_text(st, i++, e->event_window);
    bind_text(st, i++, e->node_state);
    bind_text(st, i++, e->gpu_parent);
    return run_ins(w, st, "insert chimbuko event", true, NULL);
}

static fj_status write_records(cw *w, const fj_chimbuko *cb)
{
    for (size_t i = 0; i < cb->n_events; i++)
        TRY(write_event(w, cb->collection == FJ_CB_ANOMALIES, &cb->events[i]));
    for (size_t i = 0; i < cb->n_meta; i++) {
        const fj_cb_meta *m = &cb->meta[i];
        int64_t descr_id;
        TRY(string_id(w, m->descr, &descr_id));
        STMT(st, W_META);
        sqlite3_bind_int64(st, 1, w->cluster_id);
        sqlite3_bind_int64(st, 2, w->run_id);
        bind_u64(st, 3, m->pid);
        bind_u64(st, 4, m->rid);
        bind_u64(st, 5, m->tid);
        sqlite3_bind_int64(st, 6, descr_id);
        bind_text(st, 7, m->value ? m->value : "");
        TRY(run_ins(w, st, "insert chimbuko metadata", true, NULL));
    }
    for (size_t i = 0; i < cb->n_profiles; i++) {
        const fj_cb_profile *p = &cb->profiles[i];
        int64_t name_id;
        TRY(string_id(w, p->fname, &name_id));
        STMT(st, W_PROFILE);
        sqlite3_bind_int64(st, 1, w->cluster_id);
        sqlite3_bind_int64(st, 2, w->run_id);
        bind_u64(st, 3, p->app);
        bind_u64(st, 4, p->fid);
        sqlite3_bind_int64(st, 5, name_id);
        if (p->has_anomalies)
            bind_real(st, 6, p->anomalies.count.accumulate);
        if (p->has_runtime) {
            bind_real(st, 7, p->exclusive.accumulate);
            bind_text(st, 8, p->inclusive.json);
            bind_text(st, 9, p->exclusive.json);
        }
        bind_text(st, 10, p->has_anomalies ? p->anomalies.json : NULL);
        TRY(run_ins(w, st, "insert chimbuko profile", true, NULL));
    }
    for (size_t i = 0; i < cb->n_counters; i++) {
        const fj_cb_counter *c = &cb->counters[i];
        int64_t counter_id;
        TRY(string_id(w, c->counter, &counter_id));
        STMT(st, W_FINAL_COUNTER);
        sqlite3_bind_int64(st, 1, w->cluster_id);
        sqlite3_bind_int64(st, 2, w->run_id);
        bind_u64(st, 3, c->app);
        sqlite3_bind_int64(st, 4, counter_id);
        bind_u64(st, 5, c->stats.count);
        bind_real(st, 6, c->stats.accumulate);
        bind_text(st, 7, c->stats.json);
        TRY(run_ins(w, st, "insert chimbuko counter", true, NULL));
    }
    return FJ_OK;
}

fj_status fj_sq_write_chimbuko(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt,
                               fj_err *err)
{
    const fj_chimbuko *cb = &e->u.chimbuko;
    cw w = {.s = s, .err = err, .cnt = cnt, .cluster_id = cluster_id};
    fj_status st = string_id(&w, cb->run ? cb->run : "default", &w.run_id);
    if (st == FJ_OK)
        st = write_notes(&w, e);
    if (st == FJ_OK)
        st = cb->collection == FJ_CB_PACKET ? write_packet(&w, &cb->packet) : write_records(&w, cb);
    for (int i = 0; i < W__COUNT; i++)
        sqlite3_finalize(w.st[i]);
    return st;
}

/* --- queries: shared --------------------------------------------------------------------- */

typedef struct cq {
    fj_store *s;
    fj_cb_query *q;
    fj_sink *k;
    fj_err *err;
    int64_t cluster_id;
    bool in_tx;
    /* SQL under construction: text and its parameters, bound in order */
    fj_buf sql;
    struct {
        int t; /* 0 int, 1 text */
        int64_t i;
        const char *s;
    } p[24];
    int n_p;
} cq;

static fj_status cq_begin(cq *x, fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->q = q;
    x->k = k;
    x->err = err;
    q->next.set = false;
    fj_buf_init(&x->sql, (size_t)1 << 20);
    if (!q->cluster || !*q->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(s, rc, "begin read", err);
    x->in_tx = true;
    sqlite3_stmt *st;
    if ((rc = sqlite3_prepare_v2(s->db, "SELECT id FROM clusters WHERE name=?1", -1, &st, NULL)) != SQLITE_OK)
        return fj_sq_fail(s, rc, "prepare query", err);
    sqlite3_bind_text(st, 1, q->cluster, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        x->cluster_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return fj_err_set(err, FJ_ENOTFOUND, "cluster", "no data for cluster '%s'", q->cluster);
    return rc == SQLITE_ROW ? FJ_OK : fj_sq_fail(s, rc, "find cluster", err);
}

static fj_status cq_end(cq *x, fj_status st)
{
    if (x->in_tx && !sqlite3_get_autocommit(x->s->db))
        sqlite3_exec(x->s->db, "COMMIT", NULL, NULL, NULL);
    fj_buf_free(&x->sql);
    return st;
}

static void put(cq *x, const char *text)
{
    fj_buf_puts(&x->sql, text);
}

/* Appends text with one '?' bound to an integer (or a text). */
static void put_int(cq *x, const char *text, int64_t v)
{
    if (x->n_p < (int)(sizeof x->p / sizeof x->p[0])) {
        x->p[x->n_p].t = 0;
        x->p[x->n_p++].i = v;
    }
    put(x, text);
}

static void put_text(cq *x, const char *text, const char *v)
{
    if (x->n_p < (int)(sizeof x->p / sizeof x->p[0])) {
        x->p[x->n_p].t = 1;
        x->p[x->n_p++].s = v;
    }
    put(x, text);
}

static fj_status cq_prepare(cq *x, sqlite3_stmt **st)
{
    if (!x->sql.data)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    int rc = sqlite3_prepare_v2(x->s->db, x->sql.data, -1, st, NULL);
    if (rc != SQLITE_OK)
        return fj_sq_fail(x->s, rc, "prepare query", x->err);
    for (int i = 0; i < x->n_p; i++) {
        if (x->p[i].t == 0)
            sqlite3_bind_int64(*st, i + 1, x->p[i].i);
        else
            sqlite3_bind_text(*st, i + 1, x->p[i].s, -1, SQLITE_STATIC);
    }
    fj_buf_reset(&x->sql);
    x->n_p = 0;
    return FJ_OK;
}

/* The filters every table shares: cluster (first parameter), run, app. t: the table's alias. */
static void common_filters(cq *x, const char *t, const char *app_col)
{
    char b[160];
    snprintf(b, sizeof b, " WHERE %s.cluster_id = ?", t);
    put_int(x, b, x->cluster_id);
    if (x->q->run) {
        snprintf(b, sizeof b, " AND %s.run_id = (SELECT id FROM strings WHERE s = ?)", t);
        put_text(x, b, x->q->run);
    }
    if (x->q->app >= 0) {
        snprintf(b, sizeof b, " AND %s.%s = ?", t, app_col);
        put_int(x, b, x->q->app);
    }
}

static void filter_int(cq *x, const char *col, int64_t v)
{
    if (v < 0)
        return;
    char b[96];
    snprintf(b, sizeof b, " AND %s = ?", col);
    put_int(x, b, v);
}

/* A time window on packet times (milliseconds) in a column. */
static void filter_ms(cq *x, const char *col)
{
    char b[96];
    if (x->q->from_us > 0) {
        snprintf(b, sizeof b, " AND %s >= ?", col);
        put_int(x, b, (x->q->from_us + 999) / 1000);
    }
    if (x->q->to_us > 0) {
        snprintf(b, sizeof b, " AND %s <= ?", col);
        put_int(x, b, x->q->to_us / 1000);
    }
}

static void put_limit(cq *x, size_t extra)
{
    if (x->q->limit)
        put_int(x, " LIMIT ?", (int64_t)(x->q->limit + extra));
}

/* Runs st, handing each row (converted by fn) to the sink. */
typedef fj_status (*row_fn)(cq *x, sqlite3_stmt *st, fj_value *v);

static fj_status emit(cq *x, sqlite3_stmt *st, const fj_qtable *t, row_fn fn)
{
    fj_status rs = x->k->table(x->k, t);
    fj_value v[40];
    int rc = SQLITE_DONE;
    while (rs == FJ_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rs = fn(x, st, v)) == FJ_OK)
            rs = x->k->row(x->k, v);
    }
    if (rs == FJ_OK && rc != SQLITE_DONE)
        rs = fj_sq_fail(x->s, rc, t->name, x->err);
    return rs;
}

/* Columns in order: each value of column i of st, typed as the table says. */
static fj_status plain_row(cq *x, sqlite3_stmt *st, fj_value *v, const fj_qtable *t)
{
    for (size_t i = 0; i < t->n_cols; i++)
        v[i] = fj_v_col(st, (int)i, t->cols[i].type);
    return FJ_OK;
}

#define PLAIN(name, table)                                                                             \
    static fj_status name(cq *x, sqlite3_stmt *st, fj_value *v)                                        \
    {                                                                                                  \
        return plain_row(x, st, v, &table);                                                            \
    }

PLAIN(runs_row, fj_qt_cb_runs)
PLAIN(ranks_row, fj_qt_cb_ranks)
PLAIN(functions_row, fj_qt_cb_functions)
PLAIN(metrics_row, fj_qt_cb_metrics)
PLAIN(counters_row, fj_qt_cb_counters)
PLAIN(top_ranks_row, fj_qt_cb_top_ranks)
PLAIN(top_functions_row, fj_qt_cb_top_functions)
PLAIN(metadata_row, fj_qt_cb_metadata)
PLAIN(profiles_row, fj_qt_cb_profiles)
PLAIN(final_counters_row, fj_qt_cb_final_counters)

/* --- runs ---------------------------------------------------------------------------------- */

fj_status fj_sq_cb_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    sqlite3_stmt *st = NULL;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    put_int(&x,
            "WITH runs(run_id) AS (SELECT run_id FROM chimbuko_packets WHERE cluster_id = ?1"
            " UNION SELECT run_id FROM chimbuko_events WHERE cluster_id = ?1"
            " UNION SELECT run_id FROM chimbuko_metadata WHERE cluster_id = ?1"
            " UNION SELECT run_id FROM chimbuko_profiles WHERE cluster_id = ?1"
            " UNION SELECT run_id FROM chimbuko_counters WHERE cluster_id = ?1)"
            " SELECT r.s,"
            " (SELECT count(*) FROM chimbuko_packets p WHERE p.cluster_id = ?1 AND p.run_id = runs.run_id),"
            " (SELECT min(created_at_ms) / 1000 FROM chimbuko_packets p"
            "  WHERE p.cluster_id = ?1 AND p.run_id = runs.run_id),"
            " (SELECT max(created_at_ms) / 1000 FROM chimbuko_packets p"
            "  WHERE p.cluster_id = ?1 AND p.run_id = runs.run_id),"
            " (SELECT count(*) FROM chimbuko_events e"
            "  WHERE e.cluster_id = ?1 AND e.run_id = runs.run_id AND e.anomaly = 1),"
            " (SELECT count(*) FROM chimbuko_events e"
            "  WHERE e.cluster_id = ?1 AND e.run_id = runs.run_id AND e.anomaly = 0),"
            " (SELECT count(*) FROM (SELECT DISTINCT app, rank FROM chimbuko_rank_steps t WHERE t.cluster_id = ?1"
            "  AND t.run_id = runs.run_id))"
            " FROM runs JOIN strings r ON r.id = runs.run_id",
            x.cluster_id);
    if (q->run)
        put_text(&x, " WHERE r.s = ?2", q->run);
    put(&x, " ORDER BY r.s");
    if ((rs = cq_prepare(&x, &st)) == FJ_OK)
        rs = emit(&x, st, &fj_qt_cb_runs, runs_row);
    sqlite3_finalize(st);
    return cq_end(&x, rs);
}

/* --- series -------------------------------------------------------------------------------- */

fj_status fj_sq_cb_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    sqlite3_stmt *st = NULL;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    const fj_qtable *t;
    row_fn fn;
    switch (q->series) {
    case FJ_CBS_RANKS:
        t = &fj_qt_cb_ranks;
        fn = ranks_row;
        put(&x, "SELECT r.s, t.app, t.rank, t.step, t.max_ts_us / 1000000, t.min_ts_us, t.max_ts_us, t.n_anomalies,"
                " t.score_max, t.score_mean, t.scores FROM chimbuko_rank_steps t JOIN strings r ON r.id = t.run_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.rank", q->rank);
        if (q->step_from >= 0)
            put_int(&x, " AND t.step >= ?", q->step_from);
        if (q->step_to >= 0)
            put_int(&x, " AND t.step <= ?", q->step_to);
        if (q->from_us > 0)
            put_int(&x, " AND t.max_ts_us >= ?", q->from_us);
        if (q->to_us > 0)
            put_int(&x, " AND t.min_ts_us <= ?", q->to_us);
        put(&x, " ORDER BY r.s, t.app, t.rank, t.step");
        break;
    case FJ_CBS_FUNCTIONS:
        t = &fj_qt_cb_functions;
        fn = functions_row;
        put(&x, "SELECT r.s, t.app, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
                " CAST(round(t.anomalies) AS INTEGER), t.calls, t.anomaly_stats, t.inclusive, t.exclusive"
                " FROM chimbuko_func_stats t JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ?", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s, t.app, t.fid, t.created_at_ms");
        break;
    case FJ_CBS_METRICS:
        t = &fj_qt_cb_metrics;
        fn = metrics_row;
        put(&x, "SELECT r.s, t.app, t.rank, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
                " CAST(round(t.anomalies) AS INTEGER), t.score_max, t.severity_total, t.first_io_step,"
                " t.last_io_step, t.new_data, t.all_data FROM chimbuko_func_metrics t"
                " JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.rank", q->rank);
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ?", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s, t.app, t.rank, t.fid, t.created_at_ms");
        break;
    case FJ_CBS_COUNTERS:
        t = &fj_qt_cb_counters;
        fn = counters_row;
        put(&x, "SELECT r.s, t.app, n.s, t.created_at_ms / 1000, t.created_at_ms, t.count, t.total, t.stats"
                " FROM chimbuko_counter_stats t JOIN strings r ON r.id = t.run_id"
                " JOIN strings n ON n.id = t.counter_id");
        common_filters(&x, "t", "app");
        if (q->func)
            put_text(&x, " AND n.s = ?", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s, t.app, n.s, t.created_at_ms");
        break;
    default:
        rs = fj_err_set(err, FJ_EINVAL, "series", "unknown series %d", (int)q->series);
        return cq_end(&x, rs);
    }
    put_limit(&x, 0);
    if ((rs = cq_prepare(&x, &st)) == FJ_OK)
        rs = emit(&x, st, t, fn);
    sqlite3_finalize(st);
    return cq_end(&x, rs);
}

/* --- top ranks and functions ------------------------------------------------------------------ */

fj_status fj_sq_cb_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    sqlite3_stmt *st = NULL;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    put(&x, "SELECT r.s, t.app, t.rank, sum(t.n_anomalies), count(*), max(t.score_max), min(t.min_ts_us) / 1000000,"
            " max(t.max_ts_us) / 1000000 FROM chimbuko_rank_steps t JOIN strings r ON r.id = t.run_id");
    common_filters(&x, "t", "app");
    filter_int(&x, "t.rank", q->rank);
    if (q->from_us > 0)
        put_int(&x, " AND t.max_ts_us >= ?", q->from_us);
    if (q->to_us > 0)
        put_int(&x, " AND t.min_ts_us <= ?", q->to_us);
    put(&x, " GROUP BY t.run_id, t.app, t.rank ORDER BY 4 DESC, 6 DESC, r.s, t.app, t.rank");
    put_limit(&x, 0);
    if ((rs = cq_prepare(&x, &st)) == FJ_OK)
        rs = emit(&x, st, &fj_qt_cb_top_ranks, top_ranks_row);
    sqlite3_finalize(st);
    st = NULL;
    if (rs != FJ_OK)
        return cq_end(&x, rs);

    put(&x, "SELECT r.s, t.app, t.fid, max(n.s), CAST(round(sum(t.anomalies)) AS INTEGER), count(DISTINCT t.rank),"
            " max(t.score_max), sum(t.severity_total) FROM chimbuko_func_metrics t JOIN strings r ON r.id = t.run_id"
            " JOIN strings n ON n.id = t.name_id");
    common_filters(&x, "t", "app");
    filter_int(&x, "t.rank", q->rank);
    filter_int(&x, "t.fid", q->fid);
    if (q->func)
        put_text(&x, " AND n.s = ?", q->func);
    filter_ms(&x, "t.created_at_ms");
    put(&x, " GROUP BY t.run_id, t.app, t.fid ORDER BY 5 DESC, 7 DESC, r.s, t.app, t.fid");
    put_limit(&x, 0);
    if ((rs = cq_prepare(&x, &st)) == FJ_OK)
        rs = emit(&x, st, &fj_qt_cb_top_functions, top_functions_row);
    sqlite3_finalize(st);
    return cq_end(&x, rs);
}

/* --- provenance records ---------------------------------------------------------------------- */

enum { EV_ID, EV_RID, EV_STEP, EV_IDX, EV_ANOMALY, EV_RUN, EV_PID, EV_TID, EV_FID, EV_FUNC, EV_HOST, EV_ENTRY,
       EV_EXIT, EV_RT, EV_RX, EV_SCORE, EV_SEV, EV_GPU, EV_GT, EV_GD, EV_GC, EV_GS, EV_GPE, EV_GPERR, EV_ALGO,
       EV_ALGOP, EV_CS, EV_CE, EV_EW, EV_NS, EV_GP, EV_VERSION };

typedef struct ev_scratch {
    char label[72];
    char gpu[160];
} ev_scratch;

static fj_status event_row_into(cq *x, sqlite3_stmt *st, fj_value *v, ev_scratch *sc)
{
    snprintf(sc->label, sizeof sc->label, "%lld:%lld:%lld", (long long)sqlite3_column_int64(st, EV_RID),
             (long long)sqlite3_column_int64(st, EV_STEP), (long long)sqlite3_column_int64(st, EV_IDX));
    bool gpu = sqlite3_column_type(st, EV_GT) != SQLITE_NULL;
    if (gpu)
        snprintf(sc->gpu, sizeof sc->gpu, "{\"thread\":%lld,\"device\":%lld,\"context\":%lld,\"stream\":%lld}",
                 (long long)sqlite3_column_int64(st, EV_GT), (long long)sqlite3_column_int64(st, EV_GD),
                 (long long)sqlite3_column_int64(st, EV_GC), (long long)sqlite3_column_int64(st, EV_GS));
    int64_t entry = sqlite3_column_int64(st, EV_ENTRY);
    size_t i = 0;
    v[i++] = fj_v_text(sc->label);
    v[i++] = fj_v_text(sqlite3_column_int(st, EV_ANOMALY) ? "anomaly" : "normal");
    v[i++] = fj_v_col(st, EV_RUN, FJ_VT_TEXT);
    v[i++] = fj_v_col(st, EV_PID, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_RID, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_TID, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_STEP, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_IDX, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_FID, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_FUNC, FJ_VT_TEXT);
    v[i++] = fj_v_col(st, EV_HOST, FJ_VT_TEXT);
    v[i++] = entry > 0 ? fj_v_time(entry / 1000000) : fj_v_null();
    v[i++] = fj_v_int(entry);
    v[i++] = fj_v_col(st, EV_EXIT, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_RT, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_RX, FJ_VT_INT);
    v[i++] = fj_v_col(st, EV_SCORE, FJ_VT_REAL);
    v[i++] = fj_v_col(st, EV_SEV, FJ_VT_REAL);
    v[i++] = fj_v_col(st, EV_GPU, FJ_VT_BOOL);
    v[i++] = gpu ? fj_v_json(sc->gpu) : fj_v_null();
    v[i++] = fj_v_col(st, EV_GPE, FJ_VT_TEXT);
    v[i++] = fj_v_col(st, EV_GPERR, FJ_VT_TEXT);
    v[i++] = fj_v_col(st, EV_ALGO, FJ_VT_TEXT);
    for (int c = EV_ALGOP; c <= EV_GP; c++)
        v[i++] = x->q->brief ? fj_v_null() : fj_v_col(st, c, FJ_VT_JSON);
    v[i++] = fj_v_col(st, EV_VERSION, FJ_VT_INT);
    return i == fj_qt_cb_events.n_cols ? FJ_OK : fj_err_set(x->err, FJ_EINTERNAL, NULL, "event columns");
}

static fj_status query_events(cq *x)
{
    fj_cb_query *q = x->q;
    sqlite3_stmt *st = NULL;
    put(x, "SELECT e.id, e.rid, e.io_step, e.idx, e.anomaly, r.s, e.pid, e.tid, e.fid, f.s, h.s, e.entry_us,"
           " e.exit_us, e.runtime_total_us, e.runtime_exclusive_us, e.outlier_score, e.outlier_severity, e.is_gpu,"
           " e.gpu_thread, e.gpu_device, e.gpu_context, e.gpu_stream, e.gpu_parent_event, e.gpu_parent_error,"
           " e.algo, e.algo_params, e.call_stack, e.counter_events, e.event_window, e.node_state, e.gpu_parent,"
           " e.version FROM chimbuko_events e JOIN strings r ON r.id = e.run_id JOIN strings f ON f.id = e.func_id"
           " LEFT JOIN strings h ON h.id = e.host_id");
    common_filters(x, "e", "pid");
    if (q->collection == FJ_CB_ANOMALIES || q->collection == FJ_CB_NORMALEXECS)
        put_int(x, " AND e.anomaly = ?", q->collection == FJ_CB_ANOMALIES);
    filter_int(x, "e.rid", q->rank);
    filter_int(x, "e.fid", q->fid);
    filter_int(x, "e.idx", q->idx);
    if (q->func)
        put_text(x, " AND f.s = ?", q->func);
    if (q->step_from >= 0)
        put_int(x, " AND e.io_step >= ?", q->step_from);
    if (q->step_to >= 0)
        put_int(x, " AND e.io_step <= ?", q->step_to);
    if (q->from_us > 0)
        put_int(x, " AND e.entry_us >= ?", q->from_us);
    if (q->to_us > 0)
        put_int(x, " AND e.entry_us <= ?", q->to_us);
    if (q->after.set) {
        int64_t at = (int64_t)q->after.v;
        put_int(x, " AND (e.entry_us > ?", at);
        put_int(x, " OR (e.entry_us = ?", at);
        put_int(x, " AND e.id > ?))", q->after.id);
    }
    put(x, " ORDER BY e.entry_us, e.id");
    put_limit(x, 1);
    fj_status rs = cq_prepare(x, &st);
    if (rs == FJ_OK)
        rs = x->k->table(x->k, &fj_qt_cb_events);
    fj_value v[40];
    ev_scratch sc;
    size_t n = 0;
    int rc = SQLITE_DONE;
    while (rs == FJ_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (q->limit && n == q->limit) { /* one more exists: the page ends at the previous row */
            q->next.set = true;
            break;
        }
        q->next.v = (double)sqlite3_column_int64(st, EV_ENTRY);
        q->next.id = sqlite3_column_int64(st, EV_ID);
        if ((rs = event_row_into(x, st, v, &sc)) == FJ_OK)
            rs = x->k->row(x->k, v);
        n++;
    }
    if (rs == FJ_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        rs = fj_sq_fail(x->s, rc, "events", x->err);
    if (!q->next.set)
        q->next.v = 0, q->next.id = 0;
    sqlite3_finalize(st);
    return rs;
}

fj_status fj_sq_cb_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    sqlite3_stmt *st = NULL;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    switch (q->collection) {
    case FJ_CB_PACKET:
    case FJ_CB_ANOMALIES:
    case FJ_CB_NORMALEXECS: return cq_end(&x, query_events(&x));
    case FJ_CB_METADATA:
        put(&x, "SELECT r.s, t.pid, t.rid, t.tid, d.s, t.value FROM chimbuko_metadata t JOIN strings r ON"
                " r.id = t.run_id JOIN strings d ON d.id = t.descr_id");
        common_filters(&x, "t", "pid");
        filter_int(&x, "t.rid", q->rank);
        put(&x, " ORDER BY r.s, t.pid, t.rid, t.tid, d.s");
        put_limit(&x, 0);
        if ((rs = cq_prepare(&x, &st)) == FJ_OK)
            rs = emit(&x, st, &fj_qt_cb_metadata, metadata_row);
        break;
    case FJ_CB_FUNC_STATS:
        put(&x, "SELECT r.s, t.app, t.fid, n.s, CAST(round(t.anomalies) AS INTEGER), t.exclusive_total_us,"
                " t.inclusive, t.exclusive, t.anomaly_metrics FROM chimbuko_profiles t JOIN strings r ON"
                " r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ?", q->func);
        put(&x, " ORDER BY r.s, t.app, t.fid");
        put_limit(&x, 0);
        if ((rs = cq_prepare(&x, &st)) == FJ_OK)
            rs = emit(&x, st, &fj_qt_cb_profiles, profiles_row);
        break;
    case FJ_CB_COUNTER_STATS:
        put(&x, "SELECT r.s, t.app, n.s, t.count, t.total, t.stats FROM chimbuko_counters t JOIN strings r ON"
                " r.id = t.run_id JOIN strings n ON n.id = t.counter_id");
        common_filters(&x, "t", "app");
        if (q->func)
            put_text(&x, " AND n.s = ?", q->func);
        put(&x, " ORDER BY r.s, t.app, n.s");
        put_limit(&x, 0);
        if ((rs = cq_prepare(&x, &st)) == FJ_OK)
            rs = emit(&x, st, &fj_qt_cb_final_counters, final_counters_row);
        break;
    default: rs = fj_err_set(err, FJ_EINVAL, "collection", "unknown collection %d", (int)q->collection);
    }
    sqlite3_finalize(st);
    return cq_end(&x, rs);
}
