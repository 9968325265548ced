/* pg_chimbuko.c — Chimbuko in the PostgreSQL backend (schema: migrations/postgres/0003_chimbuko.sql),
 * the counterpart of sqlite_chimbuko.c with the same rows, counts and answers: the write of a
 * group's Chimbuko envelopes inside the writer's transaction, and the query ops (runs, series, top,
 * records) into the row sinks of store_query.h with the columns of chimbuko_cols.c.
 *
 * Writes are batched: a table's rows of the whole group go in one prepared statement,
 * INSERT ... SELECT FROM unnest($1::bigint[], ...) WITH ORDINALITY ... ON CONFLICT DO NOTHING,
 * which answers the ordinals of the rows it inserted, so every envelope's rows are counted as
 * inserted or duplicate (the first copy of a row repeated within the group wins, as in SQLite).
 * Two rules are sequential in SQLite and stay so here: a packet's rows are written only when the
 * packet itself is new, and a function profile or counter point only when it differs from the
 * point before it, which may have arrived earlier in the same group: those two statements run
 * packet by packet, in arrival order. */
#include "pg_int.h"
#include "pg_query_int.h"

#include "alloc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define TRY(expr)                                                                                        \
    do {                                                                                                 \
        fj_status try_st_ = (expr);                                                                      \
        if (try_st_ != FJ_OK)                                                                            \
            return try_st_;                                                                              \
    } while (0)

/* --- statements ------------------------------------------------------------------------------ */

/* One batched insert. Rows are added column by column in the order of cols; types has one letter
 * per column (b bigint, f float8, t text, o boolean). */
typedef struct cb_spec cb_spec;
struct cb_spec {
    fj_pg_stmt_id id;
    const char *table;
    const char *cols;   /* comma-separated, no spaces */
    const char *types;
    const char *keys;   /* the natural key */
    /* Insert in key order, so that concurrent writers take row locks in one order. Events go in
     * arrival order instead: their id breaks ties of entry time in listings, as SQLite's rowid. */
    bool by_key;
    const char *filter; /* NULL, or a condition on u.* that a row must meet to be inserted */
};

/* The previous point of a function (of a counter) at or before the new one's packet time: a point
 * equal to it adds nothing (the pserver repeats every profile in every packet). */
#define FUNC_UNCHANGED                                                                                   \
    "NOT EXISTS (SELECT 1 FROM (SELECT p.name_id, p.anomaly_stats, p.inclusive, p.exclusive FROM "         \
    "chimbuko_func_stats p WHERE p.cluster_id = u.cluster_id AND p.run_id = u.run_id AND p.app = u.app "   \
    "AND p.fid = u.fid AND p.created_at_ms <= u.created_at_ms ORDER BY p.created_at_ms DESC LIMIT 1) prev " \
    "WHERE prev.name_id = u.name_id AND prev.anomaly_stats = u.anomaly_stats AND prev.inclusive = "        \
    "u.inclusive AND prev.exclusive = u.exclusive)"
#define COUNTER_UNCHANGED                                                                                \
    "NOT EXISTS (SELECT 1 FROM (SELECT p.stats FROM chimbuko_counter_stats p WHERE p.cluster_id = "        \
    "u.cluster_id AND p.run_id = u.run_id AND p.app = u.app AND p.counter_id = u.counter_id AND "          \
    "p.created_at_ms <= u.created_at_ms ORDER BY p.created_at_ms DESC LIMIT 1) prev WHERE prev.stats = "   \
    "u.stats)"

static const cb_spec specs[] = {
    {FJ_PG_CB_PACKET_INS, "chimbuko_packets",
     "cluster_id,run_id,created_at_ms,version,received,n_ranks,n_steps,n_funcs,n_counters,n_metrics", "bbbbbbbbbb",
     "cluster_id,run_id,created_at_ms", true, NULL},
    {FJ_PG_CB_RANK_INS, "chimbuko_rank_stats", "cluster_id,run_id,app,rank,created_at_ms,anomalies,steps,stats",
     "bbbbbfbt", "cluster_id,run_id,app,rank,created_at_ms", true, NULL},
    {FJ_PG_CB_STEP_INS, "chimbuko_rank_steps",
     "cluster_id,run_id,app,rank,step,created_at_ms,min_ts_us,max_ts_us,n_anomalies,score_max,score_mean,scores",
     "bbbbbbbbbfft", "cluster_id,run_id,app,rank,step", true, NULL},
    {FJ_PG_CB_FUNC_INS, "chimbuko_func_stats",
     "cluster_id,run_id,app,fid,created_at_ms,name_id,anomalies,calls,anomaly_stats,inclusive,exclusive",
     "bbbbbbfbttt", "cluster_id,run_id,app,fid,created_at_ms", true, FUNC_UNCHANGED},
    {FJ_PG_CB_COUNTER_INS, "chimbuko_counter_stats", "cluster_id,run_id,app,counter_id,created_at_ms,count,total,stats",
     "bbbbbbft", "cluster_id,run_id,app,counter_id,created_at_ms", true, COUNTER_UNCHANGED},
    {FJ_PG_CB_METRICS_INS, "chimbuko_func_metrics",
     "cluster_id,run_id,app,rank,fid,created_at_ms,name_id,anomalies,score_max,severity_total,first_io_step,"
     "last_io_step,min_ts_us,max_ts_us,new_data,all_data",
     "bbbbbbbfffbbbbtt", "cluster_id,run_id,app,rank,fid,created_at_ms", true, NULL},
    {FJ_PG_CB_EVENT_INS, "chimbuko_events",
     "cluster_id,run_id,anomaly,pid,rid,io_step,idx,version,tid,fid,func_id,entry_us,exit_us,runtime_total_us,"
     "runtime_exclusive_us,io_step_tstart_us,io_step_tend_us,outlier_score,outlier_severity,host_id,is_gpu,"
     "gpu_thread,gpu_device,gpu_context,gpu_stream,gpu_parent_event,gpu_parent_tid,gpu_parent_error,algo,"
     "algo_params,call_stack,counter_events,event_window,node_state,gpu_parent",
     "bbobbbbbbbbbbbbbbffbobbbbtbtttttttt", "cluster_id,run_id,anomaly,pid,rid,io_step,idx", false, NULL},
    {FJ_PG_CB_META_INS, "chimbuko_metadata", "cluster_id,run_id,pid,rid,tid,descr_id,value", "bbbbbbt",
     "cluster_id,run_id,pid,rid,tid,descr_id", true, NULL},
    {FJ_PG_CB_PROFILE_INS, "chimbuko_profiles",
     "cluster_id,run_id,app,fid,name_id,anomalies,exclusive_total_us,inclusive,exclusive,anomaly_metrics",
     "bbbbbffttt", "cluster_id,run_id,app,fid", true, NULL},
    {FJ_PG_CB_FINAL_COUNTER_INS, "chimbuko_counters", "cluster_id,run_id,app,counter_id,count,total,stats", "bbbbbft",
     "cluster_id,run_id,app,counter_id", true, NULL},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

/* Built once per process into static storage (part of the program, not of a request: no
 * allocation to fail). An entry that does not fit stays empty and fails cleanly when used. */
#define SPEC_SQL_MAX 8192
static char spec_sql[N_SPECS][SPEC_SQL_MAX];
static pthread_once_t spec_once = PTHREAD_ONCE_INIT;

static const char *type_name(char t)
{
    switch (t) {
    case 't': return "text";
    case 'f': return "float8";
    case 'o': return "boolean";
    default: return "bigint";
    }
}

/* WITH u AS (the rows with their ordinal o), n AS (those the filter keeps), i AS (INSERT ...
 * RETURNING the keys inserted): the smallest ordinal of each inserted key, which is the row that
 * went in (rows are inserted in order, the later copies of a key conflict). */
static void build_spec(const cb_spec *p, char *out)
{
    char args[2048];
    size_t off = 0;
    for (size_t i = 0; p->types[i] && off < sizeof args; i++)
        off += (size_t)snprintf(args + off, sizeof args - off, "%s$%zu::%s[]", i ? "," : "", i + 1,
                                type_name(p->types[i]));
    int n = off < sizeof args
                ? snprintf(out, SPEC_SQL_MAX,
                           "WITH u AS (SELECT * FROM unnest(%s) WITH ORDINALITY AS u(%s,o)), "
                           "n AS (SELECT * FROM u%s%s), "
                           "i AS (INSERT INTO %s(%s) SELECT %s FROM n ORDER BY %s%so ON CONFLICT DO NOTHING "
                           "RETURNING %s) SELECT min(n.o) FROM n JOIN i USING (%s) GROUP BY %s",
                           args, p->cols, p->filter ? " WHERE " : "", p->filter ? p->filter : "", p->table, p->cols,
                           p->cols, p->by_key ? p->keys : "", p->by_key ? "," : "", p->keys, p->keys, p->keys)
                : -1;
    if (n < 0 || n >= SPEC_SQL_MAX)
        out[0] = '\0';
}

static void build_all(void)
{
    for (size_t i = 0; i < N_SPECS; i++)
        build_spec(&specs[i], spec_sql[i]);
}

static const cb_spec *spec_of(fj_pg_stmt_id id, size_t *index)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].id == id) {
            *index = i;
            return &specs[i];
        }
    return NULL;
}

const char *fj_pg_chimbuko_sql(fj_pg_stmt_id id)
{
    size_t k;
    if (!spec_of(id, &k))
        return NULL;
    pthread_once(&spec_once, build_all);
    return spec_sql[k][0] ? spec_sql[k] : NULL;
}

/* --- writing --------------------------------------------------------------------------------- */

typedef struct cw {
    fj_store *s;
    fj_err *err;
    const fj_pg_cb_env *envs;
    size_t n;
    int64_t *run_ids; /* per envelope */
    bool *fresh;      /* per envelope: a packet not stored before */
    fj_pg_cols t;     /* the rows of the statement being built */
    bool *added;      /* per row of the last statement: inserted */
    size_t cap_added;
} cw;

static fj_status oom(cw *w)
{
    return fj_err_set(w->err, FJ_ENOMEM, "db", "out of memory");
}

static fj_status cols_fail(cw *w)
{
    if (w->t.st == FJ_ETOOBIG)
        return fj_err_set(w->err, FJ_ETOOBIG, "db", "a group commit holds more rows than one statement takes");
    return oom(w);
}

static void begin_rows(cw *w, fj_pg_stmt_id id)
{
    size_t k;
    const cb_spec *p = spec_of(id, &k);
    fj_pg_cols_reset(&w->t);
    w->t.ncols = p ? (int)strlen(p->types) : 0;
}

/* Runs statement id over the rows of w->t: marks which were inserted (w->added) and, when count
 * is set, counts every row for its envelope. */
static fj_status run_counted(cw *w, fj_pg_stmt_id id, const char *what, bool count)
{
    size_t n = w->t.nrows;
    if (!n)
        return w->t.st == FJ_OK ? FJ_OK : cols_fail(w);
    if (n > w->cap_added) {
        bool *a = fj_realloc(w->added, n * sizeof *a);
        if (!a)
            return oom(w);
        w->added = a;
        w->cap_added = n;
    }
    memset(w->added, 0, n * sizeof *w->added);
    const char *vals[FJ_PG_MAXCOLS];
    if (fj_pg_cols_finish(&w->t, vals) != FJ_OK)
        return cols_fail(w);
    PGresult *r;
    TRY(fj_pg_run(w->s, id, w->t.ncols, vals, &r, what, w->err));
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t o = fj_pg_int(r, i, 0);
        if (o >= 1 && (size_t)o <= n)
            w->added[o - 1] = true;
    }
    PQclear(r);
    if (count)
        for (size_t i = 0; i < n; i++) {
            fj_write_count *c = w->envs[w->t.env[i]].cnt;
            if (w->added[i])
                c->inserted++;
            else
                c->duplicates++;
        }
    return FJ_OK;
}

/* NaN (an absent or null statistic) is NULL, as SQLite binds it. */
static void col_real(fj_pg_cols *t, int col, double v)
{
    if (isnan(v))
        fj_pg_null(t, col);
    else
        fj_pg_f64(t, col, v);
}

/* --- interned strings ----------------------------------------------------------------------- */

/* Marks s (NULL: "") as needed: a name missing from the handle's cache becomes a row of w->t and
 * pending (-1) in the cache until resolve_strings. */
static void need(cw *w, const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    if (fj_pg_map_get(&w->s->names, FJ_PG_NS_STRING, s, len))
        return;
    if (fj_pg_map_put(&w->s->names, FJ_PG_NS_STRING, s, len, -1) != FJ_OK) {
        w->t.st = FJ_ENOMEM;
        return;
    }
    fj_pg_text(&w->t, 0, s);
    fj_pg_row(&w->t, 0);
}

static void need_all(cw *w, const fj_chimbuko *cb)
{
    need(w, cb->run ? cb->run : "default");
    const fj_cb_packet *p = &cb->packet;
    for (size_t i = 0; i < p->n_funcs; i++)
        need(w, p->funcs[i].name);
    for (size_t i = 0; i < p->n_counters; i++)
        need(w, p->counters[i].counter);
    for (size_t i = 0; i < p->n_metrics; i++)
        need(w, p->metrics[i].fname);
    for (size_t i = 0; i < cb->n_events; i++) {
        need(w, cb->events[i].func);
        if (cb->events[i].hostname)
            need(w, cb->events[i].hostname);
    }
    for (size_t i = 0; i < cb->n_meta; i++)
        need(w, cb->meta[i].descr);
    for (size_t i = 0; i < cb->n_profiles; i++)
        need(w, cb->profiles[i].fname);
    for (size_t i = 0; i < cb->n_counters; i++)
        need(w, cb->counters[i].counter);
}

/* Interns every string of the group's envelopes: the missing ones in two statements. (A failed
 * transaction clears the whole cache: ids created in it are gone.) */
static fj_status resolve_strings(cw *w)
{
    fj_pg_cols_reset(&w->t);
    w->t.ncols = 1;
    for (size_t k = 0; k < w->n; k++)
        need_all(w, &w->envs[k].e->u.chimbuko);
    if (w->t.st != FJ_OK)
        return cols_fail(w);
    if (!w->t.nrows)
        return FJ_OK;
    const char *vals[1];
    if (fj_pg_cols_finish(&w->t, vals) != FJ_OK)
        return cols_fail(w);
    TRY(fj_pg_run(w->s, FJ_PG_STRING_INS, 1, vals, NULL, "intern names", w->err));
    PGresult *r;
    TRY(fj_pg_run(w->s, FJ_PG_STRING_GET, 1, vals, &r, "look up names", w->err));
    fj_status st = FJ_OK;
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 1);
        if (fj_pg_map_put(&w->s->names, FJ_PG_NS_STRING, name, strlen(name), fj_pg_int(r, i, 0)) != FJ_OK)
            st = oom(w);
    }
    if (st == FJ_OK && (size_t)PQntuples(r) != w->t.nrows)
        st = fj_err_set(w->err, FJ_EINTERNAL, "db", "postgres: %zu names interned, %d found", w->t.nrows,
                        PQntuples(r));
    PQclear(r);
    return st;
}

/* The id of an interned string (NULL: ""). */
static int64_t sid(cw *w, const char *s)
{
    if (!s)
        s = "";
    int64_t id = fj_pg_map_get(&w->s->names, FJ_PG_NS_STRING, s, strlen(s));
    return id > 0 ? id : 0;
}

/* --- packets --------------------------------------------------------------------------------- */

static uint64_t packet_rows(const fj_cb_packet *p)
{
    uint64_t n = 1 + p->n_ranks + p->n_funcs + p->n_counters + p->n_metrics;
    for (size_t i = 0; i < p->n_ranks; i++)
        n += p->ranks[i].n_steps;
    return n;
}

static bool is_packet(const fj_pg_cb_env *v)
{
    return v->e->u.chimbuko.collection == FJ_CB_PACKET;
}

/* The packet rows: which packets are new (w->fresh). A packet stored before was committed with
 * everything in it, so all of its rows count as duplicates. */
static fj_status write_packet_rows(cw *w)
{
    fj_pg_cols *t = &w->t;
    begin_rows(w, FJ_PG_CB_PACKET_INS);
    fj_time now = fj_time_now();
    for (size_t k = 0; k < w->n; k++) {
        if (!is_packet(&w->envs[k]))
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        size_t n_steps = 0;
        for (size_t i = 0; i < p->n_ranks; i++)
            n_steps += p->ranks[i].n_steps;
        fj_pg_i64(t, 0, w->envs[k].cluster_id);
        fj_pg_i64(t, 1, w->run_ids[k]);
        fj_pg_i64(t, 2, p->created_at_ms);
        fj_pg_i64(t, 3, p->version);
        fj_pg_i64(t, 4, now);
        fj_pg_u64(t, 5, p->n_ranks);
        fj_pg_u64(t, 6, n_steps);
        fj_pg_u64(t, 7, p->n_funcs);
        fj_pg_u64(t, 8, p->n_counters);
        fj_pg_u64(t, 9, p->n_metrics);
        fj_pg_row(t, k);
    }
    TRY(run_counted(w, FJ_PG_CB_PACKET_INS, "insert chimbuko packets", false));
    for (size_t i = 0; i < t->nrows; i++) {
        size_t k = t->env[i];
        fj_write_count *c = w->envs[k].cnt;
        w->fresh[k] = w->added[i];
        if (w->added[i])
            c->inserted++;
        else
            c->duplicates += packet_rows(&w->envs[k].e->u.chimbuko.packet);
    }
    return FJ_OK;
}

/* Rank statistics, IO steps and function metrics of the new packets, one statement each. */
static fj_status write_packet_tables(cw *w)
{
    fj_pg_cols *t = &w->t;
    begin_rows(w, FJ_PG_CB_RANK_INS);
    for (size_t k = 0; k < w->n; k++) {
        if (!w->fresh[k])
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        for (size_t i = 0; i < p->n_ranks; i++) {
            const fj_cb_rank *r = &p->ranks[i];
            fj_pg_i64(t, 0, w->envs[k].cluster_id);
            fj_pg_i64(t, 1, w->run_ids[k]);
            fj_pg_u64(t, 2, r->app);
            fj_pg_u64(t, 3, r->rank);
            fj_pg_i64(t, 4, p->created_at_ms);
            col_real(t, 5, r->stats.accumulate);
            fj_pg_u64(t, 6, r->stats.count);
            fj_pg_text(t, 7, r->stats.json);
            fj_pg_row(t, k);
        }
    }
    TRY(run_counted(w, FJ_PG_CB_RANK_INS, "insert chimbuko rank stats", true));

    begin_rows(w, FJ_PG_CB_STEP_INS);
    for (size_t k = 0; k < w->n; k++) {
        if (!w->fresh[k])
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        for (size_t i = 0; i < p->n_ranks; i++)
            for (size_t j = 0; j < p->ranks[i].n_steps; j++) {
                const fj_cb_step *s = &p->ranks[i].steps[j];
                fj_pg_i64(t, 0, w->envs[k].cluster_id);
                fj_pg_i64(t, 1, w->run_ids[k]);
                fj_pg_u64(t, 2, s->app);
                fj_pg_u64(t, 3, s->rank);
                fj_pg_u64(t, 4, s->step);
                fj_pg_i64(t, 5, p->created_at_ms);
                fj_pg_i64(t, 6, s->min_ts_us);
                fj_pg_i64(t, 7, s->max_ts_us);
                fj_pg_u64(t, 8, s->n_anomalies);
                if (s->scores.json) {
                    col_real(t, 9, s->scores.maximum);
                    col_real(t, 10, s->scores.mean);
                } else {
                    fj_pg_null(t, 9);
                    fj_pg_null(t, 10);
                }
                fj_pg_text(t, 11, s->scores.json);
                fj_pg_row(t, k);
            }
    }
    TRY(run_counted(w, FJ_PG_CB_STEP_INS, "insert chimbuko rank steps", true));

    begin_rows(w, FJ_PG_CB_METRICS_INS);
    for (size_t k = 0; k < w->n; k++) {
        if (!w->fresh[k])
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        for (size_t i = 0; i < p->n_metrics; i++) {
            const fj_cb_func_metrics *m = &p->metrics[i];
            fj_pg_i64(t, 0, w->envs[k].cluster_id);
            fj_pg_i64(t, 1, w->run_ids[k]);
            fj_pg_u64(t, 2, m->app);
            fj_pg_u64(t, 3, m->rank);
            fj_pg_u64(t, 4, m->fid);
            fj_pg_i64(t, 5, p->created_at_ms);
            fj_pg_i64(t, 6, sid(w, m->fname));
            col_real(t, 7, m->new_data.count.accumulate);
            col_real(t, 8, m->new_data.score.maximum);
            col_real(t, 9, m->new_data.severity.accumulate);
            fj_pg_u64(t, 10, m->new_data.first_io_step);
            fj_pg_u64(t, 11, m->new_data.last_io_step);
            fj_pg_i64(t, 12, m->new_data.min_ts_us);
            fj_pg_i64(t, 13, m->new_data.max_ts_us);
            fj_pg_text(t, 14, m->new_data.json ? m->new_data.json : "null");
            fj_pg_text(t, 15, m->all_data.json ? m->all_data.json : "null");
            fj_pg_row(t, k);
        }
    }
    return run_counted(w, FJ_PG_CB_METRICS_INS, "insert chimbuko function metrics", true);
}

/* The function profiles and counters of one new packet (envelope k): each compared with the point
 * before it, which an earlier packet of this group may have written. */
static fj_status write_packet_points(cw *w, size_t k)
{
    fj_pg_cols *t = &w->t;
    const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
    begin_rows(w, FJ_PG_CB_FUNC_INS);
    for (size_t i = 0; i < p->n_funcs; i++) {
        const fj_cb_func *f = &p->funcs[i];
        fj_pg_i64(t, 0, w->envs[k].cluster_id);
        fj_pg_i64(t, 1, w->run_ids[k]);
        fj_pg_u64(t, 2, f->app);
        fj_pg_u64(t, 3, f->fid);
        fj_pg_i64(t, 4, p->created_at_ms);
        fj_pg_i64(t, 5, sid(w, f->name));
        col_real(t, 6, f->anomalies.accumulate);
        fj_pg_u64(t, 7, f->inclusive.count);
        fj_pg_text(t, 8, f->anomalies.json);
        fj_pg_text(t, 9, f->inclusive.json);
        fj_pg_text(t, 10, f->exclusive.json);
        fj_pg_row(t, k);
    }
    TRY(run_counted(w, FJ_PG_CB_FUNC_INS, "insert chimbuko function points", true));

    begin_rows(w, FJ_PG_CB_COUNTER_INS);
    for (size_t i = 0; i < p->n_counters; i++) {
        const fj_cb_counter *c = &p->counters[i];
        fj_pg_i64(t, 0, w->envs[k].cluster_id);
        fj_pg_i64(t, 1, w->run_ids[k]);
        fj_pg_u64(t, 2, c->app);
        fj_pg_i64(t, 3, sid(w, c->counter));
        fj_pg_i64(t, 4, p->created_at_ms);
        fj_pg_u64(t, 5, c->stats.count);
        col_real(t, 6, c->stats.accumulate);
        fj_pg_text(t, 7, c->stats.json);
        fj_pg_row(t, k);
    }
    return run_counted(w, FJ_PG_CB_COUNTER_INS, "insert chimbuko counter points", true);
}

/* --- provenance records ---------------------------------------------------------------------- */

static void add_event(cw *w, size_t k, bool anomaly, const fj_cb_event *e)
{
    fj_pg_cols *t = &w->t;
    int c = 0;
    fj_pg_i64(t, c++, w->envs[k].cluster_id);
    fj_pg_i64(t, c++, w->run_ids[k]);
    fj_pg_text(t, c++, anomaly ? "t" : "f");
    fj_pg_u64(t, c++, e->pid);
    fj_pg_u64(t, c++, e->rid);
    fj_pg_u64(t, c++, e->io_step);
    fj_pg_u64(t, c++, e->idx);
    fj_pg_i64(t, c++, e->version);
    fj_pg_u64(t, c++, e->tid);
    fj_pg_u64(t, c++, e->fid);
    fj_pg_i64(t, c++, sid(w, e->func));
    fj_pg_i64(t, c++, e->entry_us);
    if (e->exit_us) /* 0: had not exited */
        fj_pg_i64(t, c++, e->exit_us);
    else
        fj_pg_null(t, c++);
    fj_pg_i64(t, c++, e->runtime_total_us);
    fj_pg_i64(t, c++, e->runtime_exclusive_us);
    fj_pg_i64(t, c++, e->io_step_tstart_us);
    fj_pg_i64(t, c++, e->io_step_tend_us);
    col_real(t, c++, e->outlier_score);
    col_real(t, c++, e->outlier_severity);
    if (e->hostname)
        fj_pg_i64(t, c++, sid(w, e->hostname));
    else
        fj_pg_null(t, c++);
    if (e->is_gpu_event >= 0)
        fj_pg_text(t, c++, e->is_gpu_event ? "t" : "f");
    else
        fj_pg_null(t, c++);
    const uint64_t gpu[4] = {e->gpu_thread, e->gpu_device, e->gpu_context, e->gpu_stream};
    for (int i = 0; i < 4; i++) {
        if (e->has_gpu_location)
            fj_pg_u64(t, c++, gpu[i]);
        else
            fj_pg_null(t, c++);
    }
    fj_pg_text(t, c++, e->gpu_parent_event);
    if (e->gpu_parent_event)
        fj_pg_u64(t, c++, e->gpu_parent_tid);
    else
        fj_pg_null(t, c++);
    const char *texts[] = {e->gpu_parent_error, e->algo,         e->algo_params, e->call_stack,
                           e->counter_events,   e->event_window, e->node_state,  e->gpu_parent};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        fj_pg_text(t, c++, texts[i]);
    fj_pg_row(t, k);
}

/* The records of every provenance envelope of the group, one statement per table. */
static fj_status write_records(cw *w)
{
    fj_pg_cols *t = &w->t;
    begin_rows(w, FJ_PG_CB_EVENT_INS);
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        for (size_t i = 0; i < cb->n_events; i++)
            add_event(w, k, cb->collection == FJ_CB_ANOMALIES, &cb->events[i]);
    }
    TRY(run_counted(w, FJ_PG_CB_EVENT_INS, "insert chimbuko events", true));

    begin_rows(w, FJ_PG_CB_META_INS);
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        for (size_t i = 0; i < cb->n_meta; i++) {
            const fj_cb_meta *m = &cb->meta[i];
            fj_pg_i64(t, 0, w->envs[k].cluster_id);
            fj_pg_i64(t, 1, w->run_ids[k]);
            fj_pg_u64(t, 2, m->pid);
            fj_pg_u64(t, 3, m->rid);
            fj_pg_u64(t, 4, m->tid);
            fj_pg_i64(t, 5, sid(w, m->descr));
            fj_pg_text(t, 6, m->value ? m->value : "");
            fj_pg_row(t, k);
        }
    }
    TRY(run_counted(w, FJ_PG_CB_META_INS, "insert chimbuko metadata", true));

    begin_rows(w, FJ_PG_CB_PROFILE_INS);
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        for (size_t i = 0; i < cb->n_profiles; i++) {
            const fj_cb_profile *p = &cb->profiles[i];
            fj_pg_i64(t, 0, w->envs[k].cluster_id);
            fj_pg_i64(t, 1, w->run_ids[k]);
            fj_pg_u64(t, 2, p->app);
            fj_pg_u64(t, 3, p->fid);
            fj_pg_i64(t, 4, sid(w, p->fname));
            if (p->has_anomalies)
                col_real(t, 5, p->anomalies.count.accumulate);
            else
                fj_pg_null(t, 5);
            if (p->has_runtime) {
                col_real(t, 6, p->exclusive.accumulate);
                fj_pg_text(t, 7, p->inclusive.json);
                fj_pg_text(t, 8, p->exclusive.json);
            } else {
                fj_pg_null(t, 6);
                fj_pg_null(t, 7);
                fj_pg_null(t, 8);
            }
            fj_pg_text(t, 9, p->has_anomalies ? p->anomalies.json : NULL);
            fj_pg_row(t, k);
        }
    }
    TRY(run_counted(w, FJ_PG_CB_PROFILE_INS, "insert chimbuko profiles", true));

    begin_rows(w, FJ_PG_CB_FINAL_COUNTER_INS);
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        for (size_t i = 0; i < cb->n_counters; i++) {
            const fj_cb_counter *c = &cb->counters[i];
            fj_pg_i64(t, 0, w->envs[k].cluster_id);
            fj_pg_i64(t, 1, w->run_ids[k]);
            fj_pg_u64(t, 2, c->app);
            fj_pg_i64(t, 3, sid(w, c->counter));
            fj_pg_u64(t, 4, c->stats.count);
            col_real(t, 5, c->stats.accumulate);
            fj_pg_text(t, 6, c->stats.json);
            fj_pg_row(t, k);
        }
    }
    return run_counted(w, FJ_PG_CB_FINAL_COUNTER_INS, "insert chimbuko counters", true);
}

static fj_status write_group(cw *w)
{
    TRY(resolve_strings(w));
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        w->run_ids[k] = sid(w, cb->run ? cb->run : "default");
    }
    TRY(write_packet_rows(w));
    TRY(write_packet_tables(w));
    for (size_t k = 0; k < w->n; k++)
        if (w->fresh[k])
            TRY(write_packet_points(w, k));
    return write_records(w);
}

fj_status fj_pg_write_chimbuko(fj_store *s, const fj_pg_cb_env *envs, size_t n, fj_err *err)
{
    if (!n)
        return FJ_OK;
    cw w = {.s = s, .err = err, .envs = envs, .n = n};
    fj_pg_cols_init(&w.t, 0);
    w.run_ids = fj_calloc(n, sizeof *w.run_ids);
    w.fresh = fj_calloc(n, sizeof *w.fresh);
    fj_status st = w.run_ids && w.fresh ? write_group(&w) : oom(&w);
    fj_pg_cols_free(&w.t);
    fj_free(w.added);
    fj_free(w.run_ids);
    fj_free(w.fresh);
    return st;
}

/* --- queries: shared ------------------------------------------------------------------------- */

/* A query: its read transaction (fj_pgq, one REPEATABLE READ snapshot), and the SQL under
 * construction with its parameters. Text is compared and sorted byte-wise (COLLATE "C") and NULL
 * sorts low (NULLS LAST in descending orders), as in SQLite, so that both backends answer alike. */
typedef struct cq {
    fj_pgq x;
    fj_query fq; /* the part of fj_pgq's query it reads: the cluster */
    fj_cb_query *q;
    fj_sink *k;
    fj_err *err;
    fj_pgb b;
    bool began;
} cq;

static fj_status cq_begin(cq *x, fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    memset(x, 0, sizeof *x);
    x->q = q;
    x->k = k;
    x->err = err;
    q->next.set = false;
    fj_pgb_init(&x->b);
    if (!q->cluster || !*q->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    x->fq.cluster = q->cluster;
    fj_status st = fj_pgq_begin(&x->x, s, &x->fq, k, err);
    if (st != FJ_OK)
        return st;
    x->began = true;
    return fj_pgq_cluster(&x->x);
}

static fj_status cq_end(cq *x, fj_status st)
{
    fj_pgb_free(&x->b);
    return x->began ? fj_pgq_end(&x->x, st) : st;
}

static void put(cq *x, const char *text)
{
    fj_pgb_put(&x->b, text);
}

/* Appends text followed by a parameter. */
static void put_int(cq *x, const char *text, int64_t v)
{
    fj_pgb_put(&x->b, text);
    fj_pgb_int(&x->b, v);
}

static void put_text(cq *x, const char *text, const char *v)
{
    fj_pgb_put(&x->b, text);
    fj_pgb_text(&x->b, v);
}

/* Prepares the SQL built so far and starts over with an empty builder. */
static fj_status cq_prepare(cq *x, fj_pgs **st)
{
    fj_status rs = fj_pgb_prepare(&x->x, &x->b, st);
    fj_pgb_free(&x->b);
    fj_pgb_init(&x->b);
    return rs;
}

/* The filters every table shares: cluster (the first parameter, $1), run, app. t: the alias. */
static void common_filters(cq *x, const char *t, const char *app_col)
{
    fj_pgb_printf(&x->b, " WHERE %s.cluster_id = ", t);
    fj_pgb_int(&x->b, x->x.cluster_id);
    if (x->q->run) {
        fj_pgb_printf(&x->b, " AND %s.run_id = (SELECT id FROM strings WHERE s = ", t);
        fj_pgb_text(&x->b, x->q->run);
        put(x, ")");
    }
    if (x->q->app >= 0) {
        fj_pgb_printf(&x->b, " AND %s.%s = ", t, app_col);
        fj_pgb_int(&x->b, x->q->app);
    }
}

static void filter_int(cq *x, const char *col, int64_t v)
{
    if (v < 0)
        return;
    fj_pgb_printf(&x->b, " AND %s = ", col);
    fj_pgb_int(&x->b, v);
}

/* A time window on packet times (milliseconds) in a column. */
static void filter_ms(cq *x, const char *col)
{
    if (x->q->from_us > 0) {
        fj_pgb_printf(&x->b, " AND %s >= ", col);
        fj_pgb_int(&x->b, (x->q->from_us + 999) / 1000);
    }
    if (x->q->to_us > 0) {
        fj_pgb_printf(&x->b, " AND %s <= ", col);
        fj_pgb_int(&x->b, x->q->to_us / 1000);
    }
}

static void put_limit(cq *x, size_t extra)
{
    if (x->q->limit)
        put_int(x, " LIMIT ", (int64_t)(x->q->limit + extra));
}

/* Hands every row of st to the sink, each column typed as the table says. */
static fj_status emit(cq *x, fj_pgs *st, const fj_qtable *t)
{
    fj_status rs = x->k->table(x->k, t);
    fj_value v[40];
    int r = FJ_PGS_DONE;
    while (rs == FJ_OK && (r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        for (size_t i = 0; i < t->n_cols; i++)
            v[i] = fj_pv_col(st, (int)i, t->cols[i].type);
        rs = x->k->row(x->k, v);
    }
    if (rs == FJ_OK && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x->x, r, t->name);
    return rs;
}

/* Prepares the SQL built so far and emits its rows as table t. */
static fj_status run_emit(cq *x, const fj_qtable *t)
{
    fj_pgs *st = NULL;
    fj_status rs = cq_prepare(x, &st);
    if (rs == FJ_OK)
        rs = emit(x, st, t);
    fj_pgs_finalize(st);
    return rs;
}

/* --- runs ------------------------------------------------------------------------------------ */

fj_status fj_pg_cb_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    put_int(&x, "WITH runs(run_id) AS (SELECT run_id FROM chimbuko_packets WHERE cluster_id = ", x.x.cluster_id);
    put(&x, " UNION SELECT run_id FROM chimbuko_events WHERE cluster_id = $1"
            " UNION SELECT run_id FROM chimbuko_metadata WHERE cluster_id = $1"
            " UNION SELECT run_id FROM chimbuko_profiles WHERE cluster_id = $1"
            " UNION SELECT run_id FROM chimbuko_counters WHERE cluster_id = $1)"
            " SELECT r.s,"
            " (SELECT count(*) FROM chimbuko_packets p WHERE p.cluster_id = $1 AND p.run_id = runs.run_id),"
            " (SELECT min(created_at_ms) / 1000 FROM chimbuko_packets p"
            "  WHERE p.cluster_id = $1 AND p.run_id = runs.run_id),"
            " (SELECT max(created_at_ms) / 1000 FROM chimbuko_packets p"
            "  WHERE p.cluster_id = $1 AND p.run_id = runs.run_id),"
            " (SELECT count(*) FROM chimbuko_events e"
            "  WHERE e.cluster_id = $1 AND e.run_id = runs.run_id AND e.anomaly),"
            " (SELECT count(*) FROM chimbuko_events e"
            "  WHERE e.cluster_id = $1 AND e.run_id = runs.run_id AND NOT e.anomaly),"
            " (SELECT count(*) FROM (SELECT DISTINCT app, rank FROM chimbuko_rank_steps t WHERE t.cluster_id = $1"
            "  AND t.run_id = runs.run_id) d)"
            " FROM runs JOIN strings r ON r.id = runs.run_id");
    if (q->run)
        put_text(&x, " WHERE r.s = ", q->run);
    put(&x, " ORDER BY r.s COLLATE \"C\"");
    return cq_end(&x, run_emit(&x, &fj_qt_cb_runs));
}

/* --- series ---------------------------------------------------------------------------------- */

fj_status fj_pg_cb_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    const fj_qtable *t;
    switch (q->series) {
    case FJ_CBS_RANKS:
        t = &fj_qt_cb_ranks;
        put(&x, "SELECT r.s, t.app, t.rank, t.step, t.max_ts_us / 1000000, t.min_ts_us, t.max_ts_us, t.n_anomalies,"
                " t.score_max, t.score_mean, t.scores FROM chimbuko_rank_steps t JOIN strings r ON r.id = t.run_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.rank", q->rank);
        if (q->step_from >= 0)
            put_int(&x, " AND t.step >= ", q->step_from);
        if (q->step_to >= 0)
            put_int(&x, " AND t.step <= ", q->step_to);
        if (q->from_us > 0)
            put_int(&x, " AND t.max_ts_us >= ", q->from_us);
        if (q->to_us > 0)
            put_int(&x, " AND t.min_ts_us <= ", q->to_us);
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, t.rank, t.step");
        break;
    case FJ_CBS_FUNCTIONS:
        t = &fj_qt_cb_functions;
        /* round() of numeric, not of float8: half away from zero, as SQLite rounds */
        put(&x, "SELECT r.s, t.app, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
                " round(t.anomalies::numeric)::bigint, t.calls, t.anomaly_stats, t.inclusive, t.exclusive"
                " FROM chimbuko_func_stats t JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, t.fid, t.created_at_ms");
        break;
    case FJ_CBS_METRICS:
        t = &fj_qt_cb_metrics;
        put(&x, "SELECT r.s, t.app, t.rank, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
                " round(t.anomalies::numeric)::bigint, t.score_max, t.severity_total, t.first_io_step,"
                " t.last_io_step, t.new_data, t.all_data FROM chimbuko_func_metrics t"
                " JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.rank", q->rank);
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, t.rank, t.fid, t.created_at_ms");
        break;
    case FJ_CBS_COUNTERS:
        t = &fj_qt_cb_counters;
        put(&x, "SELECT r.s, t.app, n.s, t.created_at_ms / 1000, t.created_at_ms, t.count, t.total, t.stats"
                " FROM chimbuko_counter_stats t JOIN strings r ON r.id = t.run_id"
                " JOIN strings n ON n.id = t.counter_id");
        common_filters(&x, "t", "app");
        if (q->func)
            put_text(&x, " AND n.s = ", q->func);
        filter_ms(&x, "t.created_at_ms");
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, n.s COLLATE \"C\", t.created_at_ms");
        break;
    default:
        rs = fj_err_set(err, FJ_EINVAL, "series", "unknown series %d", (int)q->series);
        return cq_end(&x, rs);
    }
    put_limit(&x, 0);
    return cq_end(&x, run_emit(&x, t));
}

/* --- top ranks and functions ------------------------------------------------------------------- */

fj_status fj_pg_cb_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
    fj_status rs = cq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return cq_end(&x, rs);
    put(&x, "SELECT r.s, t.app, t.rank, sum(t.n_anomalies)::bigint, count(*), max(t.score_max),"
            " min(t.min_ts_us) / 1000000, max(t.max_ts_us) / 1000000 FROM chimbuko_rank_steps t"
            " JOIN strings r ON r.id = t.run_id");
    common_filters(&x, "t", "app");
    filter_int(&x, "t.rank", q->rank);
    if (q->from_us > 0)
        put_int(&x, " AND t.max_ts_us >= ", q->from_us);
    if (q->to_us > 0)
        put_int(&x, " AND t.min_ts_us <= ", q->to_us);
    put(&x, " GROUP BY r.s, t.app, t.rank ORDER BY 4 DESC NULLS LAST, 6 DESC NULLS LAST, r.s COLLATE \"C\","
            " t.app, t.rank");
    put_limit(&x, 0);
    if ((rs = run_emit(&x, &fj_qt_cb_top_ranks)) != FJ_OK)
        return cq_end(&x, rs);

    put(&x, "SELECT r.s, t.app, t.fid, max(n.s COLLATE \"C\"), round(sum(t.anomalies)::numeric)::bigint,"
            " count(DISTINCT t.rank), max(t.score_max), sum(t.severity_total) FROM chimbuko_func_metrics t"
            " JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id");
    common_filters(&x, "t", "app");
    filter_int(&x, "t.rank", q->rank);
    filter_int(&x, "t.fid", q->fid);
    if (q->func)
        put_text(&x, " AND n.s = ", q->func);
    filter_ms(&x, "t.created_at_ms");
    put(&x, " GROUP BY r.s, t.app, t.fid ORDER BY 5 DESC NULLS LAST, 7 DESC NULLS LAST, r.s COLLATE \"C\","
            " t.app, t.fid");
    put_limit(&x, 0);
    return cq_end(&x, run_emit(&x, &fj_qt_cb_top_functions));
}

/* --- provenance records ---------------------------------------------------------------------- */

enum { EV_ID, EV_RID, EV_STEP, EV_IDX, EV_ANOMALY, EV_RUN, EV_PID, EV_TID, EV_FID, EV_FUNC, EV_HOST, EV_ENTRY,
       EV_EXIT, EV_RT, EV_RX, EV_SCORE, EV_SEV, EV_GPU, EV_GT, EV_GD, EV_GC, EV_GS, EV_GPE, EV_GPERR, EV_ALGO,
       EV_ALGOP, EV_CS, EV_CE, EV_EW, EV_NS, EV_GP, EV_VERSION };

typedef struct ev_scratch {
    char label[72];
    char gpu[160];
} ev_scratch;

static fj_status event_row_into(cq *x, fj_pgs *st, fj_value *v, ev_scratch *sc)
{
    snprintf(sc->label, sizeof sc->label, "%lld:%lld:%lld", (long long)fj_pgs_int(st, EV_RID),
             (long long)fj_pgs_int(st, EV_STEP), (long long)fj_pgs_int(st, EV_IDX));
    bool gpu = !fj_pgs_isnull(st, EV_GT);
    if (gpu)
        snprintf(sc->gpu, sizeof sc->gpu, "{\"thread\":%lld,\"device\":%lld,\"context\":%lld,\"stream\":%lld}",
                 (long long)fj_pgs_int(st, EV_GT), (long long)fj_pgs_int(st, EV_GD),
                 (long long)fj_pgs_int(st, EV_GC), (long long)fj_pgs_int(st, EV_GS));
    int64_t entry = fj_pgs_int(st, EV_ENTRY);
    size_t i = 0;
    v[i++] = fj_pv_text(sc->label);
    v[i++] = fj_pv_text(fj_pgs_int(st, EV_ANOMALY) ? "anomaly" : "normal");
    v[i++] = fj_pv_col(st, EV_RUN, FJ_VT_TEXT);
    v[i++] = fj_pv_col(st, EV_PID, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_RID, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_TID, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_STEP, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_IDX, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_FID, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_FUNC, FJ_VT_TEXT);
    v[i++] = fj_pv_col(st, EV_HOST, FJ_VT_TEXT);
    v[i++] = entry > 0 ? fj_pv_time(entry / 1000000) : fj_pv_null();
    v[i++] = fj_pv_int(entry);
    v[i++] = fj_pv_col(st, EV_EXIT, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_RT, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_RX, FJ_VT_INT);
    v[i++] = fj_pv_col(st, EV_SCORE, FJ_VT_REAL);
    v[i++] = fj_pv_col(st, EV_SEV, FJ_VT_REAL);
    v[i++] = fj_pv_col(st, EV_GPU, FJ_VT_BOOL);
    v[i++] = gpu ? fj_pv_json(sc->gpu) : fj_pv_null();
    v[i++] = fj_pv_col(st, EV_GPE, FJ_VT_TEXT);
    v[i++] = fj_pv_col(st, EV_GPERR, FJ_VT_TEXT);
    v[i++] = fj_pv_col(st, EV_ALGO, FJ_VT_TEXT);
    for (int c = EV_ALGOP; c <= EV_GP; c++)
        v[i++] = x->q->brief ? fj_pv_null() : fj_pv_col(st, c, FJ_VT_JSON);
    v[i++] = fj_pv_col(st, EV_VERSION, FJ_VT_INT);
    return i == fj_qt_cb_events.n_cols ? FJ_OK : fj_err_set(x->err, FJ_EINTERNAL, NULL, "event columns");
}

static fj_status query_events(cq *x)
{
    fj_cb_query *q = x->q;
    /* brief: the large JSON columns are not even read */
    put(x, q->brief ? "SELECT e.id, e.rid, e.io_step, e.idx, e.anomaly, r.s, e.pid, e.tid, e.fid, f.s, h.s, e.entry_us,"
                      " e.exit_us, e.runtime_total_us, e.runtime_exclusive_us, e.outlier_score, e.outlier_severity,"
                      " e.is_gpu, e.gpu_thread, e.gpu_device, e.gpu_context, e.gpu_stream, e.gpu_parent_event,"
                      " e.gpu_parent_error, e.algo, NULL, NULL, NULL, NULL, NULL, NULL, e.version"
                    : "SELECT e.id, e.rid, e.io_step, e.idx, e.anomaly, r.s, e.pid, e.tid, e.fid, f.s, h.s, e.entry_us,"
                      " e.exit_us, e.runtime_total_us, e.runtime_exclusive_us, e.outlier_score, e.outlier_severity,"
                      " e.is_gpu, e.gpu_thread, e.gpu_device, e.gpu_context, e.gpu_stream, e.gpu_parent_event,"
                      " e.gpu_parent_error, e.algo, e.algo_params, e.call_stack, e.counter_events, e.event_window,"
                      " e.node_state, e.gpu_parent, e.version");
    put(x, " FROM chimbuko_events e JOIN strings r ON r.id = e.run_id JOIN strings f ON f.id = e.func_id"
           " LEFT JOIN strings h ON h.id = e.host_id");
    common_filters(x, "e", "pid");
    if (q->collection == FJ_CB_ANOMALIES)
        put(x, " AND e.anomaly");
    else if (q->collection == FJ_CB_NORMALEXECS)
        put(x, " AND NOT e.anomaly");
    filter_int(x, "e.rid", q->rank);
    filter_int(x, "e.fid", q->fid);
    filter_int(x, "e.idx", q->idx);
    if (q->func)
        put_text(x, " AND f.s = ", q->func);
    if (q->step_from >= 0)
        put_int(x, " AND e.io_step >= ", q->step_from);
    if (q->step_to >= 0)
        put_int(x, " AND e.io_step <= ", q->step_to);
    if (q->from_us > 0)
        put_int(x, " AND e.entry_us >= ", q->from_us);
    if (q->to_us > 0)
        put_int(x, " AND e.entry_us <= ", q->to_us);
    if (q->after.set) {
        int64_t at = (int64_t)q->after.v;
        put_int(x, " AND (e.entry_us > ", at);
        put_int(x, " OR (e.entry_us = ", at);
        put_int(x, " AND e.id > ", q->after.id);
        put(x, "))");
    }
    put(x, " ORDER BY e.entry_us, e.id");
    put_limit(x, 1); /* one more than a page: is there a next one? */
    fj_pgs *st = NULL;
    fj_status rs = cq_prepare(x, &st);
    if (rs == FJ_OK)
        rs = x->k->table(x->k, &fj_qt_cb_events);
    fj_value v[40];
    ev_scratch sc;
    size_t n = 0;
    int r = FJ_PGS_DONE;
    while (rs == FJ_OK && (r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        if (q->limit && n == q->limit) { /* one more exists: the page ends at the previous row */
            q->next.set = true;
            break;
        }
        q->next.v = (double)fj_pgs_int(st, EV_ENTRY);
        q->next.id = fj_pgs_int(st, EV_ID);
        if ((rs = event_row_into(x, st, v, &sc)) == FJ_OK)
            rs = x->k->row(x->k, v);
        n++;
    }
    if (rs == FJ_OK && r != FJ_PGS_DONE && r != FJ_PGS_ROW)
        rs = fj_pgq_fail(&x->x, r, "events");
    if (!q->next.set)
        q->next.v = 0, q->next.id = 0;
    fj_pgs_finalize(st);
    return rs;
}

fj_status fj_pg_cb_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    cq x;
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
        put(&x, " ORDER BY r.s COLLATE \"C\", t.pid, t.rid, t.tid, d.s COLLATE \"C\"");
        put_limit(&x, 0);
        return cq_end(&x, run_emit(&x, &fj_qt_cb_metadata));
    case FJ_CB_FUNC_STATS:
        put(&x, "SELECT r.s, t.app, t.fid, n.s, round(t.anomalies::numeric)::bigint, t.exclusive_total_us,"
                " t.inclusive, t.exclusive, t.anomaly_metrics FROM chimbuko_profiles t JOIN strings r ON"
                " r.id = t.run_id JOIN strings n ON n.id = t.name_id");
        common_filters(&x, "t", "app");
        filter_int(&x, "t.fid", q->fid);
        if (q->func)
            put_text(&x, " AND n.s = ", q->func);
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, t.fid");
        put_limit(&x, 0);
        return cq_end(&x, run_emit(&x, &fj_qt_cb_profiles));
    case FJ_CB_COUNTER_STATS:
        put(&x, "SELECT r.s, t.app, n.s, t.count, t.total, t.stats FROM chimbuko_counters t JOIN strings r ON"
                " r.id = t.run_id JOIN strings n ON n.id = t.counter_id");
        common_filters(&x, "t", "app");
        if (q->func)
            put_text(&x, " AND n.s = ", q->func);
        put(&x, " ORDER BY r.s COLLATE \"C\", t.app, n.s COLLATE \"C\"");
        put_limit(&x, 0);
        return cq_end(&x, run_emit(&x, &fj_qt_cb_final_counters));
    default:
        return cq_end(&x, fj_err_set(err, FJ_EINVAL, "collection", "unknown collection %d", (int)q->collection));
    }
}
