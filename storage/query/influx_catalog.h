/* storage/query/influx_catalog.h — what InfluxQL's catalog needs beyond the time-series ops of
 * storage/core/store_ts.h: the clusters that hold line-protocol series (SHOW DATABASES). Written
 * once over the driver (storage/core/driver.h), for every backend. */
#ifndef FJ_QUERY_INFLUX_CATALOG_H
#define FJ_QUERY_INFLUX_CATALOG_H

#include "arena.h"
#include "fj_status.h"
#include "storage/core/store.h"
#include "storage/ts/engine.h"

#include <stddef.h>

/* Reader handle: the distinct clusters of ts_series, byte-wise sorted, copied into a (*out, *n).
 * FJ_OK, FJ_ENOMEM or the store's error (err says). */
fj_status fj_q_ts_clusters(fj_store *s, fj_arena *a, const char ***out, size_t *n, fj_err *err);

/* Reader handle: cb for every series of cluster whose metric is meas (a ClusterCockpit metric), and
 * every one whose metric begins with meas and a dot (a generic line's fields), as the ts_series op hands them (the key's
 * strings valid during the call); a non-FJ_OK return stops and is passed on. For InfluxQL's FROM
 * of named measurements, so that a statement does not list every series of the cluster. */
fj_status fj_q_ts_series_of(fj_store *s, const char *cluster, const char *meas,
                            fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);

/* Reader handle: the string points (ts_strings; docs/metrics.md, "Field types") of series
 * ids[0..n) with from <= t <= to (ns), each series' in time order, handed to cb(ud, i, t, v, len)
 * with i the series' index in ids (v valid during the call, len bytes, may hold NUL); a
 * non-FJ_OK return stops and is passed on. */
fj_status fj_q_ts_strings(fj_store *s, const uint32_t *ids, size_t n, int64_t from, int64_t to,
                          fj_status (*cb)(void *ud, size_t i, int64_t t, const char *v, size_t len), void *ud,
                          fj_err *err);

#endif
