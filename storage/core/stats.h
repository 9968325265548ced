/* storage/core/stats.h — the stats op (fj_store_ops.stats, storage/core/store.h) written once over
 * the driver: every backend's ops table names fj_store_stats_read. Not a public header. */
#ifndef FJ_STORE_STATS_H
#define FJ_STORE_STATS_H

#include "storage/core/store.h"

fj_status fj_store_stats_read(fj_store *s, fj_store_stats *out, fj_err *err);

#endif
