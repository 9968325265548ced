/* storage/query/influx_catalog.h — what InfluxQL's catalog needs beyond the time-series ops of
 * storage/core/store_ts.h: the clusters that hold line-protocol series (SHOW DATABASES). Written
 * once over the driver (storage/core/driver.h), for every backend. */
#ifndef FJ_QUERY_INFLUX_CATALOG_H
#define FJ_QUERY_INFLUX_CATALOG_H

#include "arena.h"
#include "fj_status.h"
#include "storage/core/store.h"

#include <stddef.h>

/* Reader handle: the distinct clusters of ts_series, byte-wise sorted, copied into a (*out, *n).
 * FJ_OK, FJ_ENOMEM or the store's error (err says). */
fj_status fj_q_ts_clusters(fj_store *s, fj_arena *a, const char ***out, size_t *n, fj_err *err);

#endif
