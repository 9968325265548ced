/* storage/core/stats.h — the monitoring figures of the database (fj_store_stats, storage/core/store.h;
 * GET /metrics), written once over the driver: one statement of the driver's layout. */
#ifndef FJ_STORE_STATS_H
#define FJ_STORE_STATS_H

#include "storage/core/store.h"

/* Sizes, row and series counts; any mode. */
fj_status fj_stats_read(fj_store *s, fj_store_stats *out, fj_err *err);

#endif
