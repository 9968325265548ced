/* storage/core/store.c — backend selection by URL and dispatch through the ops table. */
#include "storage/core/store_ts.h"

#include "redact.h"

#include <string.h>

/* Every backend's handle begins with this, so the ops can be found from an opaque handle. */
struct fj_store_head {
    const fj_store_ops *ops;
};

/* SQLite takes every URL the others do not, so it comes last. */
static const fj_store_ops *const backends[] = {
#ifdef FJ_HAVE_PG
    &fj_store_pg_ops,
#endif
    &fj_store_sqlite_ops,
};

fj_status fj_store_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->accepts(url))
            return backends[i]->open(url, opts, out, err);
    char shown[1024];
    return fj_err_set(err, FJ_EINVAL, "db", "no storage backend handles database URL '%s'",
                      fj_redact_conn(url, shown, sizeof shown));
}

const fj_store_ops *fj_store_ops_of(const fj_store *s)
{
    return ((const struct fj_store_head *)(const void *)s)->ops;
}

void fj_store_close(fj_store *s)
{
    if (s)
        fj_store_ops_of(s)->close(s);
}

fj_status fj_store_write(fj_store *s, fj_batch *const *batches, size_t n, fj_write_count *counts, fj_err *err)
{
    return fj_store_ops_of(s)->write(s, batches, n, counts, err);
}

fj_status fj_store_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                                int64_t to, fj_ts_points *pts,
                                fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err)
{
    const fj_store_ops *ops = fj_store_ops_of(s);
    if (ops->ts->ts_read_many)
        return ops->ts->ts_read_many(s, live, ids, n, from, to, pts, cb, ud, err);
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n; i++)
        if ((st = ops->ts->ts_read(s, live, ids[i], from, to, pts, err)) == FJ_OK)
            st = cb(ud, i, pts);
    return st;
}
