/* storage/pg/rollup.c — the PostgreSQL writer's upkeep of the hourly load roll-ups
 * (migrations/postgres/0004): every (node, hour) listed in load_hourly_todo recomputed with the
 * load query's own reading (storage/query/load.h's per-sample functions, fed in the order
 * fj_qload_read_hour reads), so answering from the roll-ups or from the samples gives the same
 * figures.
 *
 * A round trip per statement is what a group commit costs on PostgreSQL, so the node-hours are
 * done a batch at a time with four statements whatever the batch's size: every node-hour's
 * previous sample with counters and its samples in one ordered result, the cards of those that
 * may have GPUs in another, the old roll-ups deleted and the new ones written with one INSERT of
 * arrays. Node by node it was five statements per node-hour, about half of a group commit's
 * statements. They run at every group commit, so they are kept (prepared once per connection):
 * as text, PostgreSQL parsed and planned each of them every time. */
#include "storage/pg/query_int.h"
#include "storage/pg/int.h"
#include "storage/query/load.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

/* Node-hours per batch: bounds the samples held in one result (a backfill lists every hour). */
#define ROLLUP_BATCH 256

/* The batch's node-hours, $1 (nodes) and $2 (hours) as arrays, in the order of the todo list. */
#define BATCH_SQL "WITH t AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS t(node_id, hour))"

/* Per node-hour (ordered as the batch): first (k = 0) the latest sample with counters before the
 * hour (load.h's statement prev), then (k = 1) the hour's samples by time (statement samples). */
static const char samples_sql[] =
    BATCH_SQL
    " SELECT t.node_id, t.hour, 0 AS k, p.time, p.boot, p.used_memory_kb, p.load1, p.load5, p.load15, p.cpus"
    " FROM t CROSS JOIN LATERAL (SELECT s.time, s.boot, s.used_memory_kb, s.load1, s.load5, s.load15, s.cpus"
    " FROM samples s WHERE s.node_id = t.node_id AND s.time < t.hour AND s.cpus IS NOT NULL"
    " ORDER BY s.time DESC LIMIT 1) p"
    " UNION ALL"
    " SELECT t.node_id, t.hour, 1, s.time, s.boot, s.used_memory_kb, s.load1, s.load5, s.load15, s.cpus"
    " FROM t JOIN samples s ON s.node_id = t.node_id AND s.time >= t.hour AND s.time < t.hour + $3"
    " ORDER BY 1, 2, 3, 4";

/* The cards of each node-hour whose node may have some (load.h: it reports cards, or never sent a
 * sysinfo), by time and card index (statement gpus). */
static const char cards_sql[] =
    BATCH_SQL
    " SELECT t.node_id, t.hour, g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
    " FROM t JOIN sample_gpus g ON g.node_id = t.node_id AND g.time >= t.hour AND g.time < t.hour + $3"
    " WHERE NOT EXISTS (SELECT 1 FROM sysinfo i WHERE i.node_id = t.node_id)"
    " OR EXISTS (SELECT 1 FROM sysinfo i WHERE i.node_id = t.node_id AND i.n_gpus > 0)"
    " ORDER BY 1, 2, 3, g.idx";

/* The stored roll-ups of the batch's node-hours. By the batch's keys, not by a join with
 * load_hourly_todo: the planner, knowing nothing of that table's few rows, hashed it and read
 * every week of load_hourly (which retention keeps) at every group commit. */
static const char clear_sql[] = "DELETE FROM load_hourly h USING unnest($1::bigint[], $2::bigint[]) AS t(node_id, hour)"
                                " WHERE h.node_id = t.node_id AND h.hour = t.hour";

/* The days of the batch's node-hours (load_daily, migration 0021), each merged anew from its hourly
 * roll-ups, those of the batch just written included: written over the stored row in place (an
 * update of no indexed column, which PostgreSQL keeps in the row's page: a day's row is rewritten
 * at every group commit, and deleting and inserting it left a dead row each time for autovacuum),
 * then the days left without hours deleted. */
#define BATCH_DAYS_SQL                                                                                \
    "(SELECT DISTINCT node_id, " FJ_LOADAGG_DAY_OF_SQL("hour") " AS day"                                   \
    " FROM unnest($1::bigint[], $2::bigint[]) AS t(node_id, hour)) t"
static const char day_put_sql[] =
    "INSERT INTO load_daily(node_id,day," FJ_LOADAGG_COLS_SQL ",last_time)"
    " SELECT h.node_id, t.day," FJ_LOADAGG_MERGE_SQL ",max(h.last_time) FROM " BATCH_DAYS_SQL
    " JOIN load_hourly h ON h.node_id = t.node_id AND h.hour >= t.day AND h.hour < t.day + 86400"
    " GROUP BY h.node_id, t.day ON CONFLICT (node_id, day) DO UPDATE SET "
    "samples=EXCLUDED.samples,cores=EXCLUDED.cores,gpus=EXCLUDED.gpus,"
    "cpu_n=EXCLUDED.cpu_n,cpu_s=EXCLUDED.cpu_s,cpu_util_sum=EXCLUDED.cpu_util_sum,"
    "cpu_util_max=EXCLUDED.cpu_util_max,cpu_cores_sum=EXCLUDED.cpu_cores_sum,"
    "mem_n=EXCLUDED.mem_n,mem_sum=EXCLUDED.mem_sum,mem_max=EXCLUDED.mem_max,"
    "load_n=EXCLUDED.load_n,load1_sum=EXCLUDED.load1_sum,load1_max=EXCLUDED.load1_max,"
    "load5_sum=EXCLUDED.load5_sum,load15_sum=EXCLUDED.load15_sum,gpu_n=EXCLUDED.gpu_n,"
    "gpu_util_sum=EXCLUDED.gpu_util_sum,gpu_util_max=EXCLUDED.gpu_util_max,"
    "gpu_mem_sum=EXCLUDED.gpu_mem_sum,gpu_mem_max=EXCLUDED.gpu_mem_max,"
    "gpu_power_sum=EXCLUDED.gpu_power_sum,gpu_power_max=EXCLUDED.gpu_power_max,"
    "gpu_temp_sum=EXCLUDED.gpu_temp_sum,gpu_temp_max=EXCLUDED.gpu_temp_max,"
    "last_time=EXCLUDED.last_time";
static const char day_clear_sql[] =
    "DELETE FROM load_daily d USING " BATCH_DAYS_SQL " WHERE d.node_id = t.node_id AND d.day = t.day"
    " AND NOT EXISTS (SELECT 1 FROM load_hourly h WHERE h.node_id = t.node_id AND h.hour >= t.day"
    " AND h.hour < t.day + 86400)";

/* One node-hour of the batch. */
typedef struct node_hour {
    int64_t node;
    fj_time hour, last; /* last: its latest sample's time (load_hourly.last_time) */
    fj_loadagg_bucket b;
} node_hour;

/* The roll-ups' INSERT of arrays into sql: one array per column, $1.. in load_hourly's order. */
static bool rollup_insert_sql(char *sql, size_t size)
{
    int w = snprintf(sql, size,
                     "INSERT INTO load_hourly(node_id,hour,last_time," FJ_LOADAGG_COLS_SQL ") SELECT * FROM unnest("
                     "$1::bigint[],$2::bigint[],$3::bigint[]");
    for (int c = 0; c < FJ_LOADAGG_NCOLS && w > 0 && (size_t)w < size; c++)
        w += snprintf(sql + w, size - (size_t)w, ",$%d::%s[]", c + 4,
                      fj_loadagg_col_is_int(c) ? "bigint" : "float8");
    if (w <= 0 || (size_t)w + 2 > size)
        return false;
    memcpy(sql + w, ")", 2);
    return true;
}

/* The batch's node-hours as two array literals, vals[0] (nodes) and vals[1] (hours), held in t:
 * formatted once, bound as $1 and $2 of each of the batch's statements. */
static fj_status batch_keys(fj_pgq *x, fj_pg_cols *t, const char **vals, const node_hour *nh, size_t n)
{
    fj_pg_cols_reset(t);
    for (size_t i = 0; i < n; i++) {
        fj_pg_i64(t, 0, nh[i].node);
        fj_pg_i64(t, 1, nh[i].hour);
        fj_pg_row(t, 0);
    }
    if (fj_pg_cols_finish(t, vals) != FJ_OK)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    return FJ_OK;
}

/* The entry of (node, hour), searching on from *at (results come in the batch's order). */
static node_hour *find_hour(node_hour *nh, size_t n, size_t *at, int64_t node, fj_time hour)
{
    while (*at < n && (nh[*at].node != node || nh[*at].hour != hour))
        (*at)++;
    return *at < n ? &nh[*at] : NULL;
}

/* Points l's one-bucket grid at the hour, as fj_qload_read_hour does. */
static void aim(fj_qload *l, fj_qload_node *n, node_hour *h)
{
    l->g.from = h->hour;
    l->from = h->hour;
    l->to = h->hour + FJ_LOADAGG_ROLLUP_S - 1;
    n->id = h->node;
    n->b = &h->b;
}

/* Every node-hour's samples into its bucket: fj_qload_node_start's clearing and first interval
 * (the previous sample, before the grid, only opens it), then the hour's samples in time order. */
static fj_status read_samples(fj_pgq *x, fj_qload *l, fj_qload_node *n, node_hour *nh, size_t cnt, fj_pgs *st)
{
    size_t at = 0;
    node_hour *cur = NULL;
    int r;
    fj_status rs = FJ_OK;
    while (rs == FJ_OK && (r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        node_hour *h = find_hour(nh, cnt, &at, fj_pgs_int(st, 0), fj_pgs_int(st, 1));
        if (!h)
            return fj_err_set(x->err, FJ_EINTERNAL, "db", "load roll-ups: samples out of order");
        if (h != cur) {
            cur = h;
            aim(l, n, h);
            memset(&h->b, 0, sizeof h->b);
            n->cpu.have = false;
            n->cpu.n = 0;
        }
        fj_qload_sample s = {.t = fj_pgs_int(st, 3), .boot = fj_pgs_int(st, 4)};
        s.cpus = fj_pgs_blob(st, 9, &s.cpus_len);
        if (fj_pgs_int(st, 2) == 1) {
            s.has_mem = !fj_pgs_isnull(st, 5);
            s.mem_kb = s.has_mem ? fj_pgs_double(st, 5) : 0;
            s.has_load = !fj_pgs_isnull(st, 6);
            s.load1 = s.has_load ? fj_pgs_double(st, 6) : 0;
            s.load5 = s.has_load ? fj_pgs_double(st, 7) : 0;
            s.load15 = s.has_load ? fj_pgs_double(st, 8) : 0;
            h->last = s.t;
        }
        rs = fj_qload_add_sample(l, n, &s);
    }
    if (rs == FJ_OK && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(x, r, "load roll-up samples");
    return rs;
}

/* Every node-hour's cards into its bucket, grouped by time as load.c's read_cards does. */
static fj_status read_cards(fj_pgq *x, fj_qload *l, fj_qload_node *n, node_hour *nh, size_t cnt, fj_pgs *st)
{
    size_t at = 0;
    node_hour *cur = NULL;
    fj_qload_cards c = {0};
    int r;
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        node_hour *h = find_hour(nh, cnt, &at, fj_pgs_int(st, 0), fj_pgs_int(st, 1));
        if (!h)
            return fj_err_set(x->err, FJ_EINTERNAL, "db", "load roll-ups: cards out of order");
        fj_time t = fj_pgs_int(st, 2);
        if (h != cur || t != c.t) {
            if (cur)
                fj_qload_cards_flush(l, n, &c);
            if (h != cur) {
                cur = h;
                aim(l, n, h);
            }
        }
        c.t = t;
        fj_qload_card_add(&c, fj_pgs_double(st, 3), fj_pgs_double(st, 4), fj_pgs_double(st, 5),
                          fj_pgs_double(st, 6));
    }
    if (cur)
        fj_qload_cards_flush(l, n, &c);
    return r == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(x, r, "load roll-up cards");
}

/* Writes the roll-up of every node-hour that has samples (none: the hour's samples went away, and
 * so does its roll-up). */
static fj_status write_rollups(fj_pgq *x, fj_pgs *put, fj_pg_cols *t, const node_hour *nh, size_t cnt)
{
    const char *vals[FJ_PG_MAXCOLS];
    fj_pg_cols_reset(t);
    size_t rows = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (!nh[i].b.samples)
            continue;
        double v[FJ_LOADAGG_NCOLS];
        fj_loadagg_to_row(&nh[i].b, v);
        fj_pg_i64(t, 0, nh[i].node);
        fj_pg_i64(t, 1, nh[i].hour);
        fj_pg_i64(t, 2, nh[i].last);
        for (int c = 0; c < FJ_LOADAGG_NCOLS; c++) {
            if (fj_loadagg_col_is_int(c))
                fj_pg_i64(t, c + 3, (int64_t)v[c]);
            else
                fj_pg_f64(t, c + 3, v[c]);
        }
        fj_pg_row(t, 0);
        rows++;
    }
    if (!rows)
        return FJ_OK;
    if (fj_pg_cols_finish(t, vals) != FJ_OK)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    for (int c = 0; c < 3 + FJ_LOADAGG_NCOLS; c++)
        fj_pgs_bind_text(put, c + 1, vals[c]);
    int r = fj_pgs_step(put);
    fj_pgs_reset(put);
    return r == FJ_PGS_DONE || r == FJ_PGS_ROW ? FJ_OK : fj_pgq_fail(x, r, "write load roll-ups");
}

/* The batch's statements: its samples, its cards, the INSERT of its roll-ups, the DELETE of what
 * they replace; then its days' upsert and the DELETE of days left without hours. */
enum { ST_SAMPLES, ST_CARDS, ST_PUT, ST_CLEAR, ST_DAY_PUT, ST_DAY_CLEAR, ST__N };

/* Recomputes the roll-ups of one batch of node-hours. */
static fj_status do_batch(fj_pgq *x, fj_qload *l, fj_qload_node *n, node_hour *nh, size_t cnt,
                          fj_pgs *const st[ST__N], fj_pg_cols *keys, fj_pg_cols *t)
{
    const char *vals[2];
    fj_status rs;
    for (size_t i = 0; i < cnt; i++) { /* a node-hour without samples gets no rows below */
        memset(&nh[i].b, 0, sizeof nh[i].b);
        nh[i].last = 0;
    }
    if ((rs = batch_keys(x, keys, vals, nh, cnt)) != FJ_OK)
        return rs;
    for (int k = ST_SAMPLES; k <= ST_CLEAR; k++) {
        fj_pgs_bind_text(st[k], 1, vals[0]);
        fj_pgs_bind_text(st[k], 2, vals[1]);
    }
    for (int k = ST_SAMPLES; k <= ST_CARDS; k++) {
        fj_pgs_bind_int(st[k], 3, FJ_LOADAGG_ROLLUP_S); /* the hour's length */
        rs = k == ST_SAMPLES ? read_samples(x, l, n, nh, cnt, st[k]) : read_cards(x, l, n, nh, cnt, st[k]);
        fj_pgs_reset(st[k]);
        if (rs != FJ_OK)
            return rs;
    }
    /* each of the batch's roll-ups is written anew below, or not at all */
    int r = fj_pgs_step(st[ST_CLEAR]);
    fj_pgs_reset(st[ST_CLEAR]);
    if (r != FJ_PGS_DONE && r != FJ_PGS_ROW)
        return fj_pgq_fail(x, r, "clear load roll-ups");
    if ((rs = write_rollups(x, st[ST_PUT], t, nh, cnt)) != FJ_OK)
        return rs;
    for (int k = ST_DAY_PUT; k <= ST_DAY_CLEAR; k++) {
        fj_pgs_bind_text(st[k], 1, vals[0]);
        fj_pgs_bind_text(st[k], 2, vals[1]);
        r = fj_pgs_step(st[k]);
        fj_pgs_reset(st[k]);
        if (r != FJ_PGS_DONE && r != FJ_PGS_ROW)
            return fj_pgq_fail(x, r, "daily load roll-ups");
    }
    return FJ_OK;
}

/* Recomputes the roll-up of every (node, hour) in load_hourly_todo and of its day, and empties
 * the table; on the write connection, inside the writer's transaction. */
fj_status fj_pg_load_rollup_drain(fj_store *s, fj_err *err)
{
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_pgq x = {.s = s, .d = fj_driver_of(s), .q = &q, .err = err};
    fj_pgs *todo = NULL, *done = NULL, *st[ST__N] = {NULL};
    node_hour *nh = NULL;
    fj_qload_node n = {0};
    char sql[2048];
    if (!rollup_insert_sql(sql, sizeof sql))
        return fj_err_set(err, FJ_EINTERNAL, "db", "roll-up statement too long");
    fj_pg_cols keys, t; /* the batch's node-hours; its roll-ups */
    fj_pg_cols_init(&keys, 2);
    fj_pg_cols_init(&t, 3 + FJ_LOADAGG_NCOLS);
    fj_status rs;
    if (!(x.a = fj_arena_create()) || !(nh = fj_malloc(ROLLUP_BATCH * sizeof *nh))) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    /* Kept statements: run at every group commit, parsed and planned once per connection. */
    if ((rs = fj_pgq_prepare_kept(&x, "SELECT node_id, hour FROM load_hourly_todo ORDER BY node_id, hour",
                                  &todo)) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, samples_sql, &st[ST_SAMPLES])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, cards_sql, &st[ST_CARDS])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, sql, &st[ST_PUT])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, clear_sql, &st[ST_CLEAR])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, day_clear_sql, &st[ST_DAY_CLEAR])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, day_put_sql, &st[ST_DAY_PUT])) != FJ_OK ||
        (rs = fj_pgq_prepare_kept(&x, "DELETE FROM load_hourly_todo", &done)) != FJ_OK)
        goto out;
    int r;
    fj_qenv e = fj_qx_env(&x);
    fj_qload l;
    fj_qload_stmts none = {0}; /* the statements are this file's */
    fj_qload_hour_init(&l, &e, &none);
    size_t cnt = 0;
    while ((r = fj_pgs_step(todo)) == FJ_PGS_ROW) {
        nh[cnt].node = fj_pgs_int(todo, 0);
        nh[cnt].hour = fj_pgs_int(todo, 1);
        if (++cnt == ROLLUP_BATCH) {
            if ((rs = do_batch(&x, &l, &n, nh, cnt, st, &keys, &t)) != FJ_OK)
                goto out;
            cnt = 0;
        }
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "load roll-ups to do");
        goto out;
    }
    if (cnt && (rs = do_batch(&x, &l, &n, nh, cnt, st, &keys, &t)) != FJ_OK)
        goto out;
    r = fj_pgs_step(done);
    if (r != FJ_PGS_DONE && r != FJ_PGS_ROW)
        rs = fj_pgq_fail(&x, r, "load roll-ups done");
out:
    fj_pgs_finalize(todo);
    fj_pgs_finalize(done);
    for (int k = 0; k < ST__N; k++)
        fj_pgs_finalize(st[k]);
    fj_pg_cols_free(&keys);
    fj_pg_cols_free(&t);
    fj_free(nh);
    fj_free(n.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
