/* storage/core/store_ts.c — the metrics functions of storage/core/store_ts.h over the backend's
 * driver (storage/core/driver.h), whose stored side (chunks, request log, catalog) each backend
 * writes its own way. */
#include "storage/core/driver.h"

fj_status fj_store_ts_start(fj_store *s, const fj_store_opts *opts, fj_err *err)
{
    return fj_driver_of(s)->ts_start(s, opts, err);
}

fj_ts_engine *fj_store_ts_engine(fj_store *s)
{
    return fj_driver_of(s)->ts_engine(s);
}

fj_status fj_store_ts_maintain(fj_store *s, fj_err *err)
{
    return fj_driver_of(s)->ts_maintain(s, err);
}

fj_status fj_store_ts_series(fj_store *s, const fj_ts_sel *sel,
                             fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err)
{
    return fj_driver_of(s)->ts_series(s, sel, cb, ud, err);
}

fj_status fj_store_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                           fj_ts_points *out, fj_err *err)
{
    return fj_driver_of(s)->ts_read(s, live, series_id, from, to, out, err);
}

fj_status fj_store_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                                int64_t to, fj_ts_points *pts,
                                fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    if (d->ts_read_many)
        return d->ts_read_many(s, live, ids, n, from, to, pts, cb, ud, err);
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n; i++)
        if ((st = d->ts_read(s, live, ids[i], from, to, pts, err)) == FJ_OK)
            st = cb(ud, i, pts);
    return st;
}
