/* storage/core/stats.c — the monitoring figures (fj_store_stats) over the driver, the same on every
 * backend: one statement of counting subqueries, the driver's layout.stats (what it counts is laid
 * out differently: SQLite's pages and single writer state, PostgreSQL's database size and
 * instances). One statement is one snapshot on both databases. */
#include "storage/core/stats.h"

#include "storage/core/driver.h"

#include <stdlib.h>

/* The figures' columns, in layout.stats's order. */
#define STATS_COLS 6

typedef struct stats_row {
    int64_t v[STATS_COLS];
    bool got;
} stats_row;

static void take_row(void *ctx, int ncols, const char *const *cells)
{
    stats_row *r = ctx;
    for (int i = 0; i < STATS_COLS && i < ncols; i++)
        r->v[i] = cells[i] ? strtoll(cells[i], NULL, 10) : 0;
    r->got = true;
}

fj_status fj_stats_read(fj_store *s, fj_store_stats *out, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    stats_row r = {{0}, false};
    fj_status st = d->run(s, d->layout->stats, 0, NULL, take_row, &r, NULL, "stats", err);
    if (st != FJ_OK)
        return st;
    if (!r.got)
        return fj_err_set(err, FJ_EINTERNAL, "db", "%s: stats: no row", d->name);
    *out = (fj_store_stats){.db_bytes = r.v[0], .series = r.v[1], .chunks = r.v[2], .request_log_rows = r.v[3],
                            .request_log_bytes = r.v[4], .replay_pending = r.v[5]};
    return FJ_OK;
}
