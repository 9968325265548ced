/* storage/chimbuko/query.c — the Chimbuko query semantics every backend shares (storage/chimbuko/query.h): which
 * rows a filter keeps, and the values of the result rows, events with their labels and pages. */
#include "storage/chimbuko/query.h"
#include "storage/core/store_chimbuko.h"

#include <stdio.h>

/* --- filters ----------------------------------------------------------------------------------- */

static void put(fj_sqlbuf *b, const char *text)
{
    fj_sqlbuf_put(b, text);
}

/* Appends " AND col op " and a parameter bound to v. */
static void cond_int(fj_sqlbuf *b, const char *col, const char *op, int64_t v)
{
    fj_sqlbuf_printf(b, " AND %s %s ", col, op);
    fj_sqlbuf_int(b, v);
}

/* " WHERE alias.cluster_id = cluster_id" (the first parameter), then q's run and program (app_col:
 * the column holding the program index) when set. */
static void where(fj_sqlbuf *b, const fj_cb_query *q, int64_t cluster_id, const char *alias,
                  const char *app_col)
{
    fj_sqlbuf_printf(b, " WHERE %s.cluster_id = ", alias);
    fj_sqlbuf_int(b, cluster_id);
    if (q->run) {
        fj_sqlbuf_printf(b, " AND %s.run_id = (SELECT id FROM strings WHERE s = ", alias);
        fj_sqlbuf_text(b, q->run);
        put(b, ")");
    }
    if (q->app >= 0) {
        char text[160];
        snprintf(text, sizeof text, "%s.%s", alias, app_col);
        cond_int(b, text, "=", q->app);
    }
}

/* col = v, when v >= 0 (the -1 of fj_cb_query is "any"). */
static void filter_int(fj_sqlbuf *b, const char *col, int64_t v)
{
    if (v >= 0)
        cond_int(b, col, "=", v);
}

/* col = s, when s is set. */
static void filter_text(fj_sqlbuf *b, const char *col, const char *s)
{
    if (!s)
        return;
    fj_sqlbuf_printf(b, " AND %s = ", col);
    fj_sqlbuf_text(b, s);
}

/* IO steps: col within q's step_from..step_to. */
static void filter_steps(fj_sqlbuf *b, const fj_cb_query *q, const char *col)
{
    if (q->step_from >= 0)
        cond_int(b, col, ">=", q->step_from);
    if (q->step_to >= 0)
        cond_int(b, col, "<=", q->step_to);
}

/* Rows whose span [start_col, end_col] (microseconds) overlaps q's window. */
static void filter_span_us(fj_sqlbuf *b, const fj_cb_query *q, const char *start_col, const char *end_col)
{
    if (q->from_us > 0)
        cond_int(b, end_col, ">=", q->from_us);
    if (q->to_us > 0)
        cond_int(b, start_col, "<=", q->to_us);
}

/* A packet time (milliseconds) in col within q's window (microseconds). */
static void filter_ms(fj_sqlbuf *b, const fj_cb_query *q, const char *col)
{
    /* inwards: a packet at 1.5 ms is not in a window that starts at 1.6 ms */
    if (q->from_us > 0)
        cond_int(b, col, ">=", (q->from_us + 999) / 1000);
    if (q->to_us > 0)
        cond_int(b, col, "<=", q->to_us / 1000);
}

void fj_cb_limit(fj_sqlbuf *b, const fj_cb_query *q, size_t extra)
{
    if (q->limit) {
        put(b, " LIMIT ");
        fj_sqlbuf_int(b, (int64_t)(q->limit + extra));
    }
}

void fj_cb_filters(fj_sqlbuf *b, const fj_cb_query *q, int64_t cluster_id, fj_cb_rows rows)
{
    switch (rows) {
    case FJ_CBQ_RANK_STEPS:
        where(b, q, cluster_id, "t", "app");
        filter_int(b, "t.rank", q->rank);
        filter_steps(b, q, "t.step");
        filter_span_us(b, q, "t.min_ts_us", "t.max_ts_us");
        break;
    case FJ_CBQ_TOP_RANKS:
        where(b, q, cluster_id, "t", "app");
        filter_int(b, "t.rank", q->rank);
        filter_span_us(b, q, "t.min_ts_us", "t.max_ts_us");
        break;
    case FJ_CBQ_FUNC_STATS:
        where(b, q, cluster_id, "t", "app");
        filter_int(b, "t.fid", q->fid);
        filter_text(b, "n.s", q->func);
        filter_ms(b, q, "t.created_at_ms");
        break;
    case FJ_CBQ_FUNC_METRICS:
        where(b, q, cluster_id, "t", "app");
        filter_int(b, "t.rank", q->rank);
        filter_int(b, "t.fid", q->fid);
        filter_text(b, "n.s", q->func);
        filter_ms(b, q, "t.created_at_ms");
        break;
    case FJ_CBQ_COUNTER_STATS:
        where(b, q, cluster_id, "t", "app");
        filter_text(b, "n.s", q->func); /* the counter's name */
        filter_ms(b, q, "t.created_at_ms");
        break;
    case FJ_CBQ_EVENTS:
        where(b, q, cluster_id, "e", "pid");
        filter_int(b, "e.rid", q->rank);
        filter_int(b, "e.fid", q->fid);
        filter_int(b, "e.idx", q->idx);
        filter_text(b, "f.s", q->func);
        filter_steps(b, q, "e.io_step");
        filter_span_us(b, q, "e.entry_us", "e.entry_us");
        if (q->after.set) { /* keyset: entry time, then row id among equal times */
            int64_t at = (int64_t)q->after.v;
            cond_int(b, "(e.entry_us", ">", at);
            put(b, " OR (e.entry_us = ");
            fj_sqlbuf_int(b, at);
            put(b, " AND e.id > ");
            fj_sqlbuf_int(b, q->after.id);
            put(b, "))");
        }
        break;
    case FJ_CBQ_METADATA:
        where(b, q, cluster_id, "t", "pid");
        filter_int(b, "t.rid", q->rank);
        break;
    case FJ_CBQ_PROFILES:
        where(b, q, cluster_id, "t", "app");
        filter_int(b, "t.fid", q->fid);
        filter_text(b, "n.s", q->func);
        break;
    case FJ_CBQ_COUNTERS:
        where(b, q, cluster_id, "t", "app");
        filter_text(b, "n.s", q->func);
        break;
    }
}

/* --- rows -------------------------------------------------------------------------------------- */

static fj_value v_null(void)
{
    fj_value v = {0};
    return v;
}

static fj_value v_int(int64_t i)
{
    fj_value v = {.t = FJ_VT_INT, .i = i};
    return v;
}

static fj_value v_text(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_TEXT : FJ_VT_NULL, .s = s};
    return v;
}

static fj_value v_time(int64_t t)
{
    fj_value v = {.t = t ? FJ_VT_TIME : FJ_VT_NULL, .i = t};
    return v;
}

static fj_value v_json(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_JSON : FJ_VT_NULL, .s = s};
    return v;
}

/* The widest table is fj_qt_cb_events (32 columns). */
enum { ROW_MAX = 40 };

fj_status fj_cb_emit(const fj_qrows *r, fj_sink *k, const fj_qtable *t)
{
    fj_status rs = k->table(k, t);
    fj_value v[ROW_MAX];
    bool row = false;
    while (rs == FJ_OK && (rs = fj_qr_step(r, t->name, &row)) == FJ_OK && row) {
        for (size_t i = 0; i < t->n_cols; i++)
            v[i] = fj_qr_value(r, (int)i, t->cols[i].type);
        rs = k->row(k, v);
    }
    return rs;
}

/* Texts an event row points into, valid until the next row. */
typedef struct ev_scratch {
    char label[72];
    char gpu[160];
} ev_scratch;

static fj_status event_row(const fj_qrows *r, const fj_cb_query *q, fj_value *v, ev_scratch *sc, fj_err *err)
{
    const fj_qrows *c = r;
    int64_t (*i64)(const fj_qrows *, int) = r->ops->i64;
    fj_value (*col)(const fj_qrows *, int, fj_vtype) = r->ops->value;
    /* the event label as Chimbuko writes it: rank:io_step:idx */
    snprintf(sc->label, sizeof sc->label, "%lld:%lld:%lld", (long long)i64(c, FJ_CB_EV_RID),
             (long long)i64(c, FJ_CB_EV_STEP), (long long)i64(c, FJ_CB_EV_IDX));
    bool gpu = !r->ops->is_null(c, FJ_CB_EV_GT);
    if (gpu)
        snprintf(sc->gpu, sizeof sc->gpu, "{\"thread\":%lld,\"device\":%lld,\"context\":%lld,\"stream\":%lld}",
                 (long long)i64(c, FJ_CB_EV_GT), (long long)i64(c, FJ_CB_EV_GD), (long long)i64(c, FJ_CB_EV_GC),
                 (long long)i64(c, FJ_CB_EV_GS));
    int64_t entry = i64(c, FJ_CB_EV_ENTRY);
    size_t i = 0;
    v[i++] = v_text(sc->label);
    v[i++] = v_text(i64(c, FJ_CB_EV_ANOMALY) ? "anomaly" : "normal");
    v[i++] = col(c, FJ_CB_EV_RUN, FJ_VT_TEXT);
    v[i++] = col(c, FJ_CB_EV_PID, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_RID, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_TID, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_STEP, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_IDX, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_FID, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_FUNC, FJ_VT_TEXT);
    v[i++] = col(c, FJ_CB_EV_HOST, FJ_VT_TEXT);
    v[i++] = entry > 0 ? v_time(entry / 1000000) : v_null();
    v[i++] = v_int(entry);
    v[i++] = col(c, FJ_CB_EV_EXIT, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_RT, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_RX, FJ_VT_INT);
    v[i++] = col(c, FJ_CB_EV_SCORE, FJ_VT_REAL);
    v[i++] = col(c, FJ_CB_EV_SEV, FJ_VT_REAL);
    v[i++] = col(c, FJ_CB_EV_GPU, FJ_VT_BOOL);
    v[i++] = gpu ? v_json(sc->gpu) : v_null();
    v[i++] = col(c, FJ_CB_EV_GPE, FJ_VT_TEXT);
    v[i++] = col(c, FJ_CB_EV_GPERR, FJ_VT_TEXT);
    v[i++] = col(c, FJ_CB_EV_ALGO, FJ_VT_TEXT);
    for (int j = FJ_CB_EV_ALGOP; j <= FJ_CB_EV_GP; j++)
        v[i++] = q->brief ? v_null() : col(c, j, FJ_VT_JSON);
    v[i++] = col(c, FJ_CB_EV_VERSION, FJ_VT_INT);
    return i == fj_qt_cb_events.n_cols ? FJ_OK : fj_err_set(err, FJ_EINTERNAL, NULL, "event columns");
}

fj_status fj_cb_emit_events(const fj_qrows *r, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    fj_status rs = k->table(k, &fj_qt_cb_events);
    fj_value v[ROW_MAX];
    ev_scratch sc;
    size_t n = 0;
    bool row = false;
    while (rs == FJ_OK && (rs = fj_qr_step(r, "events", &row)) == FJ_OK && row) {
        if (q->limit && n == q->limit) { /* one more exists: the page ends at the previous row */
            q->next.set = true;
            break;
        }
        q->next.v = (double)fj_qr_i64(r, FJ_CB_EV_ENTRY);
        q->next.id = fj_qr_i64(r, FJ_CB_EV_ID);
        if ((rs = event_row(r, q, v, &sc, err)) == FJ_OK)
            rs = k->row(k, v);
        n++;
    }
    if (!q->next.set)
        q->next.v = 0, q->next.id = 0;
    return rs;
}

/* --- the queries ------------------------------------------------------------------------------- */

/* A statement's own SQL: select ("SELECT ... FROM t JOIN strings r ...", named as fj_cb_filters
 * expects) comes before the filters, order (" [GROUP BY ...] ORDER BY ...") after them. */
typedef struct cb_select {
    const char *select;
    const char *order;
} cb_select;

/* A count rounded half away from zero as SQLite rounds (round() of a numeric, not of a double,
 * on PostgreSQL), as an integer. */
#define ROUND_INT(x) "CAST(round(CAST(" x " AS NUMERIC)) AS BIGINT)"

/* The run list: select continues "WITH runs(run_id) AS (SELECT run_id FROM chimbuko_packets
 * WHERE cluster_id = ?1" up to "FROM runs JOIN strings r ...", order follows the run filter. Text
 * is sorted byte-wise ({bytes}) and NULL sorts low (NULLS LAST in descending orders, as SQLite's
 * default is), so that every backend answers alike. */
static const cb_select runs_sql = {
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
    "  WHERE e.cluster_id = ?1 AND e.run_id = runs.run_id AND e.anomaly = TRUE),"
    " (SELECT count(*) FROM chimbuko_events e"
    "  WHERE e.cluster_id = ?1 AND e.run_id = runs.run_id AND e.anomaly = FALSE),"
    " (SELECT count(*) FROM (SELECT DISTINCT app, rank FROM chimbuko_rank_steps t WHERE t.cluster_id = ?1"
    "  AND t.run_id = runs.run_id) d)"
    " FROM runs JOIN strings r ON r.id = runs.run_id",
    " ORDER BY r.s{bytes}"};

/* cb_series */
static const cb_select ranks_sql = {
    "SELECT r.s, t.app, t.rank, t.step, t.max_ts_us / 1000000, t.min_ts_us, t.max_ts_us, t.n_anomalies,"
    " t.score_max, t.score_mean, t.scores FROM chimbuko_rank_steps t JOIN strings r ON r.id = t.run_id",
    " ORDER BY r.s{bytes}, t.app, t.rank, t.step"};
static const cb_select functions_sql = {
    "SELECT r.s, t.app, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
    " " ROUND_INT("t.anomalies") ", t.calls, t.anomaly_stats, t.inclusive, t.exclusive"
    " FROM chimbuko_func_stats t JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id",
    " ORDER BY r.s{bytes}, t.app, t.fid, t.created_at_ms"};
static const cb_select metrics_sql = {
    "SELECT r.s, t.app, t.rank, t.fid, n.s, t.created_at_ms / 1000, t.created_at_ms,"
    " " ROUND_INT("t.anomalies") ", t.score_max, t.severity_total, t.first_io_step,"
    " t.last_io_step, t.new_data, t.all_data FROM chimbuko_func_metrics t"
    " JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id",
    " ORDER BY r.s{bytes}, t.app, t.rank, t.fid, t.created_at_ms"};
static const cb_select counters_sql = {
    "SELECT r.s, t.app, n.s, t.created_at_ms / 1000, t.created_at_ms, t.count, t.total, t.stats"
    " FROM chimbuko_counter_stats t JOIN strings r ON r.id = t.run_id"
    " JOIN strings n ON n.id = t.counter_id",
    " ORDER BY r.s{bytes}, t.app, n.s{bytes}, t.created_at_ms"};

/* cb_top */
static const cb_select top_ranks_sql = {
    "SELECT r.s, t.app, t.rank, CAST(sum(t.n_anomalies) AS BIGINT), count(*), max(t.score_max),"
    " min(t.min_ts_us) / 1000000, max(t.max_ts_us) / 1000000 FROM chimbuko_rank_steps t"
    " JOIN strings r ON r.id = t.run_id",
    " GROUP BY r.s, t.app, t.rank ORDER BY 4 DESC NULLS LAST, 6 DESC NULLS LAST, r.s{bytes}, t.app, t.rank"};
static const cb_select top_functions_sql = {
    "SELECT r.s, t.app, t.fid, max(n.s{bytes}), " ROUND_INT("sum(t.anomalies)") ","
    " count(DISTINCT t.rank), max(t.score_max), sum(t.severity_total) FROM chimbuko_func_metrics t"
    " JOIN strings r ON r.id = t.run_id JOIN strings n ON n.id = t.name_id",
    " GROUP BY r.s, t.app, t.fid ORDER BY 5 DESC NULLS LAST, 7 DESC NULLS LAST, r.s{bytes}, t.app, t.fid"};

/* cb_records of the collections but events */
static const cb_select metadata_sql = {
    "SELECT r.s, t.pid, t.rid, t.tid, d.s, t.value FROM chimbuko_metadata t JOIN strings r ON"
    " r.id = t.run_id JOIN strings d ON d.id = t.descr_id",
    " ORDER BY r.s{bytes}, t.pid, t.rid, t.tid, d.s{bytes}"};
static const cb_select profiles_sql = {
    "SELECT r.s, t.app, t.fid, n.s, " ROUND_INT("t.anomalies") ", t.exclusive_total_us,"
    " t.inclusive, t.exclusive, t.anomaly_metrics FROM chimbuko_profiles t JOIN strings r ON"
    " r.id = t.run_id JOIN strings n ON n.id = t.name_id",
    " ORDER BY r.s{bytes}, t.app, t.fid"};
static const cb_select final_counters_sql = {
    "SELECT r.s, t.app, n.s, t.count, t.total, t.stats FROM chimbuko_counters t JOIN strings r ON"
    " r.id = t.run_id JOIN strings n ON n.id = t.counter_id",
    " ORDER BY r.s{bytes}, t.app, n.s{bytes}"};

/* A query under way: its read transaction (when began), and the SQL under construction with its
 * parameters, which the filters append to. */
typedef struct cq {
    fj_qx x;
    fj_query fq; /* the part of the running query's that it reads: the cluster */
    fj_cb_query *q;
    fj_sink *k;
    fj_err *err;
    fj_sqlbuf sql;
    int64_t cluster_id;
    bool began;
} cq;

static fj_status cq_begin(cq *c, fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    *c = (cq){.q = q, .k = k, .err = err};
    q->next.set = false;
    fj_sqlbuf_init(&c->sql, fj_driver_of(s)->dialect.mark);
    if (!q->cluster || !*q->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    c->fq.cluster = q->cluster;
    fj_status st = fj_qx_begin(&c->x, s, &c->fq, k, err);
    if (st != FJ_OK)
        return st;
    c->began = true;
    st = fj_qx_cluster(&c->x);
    c->cluster_id = c->x.cluster_id;
    return st;
}

static fj_status cq_end(cq *c, fj_status st)
{
    fj_sqlbuf_free(&c->sql);
    return c->began ? fj_qx_end(&c->x, st) : st;
}

/* Prepares the SQL built so far (and starts over with an empty builder), then emits its rows as
 * table t, or as events when t is NULL. */
static fj_status run_emit(cq *c, const fj_qtable *t)
{
    fj_qrows r = {0};
    fj_status rs = fj_qx_prepare_qb(&c->x, &c->sql, &r);
    fj_sqlbuf_free(&c->sql);
    fj_sqlbuf_init(&c->sql, c->x.d->dialect.mark);
    if (rs == FJ_OK)
        rs = t ? fj_cb_emit(&r, c->k, t) : fj_cb_emit_events(&r, c->q, c->k, c->err);
    fj_qx_finalize(&c->x, &r);
    return rs;
}

/* One statement of SQL sel over row set rows, filtered and limited as q asks; its rows as table
 * t. */
static fj_status select_emit(cq *c, const cb_select *sel, fj_cb_rows rows, const fj_qtable *t)
{
    put(&c->sql, sel->select);
    fj_cb_filters(&c->sql, c->q, c->cluster_id, rows);
    put(&c->sql, sel->order);
    fj_cb_limit(&c->sql, c->q, 0);
    return run_emit(c, t);
}

/* Every op alike: begins (the cluster required and looked up), runs its body, ends. */
static fj_status cq_run(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err, fj_status (*body)(cq *c))
{
    cq c;
    fj_status rs = cq_begin(&c, s, q, k, err);
    if (rs == FJ_OK)
        rs = body(&c);
    return cq_end(&c, rs);
}

static fj_status runs(cq *c)
{
    put(&c->sql, "WITH runs(run_id) AS (SELECT run_id FROM chimbuko_packets WHERE cluster_id = ");
    fj_sqlbuf_int(&c->sql, c->cluster_id);
    put(&c->sql, runs_sql.select);
    if (c->q->run) {
        put(&c->sql, " WHERE r.s = ");
        fj_sqlbuf_text(&c->sql, c->q->run);
    }
    put(&c->sql, runs_sql.order);
    return run_emit(c, &fj_qt_cb_runs);
}

fj_status fj_store_chimbuko_runs(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    return cq_run(s, q, k, err, runs);
}

/* The series listings, by fj_cb_series: a statement over a row set, emitted as its table. */
static const struct {
    const cb_select *sel;
    fj_cb_rows rows;
    const fj_qtable *t;
} series_listings[] = {
    [FJ_CBS_RANKS] = {&ranks_sql, FJ_CBQ_RANK_STEPS, &fj_qt_cb_ranks},
    [FJ_CBS_FUNCTIONS] = {&functions_sql, FJ_CBQ_FUNC_STATS, &fj_qt_cb_functions},
    [FJ_CBS_METRICS] = {&metrics_sql, FJ_CBQ_FUNC_METRICS, &fj_qt_cb_metrics},
    [FJ_CBS_COUNTERS] = {&counters_sql, FJ_CBQ_COUNTER_STATS, &fj_qt_cb_counters},
};

static fj_status series(cq *c)
{
    size_t i = (size_t)c->q->series;
    if (i >= sizeof series_listings / sizeof series_listings[0])
        return fj_err_set(c->err, FJ_EINVAL, "series", "unknown series %d", (int)c->q->series);
    return select_emit(c, series_listings[i].sel, series_listings[i].rows, series_listings[i].t);
}

fj_status fj_store_chimbuko_series(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    return cq_run(s, q, k, err, series);
}

static fj_status top(cq *c)
{
    fj_status rs = select_emit(c, &top_ranks_sql, FJ_CBQ_TOP_RANKS, &fj_qt_cb_top_ranks);
    return rs == FJ_OK ? select_emit(c, &top_functions_sql, FJ_CBQ_FUNC_METRICS, &fj_qt_cb_top_functions) : rs;
}

fj_status fj_store_chimbuko_top(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    return cq_run(s, q, k, err, top);
}

/* The events of q's collection, a page at a time: columns in the FJ_CB_EV_* order. */
static fj_status query_events(cq *c)
{
    fj_cb_query *q = c->q;
    /* brief: the large JSON columns are not even read */
    put(&c->sql, q->brief ? "SELECT e.id, e.rid, e.io_step, e.idx, e.anomaly, r.s, e.pid, e.tid, e.fid, f.s, h.s,"
                            " e.entry_us, e.exit_us, e.runtime_total_us, e.runtime_exclusive_us, e.outlier_score,"
                            " e.outlier_severity, e.is_gpu, e.gpu_thread, e.gpu_device, e.gpu_context,"
                            " e.gpu_stream, e.gpu_parent_event, e.gpu_parent_error, e.algo, NULL, NULL, NULL,"
                            " NULL, NULL, NULL, e.version"
                          : "SELECT e.id, e.rid, e.io_step, e.idx, e.anomaly, r.s, e.pid, e.tid, e.fid, f.s, h.s,"
                            " e.entry_us, e.exit_us, e.runtime_total_us, e.runtime_exclusive_us, e.outlier_score,"
                            " e.outlier_severity, e.is_gpu, e.gpu_thread, e.gpu_device, e.gpu_context,"
                            " e.gpu_stream, e.gpu_parent_event, e.gpu_parent_error, e.algo, e.algo_params,"
                            " e.call_stack, e.counter_events, e.event_window, e.node_state, e.gpu_parent,"
                            " e.version");
    put(&c->sql, " FROM chimbuko_events e JOIN strings r ON r.id = e.run_id JOIN strings f ON f.id = e.func_id"
                 " LEFT JOIN strings h ON h.id = e.host_id");
    fj_cb_filters(&c->sql, q, c->cluster_id, FJ_CBQ_EVENTS);
    if (q->collection == FJ_CB_ANOMALIES || q->collection == FJ_CB_NORMALEXECS)
        put(&c->sql, q->collection == FJ_CB_ANOMALIES ? " AND e.anomaly = TRUE" : " AND e.anomaly = FALSE");
    put(&c->sql, " ORDER BY e.entry_us, e.id");
    fj_cb_limit(&c->sql, q, 1); /* one more than a page: is there a next one? */
    return run_emit(c, NULL);
}

static fj_status records(cq *c)
{
    switch (c->q->collection) {
    case FJ_CB_PACKET:
    case FJ_CB_ANOMALIES:
    case FJ_CB_NORMALEXECS: return query_events(c);
    case FJ_CB_METADATA: return select_emit(c, &metadata_sql, FJ_CBQ_METADATA, &fj_qt_cb_metadata);
    case FJ_CB_FUNC_STATS: return select_emit(c, &profiles_sql, FJ_CBQ_PROFILES, &fj_qt_cb_profiles);
    case FJ_CB_COUNTER_STATS: return select_emit(c, &final_counters_sql, FJ_CBQ_COUNTERS, &fj_qt_cb_final_counters);
    default: return fj_err_set(c->err, FJ_EINVAL, "collection", "unknown collection %d", (int)c->q->collection);
    }
}

fj_status fj_store_chimbuko_records(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err)
{
    return cq_run(s, q, k, err, records);
}
