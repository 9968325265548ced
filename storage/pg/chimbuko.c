/* storage/pg/chimbuko.c — Chimbuko in the PostgreSQL backend (schema: migrations/postgres/0003_chimbuko.sql),
 * the counterpart of storage/sqlite/chimbuko.c with the same rows, counts and answers: the write of a
 * group's Chimbuko envelopes inside the writer's transaction (the queries are written once:
 * storage/chimbuko/query.c).
 *
 * Writes are batched: a table's rows of the whole group go in one prepared statement,
 * INSERT ... SELECT FROM unnest($1::bigint[], ...) WITH ORDINALITY ... ON CONFLICT DO NOTHING,
 * which answers the ordinals of the rows it inserted, so every envelope's rows are counted as
 * inserted or duplicate (the first copy of a row repeated within the group wins, as in SQLite).
 * Two rules are sequential in SQLite and stay so here: a packet's rows are written only when the
 * packet itself is new, and a function profile or counter point only when it differs from the
 * point before it, which may have arrived earlier in the same group: those two statements run
 * packet by packet, in arrival order.
 *
 * What goes in which column is shared with SQLite (storage/chimbuko/rows.h); this file holds the
 * writer's SQL, the batching and the statements. */
#include "storage/core/try.h"
#include "storage/chimbuko/rows.h"
#include "storage/pg/int.h"
#include "storage/pg/query_int.h"

#include "alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* --- statements ------------------------------------------------------------------------------ */

/* One batched insert into a table of storage/chimbuko/rows.h: rows are added column by column in its
 * order, each column an array parameter of its type. */
typedef struct cb_spec cb_spec;
struct cb_spec {
    fj_pg_stmt_id id;
    fj_cb_table table;
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
    {FJ_PG_CB_PACKET_INS, FJ_CBT_PACKETS, true, NULL},
    {FJ_PG_CB_RANK_INS, FJ_CBT_RANK_STATS, true, NULL},
    {FJ_PG_CB_STEP_INS, FJ_CBT_RANK_STEPS, true, NULL},
    {FJ_PG_CB_FUNC_INS, FJ_CBT_FUNC_STATS, true, FUNC_UNCHANGED},
    {FJ_PG_CB_COUNTER_INS, FJ_CBT_COUNTER_STATS, true, COUNTER_UNCHANGED},
    {FJ_PG_CB_METRICS_INS, FJ_CBT_FUNC_METRICS, true, NULL},
    {FJ_PG_CB_EVENT_INS, FJ_CBT_EVENTS, false, NULL},
    {FJ_PG_CB_META_INS, FJ_CBT_METADATA, true, NULL},
    {FJ_PG_CB_PROFILE_INS, FJ_CBT_PROFILES, true, NULL},
    {FJ_PG_CB_FINAL_COUNTER_INS, FJ_CBT_COUNTERS, true, NULL},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

/* Built once per process into static storage (part of the program, not of a request: no
 * allocation to fail). An entry that does not fit stays empty and fails cleanly when used. */
#define SPEC_SQL_MAX 8192
static char spec_sql[N_SPECS][SPEC_SQL_MAX];
static pthread_once_t spec_once = PTHREAD_ONCE_INIT;

/* WITH u AS (the rows with their ordinal o), n AS (those the filter keeps), i AS (INSERT ...
 * RETURNING the keys inserted): the smallest ordinal of each inserted key, which is the row that
 * went in (rows are inserted in order, the later copies of a key conflict). */
static void build_spec(const cb_spec *p, char *out)
{
    const fj_cb_tabledef *d = fj_cb_table_def(p->table);
    char args[2048];
    size_t off = 0;
    for (size_t i = 0; d->types[i] && off < sizeof args; i++)
        off += (size_t)snprintf(args + off, sizeof args - off, "%s$%zu::%s[]", i ? "," : "", i + 1,
                                fj_pg_type_name(d->types[i]));
    int n = off < sizeof args
                ? snprintf(out, SPEC_SQL_MAX,
                           "WITH u AS (SELECT * FROM unnest(%s) WITH ORDINALITY AS u(%s,o)), "
                           "n AS (SELECT * FROM u%s%s), "
                           "i AS (INSERT INTO %s(%s) SELECT %s FROM n ORDER BY %s%so ON CONFLICT DO NOTHING "
                           "RETURNING %s) SELECT min(n.o) FROM n JOIN i USING (%s) GROUP BY %s",
                           args, d->cols, p->filter ? " WHERE " : "", p->filter ? p->filter : "", d->name, d->cols,
                           d->cols, p->by_key ? d->key : "", p->by_key ? "," : "", d->key, d->key, d->key)
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
    w->t.ncols = p ? (int)strlen(fj_cb_table_def(p->table)->types) : 0;
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
    FJ_TRY(fj_pg_run(w->s, id, w->t.ncols, vals, &r, what, w->err));
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t o = fj_pg_int(r, i, 0);
        if (o >= 1 && (size_t)o <= n)
            w->added[o - 1] = true;
    }
    PQclear(r);
    if (count)
        for (size_t i = 0; i < n; i++)
            fj_cb_count(w->envs[w->t.env[i]].cnt, w->added[i]);
    return FJ_OK;
}

/* The column writer of storage/chimbuko/rows.h over the rows being built (w->t). */
static void col_null(void *t, int c)
{
    fj_pg_null(t, c);
}

static void col_i64(void *t, int c, int64_t v)
{
    fj_pg_i64(t, c, v);
}

static void col_u64(void *t, int c, uint64_t v)
{
    fj_pg_u64(t, c, v);
}

static void col_real(void *t, int c, double v)
{
    fj_pg_f64(t, c, v);
}

static void col_text(void *t, int c, const char *s)
{
    fj_pg_text(t, c, s);
}

static void col_bool(void *t, int c, bool v)
{
    fj_pg_text(t, c, v ? "t" : "f");
}

static const fj_cb_colw_ops cols_ops = {col_null, col_i64, col_u64, col_real, col_text, col_bool};

/* The column writer filling w->t. */
#define COLS(w) (&(fj_cb_colw){&cols_ops, &(w)->t})

/* --- interned strings ----------------------------------------------------------------------- */

/* Marks s (NULL: "") as needed: a name missing from the handle's cache becomes a row of w->t and
 * pending (-1) in the cache until resolve_strings. */
static void need(cw *w, const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    if (fj_intern_get(&w->s->names, FJ_PG_NS_STRING, s, len))
        return;
    if (fj_intern_put(&w->s->names, FJ_PG_NS_STRING, s, len, -1) != FJ_OK) {
        w->t.st = FJ_ENOMEM;
        return;
    }
    fj_pg_text(&w->t, 0, s);
    fj_pg_row(&w->t, 0);
}

static void need_all(cw *w, const fj_chimbuko *cb)
{
    need(w, fj_cb_run_label(cb));
    const fj_cb_packet *p = &cb->packet;
    for (size_t i = 0; i < p->n_funcs; i++)
        need(w, p->funcs[i].name);
    for (size_t i = 0; i < p->n_counters; i++)
        need(w, p->counters[i].counter);
    for (size_t i = 0; i < p->n_metrics; i++)
        need(w, p->metrics[i].fname);
    for (fj_cb_table t = FJ_CBT_RECORDS_FIRST; t <= FJ_CBT_RECORDS_LAST; t++)
        for (size_t i = 0; i < fj_cb_record_count(cb, t); i++) {
            const char *names[2];
            fj_cb_record_names(cb, t, i, names);
            need(w, names[0]);
            if (names[1])
                need(w, names[1]);
        }
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
    FJ_TRY(fj_pg_run(w->s, FJ_PG_STRING_INS, 1, vals, NULL, "intern names", w->err));
    PGresult *r;
    FJ_TRY(fj_pg_run(w->s, FJ_PG_STRING_GET, 1, vals, &r, "look up names", w->err));
    fj_status st = FJ_OK;
    for (int i = 0; st == FJ_OK && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 1);
        if (fj_intern_put(&w->s->names, FJ_PG_NS_STRING, name, strlen(name), fj_pg_int(r, i, 0)) != FJ_OK)
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
    int64_t id = fj_intern_get(&w->s->names, FJ_PG_NS_STRING, s, strlen(s));
    return id > 0 ? id : 0;
}

/* --- packets --------------------------------------------------------------------------------- */

static bool is_packet(const fj_pg_cb_env *v)
{
    return v->e->u.chimbuko.collection == FJ_CB_PACKET;
}

/* The key columns of envelope k. */
static fj_cb_key key_of(const cw *w, size_t k)
{
    return (fj_cb_key){w->envs[k].cluster_id, w->run_ids[k]};
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
        fj_cb_row_packet(COLS(w), key_of(w, k), &w->envs[k].e->u.chimbuko.packet, now);
        fj_pg_row(t, k);
    }
    FJ_TRY(run_counted(w, FJ_PG_CB_PACKET_INS, "insert chimbuko packets", false));
    for (size_t i = 0; i < t->nrows; i++) {
        size_t k = t->env[i];
        fj_write_count *c = w->envs[k].cnt;
        w->fresh[k] = w->added[i];
        if (w->added[i])
            fj_cb_count(c, true);
        else
            c->duplicates += fj_cb_packet_rows(&w->envs[k].e->u.chimbuko.packet);
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
            fj_cb_row_rank(COLS(w), key_of(w, k), p->created_at_ms, &p->ranks[i]);
            fj_pg_row(t, k);
        }
    }
    FJ_TRY(run_counted(w, FJ_PG_CB_RANK_INS, "insert chimbuko rank stats", true));

    begin_rows(w, FJ_PG_CB_STEP_INS);
    for (size_t k = 0; k < w->n; k++) {
        if (!w->fresh[k])
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        for (size_t i = 0; i < p->n_ranks; i++)
            for (size_t j = 0; j < p->ranks[i].n_steps; j++) {
                fj_cb_row_step(COLS(w), key_of(w, k), p->created_at_ms, &p->ranks[i].steps[j]);
                fj_pg_row(t, k);
            }
    }
    FJ_TRY(run_counted(w, FJ_PG_CB_STEP_INS, "insert chimbuko rank steps", true));

    begin_rows(w, FJ_PG_CB_METRICS_INS);
    for (size_t k = 0; k < w->n; k++) {
        if (!w->fresh[k])
            continue;
        const fj_cb_packet *p = &w->envs[k].e->u.chimbuko.packet;
        for (size_t i = 0; i < p->n_metrics; i++) {
            const fj_cb_func_metrics *m = &p->metrics[i];
            fj_cb_row_metrics(COLS(w), key_of(w, k), p->created_at_ms, m, sid(w, m->fname));
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
        fj_cb_row_func(COLS(w), key_of(w, k), p->created_at_ms, f, sid(w, f->name));
        fj_pg_row(t, k);
    }
    FJ_TRY(run_counted(w, FJ_PG_CB_FUNC_INS, "insert chimbuko function points", true));

    begin_rows(w, FJ_PG_CB_COUNTER_INS);
    for (size_t i = 0; i < p->n_counters; i++) {
        const fj_cb_counter *c = &p->counters[i];
        fj_cb_row_counter_point(COLS(w), key_of(w, k), p->created_at_ms, c, sid(w, c->counter));
        fj_pg_row(t, k);
    }
    return run_counted(w, FJ_PG_CB_COUNTER_INS, "insert chimbuko counter points", true);
}

/* --- provenance records ---------------------------------------------------------------------- */

/* The records of every provenance envelope of the group, one statement per table. */
static fj_status write_records(cw *w)
{
    static const struct {
        fj_pg_stmt_id id;
        const char *what;
    } stmts[] = {{FJ_PG_CB_EVENT_INS, "insert chimbuko events"},
                 {FJ_PG_CB_META_INS, "insert chimbuko metadata"},
                 {FJ_PG_CB_PROFILE_INS, "insert chimbuko profiles"},
                 {FJ_PG_CB_FINAL_COUNTER_INS, "insert chimbuko counters"}};
    for (fj_cb_table t = FJ_CBT_RECORDS_FIRST; t <= FJ_CBT_RECORDS_LAST; t++) {
        fj_pg_stmt_id id = stmts[t - FJ_CBT_RECORDS_FIRST].id;
        begin_rows(w, id);
        for (size_t k = 0; k < w->n; k++) {
            const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
            for (size_t i = 0; i < fj_cb_record_count(cb, t); i++) {
                const char *names[2];
                fj_cb_record_names(cb, t, i, names);
                const int64_t ids[2] = {sid(w, names[0]), names[1] ? sid(w, names[1]) : 0};
                fj_cb_row_record(COLS(w), key_of(w, k), cb, t, i, ids);
                fj_pg_row(&w->t, k);
            }
        }
        FJ_TRY(run_counted(w, id, stmts[t - FJ_CBT_RECORDS_FIRST].what, true));
    }
    return FJ_OK;
}

static fj_status write_group(cw *w)
{
    FJ_TRY(resolve_strings(w));
    for (size_t k = 0; k < w->n; k++) {
        const fj_chimbuko *cb = &w->envs[k].e->u.chimbuko;
        w->run_ids[k] = sid(w, fj_cb_run_label(cb));
    }
    FJ_TRY(write_packet_rows(w));
    FJ_TRY(write_packet_tables(w));
    for (size_t k = 0; k < w->n; k++)
        if (w->fresh[k])
            FJ_TRY(write_packet_points(w, k));
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
