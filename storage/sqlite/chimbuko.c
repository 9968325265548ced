/* storage/sqlite/chimbuko.c — Chimbuko in the SQLite backend (schema: migrations/sqlite/0005_chimbuko.sql):
 * the write of one envelope (a pserver packet, or provenance records of one collection) inside
 * the writer's group-commit transaction. What goes in which column is shared with PostgreSQL
 * (storage/chimbuko/rows.h), and the queries are written once (storage/chimbuko/query.c); this file
 * holds the writer's SQL and statements. Statements are prepared once per envelope: a packet a
 * second does not need a cache. */
#include "storage/sqlite/chimbuko.h"
#include "storage/core/try.h"

#include "storage/chimbuko/rows.h"
#include "storage/sqlite/query_int.h"

#include <stdio.h>
#include <string.h>

/* --- writing ------------------------------------------------------------------------------- */

/* Statements: an insert per table of storage/chimbuko/rows.h (FJ_CBT_*), then these. */
enum { W_NOTE = FJ_CBT__COUNT, W_FUNC_PREV, W_COUNTER_PREV, W__COUNT };

static const char *const wsql[W__COUNT] = {
    [W_NOTE] = "INSERT OR IGNORE INTO notes(cluster_id,node_id,kind,time,path,note,detail) VALUES(?,0,?,?,?,?,?)",
    [W_FUNC_PREV] = "SELECT name_id,anomaly_stats,inclusive,exclusive FROM chimbuko_func_stats WHERE cluster_id=?1 "
                    "AND run_id=?2 AND app=?3 AND fid=?4 AND created_at_ms<=?5 ORDER BY created_at_ms DESC LIMIT 1",
    [W_COUNTER_PREV] = "SELECT stats FROM chimbuko_counter_stats WHERE cluster_id=?1 AND run_id=?2 AND app=?3 AND "
                       "counter_id=?4 AND created_at_ms<=?5 ORDER BY created_at_ms DESC LIMIT 1",
};

enum { NOTE_DETAIL_MAX = 200 };

typedef struct cw {
    fj_store *s;
    fj_err *err;
    fj_write_count *cnt;
    fj_cb_key key;
    sqlite3_stmt *st[W__COUNT];
} cw;

/* "INSERT OR IGNORE INTO table(cols) VALUES(?,...)" of a table of storage/chimbuko/rows.h. */
static bool insert_sql(fj_cb_table t, char *out, size_t cap)
{
    const fj_cb_tabledef *d = fj_cb_table_def(t);
    int n = snprintf(out, cap, "INSERT OR IGNORE INTO %s(%s) VALUES(", d->name, d->cols);
    for (size_t i = 0; n > 0 && (size_t)n < cap && d->types[i]; i++)
        n += snprintf(out + n, cap - (size_t)n, i ? ",?" : "?");
    if (n > 0 && (size_t)n < cap)
        n += snprintf(out + n, cap - (size_t)n, ")");
    return n > 0 && (size_t)n < cap;
}

static sqlite3_stmt *stmt(cw *w, int id)
{
    if (!w->st[id]) {
        char ins[2048];
        const char *sql = wsql[id];
        if (id < FJ_CBT__COUNT) {
            if (!insert_sql((fj_cb_table)id, ins, sizeof ins)) {
                fj_err_set(w->err, FJ_EINTERNAL, "db", "chimbuko statement too long");
                return NULL;
            }
            sql = ins;
        }
        int rc = sqlite3_prepare_v2(w->s->db, sql, -1, &w->st[id], NULL);
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

/* The column writer of storage/chimbuko/rows.h over a statement: its columns are the parameters. */
static void col_null(void *st, int c)
{
    sqlite3_bind_null(st, c + 1);
}

static void col_i64(void *st, int c, int64_t v)
{
    sqlite3_bind_int64(st, c + 1, v);
}

static void col_u64(void *st, int c, uint64_t v)
{
    fj_sq_bind_u64(st, c + 1, v);
}

static void col_real(void *st, int c, double v)
{
    sqlite3_bind_double(st, c + 1, v);
}

static void col_text(void *st, int c, const char *s)
{
    sqlite3_bind_text(st, c + 1, s, -1, SQLITE_STATIC);
}

static void col_bool(void *st, int c, bool v)
{
    sqlite3_bind_int(st, c + 1, v ? 1 : 0);
}

static const fj_cb_colw_ops bind_ops = {col_null, col_i64, col_u64, col_real, col_text, col_bool};

/* The column writer binding st's parameters. */
#define BIND(st) (&(fj_cb_colw){&bind_ops, (st)})

/* Steps an insert; counts the row (counted: a row of the sender's records). */
static fj_status run_ins(cw *w, sqlite3_stmt *st, const char *what, bool counted, bool *added)
{
    bool a;
    FJ_TRY(fj_sq_insert(w->s, st, what, &a, w->err));
    if (counted)
        fj_cb_count(w->cnt, a);
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
        sqlite3_bind_int64(st, 1, w->key.cluster_id);
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
        FJ_TRY(run_ins(w, st, "insert note", false, NULL));
    }
    return FJ_OK;
}

/* Is the text in column col of st equal to s? */
static bool same_text(sqlite3_stmt *st, int col, const char *s)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t && s && strcmp(t, s) == 0;
}

/* Runs a W_*_PREV statement bound to (cluster, run, app, id, at): *found and the row in prev. */
static fj_status find_prev(cw *w, sqlite3_stmt *prev, uint64_t app, uint64_t id, int64_t at, const char *what,
                           bool *found)
{
    sqlite3_bind_int64(prev, 1, w->key.cluster_id);
    sqlite3_bind_int64(prev, 2, w->key.run_id);
    fj_sq_bind_u64(prev, 3, app);
    fj_sq_bind_u64(prev, 4, id);
    sqlite3_bind_int64(prev, 5, at);
    int rc = sqlite3_step(prev);
    *found = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        sqlite3_reset(prev);
        return fj_sq_fail(w->s, rc, what, w->err);
    }
    return FJ_OK;
}

static fj_status write_func(cw *w, int64_t at, const fj_cb_func *f)
{
    int64_t name_id;
    FJ_TRY(string_id(w, f->name, &name_id));
    /* Every packet repeats every function's cumulative profile: keep a point only when it
     * changed since the point before it. */
    STMT(prev, W_FUNC_PREV);
    bool found;
    FJ_TRY(find_prev(w, prev, f->app, f->fid, at, "find previous function point", &found));
    bool same = found && sqlite3_column_int64(prev, 0) == name_id && same_text(prev, 1, f->anomalies.json) &&
                same_text(prev, 2, f->inclusive.json) && same_text(prev, 3, f->exclusive.json);
    sqlite3_reset(prev);
    if (same) {
        fj_cb_count(w->cnt, false);
        return FJ_OK;
    }
    STMT(st, FJ_CBT_FUNC_STATS);
    fj_cb_row_func(BIND(st), w->key, at, f, name_id);
    return run_ins(w, st, "insert chimbuko function point", true, NULL);
}

static fj_status write_counter_point(cw *w, int64_t at, const fj_cb_counter *c)
{
    int64_t counter_id;
    FJ_TRY(string_id(w, c->counter, &counter_id));
    STMT(prev, W_COUNTER_PREV);
    bool found;
    FJ_TRY(find_prev(w, prev, c->app, (uint64_t)counter_id, at, "find previous counter point", &found));
    bool same = found && same_text(prev, 0, c->stats.json);
    sqlite3_reset(prev);
    if (same) {
        fj_cb_count(w->cnt, false);
        return FJ_OK;
    }
    STMT(st, FJ_CBT_COUNTER_STATS);
    fj_cb_row_counter_point(BIND(st), w->key, at, c, counter_id);
    return run_ins(w, st, "insert chimbuko counter point", true, NULL);
}

static fj_status write_packet(cw *w, const fj_cb_packet *p)
{
    const int64_t at = p->created_at_ms;
    STMT(pk, FJ_CBT_PACKETS);
    fj_cb_row_packet(BIND(pk), w->key, p, fj_time_now());
    bool added;
    FJ_TRY(run_ins(w, pk, "insert chimbuko packet", false, &added));
    if (!added) { /* this packet was committed before, with everything in it */
        w->cnt->duplicates += fj_cb_packet_rows(p);
        return FJ_OK;
    }
    fj_cb_count(w->cnt, true);

    for (size_t i = 0; i < p->n_ranks; i++) {
        const fj_cb_rank *r = &p->ranks[i];
        STMT(rs, FJ_CBT_RANK_STATS);
        fj_cb_row_rank(BIND(rs), w->key, at, r);
        FJ_TRY(run_ins(w, rs, "insert chimbuko rank stats", true, NULL));
        for (size_t j = 0; j < r->n_steps; j++) {
            STMT(ss, FJ_CBT_RANK_STEPS);
            fj_cb_row_step(BIND(ss), w->key, at, &r->steps[j]);
            FJ_TRY(run_ins(w, ss, "insert chimbuko rank step", true, NULL));
        }
    }
    for (size_t i = 0; i < p->n_funcs; i++)
        FJ_TRY(write_func(w, at, &p->funcs[i]));
    for (size_t i = 0; i < p->n_counters; i++)
        FJ_TRY(write_counter_point(w, at, &p->counters[i]));
    for (size_t i = 0; i < p->n_metrics; i++) {
        const fj_cb_func_metrics *m = &p->metrics[i];
        int64_t name_id;
        FJ_TRY(string_id(w, m->fname, &name_id));
        STMT(ms, FJ_CBT_FUNC_METRICS);
        fj_cb_row_metrics(BIND(ms), w->key, at, m, name_id);
        FJ_TRY(run_ins(w, ms, "insert chimbuko function metrics", true, NULL));
    }
    return FJ_OK;
}

static fj_status write_records(cw *w, const fj_chimbuko *cb)
{
    static const char *const what[] = {"insert chimbuko event", "insert chimbuko metadata",
                                       "insert chimbuko profile", "insert chimbuko counter"};
    for (fj_cb_table t = FJ_CBT_RECORDS_FIRST; t <= FJ_CBT_RECORDS_LAST; t++)
        for (size_t i = 0; i < fj_cb_record_count(cb, t); i++) {
            const char *names[2];
            int64_t ids[2] = {0, 0};
            fj_cb_record_names(cb, t, i, names);
            FJ_TRY(string_id(w, names[0], &ids[0]));
            if (names[1])
                FJ_TRY(string_id(w, names[1], &ids[1]));
            STMT(st, t);
            fj_cb_row_record(BIND(st), w->key, cb, t, i, ids);
            FJ_TRY(run_ins(w, st, what[t - FJ_CBT_RECORDS_FIRST], true, NULL));
        }
    return FJ_OK;
}

fj_status fj_sq_write_chimbuko(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt,
                               fj_err *err)
{
    const fj_chimbuko *cb = &e->u.chimbuko;
    cw w = {.s = s, .err = err, .cnt = cnt, .key.cluster_id = cluster_id};
    fj_status st = string_id(&w, fj_cb_run_label(cb), &w.key.run_id);
    if (st == FJ_OK)
        st = write_notes(&w, e);
    if (st == FJ_OK)
        st = cb->collection == FJ_CB_PACKET ? write_packet(&w, &cb->packet) : write_records(&w, cb);
    for (int i = 0; i < W__COUNT; i++)
        sqlite3_finalize(w.st[i]);
    return st;
}
