/* storage/pg/query_load.c — node, cluster and GPU load of the PostgreSQL backend: its SQL, statements and
 * transaction, and the writer's hourly roll-ups (migrations/postgres/0004); the bucketing, the
 * roll-ups' use and the rows are storage/query/load.c's. Every node is read by its index range on
 * samples(node_id, time) and its GPU rows (storage/query/load.c's per-node reading): SQLite's one-pass
 * read of a rowid range has no counterpart here (PostgreSQL has no rowid order to rely on). */
#include "storage/pg/query_int.h"
#include "storage/query/load.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

/* The per-node statements of storage/query/load.h; the first interval starts at the latest sample with
 * counters, as in storage/sqlite/query_load.c. */
typedef struct node_stmts {
    fj_pgs *prev, *samples, *gpus, *has_gpus;
} node_stmts;

static fj_status node_stmts_prepare(fj_pgq *x, node_stmts *s)
{
    fj_status rs;
    if ((rs = fj_pgq_prepare(x, "SELECT time, boot, cpus FROM samples WHERE node_id = $1 AND time < $2"
                                " AND cpus IS NOT NULL ORDER BY time DESC LIMIT 1", &s->prev)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT time, boot, used_memory_kb, load1, load5, load15, cpus FROM samples"
                                " WHERE node_id = $1 AND time >= $2 AND time <= $3 ORDER BY time",
                             &s->samples)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                " FROM sample_gpus g WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                " ORDER BY g.time, g.idx",
                             &s->gpus)) != FJ_OK)
        return rs;
    return fj_pgq_prepare(x, "SELECT count(*), max(n_gpus) FROM sysinfo WHERE node_id = $1", &s->has_gpus);
}

static fj_qload_stmts node_stmts_rows(fj_pgq *x, const node_stmts *s)
{
    return (fj_qload_stmts){fj_pgq_rows(x, s->prev), fj_pgq_rows(x, s->samples), fj_pgq_rows(x, s->gpus),
                            fj_pgq_rows(x, s->has_gpus)};
}

static void node_stmts_free(node_stmts *s)
{
    fj_pgs_finalize(s->prev);
    fj_pgs_finalize(s->samples);
    fj_pgs_finalize(s->gpus);
    fj_pgs_finalize(s->has_gpus);
}

/* A node or cluster load query's statements. */
typedef struct load_stmts {
    node_stmts node;
    fj_pgs *pending, *hourly;
} load_stmts;

/* Starts a node or cluster load query: cluster, nodes, window, statements. */
static fj_status load_begin(fj_pgq *x, fj_qload *l, load_stmts *s)
{
    memset(s, 0, sizeof *s);
    fj_status rs;
    if ((rs = fj_pgq_cluster(x)) != FJ_OK || (rs = fj_pgq_load_nodes(x)) != FJ_OK)
        return rs;
    fj_qenv e = fj_pgq_env(x);
    if ((rs = fj_qload_begin(l, &e)) != FJ_OK || (rs = node_stmts_prepare(x, &s->node)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT 1 FROM load_hourly_todo LIMIT 1", &s->pending)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT hour," FJ_LA_COLS_SQL " FROM load_hourly"
                                " WHERE node_id = $1 AND hour >= $2 AND hour < $3", &s->hourly)) != FJ_OK)
        return rs;
    l->st = node_stmts_rows(x, &s->node);
    return FJ_OK;
}

static void load_free(load_stmts *s)
{
    node_stmts_free(&s->node);
    fj_pgs_finalize(s->pending);
    fj_pgs_finalize(s->hourly);
}

/* Node or cluster load: rows is fj_qload_node_rows or fj_qload_cluster_rows. */
static fj_status load_query(fj_store *s, fj_query *q, fj_sink *k, fj_err *err,
                            fj_status (*rows)(fj_qload *l, const fj_qload_rollups *ru))
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_qload l;
    load_stmts st;
    if ((rs = load_begin(&x, &l, &st)) == FJ_OK) {
        fj_qload_rollups ru = {fj_pgq_rows(&x, st.pending), fj_pgq_rows(&x, st.hourly), NULL};
        rs = rows(&l, &ru);
    }
    load_free(&st);
    return fj_pgq_end(&x, rs);
}

fj_status fj_pg_q_node_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return load_query(s, q, k, err, fj_qload_node_rows);
}

fj_status fj_pg_q_cluster_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return load_query(s, q, k, err, fj_qload_cluster_rows);
}

fj_status fj_pg_q_gpu_load(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_qload l;
    fj_pgs *st = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK)
        goto out;
    fj_qenv e = fj_pgq_env(&x);
    if ((rs = fj_qload_begin(&l, &e)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT g.idx, u.s, g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                                 " FROM sample_gpus g LEFT JOIN strings u ON u.id = g.uuid_id"
                                 " WHERE g.node_id = $1 AND g.time >= $2 AND g.time <= $3"
                                 " ORDER BY g.idx, u.s NULLS FIRST, g.time", &st)) != FJ_OK)
        goto out;
    fj_qrows cards = fj_pgq_rows(&x, st);
    rs = fj_qload_gpu_rows(&l, &cards);
out:
    fj_pgs_finalize(st);
    return fj_pgq_end(&x, rs);
}

/* --- the writer's hourly roll-ups ---------------------------------------------------------------- */

/* The roll-up's INSERT into sql: last_time is kept for SQLite's appending, this backend always
 * recomputes the hour. */
static bool rollup_insert_sql(char *sql, size_t size)
{
    int w = snprintf(sql, size,
                     "INSERT INTO load_hourly(node_id,hour,last_time," FJ_LA_COLS_SQL ") VALUES($1,$2,"
                     "(SELECT max(time) FROM samples WHERE node_id = $1 AND time >= $2 AND time < $2 + 3600)");
    for (int c = 0; c < FJ_LA_NCOLS && w > 0 && (size_t)w < size; c++)
        w += snprintf(sql + w, size - (size_t)w, ",$%d", c + 3);
    if (w <= 0 || (size_t)w + 2 > size)
        return false;
    memcpy(sql + w, ")", 2);
    return true;
}

static fj_status write_rollup(fj_pgq *x, fj_pgs *put, int64_t node, fj_time hour, const fj_la_bucket *b)
{
    double v[FJ_LA_NCOLS];
    fj_la_to_row(b, v);
    fj_pgs_bind_int(put, 1, node);
    fj_pgs_bind_int(put, 2, hour);
    for (int c = 0; c < FJ_LA_NCOLS; c++) {
        if (fj_la_col_is_int(c))
            fj_pgs_bind_int(put, c + 3, (int64_t)v[c]);
        else
            fj_pgs_bind_real(put, c + 3, v[c]);
    }
    int r = fj_pgs_step(put);
    fj_pgs_reset(put);
    return r == FJ_PGS_DONE || r == FJ_PGS_ROW ? FJ_OK : fj_pgq_fail(x, r, "write load roll-up");
}

/* Recomputes the roll-up of every (node, hour) in load_hourly_todo with the query's own reading
 * (fj_qload_read_hour) and empties the table; on the write connection, inside the writer's
 * transaction. */
fj_status fj_pg_load_rollup_drain(fj_store *s, fj_err *err)
{
    fj_query q;
    memset(&q, 0, sizeof q);
    fj_pgq x = {.s = s, .q = &q, .err = err};
    node_stmts ns = {0};
    fj_pgs *todo = NULL, *put = NULL, *clear = NULL;
    fj_la_bucket b;
    fj_qload_node n = {.b = &b};
    char sql[1024];
    if (!rollup_insert_sql(sql, sizeof sql))
        return fj_err_set(err, FJ_EINTERNAL, "db", "roll-up statement too long");
    fj_status rs;
    if (!(x.a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if ((rs = node_stmts_prepare(&x, &ns)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT node_id, hour FROM load_hourly_todo", &todo)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, sql, &put)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "DELETE FROM load_hourly h USING load_hourly_todo t"
                                 " WHERE h.node_id = t.node_id AND h.hour = t.hour", &clear)) != FJ_OK)
        goto out;
    int r = fj_pgs_step(clear); /* each listed roll-up is written anew below, or not at all */
    if (r != FJ_PGS_DONE && r != FJ_PGS_ROW) {
        rs = fj_pgq_fail(&x, r, "clear load roll-ups");
        goto out;
    }
    fj_qenv e = fj_pgq_env(&x);
    fj_qload_stmts st = node_stmts_rows(&x, &ns);
    fj_qload l;
    fj_qload_hour_init(&l, &e, &st);
    while ((r = fj_pgs_step(todo)) == FJ_PGS_ROW) {
        n.id = fj_pgs_int(todo, 0);
        fj_time hour = fj_pgs_int(todo, 1);
        if ((rs = fj_qload_read_hour(&l, &n, hour, hour)) != FJ_OK)
            goto out;
        /* no samples: the hour's samples went away, and so does its roll-up */
        if (b.samples && (rs = write_rollup(&x, put, n.id, hour, &b)) != FJ_OK)
            goto out;
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "load roll-ups to do");
        goto out;
    }
    rs = fj_pg_exec(s, "DELETE FROM load_hourly_todo", "load roll-ups done", err);
out:
    fj_pgs_finalize(todo);
    fj_pgs_finalize(put);
    fj_pgs_finalize(clear);
    node_stmts_free(&ns);
    fj_free(n.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
