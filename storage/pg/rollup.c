/* storage/pg/rollup.c — the PostgreSQL writer's upkeep of the hourly load roll-ups
 * (migrations/postgres/0004): every (node, hour) listed in load_hourly_todo recomputed with the
 * load query's own reading (storage/query/load.c), so answering from the roll-ups or from the
 * samples gives the same figures. The load ops are storage/query/load.c's; every node is read by
 * its index range on samples(node_id, time) (SQLite's one-pass read of a rowid range has no
 * counterpart here: PostgreSQL has no rowid order to rely on). */
#include "storage/pg/query_int.h"
#include "storage/query/load.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

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
    fj_pgq x = {.s = s, .d = &fj_pg_driver, .q = &q, .err = err};
    fj_qload_stmts st = {0};
    fj_pgs *todo = NULL, *put = NULL, *clear = NULL;
    fj_la_bucket b;
    fj_qload_node n = {.b = &b};
    char sql[1024];
    if (!rollup_insert_sql(sql, sizeof sql))
        return fj_err_set(err, FJ_EINTERNAL, "db", "roll-up statement too long");
    fj_status rs;
    if (!(x.a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if ((rs = fj_qload_stmts_prepare(&x, &st)) != FJ_OK ||
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
    fj_qenv e = fj_qx_env(&x);
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
    fj_qload_stmts_free(&x, &st);
    fj_free(n.cpu.c);
    fj_arena_destroy(x.a);
    return rs;
}
